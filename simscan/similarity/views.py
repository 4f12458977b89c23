"""Scores per view: a pair of files is scored on each view apart, and the better view counts.

Text files of program source carry two fingerprint views in their stored sets (the text view
and the code view, told apart by a bit of each value: ``simscan.fingerprint.views``).  A text
window never matches a code window, and mixing the two in one set would dilute both (a
renamed copy shares most of its code view and little of its text view; the union scores the
average).  So every score is computed per view, by the same exact set arithmetic at the same
level, and a pair's scores are those of the view with the higher best score.  A file without a
code view (prose, binary files, short or huge texts) has an empty code view: its pairs are
scored exactly as before.

Measured on the evaluation corpus (``benchmarks/code_view.py``; recall at the default 15 %,
false positives on the 882 unrelated pairs): text view only 0.77 light / 0.33 heavy at 0.45 %;
code view only (replacing the text view of source files) 0.81 / 0.31 at 0.91 %, ROC AUC 0.95 /
0.80 (from 0.98 / 0.85); the better of the two views 0.86 / 0.38 at 0.91 %, AUC 0.98 / 0.85
(ALGORITHM_VERSION 10; version 11's code view: 0.85 / 0.43 at 0.91 %).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from simscan.fingerprint import views as _fv
from simscan.model import FingerprintMeta, Fingerprints
from simscan.similarity.core import (
    DEFAULT_SIM_PARAMS,
    CsrSets,
    FingerprintSets,
    PairArrays,
    align_csr,
    compute_pair_arrays,
    concat_pairs,
    take_pairs,
)

#: Fewest shared code-view fingerprints for the code view to score a pair (about 250 units of
#: code alike up to names; the text view keeps ``SimilarityParams.min_shared``).  Tiny sources
#: are alike by structure alone (a 220-byte header holding one two-field struct is "contained"
#: in every header with such a struct): among 928 system headers and C examples, 5 leaves 34
#: pairs that only the code view finds above 15 % instead of 86; on the evaluation corpus it
#: changes no recall (ROC AUC heavy 0.864 -> 0.852).  (Before the code view left out the text
#: view's own windows, ``fingerprint.views.code_only``, the code view found 303 such pairs.)
CODE_MIN_SHARED = 5

#: ``PairArrays.view`` of a pair scored on the code view (index into ``types.VIEWS``).
CODE_VIEW = 1


def split_csr(
    files: Any, csr_ids: np.ndarray, offsets: np.ndarray, values: np.ndarray, consume: bool = False,
    keep_code: bool = True, spans: np.ndarray | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray | None], tuple[np.ndarray, np.ndarray, np.ndarray | None] | None]:
    """((offsets, values, spans) of the text view, the same of the code view or None when no file
    has one, or without ``keep_code``), same CSR rows as the input; ``spans`` (aligned with
    ``values``, or None) split alike.  ``consume``: ``values`` may be overwritten (the text view's
    values are then compacted in place: no second copy of every fingerprint)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    values = np.asarray(values, dtype=np.uint64)
    counts = np.diff(offsets)
    row_text = np.zeros(counts.size, dtype=bool)
    csr_row = align_csr(files, csr_ids, offsets)
    has = csr_row >= 0
    row_text[csr_row[has]] = np.asarray(files.is_text, dtype=bool)[has]
    n = int(offsets[-1]) if offsets.size else 0
    code = _fv.value_views(values[:n], np.repeat(row_text, counts)) == _fv.CODE
    if not code.any():
        return (offsets, values, spans), None
    code_rows = row_counts(code, offsets)
    code_offsets = np.concatenate(([0], np.cumsum(code_rows))).astype(np.int64)
    text_offsets = np.concatenate(([0], np.cumsum(counts - code_rows))).astype(np.int64)
    code_values = values[:n][code] if keep_code else None
    code_spans = spans[:n][code] if keep_code and spans is not None else None
    np.logical_not(code, out=code)
    text_values = _kept(values[:n], code, consume)
    text_spans = spans[:n][code] if spans is not None else None
    return (text_offsets, text_values, text_spans), (
        (code_offsets, code_values, code_spans) if code_values is not None else None
    )


def drop_values(
    offsets: np.ndarray, values: np.ndarray, drop: np.ndarray, consume: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """A CSR of sorted sets (``offsets``, ``values``) without the values in ``drop`` (sorted,
    distinct): the texts to ignore.  ``consume``: ``values`` may be overwritten (compacted in
    place).  Slice by slice: beyond a byte per value, its temporaries are one slice's."""
    off, val, _ = drop_values_with(offsets, values, None, drop, consume)
    return off, val


def drop_values_with(
    offsets: np.ndarray, values: np.ndarray, spans: np.ndarray | None, drop: np.ndarray, consume: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`drop_values`, with the values' ``spans`` (aligned with them, or None) dropped alike."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = int(offsets[-1])
    values = np.asarray(values, dtype=np.uint64)[:n]
    if drop.size == 0 or n == 0:
        return offsets, values, spans
    keep = np.empty(n, dtype=bool)
    for lo in range(0, n, _COMPACT_SLICE):
        v = values[lo : lo + _COMPACT_SLICE]
        pos = np.searchsorted(drop, v)
        np.minimum(pos, drop.size - 1, out=pos)
        np.not_equal(drop[pos], v, out=keep[lo : lo + v.size])
    # What each row loses: counted from the positions when few values go (16 bytes each), else by
    # row_counts (8 bytes a value).
    dropped = ~keep
    gone = np.flatnonzero(dropped) if np.count_nonzero(dropped) < n // 2 else None
    if gone is not None:
        lost = np.bincount(np.searchsorted(offsets, gone, side="right") - 1, minlength=offsets.size - 1)
    else:
        lost = row_counts(dropped, offsets)
    del dropped, gone
    kept_offsets = offsets.copy()
    kept_offsets[1:] -= np.cumsum(lost)
    return kept_offsets, _kept(values, keep, consume), (None if spans is None else spans[:n][keep])


def _kept(values: np.ndarray, keep: np.ndarray, consume: bool) -> np.ndarray:
    """``values[keep]``; with ``consume`` (and a writable array) compacted in place, slice by slice
    (what a slice keeps is a copy, written at or before the slice's start): no second array of
    every value."""
    if not (consume and values.flags.writeable):
        return values[keep]
    w = 0
    for lo in range(0, values.size, _COMPACT_SLICE):
        kept = values[lo : lo + _COMPACT_SLICE][keep[lo : lo + _COMPACT_SLICE]]
        values[w : w + kept.size] = kept
        w += kept.size
    return values[:w]


#: Values handled at once by the in-place compactions and the membership test of :func:`drop_values`.
_COMPACT_SLICE = 1 << 22


def row_counts(mask: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per CSR row (``offsets``), how many of its entries ``mask`` holds (int64), without an
    array of every entry's row."""
    out = np.zeros(offsets.size - 1, dtype=np.int64)
    full = np.flatnonzero(offsets[1:] > offsets[:-1])
    if full.size:
        # Between one non-empty row's start and the next one's lies exactly that row.
        out[full] = np.add.reduceat(mask[: int(offsets[-1])], offsets[:-1][full], dtype=np.int64)
    return out


def merge_best(text: PairArrays, code: PairArrays) -> PairArrays:
    """Pairs of the text-view pass plus the code-view pass's near/contained pairs; a pair found
    by both keeps the scores of the view with the higher best score (ties: the text view), and
    the longer passage and larger shared characters of the two.
    Copy pairs (kinds 0, 1) come from the text pass only (the code pass finds the same)."""
    near = code.kind >= 2
    code = take_pairs(code, near)
    if code.a.size == 0:
        return text
    both = concat_pairs(text, code)
    n = int(max(both.a.max(initial=0), both.b.max(initial=0))) + 1
    key = both.a.astype(np.int64) * n + both.b.astype(np.int64)
    src = np.concatenate((np.zeros(text.a.size, np.int8), np.ones(code.a.size, np.int8)))
    # Per key: highest best first, then the text view.
    order = np.lexsort((src, -both.best, key))
    k = key[order]
    first = np.ones(k.size, dtype=bool)
    first[1:] = k[1:] != k[:-1]
    # The passages are the pair's whatever the view: each pair keeps the longest passage and the
    # most shared characters either view weighed.
    start = np.flatnonzero(first)
    longest = np.maximum.reduceat(both.longest[order], start) if start.size else both.longest[:0]
    shared = np.maximum.reduceat(both.shared[order], start) if start.size else both.shared[:0]
    at = order[first]
    pick = np.argsort(at, kind="stable")
    merged = {"longest": longest[pick], "shared": shared[pick]}
    return PairArrays(*(merged[f] if f in merged else getattr(both, f)[at[pick]] for f in PairArrays.__slots__))


def compute_pair_arrays_by_view(files: Any, csr_ids: np.ndarray, offsets: np.ndarray, values: np.ndarray,
                                consume: bool = False, **kwargs: Any) -> PairArrays:
    """:func:`core.compute_pair_arrays` on each view, merged by :func:`merge_best` (one pass
    when no file has a code view, or with ``params.code_view`` off: then the text view alone).
    Same arguments; each pair's ``view`` says which view scored it.  ``consume``: ``values`` may
    be overwritten (see :func:`split_csr`)."""
    params = kwargs.get("params", DEFAULT_SIM_PARAMS)
    spans = kwargs.pop("spans", None)
    (t_off, t_val, t_spans), code = split_csr(files, csr_ids, offsets, values, consume=consume,
                                              keep_code=params.code_view, spans=spans)
    del spans
    code_sets = None if code is None else CsrSets(csr_ids, code[0], code[1], code[2])
    return pair_arrays_by_view(files, CsrSets(csr_ids, t_off, t_val, t_spans), code_sets, **kwargs)


def pair_arrays_by_view(files: Any, text_sets: FingerprintSets, code_sets: FingerprintSets | None,
                        **kwargs: Any) -> PairArrays:
    """:func:`compute_pair_arrays_by_view` of sets held as :class:`core.FingerprintSets`, one
    for each view (``code_sets`` None: no file has a code view, or ``params.code_view`` is off).
    The keyword arguments of :func:`core.compute_pair_arrays`."""
    params = kwargs.get("params", DEFAULT_SIM_PARAMS)
    text = compute_pair_arrays(files, None, None, None, sets=text_sets, view=_fv.TEXT, **kwargs)
    if code_sets is None:
        return text
    report = kwargs.get("report")

    def code_report(phase: str, done: int, total: int) -> None:
        # The code pass reports its own phases ("code:pairs", "code:score"); its copies were found above.
        if report is not None and phase != "exact":
            report(f"code:{phase}", done, total)

    kwargs = dict(kwargs, report=code_report, params=replace(params, min_shared=max(params.min_shared, CODE_MIN_SHARED)))
    by_code = compute_pair_arrays(files, None, None, None, sets=code_sets, view=_fv.CODE, **kwargs)
    by_code.view[:] = CODE_VIEW
    return merge_best(text, by_code)


def view_values(
    offsets: np.ndarray, values: np.ndarray, row_text: np.ndarray, view: int
) -> tuple[np.ndarray, np.ndarray]:
    """The CSR (offsets, values) restricted to one view (``row_text``: each row is a text file)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    counts = np.diff(offsets)
    sel = _fv.value_views(values, np.repeat(np.asarray(row_text, dtype=bool), counts)) == view
    if sel.all():
        return offsets, values
    per_row = np.bincount(np.repeat(np.arange(counts.size), counts)[sel], minlength=counts.size)
    return np.concatenate(([0], np.cumsum(per_row))).astype(np.int64), np.asarray(values)[sel]


def view_fingerprints(fp: Fingerprints, view: int) -> Fingerprints:
    """``fp`` with only the values of one view (binary files: everything is the text view), its meta
    kept aligned."""
    if not fp.is_text:
        if view == _fv.TEXT:
            return fp
        keep = np.zeros(fp.rolling.size + fp.anchored.size, dtype=bool)
    else:
        keep = np.concatenate((_fv.value_views(fp.rolling, True), _fv.value_views(fp.anchored, True))) == view
    nr = fp.rolling.size
    meta = fp.meta
    if meta is not None:
        meta = FingerprintMeta(meta.d[keep], meta.unit[keep], meta.char[keep], meta.chars[keep])
    return replace(fp, rolling=fp.rolling[keep[:nr]], anchored=fp.anchored[keep[nr:]], meta=meta)


def has_code_view(fp: Fingerprints) -> bool:
    return fp.is_text and bool((_fv.value_views(np.concatenate((fp.rolling, fp.anchored)), True) == _fv.CODE).any())
