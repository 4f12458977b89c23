"""The SQLite index on real files: schema, writes, reads, the inverted index, errors, locking."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simscan.fingerprint import fingerprint_bytes
from simscan.index import (
    SCHEMA_VERSION,
    FileRecord,
    Index,
    IndexCorrupt,
    IndexDamaged,
    IndexLocked,
    IndexUnavailable,
    NotAnIndex,
    RefusedToMove,
    default_index_path,
    move_aside,
    posting_spans,
    rebuild,
)
from simscan.model import ALGORITHM_VERSION, FingerprintMeta
from tests.helpers_index import make_newer, posted_values, sampled
from tests.helpers_tree import words


def _records(n: int, seed: int = 0, prefix: bytes = b"/data/") -> list[FileRecord]:
    rng = np.random.default_rng(seed)
    base = words(rng, 6000)
    out = []
    for i in range(n):
        # Pairs of files share their first half, so the inverted index has something to find.
        data = base[: 1000 + 200 * (i % 5)] + words(rng, 3000)
        out.append(
            FileRecord.from_fingerprints(prefix + b"f%03d.txt" % i, 1, 100 + i, 1_000 + i, fingerprint_bytes(data))
        )
    return out


def _brute_postings(recs: dict[int, FileRecord]) -> set[tuple[int, int]]:
    out = set()
    for fid, r in recs.items():
        spans = FingerprintMeta.from_blob(r.meta, r.fps.size).d.tolist() if r.is_text and r.meta else None
        out.update((v, fid) for v in posted_values(r.fps.tolist(), spans))
    return out


def _stored_postings(ix: Index) -> set[tuple[int, int]]:
    rows = ix.connection.execute("SELECT fp, file_id FROM postings").fetchall()
    return {(int(np.int64(fp).view(np.uint64)), fid) for fp, fid in rows}


def test_new_index_is_private_wal_and_versioned(tmp_path: Path):
    p = tmp_path / "sub" / "idx.sqlite3"
    with Index.open(p) as ix:
        c = ix.connection
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert c.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert c.execute("PRAGMA busy_timeout").fetchone()[0] > 0
        assert c.execute("PRAGMA page_size").fetchone()[0] == 8192
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    # Reopening does not migrate again or lose anything.
    with Index.open(p) as ix:
        assert ix.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_default_index_path_honours_env(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("SIMSCAN_INDEX", str(tmp_path / "x.db"))
    assert default_index_path() == tmp_path / "x.db"
    monkeypatch.delenv("SIMSCAN_INDEX")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_index_path() == tmp_path / "xdg" / "simscan" / "index.sqlite3"


def test_write_and_read_back_columns_and_csr(tmp_path: Path):
    recs = _records(12)
    with Index.open(tmp_path / "i.db") as ix:
        ids = ix.write_files(recs)
        ft = ix.files()
        assert list(ft.ids) == list(ids)
        for i, r in enumerate(recs):
            assert ft.raw_paths[i] == r.path and ft.paths[i] == os.fsdecode(r.path)
            assert ft.size[i] == r.size and ft.mtime_ns[i] == r.mtime_ns
            assert ft.checksum[i] == r.checksum and ft.content_hash[i] == r.content_hash
            assert int(ft.simhash[i]) == r.simhash and ft.partial[i] == r.partial
            assert ft.fp_count[i] == r.fps.size and ft.units[i] == r.units and ft.is_text[i]
        for kind in ("rolling", "anchored", "all"):
            fids, off, vals = ix.fingerprints(kind=kind)
            assert list(fids) == list(ids)
            for i, r in enumerate(recs):
                got = vals[off[i] : off[i + 1]]
                want = {"rolling": r.fps[: r.n_rolling], "anchored": r.fps[r.n_rolling :], "all": r.fps}[kind]
                assert got.dtype == np.uint64 and np.array_equal(got, want)
        sub, off, vals = ix.fingerprints(np.array([ids[3], ids[1]]), kind="all")
        assert list(sub) == sorted([ids[1], ids[3]])
        assert np.array_equal(vals[off[0] : off[1]], recs[1].fps)


def test_inverted_index_matches_brute_force(tmp_path: Path):
    recs = _records(20)
    with Index.open(tmp_path / "i.db") as ix:
        ids = ix.write_files(recs)
        by_id = dict(zip(ids.tolist(), recs))
        assert _stored_postings(ix) == _brute_postings(by_id)
        query = np.unique(np.concatenate([r.fps for r in recs[:3]]))
        vals, fids = ix.files_with_fingerprints(query)  # (no spans: the sampled values are looked up)
        want = sorted((int(v), fid) for v, fid in _brute_postings(by_id) if v in set(query.tolist()) and sampled(v))
        assert list(zip(vals.tolist(), fids.tolist())) == want
        assert len(want) > 0
        # With its spans, a text's values of span 128 are looked up too.
        q = recs[1]
        spans = FingerprintMeta.from_blob(q.meta, q.fps.size).d
        vals, fids = ix.files_with_fingerprints(q.fps, spans)
        looked = {int(v) for v, d in zip(q.fps.tolist(), spans.tolist()) if sampled(int(v)) or d >= 128}
        want = sorted((v, fid) for v, fid in _brute_postings(by_id) if v in looked)
        assert list(zip(vals.tolist(), fids.tolist())) == want
        assert sum(d >= 128 and not sampled(int(v)) for v, d in zip(q.fps.tolist(), spans.tolist())) > 3
        # Every posted value of a file finds that file.
        v, f = ix.files_with_fingerprints(recs[7].fps)
        assert v.size > 0 and int(ids[7]) in set(f.tolist())


def test_a_passage_of_177_units_is_always_found_by_the_inverted_index(tmp_path: Path):
    """The posting rule's guarantee (``simscan.index.postings``): two texts sharing a run of 128 + 49
    units both post a value of it, so looking up a text's values of span 128 finds every file that
    shares such a run with it -- at every offset, not with some probability (the sample alone misses)."""
    rng = np.random.default_rng(177)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    book = "".join(rng.choice(letters, 40_000))  # no spaces: a unit is a character
    recs = [FileRecord.from_fingerprints(b"/data/book.txt", 1, 1, 1, fingerprint_bytes(book.encode()))]
    recs += [FileRecord.from_fingerprints(b"/data/o%d.txt" % i, 1, 2 + i, 1, fingerprint_bytes(
        "".join(rng.choice(letters, 5_000)).encode())) for i in range(5)]
    with Index.open(tmp_path / "i.db") as ix:
        book_id = int(ix.write_files(recs)[0])
        by_sample = 0
        for at in rng.integers(0, len(book) - 177, 60).tolist():
            q = fingerprint_bytes(book[at : at + 177].encode())
            values = np.concatenate((q.rolling, q.anchored))
            _v, f = ix.files_with_fingerprints(values, q.meta.d)
            assert book_id in f.tolist(), at
            by_sample += book_id in ix.files_with_fingerprints(values)[1].tolist()
        assert by_sample < 50


def test_a_query_finds_short_files_that_lie_wholly_in_it(tmp_path: Path):
    """A file shorter than the guarantee's 177 units posts its rightmost minimum (its whole text is
    the stretch: span 128), which inside a longer query has a smaller span: a query of a few hundred
    values looks every value up, so each such file is found (the span rule alone missed ~6 %)."""
    from simscan.similarity.engine import query_fingerprints

    rng = np.random.default_rng(100)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    texts = ["".join(rng.choice(letters, 100)) for _ in range(40)]
    recs = [FileRecord.from_fingerprints(b"/data/s%02d.txt" % i, 1, 10 + i, 1, fingerprint_bytes(t.encode()))
            for i, t in enumerate(texts)]
    with Index.open(tmp_path / "i.db") as ix:
        ids = ix.write_files(recs).tolist()
        for i, t in enumerate(texts):
            at = int(rng.integers(0, 500))
            q = "".join(rng.choice(letters, at)) + t + "".join(rng.choice(letters, 500 - at))
            got = query_fingerprints(ix, fingerprint_bytes(q.encode()), "/q.txt", min_similarity=0)
            assert ids[i] in [p.b_id for p in got], (i, at)


def test_an_index_of_the_sample_alone_is_brought_to_the_current_rule(tmp_path: Path):
    """An index whose postings an earlier simscan wrote (the 1-in-8 sample alone, ``posting_shift`` 3)
    is read by that rule until ``upgrade_postings`` (a scan's posting phase) has added every text's
    values of span 128; a writable open alone changes nothing.  The current rule is recorded so that
    an older simscan looks every value up (``posting_shift`` 0) and a damaged record is rebuilt."""
    from simscan.index import checks
    from simscan.index.postings import DEFAULT_RULE, DEFAULT_SHIFT

    recs = _records(12)
    p = tmp_path / "i.db"
    with Index.open(p) as ix:
        ids = ix.write_files(recs)
        by_id = dict(zip(ids.tolist(), recs))
        assert ix.posting_shift == DEFAULT_RULE and _stored_postings(ix) == _brute_postings(by_id)
    with sqlite3.connect(p) as c:
        assert checks.meta_get(c, "posting_shift") == "0" and checks.meta_get(c, "posting_rule") == str(DEFAULT_RULE)
        # as an earlier simscan left it
        c.execute("DELETE FROM postings")
        c.executemany("INSERT INTO postings(fp, file_id) VALUES (?, ?)", [
            (int(np.uint64(v).view(np.int64)), fid) for v, fid in _brute_postings(by_id) if sampled(v)])
        checks.meta_set(c, "posting_shift", DEFAULT_SHIFT, True)
    sample = _stored_postings_at(p)
    q = recs[4]
    spans = FingerprintMeta.from_blob(q.meta, q.fps.size).d
    for readonly in (True, False):
        with Index.open(p, readonly=readonly) as ix:
            assert ix.posting_shift == DEFAULT_SHIFT
            assert int(ix.posted_mask(q.fps, spans).sum()) == sum(sampled(v) for v in q.fps.tolist())
            assert int(ids[4]) in ix.files_with_fingerprints(q.fps, spans)[1].tolist()
    assert _stored_postings_at(p) == sample
    seen = []
    with Index.open(p) as ix:
        assert ix.upgrade_postings(on_progress=lambda d, t: seen.append((d, t))) == 12
        assert seen[-1] == (12, 12)
        assert ix.posting_shift == DEFAULT_RULE and ix.upgrade_postings() == 0
        assert _stored_postings(ix) == _brute_postings(by_id)
    with Index.open(p, readonly=True) as ix:
        assert ix.posting_shift == DEFAULT_RULE
    # The rule's second setting lost (a repair drops a damaged row): the postings are made again.
    with sqlite3.connect(p) as c:
        c.execute("DELETE FROM meta WHERE key = 'posting_rule'")
        c.execute("DELETE FROM postings WHERE file_id = ?", (int(ids[0]),))
    with pytest.raises(IndexDamaged), Index.open(p, readonly=True) as ix:
        ix.files_with_fingerprints(q.fps, spans)
    with Index.open(p) as ix:
        assert ix.posting_shift == DEFAULT_RULE and _stored_postings(ix) == _brute_postings(by_id)


def _stored_postings_at(p: Path) -> set[tuple[int, int]]:
    with Index.open(p, readonly=True) as ix:
        return _stored_postings(ix)


def test_replace_and_remove_keep_postings_exact(tmp_path: Path):
    recs = _records(10)
    # Binary files too (their values post by the sample alone: their spans are all 128).
    rng = np.random.default_rng(3)
    recs[6:8] = [FileRecord.from_fingerprints(b"/data/b%d.bin" % i, 1, 90 + i, 5, fingerprint_bytes(
        b"\0\1" + rng.bytes(300_000))) for i in range(2)]
    assert not recs[6].is_text and recs[6].fps.size > 100
    with Index.open(tmp_path / "i.db") as ix:
        ids = ix.write_files(recs)
        by_id = dict(zip(ids.tolist(), recs))
        # Same paths, new content: rows are replaced in place (same ids), old postings gone.
        newer = [FileRecord.from_fingerprints(r.path, 1, 500, 7, fingerprint_bytes(words(np.random.default_rng(i), 3000)))
                 for i, r in enumerate(recs[:4])]  # fmt: skip
        ids2 = ix.write_files(newer)
        assert list(ids2) == list(ids[:4])
        by_id.update(zip(ids2.tolist(), newer))
        assert _stored_postings(ix) == _brute_postings(by_id)
        assert ix.remove_paths([recs[5].path.decode(), b"/not/indexed", recs[7].path]) == 2
        del by_id[int(ids[5])], by_id[int(ids[7])]
        assert _stored_postings(ix) == _brute_postings(by_id)
        newer = [FileRecord.from_fingerprints(recs[6].path, 1, 96, 8, fingerprint_bytes(words(rng, 3000)))]
        by_id[int(ix.write_files(newer)[0])] = newer[0]  # a binary file replaced by a text
        assert _stored_postings(ix) == _brute_postings(by_id)
        assert int(ids[5]) not in ix.fingerprints(kind="all")[0].tolist()
        n = ix.connection.execute("SELECT count(*) FROM fingerprints WHERE file_id = ?", (int(ids[5]),)).fetchone()[0]
        assert n == 0


def test_error_rows_are_kept_but_not_offered(tmp_path: Path):
    recs = _records(3)
    bad = FileRecord(b"/data/\xff\xfeunreadable", 1, 9, 10, 11, error="cannot be read: Permission denied")
    with Index.open(tmp_path / "i.db") as ix:
        ix.write_files([*recs, bad])
        ft = ix.files()
        assert len(ft) == 3 and bad.path not in ft.raw_paths
        st = ix.stats()
        assert st["files"] == 4 and st["files_with_errors"] == 1
        row = ix.connection.execute("SELECT error, algorithm_version FROM files WHERE path = ?", (bad.path,)).fetchone()
        assert row == ("cannot be read: Permission denied", ALGORITHM_VERSION)


def test_undecodable_path_round_trips(tmp_path: Path):
    raw = b"/data/caf\xe9-\xff.txt"
    rec = FileRecord.from_fingerprints(raw, 1, 2, 3, fingerprint_bytes(b"some text " * 20))
    with Index.open(tmp_path / "i.db") as ix:
        ix.write_files([rec])
        ft = ix.files()
        assert ft.raw_paths == [raw] and os.fsencode(ft.paths[0]) == raw


def test_atomic_rolls_back_on_keyboard_interrupt(tmp_path: Path):
    with Index.open(tmp_path / "i.db") as ix:
        with pytest.raises(KeyboardInterrupt), ix.atomic():
            ix.write_files(_records(3))
            raise KeyboardInterrupt
        assert len(ix.files()) == 0
        with ix.atomic():
            ix.write_files(_records(2))
            with pytest.raises(ValueError), ix.atomic():
                ix.write_files(_records(2, prefix=b"/other/"))
                raise ValueError
        assert len(ix.files()) == 2


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path: Path):
    p = tmp_path / "notes.txt"
    p.write_bytes(b"this is not sqlite" * 300)
    for ro in (False, True):
        with pytest.raises(NotAnIndex) as ei:
            Index.open(p, readonly=ro)
        assert str(p) in str(ei.value) and "not a simscan index" in str(ei.value)
        assert "--rebuild" not in str(ei.value) and ei.value.exit_code == 3
    with pytest.raises(NotAnIndex) as ei:
        rebuild(p)  # never moves the user's own file
    assert str(p) in str(ei.value)
    with pytest.raises(RefusedToMove):
        move_aside(p)
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]  # no lock, no -wal, nothing moved
    assert p.read_bytes() == b"this is not sqlite" * 300


def test_a_fifo_or_a_folder_as_index_is_refused_at_once_and_nothing_is_written(tmp_path: Path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # opening it to read its header would block forever
    folder = tmp_path / "folder"
    folder.mkdir()
    for p, kind in ((fifo, "not a regular file"), (folder, "a folder")):
        for call, kw in ((Index.open, {"readonly": True}), (Index.open, {}), (rebuild, {})):
            with pytest.raises(NotAnIndex) as ei:
                call(p, **kw)
            assert str(p) in str(ei.value) and kind in str(ei.value) and ei.value.exit_code == 3
        with pytest.raises(RefusedToMove):
            move_aside(p)
    assert sorted(os.listdir(tmp_path)) == ["folder", "pipe"]  # no journal, lock or -wal beside them
    assert stat.S_ISFIFO(fifo.stat().st_mode) and os.listdir(folder) == []


def test_a_damaged_index_is_corrupt_and_rebuild_moves_it_aside(tmp_path: Path):
    p = tmp_path / "i.db"
    with Index.open(p) as ix:
        ix.write_files(_records(20))
    size = p.stat().st_size
    with open(p, "r+b") as f:  # keep the SQLite header, smash the rest
        f.seek(100)
        f.write(b"\xa5" * (size - 100))
    junk = p.read_bytes()
    with pytest.raises(IndexCorrupt) as ei:
        Index.open(p).files()
    assert str(p) in str(ei.value) and "--rebuild" in str(ei.value)
    ix, moved = rebuild(p)
    with ix:
        assert len(ix.files()) == 0
    assert moved is not None and moved.name.startswith("i.db.corrupt-")
    assert moved.read_bytes() == junk  # moved aside, never deleted


def test_readonly_open_of_an_empty_file_or_foreign_database_writes_nothing(tmp_path: Path):
    empty = tmp_path / "empty.txt"
    empty.touch()
    with pytest.raises(IndexUnavailable) as ei:  # no index yet (an empty file), as where nothing is
        Index.open(empty, readonly=True)
    assert not isinstance(ei.value, NotAnIndex)
    assert "no index" in str(ei.value) and "empty file" in str(ei.value) and "--rebuild" not in str(ei.value)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt"] and empty.stat().st_size == 0
    other = tmp_path / "places.sqlite"
    c = sqlite3.connect(other)
    c.execute("CREATE TABLE bookmarks (url TEXT)")
    c.commit()
    c.close()
    before = other.read_bytes()
    for ro in (True, False):
        with pytest.raises(NotAnIndex) as ei:
            Index.open(other, readonly=ro)
        assert "another program" in str(ei.value)
    with pytest.raises(NotAnIndex):
        rebuild(other)
    assert other.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "places.sqlite"]


def test_index_in_a_folder_whose_name_is_not_utf8(tmp_path: Path):
    folder = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(folder)
    p = Path(os.fsdecode(os.path.join(folder, b"i.db")))
    with Index.open(p) as ix:
        ix.write_files(_records(3))
    with Index.open(p, readonly=True) as ix:
        assert len(ix.files()) == 3 and ix.stats()["files"] == 3
    ix, moved = rebuild(p)
    ix.close()
    assert moved is not None and os.path.exists(os.fsencode(moved))


def test_rebuild_where_nothing_can_be_created_is_an_index_error(tmp_path: Path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("a file, not a folder")
    with pytest.raises(IndexUnavailable) as ei:
        rebuild(blocker / "i.db")
    assert str(blocker) in str(ei.value) and ei.value.exit_code == 3
    assert blocker.read_text() == "a file, not a folder"


def test_readonly_missing_and_newer_schema(tmp_path: Path):
    with pytest.raises(IndexUnavailable):
        Index.open(tmp_path / "none.db", readonly=True)
    assert not (tmp_path / "none.db").exists()
    p = tmp_path / "new.db"
    Index.open(p).close()
    make_newer(p)
    with pytest.raises(IndexUnavailable) as ei:
        Index.open(p)
    assert "newer simscan" in str(ei.value)


def test_readonly_connection_cannot_write(tmp_path: Path):
    p = tmp_path / "i.db"
    with Index.open(p) as ix:
        ix.write_files(_records(2))
    with Index.open(p, readonly=True) as ro:
        assert len(ro.files()) == 2
        with pytest.raises(sqlite3.OperationalError):
            ro.connection.execute("DELETE FROM files")


def test_scan_lock_is_exclusive_across_processes(tmp_path: Path):
    p = tmp_path / "i.db"
    Index.open(p).close()
    code = (
        "import sys, time\n"
        "from simscan.index import Index\n"
        f"ix = Index.open({str(p)!r}); ix.scan_lock(); print('locked', flush=True); sys.stdin.readline()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with Index.open(p) as ix:
            with pytest.raises(IndexLocked) as ei:
                ix.scan_lock()
            assert str(proc.pid) in str(ei.value)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)
    with Index.open(p) as ix:
        ix.scan_lock()  # free again once the holder is gone
        ix.release_scan_lock()


def test_files_by_ids_matches_the_full_snapshot(tmp_path: Path):
    with Index.open(tmp_path / "i.db") as ix:
        ids = ix.write_files(_records(8))
        full = ix.files()
        sub = ix.files_by_ids([int(ids[5]), int(ids[2]), 999])
        assert list(sub.ids) == [ids[2], ids[5]]
        for k, fid in enumerate(sub.ids):
            j = list(full.ids).index(fid)
            assert sub.raw_paths[k] == full.raw_paths[j] and sub.simhash[k] == full.simhash[j]
            assert sub.checksum[k] == full.checksum[j] and sub.size[k] == full.size[j]
        assert ix.file_count() == 8


def test_deferred_postings_equal_immediate_ones(tmp_path: Path):
    recs = _records(30)
    with Index.open(tmp_path / "now.db") as now, Index.open(tmp_path / "later.db") as later:
        ids = now.write_files(recs)
        later_ids = later.write_files(recs[:20], defer_postings=True)
        later.write_files(recs[20:], defer_postings=True)
        assert list(later_ids) == list(ids[:20])
        assert later.pending_postings() == 30 and _stored_postings(later) == set()
        # Findable while waiting (their stored sets are read), as once posted.
        got, want = later.files_with_fingerprints(recs[0].fps), now.files_with_fingerprints(recs[0].fps)
        assert want[0].size and all(np.array_equal(x, y) for x, y in zip(got, want))
        # Replacing and removing files that wait for their postings leaves nothing stale.
        newer = FileRecord.from_fingerprints(
            recs[3].path, 1, 77, 7, fingerprint_bytes(words(np.random.default_rng(5), 3000))
        )
        now.write_files([newer])
        later.write_files([newer], defer_postings=True)
        now.remove_paths([recs[4].path])
        later.remove_paths([recs[4].path])
        assert later.pending_postings() == 29
        seen = []
        assert later.post_pending(max_values=60, on_progress=lambda d, t: seen.append((d, t))) == 29
        assert len(seen) > 2 and seen[-1] == (29, 29)  # several sorted passes
        assert later.pending_postings() == 0
        assert _stored_postings(later) == _stored_postings(now) != set()
        assert later.post_pending() == 0


def test_migration_from_version_1_keeps_everything(tmp_path: Path):
    from simscan.index.schema import MIGRATIONS

    p = tmp_path / "v1.db"
    c = sqlite3.connect(p, isolation_level=None)
    for stmt in MIGRATIONS[1]:
        c.execute(stmt)
    c.execute("PRAGMA user_version = 1")
    c.execute(
        "INSERT INTO files(id, path, device, inode, size, mtime_ns, algorithm_version) VALUES (1, x'2f61', 1, 2, 3, 4, ?)",
        (ALGORITHM_VERSION,),
    )
    c.close()
    with Index.open(p) as ix:
        assert ix.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert ix.connection.execute("SELECT path FROM files").fetchall() == [(b"/a",)]
        assert ix.pending_postings() == 0


def test_readonly_open_never_upgrades_an_older_index(tmp_path: Path):
    from simscan.index.schema import MIGRATIONS

    p = tmp_path / "v1.db"
    c = sqlite3.connect(p, isolation_level=None)
    for stmt in MIGRATIONS[1]:
        c.execute(stmt)
    c.execute("PRAGMA user_version = 1")
    c.close()
    before = p.read_bytes()
    with pytest.raises(IndexUnavailable) as ei:
        Index.open(p, readonly=True)
    assert "older layout" in str(ei.value) and "simscan scan" in str(ei.value)
    assert p.read_bytes() == before
    with Index.open(p) as ix:  # a writable open (a scan) upgrades it
        assert ix.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with Index.open(p, readonly=True) as ix:
        assert ix.stats()["files"] == 0


def test_problems_of_old_runs_are_pruned(tmp_path: Path, monkeypatch):
    from simscan.index import store

    monkeypatch.setattr(store, "KEEP_RUNS", 3)
    with Index.open(tmp_path / "i.db") as ix:
        for k in range(6):
            rid = ix.begin_run([b"/r"], {})
            ix.add_problems(rid, [(b"/r/x", f"problem {k}")])
            ix.finish_run(rid, "done", {})
        assert ix.problems() == [("/r/x", "problem 5")]
        assert [r for _, r in ix.problems(last_run_only=False)] == ["problem 3", "problem 4", "problem 5"]
        assert len(ix.runs(100)) == 6


@pytest.mark.parametrize("from_memory", [False, True])
def test_posting_job_in_slices_equals_one_pass(tmp_path: Path, from_memory: bool):
    recs = _records(40)
    with Index.open(tmp_path / "a.db") as a, Index.open(tmp_path / "b.db") as b:
        a.write_files(recs)
        ids = b.write_files(recs, defer_postings=True)
        # The scanner hands over the pairs of the arrays it has just written instead of reading them back.
        # (in two runs, as two commits make them)
        runs = [b.posted_pairs(ids[k:k + 15].tolist(), [r.fps for r in recs[k:k + 15]],
                               [posting_spans(r) for r in recs[k:k + 15]]) for k in (0, 15)]
        pairs = ([f for f, _ in runs], [o for _, o in runs]) if from_memory else None
        job = b.posting_job(ids[:30].tolist(), slice_rows=7, pairs=pairs)
        assert pairs is None or pairs == ([], [])  # (the job takes the runs over)
        assert job.step() and job.step()
        # Another connection forgets one of the job's files half-way through the job.
        with Index.open(tmp_path / "b.db") as other:
            other.remove_paths([recs[2].path])
        assert job.remaining > 7
        job.finish()
        assert b.pending_postings() == 10
        b.post_pending()
        a.remove_paths([recs[2].path])
        assert _stored_postings(a) == _stored_postings(b) != set()


def test_inode_numbers_using_all_64_bits_are_stored(tmp_path: Path):
    big_ino, big_dev = (1 << 63) + 12345, (1 << 64) - 7
    rec = FileRecord.from_fingerprints(b"/r/big.txt", big_dev, big_ino, 5, fingerprint_bytes(b"x " * 400))
    with Index.open(tmp_path / "i.db") as ix:
        (fid,) = ix.write_files([rec])
        row = ix.identities_under([b"/r"])[b"/r/big.txt"]
        assert row[2:4] == (big_dev, big_ino)  # as os.stat reports them
        assert ix.paths_for_inodes([(big_dev, big_ino)]) == [((big_dev, big_ino), b"/r/big.txt")]
        ft = ix.files()
        assert ft.inode.dtype == np.int64 and int(ft.inode.view(np.uint64)[0]) == big_ino
        assert int(ft.device.view(np.uint64)[0]) == big_dev
        ix.rename_files([(int(fid), b"/r/moved.txt", big_dev, big_ino + 1, 42)])
        assert ix.identities_under([b"/r"])[b"/r/moved.txt"][7] == 42  # a rename changes the ctime: kept
        assert ix.paths_for_inodes([(big_dev, big_ino + 1)]) == [((big_dev, big_ino + 1), b"/r/moved.txt")]


@pytest.mark.parametrize("max_params", [None, 999])
def test_multi_row_inserts_store_every_row(tmp_path: Path, max_params: int | None):
    # Rows are bound a few hundred per statement (fewer when the library allows fewer parameters; 999 is
    # the lowest default SQLite ever had):
    # counts that are not a multiple of the statement size must lose or repeat nothing.
    recs = _records(7)
    many = [
        FileRecord(b"/m/%05d" % i, 1, 10_000 + i, i, 5, True, "utf-8", b"c" * 16, -i, b"h" * 16, i, 3,
                   recs[i % 7].fps, recs[i % 7].n_rolling)
        for i in range(1_203)
    ]  # fmt: skip
    # A few files with sets too large for the multi-row statement (> 64 KB blobs go one at a time).
    rng = np.random.default_rng(9)
    for k in (5, 600, 1_100):
        big = np.unique(rng.integers(0, 1 << 63, 10_000, dtype=np.uint64))
        many[k] = FileRecord(many[k].path, 1, many[k].inode, k, 5, True, "utf-8", b"c" * 16, -k, b"h" * 16, k, 3,
                             big, 4_000)  # fmt: skip
    with Index.open(tmp_path / "i.db") as ix, Index.open(tmp_path / "ref.db") as ref:
        if max_params is not None:
            ix.connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, max_params)
        ids = ix.write_files(many, defer_postings=True)
        assert ix.pending_postings() == len(many)
        ix.post_pending()
        # A plain reference: the same records written one at a time.
        for r in many:
            ref.write_files([r])
        assert list(ids) == list(range(1, len(many) + 1))
        ft = ix.files()
        assert [bytes(p) for p in ft.raw_paths] == [r.path for r in many]
        assert ft.inode.tolist() == [r.inode for r in many] and ft.partial.tolist() == [r.partial for r in many]
        fids, off, vals = ix.fingerprints(kind="all")
        assert list(fids) == list(ids)
        for i, r in enumerate(many):
            assert np.array_equal(vals[off[i] : off[i + 1]], r.fps)
        assert _stored_postings(ix) == _stored_postings(ref) == _brute_postings(dict(zip(ids.tolist(), many)))


@pytest.mark.parametrize("hint", ["exact", 0, "small", "large"])
def test_full_fingerprint_read_whatever_the_size_hint(tmp_path: Path, monkeypatch, hint) -> None:
    """A full read writes the blobs into an array sized from ``files.fp_count``; a count that
    disagrees with the blobs (too small: the rest is joined at the end; too large: trimmed) gives
    the same CSR as the one-by-one reads."""
    recs = _records(60, seed=9)
    idx = tmp_path / "i.sqlite3"
    with Index.open(idx) as ix:
        ix.write_files(recs)
        want = {int(i): v for i, v in zip(*_rows(ix))}
        exact = ix._fingerprint_count_hint()
        n = {"exact": exact, 0: 0, "small": exact // 3, "large": exact * 2 + 7}[hint]
        monkeypatch.setattr(Index, "_fingerprint_count_hint", lambda self: n)
        ids, offsets, values = ix.fingerprints(None, kind="all")
    assert exact == sum(r.fps.size for r in recs if r.error is None)
    got = {int(i): values[offsets[k] : offsets[k + 1]].tolist() for k, i in enumerate(ids)}
    assert got == want and values.dtype == np.uint64 and values.size == offsets[-1]


def _rows(ix: Index) -> tuple[list[int], list[list[int]]]:
    """Each file's stored values, read one file at a time (the path without a size hint)."""
    ids = [int(i) for i in ix.files().ids]
    out = []
    for i in ids:
        _, _off, v = ix.fingerprints([i], kind="all")
        out.append(v.tolist())
    return ids, out


def test_file_ids_are_never_reused(tmp_path: Path) -> None:
    """Removing the file with the highest id and adding another gives the new one a new id (a
    scan's postings waiting in memory under an id can never land on another file's row)."""
    recs = _records(5)
    with Index.open(tmp_path / "i.db") as ix:
        ids = ix.write_files(recs[:3]).tolist()
        ix.remove_ids([ids[-1]])
        (new,) = ix.write_files([recs[3]]).tolist()
        assert new > ids[-1]
    with Index.open(tmp_path / "i.db") as ix:  # the high-water mark is kept in the index
        ix.remove_ids([new])
        (again,) = ix.write_files([recs[4]]).tolist()
        assert again > new


def test_inserts_use_two_statement_shapes_per_table(tmp_path: Path, monkeypatch) -> None:
    """Rows are bound a fixed number per statement and the rest one a statement: a statement
    shape for every leftover count would fill the connection's cache with statements that each
    keep copies of their last bound blobs."""
    from simscan.index import store

    monkeypatch.setattr(store, "_ROWS_PER_INSERT", 8)
    monkeypatch.setattr(store, "_BLOB_ROWS_PER_INSERT", 4)
    recs = _records(60, seed=3)
    shapes: dict[str, set[int]] = {}

    def trace(sql: str) -> None:
        for table in ("files", "fingerprints", "postings", "unposted"):
            if sql.startswith(("INSERT INTO " + table + "(", "INSERT OR REPLACE INTO " + table + "(",
                               "INSERT OR IGNORE INTO " + table + "(")):
                shapes.setdefault(table, set()).add(sql.count("),(") + 1)

    with Index.open(tmp_path / "i.db") as ix:
        ix.connection.set_trace_callback(trace)
        start = 0
        for n in (1, 3, 5, 7, 9, 11, 13):  # batches leaving every remainder
            ix.write_files(recs[start : start + n])
            start += n
        ix.connection.set_trace_callback(None)
    assert shapes["files"] <= {8, 1} and shapes["fingerprints"] <= {4, 1}
    assert all(len(s) <= 2 for s in shapes.values()), shapes


def test_a_failing_read_of_fingerprints_is_an_index_error_when_iterated_too(tmp_path: Path):
    """``iter_fingerprints`` runs its query as it is iterated: a SQLite failure there is still an
    index error the CLI reports, not a traceback (found re-reading the change)."""
    from simscan.errors import SimscanError

    ix = Index.open(tmp_path / "i.db")
    ix.write_files(_records(3))
    batches = ix.iter_fingerprints()
    ix.connection.close()
    with pytest.raises(SimscanError):
        next(batches)
    with pytest.raises(SimscanError):
        ix.fingerprints(None)


def test_a_look_at_the_scan_lock_does_not_fail_a_starting_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``scan_running`` (stats, the window) holds a shared lock on the lock file for a moment; a scan
    taking the lock just then waits for the look to end rather than reporting "another scan", however
    long the looker is descheduled; a scan (an exclusive holder) is refused at once."""
    import fcntl
    import threading

    from simscan.index import store

    p = tmp_path / "i.db"
    Index.open(p).close()
    looker = os.open(f"{p}.lock", os.O_RDONLY | os.O_CREAT, 0o600)
    fcntl.flock(looker, fcntl.LOCK_SH | fcntl.LOCK_NB)  # the look, caught in the act ...
    ended = threading.Timer(0.3, fcntl.flock, (looker, fcntl.LOCK_UN))  # ... and slow to end
    ended.start()
    try:
        with Index.open(p) as ix:
            ix.scan_lock()
            assert ix.scan_running()
            ix.release_scan_lock()
    finally:
        ended.join()
    # A look that never ends: refused after the wait, naming the lock file.
    monkeypatch.setattr(store, "_LOOK_WAIT_S", 0.05)
    fcntl.flock(looker, fcntl.LOCK_SH | fcntl.LOCK_NB)
    with Index.open(p) as ix, pytest.raises(IndexLocked, match=r"i\.db\.lock"):
        ix.scan_lock()
    os.close(looker)
    # A scan holds it exclusively: refused at once, as another scan.
    monkeypatch.setattr(store, "_LOOK_WAIT_S", 60.0)
    scan = os.open(f"{p}.lock", os.O_RDWR)
    fcntl.flock(scan, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with Index.open(p) as ix, pytest.raises(IndexLocked, match="another scan"):
        ix.scan_lock()
    os.close(scan)


def test_stored_sets_places_are_each_files_columns(tmp_path: Path) -> None:
    """The places ``stored_sets`` gathers for many files at once (by index arithmetic over the joined
    blobs) are each file's own columns, read from its blob one file at a time."""
    from simscan.scanner import ScanRequest, run_scan

    root = tmp_path / "tree"
    root.mkdir()
    for k in range(40):  # short and long texts (other levels, other counts), and binary files
        (root / f"t{k}.txt").write_bytes(words(np.random.default_rng(k), 5 + 37 * k))
    for k in range(5):
        (root / f"b{k}.bin").write_bytes(np.random.default_rng(k).integers(0, 256, 3000 + 997 * k, np.uint8).tobytes())
    idx = tmp_path / "i.sqlite3"
    run_scan(ScanRequest([root], index_path=idx, jobs=1))
    with Index.open(idx, readonly=True) as ix:
        want = ix.files().ids
        ids, offsets, _values, meta = ix.stored_sets(want[::-1])
    assert ids.size >= 40 and meta.unit.dtype == np.uint32 and meta.chars.dtype == np.uint16
    with sqlite3.connect(idx) as c:
        blobs = dict(c.execute("SELECT file_id, CAST(places AS BLOB) FROM fingerprints"))
    for k, fid in enumerate(ids.tolist()):
        m, at = int(offsets[k + 1] - offsets[k]), slice(int(offsets[k]), int(offsets[k + 1]))
        blob = blobs[fid]
        assert len(blob) == 10 * m
        assert np.array_equal(meta.unit[at], np.frombuffer(blob[: 4 * m], "<u4")), fid
        assert np.array_equal(meta.char[at], np.frombuffer(blob[4 * m : 8 * m], "<u4")), fid
        assert np.array_equal(meta.chars[at], np.frombuffer(blob[8 * m :], "<u2")), fid
