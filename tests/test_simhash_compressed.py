"""Simhash tables kept for look-ups (simscan.similarity.simhash_compressed): compressed tables give
back exactly what they were built from and answer every look-up within k <= 3 exactly like the raw
tables, a brute-force scan of every value, and the pair search's self-join (``simhash_pairs``)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from simscan.fingerprint import fingerprint_bytes
from simscan.similarity.simhash_compressed import SimhashTables
from simscan.similarity.simhash_tables import _blocks, simhash_pairs
from tests.similarity_support import words


def rotl(v: np.ndarray, r: int) -> np.ndarray:
    r %= 64
    if r == 0:
        return v.copy()
    return (v << np.uint64(r)) | (v >> np.uint64(64 - r))


def popcount(x: np.ndarray) -> np.ndarray:
    return np.array([int(a).bit_count() for a in x], dtype=np.int64)


@pytest.fixture(scope="module")
def values() -> np.ndarray:
    """Real simhashes of texts and of edited versions of them (near neighbours), random values,
    duplicates, and the extremes of the range."""
    rng = np.random.default_rng(3)
    real = []
    for i in range(150):
        text = words(500 + i, 400)
        real.append(fingerprint_bytes(text.encode()).simhash)
        w = text.split()
        w[200:204] = ["edited", "words", "here", "now"]
        real.append(fingerprint_bytes(" ".join(w).encode()).simhash)
    rand = rng.integers(0, 2**64 - 1, 3000, dtype=np.uint64, endpoint=True)
    # Planted neighbours of random values at distance 1..3 (what a look-up must find).
    near = rand[:600].copy()
    for d in range(3):
        near[d * 200 :] ^= np.uint64(1) << rng.integers(0, 64, near.size - d * 200).astype(np.uint64)
    edge = np.array([0, 0, 1, 2**64 - 1, 2**64 - 2, 2**63, 2**63 - 1], dtype=np.uint64)
    v = np.concatenate((np.array(real, dtype=np.uint64), rand, near, rand[:50], edge))
    return rng.permutation(v)


@pytest.mark.parametrize("block", [0, 1, 7, 64, 100_000])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_tables_round_trip(values, k, block):
    t = SimhashTables(values, k, block)
    assert len(t) == values.size
    for i, (shift, width) in enumerate(_blocks(k)):
        assert np.array_equal(t.table(i), np.sort(rotl(values, 64 - shift - width))), (k, block, i)


def brute_force(values: np.ndarray, q: int, k: int) -> np.ndarray:
    return np.sort(values[popcount(values ^ np.uint64(q)) <= k])


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_lookups_equal_raw_tables_and_brute_force(values, k):
    rng = np.random.default_rng(k)
    queries = np.concatenate((values[:300], rng.integers(0, 2**64 - 1, 100, dtype=np.uint64, endpoint=True)))
    flips = rng.integers(0, 64, (queries.size, 3))
    for c in range(3):  # 0-3 bits of each query flipped
        queries ^= np.where(np.arange(queries.size) % 4 > c, np.uint64(1) << flips[:, c].astype(np.uint64), np.uint64(0))
    raw_off, raw_val = SimhashTables(values, k, 0).lookup(queries)
    for block in (1, 16, 64, 4096):
        off, val = SimhashTables(values, k, block).lookup(queries)
        assert np.array_equal(off, raw_off) and np.array_equal(val, raw_val), block
    for i, q in enumerate(queries.tolist()):
        want = brute_force(values, q, k)
        assert np.array_equal(raw_val[raw_off[i] : raw_off[i + 1]], want), (k, i)
        if i < 300 and i % 4 <= k:  # a stored value with at most k bits flipped: found, at least itself
            assert want.size >= 1


def test_lookups_of_every_value_give_the_self_join_pairs(values):
    """Looking every stored value up finds the pairs ``simhash_pairs`` (the pair search's simhash
    candidates) reports, each as often."""
    k = 3
    i, j, d = simhash_pairs(values, k)
    want = Counter(zip(np.minimum(values[i], values[j]).tolist(), np.maximum(values[i], values[j]).tolist()))
    assert len(want) > 500
    uniq, mult = np.unique(values, return_counts=True)
    off, found = SimhashTables(values, k).lookup(uniq)
    got: Counter = Counter()
    for a, m, lo, hi in zip(uniq.tolist(), mult.tolist(), off[:-1].tolist(), off[1:].tolist()):
        for b, n in Counter(found[lo:hi].tolist()).items():
            if b == a:
                assert n == m
                if m > 1:
                    got[(a, a)] += m * (m - 1) // 2
            elif a < b:
                got[(a, b)] += m * n
    assert got == want
    assert np.all(popcount(values[i] ^ values[j]) == d)


def test_compression_saves_more_as_tables_grow():
    rng = np.random.default_rng(11)
    per_value = {}
    for n in (10_000, 200_000):
        v = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
        raw, packed = SimhashTables(v, 3, 0), SimhashTables(v, 3, 64)
        directories = 4 * 4 * (2 ** int(np.log2(n // 16)) + 1)  # a uint32 per prefix of ~16 entries
        assert raw.nbytes == 4 * 8 * n + directories
        per_value[n] = packed.nbytes / (4 * n)
        # ~64 - log2(n) bits of remainder, ~2-3 bits of code, 16 bytes a block of 64, the directory,
        # ~3 KB a table of code tables.
        assert per_value[n] < (64 - np.log2(n) + 4) / 8 + 16 / 64 + (directories / 4 + 3000) / n
    assert per_value[200_000] < per_value[10_000] < 8


def test_empty_and_bad_input():
    t = SimhashTables(np.empty(0, np.uint64), 3)
    off, val = t.lookup(np.array([1, 2], dtype=np.uint64))
    assert off.tolist() == [0, 0, 0] and val.size == 0
    with pytest.raises(ValueError):
        SimhashTables(np.zeros(3, np.uint64), 64)
    with pytest.raises(ValueError):
        SimhashTables(np.zeros(3, np.uint64), 3, -1)
