"""A pair's evidence from the stored fingerprints: exact scores at the pair's window, and the shared
passages the matching fingerprints make, in characters of the original texts (ALGORITHM_VERSION 12).

Every stored value of a text carries its dominance span ``d`` and its window's place
(:class:`simscan.model.FingerprintMeta`).  A text keeps the windows whose ``d`` reaches its level's
winnowing window ``w(t)``; two texts are compared at the coarser window, ``w = max(w(a), w(b))``: a
value counts in a file where its ``d >= w`` there, in the intersection where it does in both
(:func:`value_levels` gives the same rule as levels: a value's level is the highest ``t`` with
``w(t) <= d``).  So the scores are exact set arithmetic on two samples taken by one rule, and a
passage both files share of at least ``w + 49`` units holds a fingerprint both keep (the winnowing
guarantee: ``fingerprint.rolling``).

Passages (the native ``simscan_core::evidence``): the shared counted values, ordered by their place
in file a, are chained while each next one lies at most :data:`GAP_PER_W` ``* w`` units after the
previous in both files, on a diagonal that moves by at most :data:`DRIFT` units.  Values held by many
files (``frequent``: more than :func:`frequent_cutoff`) count in the scores but make no passage, and
common values (the pair search's cut-off, texts to ignore) count nowhere.  A passage's length is its
shorter side in characters, from its first window's first character to its last window's end;
``longest`` is the longest passage, ``shared`` the characters its passages cover (the smaller side).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simscan import _native
from simscan.fingerprint import DEFAULT_PARAMS, FingerprintParams
from simscan.model import Fingerprints
from simscan.similarity.arrays import native_threads

#: Most units between two neighbouring fingerprints of one passage, per unit of the pair's window:
#: the winnowing guarantee leaves at most ``w + 49`` units between two kept windows of a shared
#: passage, so ``2 w`` bridges a shared passage whatever its windows' luck, and a little more.
GAP_PER_W = 2
#: Most units a passage's diagonal may move between neighbours (a word changed, a line re-wrapped).
DRIFT = 12
#: Default of ``--min-passage`` (characters): a pair sharing a passage at least this long is reported
#: whatever its share.  See ``benchmarks/passages.py``.
DEFAULT_MIN_PASSAGE = 100

_EMPTY_U64 = np.empty(0, np.uint64)

#: Common text (``pair_evidence(common_text=True)``): the values of a file that start between two
#: common values of span >= the coarsest window at most this many units apart (or between the text's
#: start or end and one that near) are common too.  Every file holding a text keeps its windows of
#: span >= 100 at least every 100 windows, so a text common to many files is marked in each of them
#: with this margin (a few edits apart), while text of its own between two common blocks longer than
#: this is not.
COMMON_TEXT_SPAN = 150


def frequent_cutoff(common_cutoff: int) -> int:
    """Most files a value may be held by and still start or extend a passage: a fifth of the
    common cut-off, at least 10 (a phrase many files of one collection share, a program's standard
    opening lines, is evidence of nothing)."""
    return max(10, common_cutoff // 5)


def level_of_d(d: np.ndarray, params: FingerprintParams = DEFAULT_PARAMS) -> np.ndarray:
    """Level (int8) of values of dominance span ``d``: the highest ``t`` with ``winnow[t] <= d``."""
    w = np.asarray(params.winnow, dtype=np.int64)
    return (np.searchsorted(w, np.asarray(d, dtype=np.int64), side="right") - 1).clip(0).astype(np.int8)


#: Level (int8) of each span 0..255: ``LEVEL_OF_SPAN[spans]`` is :func:`level_of_d` at a byte a value.
LEVEL_OF_SPAN = level_of_d(np.arange(256))


def window_of_level(level: np.ndarray | int, params: FingerprintParams = DEFAULT_PARAMS) -> np.ndarray:
    """The winnowing window (uint8) of texts of ``level``."""
    w = np.asarray(params.winnow, dtype=np.uint8)
    return w[np.minimum(np.asarray(level, dtype=np.int64), w.size - 1)]


@dataclass(frozen=True, slots=True)
class StoredSets:
    """Stored sets of several files, CSR-style: row ``r`` is ``offsets[r]:offsets[r + 1]`` of each
    array (values sorted and distinct, the meta aligned with them)."""

    offsets: np.ndarray  # int64
    values: np.ndarray  # uint64
    d: np.ndarray  # uint8
    unit: np.ndarray  # uint32
    char: np.ndarray  # uint32
    chars: np.ndarray  # uint16
    is_text: np.ndarray  # bool, per row

    @classmethod
    def of(cls, fps: list[Fingerprints]) -> StoredSets:
        """The stored sets of fingerprinted files (their ``rolling`` then ``anchored`` values)."""
        vals, metas = [], []
        for fp in fps:
            if fp.meta is None:
                raise ValueError("fingerprints without their meta (an index of an older simscan)")
            vals.append(np.concatenate((fp.rolling, fp.anchored)))
            metas.append(fp.meta)
        counts = np.array([v.size for v in vals], np.int64)
        return cls(
            np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
            np.concatenate(vals).astype(np.uint64) if vals else _EMPTY_U64,
            *(np.concatenate([getattr(m, k) for m in metas]).astype(dt) if metas else np.empty(0, dt)
              for k, dt in (("d", np.uint8), ("unit", np.uint32), ("char", np.uint32), ("chars", np.uint16))),
            np.array([fp.is_text for fp in fps], dtype=bool),
        )


#: Reads the stored sets of some files for their passages: given sorted distinct CSR rows of the pair
#: search, ``(sets, row)``: their stored sets with places, and each asked row's row in ``sets`` (-1: none).
PlacesLoader = Callable[[np.ndarray], tuple[StoredSets, np.ndarray]]


def sets_of_rows(
    offsets: np.ndarray, values: np.ndarray, spans: np.ndarray, rows: np.ndarray, is_text: np.ndarray,
) -> StoredSets:
    """Stored sets without places (zeros: for counts only) of the CSR rows ``rows`` of ``offsets`` /
    ``values`` / ``spans`` (``is_text``: per row asked), in that order."""
    rows = np.asarray(rows, np.int64)
    lo, hi = offsets[rows], offsets[rows + 1]
    counts = hi - lo
    starts = np.concatenate(([0], np.cumsum(counts)))
    idx = np.repeat(lo - starts[:-1], counts) + np.arange(int(starts[-1]))
    n = idx.size
    return StoredSets(
        starts.astype(np.int64), np.asarray(values)[idx], np.asarray(spans)[idx], np.zeros(n, np.uint32),
        np.zeros(n, np.uint32), np.zeros(n, np.uint16), np.asarray(is_text, bool),
    )


@dataclass(frozen=True, slots=True)
class PairEvidence:
    """Per pair (arrays aligned with the pairs asked): shared counted values, each side's counted
    values, the longest passage and the characters covered (uint32); with passages asked, each
    passage's pair (index into the pairs) and character ranges in a and b."""

    inter: np.ndarray
    na: np.ndarray
    nb: np.ndarray
    longest: np.ndarray
    shared: np.ndarray
    passage_pair: np.ndarray | None = None
    a0: np.ndarray | None = None
    a1: np.ndarray | None = None
    b0: np.ndarray | None = None
    b1: np.ndarray | None = None

    def passages_of(self, k: int) -> list[tuple[int, int, int, int]]:
        """(a0, a1, b0, b1) of pair ``k``'s passages, by their start in a."""
        if self.passage_pair is None:
            raise ValueError("passages were not asked for")
        lo, hi = np.searchsorted(self.passage_pair, [k, k + 1])
        return [tuple(int(x[i]) for x in (self.a0, self.a1, self.b0, self.b1)) for i in range(lo, hi)]  # type: ignore[index]


def pair_evidence(
    sets: StoredSets,
    rows_a: np.ndarray,
    rows_b: np.ndarray,
    w: np.ndarray,
    view: int = 0,
    common: np.ndarray = _EMPTY_U64,
    frequent: np.ndarray = _EMPTY_U64,
    passages: bool = False,
    common_text: bool = False,
) -> PairEvidence:
    """The evidence of each pair (rows of ``sets``) at its window ``w`` on ``view`` (0 text, 1 code);
    ``common``: sorted values that count nowhere, ``frequent``: sorted values that make no passage.
    ``common_text``: the values inside common text count nowhere either (:data:`COMMON_TEXT_SPAN`):
    a text many files share is left out of every file holding it, the files that keep finer windows of
    it (short ones) too, so it counts everywhere or nowhere."""
    out = _native.pair_evidence(
        sets.offsets, sets.values, sets.d, sets.unit, sets.char, sets.chars, sets.is_text,
        np.asarray(rows_a, dtype=np.int64), np.asarray(rows_b, dtype=np.int64), np.asarray(w, dtype=np.uint8),
        view, np.asarray(common, dtype=np.uint64), np.asarray(frequent, dtype=np.uint64), GAP_PER_W, DRIFT,
        passages=passages, threads=native_threads(len(rows_a)),
        common_coarse=DEFAULT_PARAMS.winnow[-1] if common_text else 0, common_span=COMMON_TEXT_SPAN,
    )
    if not passages:
        return PairEvidence(*out)
    scores, p = out
    return PairEvidence(*scores, *p[:5])

