"""The columnar grouping (``group_rows`` and everything built on it) against the grouping of
simscan 0.1 kept verbatim in ``tests/grouping_reference.py``, on random pair sets: exact and
content units, ties of score, several pairs between two files, pairs naming absent files,
reference roots, several paths of one file (same device and inode)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from grouping_reference import reference_group_pairs
from simscan.index import FileTable
from simscan.similarity import Pair, group_pairs
from simscan.similarity.core import PairArrays, sorted_rounded, to_pairs
from simscan.similarity.grouping import group_pair_arrays, groups_from_arrays
from simscan.similarity.types import KINDS


def random_table(rng: random.Random, n: int) -> FileTable:
    """n files in a few folders; some share a checksum (copies), some a (device, inode)."""
    ids = np.array(sorted(rng.sample(range(1, 10 * n), n)), np.int64)
    folders = ["/data/a", "/data/b", "/ref", "/ref/deep", "/x"]
    paths = [f"{rng.choice(folders)}/{'f' * rng.randint(1, 4)}{k}.txt" for k in range(n)]
    checks = [bytes([rng.randrange(6)]) * 16 for _ in range(n)]
    inode = np.array([rng.randrange(1, n + 1) if rng.random() < 0.15 else 10_000 + k for k in range(n)], np.int64)
    inode[rng.randrange(n)] = 0  # unknown: never merged
    return FileTable(
        ids=ids,
        paths=paths,
        raw_paths=[p.encode() for p in paths],
        size=np.array([rng.randrange(1, 5000) for _ in range(n)], np.int64),
        mtime_ns=np.array([rng.randrange(1, 6) for _ in range(n)], np.int64),  # many ties
        is_text=np.array([rng.random() < 0.8 for _ in range(n)], dtype=bool),
        encoding=[rng.choice(["utf-8", "cp1252", None]) for _ in range(n)],
        checksum=checks,
        partial=np.zeros(n, np.int64),
        content_hash=list(checks),
        simhash=np.zeros(n, np.uint64),
        fp_count=np.zeros(n, np.int64),
        units=np.zeros(n, np.int64),
        device=np.full(n, 7, np.int64),
        inode=inode,
    )


def random_pairs(rng: random.Random, t: FileTable, m: int) -> list[Pair]:
    n = len(t.paths)
    ids = t.ids.tolist()
    scores = [12.5, 20.0, 33.333, 50.0, 66.667, 70.0, 90.0, 99.999]  # few values: ties of score
    out: list[Pair] = []
    for _ in range(m):
        i, j = rng.randrange(n), rng.randrange(n)
        a = ids[i] if rng.random() > 0.02 else 999_999  # now and then a file absent from the table
        kind = rng.choice(["exact", "content", "near", "near", "contained", "near"])
        if kind in ("exact", "content"):
            out.append(Pair(a, ids[j], t.paths[i], t.paths[j], 100.0, 100.0, 100.0, rng.randrange(3),
                            kind == "exact", kind))
        else:
            r, ca, cb = rng.choice(scores), rng.choice(scores), rng.choice(scores)
            out.append(Pair(a, ids[j], t.paths[i], t.paths[j], r, ca, cb, rng.randrange(10), False, kind))
    return out


def _as_rows(groups):
    return [(g.id, g.kind, g.reference, [(m, m.pair) for m in g.members]) for g in groups]


@pytest.mark.parametrize("seed", range(40))
def test_group_pairs_equals_the_reference_implementation(seed: int) -> None:
    rng = random.Random(seed)
    t = random_table(rng, rng.randrange(2, 60))
    pairs = random_pairs(rng, t, rng.randrange(0, 150))
    for threshold in (0.0, 20.0, 50.0, 95.0):
        for roots in ((), ("/ref",), ("/data/b", "/x")):
            want = reference_group_pairs(pairs, t, min_similarity=threshold, reference_roots=roots)
            got = group_pairs(list(pairs), t, min_similarity=threshold, reference_roots=roots)
            assert _as_rows(got) == _as_rows(want), (seed, threshold, roots)


def test_large_random_set_equals_the_reference() -> None:
    """A few thousand files: the vectorised lone-unit path and the loop path together."""
    rng = random.Random(99)
    t = random_table(rng, 3000)
    pairs = random_pairs(rng, t, 4000)
    want = reference_group_pairs(pairs, t, min_similarity=30, reference_roots=("/ref",))
    got = group_pairs(pairs, t, min_similarity=30, reference_roots=("/ref",))
    assert len(want) > 100 and _as_rows(got) == _as_rows(want)


def _pair_arrays(rng: random.Random, t: FileTable, m: int) -> PairArrays:
    """Unrounded scored pairs as compute_pair_arrays makes them (rows of t)."""
    n = len(t.paths)
    a = np.array([rng.randrange(n) for _ in range(m)], np.int64)
    b = np.array([rng.randrange(n) for _ in range(m)], np.int64)
    kind = np.array([rng.choice([0, 1, 2, 2, 3]) for _ in range(m)], np.int8)
    sc = np.array([[rng.choice([10.0, 100 / 3, 50.0, 200 / 3]) + rng.random() * 1e-4 for _ in range(3)]
                   for _ in range(m)]).reshape(m, 3)
    star = kind <= 1
    sc[star] = 100.0
    return PairArrays(a, b, sc[:, 0], sc[:, 1], sc[:, 2], np.array([rng.randrange(8) for _ in range(m)], np.int64),
                      kind == 0, kind)


@pytest.mark.parametrize("seed", range(10))
def test_group_pair_arrays_equals_group_pairs_on_find_pairs_output(seed: int) -> None:
    """The GUI groups sorted_rounded columns; the CLI groups to_pairs' Pair objects: same groups."""
    rng = random.Random(1000 + seed)
    t = random_table(rng, rng.randrange(2, 80))
    pa = _pair_arrays(rng, t, rng.randrange(0, 200))
    pairs = to_pairs(pa, t)
    table = sorted_rounded(pa)
    assert [(int(x), int(y)) for x, y in zip(table.a, table.b)] == [
        (int(np.searchsorted(t.ids, p.a_id)), int(np.searchsorted(t.ids, p.b_id))) for p in pairs]
    for threshold in (0.0, 33.3333, 60.0):
        want = reference_group_pairs(pairs, t, min_similarity=threshold, reference_roots=("/ref",))
        ga = group_pair_arrays(table, t, min_similarity=threshold, reference_roots=("/ref",))
        got = groups_from_arrays(ga, t, lambda k: pairs[k])
        assert _as_rows(got) == _as_rows(want)
        # The columns themselves say what the objects say.
        for g in want:
            assert KINDS[int(ga.g_kind[g.id])] == g.kind
            s, e = int(ga.g_start[g.id]), int(ga.g_start[g.id + 1])
            assert [float(x) for x in ga.m_sim[s:e]] == [m.similarity for m in g.members]
            assert [KINDS[int(k)] for k in ga.m_kind[s:e]] == [m.kind for m in g.members]
