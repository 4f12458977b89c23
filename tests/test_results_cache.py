"""The results cache in the index (simscan.index.results): a hit gives exactly what a fresh
computation gives; every change of the files invalidates it; a damaged row is recomputed; an
index that cannot be written (older schema, locked) still gives its results.  Real trees in
tmp_path, scanned by the real scanner into a real SQLite index."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from simscan.index import SCHEMA_VERSION, Index
from simscan.index import results as cache
from simscan.scanner import ScanRequest, run_scan
from simscan.similarity import SimilarityParams, find_groups, find_pairs
from simscan.similarity.engine import find_pair_set
from tests.similarity_support import words

ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


def _tree(root: Path) -> dict[str, Path]:
    """Copies, another encoding, edited versions, an excerpt, unrelated files; two folders."""
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    base = words(1, 900)
    f = {
        "orig": root / "a" / "orig.txt",
        "copy": root / "b" / "copy.txt",
        "utf16": root / "b" / "utf16.txt",
        "edit": root / "b" / "edit.txt",
        "part": root / "a" / "part.txt",
        "other": root / "a" / "other.txt",
        "other2": root / "b" / "other2.txt",
    }
    f["orig"].write_text(base)
    f["copy"].write_text(base)
    f["utf16"].write_text(base, encoding="utf-16")
    f["edit"].write_text(base[:2000] + words(2, 60) + base[2300:])
    f["part"].write_text(base[1000:2500])
    f["other"].write_text(words(3, 700))
    f["other2"].write_text(words(3, 700)[:3000] + words(4, 100))
    for k in range(6):
        (root / "a" / f"n{k}.txt").write_text(words(10 + k, 300))
    return f


def _scan(root: Path, idx: Path) -> None:
    run_scan(ScanRequest([root], index_path=idx, jobs=1))


@pytest.fixture()
def indexed(tmp_path: Path) -> tuple[Path, Path, dict[str, Path]]:
    root = tmp_path / "tree"
    f = _tree(root)
    idx = tmp_path / "index.sqlite3"
    _scan(root, idx)
    return root, idx, f


def _pairs(idx: Path, **kw):
    with Index.open(idx, readonly=True) as ix:
        return find_pairs(ix, **kw)


def _groups(idx: Path, **kw):
    with Index.open(idx, readonly=True) as ix:
        return find_groups(ix, **kw)


def _set(idx: Path, **kw):
    with Index.open(idx, readonly=True) as ix:
        return find_pair_set(ix, **kw)


def _rows(idx: Path) -> list[tuple]:
    with sqlite3.connect(idx) as c:
        return c.execute("SELECT key, generation, floor FROM results").fetchall()


def _same_groups(x, y) -> bool:
    return [(g.id, g.kind, [(m, m.pair) for m in g.members]) for g in x] == [
        (g.id, g.kind, [(m, m.pair) for m in g.members]) for g in y]


def test_hit_equals_a_fresh_computation(indexed) -> None:
    _root, idx, _f = indexed
    fresh = _pairs(idx, cache=False)
    assert _rows(idx) == []  # cache=False neither reads nor writes
    first = _set(idx)
    assert not first.cached and first.stored
    second = _set(idx)
    assert second.cached and not second.stored
    assert len(fresh) >= 5 and _pairs(idx) == fresh
    # The file table read from the cache is the one the index gives.
    with Index.open(idx, readonly=True) as ix:
        t = ix.files()
    for name in ("ids", "size", "mtime_ns", "is_text", "partial", "simhash", "fp_count", "units", "device", "inode"):
        assert np.array_equal(getattr(second.files, name), getattr(t, name)), name
    for name in ("paths", "raw_paths", "encoding", "checksum", "content_hash"):
        assert getattr(second.files, name) == getattr(t, name), name
    # Other thresholds are served by the pairs cached at their floor (13 its own, the others the
    # default's): the same as fresh.
    for p in (13.0, 40.0, 80.0, 100.0):
        assert _pairs(idx, min_similarity=p) == _pairs(idx, min_similarity=p, cache=False), p
        assert _pairs(idx, min_similarity=p, expand_copies=True) == _pairs(
            idx, min_similarity=p, expand_copies=True, cache=False)
        assert _same_groups(_groups(idx, min_similarity=p), _groups(idx, min_similarity=p, cache=False))
    # One row a key: 40 searched again at the default floor (the row searched at 13 is another set).
    assert [r[2] for r in _rows(idx)] == [15.0]
    with Index.open(idx, readonly=True) as ix:
        assert ix.stats()["results_cache_bytes"] > 1000
    # Below the floor: computed again (and cached at that lower floor).
    low = _set(idx, min_similarity=1.0)
    assert not low.cached and low.stored and [r[2] for r in _rows(idx)] == [1.0]
    assert _pairs(idx, min_similarity=1.0) == _pairs(idx, min_similarity=1.0, cache=False)
    # ... and that row does not serve 50 (searched at the default floor, then cached at it).
    high = _set(idx, min_similarity=50.0)
    assert not high.cached and high.stored and _set(idx, min_similarity=50.0).cached


def test_reference_folders_and_parameters_have_their_own_entries(indexed) -> None:
    root, idx, _f = indexed
    roots = [str(root / "b")]
    want = _groups(idx, reference_roots=roots, cache=False)
    assert not _set(idx, reference_roots=roots).cached
    assert _set(idx, reference_roots=roots).cached
    assert _same_groups(_groups(idx, reference_roots=roots), want)
    assert not _set(idx).cached  # no reference folders: another key
    assert len(_rows(idx)) == 2
    for k in range(5):  # the most recent few keys are kept
        assert _set(idx, reference_roots=[str(root / f"other{k}")]).stored
    assert len(_rows(idx)) == cache.MAX_ENTRIES
    assert _set(idx, reference_roots=[str(root / "other4")]).cached
    assert not _set(idx).cached  # the oldest went
    other = SimilarityParams(common_min_df=2)
    assert not _set(idx, params=other).cached
    with Index.open(idx, readonly=True) as ix:
        assert find_pairs(ix, params=other) == find_pairs(ix, params=other, cache=False)


def _assert_recomputed_and_equal(idx: Path) -> None:
    got = _set(idx)
    assert not got.cached
    assert _pairs(idx) == _pairs(idx, cache=False)
    assert _set(idx).cached


def test_edit_add_remove_rename_and_remove_paths_invalidate(indexed) -> None:
    root, idx, f = indexed
    _set(idx)
    assert _set(idx).cached
    _scan(root, idx)  # nothing changed: the cache stays valid
    assert _set(idx).cached

    f["edit"].write_text(words(1, 900)[:1500] + words(77, 200))  # edited
    _scan(root, idx)
    _assert_recomputed_and_equal(idx)

    (root / "b" / "new.txt").write_text(words(1, 900))  # added
    _scan(root, idx)
    _assert_recomputed_and_equal(idx)

    f["other2"].unlink()  # removed
    _scan(root, idx)
    _assert_recomputed_and_equal(idx)

    f["part"].rename(root / "b" / "moved-part-with-a-longer-name.txt")  # renamed: no file is read again
    _scan(root, idx)
    _assert_recomputed_and_equal(idx)
    names = {Path(p.b_path).name for p in _pairs(idx)} | {Path(p.a_path).name for p in _pairs(idx)}
    assert "moved-part-with-a-longer-name.txt" in names and "part.txt" not in names

    with Index.open(idx) as ix:  # the window trashing a file
        assert ix.remove_paths([f["copy"]]) == 1
    _assert_recomputed_and_equal(idx)
    assert all(p.b_path != str(f["copy"]) for p in _pairs(idx))


def test_every_writer_bumps_the_generation(tmp_path: Path) -> None:
    from simscan.index import FileRecord

    with Index.open(tmp_path / "i.db") as ix:
        g0 = ix.generation()
        ids = ix.write_files([FileRecord(b"/x/a", 1, 2, 3, 4, checksum=b"c" * 16, content_hash=b"h" * 16)])
        g1 = ix.generation()
        ix.rename_files([(int(ids[0]), b"/x/b", 1, 2, None)])
        g2 = ix.generation()
        assert ix.remove_ids([999]) == 0 and ix.generation() == g2  # nothing removed: nothing changed
        ix.remove_paths([b"/x/b"])
        g3 = ix.generation()
        rid = ix.begin_run([b"/x"], {})  # runs and problems are not files: no change
        ix.add_problems(rid, [(b"/x/c", "unreadable")])
        ix.finish_run(rid, "done", {})
        assert ix.generation() == g3
    assert g0 is not None and g0 < g1 < g2 < g3


def test_a_migration_bumps_the_generation(tmp_path: Path, monkeypatch) -> None:
    """A later schema version (a migration that could rewrite files) invalidates cached results."""
    from simscan.index import schema, store

    p = tmp_path / "i.db"
    with Index.open(p) as ix:
        assert ix.store_results("k", ix.generation(), 13.0, {"x": np.arange(3)})
        g0 = ix.generation()
    migrations = {**schema.MIGRATIONS, SCHEMA_VERSION + 1: ("UPDATE files SET mtime_ns = mtime_ns",)}
    monkeypatch.setattr(store, "MIGRATIONS", migrations)
    monkeypatch.setattr(store, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with Index.open(p) as ix:
        assert ix.generation() > g0
        assert ix.connection.execute("SELECT count(*) FROM results").fetchone()[0] == 0


def test_algorithm_change_invalidates(indexed, monkeypatch) -> None:
    _root, idx, _f = indexed
    _set(idx)
    assert _set(idx).cached
    import simscan.model

    monkeypatch.setattr(simscan.model, "ALGORITHM_VERSION", simscan.model.ALGORITHM_VERSION + 100)
    assert not _set(idx).cached  # the key names the algorithm
    monkeypatch.undo()
    assert _set(idx).cached
    from simscan.similarity import engine

    monkeypatch.setattr(engine, "_code_digest", lambda: "another version of the pair search")
    assert not _set(idx).cached  # ... and the code that computes the pairs


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "absent"])
def test_damaged_or_absent_row_is_recomputed(indexed, damage: str) -> None:
    _root, idx, _f = indexed
    want = _pairs(idx, cache=False)
    _set(idx)
    with sqlite3.connect(idx, isolation_level=None) as c:
        if damage == "truncate":
            c.execute("UPDATE results SET data = substr(data, 1, length(data) / 2)")
        elif damage == "flip":
            blob = bytearray(c.execute("SELECT data FROM results").fetchone()[0])
            blob[-20] ^= 0xFF  # inside the pair scores
            c.execute("UPDATE results SET data = ?", (bytes(blob),))
        elif damage == "empty":
            c.execute("UPDATE results SET data = x''")
        else:
            c.execute("DELETE FROM results")
    got = _set(idx)
    assert not got.cached and got.stored  # recomputed and written again
    assert _pairs(idx) == want and _set(idx).cached


def test_a_locked_index_still_gives_results(indexed, monkeypatch) -> None:
    """A scan holding the write lock: the cache is not written, the results are the same."""
    _root, idx, _f = indexed
    monkeypatch.setattr(cache, "WRITE_TIMEOUT_S", 0.05)
    want = _pairs(idx, cache=False)
    other = sqlite3.connect(idx, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        got = _set(idx)
        assert not got.cached and not got.stored
        assert _pairs(idx) == want
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _rows(idx) == []


def test_a_write_after_a_concurrent_change_is_refused(indexed) -> None:
    """Pairs computed from one state of the files are never cached for a newer state."""
    _root, idx, f = indexed
    with Index.open(idx, readonly=True) as ix:
        gen = ix.generation()
    with Index.open(idx) as ix:
        ix.remove_paths([f["other"]])
    with Index.open(idx, readonly=True) as ix:
        assert not ix.store_results("k", gen, 13.0, {"x": np.arange(3)})
        assert ix.store_results("k", ix.generation(), 13.0, {"x": np.arange(3)})
        assert np.array_equal(ix.cached_results("k", ix.generation(), 13.0)["x"], np.arange(3))
        assert ix.cached_results("k", ix.generation(), 10.0) is None  # another floor
        assert ix.cached_results("k", ix.generation(), 15.0) is None


def _schema_2_copy(idx: Path, tmp_path: Path, journal: str | None = None) -> Path:
    """A copy of ``idx`` as simscan 0.1 left it (schema 2: no results cache, no generation)."""
    old = tmp_path / "v2.sqlite3"
    shutil.copy(idx, old)
    with sqlite3.connect(old, isolation_level=None) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for table, column in (("files", "row_check"), ("fingerprints", "chk"), ("runs", "chk"), ("problems", "chk"),
                              ("meta", "chk"), ("fingerprints", "spans"), ("fingerprints", "schk"),
                              ("fingerprints", "places"), ("fingerprints", "pchk")):  # schema 7
            c.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        c.execute("DELETE FROM meta WHERE key IN ('schema_version', 'files_digest', 'check_scans', 'check_next')")
        c.execute("DROP TABLE results")
        for col in ("format", "extractor", "extractor_version"):  # schema 6
            c.execute(f"ALTER TABLE files DROP COLUMN {col}")
        c.execute("DROP INDEX files_bare")  # schema 5
        c.execute("ALTER TABLE files DROP COLUMN ctime_ns")  # schema 4
        c.execute("DELETE FROM meta WHERE key = 'generation'")
        c.execute("PRAGMA user_version = 2")
        if journal:
            c.execute(f"PRAGMA journal_mode = {journal}")
    return old


def test_an_older_index_is_read_without_a_cache_and_left_untouched(indexed, tmp_path: Path) -> None:
    _root, idx, _f = indexed
    want = _pairs(idx, cache=False)
    old = _schema_2_copy(idx, tmp_path, journal="DELETE")
    before = old.read_bytes()
    got = _set(old)
    assert not got.cached and not got.stored
    # Read as it is: without spans (schema 8) every stored value counts at every window and no
    # passage is known, so only the copies are sure to be the same as the current index's.
    # (A real index of schema < 8 holds fingerprints of an older algorithm: the next scan reads its
    # files again.)
    old_pairs = _pairs(old)
    assert {(p.a_path, p.b_path, p.kind) for p in old_pairs if p.kind in ("exact", "content")} == {
        (p.a_path, p.b_path, p.kind) for p in want if p.kind in ("exact", "content")}
    assert {(p.a_path, p.b_path) for p in old_pairs} >= {(p.a_path, p.b_path) for p in want if p.best >= 50}
    assert old.read_bytes() == before
    with sqlite3.connect(old, isolation_level=None) as c:  # (as a real one: rows of an older algorithm)
        c.execute("UPDATE files SET algorithm_version = 11")
    with Index.open(old) as ix:  # a scan upgrades it; then it caches
        assert ix.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert _set(old).stored and _set(old).cached


@pytest.mark.skipif(ROOT_USER, reason="root writes to read-only files")
def test_a_read_only_index_file_still_gives_results(indexed) -> None:
    _root, idx, _f = indexed
    want = _pairs(idx, cache=False)
    with sqlite3.connect(idx, isolation_level=None) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    idx.chmod(0o400)
    try:
        got = _set(idx)
        assert not got.cached and not got.stored and _pairs(idx) == want
    finally:
        idx.chmod(0o600)


def test_pack_round_trip_and_paths_that_are_not_utf8(tmp_path: Path) -> None:
    from simscan.index import FileTable

    raw = [b"/a/\xff\xfe.txt", "/b/é.txt".encode(), b"/c/\xe2\x82", b"/d/ok"]
    n = len(raw)
    t = FileTable(
        ids=np.arange(1, n + 1, dtype=np.int64), paths=[os.fsdecode(p) for p in raw], raw_paths=raw,
        size=np.arange(n, dtype=np.int64), mtime_ns=np.arange(n, dtype=np.int64), is_text=np.ones(n, bool),
        encoding=["utf-8", None, "cp1252", "utf-8"], checksum=[b"\0" * 16, b"x" * 16, b"y" * 15, b"z" * 16],
        partial=np.zeros(n, np.int64), content_hash=[b"h" * 16] * n, simhash=np.arange(n, dtype=np.uint64),
        fp_count=np.zeros(n, np.int64), units=np.zeros(n, np.int64), device=np.zeros(n, np.int64),
        inode=np.arange(n, dtype=np.int64),
    )
    d: dict[str, np.ndarray] = {}
    cache.pack_file_table(t, d)
    back = cache.unpack_file_table(cache.unpack(cache.pack(d)), FileTable)
    assert back.paths == t.paths and back.raw_paths == raw and back.encoding == t.encoding
    assert back.checksum == t.checksum and back.content_hash == t.content_hash
    assert np.array_equal(back.simhash, t.simhash) and back.simhash.dtype == np.uint64
    blob = cache.pack({"a": np.arange(5), "b": np.array([True, False])})
    assert cache.unpack(blob[:-1]) is None and cache.unpack(b"junk") is None


def test_cli_output_is_the_same_with_and_without_the_cache(indexed, capsys) -> None:
    from simscan.cli import main

    root, idx, _f = indexed
    commands = [
        ["pairs", "--format", "json"], ["pairs", "-m", "40"], ["pairs", "--format", "csv", "-m", "0"],
        ["groups", "--format", "json"], ["groups", "-m", "60", "--reference", str(root / "b")], ["groups"],
    ]
    for cmd in commands:
        outs = []
        for extra in (["--no-cache"], [], [], ["--no-cache"]):  # fresh, computed and stored, from the cache
            assert main([*cmd, "--index", str(idx), *extra]) == 0
            outs.append(capsys.readouterr().out)
        assert outs[0] and outs[0] == outs[1] == outs[2] == outs[3], cmd
    # One row per key: no reference folder (searched at 0 %, then at the default floor again for the
    # groups, which replaced it), and one folder.
    from simscan.similarity import DEFAULT_MIN_SIMILARITY

    assert sorted(r[2] for r in _rows(idx)) == [DEFAULT_MIN_SIMILARITY] * 2


def test_pack_narrows_integer_columns_exactly() -> None:
    rng = np.random.default_rng(3)
    arrays = {
        "small": np.array([-5, 0, 250], np.int64),
        "signed_view": np.array([-(2**63), -(2**63) + 70_000], np.int64),
        "wide": np.array([0, 2**40], np.int64),
        "u64": rng.integers(0, 2**63, 100, dtype=np.uint64) * np.uint64(2),
        "u64_close": np.array([2**64 - 1, 2**64 - 3], np.uint64),
        "f": np.array([0.1, 1e300]),
        "b": np.array([True, False]),
        "i8": np.array([-128, 127], np.int8),
        "empty": np.zeros(0, np.int64),
        "matrix": np.arange(12, dtype=np.int32).reshape(3, 4),
    }
    blob = cache.pack(arrays)
    back = cache.unpack(blob)
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype and back[k].shape == a.shape and np.array_equal(back[k], a), k
    assert len(blob) < sum(a.nbytes for a in arrays.values()) + 1200


def _pack_plainly(arrays: dict[str, np.ndarray], bind: tuple) -> bytes:
    """The blob layout of ``cache.pack`` written the plain way (each array's bytes, padded, joined,
    then the header before them): the reference the in-place writer must match byte for byte."""
    import json
    import struct

    entries, parts, off = [], [], 0
    for name, a in arrays.items():
        stored, base = cache._narrow(np.ascontiguousarray(a))
        raw = np.ascontiguousarray(stored).tobytes()
        entries.append([name, a.dtype.str, list(a.shape), off, len(raw), stored.dtype.str, base])
        parts.append(raw + b"\0" * ((-len(raw)) % 8))
        off += len(parts[-1])
    payload = b"".join(parts)
    header = json.dumps({"arrays": entries, "xxh3": cache._digest(payload, bind)}).encode()
    header += b" " * ((-(len(cache.MAGIC) + 4 + len(header))) % 8)
    return cache.MAGIC + struct.pack("<I", len(header)) + header + payload


def test_pack_writes_the_plain_layout_in_place() -> None:
    rng = np.random.default_rng(8)
    arrays = {
        "ids": rng.integers(0, 10**6, 5000),
        "scores": rng.random(333),
        "flags": rng.random(17) > 0.5,
        "strided": np.arange(40, dtype=np.int32).reshape(5, 8)[:, ::3],
        "bytes": np.frombuffer(b"some paths\0joined", np.uint8),
        "empty": np.zeros(0, np.int64),
        "wide": rng.integers(-(2**62), 2**62, 9),
    }
    bind = ("key", 7, 15.0)
    blob = cache.pack(arrays, bind)
    assert bytes(blob) == _pack_plainly(arrays, bind)
    back = cache.unpack(bytes(blob), bind)
    assert back is not None and all(np.array_equal(back[k], a) for k, a in arrays.items())
    assert cache.unpack(bytes(blob), ("key", 8, 15.0)) is None  # another generation: refused


def test_a_stored_row_holds_the_packed_blob(indexed) -> None:
    """``store`` writes the blob in place (zeroblob, then array by array): the row holds exactly what
    ``pack`` gives, and reads back."""
    _, idx, _ = indexed
    arrays = {"ids": np.arange(10_000) * 3, "scores": np.linspace(0, 100, 777), "flags": np.arange(5) % 2 == 0}
    with Index.open(idx, readonly=True) as ix:
        gen = ix.generation()
    assert cache.store(idx, SCHEMA_VERSION, "a key", gen, 15.0, arrays)
    with sqlite3.connect(idx) as c:
        (data,) = c.execute("SELECT data FROM results WHERE key = 'a key'").fetchone()
        back = cache.read(c, "a key", gen, 15.0)
    assert data == bytes(cache.pack(arrays, ("a key", gen, 15.0)))
    assert back is not None and all(np.array_equal(back[k], a) for k, a in arrays.items())



def test_one_array_read_alone_equals_the_whole_read_and_is_checked(indexed, monkeypatch) -> None:
    """``read_one`` (the search's cut-off for ``compare``) gives what ``read`` gives of that array, read
    in chunks smaller than the arrays and across their bounds; {} for an array the row lacks; None for
    no row, another floor, or a blob damaged anywhere (its digest covers the whole payload)."""
    _, idx, _ = indexed
    arrays = {"ids": np.arange(10_000) * 3, "scores": np.linspace(0, 100, 777), "flags": np.arange(5) % 2 == 0,
              "search.cutoff": np.array([7, 969], np.int64)}
    with Index.open(idx, readonly=True) as ix:
        gen = ix.generation()
    assert cache.store(idx, SCHEMA_VERSION, "a key", gen, 15.0, arrays)
    monkeypatch.setattr(cache, "_READ_CHUNK", 1000)
    with sqlite3.connect(idx) as c:
        whole = cache.read(c, "a key", gen, 15.0)
        assert whole is not None
        for name, a in whole.items():
            got = cache.read_one(c, "a key", gen, 15.0, name)
            assert got is not None and list(got) == [name]
            assert got[name].dtype == a.dtype and np.array_equal(got[name], a)
        assert cache.read_one(c, "a key", gen, 15.0, "absent") == {}
        assert cache.read_one(c, "a key", gen, 10.0, "ids") is None
        assert cache.read_one(c, "other", gen, 15.0, "ids") is None
        blob = bytearray(c.execute("SELECT data FROM results WHERE key = 'a key'").fetchone()[0])
        blob[len(blob) // 2] ^= 0xFF  # inside another array than the cut-off
        c.execute("UPDATE results SET data = ? WHERE key = 'a key'", (bytes(blob),))
        assert cache.read_one(c, "a key", gen, 15.0, "search.cutoff") is None


def test_a_blob_write_failing_halfway_leaves_the_cache_as_it_was(indexed, monkeypatch) -> None:
    """A failure after the zeroblob row is inserted and its first array written (out of memory while
    narrowing the second one, injected here; then Ctrl+C at the same point) rolls the whole store
    back: the row stored before under the key is still there and valid, and no zero-filled row is
    left behind.  The MemoryError is a skipped store (False); the KeyboardInterrupt is not swallowed."""
    _, idx, _ = indexed
    with Index.open(idx, readonly=True) as ix:
        gen = ix.generation()
    before = {"ids": np.arange(1000) * 7, "scores": np.linspace(0, 100, 99)}
    assert cache.store(idx, SCHEMA_VERSION, "a key", gen, 15.0, before)
    everything = "SELECT key, generation, floor, created_at, data FROM results ORDER BY rowid"
    with sqlite3.connect(idx) as c:
        rows_before = c.execute(everything).fetchall()
    narrow = cache._narrow
    narrowed: list[int] = []

    def failing(a: np.ndarray, fail: type[BaseException]) -> tuple[np.ndarray, int]:
        if narrowed:
            raise fail
        narrowed.append(a.size)
        return narrow(a)

    after = {"ids": np.arange(2000) * 5, "scores": np.linspace(0, 50, 10), "flags": np.ones(3, bool)}
    for fail in (MemoryError, KeyboardInterrupt):
        monkeypatch.setattr(cache, "_narrow", lambda a, fail=fail: failing(a, fail))
        for key in ("a key", "another key"):
            narrowed.clear()
            if fail is MemoryError:
                assert not cache.store(idx, SCHEMA_VERSION, key, gen, 10.0, after)
            else:
                with pytest.raises(KeyboardInterrupt):
                    cache.store(idx, SCHEMA_VERSION, key, gen, 10.0, after)
            assert narrowed == [2000]  # the first array went into the row before the failure
    monkeypatch.undo()
    with sqlite3.connect(idx) as c:
        assert c.execute(everything).fetchall() == rows_before
        back = cache.read(c, "a key", gen, 15.0)
        assert cache.read(c, "another key", gen, 10.0) is None
    assert back is not None and all(np.array_equal(back[k], a) for k, a in before.items())

def test_cache_results_after_a_scan(indexed) -> None:
    """What a scan command can call at its end: the next load is a cache hit."""
    from simscan.similarity.engine import cache_results

    root, idx, f = indexed
    f["edit"].write_text(words(5, 500))
    _scan(root, idx)
    with Index.open(idx, readonly=True) as ix:
        assert cache_results(ix)
        assert cache_results(ix)  # already there: nothing computed
    got = _set(idx)
    assert got.cached and _pairs(idx) == _pairs(idx, cache=False)


def test_an_older_index_is_not_upgraded_while_a_scan_writes_to_it(indexed, tmp_path: Path) -> None:
    """An older simscan scanning into the index holds the scan lock and would go on writing
    files without moving the generation on: the upgrade (which starts the results cache) waits
    for the lock, so no cached result can outlive such writes."""
    import fcntl
    import os

    from simscan.index import IndexLocked

    _root, idx, _f = indexed
    old = _schema_2_copy(idx, tmp_path)
    fd = os.open(f"{old}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # "the older scan"
        with pytest.raises(IndexLocked):
            Index.open(old)
        with sqlite3.connect(old) as c:
            assert c.execute("PRAGMA user_version").fetchone()[0] == 2
    finally:
        os.close(fd)
    with Index.open(old) as ix:
        assert ix.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with Index.open(old) as ix:
        ix.scan_lock()  # released after the upgrade: a scan can take it


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "evalcorpus" / "corpus"


@pytest.mark.skipif(not (CORPUS / "irplag").is_dir(), reason=f"the evaluation corpus is not at {CORPUS}")
def test_both_views_give_the_same_pairs_with_and_without_the_cache(tmp_path: Path) -> None:
    """Java sources scored by the text and the code view: some pairs are listed for a passage with
    a score under the threshold, and which view scores them must not depend on the threshold the
    search ran at (the cache searches at the default floor, a search without it did at the
    requested threshold: the same pair came out scored by the other view).  Nor may a row searched
    at a lower floor (``pairs -m 5``) serve a later request at the default: filtered, it is not the
    set a search at 15 finds (case-02: 857 pairs, some scored by the other view)."""
    idx = tmp_path / "i.sqlite3"
    run_scan(ScanRequest([CORPUS / "irplag" / "case-02"], index_path=idx, jobs=1))
    low = _pairs(idx, min_similarity=5.0)  # cached at floor 5
    assert low == _pairs(idx, min_similarity=5.0, cache=False)
    for p in (60.0, 30.0, 15.0):
        fresh = _pairs(idx, min_similarity=p, cache=False)
        assert any(x.best < p for x in fresh), p  # kept for a passage
        assert _pairs(idx, min_similarity=p) == fresh, p
