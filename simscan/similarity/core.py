"""Pairs of similar files from plain arrays (a file table and CSR fingerprints).

This is the whole algorithm behind ``find_pairs``; ``simscan.similarity.engine`` only
reads the arrays from the index.  Steps (all vectorised with numpy):

1. **Exact and content classes.**  Files are sorted by (size, partial checksum, full
   checksum) with one ``lexsort``: runs of equal keys are byte-identical files ("exact").
   Files with the same ``content_hash`` (the hash of the lightly normalised text: same
   characters, any encoding / line ending / BOM) form a *content class*; each exact class
   lies inside one content class.  A class of n files becomes n - 1 pairs, each member
   against the class representative (never n² pairs), and only the representative takes
   part in the steps below: identical files would otherwise share every fingerprint and
   inflate document frequencies quadratically.  Representative: oldest mtime, then the
   shortest path, then path order.

2. **Candidates from the inverted index.**  The representatives' fingerprints are
   concatenated and sorted by value; a run of equal values is a posting list.  The
   document frequency (df) of a value is its run length.  Values with
   ``df > common_cutoff(n)`` are *common* (licence headers, boilerplate, generated
   preambles): they make no candidates and count neither in the intersection nor in the
   set sizes.  Every pair inside the other posting lists is generated in vectorised
   batches and the shared-fingerprint count of each pair is obtained by sorting pair keys
   (``np.unique`` with counts), never a Python dict per fingerprint.

3. **Candidates from the simhash** (Hamming distance <= k, pigeonhole tables, see
   ``simhash_tables``).  Such pairs are near-identical as wholes; for them the scores are
   also computed on the *full* fingerprint sets (common values included) and the variant
   with the higher best score is kept.  This rescues families of near-identical files
   larger than the common cut-off (all their fingerprints are "common"), while
   boilerplate shared by otherwise different files still does not count.

4. **Scores**: with A, B the (non-common) fingerprint sets, resemblance = |A∩B| / |A∪B|,
   containment_a = |A∩B| / |A|, containment_b = |A∩B| / |B|, in percent; exact set
   arithmetic on the stored fingerprints, resemblance symmetric.  The sets are the rolling
   *and* anchored fingerprints together (``compare.SCORE_KIND = "all"``): both are consistent
   samples (chosen by content alone).  Text files keep their anchored fingerprints at a
   *level* that grows with their length (nested: a coarser level keeps a subset, see
   ``simscan.fingerprint.rolling``), so a pair is compared at the coarser level of its two
   files (``levels``): |A∩B| is the stored intersection (a shared value passes both levels),
   and |A|, |B| count the rolling values plus the anchored values of at least that level.
   Both sets are then samples taken by the same rule, and the scores exact set arithmetic on
   them.  Measured on the evaluation corpus (ALGORITHM_VERSION 8, ROC AUC against unrelated
   pairs, plagiarism light / heavy): 0.982 / 0.849 (version 7, sparse anchors: 0.837 / 0.664).

Exact classes, representatives and the reference rules of groups never read file contents:
everything above is a function of the index columns.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from simscan import _native
from simscan.columns import ByteColumn, EncodedPaths
from simscan.fingerprint import DEFAULT_PARAMS as _FP_PARAMS
from simscan.progress import Cancelled, CancelToken
from simscan.similarity.arrays import components, intersect_counts, native_threads, popcount64
from simscan.similarity.copies import MAX_COPY_PAIRS, expand_copies
from simscan.similarity.evidence import (
    DEFAULT_MIN_PASSAGE,
    LEVEL_OF_SPAN,
    PlacesLoader,
    StoredSets,
    frequent_cutoff,
    pair_evidence,
    sets_of_rows,
    window_of_level,
)
from simscan.similarity.levels import file_levels, value_levels
from simscan.similarity.simhash_tables import DEFAULT_K, simhash_pairs
from simscan.similarity.types import SCORE_DECIMALS, FileTableLike, Pair, passes

#: Default threshold of ``pairs`` / ``groups`` (percent, compared with a pair's best score).
#: Chosen on the evaluation corpus with benchmarks/accuracy.py (fingerprints of ALGORITHM_VERSION
#: 9: text view plus the code view of program source, a pair scored on its better view): the
#: false-positive rate on ``unrelated`` pairs (882) is 2.04% at 10, 1.25% at 12, 0.91% from 13 to
#: 15, 0.68% at 20; recall at 15 is 1.00 exact / 1.00 near_duplicate / 1.00 similar / 0.86
#: plagiarism_light / 0.38 plagiarism_heavy (at 13: 0.89 / 0.42; at 16: 0.86 / 0.37), and
#: "similar" starts to drop above 20.  The false positives near the threshold are independent
#: solutions of one small programming task against the task's original (the teacher's template),
#: and which of their windows the hash samples decides a pair or two: over 10 equivalent hash
#: variants of the code view (units shifted, see benchmarks/code_view.py) the rate averages 1.22%
#: at 13, 1.12% at 14, 1.01% at 15 and 0.91% at 16.  15 keeps the average at about 1%; 13 would
#: fit this corpus only by the luck of one hash.
#: (Version 8, text view only, used 13: 0.57% false positives, recall 0.79 / 0.35; version 7: 15.)
DEFAULT_MIN_SIMILARITY = 15.0


@dataclass(frozen=True, slots=True)
class SimilarityParams:
    """Tuning of pair finding.

    common_min_df / common_fraction: a fingerprint held by more than
    ``max(common_min_df, common_fraction * n)`` distinct contents (n = number of distinct
    contents in the index) is common.  50 keeps every family of up to 50 versions of one
    document fully scored (the evaluation corpus has at most ~20 editions of one book) while
    bounding the pairs one posting list can generate to 50·49/2; the fraction lets the cut-off
    grow with large indexes, where a passage held by 0.1% of all files is boilerplate.
    simhash_k: Hamming radius of the simhash candidates (Manku et al.: k = 3 for 64 bits).
    contained_min / contained_ratio: a pair is "contained" rather than "near" when its larger
    containment is at least ``contained_min`` percent and at least ``contained_ratio`` times its
    smaller containment (one file largely inside the other; see ``compare.classify``).
    min_shared: fewest shared fingerprints for a (non-copy) pair to be reported.  1: with the
    sparse anchors of ALGORITHM_VERSION 7, 2 removed the few false positives of tiny files but
    lost a third of the plagiarism pairs (light 0.63 -> 0.43 recall at 15%), whose short answers
    shared 1-2 windows.  With version 8 (dense anchors for short texts) 2 or 3 change no recall
    at <=1% false positives and lower the ROC AUC a little (light 0.982 -> 0.978 / 0.962):
    the remaining false positives share many fingerprints (``benchmarks/fingerprint_levels.py``
    with MIN_SHARED=2).
    Version 12 makes it 2: with passages weighed, a pair found by its share before the common text
    is left out can come out of the evidence at a higher share (smaller sets), so a pair sharing one
    window scored 20 % at ``-m 0`` and was missing at ``-m 15`` (its share before the evidence
    was under it).  Every pair sharing two values is weighed whatever the threshold, so with 2 a
    pair's listing no longer depends on the threshold it was searched at.  On the corpus at the
    defaults: the same recall and false positives (light 0.869, heavy 0.434, FP 1.70 %); ROC AUC
    lower (light 0.984 -> 0.964, heavy 0.854 -> 0.797: pairs sharing one window now score 0).
    The common cut-off of 50 was re-checked with version 8 the same way (COMMON_DF): 10 and 20
    lose much (light 0.53 / 0.66 recall at <=1% false positives), 200 equals 50 in recall (AUC
    heavy 0.860 vs 0.850) but lets one posting list make 20,000 pairs instead of 1,225.
    pair_work, pair_budget: what the posting lists under the common cut-off may make, in time and in
    memory.  Each list of d files makes d(d-1)/2 (file, file) *incidences* (the native count's work);
    pairs of files in several lists make one *distinct pair* (12 bytes held) for all of them.  The
    cut-off is the highest whose lists make at most ``pair_work`` incidences, unless their distinct
    pairs are more than half ``pair_budget``: then it is the highest whose lists make at most
    ``pair_budget`` incidences (the rule before ``pair_work``), so that their pairs cannot be more
    (``count_runs``).  Half, because a partition's own pairs (up to as many again) are held beside
    them before they are merged: the keys held never pass ``pair_budget``, as before, and the
    cut-off is never lower than the rule before gave.  Time and memory stay bounded on any data, and
    a search under both bounds is the unbounded one.
    Until the results cache's version 5 one bound, 2^25 incidences, did both.  Families of versions
    broke it: 1,000,000 generated texts, a fifth of them in families of ~10 versions of 20,000 base
    texts (an acceptance test's), make ~120 M incidences under the cut-off of 969 but only ~1 M
    distinct pairs; the cut-off fell to 7, and about half of the one-word edits were in no pair.  The
    native count makes an incidence in ~10 ns where they collapse into few pairs (families) and ~40 ns
    where they do not (random lists), one thread;
    2^28 incidences then cost ~3-11 s, or stop at the bound on distinct pairs early.  The searches
    measured make far fewer distinct pairs than 2^24: the 1,000,000-file mix below 213,281 at its
    largest merge, the families ~1 M.
    The budget of 2^25: 1,000,000 files of the scan benchmark's mix (``similarity_scale.py --scale
    4``; 15 % edited versions) make ~21 M incidences under the cut-off, runs of two files alone
    13.6 M: under the rule before, a budget of 2^23 lowered the cut-off to 2 (a value three versions share counted
    nowhere) and the search listed 218,507 pairs in 53 s, 744 MB; at 2^25 it is not lowered:
    294,569 pairs in 45 s, 741 MB.  A hard case, 50,000 files sharing ~1 M mid-frequency values
    (~10 M incidences, in memory): 340 MB peak at 2^23, 424 MB at 2^25.  What the bounds allow at
    most on data made to reach them: 2^25 pairs' keys held (~0.4 GB: 2^24 merged and a partition's
    as many again), as the rule before allowed, and their merge (:func:`merge_counts`, native: the
    batches and the result, 12 bytes a key each; 2 x 2^24 keys merged in 1.0 s at 800 MB peak RSS,
    where the stable sort before took 3.8 s and 1.44 GB).
    code_view: also score program sources on their code view (``views``; a pair keeps the
    better view).  Off, only their text counts: a copy with renamed identifiers scores lower,
    and sources that merely share a shape (e.g. classes of getters and setters) are not paired
    by structure.  On the evaluation corpus at 15 % (``benchmarks/accuracy.py [--no-code-view]``):
    recall plagiarism light / heavy 0.861 / 0.381 with it, 0.770 / 0.327 without; false
    positives on unrelated pairs 0.91 % / 0.45 %; exact, near and similar 1.000 either way.
    """

    common_min_df: int = 50
    common_fraction: float = 0.001
    simhash_k: int = DEFAULT_K
    contained_ratio: float = 1.5
    contained_min: float = 50.0
    min_shared: int = 2
    pair_work: int = 1 << 28
    pair_budget: int = 1 << 25
    code_view: bool = True
    ignore_values: bytes = b""
    min_passage: int = DEFAULT_MIN_PASSAGE

    #: The most ``common_min_df`` may be (``--common-cutoff``; the window's dialog): the search sizes a
    #: histogram of run lengths by the cut-off (8 bytes each), and no value is held by more files than a
    #: local index holds anyway at that size.
    MAX_COMMON_MIN_DF: ClassVar[int] = 1_000_000

    def common_cutoff(self, n: int) -> int:
        return max(self.common_min_df, math.ceil(self.common_fraction * n))

    def ignored(self) -> np.ndarray:
        """The values of ``ignore_values`` (sorted distinct little-endian uint64: the fingerprints of
        texts the person said to ignore, e.g. the question every answer repeats; see
        :func:`ignore_texts`).  They count nowhere, as if they were common."""
        return np.frombuffer(self.ignore_values, dtype="<u8").astype(np.uint64)


def value_union(sets: Sequence[np.ndarray]) -> np.ndarray:
    """The sorted distinct uint64 values of all ``sets``."""
    if not sets:
        return np.empty(0, np.uint64)
    return np.unique(np.concatenate([np.asarray(x, dtype=np.uint64) for x in sets]))


def ignore_values(sets: Sequence[np.ndarray]) -> bytes:
    """``SimilarityParams.ignore_values`` for fingerprint sets (e.g. ``compare.fingerprint_set`` of
    template files): their union, sorted, as bytes."""
    return value_union(sets).astype("<u8").tobytes()


DEFAULT_SIM_PARAMS = SimilarityParams()

#: Candidates scored at once (bounds the temporary arrays of scoring to ~100 MB).
_SCORE_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Classes:
    """Exact / content classes of the rows of a file table.

    exact[r], content[r]: class labels (0-based, dense) of row r.  rep[c]: the representative
    row of content class c.  is_rep[r]: r is its content class's representative.
    priority[r]: rank of row r by (mtime, path length, id) (lower = preferred).
    """

    exact: np.ndarray
    content: np.ndarray
    rep: np.ndarray
    is_rep: np.ndarray
    priority: np.ndarray


def budget_cutoff(hist: np.ndarray, cutoff: int, budget: int) -> int:
    """The largest cut-off <= ``cutoff`` whose posting lists (``hist[L]``: how many lists of L files;
    lists longer than ``cutoff`` excluded, so bins above it are ignored) generate at most
    ``budget`` pairs (at least 2)."""
    lens = np.arange(2, cutoff + 1, dtype=np.int64)
    per = np.asarray(hist[2 : cutoff + 1], dtype=np.int64) * (lens * (lens - 1) // 2)
    if int(per.sum()) <= budget:
        return cutoff
    # Pairs generated by the lists of each length, cumulated from the shortest up; lengths that
    # no list has add nothing, so the largest length that fits is the largest present one.
    cum = np.cumsum(per)
    present = per > 0
    fits = present & (cum <= budget)
    return max(2, int(lens[fits][-1])) if fits.any() else 2


def _digest_matrix(digests: Sequence[bytes]) -> np.ndarray:
    """16-byte digests as an (n, 2) uint64 array (shorter ones zero-padded)."""
    if not len(digests):
        return np.empty((0, 2), np.uint64)
    fixed = getattr(digests, "fixed", None)  # (a ``ByteColumn`` of the index's table: no join)
    got = fixed(16) if fixed is not None else None
    if got is not None:
        return got.view("<u8").reshape(-1, 2)
    if set(map(len, digests)) == {16}:  # xxh3-128 digests: one C-level join (~5x faster)
        joined = b"".join(digests)
    else:
        joined = b"".join(d[:16].ljust(16, b"\0") for d in digests)
    return np.frombuffer(joined, dtype="<u8").reshape(-1, 2)


def _labels(keys: list[np.ndarray]) -> np.ndarray:
    """Dense labels of rows by equality of all ``keys`` (each a 1-D array, same length)."""
    n = keys[0].size
    if n == 0:
        return np.empty(0, np.int64)
    order = np.lexsort(keys[::-1])  # lexsort sorts by the last key first
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for k in keys:
        s = k[order]
        change[1:] |= s[1:] != s[:-1]
    lab = np.empty(n, np.int64)
    lab[order] = np.cumsum(change) - 1
    return lab


def priority_order(files: FileTableLike) -> np.ndarray:
    """Row indexes sorted by preference as a reference: oldest mtime, shortest path, then path order
    (paths are distinct: a total order, and one that depends on the files only, not on the ids a
    scan happened to give them -- a scan resumed after an interruption numbers files in another
    order).  Paths are compared (a Python sort, ~0.06 s per 100,000) only where mtime and length tie."""
    n = len(files.paths)
    pathlen = np.fromiter(map(len, files.paths), dtype=np.int64, count=n)
    mtime = np.asarray(files.mtime_ns)
    order = np.lexsort((pathlen, mtime))
    same = (mtime[order[1:]] == mtime[order[:-1]]) & (pathlen[order[1:]] == pathlen[order[:-1]])
    if not same.any():
        return order
    tied = np.zeros(n, dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    rows = order[tied]
    rank = np.zeros(n, np.int64)  # path order among the tied rows (the others tie with no one)
    rank[sorted(rows.tolist(), key=files.paths.__getitem__)] = np.arange(rows.size)
    return np.lexsort((rank, pathlen, mtime))


def exact_classes(files: FileTableLike) -> Classes:
    """Group rows by (size, partial, checksum) and by content_hash; pick representatives.  A text with
    bytes but no text that counts (white space, punctuation or symbols only; a blank or picture-only
    document: 0 normalised units) has the content of every such file, so it is a content copy of its
    byte copies alone: a blank DOCX, a blank ODT and a white-space .txt were one class of "copies"."""
    n = len(files.paths)
    ck = _digest_matrix(files.checksum)
    exact = _labels([np.asarray(files.size), np.asarray(files.partial), ck[:, 0], ck[:, 1]])
    ch = _digest_matrix(files.content_hash)
    textless = (np.asarray(files.size) > 0) & np.asarray(files.is_text, dtype=bool) & (np.asarray(files.units) == 0)
    # Binary and text never share a content class, whatever their hashes.
    content = _labels([np.asarray(files.is_text, dtype=np.int64), ch[:, 0], ch[:, 1], np.where(textless, exact, -1)])
    order = priority_order(files)
    priority = np.empty(n, np.int64)
    priority[order] = np.arange(n)
    nc = int(content.max()) + 1 if n else 0
    rep = np.full(nc, -1, np.int64)
    # First row of each class in priority order: assign in reverse so the first one wins.
    rev = order[::-1]
    rep[content[rev]] = rev
    is_rep = np.zeros(n, dtype=bool)
    is_rep[rep] = True
    return Classes(exact, content, rep, is_rep, priority)


def file_identity(
    files: FileTableLike, identity: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """(device, inode) int64 arrays of the rows, from ``identity`` or the table's ``device`` /
    ``inode`` columns; None when neither is known (an index written before they existed)."""
    if identity is None:
        dev, ino = getattr(files, "device", None), getattr(files, "inode", None)
        if dev is None or ino is None:
            return None
        identity = (dev, ino)
    dev = np.asarray(identity[0], dtype=np.int64)
    ino = np.asarray(identity[1], dtype=np.int64)
    if dev.size != len(files.paths) or ino.size != dev.size:
        return None
    return dev, ino


def reference_rank(
    files: FileTableLike, reference_roots: Sequence[str] = (), preferred: np.ndarray | None = None
) -> np.ndarray:
    """Rank of each row as a reference (0 = preferred): under one of ``reference_roots`` first, then
    the oldest mtime, the shortest path, path order (the rules of groups and of copy classes).
    ``preferred``: :func:`under_roots` of the rows for ``reference_roots``, when already at hand."""
    n = len(files.paths)
    order = priority_order(files)
    if reference_roots:
        pref = preferred if preferred is not None else under_roots(list(files.paths), tuple(reference_roots))
        order = order[np.argsort(~pref[order], kind="stable")]
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    return rank


def distinct_file_rows(
    files: FileTableLike, identity: tuple[np.ndarray, np.ndarray] | None = None,
    reference_roots: Sequence[str] = (),
) -> np.ndarray | None:
    """Rows to keep so that each file on disk appears once, or None when all rows are distinct.

    Rows with the same (device, inode) are one file reached by several paths (hard links, a
    folder scanned once directly and once through a symbolic link): they must never be reported
    as copies of each other (deleting "the copy" would delete the only file).  Of each such set
    the preferred row is kept (:func:`reference_rank` with ``reference_roots``).  Inode 0 means
    "unknown" (some file systems) and is never merged.  Returns ascending row numbers.  The rank (a
    sort of every path) is made only when some rows share a file, which they rarely do.
    """
    ident = file_identity(files, identity)
    n = len(files.paths)
    if ident is None or n < 2:
        return None
    dev, ino = ident

    def repeated(order: np.ndarray) -> np.ndarray:
        d, i = dev[order], ino[order]
        dup = np.zeros(n, dtype=bool)
        dup[1:] = (d[1:] == d[:-1]) & (i[1:] == i[:-1]) & (i[1:] != 0)
        return dup

    if not repeated(np.lexsort((ino, dev))).any():
        return None
    order = np.lexsort((reference_rank(files, reference_roots), ino, dev))
    return np.sort(order[~repeated(order)])


def subset_table(files: FileTableLike, rows: np.ndarray) -> FileTableLike:
    """The same kind of file table restricted to ``rows`` (every per-row column)."""
    n = len(files.paths)
    rl = rows.tolist()
    kw = {}
    for f in dataclasses.fields(files):  # type: ignore[arg-type]
        v = getattr(files, f.name)
        if isinstance(v, np.ndarray) and v.shape[:1] == (n,):
            kw[f.name] = v[rows]
        elif isinstance(v, list) and len(v) == n:
            kw[f.name] = [v[r] for r in rl]
        elif isinstance(v, ByteColumn) and len(v) == n:
            kw[f.name] = v.take(rows)
        elif isinstance(v, EncodedPaths):
            kw[f.name] = EncodedPaths(kw["paths"])  # (paths come before raw_paths)
        else:
            kw[f.name] = v
    return type(files)(**kw)


def align_csr(
    files: FileTableLike, csr_ids: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """For each file row, its row in the CSR (-1 if the CSR has no entry for that id)."""
    fids = np.asarray(files.ids, dtype=np.int64)
    csr_ids = np.asarray(csr_ids, dtype=np.int64)
    out = np.full(fids.size, -1, np.int64)
    if csr_ids.size == 0 or fids.size == 0:
        return out
    order = np.argsort(csr_ids, kind="stable")
    pos = np.searchsorted(csr_ids[order], fids)
    pos = np.minimum(pos, csr_ids.size - 1)
    hit = csr_ids[order][pos] == fids
    out[hit] = order[pos[hit]]
    return out


@dataclass(frozen=True, slots=True)
class PairArrays:
    """Scored pairs as columns (rows of the file table); percentages as float64."""

    a: np.ndarray
    b: np.ndarray
    resemblance: np.ndarray
    containment_a: np.ndarray
    containment_b: np.ndarray
    distance: np.ndarray
    exact: np.ndarray
    kind: np.ndarray  # int8 index into KINDS
    view: np.ndarray  # int8 index into VIEWS: the fingerprint view that scored the pair (0 text, 1 code)
    longest: np.ndarray  # int32: characters of the longest shared passage (-1: a copy, or not weighed)
    shared: np.ndarray  # int32: characters the shared passages cover (-1 likewise)

    @property
    def best(self) -> np.ndarray:
        return np.maximum(self.resemblance, np.maximum(self.containment_a, self.containment_b))


def _scores(inter: np.ndarray, na: np.ndarray, nb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    inter = inter.astype(np.float64)
    union = na + nb - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(union > 0, 100.0 * inter / union, 0.0)
        ca = np.where(na > 0, 100.0 * inter / na, 0.0)
        cb = np.where(nb > 0, 100.0 * inter / nb, 0.0)
    return r, ca, cb


def star_pairs(cls: Classes, sim: np.ndarray) -> PairArrays:
    """The pairs of every exact / content copy with its class's representative (scores 100,
    kind exact or content); ``sim``: the rows' simhashes (uint64)."""
    members = np.flatnonzero(~cls.is_rep)
    sa = cls.rep[cls.content][members]
    s_exact = cls.exact[sa] == cls.exact[members]
    ones = np.full(members.size, 100.0)
    return PairArrays(
        sa,
        members,
        ones,
        ones.copy(),
        ones.copy(),
        popcount64(sim[sa] ^ sim[members]),
        s_exact,
        np.where(s_exact, 0, 1).astype(np.int8),
        np.zeros(members.size, dtype=np.int8),
        np.full(members.size, -1, np.int32),
        np.full(members.size, -1, np.int32),
    )


def _check(cancel: CancelToken | None) -> None:
    if cancel is not None and cancel.cancelled:
        raise Cancelled()


#: Fingerprint values sorted at once by the pair search.  Above it the values are split by hash
#: bits into partitions of about this size, each sorted and paired apart (a value's run lies in one
#: partition), so the sort's temporaries (~45 bytes a value) scale with the partition, not with the
#: index: 52 M fingerprints (a 241,000-file home folder) need ~0.3 GB of them instead of ~2.3 GB.
PARTITION_VALUES = 1 << 23


def _partitions(total: int) -> int:
    """How many partitions (a power of two, at most 128) for ``total`` values."""
    parts = 1
    while parts < 128 and total > parts * PARTITION_VALUES:
        parts *= 2
    return parts


#: Partition id of the values of files that take no part (never a partition: at most 128).
_OUTSIDE = 255


def _partition_ids(vals: np.ndarray, parts: int) -> np.ndarray:
    """Partition of each value (uint8): hash bits 40.. (uniform: the top bits carry the kind and
    view), computed in slices so that no temporary is as long as all the values."""
    out = np.empty(vals.size, np.uint8)
    if parts == 1:
        out[:] = 0
        return out
    shift, mask = np.uint64(40), np.uint64(parts - 1)
    step = 1 << 22
    for a in range(0, vals.size, step):
        out[a : a + step] = (vals[a : a + step] >> shift) & mask
    return out


def shared_counts(
    offsets: np.ndarray,
    values: np.ndarray,
    csr_row: np.ndarray,
    row_text: np.ndarray,
    params: SimilarityParams,
    cancel: CancelToken | None = None,
    report: Callable[[str, int, int], None] | None = None,
    value_lv: np.ndarray | None = None,
    row_level: np.ndarray | None = None,
    rare: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The inverted-index half of the pair search over the files ``csr_row`` (CSR rows;
    ``row_text``: each is a text file): :func:`count_runs` of the CSR's values split into partitions
    of the value space (:data:`PARTITION_VALUES`).

    value_lv: each value's level (int8, aligned with ``values``; ALGORITHM_VERSION 12: from its span,
    ``evidence.level_of_d``), else from the values themselves (``levels.value_levels``).
    """
    nr = csr_row.size
    offsets = np.asarray(offsets, dtype=np.int64)
    vals = np.asarray(values, dtype=np.uint64)[: int(offsets[-1])]  # the CSR itself: no copy
    idx_t = np.int32 if nr < 2**31 else np.int64
    pos_of_row = np.full(offsets.size - 1, -1, idx_t)  # position in ``csr_row`` of each CSR row
    pos_of_row[csr_row] = np.arange(nr, dtype=idx_t)
    assert np.unique(csr_row).size == nr, "each CSR row at most once"
    parts = _partitions(int((offsets[csr_row + 1] - offsets[csr_row]).sum()))
    pid = _partition_ids(vals, parts)
    taking = pos_of_row >= 0
    if not taking.all():
        pid[~np.repeat(taking, np.diff(offsets))] = _OUTSIDE

    def partition(p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(values, positions, levels) of partition ``p``."""
        at = np.flatnonzero(pid == p)
        v = vals[at]
        # ``at`` ascends: each CSR row's values are a slice of it (one search per row, not per value).
        own = np.repeat(pos_of_row, np.diff(np.searchsorted(at, offsets)))
        lv = value_lv[at] if value_lv is not None else value_levels(v, row_text[own])
        return v, own.astype(np.uint32), lv.view(np.uint8)

    return count_runs(partition, parts, nr, params, cancel, report, row_level, rare)


#: Columns of the per-file level tables of :func:`count_runs` (levels 0 .. ``max_level``).
LEVEL_COLUMNS = _FP_PARAMS.max_level + 1


def count_runs(
    partition: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]],
    parts: int,
    nr: int,
    params: SimilarityParams,
    cancel: CancelToken | None = None,
    report: Callable[[str, int, int], None] | None = None,
    row_level: np.ndarray | None = None,
    rare: list[np.ndarray] | None = None,
    provisional: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The inverted-index half of the pair search over ``nr`` files whose fingerprints come in
    ``parts`` partitions of the value space: ``partition(p)`` gives partition p's (values uint64,
    positions uint32 < ``nr``, levels uint8), each (value, position) at most once and every run of a
    value in one partition.  Returns (full_size, kept_size, keys, counts).

    full_size / kept_size: (nr, :data:`LEVEL_COLUMNS`) int32 set sizes per level of every file, of all
    its values / of those not common (column t: its values of level >= t).  keys: sorted distinct
    ``lo * nr + hi`` of the pairs of positions that share a non-common value; counts: how many they
    share.  A value is common when more than the cut-off of files hold it (``common_cutoff``, lowered
    by the bounds ``pair_work`` and ``pair_budget``: see :class:`SimilarityParams`).
    row_level: each file's level (per position): a shared value then counts for a pair only where
    its level reaches the pair's in both files.  rare: when given, receives the sorted values held by
    more files than ``evidence.frequent_cutoff`` allows a passage (common ones first, then frequent),
    then (the cut-off used, the cut-off before the budget) as an int64 array.

    Each partition is counted natively (``simscan_core::runs``: sorted, its runs measured, the pairs
    inside the runs under the cut-off counted).  The cut-off needs the run lengths of every partition,
    known only at the end.  So the runs are paired up to a *provisional* cut-off, the cut-off the pair
    work would give if every partition had the run lengths of the first (:func:`provisional_cutoff`,
    at most the cut-off), and the runs above it and under the cut-off are held (their values and
    lengths; their entries too, up to :data:`HELD_VALUES`): once every partition is counted, those
    above the final cut-off are common, and the entries of the others are counted again with it.  Only
    when the final cut-off falls below the provisional one, or lies above it with entries no longer
    held, or their distinct pairs are more than ``pair_budget`` (then the cut-off falls to the
    budget's: at most one more pass), does a second pass pair every partition with the final cut-off
    (the 1,000,000-file benchmark paid 12 s for it under the budget of 2^23, when its runs of two
    files alone exceeded the budget).
    ``provisional``: False pairs up to the cut-off in the first pass, as before (the tests compare both).
    """
    cutoff = params.common_cutoff(nr)
    work, bound = max(params.pair_work, params.pair_budget), params.pair_budget // 2
    threads = native_threads(nr)  # (the native count shares a partition's pairs among them)
    rl = np.empty(0, np.uint8) if row_level is None else np.asarray(row_level).astype(np.uint8)
    full = np.zeros(nr * LEVEL_COLUMNS, np.int32)
    hist = np.zeros(cutoff + 2, np.int64)  # run lengths, clipped above the cut-off (common anyway)
    pair_cut = cutoff
    first_part: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    if provisional and parts > 1:
        first_part = partition(0)
        pair_cut = provisional_cutoff(_native.partition_counts(
            *first_part, rl, nr, cutoff, cutoff, cutoff + 2, False, LEVEL_COLUMNS)[0], parts, cutoff, work)

    def one_pass(cut: int, first: bool, bounded: bool) -> tuple[
            np.ndarray, list, list, bool, bool, list, list, list, list | None]:
        """kept_size, key and count batches, whether the pairs fit (``bounded``: their distinct pairs
        are checked against ``bound``, else they always fit it; the first pass also sums ``full``
        and ``hist``, pairs up to ``pair_cut`` and holds the runs above it, and goes on measuring only
        when they do not fit), whether they did not because the distinct pairs were more than the
        bound (*crowded*: a later pass stops there), the common and frequent values (with their runs'
        lengths) when ``rare`` is asked for, the held runs (values, lengths) and their entries (None
        when there were too many)."""
        nonlocal first_part
        kept = np.zeros(nr * LEVEL_COLUMNS, np.int32)
        key_parts: list[np.ndarray] = []
        cnt_parts: list[np.ndarray] = []
        common_parts: list[np.ndarray] = []
        frequent_parts: list[tuple[np.ndarray, np.ndarray]] = []
        held_runs: list[tuple[np.ndarray, np.ndarray]] = []
        held: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = []
        held_values = 0
        pending = 0  # keys in ``key_parts`` since they were last folded into one batch
        pc = pair_cut if first else cut
        fcut = frequent_cutoff(pc)
        made = 0
        fits, crowded = True, False
        # The next partition is read (numpy, files) while this one is counted (native, without the GIL).
        ahead = ThreadPoolExecutor(1)
        nxt: Future | None = None
        try:
            for p in range(parts):
                _check(cancel)
                if p == 0 and first_part is not None:
                    v, own, lv = first_part
                    first_part = None
                else:
                    v, own, lv = nxt.result() if nxt is not None else partition(p)
                nxt = ahead.submit(partition, p + 1) if p + 1 < parts else None
                # (pairs up to the least cut-off, 2, are kept whatever the work: they need no limit)
                limit = max(0, work - made) if first and pc > 2 else 2**64 - 1
                h, com, freq, k, c, m, flen, hr, hd, over = _native.partition_counts(
                    v, own, lv, rl, nr, cut, fcut, cutoff + 2, fits, LEVEL_COLUMNS, full if first else None,
                    kept if fits else None, pair_limit=limit, pair_cut=pc, hold_entries=held is not None,
                    threads=threads, key_limit=bound if bounded else 2**64 - 1,
                )
                del v, own, lv
                if first:
                    hist[:] += h.astype(np.int64)
                if rare is not None:
                    common_parts.append(com)
                    frequent_parts.append((freq, flen))
                made += m
                if fits and k.size:
                    key_parts.append(k)
                    cnt_parts.append(c)
                    pending += k.size
                    if pending > max(FOLD_KEYS, key_parts[0].size) or sum(x.size for x in key_parts) > bound:
                        _fold(key_parts, cnt_parts)
                        pending = 0
                        over = bounded and key_parts[0].size > bound
                if fits and (over or first and pc > 2 and made > work):
                    # Too many pairs at ``pc``: the cut-off will be lowered (pass 2); this one only measures.
                    fits, crowded = False, over
                    key_parts.clear()
                    cnt_parts.clear()
                    held_runs.clear()
                    held = None
                    if not first:
                        break
                elif fits:
                    if hr[0].size:
                        held_runs.append(hr)
                    if held is not None and hd[0].size:
                        held.append(hd)
                        held_values += hd[0].size
                        if held_values > HELD_VALUES:
                            held = None  # (needed only if the final cut-off is above ``pair_cut``)
                if report:
                    report("pairs", p + 1, parts)
        finally:
            ahead.shutdown(cancel_futures=True)
        return kept, key_parts, cnt_parts, fits, crowded, common_parts, frequent_parts, held_runs, held

    # (pairs up to the least cut-off, 2, are kept whatever the bounds, as they are at ``safe``)
    kept, key_parts, cnt_parts, fits, crowded, com, freq, held_runs, held = one_pass(cutoff, True, pair_cut > 2)
    # The cut-off: the highest whose lists make at most ``pair_work`` incidences (time), unless their
    # distinct pairs are more than ``bound``, half the pair budget (memory): then the highest whose
    # lists make at most the budget's incidences, so that their pairs cannot be more than it.
    # (Distinct pairs only grow with the cut-off: too many at the first pass's cut-off are too many at
    # any higher one.)
    final = budget_cutoff(hist, cutoff, work)
    safe = budget_cutoff(hist, cutoff, params.pair_budget)
    if crowded and final >= pair_cut:
        final = safe
    crowded = False  # (at a lower cut-off they may not be too many: a pass there tells)
    fits = fits and (final == pair_cut or final > pair_cut and held is not None)
    if fits and held_runs:
        # The held runs: common above the final cut-off, frequent under it as the others.
        hv, hn = (np.concatenate(col) for col in zip(*held_runs))
        held_runs.clear()
        com.append(hv[hn > final])
        freq.append((hv[hn <= final], hn[hn <= final]))
        del hv, hn
    if fits and final > pair_cut and held:
        # Their entries counted again with the final cut-off: their pairs, and each file's entries in
        # the runs under it back in ``kept`` (the first pass took every held entry out).  Their pairs
        # are bounded as a partition's: more distinct pairs than ``bound`` are too many at ``final``.
        hv, ho, hl = (np.concatenate(col) for col in zip(*held))
        held.clear()
        again = _native.partition_counts(hv, ho, hl, rl, nr, final, final, 2, True, LEVEL_COLUMNS, None, kept,
                                         threads=threads, key_limit=bound if final != safe else 2**64 - 1)
        del hv, ho, hl
        if again[9]:
            fits, crowded = False, True  # (``over``: the pass at ``safe`` follows)
        elif again[3].size:
            key_parts.append(again[3])
            cnt_parts.append(again[4])
        del again
    held = held_runs = None  # (freed)
    while True:
        if fits:
            keys, cnts = merge_counts(key_parts, cnt_parts)
            if keys.size <= bound or final == safe:  # (at ``safe`` they are not more, or it is 2)
                break
            del keys, cnts
            crowded = True
        if crowded:
            final = safe  # (more distinct pairs than ``bound`` at ``final``)
        kept, key_parts, cnt_parts, fits, crowded, com, freq, _, _ = one_pass(final, False, final != safe)
    if rare is not None:
        fcut = frequent_cutoff(final)
        fr = [f[n > fcut] for f, n in freq]
        rare[:] = [np.unique(np.concatenate(com)) if com else np.empty(0, np.uint64),
                   np.unique(np.concatenate(fr)) if fr else np.empty(0, np.uint64),
                   np.array([final, cutoff], np.int64)]
    del com, freq
    return _at_least(full, nr), _at_least(kept, nr), keys, cnts


#: Most held entries (``count_runs``: runs above the provisional cut-off, counted again at the end; 13
#: bytes each while held, ~3x that while counted again) before the search falls back to a second pass.
HELD_VALUES = 1 << 22


def provisional_cutoff(hist0: np.ndarray, parts: int, cutoff: int, budget: int, held: int = HELD_VALUES // 2) -> int:
    """The first pass's cut-off, from the run lengths ``hist0`` of the first of ``parts`` partitions
    (hash bits choose the partitions, so each holds a sample of the runs), at most ``cutoff``: the
    lowest cut-off between the one the budget would give with a margin (the budget taken as half) and
    the one it would give without, whose held entries (the runs above it, up to ``cutoff``; counted
    again at the end) the estimate puts under ``held``.  A low cut-off is safe when the estimate falls
    short of the total (the final cut-off still lies above it: only the held runs are counted again),
    a high one when the held entries would not fit :data:`HELD_VALUES` (each search then made the
    second pass: the 1M-file mix's estimate, 87 % of the budget, gave 2 with the margin, and 12 M held
    entries).  Review's simulation (256 partitions, Poisson run lengths, 40 trials each): second passes
    as rare as with the margin where the budget binds, and none for the 1M-like mix."""
    est = np.asarray(hist0, np.int64) * parts
    low = budget_cutoff(est, cutoff, budget // 2)
    high = budget_cutoff(est, cutoff, budget)
    if high <= low:
        return high
    lens = np.arange(est.size, dtype=np.int64)
    entries = (est * lens)[: cutoff + 1]
    above = np.concatenate((np.cumsum(entries[::-1])[::-1][1:], [0]))  # above[c]: entries of runs c+1..cutoff
    fits = np.flatnonzero(above[low : high + 1] <= held)
    return low + int(fits[0]) if fits.size else high


def _at_least(per_level: np.ndarray, nr: int) -> np.ndarray:
    """Per-level counts (flat, ``nr`` rows of :data:`LEVEL_COLUMNS`) turned in place into counts of
    the level or above (column t: levels >= t)."""
    x = per_level.reshape(nr, LEVEL_COLUMNS)
    np.cumsum(x[:, ::-1], axis=1, out=x[:, ::-1])
    return x


#: Keys of the pairs' counts that ``count_runs`` lets wait in batches before it merges them into one
#: (:func:`_fold`; at least as many as that one holds).  A pair of similar files shares values in most
#: partitions, so its key comes from each: the 1,000,000-file mix makes ~10 M keys (~40,000 a partition),
#: which peaked at ~0.25 GB more when they all waited for one merge at the end (1,040 -> 757 MB).
FOLD_KEYS = 1 << 21


def _fold(key_parts: list[np.ndarray], cnt_parts: list[np.ndarray]) -> None:
    """The batches merged into one, in place (:func:`merge_counts`)."""
    k, c = merge_counts(key_parts, cnt_parts)
    key_parts[:] = [k]
    cnt_parts[:] = [c]


def merge_counts(key_parts: list[np.ndarray], cnt_parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The batches of (sorted distinct keys, counts) merged: sorted distinct keys, counts summed
    (natively: ``_native.merge_counts``, a k-way merge).  The lists are emptied.  At the peak the
    batches and the result are held, 12 bytes a key each (a stable sort of them all held ~50 bytes a
    key: ~1.9 GB at the pair budget's 2^25 keys, now ~0.8 GB)."""
    if not key_parts:
        return np.empty(0, np.int64), np.empty(0, np.int32)
    if len(key_parts) == 1:  # already sorted and distinct
        return key_parts.pop(), cnt_parts.pop()
    keys, cnts = _native.merge_counts([np.ascontiguousarray(k, np.int64) for k in key_parts],
                                      [np.ascontiguousarray(c, np.int32) for c in cnt_parts])
    key_parts.clear()
    cnt_parts.clear()
    return keys, cnts


class FingerprintSets(Protocol):
    """Where :func:`compute_pair_arrays` finds the files' fingerprint sets (one view, common
    values included, texts to ignore left out): the reads a pair search makes of them.

    ``spans``: not None when the sets carry each value's dominance span (ALGORITHM_VERSION 12): a
    value then counts for a pair where its span reaches the pair's window in both files."""

    spans: Any

    def rows(self, files: FileTableLike) -> np.ndarray:
        """Per file row, a handle of its set for the two methods below (int64; -1: no set)."""
        ...

    def shared_counts(
        self, csr_row: np.ndarray, row_text: np.ndarray, params: SimilarityParams,
        cancel: CancelToken | None, report: Callable[[str, int, int], None] | None,
        row_level: np.ndarray | None = None, rare: list[np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:func:`shared_counts` of the sets ``csr_row`` (handles)."""
        ...

    def intersect(
        self, rows_a: np.ndarray, rows_b: np.ndarray, text_a: np.ndarray, text_b: np.ndarray, level: np.ndarray,
        view: int, ignored: np.ndarray,
    ) -> np.ndarray:
        """|a ∩ b| of the full sets of each pair of handles (common values too, ``ignored`` ones not;
        ``text_a`` / ``text_b``: whether each is a text file), at each pair's ``level``."""
        ...


class CsrSets:
    """The fingerprint sets held in memory as a CSR: ``csr_ids`` (file ids), ``offsets``,
    ``values`` (sorted distinct values per row), ``spans`` (aligned with the values, or None);
    handles are CSR rows."""

    def __init__(self, csr_ids: np.ndarray, offsets: np.ndarray, values: np.ndarray,
                 spans: np.ndarray | None = None) -> None:
        self.ids = csr_ids
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.values = np.asarray(values, dtype=np.uint64)
        self.spans = None if spans is None else np.asarray(spans, dtype=np.uint8)

    def rows(self, files: FileTableLike) -> np.ndarray:
        return align_csr(files, self.ids, self.offsets)

    def shared_counts(
        self, csr_row: np.ndarray, row_text: np.ndarray, params: SimilarityParams,
        cancel: CancelToken | None, report: Callable[[str, int, int], None] | None,
        row_level: np.ndarray | None = None, rare: list[np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        value_lv = None if self.spans is None else LEVEL_OF_SPAN[self.spans]
        return shared_counts(self.offsets, self.values, csr_row, row_text, params, cancel, report, value_lv,
                             row_level, rare)

    def intersect(
        self, rows_a: np.ndarray, rows_b: np.ndarray, text_a: np.ndarray, text_b: np.ndarray, level: np.ndarray,
        view: int, ignored: np.ndarray,
    ) -> np.ndarray:
        if self.spans is None:
            return intersect_counts(self.offsets, self.values, rows_a, rows_b)
        handles, inv = np.unique(np.concatenate((rows_a, rows_b)), return_inverse=True)
        text = np.zeros(handles.size, bool)
        text[inv] = np.concatenate((text_a, text_b))
        sets = sets_of_rows(self.offsets, self.values, self.spans, handles, text)
        ev = pair_evidence(sets, inv[: rows_a.size], inv[rows_a.size :], window_of_level(level), view, ignored)
        return ev.inter.astype(np.int64)


def compute_pair_arrays(
    files: FileTableLike,
    csr_ids: np.ndarray,
    offsets: np.ndarray,
    values: np.ndarray,
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    params: SimilarityParams = DEFAULT_SIM_PARAMS,
    cancel: CancelToken | None = None,
    report: Callable[[str, int, int], None] | None = None,
    identity: tuple[np.ndarray, np.ndarray] | None = None,
    reference_roots: Sequence[str] = (),
    spans: np.ndarray | None = None,
    places: PlacesLoader | None = None,
    view: int = 0,
    sets: FingerprintSets | None = None,
    memory: int | None = None,
) -> PairArrays:
    """Every pair with best score >= ``min_similarity`` (and something shared), or sharing a passage
    of at least ``params.min_passage`` characters, as arrays.

    files: the file table; (csr_ids, offsets, values): sorted distinct fingerprints per file
    id -- or ``sets``, the same sets held elsewhere (:class:`FingerprintSets`, e.g. a store
    partitioned by value on a cluster: ``simscan.cluster``; the three arrays are then None).
    Exact/content classes become star pairs against their representative; other pairs
    are between representatives (a file identical to X shares X's pairs).
    Rows with the same (device, inode) (``identity``, default: the table's columns) are one
    file: only the preferred of them takes part (see ``distinct_file_rows``; files under
    ``reference_roots`` preferred first, as in groups), so no pair ever joins a file with itself.
    spans: each value's dominance span (uint8, aligned with ``values``; ALGORITHM_VERSION 12): a value
    then counts where its span reaches the pair's window (``evidence``), else by its own level.
    places: reads the stored sets with their places for some CSR rows (``evidence.PlacesLoader``): the
    pairs then carry their passages' evidence (``longest`` / ``shared``), and a pair sharing a passage
    of ``params.min_passage`` characters is kept whatever its share; without it both are -1.
    view: the view these values are of (0 text, 1 code: ``views``).
    memory: the pairs' evidence reads the stored sets of files holding at most about a quarter of this
    many bytes at once, two such chunks at a time (``slices.pair_chunks``; None: all at once).
    Raises :class:`Cancelled` when ``cancel`` is set.
    """
    if sets is None:
        sets = CsrSets(csr_ids, offsets, values, spans)
    # The path kept of a file reached by several paths follows the groups' reference rules.
    keep = distinct_file_rows(files, identity, reference_roots)
    if keep is not None:
        sub = compute_pair_arrays(
            subset_table(files, keep), None, None, None, min_similarity=min_similarity, params=params,
            cancel=cancel, report=report, identity=(np.zeros(keep.size, np.int64), np.zeros(keep.size, np.int64)),
            places=places, view=view, sets=sets, memory=memory,
        )
        return dataclasses.replace(sub, a=keep[sub.a], b=keep[sub.b])
    n = len(files.paths)
    cls = exact_classes(files)
    sim = np.asarray(files.simhash, dtype=np.uint64)
    if report:
        report("exact", 0, n)

    star = star_pairs(cls, sim)
    if report:
        report("exact", n, n)
    _check(cancel)

    # --- candidates between representatives (in row order: any order gives the same pairs)
    rep_rows = np.sort(cls.rep)
    csr_row = sets.rows(files)[rep_rows]
    has = csr_row >= 0
    rep_rows, csr_row = rep_rows[has], csr_row[has]
    nr = rep_rows.size
    # Set sizes per level (see ``levels``): a pair is sized at the coarser level of the two.
    rep_text = np.asarray(files.is_text, dtype=bool)[rep_rows]
    flevel = file_levels(np.asarray(files.units)[rep_rows], rep_text)
    rare: list[np.ndarray] = []
    full_size, kept_size, keys, cnts = sets.shared_counts(
        csr_row, rep_text, params, cancel, report, flevel if sets.spans is not None else None, rare,
    )
    common, frequent = rare[:2]
    if len(rare) > 2 and report and rare[2][0] < rare[2][1]:
        report("cutoff", int(rare[2][0]), int(rare[2][1]))  # (``engine.find_pair_set`` tells the person)
    elif len(rare) > 2 and report:
        # (not under a cut-off the budget lowered: most files are then mostly common, and a higher
        # --common-cutoff would not count their text; the "cutoff" report says what is missing)
        crowded = mostly_common(full_size[:, 0], kept_size[:, 0])
        if crowded > int(rare[2][0]):  # (``engine.find_pair_set`` tells the person)
            report("crowded", crowded, int(rare[2][0]))
    ignored = params.ignored()
    if ignored.size:
        common = np.union1d(common, ignored)

    # --- simhash candidates among representatives that have fingerprints
    with_fp = np.flatnonzero(full_size[:, 0] > 0)
    hi_, hj_, _ = simhash_pairs(sim[rep_rows[with_fp]], params.simhash_k)
    skeys = np.minimum(with_fp[hi_], with_fp[hj_]) * nr + np.maximum(with_fp[hi_], with_fp[hj_])
    # keys are sorted (np.unique / merge above): membership by binary search, not np.isin,
    # which hashes the whole large array.
    if keys.size:
        pos = np.minimum(np.searchsorted(keys, skeys), keys.size - 1)
        new = keys[pos] != skeys
    else:
        new = np.ones(skeys.size, dtype=bool)
    keys = np.concatenate((keys, skeys[new]))
    cnts = np.concatenate((cnts, np.zeros(int(new.sum()), np.int32)))
    _check(cancel)

    # Score in chunks, keeping only what passes: memory stays proportional to the chunk and
    # the survivors, not to every candidate.
    want_passages = places is not None and sets.spans is not None
    parts: list[tuple[np.ndarray, ...]] = []
    for c0 in range(0, keys.size, _SCORE_CHUNK):
        _check(cancel)
        if report:
            report("score", c0, int(keys.size))
        k = keys[c0 : c0 + _SCORE_CHUNK]
        c = cnts[c0 : c0 + _SCORE_CHUNK]
        ra, rb = k // nr, k % nr
        lv = np.maximum(flevel[ra], flevel[rb])
        r, ca, cb = _scores(c, kept_size[ra, lv], kept_size[rb, lv])
        shared = c.astype(np.int64)
        full = np.zeros(k.size, dtype=bool)  # scored on the full sets (common values too)
        dist = popcount64(sim[rep_rows[ra]] ^ sim[rep_rows[rb]])
        close = np.flatnonzero(dist <= params.simhash_k)
        if close.size:
            # The full sets can only score better when both files hold common values: the shared
            # count grows by at most the smaller number of them.  Pairs whose bound does not beat
            # the score they have skip the (costly) exact intersection.
            lc = lv[close]
            fa_, fb_ = full_size[ra[close], lc], full_size[rb[close], lc]
            bound = c[close] + np.minimum(fa_ - kept_size[ra[close], lc], fb_ - kept_size[rb[close], lc])
            ur, uca, ucb = _scores(bound, fa_, fb_)
            kept_best = np.maximum(r[close], np.maximum(ca[close], cb[close]))
            close = close[np.maximum(ur, np.maximum(uca, ucb)) > kept_best]
        if close.size:
            full_inter = _intersect_in_chunks(sets, csr_row, ra[close], rb[close], rep_text, lv[close], view, ignored,
                                              np.asarray(files.fp_count)[rep_rows], memory)
            lc = lv[close]
            fr, fca, fcb = _scores(full_inter, full_size[ra[close], lc], full_size[rb[close], lc])
            better = np.maximum(fr, np.maximum(fca, fcb)) > np.maximum(r[close], np.maximum(ca[close], cb[close]))
            sel = close[better]
            r[sel], ca[sel], cb[sel] = fr[better], fca[better], fcb[better]
            shared[sel] = full_inter[better]
            full[sel] = True
        best = np.maximum(r, np.maximum(ca, cb))
        by_share = passes(best, min_similarity) & (best > 0) & (shared >= params.min_shared)
        # Every pair sharing two values or more is weighed (its passages, and its share once common text
        # is left out), whatever the threshold and ``min_passage``: what a pair is listed with does not
        # depend on them.
        keep = by_share | want_passages & (c >= max(2, params.min_shared))
        parts.append((ra[keep], rb[keep], r[keep], ca[keep], cb[keep], dist[keep], lv[keep], by_share[keep],
                      full[keep]))
    if report and keys.size:
        report("score", int(keys.size), int(keys.size))
    if parts:
        ra, rb, r, ca, cb, dist, lv, by_share, full = (np.concatenate(col) for col in zip(*parts))
    else:
        e = np.empty(0, np.int64)
        ra, rb, dist, lv = e, e.copy(), e.copy(), e.copy()
        r, ca, cb = np.empty(0), np.empty(0), np.empty(0)
        by_share, full = np.empty(0, bool), np.empty(0, bool)
    longest = np.full(ra.size, -1, np.int32)
    shared_chars = np.full(ra.size, -1, np.int32)
    if want_passages and ra.size:
        assert places is not None
        _check(cancel)
        if report:
            report("passages", 0, int(ra.size))
        ok, inter, na, nb, longest, shared_chars = _evidence_in_chunks(
            places, csr_row, ra, rb, lv, view, common, frequent, np.asarray(files.fp_count)[rep_rows], memory, cancel,
            report,
        )
        # The scores leave common text out too (``evidence``), except where the full sets scored.
        re_ = ok & ~full
        nr_, nca, ncb = _scores(inter[re_], na[re_].astype(np.float64), nb[re_].astype(np.float64))
        r[re_], ca[re_], cb[re_] = nr_, nca, ncb
        best = np.maximum(r[re_], np.maximum(ca[re_], cb[re_]))
        by_share[re_] = passes(best, min_similarity) & (best > 0) & (inter[re_] >= params.min_shared)
        if report:
            report("passages", int(ra.size), int(ra.size))
        keep = by_share | ((params.min_passage > 0) & (longest >= params.min_passage))
        ra, rb, r, ca, cb, dist, longest, shared_chars = (
            x[keep] for x in (ra, rb, r, ca, cb, dist, longest, shared_chars)
        )
    fa, fb = rep_rows[ra], rep_rows[rb]
    # a = the preferred file of the two (older), so output reads "original -> copy".
    swap = cls.priority[fa] > cls.priority[fb]
    fa, fb = np.where(swap, fb, fa), np.where(swap, fa, fb)
    ca, cb = np.where(swap, cb, ca), np.where(swap, ca, cb)
    # Same rule as ``compare.classify``.
    hi_c, lo_c = np.maximum(ca, cb), np.minimum(ca, cb)
    contained = (hi_c >= params.contained_min) & (hi_c >= params.contained_ratio * lo_c)
    near = PairArrays(
        fa,
        fb,
        r,
        ca,
        cb,
        dist,
        np.zeros(fa.size, dtype=bool),
        np.where(contained, 3, 2).astype(np.int8),
        np.zeros(fa.size, dtype=np.int8),
        longest,
        shared_chars,
    )
    return concat_pairs(star, near)


#: Bytes a stored value costs while a chunk of the evidence is weighed: its value, span and place
#: (19), the blobs they are read from and the index arrays that gather them (``Index.stored_sets``),
#: the evidence's flags, and margins (measured: ~60-70 at the peak of a chunk of 2.8 M values).
EVIDENCE_BYTES = 64


def _set_chunks(ra: np.ndarray, rb: np.ndarray, set_size: np.ndarray, memory: int | None) -> list[np.ndarray] | None:
    """The pairs of positions ``ra``, ``rb`` in chunks whose files hold at most a quarter of ``memory``
    bytes of stored values (``set_size``: values per position, :data:`EVIDENCE_BYTES` a value), to be
    read a chunk at a time; None when they fit at once (or ``memory`` is None).

    The chunks follow the positions' order: positions renumbered cluster by cluster of the pairs'
    graph (two rounds of its components: enough for clusters of near-copies, ~0.3 s for 4 M pairs),
    a cluster is read in one chunk rather than a part of it in each (20,000 near-copies in clusters
    of 50 spread over the rows: every file read 3.6 times before, about once now).  One giant
    component keeps the positions' own order."""
    from simscan.similarity.slices import pair_chunks

    limit = None if memory is None else max(1, memory // 4 // EVIDENCE_BYTES)
    involved = np.zeros(set_size.size, dtype=bool)
    involved[ra] = involved[rb] = True
    if limit is None or int(set_size[involved].sum()) <= limit:
        return None
    order = np.lexsort((np.arange(set_size.size), components(set_size.size, ra, rb, rounds=2)))
    new = np.empty(order.size, np.int64)
    new[order] = np.arange(order.size)
    return pair_chunks(new[ra], new[rb], set_size[order], limit)


def _intersect_in_chunks(
    sets: FingerprintSets, csr_row: np.ndarray, ra: np.ndarray, rb: np.ndarray, rep_text: np.ndarray, lv: np.ndarray,
    view: int, ignored: np.ndarray, set_size: np.ndarray, memory: int | None,
) -> np.ndarray:
    """``sets.intersect`` of the pairs of positions ``ra``, ``rb`` (whole sets, at level ``lv``), their
    files' sets read in chunks as the evidence's (:func:`_set_chunks`).  The simhash-close pairs of a
    million files (48,580 pairs of 42,076 files) read at once took ~180 MB above the search's peak."""
    chunks = _set_chunks(ra, rb, set_size, memory)
    if chunks is None:
        return sets.intersect(csr_row[ra], csr_row[rb], rep_text[ra], rep_text[rb], lv, view, ignored)
    out = np.zeros(ra.size, np.int64)
    for chunk in chunks:
        a, b = ra[chunk], rb[chunk]
        out[chunk] = sets.intersect(csr_row[a], csr_row[b], rep_text[a], rep_text[b], lv[chunk], view, ignored)
    return out


def _evidence_in_chunks(
    places: PlacesLoader, csr_row: np.ndarray, ra: np.ndarray, rb: np.ndarray, lv: np.ndarray, view: int,
    common: np.ndarray, frequent: np.ndarray, set_size: np.ndarray, memory: int | None, cancel: CancelToken | None,
    report: Callable[[str, int, int], None] | None,
) -> tuple[np.ndarray, ...]:
    """The evidence (``evidence.pair_evidence`` with common text) of the pairs of positions ``ra``,
    ``rb`` (weighed at level ``lv``), their files' stored sets read by ``places`` (``csr_row``: the
    handle of each position) in chunks holding at most a quarter of ``memory`` bytes of them
    (``set_size``: values per position); a chunk is weighed natively on a worker thread while the next
    one is read.  Returns (weighed, inter, na, nb, longest, shared) per pair; a pair not weighed (its
    sets could not be read: the index changed since) has longest and shared -1."""

    m = ra.size
    ok = np.zeros(m, dtype=bool)
    inter, na, nb = (np.zeros(m, np.int64) for _ in range(3))
    longest = np.full(m, -1, np.int32)
    shared = np.full(m, -1, np.int32)
    # Half the budget (the partitions of the sliced search still wait in the other half), shared by
    # two chunks: one read while the other is weighed.
    chunks = _set_chunks(ra, rb, set_size, memory) or [np.arange(m)]

    def weigh(chunk: np.ndarray, sets: StoredSets, row_a: np.ndarray, row_b: np.ndarray) -> None:
        """The evidence of a chunk's pairs whose sets were read, into the columns (a worker thread: the
        native core runs without the GIL, while the next chunk is read from the index)."""
        has = (row_a >= 0) & (row_b >= 0)
        at = chunk[has]
        ev = pair_evidence(sets, row_a[has], row_b[has], window_of_level(lv[at]), view, common, frequent,
                           common_text=True)
        ok[at] = True
        inter[at], na[at], nb[at] = ev.inter, ev.na, ev.nb
        longest[at], shared[at] = ev.longest, ev.shared

    done = 0
    # The index is read on this thread only (its connection and read snapshot are this thread's).
    worker = ThreadPoolExecutor(1)
    running: Future | None = None
    try:
        for chunk in chunks:
            _check(cancel)
            a, b = ra[chunk], rb[chunk]
            need = np.union1d(a, b)
            sets, row_of = places(csr_row[need])
            row_a, row_b = row_of[np.searchsorted(need, a)], row_of[np.searchsorted(need, b)]
            del a, b, need, row_of
            if running is not None:
                running.result()
                running = None
            running = worker.submit(weigh, chunk, sets, row_a, row_b)
            del sets
            done += chunk.size
            if report and len(chunks) > 1:
                report("passages", done, m)
        if running is not None:
            running.result()
    finally:
        worker.shutdown(cancel_futures=True)
    return ok, inter, na, nb, longest, shared


#: Fewest values of a file for :func:`mostly_common` to count it (a tiny file's few values say little).
CROWDED_MIN_VALUES = 10


def mostly_common(full: np.ndarray, kept: np.ndarray) -> int:
    """How many files (``full``: each one's values, ``kept``: those of them not common) are *mostly
    common*: of at least :data:`CROWDED_MIN_VALUES` values, more than half held by more files than the
    common cut-off.  More such files than the cut-off is what a family of more near-copies of one text
    than the cut-off looks like (each holds its text's values, which are then common: the family is
    paired only by its edits); it is also what templates and licences repeated that often look like.
    On the evaluation corpus none are; 35 of 6,709 in /usr/share/doc with Python's packages (their
    copyright files), 172 of 10,355 in Python's library with a virtual environment, 88 of 6,439 in
    Python 3.12's (its generated codecs' compiled files), 513 of 45,490 in /usr/share (generated tables:
    Perl's Unicode properties, Vim's file-type plugins, CMaps), 11,255 of 19,737
    files in clusters of 100 near-copies (``groups_clusters.py --paragraphs 200``)."""
    full = np.asarray(full, np.int64)
    return int(np.count_nonzero((full >= CROWDED_MIN_VALUES) & (2 * np.asarray(kept, np.int64) < full)))


def take_pairs(pa: PairArrays, sel: np.ndarray) -> PairArrays:
    """The pairs ``sel`` (positions or a mask) of ``pa``, in that order."""
    return PairArrays(*(getattr(pa, f)[sel] for f in PairArrays.__slots__))


def concat_pairs(x: PairArrays, y: PairArrays) -> PairArrays:
    return PairArrays(*(np.concatenate((getattr(x, f), getattr(y, f))) for f in PairArrays.__slots__))


def sorted_rounded(pa: PairArrays) -> PairArrays:
    """``pa`` in the order of ``find_pairs`` (best score descending — unrounded —, then kind code,
    then rows a and b) with the three scores rounded to :data:`SCORE_DECIMALS`, as the ``Pair`` objects of
    :func:`to_pairs` carry them.  Apply a threshold to the unrounded columns first."""
    best = pa.best
    order = np.lexsort((pa.b, pa.a, pa.kind, -best))
    return PairArrays(
        pa.a[order],
        pa.b[order],
        np.round(pa.resemblance[order], SCORE_DECIMALS),
        np.round(pa.containment_a[order], SCORE_DECIMALS),
        np.round(pa.containment_b[order], SCORE_DECIMALS),
        pa.distance[order],
        pa.exact[order],
        pa.kind[order],
        pa.view[order],
        pa.longest[order],
        pa.shared[order],
    )


def passage_value(x: int) -> int | None:
    """A ``longest`` / ``shared`` column value as ``Pair`` carries it (None for -1: not weighed)."""
    return None if x < 0 else x


def pairs_from_rounded(pa: PairArrays, files: FileTableLike) -> list[Pair]:
    """``Pair`` objects of columns already in order and rounded (:func:`sorted_rounded`)."""
    from simscan.similarity.types import KINDS, VIEWS

    ids = np.asarray(files.ids).tolist()
    paths = files.paths
    return [
        Pair(ids[ia], ids[ib], paths[ia], paths[ib], r, ca, cb, d, ex, KINDS[kd], VIEWS[vw],
             None if lp < 0 else lp, None if sc < 0 else sc)
        for ia, ib, r, ca, cb, d, ex, kd, vw, lp, sc in zip(
            pa.a.tolist(), pa.b.tolist(), pa.resemblance.tolist(), pa.containment_a.tolist(),
            pa.containment_b.tolist(), pa.distance.tolist(), pa.exact.tolist(), pa.kind.tolist(),
            pa.view.tolist(), pa.longest.tolist(), pa.shared.tolist(),
        )
    ]


def to_pairs(pa: PairArrays, files: FileTableLike) -> list[Pair]:
    """Pair objects, sorted by best score (descending), then by paths."""
    return pairs_from_rounded(sorted_rounded(pa), files)


def expand_copy_pairs(pairs: Sequence[Pair], limit: int = MAX_COPY_PAIRS) -> tuple[list[Pair], int]:
    """Every pair of files, copies included: (pairs, number of pairs left out by ``limit``).

    ``find_pairs`` pairs only the representative of a copy class (files joined by "exact" /
    "content" pairs) with other files.  Here each copy inherits its representative's pairs
    with other files: for a pair (a, b), every member x of a's class and y of b's class gives
    (x, y) with the same scores, simhash distance and kind (a copy has the same fingerprints,
    hence the same scores).  The copy pairs themselves stay a star.  Each inherited pair follows
    the pair it comes from, so the order by score is kept; at most ``limit`` pairs are added
    (``copies.expand_copies``, which this is on ``Pair`` objects: members of a class in id order).
    """
    if not pairs:
        return [], 0
    ids = np.unique(np.fromiter((i for p in pairs for i in (p.a_id, p.b_id)), np.int64, 2 * len(pairs)))
    a = np.searchsorted(ids, np.fromiter((p.a_id for p in pairs), np.int64, len(pairs)))
    b = np.searchsorted(ids, np.fromiter((p.b_id for p in pairs), np.int64, len(pairs)))
    copy = np.fromiter((p.kind in ("exact", "content") for p in pairs), bool, len(pairs))
    x, y, src, left_out = expand_copies(a, b, copy, ids.size, limit)
    path_of: dict[int, str] = {}
    for p in pairs:
        path_of.setdefault(p.a_id, p.a_path)
        path_of.setdefault(p.b_id, p.b_path)
    out: list[Pair] = []
    for k, i, j in zip(src.tolist(), ids[x].tolist(), ids[y].tolist()):
        p = pairs[k]
        out.append(p if (i, j) == (p.a_id, p.b_id) else
                   dataclasses.replace(p, a_id=i, b_id=j, a_path=path_of[i], b_path=path_of[j]))
    return out, left_out


def under_roots(paths: list[str], roots: tuple[str, ...] | list[str]) -> np.ndarray:
    """Boolean per path: inside one of ``roots`` (absolute, normalised, by path component).

    The scanner stores real paths (symbolic links in the roots resolved), so each root is
    matched both as given and resolved: a reference folder named through a link still counts.
    """
    if not roots:
        return np.zeros(len(paths), dtype=bool)
    forms = {f(os.fsdecode(r)) for r in roots for f in (os.path.abspath, os.path.realpath)}
    norm = tuple(os.path.join(r, "") for r in sorted(forms))
    return np.fromiter((p.startswith(norm) for p in paths), dtype=bool, count=len(paths))
