"""The inverted-index half of the pair search, split into partitions of the value space
(``core.shared_counts``), against a plain per-value reference; and whole pair searches with
tiny partitions against the one-partition search."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from similarity_support import bounded_cutoff, lengths_cutoff, words

from simscan.similarity import SimilarityParams, core
from simscan.similarity.core import compute_pair_arrays, shared_counts
from simscan.similarity.levels import level_counts, value_levels
from simscan.similarity.memory import table_from_paths


def _random_csr(rng: random.Random, n_files: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, values, row_text): sorted distinct values per file, drawn from a pool so that
    posting lists of every length occur (a few values held by most files), anchored values of
    every level included."""
    pool = [rng.getrandbits(63) for _ in range(400)]
    pool += [(1 << 63) | rng.getrandbits(63) for _ in range(200)]
    popular = pool[:6]
    offsets = [0]
    values: list[int] = []
    for _ in range(n_files):
        k = rng.randrange(0, 60)
        s = set(rng.sample(pool, k)) | ({v for v in popular if rng.random() < 0.8})
        values += sorted(s)
        offsets.append(len(values))
    row_text = np.array([rng.random() < 0.8 for _ in range(n_files)])
    return np.array(offsets, np.int64), np.array(values, np.uint64), row_text


def _reference(offsets, values, rows, row_text, params):
    """Plain: per value its holders; the cut-off lowered by the work and the bound on distinct pairs;
    pairs counted one by one."""
    holders: dict[int, list[int]] = defaultdict(list)
    for pos, r in enumerate(rows.tolist()):
        for v in values[offsets[r] : offsets[r + 1]].tolist():
            holders[v].append(pos)
    n = rows.size

    def shared_at(cut: int) -> dict[int, int]:
        shared: dict[int, int] = defaultdict(int)
        for h in holders.values():
            if len(h) <= cut:
                for i in range(len(h)):
                    for j in range(i + 1, len(h)):
                        shared[min(h[i], h[j]) * n + max(h[i], h[j])] += 1
        return shared

    cut = bounded_cutoff(np.array([len(h) for h in holders.values()], np.int64), params.common_cutoff(n), params,
                         lambda c: len(shared_at(c)))
    shared = shared_at(cut)
    kept_vals, kept_own = [], []
    for v, h in holders.items():
        if len(h) <= cut:
            kept_vals += [v] * len(h)
            kept_own += h
    all_vals = np.concatenate([values[offsets[r] : offsets[r + 1]] for r in rows.tolist()] or [np.zeros(0, np.uint64)])
    own = np.repeat(np.arange(n), [offsets[r + 1] - offsets[r] for r in rows.tolist()])
    full = level_counts(value_levels(all_vals, row_text[own]), own, n)
    kv = np.array(kept_vals, np.uint64)
    ko = np.array(kept_own, np.int64)
    kept = level_counts(value_levels(kv, row_text[ko]), ko, n)
    keys = np.array(sorted(shared), np.int64)
    return full, kept, keys, np.array([shared[k] for k in keys.tolist()], np.int64)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("partition_values", [1 << 21, 64, 7])
def test_shared_counts_equal_a_plain_reference(monkeypatch, seed: int, partition_values: int) -> None:
    rng = random.Random(seed)
    offsets, values, row_text = _random_csr(rng, rng.randrange(2, 70))
    n = offsets.size - 1
    rows = np.array(sorted(rng.sample(range(n), rng.randrange(1, n + 1))), np.int64)
    if seed % 3 == 2:
        rows = rows[::-1].copy()  # rows in any order (not a mask of the CSR)
    # The bounds: none, or small enough to lower the cut-off (the second pass), by the work (incidences)
    # or by the distinct pairs.
    work, budget = rng.choice([(1 << 28, 1 << 23), (1 << 28, 40), (1 << 28, 200), (40, 40), (300, 100), (100, 10)])
    params = SimilarityParams(common_min_df=rng.choice([3, 8, 50]), pair_work=work, pair_budget=budget)
    monkeypatch.setattr(core, "PARTITION_VALUES", partition_values)
    if seed % 2:
        monkeypatch.setattr(core, "FOLD_KEYS", 5)  # the pairs' counts merged as they come
    full, kept, keys, cnts = shared_counts(offsets, values, rows, row_text[rows], params)
    w_full, w_kept, w_keys, w_cnts = _reference(offsets, values, rows, row_text[rows], params)
    assert np.array_equal(full, w_full) and np.array_equal(kept, w_kept)
    assert np.array_equal(keys, w_keys) and np.array_equal(cnts, w_cnts)


def test_partitions_are_a_power_of_two_of_bounded_size(monkeypatch) -> None:
    monkeypatch.setattr(core, "PARTITION_VALUES", 100)
    assert [core._partitions(t) for t in (0, 100, 101, 400, 401, 10**9)] == [1, 1, 2, 4, 8, 128]


def test_whole_search_with_tiny_partitions_equals_one_partition(tmp_path: Path, monkeypatch) -> None:
    """Real files: shared passages, copies, a header above a small budget."""
    root = tmp_path / "t"
    root.mkdir()
    header = words(70, 250)
    passages = [words(100 + i, 120) for i in range(6)]
    for k in range(14):
        body = " ".join(passages[(k + j) % 6] for j in range(1 + k % 3)) + " " + words(k, 80)
        (root / f"f{k:02d}.txt").write_text((header + "\n" if k % 2 else "") + body)
    (root / "copy.txt").write_bytes((root / "f03.txt").read_bytes())
    t, ids, off, vals = table_from_paths(sorted(root.iterdir()))
    for params in (SimilarityParams(), SimilarityParams(pair_budget=60), SimilarityParams(common_min_df=4)):
        want = compute_pair_arrays(t, ids, off, vals, min_similarity=0, params=params)
        monkeypatch.setattr(core, "PARTITION_VALUES", 16)
        got = compute_pair_arrays(t, ids, off, vals, min_similarity=0, params=params)
        monkeypatch.undo()

        def rows(pa):
            return sorted(zip(*(getattr(pa, f).tolist() for f in pa.__slots__)))

        assert rows(got) == rows(want)
        assert want.a.size >= 5  # copies, shared passages (and the header unless dropped)


def test_row_counts_and_split_csr_equal_plain_loops() -> None:
    """``views.row_counts`` (empty rows anywhere) and ``views.split_csr`` (copying, or compacting
    the text view in place in slices) against per-row loops."""
    from types import SimpleNamespace

    from simscan.fingerprint import views as fv
    from simscan.similarity import views

    rng = np.random.default_rng(5)
    for trial in range(6):
        lens = rng.integers(0, 5, 40)
        lens[:2] = 0 if trial % 2 else lens[:2]
        lens[-3:] = 0 if trial % 3 == 0 else lens[-3:]
        offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
        is_text = rng.random(lens.size) < 0.8
        raw = rng.integers(0, 2**63, int(offsets[-1]), dtype=np.uint64)
        # Tag a random half of each text file's values with the code view.
        own = np.repeat(np.arange(lens.size), lens)
        code_pick = (rng.random(raw.size) < 0.5) & is_text[own]
        values = np.where(code_pick, fv.tag(raw, fv.CODE), fv.tag(raw, fv.TEXT))
        mask = rng.random(raw.size) < 0.3
        want = [int(mask[offsets[r] : offsets[r + 1]].sum()) for r in range(lens.size)]
        assert views.row_counts(mask, offsets).tolist() == want
        files = SimpleNamespace(ids=np.arange(lens.size) + 100, is_text=is_text)
        ids = files.ids.copy()
        views_of = fv.value_views(values, is_text[own])
        plain = [
            [values[offsets[r] : offsets[r + 1]][views_of[offsets[r] : offsets[r + 1]] == w].tolist()
             for r in range(lens.size)]
            for w in (fv.TEXT, fv.CODE)
        ]
        for consume in (False, True):
            monkey_slice = views._COMPACT_SLICE
            views._COMPACT_SLICE = 7  # many slices
            try:
                (t_off, t_val, _), code = views.split_csr(files, ids, offsets, values.copy(), consume=consume)
            finally:
                views._COMPACT_SLICE = monkey_slice
            assert code is not None
            for (off, val), rows in zip(((t_off, t_val), code[:2]), plain):
                assert [val[off[r] : off[r + 1]].tolist() for r in range(lens.size)] == rows


def test_budget_cutoff_equals_a_plain_search() -> None:
    """The largest cut-off whose lists make at most the budget's pairs, by trying every one."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        lengths = rng.integers(1, 90, rng.integers(0, 40))
        cutoff, budget = int(rng.integers(2, 80)), int(rng.integers(0, 3000))

        def pairs(c: int, lengths: np.ndarray = lengths) -> int:
            return sum(int(x) * (int(x) - 1) // 2 for x in lengths if 2 <= x <= c)

        want = cutoff if pairs(cutoff) <= budget else max([2] + [c for c in range(2, cutoff) if pairs(c) <= budget])
        # (between lengths the count does not change: the plain answer is a length present, or 2)
        present = [c for c in range(2, cutoff + 1) if c in set(lengths.tolist())]
        if want != cutoff:
            want = max([2] + [c for c in present if pairs(c) <= budget])
        assert lengths_cutoff(lengths, cutoff, budget) == want


@pytest.mark.parametrize("seed", range(12))
def test_one_pass_with_held_runs_equals_two_passes(monkeypatch, seed: int) -> None:
    """``count_runs`` pairs up to a provisional cut-off and counts the held runs again at the end; it
    gives what pairing every partition with the final cut-off gives (``provisional=False``: pairs up
    to the cut-off, a second pass when they exceed the budget), the common and frequent values too,
    whether the held runs suffice, are too many (``HELD_VALUES``) or the final cut-off falls below the
    provisional one; and the common and frequent values are those of the final cut-off."""
    from simscan.similarity.evidence import frequent_cutoff

    rng = random.Random(1000 + seed)
    offsets, values, row_text = _random_csr(rng, rng.randrange(20, 90))
    n = offsets.size - 1
    own = np.repeat(np.arange(n), np.diff(offsets))
    lv = value_levels(values, row_text[own]).view(np.uint8)
    parts = rng.choice([2, 4, 8])
    pid = core._partition_ids(values, parts)
    split = [(values[pid == p], own[pid == p].astype(np.uint32), lv[pid == p]) for p in range(parts)]
    row_level = np.array([rng.randrange(0, 3) for _ in range(n)], np.uint8)
    if seed % 4 == 3:
        monkeypatch.setattr(core, "HELD_VALUES", 5)
    # Plainly, the distinct pairs the values held by at most c files make (where both levels reach).
    holders: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for v, o, le in zip(values.tolist(), own.tolist(), lv.tolist(), strict=True):
        holders[v].append((o, le))

    def distinct(c: int) -> int:
        return len({(min(a, b), max(a, b)) for h in holders.values() if len(h) <= c
                    for i, (a, la) in enumerate(h) for b, lb in h[i + 1 :]
                    if min(la, lb) >= max(row_level[a], row_level[b])})

    # Bounds by the work (incidences), by the distinct pairs, by both, and none.
    for work, budget in ((1 << 28, 1 << 23), (1 << 28, 2000), (1 << 28, 400), (2000, 400), (400, 100), (1 << 28, 30),
                         (300, 30), (3000, 2000)):
        params = SimilarityParams(common_min_df=rng.choice([8, 30, 50]), pair_work=work, pair_budget=budget)
        got = []
        for provisional in (True, False):
            rare: list[np.ndarray] = []
            out = core.count_runs(split.__getitem__, parts, n, params, row_level=row_level, rare=rare,
                                  provisional=provisional)
            got.append((*out, *rare))
        for a, b in zip(*got):
            assert np.array_equal(a, b)
        # The rare values against the final cut-off: a value held by more files is common.
        df: dict[int, int] = defaultdict(int)
        for v in values.tolist():
            df[v] += 1
        cut = bounded_cutoff(np.array(list(df.values()), np.int64), params.common_cutoff(n), params, distinct)
        assert got[0][6].tolist() == [cut, params.common_cutoff(n)]
        common = sorted(v for v, d in df.items() if d > cut)
        frequent = sorted(v for v, d in df.items() if frequent_cutoff(cut) < d <= cut)
        assert got[0][4].tolist() == common and got[0][5].tolist() == frequent


def test_pairs_made_on_threads_equal_one_thread_and_a_plain_count() -> None:
    """A partition big enough that the native count shares its pairs among threads (>= 2^18
    incidences): the same keys and counts on 1, 2 and 3 threads, and as counted plainly."""
    from simscan import _native

    rng = np.random.default_rng(7)
    n, runs, per = 2000, 3000, 30  # 3,000 values, each held by 30 files: 1.3 M pair incidences
    own = np.concatenate([rng.choice(n, per, replace=False) for _ in range(runs)]).astype(np.uint32)
    values = np.repeat(rng.integers(1, 2**62, runs, dtype=np.uint64), per)
    shuffle = rng.permutation(values.size)
    values, own = values[shuffle], own[shuffle]
    level = np.zeros(values.size, np.uint8)
    h = own.reshape(-1)  # plain: every pair of holders of each value
    by_value = np.argsort(values, kind="stable")
    holders = h[by_value].reshape(runs, per).astype(np.int64)
    i, j = np.triu_indices(per, 1)
    lo, hi = np.minimum(holders[:, i], holders[:, j]), np.maximum(holders[:, i], holders[:, j])
    want_keys, want_counts = np.unique((lo * n + hi).ravel(), return_counts=True)
    for threads in (1, 2, 3):
        got = _native.partition_counts(values, own, level, np.empty(0, np.uint8), n, 1000, 1000, 2, True, 1,
                                       threads=threads)
        assert got[5] == runs * per * (per - 1) // 2
        assert np.array_equal(got[3], want_keys) and np.array_equal(got[4], want_counts)


def test_provisional_cutoff_is_the_lowest_between_both_estimates_whose_held_entries_fit() -> None:
    """Plainly: among the cut-offs from the budget's estimate with the margin (half) to without it, the
    lowest whose held entries (runs above it, up to the cut-off: length x count) fit; else the highest."""
    from simscan.similarity.core import budget_cutoff, provisional_cutoff

    rng = np.random.default_rng(11)
    for _ in range(300):
        cutoff = int(rng.integers(2, 40))
        hist = np.zeros(cutoff + 2, np.int64)
        hist[2:] = rng.integers(0, 50, cutoff) * (rng.random(cutoff) < 0.5)
        parts, budget, held = int(rng.integers(1, 300)), int(rng.integers(10, 10**6)), int(rng.integers(0, 10**5))
        est = hist * parts
        low, high = budget_cutoff(est, cutoff, budget // 2), budget_cutoff(est, cutoff, budget)
        fit = [c for c in range(low, high + 1) if sum(int(est[L]) * L for L in range(c + 1, cutoff + 1)) <= held]
        want = high if high <= low else (fit[0] if fit else high)
        assert provisional_cutoff(hist, parts, cutoff, budget, held) == want


def test_held_runs_counted_again_give_no_more_pairs_than_the_bound(monkeypatch) -> None:
    """The runs held above the provisional cut-off are counted again at the final one: that count, as
    every partition's, stops at the bound on distinct pairs (memory), and the cut-off then falls to
    the bound's (the plain rule).  Partition 0's two runs of 10 files (90 incidences, 90 distinct
    pairs) make its estimate lower the provisional cut-off to 2; the work (100) keeps the cut-off
    above 10, the bound (50) does not."""
    from simscan import _native

    n = 26
    split = [(np.repeat(np.array([11, 12], np.uint64), 10), np.arange(20, dtype=np.uint32)),
             (np.repeat(np.array([21, 22, 23], np.uint64), 2), np.arange(20, 26, dtype=np.uint32))]
    split = [(v, o, np.zeros(v.size, np.uint8)) for v, o in split]
    params = SimilarityParams(common_min_df=50, pair_work=100, pair_budget=50)
    assert core.provisional_cutoff(np.bincount([10, 10], minlength=52), 2, 50, 100) == 2
    given = []
    native = _native.partition_counts

    def counted(*args, **kwargs):
        out = native(*args, **kwargs)
        given.append(out[3].size)
        return out

    monkeypatch.setattr(core._native, "partition_counts", counted)
    rare: list[np.ndarray] = []
    _, _, keys, counts = core.count_runs(split.__getitem__, 2, n, params, rare=rare)
    assert rare[2].tolist() == [2, 50]  # (the bound's cut-off: 90 distinct pairs at the work's)
    assert keys.tolist() == [20 * n + 21, 22 * n + 23, 24 * n + 25] and counts.tolist() == [1, 1, 1]
    assert max(given) <= params.pair_budget


def test_merged_batches_equal_a_plain_sum() -> None:
    """``core.merge_counts`` (a native k-way merge of the pair search's batches) gives the sorted distinct keys
    with each key's counts summed, as a plain dict does, and empties the lists; a batch out of order is refused."""
    rng = np.random.default_rng(7)
    for case in range(200):
        keys, counts, want = [], [], defaultdict(int)
        for _ in range(int(rng.integers(0, 7))):
            k = np.unique(rng.integers(0, int(rng.integers(1, 400)), int(rng.integers(0, 300)))).astype(np.int64)
            c = rng.integers(1, 50, k.size).astype(np.int32)
            for key, n in zip(k.tolist(), c.tolist()):
                want[key] += n
            keys.append(k)
            counts.append(c)
        got_k, got_c = core.merge_counts(keys, counts)
        assert keys == [] and counts == []
        assert got_k.dtype == np.int64 and got_c.dtype == np.int32
        assert list(zip(got_k.tolist(), got_c.tolist())) == sorted(want.items()), case
    with pytest.raises(ValueError):
        core.merge_counts([np.array([3, 1], np.int64), np.array([2], np.int64)],
                          [np.ones(2, np.int32), np.ones(1, np.int32)])
