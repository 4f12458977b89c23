"""Manber fingerprints: a Rabin-Karp hash of every window, kept by value.

Source: U. Manber, "Finding Similar Files in a Large File System", USENIX Winter 1994
(see DESIGN.md section 1).  simscan works on *units*: bytes for binary files and
normalised Unicode code points for text, so the same text in any encoding yields the
same units and therefore the same fingerprints.

How it is computed without a Python loop per unit
-------------------------------------------------
For a block of units ``u`` the window hash is the polynomial

    H(i) = sum_{m=i}^{i+W-1} u[m] * P^(i+W-1-m)        (mod 2^32)

With ``S`` the prefix sum of ``u[m] * P^-m`` (P is odd, so it has an inverse mod 2^32),
``H(i) = P^(i+W-1) * (S[i+W] - S[i])``: one multiply, one cumulative sum, one subtract
and one multiply per unit, all numpy passes over cache-sized blocks.  Offsets are local
to a block, which is harmless: ``H`` depends only on the window's content.

Selection ("approach 2"): a window is a candidate when ``H * C`` (C an odd mixing
constant, folded into the power table) falls in the top ``2^32 / density`` values.  The
high bits of a product are well mixed, and the top range excludes zero, so runs of NUL
bytes (sparse files) never become candidates.  Manber's no-overlap rule is then applied:
after a kept window, the next one may start only at its end.

The *value* kept for a window is a 64-bit polynomial hash of the same window (mod 2^64,
a different base, finished with the murmur3 64-bit mixer), computed only for the kept
windows.  32 bits decide selection; 64 bits identify the fingerprint in the index, where
2^32 would collide too often across millions of files.

Anchored fingerprints ("approach 1"): the anchor set is every unit bigram whose mixed
value falls in the top 1/``ANCHOR_DENSITY`` of the 32-bit range (a fixed, documented set
that does not depend on a corpus or a language); at each occurrence the window of ``W``
units that follows the anchor is hashed.  Anchored values have the top bit set, rolling
values have it clear, so a fingerprint knows its kind wherever it is stored.
"""

from __future__ import annotations

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
_ANCHOR_MIX = np.uint32(0x85EBCA6B)

#: Units processed per numpy pass.  128 Ki units keep the uint32 work arrays in L2.
BLOCK = 1 << 17


@dataclass(frozen=True, slots=True)
class ManberParams:
    """Parameters of the Manber fingerprints.

    window: units per window (Manber: 50 bytes).
    density: keep about one window in ``density`` *before* the no-overlap rule.
    anchor_density: about one bigram type in ``anchor_density`` is an anchor.
    """

    window: int = 50
    density: int = 16
    anchor_density: int = 64

    def __post_init__(self) -> None:
        if self.window < 2:
            raise ValueError("window must be at least 2 units")
        if self.density < 1 or self.anchor_density < 1:
            raise ValueError("densities must be at least 1")


def _powers(base: int, n: int, bits: int) -> np.ndarray:
    """base^k mod 2^bits for k in [0, n), computed exactly with Python ints once."""
    mask = (1 << bits) - 1
    dtype = np.uint32 if bits == 32 else np.uint64
    out = np.empty(n, dtype=dtype)
    # Doubling: fill the table by blocks, each block the previous one times base^len.
    out[0] = 1
    filled = 1
    with np.errstate(over="ignore"):
        while filled < n:
            step = min(filled, n - filled)
            factor = dtype(pow(base, filled, 1 << bits) & mask)
            out[filled : filled + step] = out[:step] * factor
            filled += step
    return out


class _Tables:
    """Power tables shared by every fingerprinter in a process (read-only)."""

    def __init__(self, window: int) -> None:
        n = BLOCK + window
        inv = pow(_P32, -1, 1 << 32)
        self.pinv = _powers(inv, n, 32)
        with np.errstate(over="ignore"):
            # P^k * C: selection multiplies by C after the shift; fold it into the table.
            self.pw_mix = _powers(_P32, n, 32) * np.uint32(_C32)
        self.p64 = _powers(_P64, window, 64)[::-1].copy()  # P^(W-1-j) for window slot j
        self.offsets = np.arange(window, dtype=np.intp)


_TABLE_CACHE: dict[int, _Tables] = {}


def _tables(window: int) -> _Tables:
    t = _TABLE_CACHE.get(window)
    if t is None:
        t = _TABLE_CACHE[window] = _Tables(window)
    return t


def _fmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x ^= x >> _S33
        x *= _M1
        x ^= x >> _S33
        x *= _M2
        x ^= x >> _S33
    return x


def window_values(units: np.ndarray, starts: np.ndarray, window: int) -> np.ndarray:
    """The 64-bit value of the windows of ``units`` that start at ``starts`` (no kind bit)."""
    if starts.size == 0:
        return np.empty(0, dtype=np.uint64)
    t = _tables(window)
    win = units[starts[:, None] + t.offsets].astype(np.uint64)
    with np.errstate(over="ignore"):
        win += np.uint64(1)  # so that a window of NULs is not the zero polynomial
        h = (win * t.p64).sum(axis=1, dtype=np.uint64)
    return _fmix64(h)


def _pick_non_overlapping(cands: np.ndarray, first_allowed: int, window: int) -> np.ndarray:
    """Greedy left-to-right choice of sorted candidates at least ``window`` apart.

    The greedy chain is c0, next(c0), next(next(c0)), ... with next(c) the first candidate
    at or after c + window.  It is followed by pointer doubling: after round k the chain's
    first 2^k picks are known and ``jump`` advances 2^k picks, so a block costs
    O(candidates x log picks) numpy work and no Python loop per candidate, even for a long
    run of one repeated unit whose every window is a candidate.
    """
    cands = cands[cands >= first_allowed]
    n = cands.size
    if n <= 1 or bool((np.diff(cands) >= window).all()):
        return cands
    jump = np.empty(n + 1, dtype=np.intp)
    jump[:n] = np.searchsorted(cands, cands + window)
    jump[n] = n  # past the end maps to itself
    chain = np.zeros(1, dtype=np.intp)
    while True:
        more = jump[chain]
        more = more[more < n]
        if more.size == 0:
            break
        chain = np.concatenate((chain, more))
        jump = jump[jump]
    chain.sort()
    return cands[chain]


class ManberHasher:
    """Streams units through the rolling hash, carrying windows across block borders.

    ``feed`` accepts blocks of any length (uint8 for bytes, uint32 for code points) and
    never holds more than ``BLOCK + window`` units; ``finish`` returns the kept values.
    """

    def __init__(self, params: ManberParams, dtype: type[np.unsignedinteger]) -> None:
        self.params = params
        self.t = _tables(params.window)
        self.dtype = np.dtype(dtype)
        self._carry = np.empty(0, dtype=self.dtype)
        self._pos = 0  # global position of _carry[0]
        self._next_roll = 0  # no-overlap rule: first global start allowed
        self._next_anchor = 0
        # A window is kept when mixed hash >= threshold (top 1/density of the range).
        self._roll_thr = np.uint32((1 << 32) - ((1 << 32) // params.density))
        self._anchor_thr = np.uint32((1 << 32) - ((1 << 32) // params.anchor_density))
        self._rolling: list[np.ndarray] = []
        self._anchored: list[np.ndarray] = []
        self.units = 0

    def feed(self, data: np.ndarray) -> None:
        if data.dtype != self.dtype:
            data = data.astype(self.dtype)
        self.units += int(data.size)
        view = data
        while view.size:
            room = BLOCK - self._carry.size + self.params.window - 1
            take = view[:room]
            view = view[room:]
            block = np.concatenate((self._carry, take)) if self._carry.size else take
            self._process(block)

    def _process(self, block: np.ndarray, final: bool = False) -> None:
        """Examine every window and anchor that ``block`` completes.

        Unless ``final``, the last ``window + 1`` units are carried into the next block;
        starts examined twice are harmless, since the no-overlap position only grows.
        """
        w = self.params.window
        n = block.size
        if n < w:
            self._carry = block if final else block.copy()
            return
        t = self.t
        pos = self._pos
        x = np.multiply(block, t.pinv[:n], dtype=np.uint32)
        s = np.empty(n + 1, dtype=np.uint32)
        s[0] = 0
        np.cumsum(x, out=s[1:])
        d = s[w:]
        d -= s[: n - w + 1]
        np.multiply(d, t.pw_mix[w - 1 : n], out=d)
        starts = np.flatnonzero(d >= self._roll_thr)
        picked = _pick_non_overlapping(starts, self._next_roll - pos, w)
        if picked.size:
            self._next_roll = pos + int(picked[-1]) + w
            self._rolling.append(window_values(block, picked, w) & _LOW63)
        # Anchor bigram at i (units i, i+1); its window starts at i + 2 and must fit.
        m = n - w - 1
        if m > 0:
            a = block[:m].astype(np.uint32) * np.uint32(_P32)
            a ^= block[1 : m + 1]
            a *= _ANCHOR_MIX
            at = np.flatnonzero(a >= self._anchor_thr) + 2
            picked = _pick_non_overlapping(at, self._next_anchor - pos, w)
            if picked.size:
                self._next_anchor = pos + int(picked[-1]) + w
                self._anchored.append(window_values(block, picked, w) | _TOP)
        if not final:
            keep = min(w + 1, n)
            self._carry = block[n - keep :].copy()
            self._pos = pos + n - keep

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """(rolling, anchored): sorted, distinct uint64 values.  The hasher is spent."""
        if self._carry.size:
            self._process(self._carry, final=True)
            self._carry = np.empty(0, dtype=self.dtype)
        return _sorted_unique(self._rolling), _sorted_unique(self._anchored)


def _sorted_unique(parts: list[np.ndarray]) -> np.ndarray:
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return np.unique(np.concatenate(parts))
