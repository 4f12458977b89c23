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

Where it runs: the native core (``native/core/src/manber.rs``), per block of window starts:
``H`` from a prefix sum of ``u[m] * P^-m`` (P is odd, so invertible mod 2^32), then one pass of
compares, values for the kept windows only.  ``tests/reference_fingerprint.py`` restates every
definition above as plain Python, one window at a time, and the tests compare the two.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from simscan import _native

_S31 = np.uint64(31)
_S32 = np.uint64(32)
_LOW63 = np.uint64((1 << 63) - 1)
_MASK63 = (1 << 63) - 1
_A63 = 0x9E3779B97F4A7C15 & _MASK63 | 1
_B63 = 0xC2B2AE3D27D4EB4F & _MASK63 | 1
_A63_INV = np.uint64(pow(_A63, -1, 1 << 63))
_B63_INV = np.uint64(pow(_B63, -1, 1 << 63))


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


def anchored_selection(values: np.ndarray) -> np.ndarray:
    """The mixed selection hash ``g`` (uint64 below 2^32) of nested anchored values (inverse of
    the value's ``perm63``)."""
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
    return _native.anchored_levels(np.ascontiguousarray(values, dtype=np.uint64))


def window_values(units: np.ndarray, starts: np.ndarray, window: int, binary: bool = False) -> np.ndarray:
    """The 64-bit value of the windows of ``units`` starting at ``starts`` (kind bit not set):
    binary values from bytes (uint8), text values (mixed with the window's selection hash) from
    code points (any unsigned dtype; read as uint32)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    if starts.size == 0:
        return np.empty(0, dtype=np.uint64)
    if binary:
        units = np.ascontiguousarray(units)
        if units.dtype != np.uint8:
            raise ValueError("binary windows are bytes")
        return _native.window_values(units, starts, window, True)
    return _native.window_values(np.ascontiguousarray(units, dtype=np.uint32), starts, window, False)


class ManberHasher:
    """Streams units through the Manber hash (the native core's), carrying windows across
    ``feed`` calls; ``finish`` returns (rolling, anchored): sorted distinct uint64 values without
    a view bit.  ``binary``: bytes (uint8), selected and valued as the module docstring says."""

    def __init__(self, params: ManberParams, binary: bool = False) -> None:
        self.params = params
        self._h = _native.UnitHasher(
            params.window, params.density, params.anchor_density, params.anchor_length, params.anchor_level,
            list(params.level_units), binary,
        )  # fmt: skip
        self._binary = binary

    @property
    def units(self) -> int:
        return self._h.units

    def feed(self, data: np.ndarray) -> None:
        if data.size:
            self._h.feed(np.ascontiguousarray(data, dtype=np.uint8 if self._binary else np.uint32))

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        return self._h.finish()
