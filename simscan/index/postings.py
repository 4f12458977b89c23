"""Which fingerprints enter the inverted index (``postings``): a value-sampled subset.

Why a subset.  A text file of ~8.9 KB has ~186 fingerprints (109 rolling + 77 anchored with
the fingerprinter's defaults of ALGORITHM_VERSION 3, ~21 per KB), so 100,000 such files have
~18.6 M.  Measured here (SQLite 3.40, WAL, synchronous=NORMAL): a WITHOUT ROWID ``(fp, file_id)``
B-tree costs ~1.5 us and 17.6 bytes per posting even when filled in one sorted pass (see the
``unposted`` table in :mod:`simscan.index.schema`), so posting everything would cost ~28 s of
writer time for 100 k files - three times the whole scan budget (12,000 files/s) - and ~3 GB for
1 M files.

Sampling by value (the same idea as Manber's "approach 2", and a *consistent* sample:
Broder 1997, MMDS ch. 3): a fingerprint is posted when the top :data:`DEFAULT_SHIFT` bits of
``value * K`` (K odd, Knuth's 64-bit golden-ratio constant, so the decision does not reuse the
bits that the fingerprinter's own selection or the rolling/anchored kind bit already fixed) are
zero.  Two files that share a passage share the *same* posted values for it, so the lookup
finds them; a pair sharing ``m`` fingerprints is missed with probability ``(1 - 2^-s)^m``.
A 1,000-character excerpt carries ~20 fingerprints: missed 6.9 % of the time with s = 3
(0.3 % with s = 2 at twice the cost, 27 % with s = 4); a lightly edited 8 KB file shares
over 100 and is never missed.  s = 3 costs ~23 postings (~35 us) per 8.9 KB file.  Scores are
never computed from postings: callers fetch the full fingerprint sets
(:meth:`Index.fingerprints`) of the candidates.

The shift is stored in the ``meta`` table; an index built with another shift has its postings
rebuilt on the next writable open.
"""

from __future__ import annotations

import numpy as np

#: Post 1 fingerprint value in 2^DEFAULT_SHIFT.  3: see the module docstring for the measurements.
DEFAULT_SHIFT = 3

_K = np.uint64(0x9E3779B97F4A7C15)


def posted_mask(values: np.ndarray, shift: int = DEFAULT_SHIFT) -> np.ndarray:
    """Boolean mask over uint64 ``values``: True for those that the inverted index holds."""
    v = np.asarray(values, dtype=np.uint64)
    if shift <= 0:
        return np.ones(v.shape, dtype=bool)
    with np.errstate(over="ignore"):
        mixed = v * _K  # wraps mod 2^64 on purpose
    return (mixed >> np.uint64(64 - shift)) == 0


def posted(values: np.ndarray, shift: int = DEFAULT_SHIFT) -> np.ndarray:
    """The posted subset of ``values`` (same order)."""
    v = np.asarray(values, dtype=np.uint64)
    return v[posted_mask(v, shift)]
