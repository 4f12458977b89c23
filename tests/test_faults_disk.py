"""Fault campaign: a full disk in every phase, read-only media, and an index of an older layout on them.

The index lives on a small tmpfs mounted for the test (the suite runs as root in CI; skipped where
mounting is not permitted).  The disk is filled at the moment a phase begins (a progress report), so
the scan meets ENOSPC inside that phase: walk, read, the inverted index ("write"), the results at its
end, the record of the run ("done"); also while creating the index, while upgrading an older one,
and while the window forgets files it moved to the trash.  Each time: exit 3 with a message that says
the disk is full and what to do, what the index held before intact (its rows, SQLite's and simscan's
checks), and a retry once there is room completes with a fresh scan's results.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from simscan.cli import scan_cmds
from simscan.cli.common import ProgressBar
from simscan.index import SCHEMA_VERSION, Index, IndexUnavailable
from tests.fault_campaign import cli, integrity, make_family_tree, outputs, scan


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                       check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk`` (a file written until ENOSPC); returns the file."""
    filler = disk / f"filler-{uuid.uuid4().hex}"
    with open(filler, "ab", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def _rows(idx: Path) -> dict[bytes, tuple]:
    with contextlib.closing(sqlite3.connect(f"file:{idx}?mode=ro", uri=True)) as c:
        return {r[0]: r[1:] for r in c.execute(
            "SELECT path, size, mtime_ns, checksum, content_hash, simhash, fp_count, row_check FROM files")}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    top = tmp_path_factory.mktemp("full")
    root = top / "tree"
    make_family_tree(root, n_bases=24)
    fresh = top / "fresh.db"
    assert scan(root, fresh)[0] == 0
    return root, outputs(fresh)


@pytest.mark.parametrize("phase", ["walk", "read", "write", "exact", "done"])
def test_a_disk_that_fills_up_in_each_phase_of_a_scan(tree, tmp_path: Path, monkeypatch, phase: str):
    root, fresh = tree
    with tmpfs(tmp_path / "disk", "4m") as disk:
        idx = disk / "i.db"
        assert scan(root / "originals", idx)[0] == 0  # what the index held before
        before = _rows(idx)
        fillers: list[Path] = []

        class FillsUp(ProgressBar):
            def __call__(self, p):  # the disk fills as this phase begins
                if p.phase == phase and not fillers:
                    fillers.append(fill(disk))

        monkeypatch.setattr(scan_cmds, "ProgressBar", FillsUp)
        code, err = scan(root, idx)
        assert fillers, f"the phase {phase} never began"
        assert code == 3, err
        assert "the disk holding it is full" in err and "Free some space" in err and "Traceback" not in err
        assert "is kept" in err
        assert integrity(idx) == "ok"
        assert cli(["check", "--index", str(idx)])[0] == 0
        after = _rows(idx)
        assert all(after.get(p) == row for p, row in before.items())  # nothing it held was lost or changed
        # The read commands work on the full disk (they only skip keeping the results).
        assert cli(["groups", "--index", str(idx)])[0] == 0
        fillers[0].unlink()
        monkeypatch.setattr(scan_cmds, "ProgressBar", ProgressBar)
        assert scan(root, idx)[0] == 0
        got = outputs(idx)
        assert all(got[k] == fresh[k] for k in fresh)


def test_no_room_to_create_the_index(tree, tmp_path: Path):
    root, fresh = tree
    with tmpfs(tmp_path / "disk", "4m") as disk:
        filler = fill(disk)
        idx = disk / "i.db"
        code, err = scan(root, idx)
        assert code == 3 and "the disk holding it is full" in err, err
        for cmd in ("stats", "pairs"):  # the empty file left behind is an index with nothing in it yet
            code, _, err = cli([cmd, "--index", str(idx)])
            assert code == 3 and "no index" in err, err
        filler.unlink()
        assert scan(root, idx)[0] == 0
        got = outputs(idx)
        assert all(got[k] == fresh[k] for k in fresh)


def test_no_room_to_upgrade_an_older_index(tree, tmp_path: Path):
    """The upgrade to schema 7 rewrites every row (their checks): on a full disk it fails whole, and
    the index stays as it was, at its version, readable."""
    root, fresh = tree
    with tmpfs(tmp_path / "disk", "8m") as disk:
        idx = disk / "i.db"
        assert scan(root, idx)[0] == 0
        with contextlib.closing(sqlite3.connect(idx, isolation_level=None)) as c:  # as simscan of schema 6 left it
            for table, column in (("files", "row_check"), ("fingerprints", "chk"), ("runs", "chk"),
                                  ("problems", "chk"), ("meta", "chk"), ("fingerprints", "spans"), ("fingerprints", "schk"),
                              ("fingerprints", "places"), ("fingerprints", "pchk")):
                c.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
            c.execute("DELETE FROM meta WHERE key IN ('schema_version', 'files_digest', 'check_scans', 'check_next',"
                      " 'runs_digest', 'problems_digest')")
            # (rows an older simscan wrote: of the fingerprint algorithm before spans and places)
            c.execute("UPDATE files SET algorithm_version = 11")
            c.execute("PRAGMA user_version = 6")
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        filler = fill(disk)
        code, err = scan(root, idx)
        assert code == 3 and "the disk holding it is full" in err, err
        # A reader may need room too (SQLite's shared-memory index of the write-ahead log): then it says so.
        code, _, err = cli(["groups", "--index", str(idx)])
        assert code == 0 or (code == 3 and "the disk holding it is full" in err), err
        filler.unlink()
        with contextlib.closing(sqlite3.connect(f"file:{idx}?mode=ro", uri=True)) as c:
            assert c.execute("PRAGMA user_version").fetchone()[0] == 6  # as it was, not half upgraded
        assert integrity(idx) == "ok"
        assert cli(["groups", "--index", str(idx)])[0] == 0  # read as it is
        assert scan(root, idx)[0] == 0
        with Index.open(idx, readonly=True) as ix:
            assert ix.version == SCHEMA_VERSION
        got = outputs(idx)
        assert all(got[k] == fresh[k] for k in fresh)


def test_no_room_when_the_window_forgets_files_it_moved_to_the_trash(tree, tmp_path: Path):
    root, _ = tree
    with tmpfs(tmp_path / "disk", "4m") as disk:
        idx = disk / "i.db"
        assert scan(root, idx)[0] == 0
        before = _rows(idx)
        filler = fill(disk)
        gone = [p for p in before if b"/copies/" in p]
        with Index.open(idx) as ix, pytest.raises(IndexUnavailable) as ei:
            ix.remove_paths(gone)
        assert "the disk holding it is full" in str(ei.value) and ei.value.exit_code == 3
        assert _rows(idx) == before and integrity(idx) == "ok"
        filler.unlink()
        with Index.open(idx) as ix:
            assert ix.remove_paths(gone) == len(gone)


def test_read_only_media(tree, tmp_path: Path):
    """An index on a medium mounted read-only: every read command works (SQLite cannot even keep its
    shared-memory file there); a scan says why it cannot write, and changes nothing."""
    root, fresh = tree
    with tmpfs(tmp_path / "disk", "8m") as disk:
        idx = disk / "i.db"
        assert scan(root, idx)[0] == 0
        r = subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True, check=False)
        if r.returncode != 0:
            pytest.skip(f"cannot remount read-only: {r.stderr.decode().strip()}")
        listing = sorted(os.listdir(disk))
        got = outputs(idx)
        assert all(got[k] == fresh[k] for k in fresh)
        assert cli(["check", "--index", str(idx)])[0] == 0
        code, err = scan(root, idx)
        assert code == 3 and "read-only" in err.lower() and str(idx) in err and "Traceback" not in err, err
        assert "read commands" in err  # (pairs, groups ... work as it is)
        code, _, err = cli(["scan", str(root), "--index", str(idx), "--rebuild"])
        assert code == 3 and "Traceback" not in err, err
        assert sorted(os.listdir(disk)) == listing
