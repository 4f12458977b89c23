"""64-bit simhash (Charikar 2002; Manku, Jain, Das Sarma 2007; DESIGN.md section 3).

Features: the file's distinct Manber fingerprints (rolling and anchored), each weight 1.
They are 64-bit hashes of 50-unit windows of the *normalised* text (or raw bytes), so the
simhash inherits the encoding, case and white-space independence of the fingerprints,
works the same for binary files, and costs nothing more than one bit count over values
already computed.  With set features the expected Hamming distance follows the cosine of
the two sets, which tracks their resemblance.

Measured on the evaluation corpus (``benchmarks/fingerprint_tuning.py``; recall at <=1%
false positives on ``unrelated`` for exact / near_duplicate / similar / plagiarism_light /
plagiarism_heavy, then ROC AUC): these features 1.00 1.00 0.79 0.34 0.06 (AUC 1.00 1.00
0.94 0.80 0.64; ALGORITHM_VERSION 8, whose dense anchored fingerprints of short texts give
their simhash more features; version 7: 1.00 1.00 0.49 0.11 0.01); every 50-unit window
1.00 1.00 0.76 0.26 0.06; word tf 1.00 1.00 0.65 0.27 0.05; distinct word 3-grams 1.00 1.00
0.81 0.34 0.17 (AUC 0.98 / 0.93 / 0.85).  Word
3-grams separate edited versions better, but need a tokenising pass, a sort and a bit count
over one feature per word (about +40% on the text path), and pairs are scored on the
fingerprint sets anyway: the simhash serves as a cheap near-duplicate signal, where these
features already reach 1.00 on exact and near duplicates.  Like every simhash it is noisy
for short files (few features): scores never rest on it alone.
"""

from __future__ import annotations

import numpy as np


def simhash(features: np.ndarray) -> int:
    """Simhash of distinct uint64 ``features`` as an unsigned int in [0, 2^64).

    Bit i of the result is 1 where more features have bit i set than clear (ties: 0).
    An empty feature set gives 0.
    """
    n = int(features.size)
    if n == 0:
        return 0
    return int(_pack(bit_counts(features)[None, :], np.array([n]))[0])


# _BITS[v, k]: bit k of the byte value v.
_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.int64)


# _NIBBLE_BITS[v, k]: bit k of the nibble value v.
_NIBBLE_BITS = _BITS[:16, :4].copy()


def bit_counts(features: np.ndarray) -> np.ndarray:
    """For each of the 64 bit positions (little-endian), how many features have it set.

    One histogram of byte values per byte position (8 bincounts), then a 256 x 8 product:
    a few passes over the features instead of unpacking 64 bits each.
    """
    b = np.ascontiguousarray(features, dtype="<u8").view(np.uint8).reshape(-1, 8)
    out = np.empty(64, dtype=np.int64)
    for k in range(8):
        hist = np.bincount(b[:, k], minlength=256)
        out[8 * k : 8 * k + 8] = hist @ _BITS
    return out


def _pack(counts: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Rows of 64 bit counts and feature counts to simhash values (uint64)."""
    bits = (counts * 2 > n[:, None]).astype(np.uint8)
    return np.packbits(bits, axis=1, bitorder="little").view("<u8")[:, 0]


def simhash_segments(features: np.ndarray, owner: np.ndarray, k: int) -> np.ndarray:
    """Simhash of each of ``k`` feature sets given as ``features`` with ``owner`` (ints in
    [0, k), any order): the same values as :func:`simhash` per set, in a few vectorised
    passes (per byte position, one histogram of (owner, byte value) pairs)."""
    out = np.zeros(k, dtype=np.uint64)
    if features.size == 0:
        return out
    b = np.ascontiguousarray(features, dtype="<u8").view(np.uint8).reshape(-1, 8)
    key_base = np.asarray(owner, dtype=np.int64) * 16
    counts = np.empty((k, 64), dtype=np.int64)
    for j in range(8):
        col = b[:, j]
        for half, vals in ((0, col & 15), (4, col >> 4)):
            # Histogram of (owner, nibble) pairs: small tables (k x 16), so it stays cheap
            # for thousands of files at once.
            hist = np.bincount(key_base + vals, minlength=k * 16).reshape(k, 16)
            counts[:, 8 * j + half : 8 * j + half + 4] = hist @ _NIBBLE_BITS
    n = np.bincount(owner, minlength=k)
    packed = _pack(counts, n)
    has = n > 0
    out[has] = packed[has]
    return out


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()
