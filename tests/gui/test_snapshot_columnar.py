"""Snapshot.from_group_arrays (the window's columnar path) against Snapshot.from_groups on the
Group objects of the same grouping (the path of simscan 0.1), "make reference" included."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from simscan.gui import jobs, snapshot
from simscan.gui.snapshot import Snapshot
from simscan.similarity import group_pairs
from simscan.similarity.core import sorted_rounded, to_pairs
from simscan.similarity.grouping import group_pair_arrays
from tests.grouping_reference import random_pair_arrays, random_table

_ARRAYS = ("g_start", "g_kind", "g_min_sim", "g_reclaim", "g_mtime", "m_group", "m_file_id", "m_size", "m_mtime",
           "m_sim", "m_kind", "m_is_ref", "m_keeper", "m_keeper_of", "m_set_size", "m_copy_kind", "g_extra")
_LISTS = ("paths", "folded", "encodings", "is_text", "l_start", "l_group", "l_file_id", "l_size", "l_mtime",
          "l_kind", "l_is_ref", "l_g_kind", "l_g_reclaim")


def _listed(pairs, table):
    """pair(a_id, b_id): the listed Pair of two files, either orientation (a later pair of the same
    two wins), else the last listed pair of a copy of one with a copy of the other (the pair search
    lists a set of copies' pairs for one of them only); oriented (a, b) either way; None if none.
    Copies: the same text hash, or without one the same bytes -- by brute force over every pair."""
    row = {int(f): i for i, f in enumerate(table.ids)}

    def cls(fid):
        r = row[fid]
        h = table.content_hash[r]
        return ("c", h, bool(table.is_text[r])) if h is not None else ("x", table.checksum[r], int(table.size[r]))

    def oriented(p, a):
        if p.a_id == a or (p.b_id != a and cls(p.a_id) == cls(a)):
            return dataclasses.replace(p, a_id=a) if p.a_id != a else p
        return dataclasses.replace(p, a_id=a, b_id=p.a_id, containment_a=p.containment_b,
                                   containment_b=p.containment_a)

    def pair(a, b):
        direct = [p for p in pairs if {p.a_id, p.b_id} == {a, b} and a != b]
        if direct:
            return oriented(direct[-1], a)
        ca, cb = cls(a), cls(b)
        by_copy = [p for p in pairs if {cls(p.a_id), cls(p.b_id)} == {ca, cb} and (ca != cb or p.a_id == p.b_id)]
        return oriented(by_copy[-1], a) if by_copy else None

    return pair


def _lookups(pairs, table):
    """pair_best, pair_kind, copy_kind and pair_of by file id, as the columnar path finds them."""
    listed = _listed(pairs, table)
    row = {int(f): i for i, f in enumerate(table.ids)}
    copy = snapshot._copy_kind(table)

    def best(a, b):
        p = listed(a, b)
        return None if p is None else p.best

    def kind(a, b):
        p = listed(a, b)
        return None if p is None else p.kind

    return best, kind, (lambda a, b: copy(row[a], row[b])), listed


def _evidence(r, ca, cb):
    """(longest, shared) made up from a pair's scores, the same whichever way round it is read."""
    key = (np.round(r, 3) * 1000 + np.round(np.minimum(ca, cb), 3) * 7 + np.round(np.maximum(ca, cb), 3) * 3)
    key = np.asarray(key).astype(np.int64)
    longest, shared = key % 500, key % 500 + key % 300
    return (int(longest), int(shared)) if longest.ndim == 0 else (longest, shared)


def _evidence_of_scores(pa):
    """``pa`` with each non-copy pair's passage evidence a function of its scores, so that a member's
    evidence can be checked against the scores it shows."""
    longest, shared = _evidence(pa.resemblance, pa.containment_a, pa.containment_b)
    star = pa.kind <= 1
    return dataclasses.replace(pa, longest=np.where(star, -1, longest).astype(np.int32),
                               shared=np.where(star, -1, shared).astype(np.int32))


def _without_evidence(p):
    return None if p is None else dataclasses.replace(p, longest_passage=None, shared_chars=None)


def _same_floats(x, y) -> bool:
    return len(x) == len(y) and all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(x, y))


@pytest.mark.parametrize("seed", range(25))
def test_from_group_arrays_equals_from_groups(seed: int) -> None:
    rng = random.Random(500 + seed)
    t = random_table(rng, rng.randrange(2, 70))
    pa = _evidence_of_scores(random_pair_arrays(rng, t, rng.randrange(0, 160)))
    pairs = to_pairs(pa, t)
    table = sorted_rounded(pa)
    roots = ("/ref",) if seed % 2 else ()
    for threshold in (0.0, 40.0):
        groups = group_pairs(pairs, t, min_similarity=threshold, reference_roots=roots)
        members = [m.file_id for g in groups for m in g.members]
        for preferred in ([], rng.sample(members, min(len(members), rng.randrange(0, 6))), [10**9]):
            pair_best, pair_kind, copy_kind, pair_of = _lookups(pairs, t)
            want = Snapshot.from_groups(groups, threshold, preferred, pair_best if preferred else None, pair_kind,
                                        copy_kind, pair_of)
            ga = group_pair_arrays(table, t, min_similarity=threshold, reference_roots=roots)
            got = Snapshot.from_group_arrays(ga, t, table, threshold, preferred)
            for name in _ARRAYS:
                a, b = getattr(got, name), getattr(want, name)
                assert a.dtype.kind == b.dtype.kind and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
            for name in _LISTS:
                assert getattr(got, name) == getattr(want, name), name
            assert _same_floats(got.l_sim, want.l_sim) and _same_floats(got.l_g_min_sim, want.l_g_min_sim)
            assert len(got.pairs) == len(want.pairs)
            # (``group_pairs``' members carry no passage evidence: compared apart, against the listed pairs.)
            assert [_without_evidence(got.pairs[m]) for m in range(len(got.pairs))] == [
                _without_evidence(p) for p in want.pairs]
            for m in range(got.n_members):
                # Each member's evidence is that of the pair its scores come from.
                p = got.pairs[m]
                want_ev = (None, None) if p is None or p.kind in ("exact", "content") else _evidence(
                    p.resemblance, p.containment_a, p.containment_b)
                assert got.member_evidence(m) == want_ev
                assert p is None or (p.longest_passage, p.shared_chars) == want_ev
            assert [got.member_view(m) for m in range(len(got.pairs))] == [
                want.member_view(m) for m in range(len(want.pairs))]
            assert got.folder_space() == want.folder_space()
            cut = " · longest shared passage"
            assert [got.scores_text(m).split(cut)[0] for m in range(got.n_members)] == [
                want.scores_text(m).split(cut)[0] for m in range(want.n_members)]


def test_regroup_job_reuses_the_folder_codes() -> None:
    """jobs.group on the same table at two thresholds: the folder codes are computed once."""
    rng = random.Random(7)
    t = random_table(rng, 200)
    table = sorted_rounded(random_pair_arrays(rng, t, 300))
    low = jobs.group(t, table, 20.0, [])
    high = jobs.group(t, table, 60.0, [])
    assert low.n_members >= high.n_members > 0
    assert low.folder_names is high.folder_names
    assert jobs.group(t, None, 60.0, []).n_groups == 0


def test_window_load_from_the_cache_equals_the_computed_one(corpus, tmp_path) -> None:
    """jobs.load on a real scanned corpus: the first load computes and caches, the second reads
    the cache; the snapshots, pairs and histogram agree (a preferred reference included)."""
    from simscan.progress import CancelToken
    from simscan.scanner import ScanRequest, run_scan

    index = tmp_path / "i.sqlite3"
    run_scan(ScanRequest([corpus], index_path=index))
    cold = jobs.load(index, 30, [], [], lambda p: None, CancelToken())
    warm = jobs.load(index, 30, [], [], lambda p: None, CancelToken())
    assert not cold.cached and warm.cached and cold.snapshot.n_members > 3
    for name in ("a", "b", "resemblance", "containment_a", "containment_b", "distance", "exact", "kind"):
        assert np.array_equal(getattr(cold.pairs, name), getattr(warm.pairs, name)), name
    assert np.array_equal(cold.best, warm.best)
    pick = cold.snapshot.l_file_id[2]  # a member that is not the reference
    snaps = [jobs.group(r.files, r.pairs, 40.0, [str(corpus)], [pick]) for r in (cold, warm)]
    for s in (cold.snapshot, snaps[0]):
        t = snaps[1] if s is snaps[0] else warm.snapshot
        for name in _ARRAYS:
            assert np.array_equal(getattr(s, name), getattr(t, name), equal_nan=True), name
        for name in _LISTS:
            assert getattr(s, name) == getattr(t, name), name
        assert list(s.pairs) == list(t.pairs)
