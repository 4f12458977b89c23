"""The scanner on real trees in tmp_path: incremental behaviour, bad inputs, cancel, workers."""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from simscan import scanner
from simscan.fingerprint import fingerprint_bytes
from simscan.index import Index
from simscan.index.checks import meta_get, meta_set
from simscan.model import ALGORITHM_VERSION
from simscan.progress import CancelToken, Progress
from simscan.scanner import ScanRequest, read_task, run_scan
from tests.helpers_index import edit_files, expected_postings
from tests.helpers_tree import bump_mtime, make_deep, make_tree, remove_deep

ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


def scan(root: Path | list[Path], idx: Path, **kw) -> scanner.ScanResult:
    roots = root if isinstance(root, list) else [root]
    kw.setdefault("jobs", 1)
    return run_scan(ScanRequest(roots, index_path=idx, **kw))


def indexed(idx: Path) -> dict[bytes, dict]:
    """path -> row and fingerprints, as stored."""
    with Index.open(idx, readonly=True) as ix:
        ft = ix.files()
        ids, off, vals = ix.fingerprints(kind="all")
        fps = {int(i): vals[off[k] : off[k + 1]] for k, i in enumerate(ids)}
        return {
            ft.raw_paths[k]: {
                "id": int(ft.ids[k]), "size": int(ft.size[k]), "checksum": ft.checksum[k],
                "simhash": int(ft.simhash[k]), "fps": fps.get(int(ft.ids[k]), np.zeros(0, np.uint64)),
            }
            for k in range(len(ft))
        }  # fmt: skip


def assert_postings_exact(idx: Path) -> dict:
    """The inverted index holds exactly what the posting rule says of every stored fingerprint set
    (``helpers_index.expected_postings``); returns the indexed rows."""
    rows = indexed(idx)
    with Index.open(idx, readonly=True) as ix:
        stored = {
            (int(np.int64(v).view(np.uint64)), f) for v, f in ix.connection.execute("SELECT fp, file_id FROM postings")
        }
    assert stored == expected_postings(idx)
    return rows


def test_first_scan_stores_reference_fingerprints(tmp_path: Path):
    paths = make_tree(tmp_path / "t", 30, binary_every=7)
    r = scan(tmp_path / "t", tmp_path / "i.db")
    assert (r.files_seen, r.files_read, r.files_unchanged, r.problems) == (30, 30, 0, 0)
    assert r.bytes_read == sum(p.stat().st_size for p in paths)
    rows = indexed(tmp_path / "i.db")
    assert set(rows) == {os.fsencode(p) for p in paths}
    for p in paths:
        ref = fingerprint_bytes(p.read_bytes())
        row = rows[os.fsencode(p)]
        assert row["checksum"] == ref.checksum and row["simhash"] == ref.simhash
        assert np.array_equal(row["fps"], np.concatenate((ref.rolling, ref.anchored)))


def test_incremental_no_change_edit_rename_delete(tmp_path: Path):
    root = tmp_path / "t"
    paths = make_tree(root, 40)
    idx = tmp_path / "i.db"
    assert scan(root, idx).files_read == 40
    before = indexed(idx)

    r = scan(root, idx)
    assert (r.files_read, r.files_unchanged, r.files_removed) == (0, 40, 0)

    # One edit (same size, new content and mtime) -> exactly one read, new fingerprints.
    p = paths[3]
    data = bytearray(p.read_bytes())
    data[:5] = b"EDIT!"
    p.write_bytes(bytes(data))
    bump_mtime(p)
    r = scan(root, idx)
    assert (r.files_read, r.files_unchanged) == (1, 39)
    after = indexed(idx)
    assert after[os.fsencode(p)]["checksum"] == fingerprint_bytes(bytes(data)).checksum
    assert after[os.fsencode(p)]["id"] == before[os.fsencode(p)]["id"]

    # Other content under the old size and mtime (cp -p, rsync -t --inplace, touch -r): only the ctime,
    # which no program sets, tells; the file is read again (it was kept as "unchanged": review, P0).
    q = paths[4]
    st = q.stat()
    q.write_bytes(q.read_bytes()[::-1])
    os.utime(q, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (q.stat().st_size, q.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    r = scan(root, idx)
    assert (r.files_read, r.files_unchanged) == (1, 39)
    assert indexed(idx)[os.fsencode(q)]["checksum"] == fingerprint_bytes(q.read_bytes()).checksum
    after = indexed(idx)

    # A rename: nothing read, the row keeps its id and fingerprints under the new path.
    old, new = paths[5], root / "renamed.txt"
    old_row = after[os.fsencode(old)]
    os.rename(old, new)
    r = scan(root, idx)
    assert (r.files_read, r.files_renamed, r.files_removed) == (0, 1, 0)
    rows = indexed(idx)
    assert os.fsencode(old) not in rows
    assert rows[os.fsencode(new)]["id"] == old_row["id"]
    assert np.array_equal(rows[os.fsencode(new)]["fps"], old_row["fps"])

    # A deletion: the row, its fingerprints and its postings leave the index.
    gone = paths[7]
    gone_row = rows[os.fsencode(gone)]
    gone.unlink()
    r = scan(root, idx)
    assert (r.files_read, r.files_removed) == (0, 1)
    with Index.open(idx, readonly=True) as ix:
        c = ix.connection
        assert c.execute("SELECT count(*) FROM files WHERE id = ?", (gone_row["id"],)).fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM fingerprints WHERE file_id = ?", (gone_row["id"],)).fetchone()[0] == 0
        assert c.execute("SELECT count(*) FROM postings WHERE file_id = ?", (gone_row["id"],)).fetchone()[0] == 0
        assert len(ix.files()) == 39


def test_scanning_one_root_keeps_other_roots(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    make_tree(a, 5, seed=1)
    make_tree(b, 6, seed=2)
    idx = tmp_path / "i.db"
    assert scan([a, b], idx).files_read == 11
    r = scan(a, idx)
    assert (r.files_read, r.files_removed) == (0, 0)
    assert len(indexed(idx)) == 11


def test_options_exclude_include_hidden_sizes(tmp_path: Path):
    root = tmp_path / "t"
    (root / "keep").mkdir(parents=True)
    (root / "skipdir").mkdir()
    (root / ".hid").mkdir()
    (root / "keep" / "a.txt").write_bytes(b"a" * 100)
    (root / "keep" / "b.log").write_bytes(b"b" * 100)
    (root / "keep" / ".c.txt").write_bytes(b"c" * 100)
    (root / "keep" / "big.txt").write_bytes(b"d" * 5000)
    (root / "skipdir" / "e.txt").write_bytes(b"e" * 100)
    (root / ".hid" / "f.txt").write_bytes(b"f" * 100)
    idx = tmp_path / "i.db"
    scan(root, idx, exclude=["*.log", "skipdir"], hidden=False, max_size=1000)
    assert sorted(os.path.basename(p) for p in indexed(idx)) == [b"a.txt"]
    scan(root, idx, include=["*.txt"], min_size=1000)
    assert sorted(os.path.basename(p) for p in indexed(idx)) == [b"big.txt"]
    scan(root, idx, exclude=[f"{root}/keep/*"], hidden=True)
    assert sorted(os.path.basename(p) for p in indexed(idx)) == [b"e.txt", b"f.txt"]
    scan(root, idx, exclude=[f"{root}/keep/*"])  # hidden names are left out by default
    assert sorted(os.path.basename(p) for p in indexed(idx)) == [b"e.txt"]
    # A relative path glob matches at any depth (it matched nothing: paths are absolute).
    scan(root, idx, exclude=["keep/*.txt", "skipdir/"], hidden=True)
    assert sorted(os.path.basename(p) for p in indexed(idx)) == [b"b.log", b"f.txt"]
    # A glob starting with / is anchored at the top of the root, as in .gitignore (it matched nothing:
    # only the absolute path /skipdir); keep/skipdir is not at the top and stays.
    (root / "keep" / "skipdir").mkdir()
    (root / "keep" / "skipdir" / "g.txt").write_bytes(b"g" * 100)
    scan(root, idx, exclude=["/skipdir", "/keep/*.log"], hidden=True)
    assert sorted(os.path.basename(p) for p in indexed(idx)) == [b".c.txt", b"a.txt", b"big.txt", b"f.txt", b"g.txt"]


def test_bad_inputs_are_problems_and_the_rest_is_scanned(tmp_path: Path):
    root = tmp_path / "t"
    make_tree(root, 5)
    os.mkfifo(root / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock"))
    os.symlink(tmp_path / "nowhere", root / "broken")
    os.symlink("loop", root / "loop")
    (root / "empty").write_bytes(b"")
    (root / "junk.bin").write_bytes(np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    odd = os.fsencode(str(root)) + b"/caf\xe9-\xff.txt"
    with open(odd, "wb") as f:
        f.write(b"a file whose name is not UTF-8, with some text in it " * 5)
    with open(root / "sparse.img", "wb") as f:
        f.truncate(3 << 30)  # 3 GiB of holes: must not be read
    deep = make_deep(root, 1000)
    (deep / "deep.txt").write_bytes(b"found at depth 1000 " * 10)
    os.link(root / "d000" / "f00000.txt", root / "hardlink.txt")
    # Messages naming another path that is not UTF-8 (a link's target, the first name of a hard
    # link) once failed the whole scan: SQLite refused their text.
    os.symlink(b"/nowhere/caf\xe9", os.fsencode(str(root)) + b"/broken-latin1")
    with open(os.fsencode(str(root)) + b"/lat\xe9-1.txt", "wb") as f:
        f.write(b"two names of one file, neither of them UTF-8 " * 5)
    os.link(os.fsencode(str(root)) + b"/lat\xe9-1.txt", os.fsencode(str(root)) + b"/lat\xe9-2.txt")
    idx = tmp_path / "i.db"
    try:
        r = run_scan(ScanRequest([root], index_path=idx, jobs=1))
    finally:
        sock.close()
        remove_deep(root / "d" / "d")  # pytest's own clean-up recurses once per level
    rows = indexed(idx)
    names = {os.path.basename(p) for p in rows}
    assert {b"empty", b"junk.bin", b"caf\xe9-\xff.txt", b"deep.txt"} <= names
    assert (b"hardlink.txt" in names) != (b"f00000.txt" in names)  # one inode, read and indexed once
    assert b"sparse.img" not in names
    assert rows[odd]["size"] > 0
    with Index.open(idx, readonly=True) as ix:
        probs = {os.path.basename(p): reason for p, reason in ix.problems()}
    assert "FIFO" in probs["fifo"] and "socket" in probs["sock"]
    assert "broken symbolic link" in probs["broken"] and "loop" in probs["loop"]
    assert "sparse" in probs["sparse.img"]
    assert "hard link" in probs.get("hardlink.txt", probs.get("f00000.txt", ""))
    assert probs["broken-latin1"] == "broken symbolic link (to /nowhere/caf\\xe9); skipped"
    lat = [reason for name, reason in probs.items() if name.startswith("lat")]
    assert len(lat) == 1 and "same file as" in lat[0] and "lat\\xe9-" in lat[0]
    assert r.problems == len(probs) == 8
    assert r.files_seen == 5 + 5  # tree + empty, junk, odd name, deep, one of the two names


def test_links_followed_only_inside_roots(tmp_path: Path):
    root, outside = tmp_path / "t", tmp_path / "outside"
    make_tree(root, 3)
    make_tree(outside, 2, seed=5)
    os.symlink(outside, root / "out-dir")
    os.symlink(outside / "d000" / "f00000.txt", root / "out-file")
    os.symlink(root / "d000", root / "in-dir")
    os.symlink(root, root / "d000" / "cycle")
    idx = tmp_path / "i.db"
    r = scan(root, idx, follow_links=True)
    rows = indexed(idx)
    assert all(os.fsencode(str(root)) in p for p in rows)
    assert r.files_read == 3
    with Index.open(idx, readonly=True) as ix:
        probs = {os.path.basename(p): reason for p, reason in ix.problems()}
    assert "outside" in probs["out-dir"] and "outside" in probs["out-file"]
    # The loop and the second way into d000 are noted, not silently dropped.
    assert "scanned already" in probs["cycle"] and "scanned already" in probs["in-dir"]
    # A link to a file inside the roots: the file is indexed at its own path, the link is the second way in
    # (it was the link that got indexed, and the real file was noted as its "hard link").
    os.symlink(root / "d000" / "f00001.txt", root / "a-link.txt")  # sorts before d000/, the file's folder
    r = scan(root, idx, follow_links=True)
    rows = indexed(idx)
    assert os.fsencode(str(root / "d000" / "f00001.txt")) in rows and os.fsencode(str(root / "a-link.txt")) not in rows
    with Index.open(idx, readonly=True) as ix:
        probs = {os.path.basename(p): reason for p, reason in ix.problems()}
    assert probs["a-link.txt"] == f"same file as {root / 'd000' / 'f00001.txt'} (a symbolic link to it): indexed once"
    # The same for a link to a folder that sorts before the folder (it took the folder's place, silently).
    (root / "zdir").mkdir()
    (root / "zdir" / "real.txt").write_bytes(b"a file in a folder reached by a link too " * 10)
    os.symlink(root / "zdir", root / "alink")
    scan(root, idx, follow_links=True)
    rows = indexed(idx)
    assert os.fsencode(str(root / "zdir" / "real.txt")) in rows
    assert not any(b"/alink/" in p for p in rows)
    with Index.open(idx, readonly=True) as ix:
        probs = {os.path.basename(p): reason for p, reason in ix.problems()}
    assert "scanned already" in probs["alink"]
    # Without following, valid links are simply not entered.
    r = scan(root, tmp_path / "j.db")
    assert r.files_read == 4 and r.problems == 0  # the tree's 3 files and zdir/real.txt


def test_index_file_inside_the_root_is_skipped(tmp_path: Path):
    make_tree(tmp_path / "t", 4)
    idx = tmp_path / "t" / "index.sqlite3"
    scan(tmp_path / "t", idx)
    r = scan(tmp_path / "t", idx)
    assert r.files_read == 0 and r.files_seen == 4
    assert all(b"index.sqlite3" not in p for p in indexed(idx))


def test_file_that_changes_while_read_is_a_problem(tmp_path: Path):
    # /proc files report size 0 but read back data: to the scanner, a file that changed under it.
    out = read_task((False, [(0, b"/proc/self/status", 0)]))
    assert out[0][1] is None and "changed while being read" in out[0][2]
    out = read_task((False, [(0, os.fsencode(str(tmp_path / "gone")), 10)]))
    assert out[0][1] is None and "vanished" in out[0][2]


def test_reading_stops_one_byte_past_the_stat_size(tmp_path: Path) -> None:
    """A source longer than its stat'ed size (a /proc pseudo-file is endless, a log keeps growing) is
    read to size + 1 bytes, never to its end: memory stays bounded (the native core's reader; its
    own test reads an endless pipe).  /proc/self/pagemap holds 8 bytes per page of the address space
    (hundreds of GB) and says 0: a problem, found at once."""
    if os.path.exists("/proc/self/pagemap"):
        out = read_task((False, [(0, b"/proc/self/pagemap", 0)]))
        assert out[0][1] is None and out[0][2]
    p = tmp_path / "f.txt"
    p.write_bytes(b"abc")
    out = read_task((False, [(0, os.fsencode(p), 3), (1, os.fsencode(tmp_path / "gone"), 3)]))
    assert out[0][1][2] == 3 and out[0][2][9] == 3  # stat size and bytes read
    assert out[1] == (1, None, "vanished before it could be read")


def test_large_file_read_is_limited_to_the_stat_size(tmp_path: Path) -> None:
    from simscan.fingerprint import fingerprint_file

    p = tmp_path / "big.bin"
    data = np.random.default_rng(4).integers(0, 256, 3 << 20, dtype=np.uint8).tobytes()
    p.write_bytes(data)
    whole = fingerprint_file(p)
    assert whole.size == len(data)
    part = fingerprint_file(p, limit=1 << 20)
    assert part.size == 1 << 20 and part.checksum == fingerprint_bytes(data[: 1 << 20]).checksum
    fd = os.open(p, os.O_RDONLY)
    assert fingerprint_file(fd, limit=len(data) + 1).checksum == whole.checksum


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")
def test_virtual_file_systems_are_not_entered(tmp_path: Path) -> None:
    """/proc is a problem line, not thousands of unreadable 'files'; a real tree next to it
    is scanned as usual."""
    from simscan.walk import WalkOptions, virtual_devices, walk

    assert "proc" in virtual_devices().values()
    root = tmp_path / "t"
    make_tree(root, 5)
    res = walk([b"/proc/self", os.fsencode(root)], WalkOptions())
    assert len(res.files) == 5
    assert [(p, r.split(":")[0]) for p, r in res.problems] == [(b"/proc/self", "virtual file system (proc)")]
    res = walk([b"/proc/self/status"], WalkOptions())  # a file given as a root
    assert not res.files and "virtual file system (proc)" in res.problems[0][1]
    # The device comes from the mount's own major:minor field (a stat of the mount point would
    # see what is mounted over it); real file systems and automount points are not virtual.
    table = tmp_path / "mountinfo"
    table.write_bytes(
        b"22 1 0:21 / /some\\040where rw - proc proc rw\n"
        b"23 1 8:1 / /data rw - ext4 /dev/sda1 rw\n"
        b"24 1 0:40 / /net rw - autofs systemd-1 rw\n"
        b"25 1 0:41 / /tmp/t rw - tmpfs tmpfs rw\n"
    )
    assert virtual_devices(str(table)) == {os.makedev(0, 21): "proc"}


def test_a_folder_left_out_as_virtual_keeps_what_the_index_holds(tmp_path: Path, monkeypatch) -> None:
    from simscan import walk as walk_mod

    root = tmp_path / "t"
    make_tree(root, 6)
    idx = tmp_path / "i.db"
    scan(root, idx)
    assert len(indexed(idx)) == 6
    monkeypatch.setattr(walk_mod, "virtual_devices", lambda: {root.stat().st_dev: "proc"})
    r = scan(root, idx)
    assert r.problems == 1 and r.files_removed == 0
    assert len(indexed(idx)) == 6


def test_vanished_between_walk_and_read_is_dropped(tmp_path: Path):
    root = tmp_path / "t"
    paths = make_tree(root, 10)
    idx = tmp_path / "i.db"
    scan(root, idx)
    victim = paths[9]
    victim.write_bytes(b"changed " * 100)

    def sink(p: Progress) -> None:
        if p.phase == "read" and victim.exists():
            victim.unlink()  # gone after the walk listed it, before it is read

    r = run_scan(ScanRequest([root], index_path=idx, jobs=1), progress=sink)
    assert r.problems == 1
    assert os.fsencode(victim) not in indexed(idx)


def test_cancel_keeps_finished_work_and_next_scan_completes(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(scanner, "BATCH_FILES", 10)
    monkeypatch.setattr(scanner, "COMMIT_FILES", 10)
    monkeypatch.setattr(scanner, "PROGRESS_RATE", 0)  # every report reaches the sink
    root = tmp_path / "t"
    make_tree(root, 100)
    idx = tmp_path / "i.db"
    token = CancelToken()

    def sink(p: Progress) -> None:
        if p.phase == "read" and p.files_done >= 30:
            token.cancel()

    r = run_scan(ScanRequest([root], index_path=idx, jobs=1), progress=sink, cancel=token)
    assert r.cancelled and 30 <= r.files_read < 100
    kept = len(indexed(idx))
    assert kept >= 30
    with Index.open(idx, readonly=True) as ix:
        assert ix.pending_postings() == kept  # a cancel skips the posting pass ...
    r2 = scan(root, idx)
    assert not r2.cancelled and r2.files_read == 100 - kept and r2.files_unchanged == kept
    with Index.open(idx, readonly=True) as ix:
        assert ix.pending_postings() == 0  # ... which the next scan does
    with Index.open(idx, readonly=True) as ix:
        assert ix.runs(2)[1]["status"] == "cancelled"


def test_reading_threads_give_the_same_index_as_one_job(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(scanner, "BATCH_FILES", 16)
    root = tmp_path / "t"
    make_tree(root, 120, binary_every=9)
    a = scan(root, tmp_path / "a.db", jobs=2)
    b = scan(root, tmp_path / "b.db", jobs=1)
    assert a.files_read == b.files_read == 120
    ra, rb = indexed(tmp_path / "a.db"), indexed(tmp_path / "b.db")
    assert ra.keys() == rb.keys()
    for k in ra:
        assert ra[k]["checksum"] == rb[k]["checksum"] and np.array_equal(ra[k]["fps"], rb[k]["fps"])


def test_postings_follow_the_scanned_content(tmp_path: Path):
    root = tmp_path / "t"
    paths = make_tree(root, 15)
    idx = tmp_path / "i.db"
    scan(root, idx)
    paths[0].write_bytes(paths[1].read_bytes())  # now a copy of file 1
    bump_mtime(paths[0])
    scan(root, idx)
    rows = assert_postings_exact(idx)
    with Index.open(idx, readonly=True) as ix:
        _v, f = ix.files_with_fingerprints(rows[os.fsencode(paths[1])]["fps"])
        assert {rows[os.fsencode(paths[0])]["id"], rows[os.fsencode(paths[1])]["id"]} <= set(f.tolist())


def test_a_scan_brings_postings_of_the_earlier_rule_to_the_current_one(tmp_path: Path, capsys):
    """An index an older simscan posted (the value sample alone) is updated by the next scan's posting
    phase, even when nothing changed, with its progress; after it, the postings are exactly the rule's."""
    from simscan.index.postings import DEFAULT_RULE, DEFAULT_SHIFT, posted_mask

    root = tmp_path / "t"
    make_tree(root, 12, binary_every=5)
    idx = tmp_path / "i.db"
    scan(root, idx)
    with sqlite3.connect(idx) as c:
        rows = c.execute("SELECT fp, file_id FROM postings").fetchall()
        c.execute("DELETE FROM postings")
        keep = [(v, f) for v, f in rows if posted_mask(np.array([v], np.int64).view(np.uint64), DEFAULT_SHIFT)[0]]
        assert 0 < len(keep) < len(rows)
        c.executemany("INSERT INTO postings(fp, file_id) VALUES (?, ?)", keep)
        meta_set(c, "posting_shift", DEFAULT_SHIFT)
    from simscan.cli import main

    some = next(p for p in sorted(root.rglob("*")) if p.is_file())
    main(["query", str(some), "--index", str(idx)])
    assert "older simscan made this index's inverted index" in capsys.readouterr().err
    seen = []
    r = run_scan(ScanRequest(roots=[root], index_path=idx), progress=seen.append)
    assert r.files_read == 0 and not r.cancelled
    assert any(p.phase == "write" and "inverted index" in (p.message or "") for p in seen)
    assert_postings_exact(idx)
    with Index.open(idx, readonly=True) as ix:
        assert ix.posting_shift == DEFAULT_RULE
    main(["query", str(some), "--index", str(idx)])
    assert "older simscan" not in capsys.readouterr().err


def test_concurrent_reader_while_scanning(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(scanner, "COMMIT_FILES", 20)
    monkeypatch.setattr(scanner, "BATCH_FILES", 20)
    flush = scanner._Writer.flush

    def slow_flush(self) -> None:  # the scan must still be running while the reader reads
        flush(self)
        time.sleep(0.02)

    monkeypatch.setattr(scanner._Writer, "flush", slow_flush)
    root = tmp_path / "t"
    make_tree(root, 300)
    idx = tmp_path / "i.db"
    Index.open(idx).close()
    errors: list[BaseException] = []
    result: list[scanner.ScanResult] = []

    def work() -> None:
        try:
            result.append(scan(root, idx))
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    seen = []
    with Index.open(idx, readonly=True) as ro:
        while t.is_alive():
            n = len(ro.files())
            ids, off, _vals = ro.fingerprints(kind="all")
            assert off.size == ids.size + 1
            seen.append(n)
    t.join()
    assert not errors and result[0].files_read == 300
    assert seen == sorted(seen)  # snapshots only grow while the scan adds files
    assert any(0 < n < 300 for n in seen)  # and some were taken in the middle of it
    with Index.open(idx, readonly=True) as ro:
        assert len(ro.files()) == 300


@pytest.mark.skipif(ROOT_USER, reason="root reads everything; see test_scan_privileges.py")
def test_unreadable_file_and_folder(tmp_path: Path):
    root = tmp_path / "t"
    make_tree(root, 4)
    secret = root / "secret.txt"
    secret.write_bytes(b"no access " * 20)
    secret.chmod(0)
    locked = root / "locked"
    locked.mkdir()
    (locked / "inner.txt").write_bytes(b"inner " * 20)
    idx = tmp_path / "i.db"
    try:
        locked.chmod(0o700)
        scan(root, idx)  # indexes locked/inner.txt
        locked.chmod(0)
        r = scan(root, idx)
    finally:
        locked.chmod(0o700)
        secret.chmod(0o600)
    with Index.open(idx, readonly=True) as ix:
        probs = {os.path.basename(p): reason for p, reason in ix.problems()}
        paths = set(ix.files().raw_paths)
    assert "Permission denied" in probs["secret.txt"] and "Permission denied" in probs["locked"]
    assert os.fsencode(locked / "inner.txt") in paths  # kept: its folder could not be listed this time
    assert r.files_removed == 0


def test_file_with_too_many_fingerprints_keeps_its_checksum(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(scanner, "MAX_FINGERPRINTS", 10)
    root = tmp_path / "t"
    paths = make_tree(root, 3, min_size=3000, max_size=4000)
    (root / "tiny.txt").write_bytes(b"short")
    idx = tmp_path / "i.db"
    r = scan(root, idx)
    assert r.files_read == 4 and r.problems == 3
    rows = indexed(idx)
    for p in paths:
        row = rows[os.fsencode(p)]
        assert row["fps"].size == 0 and row["checksum"] == fingerprint_bytes(p.read_bytes()).checksum
    with Index.open(idx, readonly=True) as ix:
        assert all("checksum only" in reason for _, reason in ix.problems())


def test_a_panic_in_the_native_core_costs_only_its_file(tmp_path: Path):
    """A panic in the native core (forced here by its test-only fault injection, which names the file
    to fail) is a problem line for that file; the scan goes on and the next scan reads it again."""
    import subprocess
    import sys

    root = tmp_path / "t"
    make_tree(root, 40)
    victim = sorted(root.rglob("*.txt"))[7]
    script = (
        "from pathlib import Path\n"
        "from simscan.scanner import ScanRequest, run_scan\n"
        f"r = run_scan(ScanRequest([Path({str(root)!r})], index_path=Path({str(tmp_path / 'i.db')!r}), jobs=2))\n"
        "print(r.files_read, r.files_failed)\n"
    )
    env = dict(os.environ, SIMSCAN_FAULT_PANIC_NAME=victim.name)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False,
                         cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["39", "1"]
    with Index.open(tmp_path / "i.db", readonly=True) as ix:
        (path, reason), = ix.problems()
    assert path == str(victim) and "internal error" in reason and "injected" in reason
    r2 = scan(root, tmp_path / "i.db")
    assert r2.files_read == 1 and r2.files_unchanged == 39


def test_a_scan_from_a_script_on_stdin(tmp_path: Path):
    import subprocess
    import sys

    root = tmp_path / "t"
    make_tree(root, 350)
    script = (
        "from pathlib import Path\n"
        "from simscan.scanner import ScanRequest, run_scan\n"
        f"r = run_scan(ScanRequest([Path({str(root)!r})], index_path=Path({str(tmp_path / 'i.db')!r}), jobs=2))\n"
        "print(r.files_read, r.problems)\n"
    )
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, cwd=repo, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["350", "0"] and "Traceback" not in out.stderr


def test_scanned_files_are_never_modified_nor_their_times(tmp_path: Path):
    root = tmp_path / "t"
    paths = make_tree(root, 20, binary_every=4)
    old = 1_500_000_000_000_000_000  # 2017: older than mtime, so a plain read would update atime
    for p in paths:
        os.utime(p, ns=(old, old + 5))
    before = {p: (p.read_bytes(), os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns) for p in paths}
    for p in paths:  # reading them above moved atime: set it back
        os.utime(p, ns=(old, old + 5))
    scan(root, tmp_path / "i.db")
    scan(root, tmp_path / "j.db", jobs=2)
    for p in paths:
        st = os.stat(p)
        assert (st.st_atime_ns, st.st_mtime_ns) == (old, old + 5)
        assert p.read_bytes() == before[p][0]


def test_progress_reports_phases_in_order_with_totals(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(scanner, "PROGRESS_RATE", 0)
    monkeypatch.setattr(scanner, "BATCH_FILES", 10)
    root = tmp_path / "t"
    paths = make_tree(root, 60)
    reports: list[Progress] = []
    run_scan(ScanRequest([root], index_path=tmp_path / "i.db", jobs=1), progress=reports.append)
    phases = [p.phase for p in reports]
    order = [ph for i, ph in enumerate(phases) if i == 0 or phases[i - 1] != ph]
    assert order == ["walk", "read", "write", "done"]
    read = [p for p in reports if p.phase == "read"]
    total = sum(p.stat().st_size for p in paths)
    assert all(p.files_total == 60 and p.bytes_total == total for p in read)
    assert [p.files_done for p in read] == sorted(p.files_done for p in read)
    assert read[-1].files_done == 60 and read[-1].bytes_done == total
    assert any(p.current.endswith(".txt") for p in read)
    assert any(p.eta_s is not None for p in read[1:])


def test_file_that_grows_after_the_walk_is_stored_as_read(tmp_path: Path):
    root = tmp_path / "t"
    paths = make_tree(root, 5)
    grower, shrinker = paths[1], paths[3]
    idx = tmp_path / "i.db"
    done = []

    def sink(p: Progress) -> None:
        if p.phase == "read" and not done:  # after the walk stat'ed them, before they are read
            with open(grower, "ab") as f:
                f.write(b" and more words at the end" * 50)
            with open(shrinker, "r+b") as f:
                f.truncate(100)
            done.append(1)

    r = run_scan(ScanRequest([root], index_path=idx, jobs=1), progress=sink)
    assert done and r.files_read == 5 and r.problems == 0
    rows = indexed(idx)
    for p in (grower, shrinker):
        data = p.read_bytes()
        assert rows[os.fsencode(p)]["size"] == len(data)
        assert rows[os.fsencode(p)]["checksum"] == fingerprint_bytes(data).checksum
    r2 = scan(root, idx)
    assert r2.files_read == 0 and r2.files_unchanged == 5  # what was stored is what is on disk


def test_stored_fingerprints_do_not_depend_on_batching(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(scanner, "BATCH_FILES", 20)
    root = tmp_path / "t"
    # File 241 once got an anchor across its border with file 240 in the batch 240..259.
    paths = make_tree(root, 260, per_dir=100, binary_every=11)
    scan(root, tmp_path / "i.db")
    rows = indexed(tmp_path / "i.db")
    bad = []
    for p in paths:
        ref = fingerprint_bytes(p.read_bytes())
        row = rows[os.fsencode(p)]
        if row["simhash"] != ref.simhash or not np.array_equal(row["fps"], np.concatenate((ref.rolling, ref.anchored))):
            bad.append(p.name)
    assert bad == []


def test_renamed_folder_is_not_read_again(tmp_path: Path):
    root = tmp_path / "t"
    make_tree(root, 60, per_dir=20)
    idx = tmp_path / "i.db"
    scan(root, idx)
    before = indexed(idx)
    os.rename(root / "d001", root / "moved")
    r = scan(root, idx)
    assert (r.files_read, r.files_renamed, r.files_removed, r.files_unchanged) == (0, 20, 0, 40)
    after = indexed(idx)
    for p, row in before.items():
        q = p.replace(b"/d001/", b"/moved/")
        assert after[q]["id"] == row["id"] and np.array_equal(after[q]["fps"], row["fps"])


def test_other_algorithm_version_is_fingerprinted_again(tmp_path: Path):
    root = tmp_path / "t"
    make_tree(root, 10)
    idx = tmp_path / "i.db"
    scan(root, idx)
    with Index.open(idx, readonly=True) as ix:  # (the count the scan recorded, see below)
        assert ix.files_needing_rescan() == 0
    edit_files(idx, "UPDATE files SET algorithm_version = algorithm_version - 1 WHERE id <= 3")
    with Index.open(idx, readonly=True) as ix:
        assert len(ix.files()) == 7 and ix.stats()["files_needing_rescan"] == 3 == ix.files_needing_rescan()
    # The scan's record of the count serves while no change came since; after one, files are counted.
    with sqlite3.connect(idx) as c:
        gen = c.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
        meta_set(c, "stale_files", f"{ALGORITHM_VERSION} {gen} 5")
    with Index.open(idx, readonly=True) as ix:
        assert ix.files_needing_rescan() == 5
    edit_files(idx, "UPDATE files SET size = size WHERE id = 1")  # a change: the files' generation moves on
    with Index.open(idx, readonly=True) as ix:
        assert ix.files_needing_rescan() == 3
    r = scan(root, idx)
    assert (r.files_read, r.files_unchanged) == (3, 7)
    with Index.open(idx, readonly=True) as ix:
        assert len(ix.files()) == 10 and ix.stats()["files_needing_rescan"] == 0 == ix.files_needing_rescan()
        assert meta_get(ix.connection, "stale_files").split()[::2] == [str(ALGORITHM_VERSION), "0"]


@pytest.mark.parametrize("trigger", ["files", "fingerprints", "idle commits", "pairs read back", "job's values"])
def test_postings_made_while_workers_run_are_exact(tmp_path: Path, monkeypatch, trigger: str):
    # Many small posting jobs during the read phase, started by the count of waiting files or of
    # waiting fingerprints (what large files trigger), or fed by commits made while the writer
    # waits for its workers (what large files do; how many depends on timing, the result must not).
    monkeypatch.setattr(scanner, "COMMIT_FILES", 10)
    if trigger == "files":
        monkeypatch.setattr(scanner, "POST_JOB_FILES", 10)
    elif trigger == "fingerprints":
        monkeypatch.setattr(scanner, "POST_JOB_FINGERPRINTS", 2_000)
    elif trigger == "idle commits":
        monkeypatch.setattr(scanner, "POST_JOB_FILES", 10)
        monkeypatch.setattr(scanner, "COMMIT_FILES", 1_000_000)
        monkeypatch.setattr(scanner, "IDLE_COMMIT_BYTES", 1)
    elif trigger == "pairs read back":  # no room for posted pairs in memory: every job reads the fingerprints back
        monkeypatch.setattr(scanner, "POST_JOB_FILES", 10)
        monkeypatch.setattr(scanner, "WAITING_PAIRS_BYTES", 0)
    else:  # a job holds a commit or two of values at most, however many files wait
        monkeypatch.setattr(scanner, "POST_JOB_MAX_FINGERPRINTS", 1)
    monkeypatch.setattr(scanner, "BATCH_FILES", 5)
    jobs = []
    real_job = Index.posting_job

    def counted(self, ids, slice_rows=40_000, pairs=None):  # the real job, in small slices, counted
        jobs.append(len(ids))
        # The pairs kept from the arrays written, not read back, unless there is no room for them.
        assert (pairs is None) == (trigger == "pairs read back")
        return real_job(self, ids, slice_rows=7, pairs=pairs)

    monkeypatch.setattr(Index, "posting_job", counted)
    root = tmp_path / "t"
    make_tree(root, 200)
    idx = tmp_path / "i.db"
    r = scan(root, idx, jobs=2)
    # How many jobs start while the workers run depends on timing (a fast machine may have every
    # result in before the writer is idle); each job is cut in slices of 7 rows either way.
    assert r.files_read == 200 and len(jobs) >= 1
    if trigger == "job's values":  # (one commit a job: at most COMMIT_FILES files)
        assert max(jobs) <= 10 and len(jobs) >= 20
    with Index.open(idx, readonly=True) as ix:
        assert ix.pending_postings() == 0
    assert_postings_exact(idx)


def test_one_file_reached_by_two_routes_is_indexed_once(tmp_path: Path):
    docs = tmp_path / "docs"
    make_tree(docs, 4)
    link = tmp_path / "link"
    os.symlink(docs, link)
    idx = tmp_path / "i.db"
    scan(docs, idx)
    r = scan(link, idx)  # a second scan through a symlinked folder
    assert r.files_read == 0 and r.files_unchanged == 4
    # One scan whose roots overlap: a root twice, a root and its subfolder, a link to it.
    j = tmp_path / "j.db"
    r = scan([docs, docs, docs / "d000", link, link / "d000"], j)
    assert (r.files_seen, r.files_read) == (4, 4)
    for db in (idx, j):
        with Index.open(db, readonly=True) as ix:
            ft = ix.files()
            assert sorted(ft.paths) == sorted(str(p) for p in docs.rglob("*.txt"))
            assert len(set(zip(ft.device.tolist(), ft.inode.tolist()))) == len(ft) == 4
            assert ft.device.dtype == np.int64 and ft.inode.dtype == np.int64
            st = os.stat(ft.paths[0])
            assert (int(ft.device[0]), int(ft.inode[0])) == (st.st_dev, st.st_ino)
            sub = ix.files_by_ids(ft.ids[1:3])
            assert list(sub.inode) == list(ft.inode[1:3]) and list(sub.device) == list(ft.device[1:3])


def test_hard_link_outside_the_roots_of_an_earlier_scan_is_indexed_once(tmp_path: Path):
    docs, other = tmp_path / "docs", tmp_path / "other"
    paths = make_tree(docs, 3)
    other.mkdir()
    os.link(paths[1], other / "same.txt")
    (other / "own.txt").write_bytes(b"a file of its own " * 30)
    idx = tmp_path / "i.db"
    scan(docs, idx)
    r = scan(other, idx)
    assert r.files_read == 1 and r.problems == 1
    with Index.open(idx, readonly=True) as ix:
        assert sorted(os.path.basename(p) for p in ix.files().paths) == ["f00000.txt", "f00001.txt", "f00002.txt",
                                                                         "own.txt"]  # fmt: skip
        probs = dict(ix.problems())
    assert probs[str(other / "same.txt")] == f"same file as {paths[1]} (already in the index): indexed once"
    # Once the first path is gone, the second one is indexed.
    os.unlink(paths[1])
    r = scan(other, idx)
    assert r.files_read == 1 and r.problems == 0
    with Index.open(idx, readonly=True) as ix:
        assert str(other / "same.txt") in ix.files().paths


def test_waiting_writer_commits_then_posts_once_everything_is_submitted(tmp_path: Path, monkeypatch):
    # The writer's idle work, step by step: what was read is committed while it waits for its workers
    # (IDLE_COMMIT_BYTES), and posted at a quarter of the usual job size once the walk is over and
    # nothing is left to submit.
    from simscan.index import FileRecord
    from simscan.progress import Throttle

    monkeypatch.setattr(scanner, "IDLE_COMMIT_BYTES", 1)
    monkeypatch.setattr(scanner, "POST_JOB_FILES", 8)
    rng = np.random.default_rng(4)
    recs = [
        FileRecord.from_fingerprints(b"/r/f%d" % i, 1, 10 + i, 5, fingerprint_bytes(bytes(rng.integers(97, 123, 3000))))
        for i in range(3)
    ]  # fmt: skip
    idx = tmp_path / "i.db"
    with Index.open(idx) as ix:
        w = scanner._Writer(ix, ix.begin_run([b"/r"], {}))
        reader = scanner._Reader(ScanRequest([tmp_path]), w, Throttle(None, 0), {}, first_scan=True)
        for rec in recs:
            w.add(rec)
        assert reader._idle_work()  # commits
        assert not w.records and w.waiting_files == 3 and ix.pending_postings() == 3
        assert not reader._idle_work()  # still walking: 3 files are too few to post (8 needed)
        reader.walking = False
        assert reader._idle_work() and reader.job is not None  # 3 >= 8 // 4
        while reader._idle_work():
            pass
        assert reader.job is None and not w.waiting and ix.pending_postings() == 0
    assert_postings_exact(idx)


def test_a_stopped_reading_reads_nothing_more(tmp_path: Path):
    """A cancelled scan sets its stop flag: the native reader leaves the files it has not begun
    ("cancelled", never stored) and a large file stops at its next chunk."""
    from simscan import _native

    small, large = tmp_path / "s.txt", tmp_path / "l.bin"
    small.write_bytes(b"words " * 100)
    with open(large, "wb") as f:
        f.truncate(scanner.LARGE_FILE + 1)
    stop = _native.StopFlag()
    task = (False, [(0, os.fsencode(small), 600), (1, os.fsencode(large), scanner.LARGE_FILE + 1)])
    out = read_task(task, stop)
    assert out[0][1] is not None and out[1][1] is not None  # read, while not stopped
    stop.set()
    assert stop.is_set and read_task(task, stop) == [(0, None, "cancelled"), (1, None, "cancelled")]
