"""Manber fingerprints: a Rabin-Karp hash of every window, kept by value.

Source: U. Manber, "Finding Similar Files in a Large File System", USENIX Winter 1994
(see DESIGN.md section 1).  simscan works on *units*: bytes for binary files and
normalised Unicode code points for text, so the same text in any encoding yields the
same units and therefore the same fingerprints.

Definitions (a unit ``u`` is an integer; ``W`` the window, 50 by default)
-------------------------------------------------------------------------
* Selection hash of the window starting at ``i``:
  ``H(i) = sum_{j<W} u[i+j] * P^(W-1-j) mod 2^32`` with ``P = 0x01000193`` (the FNV-32 prime).
* The window is a *candidate* when ``(H(i) * C) mod 2^32 >= 2^32 - floor(2^32 / density)``,
  ``C = 0x9E3779B1`` (Knuth's golden-ratio multiplier): the high bits of a product are well
  mixed, and the top range excludes zero, so runs of NUL bytes never become candidates.
  Binary files (bytes, even window) select on the window's even-offset bytes (0, 2, ...,
  W-2) modulo 2^19: ``E(i) = sum_{j<W/2} u[i+2j] * P^(W-2-2j) mod 2^19``, candidate when
  ``((E(i) * C) mod 2^19) * 2^13 >= 2^32 - floor(2^32 / density)``.  Selection only has to
  be a fixed function of the window's content (the value below hashes all W bytes); 19
  bits are plenty to sample 1 window in 256, and this form lets the prefix sum run two
  lanes at once with no further pass.
* Manber's no-overlap rule, greedily from the left: the first candidate is kept; after a
  kept window starting at ``i``, the next kept one is the first candidate at or after
  ``i + W``.  A run of 70 identical units gives one fingerprint, not 21.
* The *value* of a kept window (64 bits, then the top bit cleared for rolling, set for
  anchored; 63 bits identify a fingerprint in the index, where 32 would collide too often
  across millions of files).  ``B``: the window's bytes (text: the low byte of each code
  point) zero-padded to ``K`` whole little-endian 64-bit words ``w_k``,
  ``B = Q^K + sum_k w_k * Q^(K-1-k) mod 2^64`` with ``Q = 0x100000001B3`` (the FNV-64
  prime).  Binary: ``fmix64(B)``.  Text: ``fmix64(B + 2^32 (H(i) * C mod 2^32))``, so the
  full code points count through the selection hash.  ``fmix64`` is the MurmurHash3 64-bit
  finaliser.  Reading whole words at any byte offset costs a handful of gathers per kept
  window, and the selection hash is already at hand.
* The value depends only on the window's units, never on the file, its size or the
  window's position.
* Anchors ("approach 1"): a fixed set of strings; at an occurrence, the W units that follow
  are hashed.  Two rules, chosen by ``ManberParams.anchor_length``:

  - *Nested* (text, ``anchor_length`` = k > 0).  The anchors are the k-unit strings whose
    mixed hash ``(H_k * C) mod 2^32`` (``H_k`` the selection hash over k units) is below
    ``floor(2^32 / anchor_density)`` (k = 8 and 1/2 by default: half of all 8-grams, chosen by
    value, so the set depends on no corpus or language).  At EACH occurrence (no no-overlap
    rule: Manber's approach 1 has none) the window of W units that starts right after the
    anchor is taken.  Its *level* is the number of leading zero bits of its own mixed
    selection hash ``g = H * C mod 2^32`` (0..32; level >= t with probability 2^-t).  A text
    at level ``t`` keeps the anchored windows of level >= t, so a coarser level keeps a
    subset of a finer one, and a value shared by two files passes both files' levels.  The
    level of a text grows with its length in normalised units (``FingerprintParams.
    level_units``; units, not bytes, so every encoding of a text gets the same level).  A
    stream does not know its length in advance: it raises its level as units arrive and
    drops the kept values below the new level, which leaves exactly what the final level
    keeps (nesting).  Value: ``2^63 | perm63(g * 2^31 + (x >> 33))`` with ``x`` the text
    value of the window (above) and ``perm63`` a bijection of 63-bit integers (odd multiplies
    mod 2^63 around a self-inverse xor-shift): still 63 bits of identity, random-looking to
    the simhash and to the index's value sample, and ``g`` - hence the level - is recovered
    from any stored value (``anchored_levels``), which the similarity layer needs to size
    a pair's sets at the coarser of the two levels.  The level is tested before the value
    is computed (``g`` is at hand for every window), so coarse levels cost little.
  - *Sparse* (binary; text with ``anchor_length`` 0).  The anchors are the W-unit strings
    whose mixed selection value lies in the range of width ``floor(2^32 / anchor_density)``
    just below the rolling range, found by the same compare as the rolling candidates with
    no extra pass (the raw path's budget is about one nanosecond per byte); the anchored
    window follows the anchor, with the no-overlap rule among anchored windows; value as a
    rolling one with the top bit set.

How it is computed without a Python loop per unit
-------------------------------------------------
For a block of units, with ``S`` the prefix sum of ``u[m] * P^-m`` (P is odd, so it has an
inverse mod 2^32), ``H(i) = P^(i+W-1) * (S[i+W] - S[i])``: one multiply, one cumulative
sum, one subtract, one multiply (by ``P^(i+W-1) * C``, from a table) and one compare per
unit, in preallocated cache-sized buffers.  For bytes, ``u[m] * P^-m mod 2^19`` is below
2^27, so 25 of them sum below 2^32: the even and odd units form the two 32-bit halves of
one uint64 prefix sum (half as many sequential steps; a 64-bit subtraction takes care of
the carries between halves), whose differences, read as 32-bit numbers, are exactly the
even-offset sums ``E`` of the windows starting at 0, 1, 2, ... in order.  Offsets are local to a block, which is
harmless: ``H`` depends only on the window's content.  Nested anchors: shifting ``H * C`` by the
rolling range's width turns the rolling range and the level range into one interval, so a
single compare finds both kinds; the k-unit anchor hash ``P^(i+k-1) (S[i+k] - S[i])`` is then
gathered for the level's candidates only.  The greedy no-overlap choice walks
all clusters of close candidates at once (``pick_indices``), never a Python loop per
candidate; binary values are computed for the kept windows only.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

# 32-bit selection hash.  P: the FNV-32 prime; C: Knuth's golden-ratio multiplier.
_P32 = 0x01000193
_C32 = 0x9E3779B1
# 64-bit value hash: the FNV-64 prime as base; murmur3 fmix64 constants.
_P64 = 0x100000001B3
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_TOP = np.uint64(1 << 63)
_LOW63 = np.uint64((1 << 63) - 1)
_BITS19 = 19
_MASK19 = (1 << _BITS19) - 1

#: Units per numpy pass.  256 Ki units (uint32 work buffers of about 3 MB, in L2/L3): fewer
#: blocks halve the per-block Python and numpy call overhead; measured against 128 Ki on one
#: core, text hashing ~3 % and the raw path ~4 % faster (64 Ki slower, 512 Ki no better).
#: Read when a hasher is created, so tests may lower it to force many block borders.
BLOCK = 1 << 18


@dataclass(frozen=True, slots=True)
class ManberParams:
    """Parameters of the Manber fingerprints.

    window: units per window (Manber: 50 bytes).
    density: a window is a candidate with probability 1/``density`` (before the no-overlap
    rule, which thins overlapping candidates further).
    anchor_density: a position is an anchor with probability 1/``anchor_density``.
    anchor_length: 0 for the *sparse* anchored rule (the anchor is a W-unit string, the
    no-overlap rule applies among anchored windows; binary files); k > 0 for the *nested*
    rule (text): the anchor is a k-unit string, every occurrence counts, and the anchored
    window is kept when its level is at least ``anchor_level`` (see the module docstring).
    anchor_level: 0..32, the lowest level kept under the nested rule (ignored by the sparse rule).
    level_units: ascending unit counts; when not empty, a single stream (no ``ends``) raises
    its level with the units fed, to ``nested_level(units, level_units)``, dropping the
    anchored values below it (nested: what remains is what that level keeps).
    (The file-level defaults are in ``simscan.fingerprint.FingerprintParams``.)
    """

    window: int = 50
    density: int = 32
    anchor_density: int = 256
    anchor_length: int = 0
    anchor_level: int = 0
    level_units: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.window < 2:
            raise ValueError("window must be at least 2 units")
        if self.density < 1 or self.anchor_density < 1:
            raise ValueError("densities must be at least 1")
        if self.anchor_length < 0 or not 0 <= self.anchor_level <= 32 or len(self.level_units) > 32:
            raise ValueError("anchor_length must be >= 0, anchor_level in 0..32, at most 32 level limits")
        if list(self.level_units) != sorted(self.level_units):
            raise ValueError("level_units must be ascending")

    @property
    def nested(self) -> bool:
        return self.anchor_length > 0


def nested_level(units: int, limits: tuple[int, ...]) -> int:
    """Level of a text of ``units`` normalised units: how many of the ascending ``limits`` it
    reaches (0 below the first; ``()``: always 0)."""
    return bisect.bisect_right(limits, int(units))


def nested_levels(units: np.ndarray, limits: tuple[int, ...]) -> np.ndarray:
    """:func:`nested_level` of many unit counts (int64 array)."""
    lim = np.asarray(limits, dtype=np.int64)
    return np.searchsorted(lim, np.asarray(units, dtype=np.int64), side="right").astype(np.int64)


def _powers(base: int, n: int, bits: int) -> np.ndarray:
    """base^k mod 2^bits for k in [0, n), computed exactly."""
    dtype = np.uint32 if bits == 32 else np.uint64
    out = np.empty(n, dtype=dtype)
    out[0] = 1
    filled = 1
    with np.errstate(over="ignore"):
        while filled < n:
            step = min(filled, n - filled)
            out[filled : filled + step] = out[:step] * dtype(pow(base, filled, 1 << bits))
            filled += step
    return out


class _Tables:
    """Power tables shared by every hasher in a process (read-only)."""

    def __init__(self, window: int, cap: int) -> None:
        self.pinv = _powers(pow(_P32, -1, 1 << 32), cap, 32)
        with np.errstate(over="ignore"):
            # P^k * C: selection multiplies by C after the shift; fold it into the table.
            self.pw_mix = _powers(_P32, cap, 32) * np.uint32(_C32)
            # Bytes: the same modulo 2^19, the product shifted to the top of 32 bits.
            self.pinv19 = _powers(pow(_P32, -1, 1 << 19), cap, 32) & np.uint32(_MASK19)
            self.pw_mix19 = (self.pw_mix & np.uint32(_MASK19)) << np.uint32(32 - _BITS19)


_TABLE_CACHE: dict[tuple[int, int], _Tables] = {}


def _tables(window: int, cap: int) -> _Tables:
    t = _TABLE_CACHE.get((window, cap))
    if t is None:
        t = _TABLE_CACHE[(window, cap)] = _Tables(window, cap)
    return t


def _fmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x ^= x >> _S33
        x *= _M1
        x ^= x >> _S33
        x *= _M2
        x ^= x >> _S33
    return x


def window_values(units: np.ndarray, starts: np.ndarray, window: int, binary: bool = False) -> np.ndarray:
    """The 64-bit value of the windows of ``units`` that start at ``starts`` (kind bit not set).

    ``B(i)``: the window's bytes (text: the low byte of each code point), zero-padded to
    ``K`` whole little-endian 64-bit words ``w_k``; ``B = Q^K + sum_k w_k Q^(K-1-k) mod 2^64``.
    Binary value: ``fmix64(B)``.  Text value: ``fmix64(B + 2^32 M1 mod 2^64)`` with
    ``M1 = H(i) * C mod 2^32``, the mixed selection hash over the full code points (so
    windows that differ only above the low bytes still differ).  Words are read straight
    from the bytes at any offset, a few numpy gathers per window, no Python loop.
    """
    if starts.size == 0:
        return np.empty(0, dtype=np.uint64)
    starts = np.asarray(starts, dtype=np.intp)
    if binary:
        units = np.ascontiguousarray(units)
        if units.dtype != np.uint8:
            raise ValueError("binary windows are bytes")
        return _fmix64(_bytes_hash(units, starts, window))
    lo = int(starts.min())
    u = units[lo : int(starts.max()) + window]
    if u.size < window:
        raise ValueError("window longer than the units")
    st = starts - lo
    s1, pw1 = _prefix(u, _P32)
    with np.errstate(over="ignore"):
        m1 = (s1[st + window] - s1[st]) * pw1[st + window - 1] * np.uint32(_C32)
    return _text_value(_low_bytes(u), st, window, m1)


def _low_bytes(u: np.ndarray) -> np.ndarray:
    return u if u.dtype == np.uint8 else u.astype(np.uint8)  # astype keeps the low byte


def _text_value(low: np.ndarray, starts: np.ndarray, window: int, m1: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        h = _bytes_hash(np.ascontiguousarray(low), starts, window)
        h += m1.astype(np.uint64) << np.uint64(32)
    return _fmix64(h)


# Bijection of 63-bit integers (odd multiplies mod 2^63 and a self-inverse xor-shift), so
# that the level field of a nested anchored value is recoverable yet the value looks random
# to every consumer (simhash bit counts, the index's value sample).
_MASK63 = (1 << 63) - 1
_A63 = 0x9E3779B97F4A7C15 & _MASK63 | 1
_B63 = 0xC2B2AE3D27D4EB4F & _MASK63 | 1
_A63_INV = np.uint64(pow(_A63, -1, 1 << 63))
_B63_INV = np.uint64(pow(_B63, -1, 1 << 63))
_S32 = np.uint64(32)
_S31 = np.uint64(31)


def nested_anchored_value(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Value of nested anchored windows: ``2^63 | perm63(g * 2^31 + (x >> 33))`` with ``x`` the
    text window value (``window_values``) and ``g`` the window's mixed selection hash."""
    with np.errstate(over="ignore"):
        y = (g.astype(np.uint64) << _S31) | (x >> np.uint64(33))
        y *= np.uint64(_A63)
        y &= _LOW63
        y ^= y >> _S32
        y *= np.uint64(_B63)
        y &= _LOW63
    return y | _TOP


def anchored_selection(values: np.ndarray) -> np.ndarray:
    """The mixed selection hash ``g`` (uint64 below 2^32) of nested anchored values (inverse of
    :func:`nested_anchored_value`)."""
    with np.errstate(over="ignore"):
        y = np.asarray(values, dtype=np.uint64) & _LOW63
        y = y * _B63_INV
        y &= _LOW63
        y ^= y >> _S32
        y *= _A63_INV
        y &= _LOW63
    return y >> _S31


def anchored_levels(values: np.ndarray) -> np.ndarray:
    """Level (0..32, int64) of nested anchored values: leading zero bits of the 32-bit ``g``.
    A file at level t keeps exactly its anchored windows of level >= t."""
    g = anchored_selection(values)
    return 32 - np.frexp(g.astype(np.float64))[1].astype(np.int64)  # frexp is exact below 2^53


def _bytes_hash(units: np.ndarray, starts: np.ndarray, window: int) -> np.ndarray:
    """B(i) of the windows of the bytes ``units`` at ``starts`` (see window_values)."""
    if units.size < window:
        raise ValueError("window longer than the units")
    k = -(-window // 8)  # whole little-endian words per window, the last one zero-padded
    kpow, bias = _value_powers(k)
    # Windows too close to the end for the last 8-byte read are read from a padded copy.
    tail_ok = starts + 8 * k <= units.size
    if bool(tail_ok.all()):
        out = _byte_window_words(units, starts, window, k, kpow)
    else:
        out = np.empty(starts.size, dtype=np.uint64)
        far = np.flatnonzero(~tail_ok)
        padded = np.zeros(units.size + 8 * k, dtype=np.uint8)
        padded[: units.size] = units
        out[far] = _byte_window_words(padded, starts[far], window, k, kpow)
        near = np.flatnonzero(tail_ok)
        out[near] = _byte_window_words(units, starts[near], window, k, kpow)
    with np.errstate(over="ignore"):
        out += bias
    return out


def _byte_window_words(units: np.ndarray, starts: np.ndarray, window: int, k: int, kpow: np.ndarray) -> np.ndarray:
    """sum_j w_j Q^(K-1-j) mod 2^64 over the K little-endian words of each window.

    Each window's 8K bytes are fetched as one fixed-size record (a void dtype with a
    one-byte stride), i.e. one memcpy per window, then read as K words."""
    width = 8 * k
    n_rows = units.size - width + 1
    if starts.size == 0 or n_rows <= 0:
        return np.zeros(starts.size, dtype=np.uint64)
    units = np.ascontiguousarray(units)
    rows = np.ndarray(shape=(n_rows,), dtype=np.dtype((np.void, width)), buffer=units.data, strides=(1,))
    words = rows[starts].view("<u8").reshape(-1, k)
    last_bytes = window - 8 * (k - 1)
    with np.errstate(over="ignore"):
        if last_bytes < 8:
            words[:, k - 1] &= np.uint64((1 << (8 * last_bytes)) - 1)
        # A matrix-vector product (numpy's integer loop wraps mod 2^64 like the ufuncs): a
        # third cheaper than column by column, half the cost of a reduction along axis 1.
        return words @ kpow


def _prefix(u: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray]:
    """(S, powers): S[k] = sum_{m<k} u[m] base^-m and base^k, mod 2^32 (k up to len(u))."""
    n = u.size
    s = np.zeros(n + 1, dtype=np.uint32)
    np.multiply(u, _powers(pow(base, -1, 1 << 32), n, 32), out=s[1:], dtype=np.uint32)
    np.cumsum(s[1:], out=s[1:])
    return s, _powers(base, n, 32)


_P64_CACHE: dict[int, tuple[np.ndarray, np.uint64]] = {}


def _value_powers(k: int) -> tuple[np.ndarray, np.uint64]:
    """(Q^(K-1-j) for word j of a window, Q^K) mod 2^64 for K = k words."""
    r = _P64_CACHE.get(k)
    if r is None:
        kpow = _powers(_P64, k, 64)[::-1].copy()
        r = _P64_CACHE[k] = (kpow, np.uint64(pow(_P64, k, 1 << 64)))
    return r


def pick_non_overlapping(cands: np.ndarray, first_allowed: int, window: int) -> np.ndarray:
    """The kept candidates (see :func:`pick_indices`)."""
    return cands[pick_indices(cands, first_allowed, window)]


def pick_indices(cands: np.ndarray, first_allowed: int, window: int) -> np.ndarray:
    """Indices into ``cands`` (sorted, distinct) of Manber's no-overlap choice: greedily from
    the left, the first candidate at or after ``first_allowed``, then repeatedly the first one
    at least ``window`` after the last one kept.

    Few candidates: a plain loop.  Many: ``next(i)``, the first candidate at least ``window``
    after candidate i, is found for every candidate at once by :func:`_next_indices` (a few
    passes over the gaps in a small dtype: at the default densities a window holds a handful
    of candidates), and the kept ones are the orbit of the first candidate under ``next``.
    A *cluster* is a maximal run of candidates less than ``window`` apart; its first
    candidate is always kept (the last pick before it is at least ``window`` away), so the
    orbit is walked from every cluster start at once, one gather per step of the longest
    cluster, each chain stopping where it meets a kept candidate (the next cluster's start).
    A chain still walking after ``_WALK_MAX`` steps (a long run of candidates, e.g. one
    repeated byte) is finished by pointer doubling, so no input costs a Python loop per
    candidate.
    """
    first = int(np.searchsorted(cands, first_allowed)) if cands.size and cands[0] < first_allowed else 0
    cands = cands[first:]
    n = cands.size
    if n <= 1:
        return np.arange(first, first + n)
    if n <= _LOOP_MAX:
        out = []
        nxt = -1
        for i, c in enumerate(cands.tolist()):
            if c >= nxt:
                out.append(i)
                nxt = c + window
        return np.array(out, dtype=np.intp) + first
    gaps = np.diff(cands)
    far = gaps >= window
    starts = np.flatnonzero(far)
    if starts.size == n - 1:
        return np.arange(first, first + n)
    starts += 1
    nxt = _next_indices(cands, gaps, window)
    # ``on``: kept; index n stands for "past the end", marked so that chains stop there.
    on = np.zeros(n + 1, dtype=bool)
    on[0] = True
    on[starts] = True
    on[n] = True
    cur = np.concatenate(([0], starts))
    steps = 0
    while cur.size:
        cur = nxt[cur]
        new = on[cur]
        # Index array and take: a boolean compress with a mixed mask costs twice as much.
        cur = cur[np.flatnonzero(np.logical_not(new, out=new))]
        on[cur] = True
        steps += 1
        if steps >= _WALK_MAX and cur.size:
            # Long clusters: each chain left is inside one cluster; finish it by doubling.
            bounds = np.append(starts, n)
            ends = bounds[np.searchsorted(bounds, cur, side="right")]
            for c, e in zip(cur.tolist(), ends.tolist()):
                on[c + _doubling_chain(cands[c:e], window)] = True
            break
    return np.flatnonzero(on[:n]) + first


def _next_indices(cands: np.ndarray, gaps: np.ndarray, window: int) -> np.ndarray:
    """``next(i)``: index of the first candidate at or after ``cands[i] + window`` (``n``, the
    length, when there is none), for every i, as an intp array of n + 1 (``next(n) = n``).

    ``next(i) = i + 1 + #{k >= 1: cands[i+k] - cands[i] < window}``: pass k adds the k-th
    gap after each candidate (clipped at ``window``) to a running sum and counts the sums
    still below ``window``.  The passes stop when no sum is below ``window`` any more; after
    ``_NEXT_PASSES`` the rare candidates with more neighbours than that in their window
    are binary searched.  At density 1/32 and window 50 that is about 10 passes over
    2-byte arrays, a few times cheaper than a binary search per candidate."""
    n = cands.size
    # Sums of at most _NEXT_PASSES clipped gaps: 2 bytes for every usual window.
    dtype = np.uint16 if _NEXT_PASSES * window < 1 << 16 else np.int64
    g = np.minimum(gaps, window).astype(dtype)
    lim = dtype(window)
    count = np.zeros(n + 1, dtype=np.uint8)  # at most _NEXT_PASSES < 256
    acc = g.copy()
    below = np.empty(n - 1, dtype=bool)
    rest = None
    for k in range(1, n):
        m = n - k  # sums of k gaps start at candidates 0 .. m-1
        mask = np.less(acc[:m], lim, out=below[:m])
        if not mask.any():
            break
        np.add(count[:m], mask, out=count[:m])
        if k == _NEXT_PASSES:
            # Candidates with more than k others in their window (dense runs): searched.
            rest = np.flatnonzero(mask)
            break
        np.add(acc[: m - 1], g[k : k + m - 1], out=acc[: m - 1])
    nxt = np.arange(1, n + 2, dtype=np.intp)
    nxt += count
    nxt[n] = n
    if rest is not None:
        nxt[rest] = np.searchsorted(cands, cands[rest] + window)
    return nxt


#: Passes of :func:`_next_indices` before the remaining candidates are binary searched.
_NEXT_PASSES = 24


#: Steps of the parallel cluster walk before long clusters are left to pointer doubling.
_WALK_MAX = 64


def _doubling_chain(cands: np.ndarray, window: int) -> np.ndarray:
    """Indices of the greedy chain by pointer doubling: after round k the chain's first
    2^k picks are known and ``jump`` advances 2^k picks (O(n log picks) numpy work)."""
    n = cands.size
    jump = np.empty(n + 1, dtype=np.intp)
    jump[:n] = np.searchsorted(cands, cands + window)
    jump[n] = n  # past the end maps to itself
    on = np.zeros(n + 1, dtype=bool)
    chain = np.zeros(1, dtype=np.intp)
    on[0] = True
    while True:
        more = jump[chain]
        more = more[more < n]
        if more.size == 0:
            break
        on[more] = True
        chain = np.concatenate((chain, more))
        jump = jump[jump]
    return np.flatnonzero(on[:n])


#: Below this many candidates a Python loop beats pointer doubling's numpy call overhead.
_LOOP_MAX = 1024


class ManberHasher:
    """Streams units through the rolling hash, carrying windows across ``feed`` calls.

    ``feed`` accepts arrays of any length and unsigned dtype (uint8 bytes; uint8, uint16
    or uint32 code points) and examines them in place, in overlapping blocks of ``BLOCK``
    units; the last few units are copied as a carry so that windows spanning two feeds are
    not lost.  Memory: a few block-sized buffers, whatever the input length.  ``finish``
    returns the kept values.  ``binary``: bytes (input must then be uint8), selected and
    valued as described in the module docstring.

    ``ends`` (optional, sorted global unit offsets) makes one hasher serve many files
    concatenated: a window or anchor that crosses an end is not a candidate, and every
    kept value records the index of the file (segment) it lies in.  Since no candidate
    crosses a border, the greedy no-overlap chain over the concatenation restarts in each
    file exactly as it would alone.  With ``ends`` the nested level stays ``anchor_level``
    (callers group files by level); without, it rises with the units fed (``level_units``).
    """

    def __init__(self, params: ManberParams, binary: bool = False, ends: np.ndarray | None = None) -> None:
        self.params = params
        self.binary = binary
        w = params.window
        # Anchored window = the W units starting ``lead`` after the anchor's start.
        self.nested = params.nested and not binary
        self.lead = params.anchor_length if self.nested else w
        self.overlap = self.lead + w - 1
        # A block is BLOCK new units plus the overlap, so that a feed of a multiple of BLOCK
        # units (a binary file's chunks) is exactly that many blocks, with no short one after them.
        cap = max(BLOCK, 4 * (self.overlap + 2)) + self.overlap
        self.cap = cap
        # + 2: an odd block is padded to an even length (lanes); rounded up so that the text and
        # binary hashers (overlaps of 57 and 99 units) share one set of tables (4 MB).
        self.t = _tables(w, -(-(cap + 2) // 1024) * 1024)
        self._s = np.empty(cap + 2, dtype=np.uint32)
        self._s[0] = 0
        self._d = np.empty(cap, dtype=np.uint32)
        self._mask = np.empty(cap, dtype=bool)
        self._carry = np.empty(0, dtype=np.uint8 if binary else np.uint32)
        # Bytes with an even window: the two-lane prefix sum (selection hash mod 2^19).
        self._lanes = binary and w % 2 == 0
        if self._lanes:
            self._z = np.zeros(cap // 2 + 2, dtype=np.uint64)
            self._zd = np.empty(cap // 2 + 2, dtype=np.uint64)
            self._pad = np.empty(cap + 1, dtype=np.uint8)
        self._pos = 0  # global position of the next unit fed
        self._next_roll = 0  # no-overlap rule: first global start allowed
        self._next_anchor = 0
        top = 1 << 32
        self._roll_thr = np.uint32(top - top // params.density)
        # Anchors: windows whose mixed selection hash lies just below the rolling range.
        self._anchor_thr = np.uint32(max(0, top - top // params.density - top // params.anchor_density))
        # Nested rule: an anchor's mixed k-unit hash is below this; a window's level is >= the
        # file's when its mixed selection hash is below 2^(32 - level).
        self._nest_anchor_thr = np.uint64(top // params.anchor_density)
        self._level = params.anchor_level
        self._level_thr = np.uint64(top >> params.anchor_level)
        self._adaptive = self.nested and bool(params.level_units) and ends is None

        self._ends = None if ends is None else np.asarray(ends, dtype=np.int64)
        self._rolling: list[np.ndarray] = []
        self._anchored: list[np.ndarray] = []
        self._held = [0, 0]  # values in each of the two lists (for _compact)
        self._roll_owner: list[np.ndarray] = []
        self._anchor_owner: list[np.ndarray] = []
        self.units = 0

    def feed(self, data: np.ndarray) -> None:
        n = int(data.size)
        if n == 0:
            return
        if self._adaptive:
            # The text has at least the units fed so far plus these: its final level is at least
            # theirs, so windows below it need not even be valued.
            p = self.params
            self._raise_level(max(p.anchor_level, nested_level(self._pos + n, p.level_units)))
        ov = self.overlap
        base = self._pos
        if self._carry.size:
            # The junction: windows and anchors that start in the carry end in ``data``.
            junction = np.concatenate((self._carry, data[: ov + 1]))
            self._select(junction, [self._block(junction, 0, junction.size)], base - self._carry.size)
        step = self.cap - ov
        found = []
        last = max(n - ov, 1)
        for a in range(0, last, step):
            # Each block reports the starts before the next block's first unit only, so that
            # the overlap is not reported twice; candidates are then picked once per feed.
            found.append(self._block(data[a : a + self.cap], a, step if a + step < last else self.cap))
        self._select(data, found, base)
        keep = min(n, ov)
        tail = data[n - keep :]
        if n >= ov or not self._carry.size:
            self._carry = tail.copy()
        else:
            self._carry = np.concatenate((self._carry, tail))[-ov:]
        self._pos = base + n
        self.units += n

    def _raise_level(self, level: int) -> None:
        """Keep from now on only anchored windows of level >= ``level``, and drop the kept ones
        below it (the nested rule makes the result what that level alone would keep)."""
        if level <= self._level:
            return
        self._level = level
        self._level_thr = np.uint64((1 << 32) >> level)
        parts = [p[anchored_levels(p) >= level] for p in self._anchored]
        self._anchored[:] = [p for p in parts if p.size]
        self._held[1] = sum(p.size for p in self._anchored)

    def _select(self, units: np.ndarray, found: list[tuple], gpos: int) -> None:
        """Apply the no-overlap rule to the candidates of ``units`` (local starts, with
        their values for text) and keep the picked windows' values."""
        w = self.params.window
        low = None
        for kind in (0, 1):
            starts = _cat([f[2 * kind] for f in found])
            if starts.size == 0:  # e.g. most junctions of two feeds
                continue
            vals = None if self.binary else _cat([f[2 * kind + 1] for f in found], np.uint32)
            ok = self._valid(starts, gpos, self.lead if kind else 0)
            if ok is not None:
                starts = starts[ok]
                vals = None if vals is None else vals[ok]
            if kind and self.nested:
                idx = np.arange(starts.size)  # every occurrence: no no-overlap rule
            else:
                nxt = self._next_anchor if kind else self._next_roll
                idx = pick_indices(starts, nxt - gpos, w)
            if idx.size == 0:
                continue
            picked = starts[idx]
            last = gpos + int(picked[-1]) + w
            if vals is None:
                v = _fmix64(_bytes_hash(units, picked, w))
            else:
                if low is None:
                    low = _low_bytes(units)
                v = _text_value(low, picked, w, vals[idx])
            if kind:
                self._next_anchor = last
                self._anchored.append(nested_anchored_value(v, vals[idx]) if self.nested else v | _TOP)
            else:
                self._next_roll = last
                self._rolling.append(v & _LOW63)
            if self._ends is None:
                self._held[kind] += v.size
                self._compact()
            else:
                # File index of each pick: count the ends at or before it (from the ends' side).
                g = picked + gpos
                first = np.searchsorted(self._ends, g[0], side="right")
                cut = np.searchsorted(g, self._ends[first:], side="left")
                owner = first + np.repeat(np.arange(cut.size + 1), np.diff(np.r_[0, cut, g.size]))
                (self._anchor_owner if kind else self._roll_owner).append(owner)

    def _valid(self, starts: np.ndarray, gpos: int, back: int) -> np.ndarray | None:
        """Mask of windows whose span (start - back .. start + W; ``back``: the anchor before
        an anchored window) lies inside one file (None: no file ends given).  Searched from
        the file ends' side: a few thousand ends, not every candidate."""
        if self._ends is None or starts.size == 0:
            return None
        g = starts + gpos
        w = self.params.window
        ends = self._ends
        lo = np.searchsorted(ends, g[0] - back, side="right")
        hi = np.searchsorted(ends, g[-1] + w + 1, side="left")
        e = ends[lo : hi + 1] if hi < ends.size else ends[lo:]
        ok = np.ones(starts.size, dtype=bool)
        if e.size:
            # Windows spanning end e start in (e - W, e + back).
            a = np.searchsorted(g, e - w, side="right")
            b = np.searchsorted(g, e + back, side="left")
            span = b - a
            if span.any():
                idx = np.repeat(a, span) + (np.arange(int(span.sum())) - np.repeat(np.cumsum(span) - span, span))
                ok[idx] = False
        return ok

    def _block(self, block: np.ndarray, off: int, limit: int) -> tuple:
        """Candidates in ``block`` whose windows start below ``limit`` (local): rolling window
        starts, their values (text) or None, anchored window starts, their values or None;
        starts as offsets from the block's owner (``off`` added)."""
        w = self.params.window
        n = block.size
        empty = np.empty(0, dtype=np.intp)
        if n < w:
            return empty, None, empty, None
        t = self.t
        s, d = self._s, self._d
        nw = n - w + 1
        dv = d[:nw]
        if self._lanes:
            # Two 32-bit lanes in one uint64 prefix sum (see the module docstring): even
            # and odd units, so that the sequential cumsum runs over n/2 elements.
            if n & 1:
                padded = self._pad[: n + 1]
                padded[:n] = block
                padded[n] = 0
                block = padded
            n2 = (n + 1) // 2
            x = s[: 2 * n2]
            np.copyto(x, block[: 2 * n2])  # widening copy + multiply: cheaper than a mixed-type multiply
            np.multiply(x, t.pinv19[: 2 * n2], out=x)
            z = self._z
            np.cumsum(x.view(np.uint64), out=z[1 : n2 + 1])
            k = w // 2
            nk = n2 - k + 1
            lanes = self._zd[:nk]
            np.subtract(z[k : k + nk], z[:nk], out=lanes)
            # lanes.view: at index i, the sum over the window's bytes 0, 2, ..., W-2.
            np.multiply(lanes.view(np.uint32)[:nw], t.pw_mix19[w - 2 : w - 2 + nw], out=dv)
        else:
            np.copyto(s[1 : n + 1], block)
            np.multiply(s[1 : n + 1], t.pinv[:n], out=s[1 : n + 1])
            np.cumsum(s[1 : n + 1], out=s[1 : n + 1])
            np.subtract(s[w : w + nw], s[:nw], out=dv)
            np.multiply(dv, t.pw_mix[w - 1 : w - 1 + nw], out=dv)
        if self.nested:
            return self._block_nested(nw, limit, off)
        np.greater_equal(dv, self._anchor_thr, out=self._mask[:nw])
        both = sparse_flatnonzero(self._mask[: min(nw, limit)], 1 - int(self._anchor_thr) / (1 << 32))
        is_roll = dv[both] >= self._roll_thr
        starts = both[is_roll]
        at = both[~is_roll]
        # The anchored window follows its anchor and must lie inside the block.
        at = at[at < nw - self.lead] + self.lead
        # Text values need the mixed selection hash of the kept windows: keep it per candidate.
        rv = None if self.binary else dv[starts]
        av = None if self.binary else d[at]
        if off:
            starts += off
            at += off
        return starts, rv, at, av

    def _block_nested(self, nw: int, limit: int, off: int) -> tuple:
        """``_block`` for the nested anchored rule (text): rolling candidates as usual; anchored
        windows start ``k`` after an anchor that starts below ``limit``, and qualify by level
        first (cheap: the selection hash is at hand), then by the anchor before them."""
        k = self.lead
        d, s, t = self._d, self._s, self.t
        dv = d[:nw]
        hi = min(nw, limit + k)
        roll_width = (1 << 32) - int(self._roll_thr)
        level_width = int(self._level_thr)
        if roll_width + level_width < 1 << 32:
            # One compare finds both kinds: shifted by the rolling range's width r (mod 2^32),
            # the rolling range [2^32 - r, 2^32) and the level range [0, L) become [0, r + L).
            # In place (dv is not read again but at the candidates): one buffer less in cache.
            shifted = dv[:hi]
            with np.errstate(over="ignore"):
                np.add(shifted, np.uint32(roll_width), out=shifted)
            mask = np.less(shifted, np.uint32(roll_width + level_width), out=self._mask[:hi])
            both = sparse_flatnonzero(mask, (roll_width + level_width) / (1 << 32))
            # One gather of the selection hashes serves the split and both kinds' values.
            # (Index arrays and takes: a boolean compress with a mixed mask costs twice as much.)
            vb = shifted[both]
            with np.errstate(over="ignore"):
                vb -= np.uint32(roll_width)
            is_roll = vb >= self._roll_thr
            i = np.flatnonzero(is_roll)
            roll, rv = both[i], vb[i]
            i = np.flatnonzero(np.logical_not(is_roll, out=is_roll))
            at, av = both[i], vb[i]
            # Sorted: the starts at or past ``limit`` (rolling) and below ``k`` (anchored: no
            # anchor before them in the block) are at the ends.
            if hi > limit:
                cut = int(np.searchsorted(roll, limit))
                roll, rv = roll[:cut], rv[:cut]
            if at.size and at[0] < k:
                cut = int(np.searchsorted(at, k))
                at, av = at[cut:], av[cut:]
        else:  # overlapping ranges (level 0 or a very dense rolling rule)
            roll = np.flatnonzero(dv[: min(nw, limit)] >= self._roll_thr)
            rv = dv[roll]
            if level_width >= 1 << 32:
                at = np.arange(k, hi)
            else:
                at = np.flatnonzero(dv[k:hi] < self._level_thr) + k
            av = d[at]
        if at.size:
            a0 = at - k
            with np.errstate(over="ignore"):
                hk = (s[at] - s[a0]) * t.pw_mix[at - 1]
            i = np.flatnonzero(hk.astype(np.uint64) < self._nest_anchor_thr)
            at, av = at[i], av[i]
        if off:
            roll += off
            at += off
        return roll, rv, at, av

    def _compact(self) -> None:
        """Keep the stored values distinct once they pile up: memory then grows with the
        number of distinct fingerprints (the result), not with the length of a repetitive
        input."""
        for kind, parts in enumerate((self._rolling, self._anchored)):
            if len(parts) < 16:
                continue
            # Geometric: the new values must outnumber the merged ones, so that each value
            # is merged O(log n) times.
            if self._held[kind] - parts[0].size > max(1 << 20, parts[0].size):
                merged = _sorted_unique(parts)
                parts.clear()
                parts.append(merged)
                self._held[kind] = merged.size

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """(rolling, anchored): sorted, distinct uint64 values.  The hasher is spent."""
        return _sorted_unique(self._rolling), _sorted_unique(self._anchored)

    def finish_segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """With ``ends``: (rolling values, their file index, anchored values, file index),
        unsorted, with repeats.  The hasher is spent."""
        assert self._ends is not None

        def cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)

        return (
            cat(self._rolling, np.uint64),
            cat(self._roll_owner, np.intp),
            cat(self._anchored, np.uint64),
            cat(self._anchor_owner, np.intp),
        )


def sparse_flatnonzero(mask: np.ndarray, density: float) -> np.ndarray:
    """``np.flatnonzero`` of a bool array whose expected fraction of True is ``density``.

    numpy finds sparse True values (up to 10 %) with one memchr call per value, ~15 ns each
    on this kind of machine: at the text density (1/32 rolling plus the level's anchored
    candidates, ~4 %) that was 0.6 ns a unit, a tenth of the text path.  From 1.5 % to 10 %
    the mask is read as 64-bit words instead: the nonzero words (~27 % of them at 4 %) and
    then the True bytes among them are both dense enough for numpy's branch-free loop:
    ~0.35 ns a unit.  Exact for any mask; only the speed depends on ``density``."""
    n = mask.size
    if not _WORDS_MIN <= density <= _WORDS_MAX or n < 64 or mask.ndim != 1 or not mask.flags.c_contiguous:
        return np.flatnonzero(mask)
    n8 = n & ~7
    words = mask[:n8].view(np.uint64)
    at = np.flatnonzero(words != 0)
    # bool views keep numpy's bool fast path (a uint8 view takes the generic, slow one)
    q = np.flatnonzero(words[at].view(np.bool_))
    pos = (at[q >> 3] << 3) | (q & 7)
    if n8 < n:
        pos = np.concatenate((pos, np.flatnonzero(mask[n8:]) + n8))
    return pos


#: Densities at which :func:`sparse_flatnonzero` reads words (measured: 2-10 % about twice as fast).
_WORDS_MIN = 0.015
_WORDS_MAX = 0.10


def _cat(parts: list, dtype: type = np.intp) -> np.ndarray:
    parts = [p for p in parts if p is not None and p.size]
    if not parts:
        return np.empty(0, dtype=dtype)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _sorted_unique(parts: list[np.ndarray]) -> np.ndarray:
    if not parts:
        return np.empty(0, dtype=np.uint64)
    v = np.concatenate(parts) if len(parts) > 1 else parts[0].copy()
    return sorted_unique(v)


def sort_hashes(v: np.ndarray) -> np.ndarray:
    """``v`` (uint64 hash values) sorted; in place when it is large enough to matter.

    numpy sorts 64-bit integers at ~40 ns per value on this kind of machine (no SIMD sort),
    which made the final sort a tenth of the text path.  Fingerprint values are uniformly
    random in their low 63 bits, so a stable (radix) argsort on bits 47..62 as uint16 puts
    them almost in order, and timsort (numpy's stable sort) finishes the few short unsorted
    runs in near-linear time: 2.5-4x faster from ~1,000 values up.  Exact for any input: the
    first pass only arranges the input for the second, which is a complete sort."""
    if v.size < _RADIX_MIN:
        v.sort()
        return v
    v = v[np.argsort((v >> np.uint64(47)).astype(np.uint16), kind="stable")]
    v.sort(kind="stable")
    return v


#: From this many values the two-pass sort of :func:`sort_hashes` beats numpy's quicksort.
_RADIX_MIN = 1024


def sorted_unique(v: np.ndarray) -> np.ndarray:
    """The distinct values of ``v`` (uint64), sorted; ``v`` may be reordered (cheaper than
    np.unique)."""
    v = sort_hashes(v)
    if v.size > 1:
        keep = np.empty(v.size, dtype=bool)
        keep[0] = True
        np.not_equal(v[1:], v[:-1], out=keep[1:])
        if not keep.all():
            v = v[keep]
    return v
