"""Which fingerprints enter the inverted index (``postings``): a value-sampled subset.

Why a subset.  A text file of ~8.7 KB has ~216 fingerprints (133 rolling + 83 anchored with
the default parameters), so 100,000 files have ~21.6 M.  Measured here (SQLite 3.40, WAL,
synchronous=NORMAL, batches of 2,000 files sorted by fingerprint): a WITHOUT ROWID
``(fp, file_id)`` B-tree takes ~750,000 rows/s and 17.6 bytes/row; a rowid table plus an index
built afterwards ~820,000 rows/s overall and 37 bytes/row.  Posting every fingerprint would
cost ~29 s of writer time for 100 k files - three times the whole scan budget (12,000 files/s)
- and ~5 GB for 1 M files.

Sampling by value (the same idea as Manber's "approach 2", and a *consistent* sample:
Broder 1997, MMDS ch. 3): a fingerprint is posted when the top :data:`DEFAULT_SHIFT` bits of
``value * K`` (K odd, Knuth's 64-bit golden-ratio constant, so the decision does not reuse the
bits that the fingerprinter's own selection or the rolling/anchored kind bit already fixed) are
zero.  Two files that share a passage share the *same* posted values for it, so the lookup
finds them; a pair sharing ``m`` fingerprints is missed with probability ``(1 - 2^-s)^m``:
with s = 3 that is 0.03 % for m = 60 (a lightly edited 8 KB file shares more) and 3.5 % for
m = 25 (an excerpt of ~1,000 characters).  Scores are never computed from postings: callers
fetch the full fingerprint sets (:meth:`Index.fingerprints`) of the candidates.

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
