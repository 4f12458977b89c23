"""Set sizes of fingerprint sets at a pair's level (nested anchored fingerprints).

A text of ``u`` normalised units keeps the anchored windows of level >= ``t(u)``
(``FingerprintParams.text_level``; coarser for larger files, see ``simscan.fingerprint.rolling``).
The levels are nested, so a pair (A, B) is compared at ``t = max(t(u_a), t(u_b))``: a value shared
by both stored sets has level >= t automatically, so |A ∩ B| is the stored intersection, while
each set size counts only its rolling values and its anchored values of level >= t.  Scores
are then exact set arithmetic on two samples taken by the same rule.  Binary files (sparse
anchors) and rolling values count at every level.
"""

from __future__ import annotations

import numpy as np

from simscan.fingerprint import DEFAULT_PARAMS, FingerprintParams
from simscan.fingerprint.rolling import anchored_levels

_TOP = np.uint64(1 << 63)


def file_levels(units: np.ndarray, is_text: np.ndarray, params: FingerprintParams = DEFAULT_PARAMS) -> np.ndarray:
    """Level of each file from its normalised unit count (int64; 0 for binary files)."""
    return np.where(np.asarray(is_text, dtype=bool), params.text_levels(units), 0).astype(np.int64)


def value_levels(values: np.ndarray, text_owner: np.ndarray) -> np.ndarray:
    """Level of each stored value (int8, one byte per value: these arrays are as long as all
    fingerprints of an index): its anchored level for anchored values of text files, 32
    (counts at every level) for rolling values and binary files' values."""
    values = np.asarray(values, dtype=np.uint64)
    out = np.full(values.size, 32, np.int8)
    nested = ((values & _TOP) != 0) & np.asarray(text_owner, dtype=bool)
    if nested.any():
        out[nested] = anchored_levels(values[nested])
    return out


def level_counts(
    value_lv: np.ndarray,
    owner: np.ndarray,
    n: int,
    max_level: int = DEFAULT_PARAMS.max_level,
    keep: np.ndarray | None = None,
) -> np.ndarray:
    """(n, max_level + 1) int64: row f, column t = number of f's values with level >= t (of the
    values where ``keep`` is True, when given).  The keys are built in one array, int32 while
    they fit, with left-out values sent to a spare bin: a pair search calls this on every
    fingerprint of the index, and subsets or int64 temporaries cost hundreds of MB there."""
    width = max_level + 1
    dt = np.int32 if (n + 1) * width < 2**31 else np.int64
    key = np.asarray(owner).astype(dt)
    key *= width
    key += np.minimum(np.asarray(value_lv), max_level)
    if keep is not None:
        key[~keep] = n * width
    hist = np.bincount(key, minlength=(n + 1) * width)[: n * width]
    hist = hist.reshape(n, width)
    return np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]


def size_at(values: np.ndarray, is_text: bool, level: int) -> int:
    """Size of one file's stored set ``values`` at ``level``."""
    lv = value_levels(values, np.full(np.asarray(values).size, is_text))
    return int(np.count_nonzero(lv >= level))
