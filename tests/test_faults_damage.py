"""Fault campaign, damage: random bytes in the pages of every table of a real index, one place at a time.

Each trial holds the index to one rule (``fault_campaign.damage_cycle``): no command prints results
that differ from the intact index's (it exits 3 and says the index is damaged), ``simscan check``
finds what a command or SQLite's own integrity check finds, and the remedy the messages name (a scan,
or ``--rebuild``) gives back an intact index with the intact one's results.  Before checksums, damage
to a fingerprint blob or a row of ``files`` changed what ``pairs --no-cache`` and ``query`` printed,
with exit 0, and no scan ever noticed.
"""

from __future__ import annotations

import random
import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from simscan.index import SCHEMA_VERSION, Index, IndexDamaged, checks
from tests.fault_campaign import (
    checkpoint,
    cli,
    copy_index,
    damage_cycle,
    has_dbstat,
    make_family_tree,
    outputs,
    pages_by_table,
    scan,
)
from tests.helpers_index import make_newer

needs_dbstat = pytest.mark.skipif(not has_dbstat(), reason="this SQLite has no dbstat table to map pages to tables")


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict, list[Path]]:
    """A real tree, its index (every page in the main file) and the outputs of every read command."""
    top = tmp_path_factory.mktemp("damage")
    root = top / "tree"
    files = make_family_tree(root, n_bases=8)
    idx = top / "intact.db"
    assert scan(root, idx)[0] == 0
    checkpoint(idx)
    queries = [files[0], files[3]]
    return root, idx, outputs(idx, queries), queries


def _blob_pages(idx: Path) -> list[tuple[int, str]]:
    return [p for p in pages_by_table(idx)["fingerprints"] if p[1] != "internal"]


@needs_dbstat
def test_a_damaged_fingerprint_blob_is_never_used_and_the_next_scan_reads_its_file_again(intact, tmp_path: Path):
    root, base, expected, queries = intact
    db = tmp_path / "i.db"
    copy_index(base, db)
    # One value inside one blob changed (a page's structure intact: SQLite's own check sees nothing).
    with sqlite3.connect(db) as c:
        fid, blob = c.execute("SELECT file_id, fps FROM fingerprints WHERE length(fps) > 800 LIMIT 1").fetchone()
        path = c.execute("SELECT path FROM files WHERE id = ?", (fid,)).fetchone()[0]
    with open(db, "r+b") as f:
        data = f.read()
        at = data.index(blob) + 400
        f.seek(at)
        f.write(bytes([data[at] ^ 0x10]))
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with Index.open(db, readonly=True) as ix, pytest.raises(IndexDamaged) as ei:
        ix.fingerprints(kind="all")
    assert "fingerprints of 1 file fail their checksums" in str(ei.value)
    code, _, err = cli(["pairs", "--no-cache", "--index", str(db)])
    assert code == 3 and "damaged" in err and "simscan scan" in err and "--rebuild" in err
    assert cli(["check", "--index", str(db)])[0] == 3
    code, err = scan(root, db)
    assert code == 0 and "repaired the index: the fingerprints of 1 file fail their checksums" in err
    assert "1 file with damaged entries was dropped from the index to be read again" in err
    code, out, _ = cli(["problems", "--index", str(db)])
    assert f"{path.decode()}: its fingerprints in the index were damaged" in out
    assert cli(["check", "--index", str(db)])[0] == 0
    after = outputs(db, queries, problems=False)
    assert all(after[k] == expected[k] for k in after)


@needs_dbstat
def test_random_bytes_at_the_middle_of_the_index(intact, tmp_path: Path):
    """The issue's report: 64 KB of random bytes at the index's midpoint went unnoticed by scan, stats,
    problems, groups and pairs (all exit 0, `scan` said "done, 0 problems")."""
    root, base, expected, queries = intact
    db = tmp_path / "i.db"
    copy_index(base, db)
    size = db.stat().st_size
    with open(db, "r+b") as f:
        f.seek(size // 2)
        f.write(random.Random(21).randbytes(min(64 << 10, size // 4)))
    got = outputs(db, queries)
    assert any(code == 3 for code, _ in got.values())
    for name, (code, out) in got.items():
        assert code == 3 or (code, out) == expected[name], name
    code, _, err = cli(["check", "--index", str(db)])
    assert code == 3 and "\\n" not in err, err  # SQLite's report a line each, not one line with "\n" in it
    code, err = scan(root, db)
    assert code == 3 or "repaired the index" in err, err
    if code == 3:
        assert "--rebuild" in err
        assert scan(root, db, "--rebuild")[0] == 0
    assert cli(["check", "--index", str(db)])[0] == 0
    after = outputs(db, queries, problems=False)
    assert all(after[k] == expected[k] for k in after)


def _places(idx: Path) -> list[tuple[str, int, str] | None]:
    """Every table and index of the index, each with its pages; None stands for the file header."""
    out: list[tuple[str, int, str] | None] = []
    for table, pages in sorted(pages_by_table(idx).items()):
        out += [(table, page, kind) for page, kind in pages]
    return out


@needs_dbstat
@pytest.mark.slow
def test_damaged_pages_in_every_table(intact, tmp_path: Path):
    root, base, expected, queries = intact
    rng = random.Random(2026)
    by_table: dict[str, list[tuple[str, int, str]]] = {}
    for place in _places(base):
        assert place is not None
        by_table.setdefault(place[0], []).append(place)
    assert {"files", "fingerprints", "postings", "runs", "problems", "meta", "results", "sqlite_schema",
            "sqlite_autoindex_files_1", "files_inode"} <= set(by_table)
    seen = []
    for table, places in sorted(by_table.items()):
        for _ in range(2):  # two places in each, one at a time
            seen.append(damage_cycle(base, tmp_path, root, expected, queries, rng.choice(places), rng))
    for _ in range(3):
        seen.append(damage_cycle(base, tmp_path, root, expected, queries, None, rng))
    # The campaign did find damage (not only bytes that changed nothing).
    assert sum(bool(s["found_by_reads"]) for s in seen) >= 5
    assert sum("scan (repaired)" in s["remedy"] for s in seen) >= 2


def test_an_older_index_gets_its_checks_without_blessing_damaged_blobs(tmp_path: Path):
    """Schema 7 computes the checks of an older index's rows once (the upgrade); a blob already
    damaged then (not sorted, or not as long as its file's count) is not given a check: its file is
    read again by that scan."""
    root = tmp_path / "tree"
    make_family_tree(root, n_bases=3)
    idx = tmp_path / "i.db"
    assert scan(root, idx)[0] == 0
    with sqlite3.connect(idx) as c:  # back to schema 6, with one blob damaged
        for table, column in (("files", "row_check"), ("fingerprints", "chk"), ("runs", "chk"), ("problems", "chk"),
                              ("meta", "chk"), ("fingerprints", "spans"), ("fingerprints", "schk"),
                              ("fingerprints", "places"), ("fingerprints", "pchk")):
            c.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        c.execute("DELETE FROM meta WHERE key IN ('schema_version', 'files_digest', 'check_scans', 'check_next')")
        fid, blob = c.execute("SELECT file_id, fps FROM fingerprints WHERE length(fps) > 80 LIMIT 1").fetchone()
        v = np.frombuffer(blob, "<u8").copy()
        v[3] = v[7]  # no longer strictly increasing
        c.execute("UPDATE fingerprints SET fps = ? WHERE file_id = ?", (v.tobytes(), fid))
        # (rows an older simscan wrote: of the fingerprint algorithm before spans and places)
        c.execute("UPDATE files SET algorithm_version = 11")
        c.execute("PRAGMA user_version = 6")
    code, err = scan(root, idx)
    assert code == 0, err
    with Index.open(idx, readonly=True) as ix:
        assert ix.version == SCHEMA_VERSION and ix.checked
        assert len(ix.files()) == len([p for p in root.rglob("*") if p.is_file()])
        ix.fingerprints(kind="all")  # every blob passes its check
    assert cli(["check", "--index", str(idx)])[0] == 0
    with sqlite3.connect(idx) as c:
        runs = c.execute("SELECT files_read FROM runs ORDER BY id").fetchall()
    # Every file is read again: its rows are of an older fingerprint algorithm (version 11, before
    # spans and places); before that change, only the damaged blob's file was.
    assert runs[-1] == (len([p for p in root.rglob("*") if p.is_file()]),)


def test_every_check_catches_a_changed_value(tmp_path: Path):
    """The checks cover what they claim: any one column of a row of files, a blob's bytes, its
    split point or its owner; a row of a small table; and a row gone from files (the digest)."""
    root = tmp_path / "tree"
    make_family_tree(root, n_bases=2)
    idx = tmp_path / "i.db"
    assert scan(root, idx)[0] == 0
    good = tmp_path / "good.db"
    checkpoint(idx)
    shutil.copy(idx, good)
    edits = [f"UPDATE files SET {col} = {val} WHERE id = 2" for col, val in (
        ("id", "9999"), ("path", "x'2f78'"), ("device", "device + 1"), ("inode", "inode + 1"), ("size", "size + 1"),
        ("mtime_ns", "mtime_ns + 1"), ("is_text", "1 - is_text"), ("encoding", "'latin-1'"),
        ("checksum", "zeroblob(16)"), ("partial", "partial + 1"), ("content_hash", "zeroblob(16)"),
        ("simhash", "simhash + 1"), ("fp_count", "fp_count + 1"), ("units", "units + 1"),
        ("algorithm_version", "0"), ("error", "'cannot be read'"), ("run_id", "NULL"), ("ctime_ns", "NULL"),
        ("format", "'pdf'"), ("extractor", "'pdf'"), ("extractor_version", "'pdf/0'"),
    )] + [
        "UPDATE fingerprints SET fps = substr(fps, 1, 8) || x'0000000000000001' || substr(fps, 17) WHERE file_id = 2",
        "UPDATE fingerprints SET n_rolling = n_rolling - 1 WHERE file_id = 2",
        "UPDATE fingerprints SET spans = x'01' || substr(spans, 2) WHERE file_id = 2",  # schema 8
        "UPDATE fingerprints SET places = substr(places, 1, 4) || x'ffffffff' || substr(places, 9) WHERE file_id = 2",
        "UPDATE fingerprints SET file_id = 999 WHERE file_id = 2",
        "DELETE FROM files WHERE id = 3",
        "UPDATE meta SET value = '9' WHERE key = 'posting_shift'",
        "UPDATE runs SET files_read = files_read + 1",
        "UPDATE problems SET reason = 'fine'",
    ]
    assert set(checks.FILE_COLUMNS) <= {e.split()[3] for e in edits if e.startswith("UPDATE files")}
    for sql in edits:
        copy_index(good, idx)
        with sqlite3.connect(idx) as c:
            assert c.execute(sql).rowcount >= 1, sql
        with Index.open(idx, readonly=True) as ix:
            rep = ix.check()
        assert not rep.ok and not rep.structure, sql
        assert cli(["check", "--index", str(idx)])[0] == 3, sql


def test_a_newer_index_is_refused_by_every_command_and_left_as_it_was(tmp_path: Path):
    root = tmp_path / "tree"
    make_family_tree(root, n_bases=2)
    idx = tmp_path / "i.db"
    assert scan(root, idx)[0] == 0
    make_newer(idx)
    checkpoint(idx)
    def files() -> dict[str, bytes]:  # (the -shm file is SQLite's shared memory of any reader: not the index)
        return {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.name.endswith("-shm")}

    before = files()
    for args in (["scan", str(root)], ["scan", str(root), "--rebuild"], ["stats"], ["problems"], ["pairs"],
                 ["groups"], ["query", str(next(root.rglob("*.txt")))], ["check"]):
        code, _, err = cli([*args, "--index", str(idx)])
        assert code == 3, (args, err)
        assert "newer simscan" in err and "Upgrade simscan" in err and "Traceback" not in err, (args, err)
    assert files() == before  # never migrated down, moved aside or written


def test_a_damaged_version_number_in_the_header_is_damage_not_a_newer_index(tmp_path: Path):
    root = tmp_path / "tree"
    make_family_tree(root, n_bases=2)
    idx = tmp_path / "i.db"
    assert scan(root, idx)[0] == 0
    checkpoint(idx)
    with open(idx, "r+b") as f:  # user_version: the 4 bytes at offset 60 of the header
        f.seek(60)
        f.write((40).to_bytes(4, "big"))
    code, _, err = cli(["stats", "--index", str(idx)])
    assert code == 3 and "damaged" in err and "header says schema 40" in err and "--rebuild" in err
    with open(idx, "r+b") as f:  # an older version number: never "upgraded" from there
        f.seek(60)
        f.write((3).to_bytes(4, "big"))
    code, _, err = cli(["scan", str(root), "--index", str(idx)])
    assert code == 3 and "damaged" in err and "schema is not that of version 3" in err
    assert scan(root, idx, "--rebuild")[0] == 0


@needs_dbstat
def test_rebuild_keeps_every_file_whose_entries_pass_their_checks(tmp_path: Path):
    """Damage a scan cannot repair in place (SQLite cannot even free a page it cannot read) is the
    --rebuild the messages name: the new index keeps every file whose row and fingerprints pass their
    checks, so the scan after it reads only the files whose entries were lost."""
    root = tmp_path / "tree"
    files = make_family_tree(root, n_bases=40)  # (files then spans several pages)
    base = tmp_path / "intact.db"
    assert scan(root, base)[0] == 0
    checkpoint(base)
    queries = files[:2]
    expected = outputs(base, queries)
    n_files = len(files)
    for table, most in (("postings", True), ("files", False)):
        db = tmp_path / f"{table}.db"
        copy_index(base, db)
        leaves = sorted(p for p, kind in pages_by_table(db)[table] if kind == "leaf")
        assert len(leaves) >= 3
        page = leaves[len(leaves) // 2]
        with sqlite3.connect(db) as c:
            size = c.execute("PRAGMA page_size").fetchone()[0]
        with open(db, "r+b") as f:  # the page header and its first cell pointers: a page SQLite cannot read
            f.seek((page - 1) * size)
            f.write(b"\xff" * 16)
        code, err = scan(root, db)
        if code == 0:  # (the scan's check did not cross that page: the full check does)
            assert cli(["check", "--index", str(db)])[0] == 3
            code, err = scan(root, db)
        assert code == 3 and "--rebuild" in err, err
        code, _, err = cli(["scan", str(root), "--index", str(db), "--rebuild"])
        assert code == 0, err
        kept = int(re.search(r"the new one keeps the (\d+) files?", err).group(1))
        read = int(re.search(r": (\d+) read \(", err).group(1))
        if most:  # the inverted index is derived: every file kept, none read again
            assert (kept, read) == (n_files, 0), err
        else:
            assert 0 < kept < n_files and kept + read == n_files, err
        assert cli(["check", "--index", str(db)])[0] == 0
        after = outputs(db, queries, problems=False)
        assert all(after[k] == expected[k] for k in after)
