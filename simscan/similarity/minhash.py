"""MinHash sketches of the stored fingerprint sets and LSH banding: a candidate generator with
fixed-size sketches (issue 19; measured by ``benchmarks/sketches.py``, not used by the pair search).

**MinHash** (Broder 1997; MMDS ch. 3; DESIGN.md §2).  A file's sketch holds, for each of
``num_perm`` hash functions, the smallest hash of any value of its fingerprint set (the values
``Index.fingerprints(kind="all")`` returns, one view at a time: :func:`sketch_views`).  For two
sets A and B each entry agrees with probability J = |A∩B| / |A∪B|, independently of the others,
so the share of equal entries is a binomial estimate of J with standard error
sqrt(J(1-J)/num_perm): ±0.035 at J = 0.5 with the default 200 permutations.  The hashing runs in
the native core (``native/core/src/minhash.rs``): permutation i hashes a value v as
fmix64(v ^ seed_i), top 32 bits; a sketch is 4 bytes a permutation, 800 bytes a file.

**Set sizes turn J into simscan's scores**: with |A| and |B| known (a file's fingerprint count,
8 bytes beside its sketch), |A∩B| = J(|A| + |B|) / (1 + J), hence both containments
(:func:`estimated_scores`).  The pair search's scores are exact set arithmetic on the full sets
at a common level with common values left out (``core``); these estimates are of the whole sets.

**LSH banding** (MMDS §3.4).  The sketch is cut into ``bands`` bands of ``rows`` entries; two
files whose entries agree on a whole band become a candidate pair, which a pair of resemblance s
does with probability 1 - (1 - s^rows)^bands (:func:`candidate_probability`: an S-curve rising
near (1/bands)^(1/rows)).  :func:`optimal_bands` chooses (bands, rows) for a threshold by
minimising the weighted areas of false positives (below the threshold) and false negatives
(above it) under that curve.  A band is compared through a 64-bit hash of its entries, so two
different bands collide with probability ~2^-64.

Banding thresholds *resemblance*: a file that lies inside a much larger one (an excerpt, a
quoted answer) has a large containment and a small J, which the curve does not see.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from simscan import _native
from simscan.fingerprint import views as _fv
from simscan.similarity.arrays import pairs_in_runs, run_bounds
from simscan.similarity.views import row_counts

#: Permutations per sketch (the issue's n; DESIGN.md §2: "e.g. n = 200").
NUM_PERM = 200
#: Seed of the permutations' seeds: fixed, so sketches compare across runs and processes.
SEED = 0x5349_4D53_4341_4E21
#: A sketch entry of an empty set (the largest 32-bit hash: a non-empty set has it as a minimum with
#: probability ~2^-32 an entry).
EMPTY = np.uint32(0xFFFFFFFF)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's output function of uint64 values (a bijection; wraps)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def permutation_seeds(num_perm: int = NUM_PERM, seed: int = SEED) -> np.ndarray:
    """The ``num_perm`` seeds (uint64) of the hash functions: the SplitMix64 sequence from ``seed``."""
    with np.errstate(over="ignore"):
        states = np.uint64(seed) + _GOLDEN * np.arange(1, num_perm + 1, dtype=np.uint64)
    return _mix64(states)


def sketch(offsets: np.ndarray, values: np.ndarray, num_perm: int = NUM_PERM, seed: int = SEED) -> np.ndarray:
    """MinHash sketches (uint32, rows × ``num_perm``) of the sets of a CSR: row r is
    ``values[offsets[r]:offsets[r + 1]]`` (any order; a repeated value counts once, as in a set).
    An empty set's row is all :data:`EMPTY`.  Raises ValueError for offsets that do not ascend
    within ``values``."""
    return _native.minhash_sketch(
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.ascontiguousarray(values, dtype=np.uint64),
        permutation_seeds(num_perm, seed),
    )


def sketch_views(
    offsets: np.ndarray, values: np.ndarray, row_text: np.ndarray, num_perm: int = NUM_PERM, seed: int = SEED
) -> tuple[np.ndarray, np.ndarray | None]:
    """(text view sketches, code view sketches or None when no row has a code view) of a CSR of
    stored fingerprint sets; ``row_text``: each row is a text file (a binary file's values are all
    its text view).  Rows without a code view have an empty code sketch (all :data:`EMPTY`).  A
    text window never matches a code window, so each view is sketched apart, as it is scored."""
    offsets = np.asarray(offsets, dtype=np.int64)
    values = np.asarray(values, dtype=np.uint64)[: int(offsets[-1])]
    view = _fv.value_views(values, np.repeat(np.asarray(row_text, dtype=bool), np.diff(offsets)))
    out: list[np.ndarray | None] = []
    for v in (_fv.TEXT, _fv.CODE):
        sel = view == v
        if v == _fv.CODE and not sel.any():
            out.append(None)
            continue
        if sel.all():  # (no file has a code view: no copy of every value)
            out.append(sketch(offsets, values, num_perm, seed))
            continue
        kept = np.zeros(offsets.size, np.int64)
        np.cumsum(row_counts(sel, offsets), out=kept[1:])
        out.append(sketch(kept, values[sel], num_perm, seed))
    return out[0], out[1]


def empty_rows(sketches: np.ndarray) -> np.ndarray:
    """Rows whose set was empty (their sketch is all :data:`EMPTY`)."""
    return (sketches == EMPTY).all(axis=1)


def estimate_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Estimated resemblance (0..1) of each pair of sketch rows ``a[k]``, ``b[k]`` (2-D arrays of
    the same shape; 1-D rows for one pair): the share of equal entries; 0 when either set is empty."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    j = (a == b).mean(axis=1)
    j[empty_rows(a) | empty_rows(b)] = 0.0
    return j


def estimated_scores(
    j: np.ndarray, size_a: np.ndarray, size_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(resemblance, containment_a, containment_b) in percent from an estimated resemblance ``j``
    and the set sizes: |A∩B| = j(|A| + |B|) / (1 + j), capped at the smaller set."""
    j = np.asarray(j, dtype=np.float64)
    na, nb = np.asarray(size_a, dtype=np.float64), np.asarray(size_b, dtype=np.float64)
    inter = np.minimum(j * (na + nb) / (1.0 + j), np.minimum(na, nb))
    with np.errstate(divide="ignore", invalid="ignore"):
        ca = np.where(na > 0, 100.0 * inter / na, 0.0)
        cb = np.where(nb > 0, 100.0 * inter / nb, 0.0)
    return 100.0 * j, ca, cb


def candidate_probability(s: np.ndarray | float, bands: int | np.ndarray, rows: int | np.ndarray) -> np.ndarray:
    """Probability that a pair of resemblance ``s`` shares at least one of ``bands`` bands of
    ``rows`` entries: 1 - (1 - s^rows)^bands."""
    return 1.0 - (1.0 - np.asarray(s, dtype=np.float64) ** rows) ** bands


#: Points of each integration grid of :func:`optimal_bands`.
_GRID = 1001


def _area(s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Trapezoidal integral of each row of ``y`` over the grid ``s``."""
    return ((y[:, 1:] + y[:, :-1]) * (np.diff(s) / 2.0)).sum(axis=1)


def optimal_bands(
    threshold: float, num_perm: int = NUM_PERM, fp_weight: float = 0.5, fn_weight: float = 0.5
) -> tuple[int, int]:
    """(bands, rows), bands · rows <= ``num_perm``, for a resemblance ``threshold`` (0 < t < 1):
    the pair minimising ``fp_weight`` · (area under the S-curve on [0, t]: pairs below the
    threshold made candidates) + ``fn_weight`` · (area above it on [t, 1]: pairs above it missed).
    Ties go to the fewer permutations used."""
    if not 0.0 < threshold < 1.0:
        raise ValueError("threshold must be in (0, 1)")
    pairs = [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)]
    b = np.array([p[0] for p in pairs], dtype=np.float64)[:, None]
    r = np.array([p[1] for p in pairs], dtype=np.float64)[:, None]
    lo, hi = np.linspace(0.0, threshold, _GRID), np.linspace(threshold, 1.0, _GRID)
    fp = _area(lo, candidate_probability(lo[None, :], b, r))
    fn = _area(hi, 1.0 - candidate_probability(hi[None, :], b, r))
    err = np.round(fp_weight * fp + fn_weight * fn, 12)  # (rounded: float noise breaks no tie)
    return pairs[int(np.lexsort(((b * r)[:, 0], err))[0])]


_BAND_MUL = np.uint64(0x100000001B3)


def band_keys(sketches: np.ndarray, band: int, rows: int, take: np.ndarray | None = None) -> np.ndarray:
    """A 64-bit hash (uint64 per sketch row, or per row of ``take``) of the entries of band ``band``
    (entries ``band * rows`` .. ``band * rows + rows - 1``); equal bands give equal keys."""
    cols = sketches[:, band * rows : (band + 1) * rows]
    if take is not None:
        cols = cols[take]
    with np.errstate(over="ignore"):
        key = np.full(cols.shape[0], np.uint64(band) * _GOLDEN, dtype=np.uint64)
        for c in range(cols.shape[1]):
            key ^= cols[:, c].astype(np.uint64)
            key *= _BAND_MUL
            key = _mix64(key)
    return key


def band_pairs(
    sketches: np.ndarray, bands: int, rows: int, skip: np.ndarray | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(i, j) row pairs, i < j, that share a band, band by band in batches (a pair sharing several
    bands comes once per band).  ``skip``: rows that take no part (e.g. empty sets, which would all
    share every band)."""
    if bands * rows > sketches.shape[1]:
        raise ValueError("bands x rows exceeds the sketch's permutations")
    take = np.arange(sketches.shape[0]) if skip is None else np.flatnonzero(~np.asarray(skip, dtype=bool))
    for band in range(bands):
        key = band_keys(sketches, band, rows, take)
        order = np.argsort(key, kind="stable")
        starts, lengths = run_bounds(key[order])
        del key
        for pi, pj in pairs_in_runs(starts, lengths):
            a, b = take[order[pi]], take[order[pj]]
            yield np.minimum(a, b), np.maximum(a, b)


def lsh_candidates(
    sketches: np.ndarray, bands: int, rows: int, skip: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct candidate pairs (i, j), i < j, sorted, of :func:`band_pairs` (empty sets skipped
    always)."""
    skip = empty_rows(sketches) if skip is None else (np.asarray(skip, dtype=bool) | empty_rows(sketches))
    n = np.int64(max(1, sketches.shape[0]))
    keys = [np.unique(a.astype(np.int64) * n + b) for a, b in band_pairs(sketches, bands, rows, skip)]
    k = np.unique(np.concatenate(keys)) if keys else np.empty(0, np.int64)
    return k // n, k % n
