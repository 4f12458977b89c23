"""Pigeonhole simhash search equals brute force, including distances exactly k and k + 1."""

from __future__ import annotations

import numpy as np
import pytest

from simscan.similarity.simhash_tables import simhash_pairs


def _brute(values: np.ndarray, k: int) -> set[tuple[int, int, int]]:
    out = set()
    v = [int(x) for x in values]
    for i in range(len(v)):
        for j in range(i + 1, len(v)):
            d = (v[i] ^ v[j]).bit_count()
            if d <= k:
                out.add((i, j, d))
    return out


def _flip(rng: np.random.Generator, x: int, d: int) -> int:
    for b in rng.choice(64, size=d, replace=False):
        x ^= 1 << int(b)
    return x


@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_simhash_pairs_equal_brute_force(k: int) -> None:
    rng = np.random.default_rng(k)
    base = [int(x) for x in rng.integers(0, 2**64 - 1, 250, dtype=np.uint64, endpoint=True)]
    vals = list(base)
    # Plant neighbours at exactly k and k + 1 bits (the boundary), and a few duplicates.
    for x in base[:60]:
        vals.append(_flip(rng, x, k))
        vals.append(_flip(rng, x, k + 1))
    vals.extend(base[:5])
    # Clustered values: only low bits differ (all share the high blocks).
    vals.extend(int(base[0]) ^ int(m) for m in rng.integers(0, 16, 20))
    arr = np.array(vals, dtype=np.uint64)
    i, j, d = simhash_pairs(arr, k)
    got = set(zip(i.tolist(), j.tolist(), d.tolist()))
    assert len(got) == i.size, "no pair reported twice"
    want = _brute(arr, k)
    assert got == want
    assert any(dd == k for _, _, dd in want)
