"""Whole-file and partial checksums (xxHash XXH3).

The partial checksum lets exact duplicates be found by size, then partial, then full
checksum: it hashes the size and ``SAMPLE`` bytes from the head and the tail, so two files
of one size that differ near either end are told apart without reading them whole.
"""

from __future__ import annotations

import xxhash

PARTIAL_SAMPLE = 4096


def partial_checksum(size: int, head: bytes, tail: bytes) -> int:
    """XXH3-64 of (size as 8 little-endian bytes, head, tail), as a signed 64-bit int.

    ``head`` is the first ``min(size, PARTIAL_SAMPLE)`` bytes; ``tail`` the last
    ``PARTIAL_SAMPLE`` bytes when the file is longer than two samples, else the bytes after
    the head (so no byte is counted twice).  Signed so that SQLite can store it as INTEGER.
    """
    h = xxhash.xxh3_64(size.to_bytes(8, "little"))
    h.update(head)
    h.update(tail)
    return to_signed64(h.intdigest())


def tail_offset(size: int) -> int:
    """Where the tail sample starts for a file of ``size`` bytes."""
    return max(min(size, PARTIAL_SAMPLE), size - PARTIAL_SAMPLE)


def to_signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def to_unsigned64(v: int) -> int:
    return v + (1 << 64) if v < 0 else v
