"""Crash safety: ``kill -9`` in the middle of a scan, and Ctrl-C in the CLI."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simscan import scanner
from simscan.cli import main
from simscan.index import Index
from simscan.scanner import ScanRequest, run_scan
from tests.helpers_tree import make_tree

REPO = Path(__file__).resolve().parents[1]

_SLOW_SCAN = """
import sys
from pathlib import Path
import simscan.scanner as s
s.COMMIT_FILES = 40          # many small commits, so the kill lands between and inside them
s.COMMIT_SECONDS = 0.02
s.BATCH_FILES = {batch}
import time
_flush = s._Writer.flush
def _slow_flush(self):       # >= 20 ms per commit: the scan lasts long enough to be interrupted,
    _flush(self)             # however fast fingerprinting becomes
    time.sleep(0.02)
s._Writer.flush = _slow_flush
from simscan.scanner import ScanRequest, run_scan
{call}
"""


def _wait_for_rows(idx: Path, proc: subprocess.Popen, at_least: int, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the scan finished before it could be interrupted"
        if idx.exists():
            try:
                with Index.open(idx, readonly=True) as ro:
                    n = len(ro.files())
                if n >= at_least:
                    return n
            except Exception:  # noqa: BLE001, S110 - not created or migrated yet: keep polling
                pass
        time.sleep(0.01)
    raise AssertionError("no commit seen")


def _snapshot(idx: Path) -> dict[bytes, tuple]:
    """Everything stored per path (ids aside): the row, the fingerprints and the posted ones."""
    with Index.open(idx, readonly=True) as ix:
        c = ix.connection
        rows = c.execute(
            "SELECT id, path, device, inode, size, mtime_ns, is_text, encoding, checksum, partial, content_hash,"
            " simhash, fp_count, units, algorithm_version, error FROM files"
        ).fetchall()
        fps = dict(c.execute("SELECT file_id, fps FROM fingerprints").fetchall())
        post: dict[int, list[int]] = {}
        for fp, fid in c.execute("SELECT fp, file_id FROM postings ORDER BY fp"):
            post.setdefault(fid, []).append(fp)
    return {r[1]: (r[2:], fps.get(r[0]), tuple(post.get(r[0], ()))) for r in rows}


@pytest.mark.slow
def test_kill_9_mid_scan_then_rescan_equals_fresh_scan(tmp_path: Path, monkeypatch, capsys):
    # Batch independence has its own test (test_scan.py); this one is about crashes.
    monkeypatch.setattr(scanner, "BATCH_FILES", 1)
    root = tmp_path / "tree"
    make_tree(root, 2000, per_dir=100, binary_every=11)
    idx = tmp_path / "killed.db"
    call = f"run_scan(ScanRequest([Path({str(root)!r})], index_path=Path({str(idx)!r}), jobs=2))"
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_SCAN.format(call=call, batch=1)], cwd=REPO, start_new_session=True
    )
    try:
        n = _wait_for_rows(idx, proc, 200)
        helpers = _descendants(proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # the scanner alone: nothing of it can run
        proc.wait(10)
    assert 200 <= n < 2000
    assert not helpers  # reading runs on threads: a scan starts no process that could be left behind
    with sqlite3.connect(idx) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # `simscan stats` does not call the dead scan running (no process holds the index's lock).
    assert main(["stats", "--index", str(idx)]) == 0
    assert "killed before it finished" in capsys.readouterr().out
    assert main(["stats", "--index", str(idx), "--format", "json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["last_scan"]["status"] == "killed" and st["scan_running"] is False
    r = run_scan(ScanRequest([root], index_path=idx, jobs=1))
    assert r.files_seen == 2000 and r.files_read + r.files_unchanged == 2000 and r.files_unchanged >= n
    fresh = tmp_path / "fresh.db"
    run_scan(ScanRequest([root], index_path=fresh, jobs=1))
    a, b = _snapshot(idx), _snapshot(fresh)
    assert a.keys() == b.keys() and len(a) == 2000
    for path in a:
        assert a[path] == b[path], path
    with Index.open(idx, readonly=True) as ix:
        statuses = [run["status"] for run in ix.runs(5)]
    assert statuses == ["done", "killed"]


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (the scan's fork server and its workers), from /proc."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_in_the_cli_exits_130_and_keeps_work(tmp_path: Path, sig: int, code: int, word: str):
    # SIGTERM (a logout, `timeout`) stops a scan as Ctrl-C does (earlier versions' worker processes were
    # once left waiting for ever; reading now runs on threads of the scan's own process).
    root = tmp_path / "tree"
    make_tree(root, 2500, per_dir=100)
    idx = tmp_path / "i.db"
    call = (
        f"from simscan.cli import main; sys.exit(main(['scan', {str(root)!r}, '--index', {str(idx)!r}, '--jobs', '2']))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_SCAN.format(call=call, batch=20)], cwd=REPO, stderr=subprocess.PIPE, text=True
    )
    try:
        n = _wait_for_rows(idx, proc, 100)
        helpers = _descendants(proc.pid)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert word in err and "Traceback" not in err
    assert not helpers  # no process of the scan's survives it (reading runs on threads)
    with sqlite3.connect(idx) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        kept = c.execute("SELECT count(*) FROM files").fetchone()[0]
        status = c.execute("SELECT status FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert kept >= n and status == "interrupted"
    r = run_scan(ScanRequest([root], index_path=idx, jobs=1))
    assert r.files_unchanged == kept and r.files_read == 2500 - kept
    with Index.open(idx, readonly=True) as ix:
        assert len(ix.files()) == 2500
