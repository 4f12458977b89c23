"""Manber's no-overlap choice (``rolling.pick_indices``) against the plain greedy loop, on
random and adversarial candidate sets: every density, clusters of every length, long runs
of one byte, chains longer than the parallel walk, more neighbours than the gap passes."""

from __future__ import annotations

import numpy as np
import pytest

from simscan.fingerprint import rolling


def ref_pick(cands: list[int], first_allowed: int, window: int) -> list[int]:
    """Indices of the greedy chain, one candidate at a time (obviously correct)."""
    out, nxt = [], first_allowed
    for i, c in enumerate(cands):
        if c >= nxt:
            out.append(i)
            nxt = c + window
    return out


def _sets(rng: np.random.Generator, window: int) -> dict[str, np.ndarray]:
    n = 3000
    clusters, pos = [], 0
    for length in range(1, 120):  # clusters of every length, each followed by a far gap
        step = int(rng.integers(1, window + 1))
        clusters.append(pos + np.arange(length) * step)
        pos = int(clusters[-1][-1]) + window + int(rng.integers(0, 3))
    return {
        **{f"density 1/{d}": np.unique(rng.integers(0, n * d, n)) for d in (1, 2, 8, 32, 64, 256)},
        "clusters of every length": np.concatenate(clusters),
        # A run of one repeated byte makes every window a candidate: one long cluster.
        "long run": np.concatenate((np.arange(0, 20_000), np.arange(20_000 + window, 20_000 + 2 * window + 40))),
        "gaps just below and at the window": np.cumsum(rng.choice([window - 1, window], 4000)),
        "tiny gaps": np.cumsum(rng.integers(1, 3, 5000)),
        "all far": np.arange(2000) * window,
        "one near pair": np.sort(np.r_[np.arange(1500) * 2 * window, 1400 * window + 1]),
    }


@pytest.mark.parametrize("window", [2, 7, 50, 255, 3000])
def test_pick_indices_matches_greedy_loop(window: int) -> None:
    rng = np.random.default_rng(window)
    for label, cands in _sets(rng, window).items():
        cands = np.asarray(cands, dtype=np.int64)
        assert (np.diff(cands) > 0).all(), label
        for first in (0, -3, int(cands[cands.size // 3]), int(cands[cands.size // 3]) + 1, int(cands[-1]) + 1):
            expected = ref_pick(cands.tolist(), first, window)
            got = rolling.pick_indices(cands, first, window)
            assert got.tolist() == expected, (label, first)
            assert rolling.pick_non_overlapping(cands, first, window).tolist() == cands[expected].tolist()


@pytest.mark.parametrize("walk_max,passes", [(1, 1), (2, 3), (64, 2), (3, 24)])
def test_pick_indices_fallbacks(monkeypatch: pytest.MonkeyPatch, walk_max: int, passes: int) -> None:
    """Tiny limits force the binary-searched neighbours and the pointer-doubling finish on
    ordinary inputs: the result must not change."""
    monkeypatch.setattr(rolling, "_WALK_MAX", walk_max)
    monkeypatch.setattr(rolling, "_NEXT_PASSES", passes)
    rng = np.random.default_rng(walk_max * 100 + passes)
    for label, cands in _sets(rng, 50).items():
        cands = np.asarray(cands, dtype=np.int64)
        for first in (0, int(cands[cands.size // 2])):
            assert rolling.pick_indices(cands, first, 50).tolist() == ref_pick(cands.tolist(), first, 50), label


def test_pick_indices_sizes_around_the_loop_limit() -> None:
    rng = np.random.default_rng(9)
    for n in (0, 1, 2, rolling._LOOP_MAX - 1, rolling._LOOP_MAX, rolling._LOOP_MAX + 1, 5000):
        cands = np.cumsum(rng.integers(1, 60, n)).astype(np.int64)
        assert rolling.pick_indices(cands, 0, 50).tolist() == ref_pick(cands.tolist(), 0, 50), n


def test_next_indices_against_search() -> None:
    rng = np.random.default_rng(4)
    for window in (2, 50, 3000):
        for spread in (1, 3, 40, 400):
            cands = np.cumsum(rng.integers(1, spread + 1, 4000)).astype(np.int64)
            nxt = rolling._next_indices(cands, np.diff(cands), window)
            assert nxt[:-1].tolist() == np.searchsorted(cands, cands + window).tolist()
            assert nxt[-1] == cands.size


@pytest.mark.parametrize("density", [0.0, 0.001, 0.015, 0.04, 0.1, 0.5, 1.0])
def test_flatnonzero_by_words_matches_numpy(density: float) -> None:
    rng = np.random.default_rng(int(density * 1000))
    for n in (0, 1, 7, 63, 64, 65, 1000, 4097, 262_095):
        mask = rng.random(n) < density
        for claimed in (density, 0.04):  # the claimed density only picks the method
            assert rolling.sparse_flatnonzero(mask, claimed).tolist() == np.flatnonzero(mask).tolist(), (n, claimed)
        # A view that is not at the start of its buffer (unaligned words).
        if n > 9:
            assert rolling.sparse_flatnonzero(mask[3:], 0.04).tolist() == np.flatnonzero(mask[3:]).tolist()
            # A strided view (not contiguous: it cannot be read as words).
            assert rolling.sparse_flatnonzero(mask[::2], 0.04).tolist() == np.flatnonzero(mask[::2]).tolist()
