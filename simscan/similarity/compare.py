"""Two files side by side: scores and the matching passages in each original text.

Passages: both files are decoded like the fingerprinter does (``decode_file``) and
normalised with offsets (``normalize_with_offsets``: every normalised unit knows the
character it came from).  The 64-bit value of *every* window of ``window`` units (the
fingerprint window, 50) is computed for both texts with the fingerprinter's own window
hash (``rolling.window_values``), not just the sampled ones, so every shared passage of at
least one window is found, wherever it lies.  Matching windows (i in a, j in b) are grouped
by diagonal j - i; consecutive windows on one diagonal form a run, which covers units
[i0, i1 + window) of a and the same length in b; runs of one diagonal that overlap are joined,
and a run takes in the equal units on either side (so it is maximal even where a repeated
window lost its partner to the cap below).  Runs are accepted longest first
while they add text not yet covered on either side (a passage repeated in one file is shown
once per occurrence), then mapped back to character offsets of the decoded texts.  Since
units are normalised code points, the same passage in a UTF-16 and a GBK file matches.
When the pair scores better on the code view (two program sources, ``views``), the passages
are those of the code form (identifiers as one placeholder, ``fingerprint.code``), which keeps
every character offset: a renamed copy is highlighted where only its names differ.

Caps (so that large files do not explode): at most ``MAX_BYTES`` bytes of each file are
decoded, at most ``MAX_UNITS`` normalised units are searched, each window value matches at
most ``MAX_OCCURRENCES`` positions of the other file (repetitive text), and at most
``MAX_RUNS`` runs are examined.  ``Comparison.truncated`` says when a size cap was hit,
``Comparison.capped`` when one of the last two was.
Binary files: scores only, no ranges (byte ranges of binary data mean little to a reader).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from simscan.fingerprint import DEFAULT_PARAMS, decode_bytes, fingerprint_bytes, fingerprint_file, open_unseen
from simscan.fingerprint.code import FILLER, code_form, code_units, glue_mask
from simscan.fingerprint.rolling import window_values
from simscan.fingerprint.simhash import hamming
from simscan.fingerprint.text import normalize, normalize_with_offsets
from simscan.fingerprint.views import CODE, TEXT
from simscan.model import Fingerprints
from simscan.similarity.core import value_union
from simscan.similarity.evidence import PairEvidence, StoredSets, pair_evidence, window_of_level
from simscan.similarity.types import SCORE_DECIMALS, Comparison, Pair
from simscan.similarity.views import CODE_MIN_SHARED, has_code_view

MAX_BYTES = 16 << 20
MAX_UNITS = 2_000_000
MAX_OCCURRENCES = 4
MAX_RUNS = 50_000
_CHUNK = 1 << 16

#: Which stored fingerprints the scores are computed on (see ARCHITECTURE.md).
SCORE_KIND = "all"


def fingerprint_set(fp: Fingerprints, kind: str = SCORE_KIND) -> np.ndarray:
    """The sorted distinct fingerprint values of ``kind`` ("rolling", "anchored" or "all")."""
    if kind == "rolling":
        return fp.rolling
    if kind == "anchored":
        return fp.anchored
    return np.union1d(fp.rolling, fp.anchored)


def fingerprint_level(fp: Fingerprints) -> int:
    """Level of a fingerprinted file's nested anchored fingerprints (0 for binary)."""
    return DEFAULT_PARAMS.text_level(fp.units) if fp.is_text else 0


#: Smallest larger containment (percent) of a "contained" pair: at least half of one file must lie
#: inside the other.  See :func:`classify`.
CONTAINED_MIN = 50.0
#: The larger containment of a "contained" pair is at least this multiple of the smaller one.
CONTAINED_RATIO = 1.5


def classify(
    resemblance: float, ca: float, cb: float, contained_ratio: float = CONTAINED_RATIO,
    contained_min: float = CONTAINED_MIN,
) -> str:
    """Kind of a pair that is not a copy: "contained" or "near" (percentages 0..100).

    "contained": one file lies largely inside the other (an excerpt, or a file quoted in a
    longer one): its containment ``max(ca, cb)`` is at least ``contained_min`` (50: more than
    half of it is found in the other) AND at least ``contained_ratio`` (1.5) times the other
    containment (the two files share a part that is large for one and clearly smaller for the
    other, which happens when their sizes differ).  Everything else is "near": edited
    versions, and symmetric partial overlaps (two same-length essays sharing 40% of their
    text have ca = cb = 40).  ``resemblance`` is not used: with ca = cb = c, max / J = 2 - c/100
    is >= 1.5 for any c <= 50, so the former rule "max >= 1.5 J" called almost every partial
    overlap contained (3,689 of 4,560 reported pairs of the evaluation corpus).
    """
    hi, lo = max(ca, cb), min(ca, cb)
    return "contained" if hi >= contained_min and hi >= contained_ratio * lo else "near"


def pair_from_fingerprints(
    fa: Fingerprints, fb: Fingerprints, path_a: str, path_b: str, a_id: int = -1, b_id: int = -1,
    code_view: bool = True,
) -> Pair:
    """Scores of two fingerprinted files by exact set arithmetic (no common-value list), on
    the view with the higher best score (``views``: the code view when both have one, unless
    ``code_view`` is off)."""
    return _pair_by_view(fa, fb, path_a, path_b, a_id, b_id, code_view)[0]


_NONE = np.empty(0, np.uint64)


def pair_window(fa: Fingerprints, fb: Fingerprints) -> int:
    """The winnowing window two files are compared at (``evidence``): the coarser of their levels'."""
    return int(window_of_level(max(fingerprint_level(fa), fingerprint_level(fb))))


def _pair_by_view(
    fa: Fingerprints, fb: Fingerprints, path_a: str, path_b: str, a_id: int = -1, b_id: int = -1,
    code_view: bool = True, ignored: np.ndarray = _NONE, frequent: np.ndarray = _NONE,
) -> tuple[Pair, int]:
    """(pair, the view it was scored on): the view with the higher unrounded best score, as the
    pair search chooses (``views.merge_best``).  ``ignored``: sorted values that count nowhere;
    ``frequent``: sorted values that make no passage (``evidence``)."""
    sets = StoredSets.of([fa, fb])
    w = np.array([pair_window(fa, fb)], np.uint8)
    views = [TEXT]
    if code_view and has_code_view(fa) and has_code_view(fb):
        views.append(CODE)
    best: tuple[Pair, int] | None = None
    best_score = -1.0
    for view in views:
        ev = pair_evidence(sets, [0], [1], w, view, ignored, frequent)
        if view == CODE and int(ev.inter[0]) < CODE_MIN_SHARED:
            continue
        pair, score = _pair_of(fa, fb, path_a, path_b, a_id, b_id, ev)
        if score > best_score:  # ties: the text view
            best, best_score = (replace(pair, view="code") if view == CODE else pair, view), score
    assert best is not None
    return best


def _pair_of(
    fa: Fingerprints, fb: Fingerprints, path_a: str, path_b: str, a_id: int, b_id: int, ev: PairEvidence,
) -> tuple[Pair, float]:
    """(the pair's scores from one view's evidence, rounded as ``Pair`` carries them; its unrounded best)."""
    inter, na, nb = int(ev.inter[0]), int(ev.na[0]), int(ev.nb[0])
    union = na + nb - inter
    r = 100.0 * inter / union if union else 0.0
    ca = 100.0 * inter / na if na else 0.0
    cb = 100.0 * inter / nb if nb else 0.0
    longest, shared = int(ev.longest[0]), int(ev.shared[0])
    exact = fa.size == fb.size and fa.checksum == fb.checksum
    if exact or (fa.is_text == fb.is_text and fa.content_hash == fb.content_hash):
        kind = "exact" if exact else "content"
        r = ca = cb = 100.0
        longest = shared = None  # type: ignore[assignment]
    else:
        kind = classify(r, ca, cb)
    carried = (round(x, SCORE_DECIMALS) for x in (r, ca, cb))
    pair = Pair(a_id, b_id, path_a, path_b, *carried, hamming(fa.simhash, fb.simhash), exact, kind,
                longest_passage=longest, shared_chars=shared)
    return pair, max(r, ca, cb)


def _all_window_values(units: np.ndarray, window: int) -> np.ndarray:
    n = units.size - window + 1
    if n <= 0:
        return np.empty(0, np.uint64)
    out = np.empty(n, np.uint64)
    for s in range(0, n, _CHUNK):
        e = min(n, s + _CHUNK)
        out[s:e] = window_values(units, np.arange(s, e, dtype=np.int64), window)
    return out


def matching_runs(
    units_a: np.ndarray, units_b: np.ndarray, window: int, exclude: np.ndarray = _NONE
) -> tuple[list[tuple[int, int]], list[tuple[int, int]], bool]:
    """Paired unit ranges [start, end) of maximal shared runs of at least ``window`` units.
    ``exclude``: sorted window values that never match (the windows of texts to ignore).

    Returns (ranges_a, ranges_b, capped), sorted by start in a.
    """
    ha = _all_window_values(units_a, window)
    hb = _all_window_values(units_b, window)
    capped = False
    if ha.size == 0 or hb.size == 0:
        return [], [], capped
    # Sort both sides: searchsorted with sorted needles walks memory in order (several times
    # faster than random needles on millions of windows).
    ob = np.argsort(hb, kind="stable")
    hbs = hb[ob]
    oa = np.argsort(ha, kind="stable")
    has = ha[oa]
    lo = np.searchsorted(hbs, has, side="left")
    hi = np.searchsorted(hbs, has, side="right")
    cnt = hi - lo
    ignored_a = _in_sorted(ha, exclude)  # a's windows that are windows of a text to ignore
    if ignored_a.any():
        cnt[ignored_a[oa]] = 0  # they match nothing
    # A window with more partners than the cap keeps the first few only, maybe not the one on its run's
    # diagonal: the runs are then extended over equal units below.
    repeated = int(cnt.max(initial=0)) > MAX_OCCURRENCES
    if repeated:
        capped = True
        cnt = np.minimum(cnt, MAX_OCCURRENCES)
    i = np.repeat(oa.astype(np.int64), cnt)
    if i.size == 0:
        return [], [], capped
    offs = np.arange(i.size, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    j = ob[np.repeat(lo, cnt) + offs].astype(np.int64)
    d = j - i
    o = np.lexsort((i, d))
    i, d = i[o], d[o]
    brk = np.ones(i.size, dtype=bool)
    brk[1:] = (d[1:] != d[:-1]) | (i[1:] != i[:-1] + 1)
    starts = np.flatnonzero(brk)
    ends = np.concatenate((starts[1:], [i.size])) - 1
    i0, i1, dd = i[starts], i[ends], d[starts]
    # Runs on one diagonal whose units overlap or touch are one passage: every unit under a matching
    # window equals its partner, so their union is a shared string too.  (A window repeated more than
    # MAX_OCCURRENCES times in b may have lost its true partner, which cut a run in pieces.)
    join = np.ones(i0.size, dtype=bool)
    join[1:] = (dd[1:] != dd[:-1]) | (i0[1:] > i1[:-1] + window)
    first = np.flatnonzero(join)
    i0, i1, dd = i0[first], i1[np.concatenate((first[1:], [i0.size])) - 1], dd[first]
    length = i1 - i0
    order = np.argsort(-length, kind="stable")
    if order.size > MAX_RUNS:
        capped = True
        order = order[:MAX_RUNS]
    cov_a = np.zeros(units_a.size, dtype=bool)
    cov_b = np.zeros(units_b.size, dtype=bool)
    ignoring = bool(ignored_a.any())
    if repeated or ignoring:
        # Units under a window of a text to ignore: no run is extended into them, and no passage shows them.
        stop_a = _under(ignored_a, units_a.size, window)
        stop_b = _under(_in_sorted(hb, exclude), units_b.size, window)
    acc: list[tuple[int, int, int, int]] = []
    for k in order.tolist():
        a0, a1 = int(i0[k]), int(i1[k]) + window
        b0, b1 = a0 + int(dd[k]), a1 + int(dd[k])
        if cov_a[a0:a1].all() and cov_b[b0:b1].all():
            continue
        if repeated:
            # Maximal: the equal units on either side join the run (their windows may have lost this
            # partner to the cap), up to text already matched on both sides (repetitive text would
            # otherwise stretch every run over all of it) or a text to ignore.
            back = _common_prefix(units_a[:a0][::-1], units_b[:b0][::-1], stop_a[:a0][::-1], stop_b[:b0][::-1],
                                  cov_a[:a0][::-1], cov_b[:b0][::-1])
            ahead = _common_prefix(units_a[a1:], units_b[b1:], stop_a[a1:], stop_b[b1:], cov_a[a1:], cov_b[b1:])
            a0, b0, a1, b1 = a0 - back, b0 - back, a1 + ahead, b1 + ahead
        cov_a[a0:a1] = True
        cov_b[b0:b1] = True
        acc.append((a0, a1, b0, b1))
    if ignoring:
        acc = _without_ignored(acc, stop_a, stop_b, window)
    acc.sort()
    return [(a0, a1) for a0, a1, _, _ in acc], [(b0, b1) for _, _, b0, b1 in acc], capped


def _without_ignored(
    runs: list[tuple[int, int, int, int]], ign_a: np.ndarray, ign_b: np.ndarray, window: int
) -> list[tuple[int, int, int, int]]:
    """The parts of ``runs`` (a0, a1, b0, b1; diagonal: a1 - a0 == b1 - b0) outside the units of
    texts to ignore (``ign_a`` / ``ign_b``: units under one of their windows), those of at least a
    window.  A window that straddles the end of an ignored text (its last 49 units and the
    separator after it, shared by every file that repeats it) is not a passage of its own."""
    out = []
    for a0, a1, b0, b1 in runs:
        own = ~(ign_a[a0:a1] | ign_b[b0:b1])
        if own.all():
            out.append((a0, a1, b0, b1))
            continue
        edges = np.diff(np.concatenate(([0], own.view(np.int8), [0])))
        for s, e in zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()):
            if e - s >= window:
                out.append((a0 + s, a0 + e, b0 + s, b0 + e))
    return out


def _in_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Mask of the ``values`` found in ``sorted_set``."""
    if sorted_set.size == 0 or values.size == 0:
        return np.zeros(values.size, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, values), sorted_set.size - 1)
    return sorted_set[pos] == values


def _under(windows: np.ndarray, n: int, window: int) -> np.ndarray:
    """Mask of the n units covered by one of the windows (a mask by window start)."""
    hit = np.flatnonzero(windows)
    edges = np.bincount(hit, minlength=n + 1)[: n + 1] - np.bincount(hit + window, minlength=n + 1)[: n + 1]
    return np.cumsum(edges[:n]) > 0


def _common_prefix(
    x: np.ndarray, y: np.ndarray, stop_x: np.ndarray, stop_y: np.ndarray, done_x: np.ndarray, done_y: np.ndarray
) -> int:
    """Length of the common prefix of two unit arrays that holds no stopped unit and no unit done on
    both sides, read in growing slices (a run usually ends at a real difference: one slice)."""
    n = min(x.size, y.size)
    done, step = 0, 64
    while done < n:
        end = min(n, done + step)
        sl = slice(done, end)
        diff = np.flatnonzero((x[sl] != y[sl]) | stop_x[sl] | stop_y[sl] | (done_x[sl] & done_y[sl]))
        if diff.size:
            return done + int(diff[0])
        done, step = end, step * 4
    return n


def _to_chars(ranges: list[tuple[int, int]], src: np.ndarray) -> list[tuple[int, int]]:
    return [(int(src[s]), int(src[e - 1]) + 1) for s, e in ranges]


def _read(path: str) -> tuple[Fingerprints, bytes, str | None]:
    """A file's fingerprints, its first ``MAX_BYTES`` bytes (reading it once when it fits) and, for a
    document, where its text came from: its bytes are then the text's, as UTF-8
    (``extract.document.fingerprint_path``, so that compare scores a document as the scan does)."""
    from simscan.extract.document import read_text

    doc = read_text(path, MAX_BYTES)
    if doc is not None:
        return doc
    with open_unseen(path) as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) <= MAX_BYTES:
        return fingerprint_bytes(data), data, None
    return fingerprint_file(path), data[:MAX_BYTES], None


#: Fingerprint parameters that keep every window of a text (winnowing window 1 at every level): the
#: values of a text to ignore, so that every window of it, wherever another file's winnowing kept one,
#: is known.
EVERY_WINDOW = replace(DEFAULT_PARAMS, winnow=(1,) * len(DEFAULT_PARAMS.winnow))


def template_values(path: str | os.PathLike[str]) -> np.ndarray:
    """Every window value (sorted, distinct; both views of program source) of a text to ignore: its
    first ``MAX_BYTES`` bytes, a document by its text.  A stored set samples a text by winnowing
    (which windows it keeps depends on the text around them), so a text to ignore is known by all of
    its windows, not by its own sample.  Raises OSError when the file cannot be read, or is a document
    whose text cannot be read (a scanned PDF, a password-protected file): its bytes are no text to ignore."""
    from simscan.extract.document import BY_ITS_BYTES

    _fp, data, src = _read(os.fspath(path))
    if src is not None and src.endswith(BY_ITS_BYTES):  # (``read_text``: the reader's note says why)
        raise OSError(errno.EINVAL, f"{src.removesuffix('; ' + BY_ITS_BYTES)}: it has no text to ignore", os.fspath(path))
    fp = fingerprint_bytes(data, EVERY_WINDOW)
    return fingerprint_set(fp)


def compare(
    path_a: str | os.PathLike[str], path_b: str | os.PathLike[str], code_view: bool = True,
    ignore: Sequence[str | os.PathLike[str]] = (),
) -> Comparison:
    """Scores of two files and their matching passages (see the module docstring).

    The files need not be indexed (ids are -1).  ``code_view``: as ``SimilarityParams.code_view``
    (off: program sources are scored and matched on their text only).  ``ignore``: files whose
    text counts nowhere (``SimilarityParams.ignore_values``): their fingerprints leave both sets
    and no passage of theirs is a match.  A document (``simscan.extract``) is compared by its text,
    read in a worker process, as the scan reads it.  Raises OSError when a file cannot be read.
    """
    pa, pb = os.fspath(path_a), os.fspath(path_b)
    (fa, raw_a, src_a), (fb, raw_b, src_b) = _read(pa), _read(pb)
    templates = [_read(os.fspath(t))[:2] for t in ignore]
    ignored = value_union([template_values(t) for t in ignore])
    pair, view = _pair_by_view(fa, fb, os.path.abspath(pa), os.path.abspath(pb), code_view=code_view,
                               ignored=ignored)
    if not (fa.is_text and fb.is_text):
        return Comparison(pair, None, None, [], [], fa.encoding, fb.encoding, source_a=src_a, source_b=src_b)
    da, db = decode_bytes(raw_a), decode_bytes(raw_b)
    text_a, text_b = da.text or "", db.text or ""
    truncated = fa.size > MAX_BYTES or fb.size > MAX_BYTES
    # Passages of the view the pair was scored on; the code form keeps every offset of the text.
    form = code_form if view == CODE else (lambda t: t)
    fa_text, fb_text = form(text_a), form(text_b)
    ua, sa = normalize_with_offsets(fa_text)
    ub, sb = normalize_with_offsets(fb_text)
    if view == CODE:
        # The code view's own units (``code.code_units``: no space between two names).
        ka, kb = glue_mask(ua), glue_mask(ub)
        ua, sa, ub, sb = ua[ka], sa[ka], ub[kb], sb[kb]
    if ua.size > MAX_UNITS or ub.size > MAX_UNITS:
        truncated = True
        ua, sa, ub, sb = ua[:MAX_UNITS], sa[:MAX_UNITS], ub[:MAX_UNITS], sb[:MAX_UNITS]
    exclude = _NONE
    if templates:  # every window of the texts to ignore, in the view's units
        windows = []
        for _, raw in templates:
            text = decode_bytes(raw).text
            if text:
                units = code_units(text) if view == CODE else normalize(text)
                windows.append(_all_window_values(units, DEFAULT_PARAMS.window))
        exclude = np.unique(np.concatenate(windows)) if windows else _NONE
    ra, rb, capped = matching_runs(ua, ub, DEFAULT_PARAMS.window, exclude)
    ca, cb = _to_chars(ra, sa), _to_chars(rb, sb)
    if view == CODE:
        ca, cb = _through_names(ca, fa_text), _through_names(cb, fb_text)
    return Comparison(pair, text_a, text_b, ca, cb, fa.encoding, fb.encoding, truncated, capped, src_a, src_b)


def _through_names(ranges: list[tuple[int, int]], form_text: str) -> list[tuple[int, int]]:
    """Character ranges of the code form extended over the fillers that follow their last
    character: an identifier is one placeholder unit standing on its first character, so a match
    ending on it would otherwise highlight one letter of the name."""
    out = []
    for s, e in ranges:
        while e < len(form_text) and form_text[e] == FILLER:
            e += 1
        out.append((s, e))
    return out


__all__ = [
    "CONTAINED_MIN", "CONTAINED_RATIO", "classify", "compare", "fingerprint_level", "fingerprint_set", "matching_runs",
    "pair_from_fingerprints",
]
