"""The columnar grouping (``group_rows`` and everything built on it) against the plain
implementation of the same rules in ``tests/grouping_reference.py``, on random pair sets: exact and
content units, ties of score, several pairs between two files, pairs naming absent files,
reference roots, several paths of one file (same device and inode)."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from simscan.index import FileTable
from simscan.similarity import group_pairs
from simscan.similarity.core import PairArrays, sorted_rounded, to_pairs
from simscan.similarity.grouping import copy_set_extras, empty_rows, group_pair_arrays, groups_from_arrays
from simscan.similarity.keep import KeepRules
from simscan.similarity.types import KIND_CODE, KINDS, Pair
from tests.grouping_reference import random_pair_arrays, random_pairs, random_table, reference_group_pairs


def _as_rows(groups):
    return [(g.id, g.kind, g.reference, [(m, m.pair) for m in g.members]) for g in groups]


KEEPS = [
    KeepRules(),
    KeepRules(("newest", "longest-path")),
    KeepRules(("pattern", "oldest"), "/data/b/*"),
    KeepRules(("pattern", "encoding", "newest"), "ff*"),
    KeepRules(()),
]


@pytest.mark.parametrize("seed", range(40))
def test_group_pairs_equals_the_reference_implementation(seed: int) -> None:
    rng = random.Random(seed)
    t = random_table(rng, rng.randrange(2, 60))
    pairs = random_pairs(rng, t, rng.randrange(0, 150))
    for threshold in (0.0, 20.0, 50.0, 95.0):
        for roots in ((), ("/ref",), ("/data/b", "/x")):
            keep = KEEPS[(seed + int(threshold)) % len(KEEPS)]
            want = reference_group_pairs(pairs, t, min_similarity=threshold, reference_roots=roots, keep=keep)
            got = group_pairs(list(pairs), t, min_similarity=threshold, reference_roots=roots, keep=keep)
            assert _as_rows(got) == _as_rows(want), (seed, threshold, roots, keep)
            assert all(m.size > 0 for g in got for m in g.members)  # empty files are never grouped


def test_large_random_set_equals_the_reference() -> None:
    """A few thousand files: the vectorised lone-unit path and the loop path together."""
    rng = random.Random(99)
    t = random_table(rng, 3000)
    pairs = random_pairs(rng, t, 4000)
    want = reference_group_pairs(pairs, t, min_similarity=30, reference_roots=("/ref",))
    got = group_pairs(pairs, t, min_similarity=30, reference_roots=("/ref",))
    assert len(want) > 100 and _as_rows(got) == _as_rows(want)


@pytest.mark.parametrize("seed", range(10))
def test_group_pair_arrays_equals_group_pairs_on_find_pairs_output(seed: int) -> None:
    """The GUI groups sorted_rounded columns; the CLI groups to_pairs' Pair objects: same groups."""
    rng = random.Random(1000 + seed)
    t = random_table(rng, rng.randrange(2, 80))
    pa = random_pair_arrays(rng, t, rng.randrange(0, 200))
    pairs = to_pairs(pa, t)
    table = sorted_rounded(pa)
    assert [(int(x), int(y)) for x, y in zip(table.a, table.b)] == [
        (int(np.searchsorted(t.ids, p.a_id)), int(np.searchsorted(t.ids, p.b_id))) for p in pairs]
    for threshold in (0.0, 33.3333, 60.0):
        want = reference_group_pairs(pairs, t, min_similarity=threshold, reference_roots=("/ref",))
        ga = group_pair_arrays(table, t, min_similarity=threshold, reference_roots=("/ref",))
        got = groups_from_arrays(ga, t, lambda ks: [pairs[k] for k in ks.tolist()])
        assert _as_rows(got) == _as_rows(want)
        # The columns themselves say what the objects say.
        for g in want:
            assert KINDS[int(ga.g_kind[g.id])] == g.kind
            s, e = int(ga.g_start[g.id]), int(ga.g_start[g.id + 1])
            assert [float(x) for x in ga.m_sim[s:e]] == [m.similarity for m in g.members]
            assert [int(k) for k in ga.m_kind[s:e]] == [KIND_CODE[m.kind] for m in g.members]


@pytest.mark.parametrize("kind", ["hashes", "skewed", "few", "sorted", "small"])
def test_argsort_hashes_sorts_like_argsort(kind: str) -> None:
    """The fingerprint argsort of the pair search: a stable sort of any input."""
    from simscan.similarity.arrays import argsort_hashes

    rng = np.random.default_rng(len(kind))
    n = 300 if kind == "small" else 200_000
    v = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    if kind == "skewed":  # every value in one top-16-bit bucket: no speed-up, still sorted
        v &= np.uint64((1 << 48) - 1)
    elif kind == "few":  # many ties
        v = rng.choice(v[:50], n)
    elif kind == "sorted":
        v = np.sort(v)
    o = argsort_hashes(v)
    assert np.array_equal(o, np.argsort(v, kind="stable"))


def _table(names: list[str]) -> FileTable:
    n = len(names)
    checks = [bytes([k]) * 16 for k in range(n)]
    return FileTable(
        ids=np.arange(1, n + 1, dtype=np.int64), paths=names, raw_paths=[x.encode() for x in names],
        size=np.full(n, 100, np.int64), mtime_ns=np.arange(1, n + 1, dtype=np.int64),  # oldest first
        is_text=np.ones(n, dtype=bool), encoding=["utf-8"] * n, checksum=checks, partial=np.zeros(n, np.int64),
        content_hash=list(checks), simhash=np.zeros(n, np.uint64), fp_count=np.zeros(n, np.int64),
        units=np.full(n, 100, np.int64), device=np.full(n, 7, np.int64), inode=np.arange(100, 100 + n, dtype=np.int64),
    )


def _near(t, a: int, b: int, score: float) -> Pair:
    return Pair(a, b, t.paths[a - 1], t.paths[b - 1], score, score, score, 3, False, "near")


def _members(groups) -> list[tuple[str, list[tuple[str, float]]]]:
    return [(g.reference.path, [(m.path, m.similarity) for m in g.members[1:]]) for g in groups]


def test_a_member_joins_its_most_similar_reference() -> None:
    """x shares a header with the older a (40 %) but is a copy-edit of t (97 %): it is shown
    with t, not with a; a keeps its own close version b."""
    t = _table(["/a", "/b", "/t", "/x", "/y"])
    a, b, tt, x, y = 1, 2, 3, 4, 5
    pairs = [_near(t, a, x, 40.0), _near(t, a, b, 80.0), _near(t, tt, x, 97.0), _near(t, tt, y, 60.0)]
    groups = group_pairs(pairs, t, min_similarity=30.0)
    assert _members(groups) == [("/a", [("/b", 80.0)]), ("/t", [("/x", 97.0), ("/y", 60.0)])]
    # t has no partner of its own but x: it still becomes x's reference.
    groups = group_pairs(pairs[:3], t, min_similarity=30.0)
    assert _members(groups) == [("/a", [("/b", 80.0)]), ("/t", [("/x", 97.0)])]


def test_versions_keep_the_oldest_as_their_reference() -> None:
    """v2 is closer to v3 than v1 is, but a covered file never becomes a reference: the oldest
    version stays the reference of all (no file of the family left out of its group)."""
    t = _table(["/v1", "/v2", "/v3"])
    pairs = [_near(t, 1, 2, 90.0), _near(t, 1, 3, 70.0), _near(t, 2, 3, 95.0)]
    groups = group_pairs(pairs, t, min_similarity=30.0)
    assert _members(groups) == [("/v1", [("/v2", 90.0), ("/v3", 70.0)])]


def test_a_reference_emptied_by_better_references_takes_back_a_partner() -> None:
    """R's only partner X is closer to R2, which also has Y: R takes X back (R2 keeps Y), so no
    file with a partner disappears from the groups; without Y, X leads R2 and R (both like X)."""
    t = _table(["/r", "/r2", "/x", "/y"])
    r, r2, x, y = 1, 2, 3, 4
    pairs = [_near(t, r, x, 40.0), _near(t, r2, x, 60.0), _near(t, r2, y, 50.0)]
    groups = group_pairs(pairs, t, min_similarity=30.0)
    assert _members(groups) == [("/r", [("/x", 40.0)]), ("/r2", [("/y", 50.0)])]
    groups = group_pairs(pairs[:2], t, min_similarity=30.0)
    assert _members(groups) == [("/x", [("/r2", 60.0), ("/r", 40.0)])]


def test_two_excerpts_of_one_document_are_both_grouped() -> None:
    """Two students each copied another part of one source (a 100 % in it, b 86 %), all three
    equally old: a, preferred by its shorter path, covers the source; b, like the source only,
    was in no group.  Now the source leads both (found on /usr/share: 574 such files left out)."""
    t = _table(["/a", "/b", "/big_document"])
    a, b, big = 1, 2, 3
    pairs = [_near(t, a, big, 100.0), _near(t, b, big, 86.3)]
    groups = group_pairs(pairs, t, min_similarity=15.0)
    assert _members(groups) == [("/big_document", [("/a", 100.0), ("/b", 86.3)])]
    # A third file like a only: a keeps a group of its own with it, and b takes the source from a.
    t = _table(["/a", "/b", "/big_document", "/c"])
    pairs.append(_near(t, a, 4, 50.0))
    groups = group_pairs(pairs, t, min_similarity=15.0)
    assert _members(groups) == [("/a", [("/c", 50.0)]), ("/b", [("/big_document", 86.3)])]


def test_a_member_is_not_moved_away_to_show_a_much_weaker_pair() -> None:
    """The oldest answer s11 leads s05 (43.4 %), a Wikipedia text (50 %) and s04; s12's only partner
    is that text at 16.7 %: the text stays with s11 (it was moved to show the 16.7 %, and a teacher
    saw the text only as a 17 % match), and s12 is in no group (its pair stays listed)."""
    t = _table(["/s11", "/s12", "/s04", "/s05", "/wiki"])
    s11, s12, s04, s05, wiki = 1, 2, 3, 4, 5
    pairs = [_near(t, s05, wiki, 92.1), _near(t, s11, wiki, 50.0), _near(t, s11, s05, 43.4),
             _near(t, s04, s05, 33.3), _near(t, s11, s04, 18.4), _near(t, s12, wiki, 16.7)]
    groups = group_pairs(pairs, t, min_similarity=15.0)
    assert _members(groups) == [("/s11", [("/wiki", 50.0), ("/s05", 43.4), ("/s04", 18.4)])]
    # A partner that keeps at least half its percentage still moves (two excerpts of one source).
    groups = group_pairs([*pairs[:-1], _near(t, s12, wiki, 30.0)], t, min_similarity=15.0)
    assert _members(groups) == [("/s11", [("/s05", 43.4), ("/s04", 18.4)]), ("/s12", [("/wiki", 30.0)])]


def test_a_reference_folder_keeps_its_members() -> None:
    """Wikipedia under a reference folder leads what copies it; a's only partner is b (46 %), 86 %
    a copy of Wikipedia: b stays with the reference the person chose (it was taken away at -m 40)."""
    t = _table(["/a", "/b", "/c", "/ref/wiki"])
    a, b, c, wiki = 1, 2, 3, 4
    pairs = [_near(t, b, wiki, 86.5), _near(t, a, b, 46.1), _near(t, c, wiki, 43.0)]
    groups = group_pairs(pairs, t, min_similarity=40.0, reference_roots=["/ref"])
    assert _members(groups) == [("/ref/wiki", [("/b", 86.5), ("/c", 43.0)])]
    # Without the reference folder the oldest files are preferred: a leads b, c leads the text.
    groups = group_pairs(pairs, t, min_similarity=40.0)
    assert _members(groups) == [("/a", [("/b", 46.1)]), ("/c", [("/ref/wiki", 43.0)])]


@pytest.mark.parametrize("seed", range(12))
def test_a_file_with_a_partner_is_left_out_only_for_much_stronger_pairs(seed: int) -> None:
    """Every file with a copy is in a group, and every file with a partner too, unless each of its
    partners is a member of another group at more than twice its score with it (``MOVE_KEEPS``)."""
    from simscan.similarity.grouping import MOVE_KEEPS

    rng = random.Random(seed)
    t = random_table(rng, 80)
    t = dataclasses.replace(t, inode=np.arange(1, 81, dtype=np.int64))  # one path per file: none left out
    pairs = random_pairs(rng, t, 160)
    from simscan.similarity.grouping import empty_mask

    known = set(t.ids[~empty_mask(t)].tolist())  # (empty files are never grouped)
    left_out = 0
    for threshold in (20.0, 50.0, 80.0):
        place = {m.file_id: m for g in group_pairs(pairs, t, min_similarity=threshold) for m in g.members}
        ok = [p for p in pairs if p.a_id != p.b_id and p.a_id in known and p.b_id in known]
        copies = {i for p in ok if p.kind in ("exact", "content") for i in (p.a_id, p.b_id)}
        assert copies <= set(place)
        partners: dict[int, list[tuple[int, float]]] = {}
        for p in ok:
            if p.best >= threshold and p.kind not in ("exact", "content"):
                partners.setdefault(p.a_id, []).append((p.b_id, p.best))
                partners.setdefault(p.b_id, []).append((p.a_id, p.best))
        assert partners
        for u in set(partners) - set(place):
            left_out += 1
            for v, score in partners[u]:
                assert v in place and not place[v].is_reference, (threshold, u, v)
                assert score < MOVE_KEEPS * place[v].similarity, (threshold, u, v)
    assert left_out < 0.1 * 80 * 3


def _contained(t, a: int, b: int, ca: float, cb: float) -> Pair:
    """A "contained" pair: ``ca`` % of a lies in b, ``cb`` % of b in a."""
    return Pair(a, b, t.paths[a - 1], t.paths[b - 1], min(ca, cb), ca, cb, 3, False, "contained")


def _copy(t, a: int, b: int, kind: str = "exact") -> Pair:
    return Pair(a, b, t.paths[a - 1], t.paths[b - 1], 100.0, 100.0, 100.0, 0, kind == "exact", kind)


def test_the_source_the_others_are_contained_in_leads() -> None:
    """Two student answers (older) quote the source article: the source leads their group, not the
    oldest answer that quotes it (it was a 24.6 % member under the answer)."""
    t = _table(["/answer1", "/answer2", "/heavy", "/source"])
    a1, a2, heavy, src = 1, 2, 3, 4
    pairs = [_contained(t, a1, src, 90.0, 24.6), _contained(t, a2, src, 80.0, 20.0), _near(t, heavy, src, 40.0),
             _near(t, a1, a2, 30.0)]
    groups = group_pairs(pairs, t, min_similarity=15.0)
    assert [g.reference.path for g in groups] == ["/source"]
    assert {m.path: m.kind for m in groups[0].members[1:]} == {"/answer1": "contained", "/answer2": "contained",
                                                                 "/heavy": "near"}


def test_copy_sets_are_nested_wherever_they_sit_and_their_extras_do_not_depend_on_the_threshold() -> None:
    """Twelve byte copies of a 2 MB file are a member unit of a small file's group (a "near" 47.5 %
    pair): they are one copy set, its first (kept) file the keeper, the eleven others extra copies,
    at every threshold that shows them and also when they are their own group."""
    names = ["/small"] + [f"/copies/c{k:02d}" for k in range(12)]
    t = _table(names)
    t = dataclasses.replace(t, size=np.array([4100] + [2_050_000] * 12, np.int64),
                            checksum=[b"s" * 16] + [b"c" * 16] * 12, content_hash=[b"s" * 16] + [b"c" * 16] * 12)
    pairs = [_near(t, 1, 2, 47.5)] + [_copy(t, 2, k) for k in range(3, 14)]
    pa = PairArrays(*(np.asarray(x) for x in (
        [p.a_id - 1 for p in pairs], [p.b_id - 1 for p in pairs], [p.resemblance for p in pairs],
        [p.containment_a for p in pairs], [p.containment_b for p in pairs], [0] * len(pairs),
        [p.exact for p in pairs], [KIND_CODE[p.kind] for p in pairs], [0] * len(pairs), [-1] * len(pairs),
        [-1] * len(pairs))))
    totals = set()
    for threshold in (15.0, 47.5, 60.0):
        ga = group_pair_arrays(pa, t, min_similarity=threshold)
        extra_bytes, extra_files = copy_set_extras(ga, t.size)
        totals.add((int(extra_bytes.sum()), int(extra_files.sum())))
        sets = {}
        for j in range(ga.n_members):
            sets.setdefault(int(ga.m_set[j]), []).append((t.paths[int(ga.m_row[j])], bool(ga.m_keeper[j])))
        copies = [v for v in sets.values() if len(v) > 1]
        assert copies == [[("/copies/c00", True)] + [(f"/copies/c{k:02d}", False) for k in range(1, 12)]]
    assert totals == {(11 * 2_050_000, 11)}


def test_keep_rules_choose_the_keeper_of_every_copy_set() -> None:
    """The copy in UTF-8 is kept before an older GB18030 one by default ("encoding" first); "newest"
    and a path pattern choose others; a reference folder always comes first."""
    t = _table(["/old/gb.txt", "/new/utf8.txt", "/new/other.txt", "/keep/x.txt"])
    t = dataclasses.replace(t, encoding=["gb18030", "utf-8", "utf-8", "utf-8"])
    pairs = [_copy(t, 1, 2, "content"), _copy(t, 1, 3, "content"), _copy(t, 1, 4, "content")]

    def keeper(**kw) -> str:
        g = group_pairs(pairs, t, min_similarity=15.0, **kw)
        return g[0].reference.path

    assert keeper() == "/new/utf8.txt"  # encoding, then the oldest
    assert keeper(keep=KeepRules(("oldest",))) == "/old/gb.txt"
    assert keeper(keep=KeepRules(("newest",))) == "/keep/x.txt"
    assert keeper(keep=KeepRules(("longest-path", "oldest"))) == "/new/other.txt"
    assert keeper(keep=KeepRules(("pattern", "oldest"), "*/other.*")) == "/new/other.txt"
    assert keeper(keep=KeepRules(("newest",)), reference_roots=["/old"]) == "/old/gb.txt"


def test_empty_files_are_listed_apart() -> None:
    t = _table(["/e1", "/e2", "/e3", "/a", "/b"])
    t = dataclasses.replace(t, size=np.array([0, 0, 0, 5, 5], np.int64))
    pairs = [_copy(t, 1, 2), _copy(t, 1, 3), _copy(t, 4, 5)]
    assert [g.reference.path for g in group_pairs(pairs, t, min_similarity=15.0)] == ["/a"]
    assert empty_rows(t).tolist() == [0, 1, 2]


@pytest.mark.parametrize("high", [1 << 8, 1 << 16, 1 << 20, 1 << 32, 1 << 40])
def test_argsort_rows_is_a_stable_argsort(high: int) -> None:
    from simscan.similarity.arrays import argsort_rows

    rng = np.random.default_rng(high % 97)
    x = rng.integers(0, high, 50_000)
    assert np.array_equal(argsort_rows(x), np.argsort(x, kind="stable"))
    assert np.array_equal(argsort_rows(x.astype(np.int32 if high <= 1 << 31 else np.int64)[:100]),
                          np.argsort(x[:100], kind="stable"))


def test_pair_scores_read_what_the_pair_objects_say() -> None:
    """``pair_scores`` (a member's pair's scores straight from the columns) says what the ``Pair`` of
    ``pairs_from_rounded`` says, passages unknown (-1) as None."""
    from simscan.similarity.core import pairs_from_rounded, take_pairs
    from simscan.similarity.grouping import pair_scores

    rng = random.Random(77)
    t = random_table(rng, 40)
    pa = sorted_rounded(random_pair_arrays(rng, t, 150))
    pa = dataclasses.replace(pa, longest=np.where(np.arange(pa.a.size) % 3 == 0, -1, pa.a * 7).astype(np.int32),
                             view=(np.arange(pa.a.size) % 2).astype(np.int8))
    ks = np.array(sorted(rng.sample(range(pa.a.size), 60)))
    for got, p in zip(pair_scores(pa, ks), pairs_from_rounded(take_pairs(pa, ks), t)):
        assert got == (p.resemblance, p.containment_a, p.containment_b, p.simhash_distance, p.kind, p.view,
                       p.longest_passage, p.shared_chars)


@pytest.mark.parametrize("seed", range(12))
def test_pairs_written_from_the_columns_in_parts_equal_the_objects(monkeypatch, seed: int) -> None:
    """``simscan pairs`` writes from the columns a part at a time (``pair_column_parts``, parts of 7 here):
    in every format, the same text as ``write_pairs`` of the objects that the slow reference expansion
    (``reference_expand_copies``) lists, and the same count left out by the limit."""
    import io

    from grouping_reference import reference_expand_copies

    from simscan.cli import similarity_cmds as cmds
    from simscan.similarity.core import expand_copy_pairs, to_pairs

    monkeypatch.setattr(cmds, "PAIRS_AT_A_TIME", 7)
    rng = random.Random(3000 + seed)
    t = random_table(rng, rng.randrange(2, 60))
    pa = random_pair_arrays(rng, t, rng.randrange(0, 150))
    pa = dataclasses.replace(pa, **{f: getattr(pa, f)[pa.a != pa.b] for f in pa.__slots__})
    pa = dataclasses.replace(pa, longest=np.where(np.arange(pa.a.size) % 3 == 0, -1, pa.a * 7).astype(np.int32))
    for expand, limit in ((True, 10**9), (True, rng.randrange(0, 30)), (False, 0)):
        want, left_out = reference_expand_copies(to_pairs(pa, t), limit) if expand else (to_pairs(pa, t), 0)
        assert expand_copy_pairs(to_pairs(pa, t), limit) == (want, left_out) or not expand
        for fmt in ("json", "csv", "text"):
            parts, got_left = cmds.pair_column_parts(pa, t, expand, limit)
            got, ref = io.StringIO(), io.StringIO()
            w = cmds.PairWriter(fmt, got)
            for part in parts:
                w.write(t.paths, part)
            assert w.n == len(want) and got_left == left_out
            assert cmds.write_pairs(want, fmt, ref) == len(want)
            assert got.getvalue() == ref.getvalue()


@pytest.mark.parametrize("seed", range(8))
def test_copy_blocks_in_ranges_equal_the_reference(seed: int) -> None:
    """``copies.CopyBlocks`` makes the expanded pairs a range at a time (what ``simscan pairs`` holds at
    once): ranges of any length, cut anywhere in a block, give together the pairs of the slow reference
    (``reference_expand_copies``), with its count left out; an empty list with classes at hand gives none."""
    from grouping_reference import reference_expand_copies

    from simscan.similarity.copies import CopyBlocks, copy_classes
    from simscan.similarity.core import pairs_from_rounded

    rng = random.Random(4000 + seed)
    t = random_table(rng, rng.randrange(2, 60))
    pa = sorted_rounded(random_pair_arrays(rng, t, rng.randrange(1, 150)))
    pa = dataclasses.replace(pa, **{f: getattr(pa, f)[pa.a != pa.b] for f in pa.__slots__})
    ids = np.asarray(t.ids)
    for limit in (10**9, rng.randrange(0, 30)):
        want, left_out = reference_expand_copies(pairs_from_rounded(pa, t), limit)
        blocks = CopyBlocks(pa.a, pa.b, pa.kind <= 1, len(t.paths), limit)
        assert blocks.size == len(want) and blocks.left_out == left_out
        got, lo = [], 0
        while lo < blocks.size:
            hi = lo + rng.randrange(1, 9)
            x, y, src = blocks.take(lo, hi)
            assert x.size == min(hi, blocks.size) - lo
            got += [(int(ids[i]), int(ids[j]), float(pa.resemblance[k]), KINDS[int(pa.kind[k])])
                    for i, j, k in zip(x, y, src)]
            lo = hi
        assert got == [(p.a_id, p.b_id, p.resemblance, p.kind) for p in want]
    copy = pa.kind <= 1
    labels = copy_classes(len(t.paths), pa.a[copy], pa.b[copy])
    none = CopyBlocks(pa.a[:0], pa.b[:0], copy[:0], len(t.paths), labels=labels)
    assert none.size == 0 and none.left_out == 0 and none.take(0, 5)[0].size == 0


@pytest.mark.parametrize("seed", range(10))
def test_groups_json_from_the_columns_equals_the_objects_json(seed: int) -> None:
    """``groups --format json|csv`` writes from the members' columns (``write_group_rows``): the same
    text as ``write_groups`` of the ``Group`` objects built from the same rows (copy sets, contained
    pairs read from either side, reference folders, names that are not UTF-8)."""
    import io
    import os

    from simscan.cli.similarity_cmds import write_group_rows, write_groups
    from simscan.similarity.core import pairs_from_rounded, take_pairs
    from simscan.similarity.grouping import groups_of_rows, member_rows

    rng = random.Random(4000 + seed)
    t = random_table(rng, rng.randrange(2, 80))
    t = dataclasses.replace(t, paths=[p if k % 7 else os.fsdecode(os.fsencode(p) + b"\xff") for k, p in enumerate(t.paths)])
    pa = sorted_rounded(random_pair_arrays(rng, t, rng.randrange(0, 200)))
    pa = dataclasses.replace(pa, longest=np.where(np.arange(pa.a.size) % 4 == 0, -1, pa.a * 3).astype(np.int32),
                             shared=np.where(np.arange(pa.a.size) % 4 == 0, -1, pa.b * 5).astype(np.int32))
    for threshold in (0.0, 40.0):
        ga = group_pair_arrays(pa, t, min_similarity=threshold, reference_roots=("/ref",))
        mr = member_rows(ga, t, lambda ks: pairs_from_rounded(take_pairs(pa, ks), t))
        for fmt in ("json", "csv"):
            got, want = io.StringIO(), io.StringIO()
            assert write_group_rows(mr, fmt, got) == ga.n_groups
            write_groups(groups_of_rows(mr), fmt, want)
            assert got.getvalue() == want.getvalue()


def test_the_native_pass_refuses_columns_that_do_not_fit() -> None:
    """``_native.place_groups`` checks its columns before the pass: a bad one is a ValueError, never a
    crash of the process."""
    from simscan import _native

    def i64(*x: int) -> np.ndarray:
        return np.array(x, np.int64)

    ok = {"n": 2, "walk_pos": i64(0, 1), "walk_unit": i64(0, 1), "walk_start": i64(0, 1), "walk_end": i64(1, 2),
          "dst": np.array([1, 0], np.int32), "score": np.array([50.0, 50.0]), "pair": i64(0, 0), "count": i64(1, 1),
          "marked": np.zeros(2, np.uint8), "move_keeps": 0.5}
    g, _, seq, unit, pair = _native.place_groups(**ok)
    assert (g.tolist(), seq.tolist(), unit.tolist(), pair.tolist()) == ([0], [0, 1], [0, 1], [-1, 0])
    bad_columns = [
        {"walk_unit": i64(0, 2)},  # a unit past n
        {"dst": np.array([1, 5], np.int32)},  # a partner past n
        {"walk_end": i64(1, 3)},  # an edge range past the edges
        {"walk_unit": i64(1, 1)},  # a unit walked twice
        {"count": i64(1)},  # a column shorter than n
        {"walk_pos": i64(0)},  # walk columns of different lengths
        {"walk_unit": i64(0), "walk_pos": i64(0), "walk_start": i64(0), "walk_end": i64(1)},  # a partner not walked
        {"score": np.array([np.nan, np.nan])},  # a score that orders nowhere (group_rows never passes one)
    ]
    for bad in bad_columns:
        with pytest.raises(ValueError):
            _native.place_groups(**{**ok, **bad})
    # Why a NaN must be refused: a reference with many members sorts them by score, and Rust's sort
    # stops the pass (a panic, a RuntimeError here) when NaN scores break its total order.
    k = 40
    star = {"n": k + 1, "walk_pos": np.arange(k + 1), "walk_unit": np.arange(k + 1),
            "walk_start": np.r_[0, k + np.arange(k)], "walk_end": np.r_[k, k + 1 + np.arange(k)],
            "dst": np.r_[np.arange(1, k + 1), np.zeros(k)].astype(np.int32),
            "score": np.tile(np.where(np.arange(k) % 3 == 0, np.nan, 10.0 * (np.arange(k) % 7)), 2),
            "pair": np.tile(np.arange(k), 2), "count": np.ones(k + 1, np.int64),
            "marked": np.zeros(k + 1, np.uint8), "move_keeps": 0.5}
    with pytest.raises(ValueError):
        _native.place_groups(**star)
