"""Prototypes for issue 16: what is fingerprinted, and how a pair's shared passages are found.

Slow, plain numpy on purpose: these are the reference the native implementation will be
measured against (``benchmarks/passages.py``, ``benchmarks/proto_evidence.py``,
``tests/test_proto_winnow.py``).  Nothing here is product code.

Every scheme works on the product's own 50-unit windows (normalised code points, ``text``;
the code form of program source, ``code``) and the product's own 64-bit window value
``x(i)`` (``rolling.window_values``) and 32-bit mixed selection hash ``g(i)`` (``H * C mod 2^32``).
Only the *selection* differs:

* ``today``: ALGORITHM_VERSION 11 exactly (checked against ``fingerprint_bytes`` by
  :func:`check_today`): rolling windows with ``g`` in the top 1/32 of the range, Manber's greedy
  no-overlap rule; nested anchored windows (after every 8-unit anchor of mixed hash below 2^31)
  kept when ``clz32(g) >= t(u)``, the file's level.
* ``winnow``: Schleimer, Wilkerson and Aiken (2003), robust winnowing on ``g``: window ``i`` is
  kept when it is the rightmost minimum of ``g`` over some ``w`` consecutive windows of the file.
  ``g`` is the selection hash the product already computes for every window (its top bits are
  well mixed, and ties between different windows -- about w / 2^32 a window -- are broken by
  position, which keeps the selection a function of the w windows' content); the 64-bit value
  ``x`` is computed for the kept windows only, as today.
  Equivalently its *dominance span* ``D(i)`` -- the length of the longest stretch of windows
  around ``i`` in which ``g(i)`` is the rightmost minimum (``next_le(i) - prev_lt(i) - 1``) -- is
  at least ``w``.  So the windows kept at ``w'`` are a subset of those kept at ``w < w'``
  (nested), and a file keeps its windows with ``D >= w(u)`` for a window ``w(u)`` that grows with
  its length (a *schedule*, indexed by the product's level ``t(u)``).  A pair is compared at
  ``w_pair = max(w(a), w(b))``: a window counts in a file's set when its ``D >= w_pair`` in that
  file, and in the intersection when it does in both.
  Guarantee: a string of ``w_pair + W - 1`` units shared by two files holds ``w_pair`` whole
  windows in both; the rightmost minimum among them is kept by both, with the same value.
* ``winnow+anchors``: winnowing at a fixed ``w`` in place of the rolling rule, today's nested
  anchors kept beside it.

Stored per fingerprint (what the passage evidence needs): its value, the unit offset of its
first occurrence, the character offsets (in the decoded text) of the first and last character
of that window, and its level key (``lvl``: anchored level, or ``D``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from simscan.fingerprint import DEFAULT_PARAMS
from simscan.fingerprint import code as C
from simscan.fingerprint import views as V
from simscan.fingerprint.rolling import (
    _C32,
    _P32,
    nested_anchored_value,
    pick_indices,
    window_values,
)
from simscan.fingerprint.text import normalize_with_offsets

W = DEFAULT_PARAMS.window
LOW63 = np.uint64((1 << 63) - 1)
BIT62 = np.uint64(1 << 62)
ROLL_THR = (1 << 32) - (1 << 32) // DEFAULT_PARAMS.text_density
ANCHOR_THR = (1 << 32) // DEFAULT_PARAMS.text_anchor_density
ANCHOR_K = DEFAULT_PARAMS.text_anchor_length
ALWAYS = 1 << 30  # level key of a fingerprint that counts at every level
D_CAP = 1 << 12  # dominance spans are computed up to this (any schedule's window is below it)


# ----------------------------------------------------------------------------------------------
# Unit streams


@dataclass
class Stream:
    """One view of one text: every window's value ``x``, selection hash ``g``, whether an
    anchor precedes it, and its character range [c0, c1) in the decoded text."""

    units: int
    x: np.ndarray  # uint64, product window value (kind/view bits not set)
    g: np.ndarray  # uint32
    anchored: np.ndarray  # bool
    c0: np.ndarray  # int64
    c1: np.ndarray  # int64
    view: int = V.TEXT


def _mixed_hash(u: np.ndarray, k: int) -> np.ndarray:
    """(H_k * C) mod 2^32 of every k-unit string of ``u`` (the product's selection hash)."""
    n = u.size - k + 1
    if n <= 0:
        return np.empty(0, np.uint32)
    h = np.zeros(n, np.uint32)
    with np.errstate(over="ignore"):
        for j in range(k):
            h = h * np.uint32(_P32) + u[j : j + n].astype(np.uint32)
        return h * np.uint32(_C32)


def make_stream(units: np.ndarray, src: np.ndarray, view: int = V.TEXT) -> Stream:
    units = np.asarray(units, dtype=np.uint32)
    src = np.asarray(src, dtype=np.int64)
    n = units.size - W + 1
    if n <= 0:
        e = np.empty(0, np.int64)
        return Stream(int(units.size), np.empty(0, np.uint64), np.empty(0, np.uint32), np.empty(0, bool), e, e, view)
    x = every_window_values(units)
    g = _mixed_hash(units, W)
    hk = _mixed_hash(units, ANCHOR_K)
    anch = np.zeros(n, bool)
    # window i follows the anchor at i - k
    anch[ANCHOR_K:] = hk[: n - ANCHOR_K] < np.uint32(ANCHOR_THR)
    return Stream(int(units.size), x, g, anch, src[:n].copy(), src[W - 1 : W - 1 + n] + 1, view)


def every_window_values(units: np.ndarray) -> np.ndarray:
    """The product value ``x`` of every window of ``units`` (uint64, in order)."""
    units = np.asarray(units, dtype=np.uint32)
    n = units.size - W + 1
    if n <= 0:
        return np.empty(0, np.uint64)
    x = np.empty(n, np.uint64)
    for s in range(0, n, 1 << 16):
        e = min(n, s + (1 << 16))
        x[s:e] = window_values(units, np.arange(s, e, dtype=np.int64), W)
    return x


def text_stream(text: str) -> Stream:
    u, src = normalize_with_offsets(text)
    return make_stream(u, src, V.TEXT)


def code_stream(text: str) -> Stream:
    """The code view's units (``code.code_units``) with their character offsets, as ``compare``
    derives them (the code form keeps every offset)."""
    form = C.code_form(text)
    u, src = normalize_with_offsets(form)
    keep = C.glue_mask(u)
    return make_stream(u[keep], src[keep], V.CODE)


# ----------------------------------------------------------------------------------------------
# Selection


def clz32(g: np.ndarray) -> np.ndarray:
    return 32 - np.frexp(np.asarray(g, dtype=np.float64))[1].astype(np.int64)


def rolling_value(x: np.ndarray, view: int) -> np.ndarray:
    v = (x & LOW63) & ~BIT62
    return v | BIT62 if view else v


def anchored_value(x: np.ndarray, g: np.ndarray, view: int) -> np.ndarray:
    return V.tag(nested_anchored_value(x, g.astype(np.uint32)), view)


def today_positions(st: Stream, level: int) -> tuple[np.ndarray, np.ndarray]:
    """(rolling window starts, anchored window starts) that ALGORITHM_VERSION 11 keeps."""
    cands = np.flatnonzero(st.g >= np.uint32(ROLL_THR))
    roll = cands[pick_indices(cands, 0, W)] if cands.size else cands
    anch = np.flatnonzero(st.anchored & (clz32(st.g) >= level))
    return roll, anch


def order_key(st: Stream) -> np.ndarray:
    """What winnowing minimises: the selection hash ``g`` of every window."""
    return st.g.astype(np.uint64)


def dominance(x: np.ndarray, cap: int = D_CAP, whole: bool = True) -> np.ndarray:
    """D(i): length of the longest stretch of windows containing i in which x(i) is the rightmost
    minimum (capped at ``cap``).  Window i is kept by robust winnowing with window w iff D(i) >= w.
    Sparse table of range minima, binary descent from every i at once.  ``whole``: ``x`` is a whole
    file (its rightmost minimum is then kept at every w); False for a piece of a stream."""
    n = x.size
    if n == 0:
        return np.empty(0, np.int64)
    levels = max(1, math.ceil(math.log2(cap)))
    st = [x]
    k = 1
    for _ in range(levels):
        prev = st[-1]
        if prev.size <= k:
            break
        st.append(np.minimum(prev[:-k], prev[k:]))
        k *= 2
    idx = np.arange(n)
    left = np.zeros(n, np.int64)  # windows before i with x >= x(i)
    right = np.zeros(n, np.int64)  # windows after i with x > x(i)
    for lv in range(len(st) - 1, -1, -1):
        size = 1 << lv
        t = st[lv]
        # left block [i - left - size, i - left)
        j = idx - left - size
        ok = j >= 0
        jj = np.where(ok, j, 0)
        ok &= t[np.minimum(jj, t.size - 1)] >= x
        ok &= jj <= t.size - 1
        left = np.where(ok, left + size, left)
        # right block [i + 1 + right, i + 1 + right + size)
        j = idx + 1 + right
        ok = j + size <= n
        jj = np.where(ok, j, 0)
        ok &= t[np.minimum(jj, t.size - 1)] > x
        right = np.where(ok, right + size, right)
    d = np.minimum(left + right + 1, cap)
    if whole:
        # The file's rightmost minimum spans every window: kept at every w (a file with fewer than w
        # windows keeps that one, as winnowing a short file does).
        d[d >= n] = cap
    return d


def winnow_stream(chunks, w: int) -> np.ndarray:
    """Window starts kept by robust winnowing with window ``w`` over a text fed as unit chunks of
    any sizes, as a streaming implementation must do it: between chunks only the last W - 1 units
    and the values of the last windows not yet decided plus w - 1 before them are kept.  A window is
    decided once w - 1 windows follow it (or the text ends).  Equal to
    ``np.flatnonzero(dominance(every_window_values(all units)) >= w)`` (tested)."""
    carry = np.empty(0, np.uint32)  # the last W - 1 units
    xb = np.empty(0, np.uint64)  # window values from window xs on
    xs = 0  # index of xb[0]
    done = 0  # windows below this are decided
    out: list[np.ndarray] = []
    for chunk in chunks:
        u = np.concatenate((carry, np.asarray(chunk, np.uint32)))
        if u.size >= W:
            xb = np.concatenate((xb, every_window_values(u)))
            carry = u[u.size - (W - 1):]
        else:
            carry = u
            continue
        last = xs + xb.size - 1  # last window known
        ready = last - (w - 1)  # windows up to here have their w - 1 followers
        if ready >= done:
            d = dominance(xb, cap=w, whole=False)
            sel = np.flatnonzero(d[done - xs : ready - xs + 1] >= w) + done
            out.append(sel)
            done = ready + 1
            keep_from = max(xs, done - (w - 1))
            xb = xb[keep_from - xs :]
            xs = keep_from
    if xb.size:
        total = xs + xb.size
        if total < w or xs == 0:
            # a text with fewer than w windows (or never trimmed): decided as a whole file
            d = dominance(xb, cap=w, whole=(xs == 0))
        else:
            d = dominance(xb, cap=w, whole=False)
        out.append(np.flatnonzero(d[done - xs :] >= w) + done)
    return np.concatenate(out) if out else np.empty(0, np.int64)


def dominance_slow(x: np.ndarray) -> np.ndarray:
    """Plain reference of :func:`dominance` (no cap)."""
    n = x.size
    out = np.zeros(n, np.int64)
    xs = x.tolist()
    for i in range(n):
        lo = i
        while lo > 0 and xs[lo - 1] >= xs[i]:
            lo -= 1
        hi = i
        while hi + 1 < n and xs[hi + 1] > xs[i]:
            hi += 1
        out[i] = hi - lo + 1
    out[out >= n] = D_CAP
    return out


def winnow_slow(x: np.ndarray, w: int) -> np.ndarray:
    """Robust winnowing by the definition: the rightmost minimum of every w consecutive values
    (a file with fewer than w windows: its rightmost minimum)."""
    n = x.size
    if n == 0:
        return np.empty(0, np.int64)
    xs = x.tolist()
    out = set()
    for s in range(max(1, n - w + 1)):
        blk = xs[s : s + w]
        m = min(blk)
        out.add(s + max(j for j, v in enumerate(blk) if v == m))
    return np.array(sorted(out), np.int64)


# ----------------------------------------------------------------------------------------------
# Schemes: per file and view, the stored fingerprints


@dataclass
class FP:
    """One view's stored fingerprints: values sorted and distinct, with the first occurrence's
    unit offset, character range of its window, and level key."""

    val: np.ndarray
    pos: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    lvl: np.ndarray
    units: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def size(self) -> int:
        return int(self.val.size)


def _fp(st: Stream, pos: np.ndarray, val: np.ndarray, lvl: np.ndarray) -> FP:
    """Distinct values, first occurrence kept (positions ascending first)."""
    order = np.lexsort((pos, val))
    v, p, lv = val[order], pos[order], lvl[order]
    first = np.ones(v.size, bool)
    first[1:] = v[1:] != v[:-1]
    v, p, lv = v[first], p[first], lv[first]
    return FP(v, p, st.c0[p], st.c1[p], lv, st.units)


@dataclass(frozen=True)
class Scheme:
    """How windows are kept.  kind: "today" | "winnow" | "winnow+anchors".
    schedule: for "winnow", the window w per product level t(u) (levels 0..max_level);
    for "winnow+anchors", a 1-tuple (the fixed w of the winnowed part)."""

    name: str
    kind: str
    schedule: tuple[int, ...] = ()

    def file_level(self, units: int) -> int:
        t = DEFAULT_PARAMS.text_level(units)
        if self.kind == "winnow":
            return self.schedule[min(t, len(self.schedule) - 1)]
        return t

    def select(self, st: Stream, d: np.ndarray | None = None) -> FP:
        """The stored fingerprints of one stream; ``d``: its dominance spans, when already at hand
        (they do not depend on the scheme's windows)."""
        level = DEFAULT_PARAMS.text_level(st.units)
        if self.kind == "today":
            roll, anch = today_positions(st, level)
            pos = np.concatenate((roll, anch))
            val = np.concatenate((rolling_value(st.x[roll], st.view), anchored_value(st.x[anch], st.g[anch], st.view)))
            lvl = np.concatenate((np.full(roll.size, ALWAYS), clz32(st.g[anch])))
            return _fp(st, pos, val, lvl)
        if d is None:
            d = dominance(order_key(st))
        if self.kind == "winnow":
            w = self.file_level(st.units)
            keep = np.flatnonzero(d >= w)
            return _fp(st, keep, rolling_value(st.x[keep], st.view), d[keep])
        if self.kind == "winnow+anchors":
            keep = np.flatnonzero(d >= self.schedule[0])
            _, anch = today_positions(st, level)
            pos = np.concatenate((keep, anch))
            val = np.concatenate((rolling_value(st.x[keep], st.view), anchored_value(st.x[anch], st.g[anch], st.view)))
            lvl = np.concatenate((np.full(keep.size, ALWAYS), clz32(st.g[anch])))
            return _fp(st, pos, val, lvl)
        raise ValueError(self.kind)

    def pair_level(self, ua: int, ub: int) -> int:
        return max(self.file_level(ua), self.file_level(ub))


TODAY = Scheme("today (v11: rolling 1/32 no-overlap + nested anchors)", "today")


def code_only(code: FP, text: FP) -> FP:
    """The code view less the windows whose text twin the text view holds (``views.code_only``):
    a code window without names equals the text window."""
    twin = V.tag(code.val, V.TEXT)
    keep = ~np.isin(twin, text.val)
    return FP(code.val[keep], code.pos[keep], code.c0[keep], code.c1[keep], code.lvl[keep], code.units)


# ----------------------------------------------------------------------------------------------
# Pair evidence


@dataclass
class Evidence:
    """Scores and passages of one pair on one view (percent and characters)."""

    inter: int = 0
    na: int = 0
    nb: int = 0
    longest: int = 0  # characters, min of the two sides, of the longest passage
    shared: int = 0  # characters of a (and b: the smaller) covered by passages
    passages: list = field(default_factory=list)  # (a0, a1, b0, b1) character ranges
    matched: tuple = ()  # (indices into a, indices into b) of the shared counted fingerprints

    @property
    def best(self) -> float:
        if not self.inter:
            return 0.0
        u = self.na + self.nb - self.inter
        return 100.0 * max(self.inter / u, self.inter / self.na, self.inter / self.nb)


def counted(fp: FP, common: np.ndarray, level: int) -> np.ndarray:
    """Mask of the fingerprints that count at ``level`` and are not common (nor, when the file
    carries one, in its ``extra["common"]`` mask: common *text*, :func:`common_text`)."""
    m = fp.lvl >= level
    if common.size:
        m &= ~np.isin(fp.val, common, assume_unique=False)
    extra = fp.extra.get("common")
    if extra is not None:
        m &= ~extra
    return m


def common_text(fp: FP, common: np.ndarray, span: int, coarse: int) -> np.ndarray:
    """Mask of the fingerprints of a file that lie in *common text*: the common ones, and those
    between two common *coarse* fingerprints (level key >= ``coarse``) at most ``span`` units apart
    (in the file's position order), or between the file's start (end) and a common coarse
    fingerprint within ``span`` units of it.

    Why: a file stores its fine-level fingerprints only when it is short, so the document frequency
    of a fine value counts only the short files holding its text -- a licence block held by 104
    files had fine values held by 30 (the short ones), under the cut-off, and a file that is the
    licence alone was 100 % contained in those 30 and 0 % in the others.  Coarse fingerprints of a
    stretch of text (``D >= w_max``) are stored by every file holding it, every ``span`` units at
    most (the winnowing guarantee), so the common *text* is known from them and every fingerprint
    inside it is common, whatever its level.  Only coarse ones spread: a short common phrase (a
    program's ``public static void main``) has fine common values but no coarse one, and must not
    take the rest of a small file with it."""
    if not fp.size:
        return np.zeros(0, bool)
    order = np.argsort(fp.pos, kind="stable")
    pos = fp.pos[order]
    is_c = np.isin(fp.val[order], common)
    out = is_c.copy()
    cp = np.flatnonzero(is_c & (fp.lvl[order] >= coarse))
    if cp.size:
        # between neighbouring common fingerprints close enough
        close = np.flatnonzero(pos[cp[1:]] - pos[cp[:-1]] <= span)
        if close.size:
            mark = np.zeros(pos.size + 1, np.int64)
            np.add.at(mark, cp[close], 1)
            np.add.at(mark, cp[close + 1], -1)
            out |= np.cumsum(mark[:-1]) > 0
        if pos[cp[0]] <= span:
            out[: cp[0]] = True
        if fp.units - W - pos[cp[-1]] <= span:
            out[cp[-1] :] = True
    res = np.empty_like(out)
    res[order] = out
    return res


def evidence(a: FP, b: FP, level: int, common: np.ndarray, gap: int = W, drift: int = 0,
             with_passages: bool = True) -> Evidence:
    """Scores (exact set arithmetic at ``level``) and passages (:func:`passages`) of one view."""
    ma, mb = counted(a, common, level), counted(b, common, level)
    va, vb = a.val[ma], b.val[mb]
    _, ia, ib = np.intersect1d(va, vb, assume_unique=True, return_indices=True)
    ev = Evidence(int(ia.size), int(va.size), int(vb.size))
    ev.matched = (np.flatnonzero(ma)[ia], np.flatnonzero(mb)[ib])
    if ia.size and with_passages:
        ev.passages, ev.longest, ev.shared = passages(a, b, *ev.matched, gap, drift)
    return ev


def passages(a: FP, b: FP, ka: np.ndarray, kb: np.ndarray, gap: int, drift: int = 0) -> tuple[list, int, int]:
    """(passages, longest, shared characters) of matched fingerprints ``a[ka] == b[kb]``: chained
    while on one diagonal (``drift``: the diagonal may move by this many units between neighbours,
    for light edits) and at most ``gap`` units apart in both files (``gap = W``: the windows touch
    or overlap, so every unit between is shared; larger gaps bridge text not seen).  A passage
    covers [c0 of its first window, c1 of its last) in each file; its length is the smaller side's."""
    out, longest, spans_a, spans_b = [], 0, [], []
    if not ka.size:
        return out, 0, 0
    for r in chain(a.pos[ka], b.pos[kb], gap, drift):
        a0, a1 = int(a.c0[ka[r[0]]]), int(a.c1[ka[r[-1]]])
        jb = kb[r]
        b0, b1 = int(b.c0[jb].min()), int(b.c1[jb].max())
        out.append((a0, a1, b0, b1))
        longest = max(longest, min(a1 - a0, b1 - b0))
        spans_a.append((a0, a1))
        spans_b.append((b0, b1))
    return out, longest, min(union_length(spans_a), union_length(spans_b))


def chain(pa: np.ndarray, pb: np.ndarray, gap: int, drift: int) -> list[np.ndarray]:
    """Runs of matches (indices into pa/pb), each sorted by pa: neighbours in a's order whose
    diagonals differ by at most ``drift`` and that lie at most ``gap`` units apart in both files
    (b moving forward)."""
    if drift == 0:
        d = pb - pa
        o = np.lexsort((pa, d))
        dd, aa = d[o], pa[o]
        brk = np.ones(o.size, bool)
        brk[1:] = (dd[1:] != dd[:-1]) | (aa[1:] - aa[:-1] > gap)
        starts = np.flatnonzero(brk)
        return np.split(o, starts[1:])
    o = np.argsort(pa, kind="stable")
    runs: list[list[int]] = []
    open_runs: list[list[int]] = []
    for k in o.tolist():
        placed = None
        for r in open_runs:
            last = r[-1]
            da, db = pa[k] - pa[last], pb[k] - pb[last]
            if 0 < da <= gap and 0 < db <= gap and abs(db - da) <= drift:
                placed = r
                break
        if placed is None:
            placed = [k]
            runs.append(placed)
            open_runs.append(placed)
        else:
            placed.append(k)
        open_runs = [r for r in open_runs if pa[k] - pa[r[-1]] <= gap]
    return [np.array(r) for r in runs]


def union_length(spans: list[tuple[int, int]]) -> int:
    total, end = 0, -1
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


# ----------------------------------------------------------------------------------------------
# Checks


def check_today(text: str, data: bytes) -> bool:
    """The ``today`` scheme's text view equals what the product stores for ``data``."""
    from simscan.fingerprint import fingerprint_bytes

    fp = fingerprint_bytes(data)
    st = text_stream(text)
    mine = TODAY.select(st)
    prod = np.union1d(fp.rolling, fp.anchored)
    prod = prod[V.value_views(prod, True) == V.TEXT]
    return bool(np.array_equal(np.sort(mine.val), prod))
