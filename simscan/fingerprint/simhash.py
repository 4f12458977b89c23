"""64-bit simhash (Charikar 2002; Manku, Jain, Das Sarma 2007; DESIGN.md section 3).

Features: the file's distinct Manber fingerprints (rolling and anchored), each weight 1.
They are 64-bit hashes of 50-unit windows of the *normalised* text (or raw bytes), so the
simhash inherits the encoding, case and white-space independence of the fingerprints, and
works the same for binary files.  With set features the expected Hamming distance follows
the cosine of the two sets, which tracks their resemblance.  Like every simhash it is noisy
for short files (few features): scores never rest on it alone.
"""

from __future__ import annotations

import numpy as np


def simhash(features: np.ndarray) -> int:
    """Simhash of distinct uint64 ``features`` as an unsigned int in [0, 2^64).

    Bit i of the result is 1 where more features have bit i set than clear (ties: 0).
    An empty feature set gives 0.
    """
    n = features.size
    if n == 0:
        return 0
    bits = np.unpackbits(features.astype("<u8").view(np.uint8).reshape(n, 8), axis=1, bitorder="little")
    ones = bits.sum(axis=0, dtype=np.int64)  # per bit, little-endian bit order within the uint64
    out = np.packbits(ones * 2 > n, bitorder="little")
    return int.from_bytes(out.tobytes(), "little")


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()
