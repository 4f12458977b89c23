"""Similarity on real files and a real index: scores against set arithmetic, exact groups,
the common-fingerprint cut-off, grouping rules, query of a file outside the index."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest
from similarity_support import at_window, fp_spans, index_tree, lengths_cutoff, span_sets, words

from simscan.fingerprint import DEFAULT_PARAMS
from simscan.index import Index
from simscan.index.store import BARE_COPIES_SQL
from simscan.similarity import DEFAULT_MIN_SIMILARITY, Pair, find_groups, find_pairs, group_pairs, query
from simscan.similarity.arrays import intersect_counts, pairs_in_runs, popcount64, run_bounds
from simscan.similarity.compare import SCORE_KIND, fingerprint_set
from simscan.similarity.core import SimilarityParams, compute_pair_arrays, to_pairs
from simscan.similarity.evidence import DEFAULT_MIN_PASSAGE
from simscan.similarity.memory import table_from_paths


def _mixed_tree(root: Path) -> None:
    """Files sharing passages of various lengths, plus copies and re-encodings."""
    root.mkdir()
    passages = [words(100 + i, 120) for i in range(8)]
    for k in range(10):
        # Each file: some own text and 1-3 shared passages, in varying order.
        own = words(k, 60 + 20 * k)
        shared = [passages[(k + j) % 8] for j in range(1 + k % 3)]
        parts = [own, *shared] if k % 2 else [*shared, own]
        (root / f"doc{k}.txt").write_text("\n\n".join(parts), encoding="utf-8")
    (root / "copy_of_doc3.txt").write_bytes((root / "doc3.txt").read_bytes())
    (root / "doc4_utf16.txt").write_text((root / "doc4.txt").read_text(encoding="utf-8"), encoding="utf-16")
    (root / "lonely.txt").write_text(words(999, 300), encoding="utf-8")


def test_scores_equal_set_arithmetic(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _mixed_tree(root)
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    with Index.open(idx, readonly=True) as ix:
        pairs = find_pairs(ix, min_similarity=0)
        spans = span_sets(ix)
        files = ix.files()
    level = {int(i): DEFAULT_PARAMS.text_level(int(u)) for i, u in zip(files.ids, files.units)}
    levels_seen = set()
    by_key = {(p.a_id, p.b_id): p for p in pairs}
    copies = {(p.a_id, p.b_id) for p in pairs if p.kind in ("exact", "content")}
    copy_members = {b for _, b in copies}
    assert len(copies) == 2
    reps = [int(i) for i in files.ids if int(i) not in copy_members]
    for a, b in itertools.combinations(reps, 2):
        # Both sets at the pair's level (the coarser of the two files' levels): a value counts where
        # its span reaches that level's winnowing window, in the intersection where it does in both.
        t = max(level[a], level[b])
        A, B = at_window(spans[a], t), at_window(spans[b], t)
        inter = len(A & B)
        p = by_key.get((a, b)) or by_key.get((b, a))
        if inter == 0:
            assert p is None
            continue
        assert p is not None, (a, b)
        if p.a_id != a:
            A, B = B, A
        levels_seen.add(level[a] != level[b])
        assert p.resemblance == pytest.approx(100 * inter / len(A | B), abs=1e-3)
        assert p.containment_a == pytest.approx(100 * inter / len(A), abs=1e-3)
        assert p.containment_b == pytest.approx(100 * inter / len(B), abs=1e-3)
        assert 0 <= p.resemblance <= min(p.containment_a, p.containment_b) <= 100
        assert p.kind in ("near", "contained") and not p.exact
    assert levels_seen == {True, False}  # pairs within one level and across levels were checked
    # Copies: the byte copy is "exact", the UTF-16 one "content"; both score 100.
    kinds = sorted(p.kind for p in pairs if (p.a_id, p.b_id) in copies)
    assert kinds == ["content", "exact"]
    assert all(p.best == 100 for p in pairs if (p.a_id, p.b_id) in copies)
    # A threshold only filters: what stays scores at least that, or shares a passage long enough;
    # in memory (the same fingerprints, no index) the same pairs as from the index.
    high = find_pairs_mem(root, 40)
    assert all(p.best >= 40 or p.longest_passage >= DEFAULT_MIN_PASSAGE for p in high)
    from_index = {(p.a_path, p.b_path): p for p in pairs if p.best >= 40 or (p.longest_passage or 0) >= DEFAULT_MIN_PASSAGE}
    assert {(p.a_path, p.b_path): p for p in high} == from_index
    assert any(p.best < 40 for p in high)  # a passage kept a pair under the threshold


def find_pairs_mem(root: Path, threshold: float) -> list[Pair]:
    m = table_from_paths(sorted(p for p in root.iterdir()))
    return to_pairs(compute_pair_arrays(*m, min_similarity=threshold, **m.evidence()), m.table)


def test_scores_symmetric_under_reordering(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _mixed_tree(root)
    paths = sorted(root.iterdir())
    t1, i1, o1, v1 = table_from_paths(paths)
    t2, i2, o2, v2 = table_from_paths(paths[::-1])
    p1 = to_pairs(compute_pair_arrays(t1, i1, o1, v1, min_similarity=0), t1)
    p2 = to_pairs(compute_pair_arrays(t2, i2, o2, v2, min_similarity=0), t2)

    def norm(ps: list[Pair]) -> dict[frozenset[str], tuple[float, float]]:
        out = {}
        for p in ps:
            if p.kind in ("near", "contained"):
                out[frozenset((p.a_path, p.b_path))] = (p.resemblance, max(p.containment_a, p.containment_b))
        return out

    assert norm(p1) == norm(p2) and norm(p1)


def test_many_empty_files_are_paired_as_copies_but_listed_apart_from_the_groups(tmp_path: Path) -> None:
    root = tmp_path / "empties"
    root.mkdir()
    n = 5000
    for i in range(n):
        (root / f"e{i:05d}").touch()
    (root / "other.txt").write_text(words(1, 200))
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    with Index.open(idx, readonly=True) as ix:
        pairs = find_pairs(ix)
        empty: list[str] = []
        groups = find_groups(ix, empty=empty)
    assert len(pairs) == n - 1
    assert all(p.kind == "exact" and p.exact for p in pairs)
    assert len({p.a_id for p in pairs}) == 1
    # Not one 5,000-member "duplicate" group: every empty file is alike, so they are listed apart.
    assert groups == []
    assert len(empty) == n and all(os.path.getsize(p) == 0 for p in empty)


def test_common_fingerprints_do_not_count(tmp_path: Path) -> None:
    """60 files share a licence header; only the two that share a body are paired."""
    root = tmp_path / "lic"
    root.mkdir()
    header = words(7, 250)
    body = words(8, 150)
    for i in range(60):
        own = body if i == 0 else body + " " + words(77, 40) if i == 1 else words(1000 + i, 150)
        text = header + "\n\n" + own
        (root / f"f{i:02d}.txt").write_text(text)
    paths = sorted(root.iterdir())
    t, ids, off, vals = table_from_paths(paths)
    strict = SimilarityParams(common_min_df=50, simhash_k=0)
    pairs = to_pairs(compute_pair_arrays(t, ids, off, vals, min_similarity=DEFAULT_MIN_SIMILARITY, params=strict), t)
    names = {frozenset((Path(p.a_path).name, Path(p.b_path).name)) for p in pairs}
    assert names == {frozenset(("f00.txt", "f01.txt"))}
    # Below the threshold only stray pairs remain: a window that crosses from the header into
    # bodies that happen to start with the same letters (legitimately shared, but weak).
    weak = to_pairs(compute_pair_arrays(t, ids, off, vals, min_similarity=0, params=strict), t)
    assert all(p.best < DEFAULT_MIN_SIMILARITY for p in weak if p not in pairs)
    assert len(weak) < 60
    # The header is common, so the pair scores on the bodies alone: f00's body is all in f01.
    assert pairs[0].containment_a == pytest.approx(100.0) and pairs[0].kind == "near"
    assert pairs[0].resemblance < 95
    # With a cut-off above 60 the header counts: all C(60,2) pairs appear.
    loose = compute_pair_arrays(t, ids, off, vals, min_similarity=1,
                                params=SimilarityParams(common_min_df=100, simhash_k=0))
    assert loose.a.size == 60 * 59 // 2


def test_group_pairs_star_no_chaining() -> None:
    t = _fake_table(["/r/a", "/r/b", "/r/c", "/ref/d"], mtimes=[1, 2, 3, 4])
    pairs = [
        Pair(1, 2, "/r/a", "/r/b", 60, 70, 70, 5, False, "near"),
        Pair(2, 3, "/r/b", "/r/c", 60, 70, 70, 5, False, "near"),
    ]
    groups = group_pairs(pairs, t, min_similarity=50)
    # c is similar to b only, not to a: it cannot join a's group (no chaining), and b is a's only
    # member, so b leads both (each member is similar to its reference; no file with a partner is left out).
    assert [[m.path for m in g.members] for g in groups] == [["/r/b", "/r/a", "/r/c"]]
    assert groups[0].members[1].similarity == groups[0].members[2].similarity == 70
    assert group_pairs(pairs[:1], t, min_similarity=50)[0].reference.path == "/r/a"  # the oldest, when it can be
    pairs.append(Pair(3, 4, "/r/c", "/ref/d", 40, 90, 50, 5, False, "contained"))
    groups = group_pairs(pairs, t, min_similarity=50)
    # c lies in d: d, the file c is contained in, leads c although newer.
    assert [[m.path for m in g.members] for g in groups] == [["/ref/d", "/r/c"], ["/r/a", "/r/b"]]
    # A reference folder wins over age.
    groups = group_pairs(pairs, t, min_similarity=50, reference_roots=["/ref"])
    assert groups[0].reference.path == "/ref/d"
    assert [m.path for m in groups[0].members] == ["/ref/d", "/r/c"]
    # The member's scores are oriented (reference, member).
    assert groups[0].members[1].pair.containment_a == 50 and groups[0].members[1].pair.containment_b == 90
    # Raising the threshold drops weak members, never copies.
    assert group_pairs(pairs, t, min_similarity=95) == []


def test_group_pairs_exact_units_share_partners() -> None:
    t = _fake_table(["/x/a", "/x/a2", "/x/b", "/x/b2"], mtimes=[5, 1, 3, 4], checksums=[b"A", b"A", b"B", b"B"])
    pairs = [
        Pair(1, 2, "/x/a", "/x/a2", 100, 100, 100, 0, True, "exact"),
        Pair(3, 4, "/x/b", "/x/b2", 100, 100, 100, 0, True, "exact"),
        Pair(1, 3, "/x/a", "/x/b", 80, 90, 85, 2, False, "near"),
    ]
    (g,) = group_pairs(pairs, t, min_similarity=50)
    # The oldest file of the whole unit is the reference; the other unit joins through a.
    assert g.reference.path == "/x/a2"
    assert {m.path: (m.kind, m.similarity) for m in g.members} == {
        "/x/a2": ("exact", 100.0), "/x/a": ("exact", 100.0), "/x/b": ("near", 90.0), "/x/b2": ("near", 90.0),
    }
    assert g.kind == "near"


def _fake_table(paths: list[str], mtimes: list[int], checksums: list[bytes] | None = None):
    from simscan.similarity.memory import MemoryFileTable

    n = len(paths)
    ck = checksums or [bytes([i]) * 16 for i in range(n)]
    return MemoryFileTable(
        ids=np.arange(1, n + 1), paths=paths, raw_paths=[os.fsencode(p) for p in paths],
        size=np.full(n, 10), mtime_ns=np.array(mtimes), is_text=np.ones(n, bool), encoding=["utf-8"] * n,
        checksum=ck, partial=np.zeros(n, np.int64), content_hash=ck, simhash=np.zeros(n, np.uint64),
        fp_count=np.ones(n, np.int64), units=np.ones(n, np.int64),
    )


def test_query_file_outside_the_index(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _mixed_tree(root)
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    doc2 = (root / "doc2.txt").read_text()
    q = outside / "q.txt"
    # A new file quoting most of doc2 in the middle of unrelated text.
    q.write_text(words(5000, 200) + "\n" + doc2[: len(doc2) * 3 // 4] + "\n" + words(5001, 200))
    with Index.open(idx, readonly=True) as ix:
        res = query(ix, q, min_similarity=0)
        assert res, "the quoted file must be found"
        top = res[0]
        assert top.a_path == str(q) and top.a_id == -1 and top.b_path == str(root / "doc2.txt")
        assert top.containment_b > 50 and top.kind == "contained"
        # Scores equal set arithmetic on the stored fingerprints (no common values here).
        from simscan.fingerprint import fingerprint_file

        qfp = fingerprint_file(q)
        b_units = int(ix.files_by_ids([top.b_id]).units[0])
        t = max(DEFAULT_PARAMS.text_level(qfp.units), DEFAULT_PARAMS.text_level(b_units))
        qs, bs = at_window(fp_spans(qfp), t), at_window(span_sets(ix, [top.b_id])[top.b_id], t)
        assert top.containment_a == pytest.approx(100 * len(qs & bs) / len(qs), abs=1e-3)
        assert top.resemblance == pytest.approx(100 * len(qs & bs) / len(qs | bs), abs=1e-3)
        # Querying an indexed file: itself is left out, its copy is found as exact.
        res = query(ix, root / "doc3.txt")
        assert str(root / "doc3.txt") not in {p.b_path for p in res}
        assert any(p.b_path == str(root / "copy_of_doc3.txt") and p.kind == "exact" for p in res)
        assert all(p.a_id > 0 for p in res)
        # A file sharing nothing: no result.
        (outside / "new.txt").write_text(words(4242, 300))
        assert query(ix, outside / "new.txt") == []


def test_default_threshold_is_a_percentage() -> None:
    assert 0 < DEFAULT_MIN_SIMILARITY < 100


# ----------------------------------------------------------------- vectorised helpers


def test_pairs_in_runs_equals_itertools() -> None:
    rng = np.random.default_rng(3)
    keys = np.sort(rng.integers(0, 40, 300))
    starts, lengths = run_bounds(keys)
    got = set()
    for i, j in pairs_in_runs(starts, lengths, max_pairs=97):
        got.update(zip(i.tolist(), j.tolist()))
    want = {(i, j) for i, j in itertools.combinations(range(keys.size), 2) if keys[i] == keys[j]}
    assert got == want


@pytest.mark.parametrize("max_tags", [1 << 16, 3])
def test_intersect_counts_equals_sets(monkeypatch, max_tags: int) -> None:
    from simscan.similarity import arrays

    monkeypatch.setattr(arrays, "_MAX_TAGS", max_tags)  # batches cut by their pair count too
    rng = np.random.default_rng(4)
    # Small values (many shared) and hash-like ones (the sort's fast path), a row paired with itself.
    for high in (200, 2**63):
        sets = [np.unique(rng.integers(0, 200, rng.integers(0, 60))).astype(np.uint64) for _ in range(30)]
        if high > 200:
            pool = rng.integers(0, high, 300, dtype=np.uint64)
            sets = [np.unique(rng.choice(pool, rng.integers(0, 60))) for _ in range(30)]
        offsets = np.zeros(31, np.int64)
        offsets[1:] = np.cumsum([s.size for s in sets])
        values = np.concatenate(sets)
        a = rng.integers(0, 30, 200)
        b = rng.integers(0, 30, 200)
        for batch in (50, 1 << 23):
            got = intersect_counts(offsets, values, a, b, batch=batch)
            want = [len(set(sets[x].tolist()) & set(sets[y].tolist())) for x, y in zip(a, b)]
            assert got.tolist() == want


def test_popcount() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2**63, 1000, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 1000, dtype=np.uint64)
    assert popcount64(x).tolist() == [int(v).bit_count() for v in x]


def test_simhash_rescues_families_above_the_cut_off(tmp_path: Path) -> None:
    """30 versions of one long text: every fingerprint is 'common' under a cut-off of 10, so
    only the simhash tables can pair them; they are then scored on their full sets."""
    root = tmp_path / "fam"
    root.mkdir()
    base = words(3, 3000).split(" ")
    for i in range(30):
        version = list(base)
        version[100 + 50 * i] = "changed"  # one word differs per version
        (root / f"v{i:02d}.txt").write_text(" ".join(version))
    t, ids, off, vals = table_from_paths(sorted(root.iterdir()))
    tight = SimilarityParams(common_min_df=10, common_fraction=0.0, simhash_k=3)
    pa = compute_pair_arrays(t, ids, off, vals, min_similarity=50, params=tight)
    assert pa.a.size > 100 and (pa.distance <= 3).all()  # most of the 435 pairs
    assert (pa.best >= 90).all()
    no_simhash = SimilarityParams(common_min_df=10, common_fraction=0.0, simhash_k=0)
    pb = compute_pair_arrays(t, ids, off, vals, min_similarity=50, params=no_simhash)
    assert pb.a.size <= pa.a.size
    # Without the cut-off every pair is found by the inverted index, with the same scores.
    full = compute_pair_arrays(t, ids, off, vals, min_similarity=50, params=SimilarityParams(simhash_k=3))
    assert full.a.size == 30 * 29 // 2
    got = {(int(a), int(b)): float(r) for a, b, r in zip(pa.a, pa.b, pa.resemblance)}
    ref = {(int(a), int(b)): float(r) for a, b, r in zip(full.a, full.b, full.resemblance)}
    assert all(ref[k] == pytest.approx(v) for k, v in got.items())


def test_query_finds_copies_of_short_files(tmp_path: Path) -> None:
    """A file too short for fingerprints is still matched with its copies (by checksum)."""
    root = tmp_path / "short"
    root.mkdir()
    (root / "a.txt").write_text("Hello, world.\n")
    (root / "b.txt").write_text("Hello, world.\n")
    (root / "c.txt").write_text("Hello, world.\r\n", encoding="utf-16")
    (root / "d.txt").write_text("Something else entirely.\n")
    (root / "0.txt").write_text("Hello, world.\n", encoding="utf-16")  # a content copy sorting first by name
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    q = tmp_path / "q.txt"
    q.write_text("Hello, world.\n")
    with Index.open(idx, readonly=True) as ix:
        res = query(ix, q)
    # Listed as `pairs` lists them: at one score, exact copies before content copies.
    assert [(Path(p.b_path).name, p.kind) for p in res] == [("a.txt", "exact"), ("b.txt", "exact"),
                                                            ("0.txt", "content"), ("c.txt", "content")]
    # Found by a seek of the partial index on such files, not a read of the whole table.
    with Index.open(idx, readonly=True) as ix:
        plan = ix.connection.execute("EXPLAIN QUERY PLAN " + BARE_COPIES_SQL, (b"x", 1)).fetchall()
    assert "USING INDEX files_bare" in " ".join(str(r[-1]) for r in plan)


def test_group_pairs_duplicates_and_fresh_lists() -> None:
    t = _fake_table(["/d/a", "/d/b", "/d/c"], mtimes=[1, 2, 3])
    pairs = [
        Pair(1, 2, "/d/a", "/d/b", 30, 40, 40, 5, False, "near"),
        Pair(2, 1, "/d/b", "/d/a", 60, 70, 70, 5, False, "near"),  # the same two files again
    ]
    (g,) = group_pairs(pairs, t, min_similarity=20)
    assert [(m.path, m.similarity) for m in g.members] == [("/d/a", 100.0), ("/d/b", 70.0)]
    # Another list of the same length is read afresh (the column cache is per list object).
    other = [
        Pair(1, 3, "/d/a", "/d/c", 50, 50, 50, 5, False, "near"),
        Pair(2, 3, "/d/b", "/d/c", 10, 10, 10, 5, False, "near"),
    ]
    (g,) = group_pairs(other, t, min_similarity=20)
    assert [m.path for m in g.members] == ["/d/a", "/d/c"]
    # Members are ordered by similarity, best first, after the reference.
    many = [Pair(1, k, "/d/a", f"/d/{k}", 0, 0, s, 5, False, "near") for k, s in ((2, 30.0), (3, 90.0))]
    (g,) = group_pairs(many, t, min_similarity=20)
    assert [m.similarity for m in g.members] == [100.0, 90.0, 30.0]


def test_pair_budget_lowers_the_cut_off() -> None:
    lengths = np.array([2] * 10 + [10] * 5 + [40] * 3 + [80])  # pairs: 10, 225, 2340, (3160)
    assert lengths_cutoff(lengths, 50, 10**9) == 50
    assert lengths_cutoff(lengths, 50, 2575) == 50  # 10 + 225 + 2340: fits; 80 is over the cut-off
    assert lengths_cutoff(lengths, 50, 2574) == 10
    assert lengths_cutoff(lengths, 50, 235) == 10
    assert lengths_cutoff(lengths, 50, 234) == 2
    assert lengths_cutoff(lengths, 100, 10**9) == 100


def test_pair_budget_on_files(tmp_path: Path) -> None:
    """A budget too small for the shared header's posting lists drops the header, not the pair."""
    root = tmp_path / "b"
    root.mkdir()
    header = words(70, 250)
    for i in range(12):
        body = words(71, 200) + (" " + words(72, 20) if i == 1 else "") if i < 2 else words(200 + i, 200)
        (root / f"f{i:02d}.txt").write_text(header + "\n" + body)
    t, ids, off, vals = table_from_paths(sorted(root.iterdir()))
    tight = SimilarityParams(pair_budget=50, simhash_k=0)
    pairs = to_pairs(compute_pair_arrays(t, ids, off, vals, min_similarity=DEFAULT_MIN_SIMILARITY, params=tight), t)
    assert {frozenset((Path(p.a_path).name, Path(p.b_path).name)) for p in pairs} == {
        frozenset(("f00.txt", "f01.txt"))}
    loose = compute_pair_arrays(t, ids, off, vals, min_similarity=DEFAULT_MIN_SIMILARITY)
    assert loose.a.size == 12 * 11 // 2  # with the default budget the header pairs everyone
    assert pairs[0].kind == "near" and pairs[0].containment_a == pytest.approx(100.0)


def test_find_pairs_reads_one_snapshot_while_a_scan_commits(tmp_path: Path) -> None:
    """A writer commits between the reads of the file table and of the fingerprints: the pairs
    still come from one state of the index."""
    from simscan.fingerprint import fingerprint_file
    from simscan.index import FileRecord

    root = tmp_path / "t"
    root.mkdir()
    base = words(40, 400)
    (root / "a.txt").write_text(base)
    (root / "b.txt").write_text(base + " " + words(41, 30))
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    (root / "c.txt").write_text(words(42, 400))

    class Interleaved:
        """The real index; after the file table is read, another connection rewrites b.txt."""

        def __init__(self, ix: Index) -> None:
            self.ix = ix

        def __getattr__(self, name: str):
            return getattr(self.ix, name)

        def files(self):
            table = self.ix.files()
            st = os.stat(root / "c.txt")
            rec = FileRecord.from_fingerprints(os.fsencode(root / "b.txt"), st.st_dev, st.st_ino, st.st_mtime_ns,
                                               fingerprint_file(root / "c.txt"))
            with Index.open(idx) as writer:
                writer.write_files([rec])
            return table

    with Index.open(idx, readonly=True) as ix:
        pairs = find_pairs(Interleaved(ix))
    assert [(Path(p.a_path).name, Path(p.b_path).name) for p in pairs] == [("a.txt", "b.txt")]
    with Index.open(idx, readonly=True) as ix:  # the next read sees the new state
        assert find_pairs(ix) == []


def _book_index(tmp_path: Path) -> tuple[Path, str]:
    """(index, the book's text) of a folder holding a long text and five unrelated ones."""
    root = tmp_path / "long"
    root.mkdir()
    book = words(50, 3000)
    (root / "book.txt").write_text(book)
    for i in range(5):
        (root / f"other{i}.txt").write_text(words(60 + i, 500))
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    return idx, book


@pytest.mark.parametrize("chars", [200, 400])
def test_query_of_a_short_excerpt_scans_every_set(tmp_path: Path, chars: int) -> None:
    """A short query has (almost) no posted fingerprints; it is still found in a long file.  Below ~300
    units even its values of span 128 are too few: it reads every stored set, and reports that pass."""
    idx, book = _book_index(tmp_path)
    q = tmp_path / "excerpt.txt"
    q.write_text(book[5000 : 5000 + chars])
    from simscan.fingerprint import fingerprint_file
    from simscan.similarity.engine import MIN_POSTED_FOR_LOOKUP, coarse_values

    with Index.open(idx, readonly=True) as ix:
        qfp = fingerprint_file(q)
        qs = fingerprint_set(qfp)
        # Many fingerprints, but few that a long file keeps too, and fewer of them posted.
        assert qs.size > 0 and int(ix.posted_mask(coarse_values(qfp, qs)).sum()) < MIN_POSTED_FOR_LOOKUP
        full_pass = int(ix.posted_mask(coarse_values(qfp, qs), coarse_values(qfp, qfp.meta.d)).sum()) < \
            MIN_POSTED_FOR_LOOKUP
        seen: list = []
        res = query(ix, q, min_similarity=0, progress=seen.append)
    assert [Path(p.b_path).name for p in res] == ["book.txt"]
    assert res[0].containment_a > 50 and res[0].kind == "contained"
    assert full_pass == (chars == 200)
    if full_pass:  # the pass (seconds at a million files) is reported, from none of the 6 stored sets to all
        assert {r.phase for r in seen} == {"sets"}
        assert [(r.files_done, r.files_total) for r in (seen[0], seen[-1])] == [(0, 6), (6, 6)]
    else:
        assert seen == []


def test_query_of_a_paragraph_uses_the_index(tmp_path: Path) -> None:
    """A paragraph (~550 characters) holds values of span 128, which every text posts: the inverted
    index finds the long file it comes from, with no pass over every stored set."""
    from simscan.fingerprint import fingerprint_file
    from simscan.similarity.engine import MIN_POSTED_FOR_LOOKUP, coarse_values

    idx, book = _book_index(tmp_path)
    found = 0
    for k, at in enumerate(range(2000, 14000, 1500)):
        q = tmp_path / f"excerpt{k}.txt"
        q.write_text(book[at : at + 550])
        with Index.open(idx, readonly=True) as ix:
            qfp = fingerprint_file(q)
            qs = fingerprint_set(qfp)
            spans = coarse_values(qfp, qfp.meta.d)
            assert int(ix.posted_mask(coarse_values(qfp, qs), spans).sum()) >= MIN_POSTED_FOR_LOOKUP
            # (the 1-in-8 sample alone would have sent it to the full pass)
            found += int(ix.posted_mask(coarse_values(qfp, qs)).sum()) < MIN_POSTED_FOR_LOOKUP
            ix.iter_fingerprints = None  # the full pass is not taken: it would fail now
            seen: list = []
            res = query(ix, q, min_similarity=0, progress=seen.append)
        assert [Path(p.b_path).name for p in res] == ["book.txt"], at
        assert seen == []  # (no pass, nothing to report)
        assert res[0].kind == "contained" and res[0].containment_a > 50
    assert found >= 6  # most of the 8 excerpts


def test_scan_holders_equals_a_plain_lookup(tmp_path: Path, monkeypatch) -> None:
    """The full pass of a short query (``engine._scan_holders``: streamed batches, a low-bits table,
    then exact membership) finds exactly the (value, file) pairs a plain lookup finds, including
    query values that share their low 16 bits with stored values they are not."""
    from simscan.similarity import engine

    root = tmp_path / "t"
    _mixed_tree(root)
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    monkeypatch.setattr(engine, "_SCAN_CHUNK", 3)  # several batches
    with Index.open(idx, readonly=True) as ix:
        ids, offsets, values = ix.fingerprints(None, kind=SCORE_KIND)
        batches = list(ix.iter_fingerprints(SCORE_KIND, rows=3))
        rng = np.random.default_rng(2)
        stored = rng.choice(values, 40, replace=False)
        decoys = (stored ^ np.uint64(1 << 40))[:20]  # same low 16 bits, other values
        qset = np.unique(np.concatenate((stored, decoys, rng.integers(0, 2**63, 10, dtype=np.uint64))))
        got_v, got_f = engine._scan_holders(ix, qset)
    assert np.array_equal(np.concatenate([b[0] for b in batches]), ids)
    assert np.array_equal(np.concatenate([b[2] for b in batches]), values)
    owner = np.repeat(ids, np.diff(offsets))
    want = sorted((int(v), int(f)) for v, f in zip(values, owner) if int(v) in set(qset.tolist()))
    assert sorted(zip(got_v.tolist(), got_f.tolist())) == want and len(want) >= 40


def test_results_do_not_depend_on_the_order_files_were_indexed(tmp_path: Path):
    # Equally old files with paths of one length: the reference and the pairs' copy representative
    # were the lowest file id, i.e. the order a scan happened to read them (a scan resumed after an
    # interruption gave other groups than a fresh scan of the same files).  Now: path order.
    from simscan.scanner import ScanRequest, run_scan

    text = words(5, 400)
    names = ["v11_MASM.json", "v10_MASM.json", "v12_MASM.json"]
    results = []
    for order in (names, names[::-1]):
        root, idx = tmp_path / "-".join(order[0][:3]) / "x", tmp_path / f"{order[0][:3]}.db"
        root.mkdir(parents=True)
        for name in order:  # one scan per file: ids in this order
            (root / name).write_text(text + words(6, 120) if name.startswith("v12") else text)
            os.utime(root / name, ns=(10**18, 10**18))
            run_scan(ScanRequest([root], index_path=idx, jobs=1))
        with Index.open(idx, readonly=True) as ix:
            pairs = find_pairs(ix, min_similarity=DEFAULT_MIN_SIMILARITY)
            groups = find_groups(ix, min_similarity=DEFAULT_MIN_SIMILARITY)
        results.append((
            sorted((Path(p.a_path).name, Path(p.b_path).name, p.kind, round(p.best, 3)) for p in pairs),
            [[Path(m.path).name for m in g.members] for g in groups],
        ))
    assert results[0] == results[1]
    assert results[0][1] == [["v10_MASM.json", "v11_MASM.json", "v12_MASM.json"]]


def test_drop_values_equals_setdiff_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    from simscan.similarity import views
    from simscan.similarity.core import ignore_values
    from simscan.similarity.views import drop_values

    rng = np.random.default_rng(4)
    rows = [np.unique(rng.integers(0, 300, rng.integers(0, 40)).astype(np.uint64)) for _ in range(50)]
    offsets = np.concatenate(([0], np.cumsum([r.size for r in rows]))).astype(np.int64)
    values = np.concatenate(rows + [np.array([7, 7], np.uint64)])  # a buffer longer than the CSR
    drop = np.frombuffer(ignore_values([rng.integers(0, 300, 60), np.array([5, 1, 5])]), "<u8").astype(np.uint64)
    assert np.all(np.diff(drop) > 0)
    off2, val2 = drop_values(offsets, values, drop)
    for k, r in enumerate(rows):
        assert np.array_equal(val2[off2[k] : off2[k + 1]], np.setdiff1d(r, drop))
    off3, val3 = drop_values(offsets, values, np.empty(0, np.uint64))
    assert np.array_equal(off3, offsets) and np.array_equal(val3, values[: offsets[-1]])
    # In place, and slice by slice (slices far smaller than the CSR): the same sets.
    monkeypatch.setattr(views, "_COMPACT_SLICE", 7)
    off4, val4 = drop_values(offsets, values.copy(), drop, consume=True)
    assert np.array_equal(off4, off2) and np.array_equal(val4, val2)
    # Most values dropped (a text every file repeats): the rows' losses are counted the other way.
    most = np.arange(0, 290, dtype=np.uint64)
    off5, val5 = drop_values(offsets, values.copy(), most, consume=True)
    for k, r in enumerate(rows):
        assert np.array_equal(val5[off5[k] : off5[k + 1]], np.setdiff1d(r, most))


def test_query_finds_files_whose_postings_are_pending(tmp_path: Path) -> None:
    """A scan stopped before its posting pass leaves files in ``unposted``: query finds them all
    the same (it answered "no similar files" for a byte copy), and the same as once posted."""
    from simscan.fingerprint import fingerprint_file
    from simscan.index import FileRecord

    root = tmp_path / "tree"
    root.mkdir()
    base = words(40, 3000)  # long: looked up in the inverted index, not by a full scan
    (root / "orig.txt").write_text(base)
    (root / "edit.txt").write_text(base[:9000] + " " + words(41, 300) + " " + base[9000:])
    (root / "other.txt").write_text(words(42, 3000))
    recs = []
    for p in sorted(root.iterdir()):
        st = os.stat(p)
        recs.append(FileRecord.from_fingerprints(os.fsencode(p), st.st_dev, st.st_ino, st.st_mtime_ns,
                                                 fingerprint_file(p)))
    idx = tmp_path / "i.sqlite3"
    with Index.open(idx) as ix:
        ix.write_files(recs, defer_postings=True)
        assert ix.pending_postings() == 3
    q = tmp_path / "copy.txt"
    q.write_text(base)

    def found() -> list[tuple[str, str, float]]:
        with Index.open(idx, readonly=True) as ix:
            return [(Path(p.b_path).name, p.kind, p.best) for p in query(ix, q, min_similarity=0)]

    pending = found()
    assert [n for n, _, _ in pending] == ["orig.txt", "edit.txt"] and pending[0][1] == "exact"
    with Index.open(idx) as ix:
        ix.post_pending()
    assert found() == pending


def test_query_leaves_out_boilerplate_as_pairs_do(tmp_path: Path) -> None:
    """70 files (more than the common cut-off of 50) each open with one shared passage, then text
    of their own: pairs finds nothing, and neither does a query of any of them (it once scored the
    passage's unposted values, and listed all 69 others at ~27 %); the scores of query equal those
    of pairs for every file."""
    root = tmp_path / "tree"
    root.mkdir()
    shared = words(50, 350)
    # (~6,000 units each: one fingerprint level for all, see ``levels``; a passage's values of a
    # finer level are held only by the files that keep that level, and can escape the cut-off)
    for i in range(70):
        (root / f"f{i:02d}.txt").write_text(shared + "\n\n" + words(100 + i, 700))
    (root / "f00-edit.txt").write_text(shared + "\n\n" + words(100, 700)[:3000] + " " + words(99, 100))
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    with Index.open(idx, readonly=True) as ix:
        pairs = find_pairs(ix, min_similarity=0, cache=False)
        want: dict[str, dict[str, float]] = {}
        for p in pairs:
            a, b = Path(p.a_path).name, Path(p.b_path).name
            want.setdefault(a, {})[b] = want.setdefault(b, {})[a] = p.best
        assert set(want) == {"f00.txt", "f00-edit.txt"}, "only the edited pair shares more than the passage"
        for f in sorted(root.iterdir()):
            got = {Path(p.b_path).name: p.best for p in query(ix, f, min_similarity=0)}
            assert got == pytest.approx(want.get(f.name, {}), abs=1e-3), f.name
