"""Unreadable files and folders, tested as an unprivileged user.

The test suite may run as root (root reads everything), so the scan runs in a subprocess that
drops to the ``nobody`` user first; the tree lives in a world-traversable folder under /tmp
that the test removes afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from simscan.index import Index

REPO = Path(__file__).resolve().parents[1]
NOBODY = 65534


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to drop to another user")
def test_unreadable_entries_as_nobody():
    top = Path(tempfile.mkdtemp(prefix="simscan-perm-", dir="/tmp"))
    try:
        top.chmod(0o755)
        root = top / "tree"
        root.mkdir()
        (root / "ok.txt").write_bytes(b"readable text file " * 20)
        secret = root / "secret.txt"
        secret.write_bytes(b"root only " * 20)
        secret.chmod(0o600)  # owned by root
        locked = root / "locked"
        locked.mkdir(mode=0o700)
        (locked / "inner.txt").write_bytes(b"inner " * 20)
        idx_dir = top / "idx"
        idx_dir.mkdir()
        os.chown(idx_dir, NOBODY, NOBODY)
        idx = idx_dir / "i.db"
        code = (
            "import os, sys\n"
            "from pathlib import Path\n"
            "from simscan.scanner import ScanRequest, run_scan\n"
            # Python itself lives under /root here: import everything the scan needs, then drop root.
            f"run_scan(ScanRequest([Path({str(root / 'ok.txt')!r})], index_path=Path({str(top / 'warm.db')!r}), jobs=1))\n"
            "from simscan.cli import build_parser, main\n"
            "build_parser()\n"  # (imports the commands' modules while they can be read)
            f"os.setgroups([]); os.setgid({NOBODY}); os.setuid({NOBODY})\n"
            f"r = run_scan(ScanRequest([Path({str(root)!r})], index_path=Path({str(idx)!r}), jobs=1))\n"
            "print(r.files_seen, r.files_read, r.files_failed, r.problems)\n"
            # One rule for ROOTs (as for one that is not there): a root that cannot be read -- inside a folder
            # it may not search, or a folder it may not list -- is a wrong argument: exit 2, named with the
            # reason, and nothing is scanned (the index is not even created), also beside a readable root.
            f"print(main(['scan', {str(locked / 'inner.txt')!r}, '--index', {str(idx_dir / 'j.db')!r}, '-q', '--jobs', '1']))\n"
            f"print(main(['scan', {str(locked)!r}, '--index', {str(idx_dir / 'k.db')!r}, '-q', '--jobs', '1']))\n"
            f"print(main(['scan', {str(locked)!r}, {str(root / 'ok.txt')!r}, '--index', {str(idx_dir / 'k.db')!r}, '-q', '--jobs', '1']))\n"
        )
        env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(idx_dir))
        out = subprocess.run(
            [sys.executable, "-c", code], check=False, cwd="/", env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["2", "1", "1", "2", "2", "2", "2"], out.stderr
        assert out.stderr.count(f"cannot scan {locked}: Permission denied") == 2
        assert out.stderr.count(f"cannot scan {locked / 'inner.txt'}: Permission denied") == 1
        assert sorted(os.listdir(idx_dir)) == ["i.db", "i.db.lock"]  # nothing scanned, no index started
        with Index.open(idx, readonly=True) as ix:
            probs = dict(ix.problems())
            assert [os.path.basename(p) for p in ix.files().paths] == ["ok.txt"]
            assert ix.stats()["files_with_errors"] == 1
        assert "Permission denied" in probs[str(secret)]
        assert "folder cannot be read" in probs[str(locked)]
        assert os.stat(idx).st_uid == NOBODY and (os.stat(idx).st_mode & 0o777) == 0o600
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to drop to another user")
def test_index_in_a_folder_the_user_cannot_write(tmp_path: Path):
    """Read-only storage (as seen by the user): queries work, ``scan --rebuild`` exits 3 with a hint."""
    top = Path(tempfile.mkdtemp(prefix="simscan-ro-", dir="/tmp"))
    try:
        top.chmod(0o755)
        tree = top / "tree"
        tree.mkdir()
        (tree / "a.txt").write_bytes(b"some words for the index " * 40)
        (tree / "b.txt").write_bytes(b"some words for the index " * 40)
        ro = top / "ro"
        ro.mkdir()
        idx = ro / "i.db"
        from simscan.scanner import ScanRequest, run_scan

        run_scan(ScanRequest([tree], index_path=idx, jobs=1))
        idx.chmod(0o644)
        assert sorted(os.listdir(ro)) == ["i.db", "i.db.lock"]  # no -wal left once the scan closed
        code = (
            "import os, sys, io, contextlib\n"
            "from simscan.cli import main\n"
            "from simscan.index import Index\n"
            "import simscan.cli.similarity_cmds, simscan.cli.scan_cmds, simscan.scanner, json, time, locale, gettext\n"
            # Python itself lives under /root here: import what the commands need, then drop root.
            f"os.setgroups([]); os.setgid({NOBODY}); os.setuid({NOBODY})\n"
            f"with Index.open({str(idx)!r}, readonly=True) as ix: print(len(ix.files()))\n"
            f"print(main(['stats', '--index', {str(idx)!r}, '--format', 'json']) == 0)\n"
            f"print('rebuild', main(['scan', {str(tree)!r}, '--index', {str(idx)!r}, '--rebuild', '-q']))\n"
        )
        env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(top))
        out = subprocess.run(
            [sys.executable, "-c", code], check=False, cwd="/", env=env, capture_output=True, text=True, timeout=60
        )
        lines = out.stdout.splitlines()
        assert lines[0] == "2" and lines[-2:] == ["True", "rebuild 3"], (out.stdout, out.stderr)
        assert "Traceback" not in out.stderr and "must be writable" in out.stderr and str(idx) in out.stderr
        assert sorted(os.listdir(ro)) == ["i.db", "i.db.lock"]
        # While a writer has the index open its write-ahead log exists: an immutable read could be
        # inconsistent, so the user is told what is needed instead.
        with Index.open(idx) as writer:
            writer.write_files([])
            assert (ro / "i.db-wal").exists()
            (ro / "i.db-shm").chmod(0o600)  # the reader cannot share the writer's memory index either
            code = code.split("with Index.open")[0] + f"print('stats', main(['stats', '--index', {str(idx)!r}]))\n"
            out = subprocess.run(
                [sys.executable, "-c", code], check=False, cwd="/", env=env, capture_output=True, text=True, timeout=60
            )
        assert out.stdout.split() == ["stats", "3"], (out.stdout, out.stderr)
        assert "write-ahead log" in out.stderr and "Traceback" not in out.stderr, out.stderr
    finally:
        shutil.rmtree(top, ignore_errors=True)
