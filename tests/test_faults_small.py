"""Small things a user noticed (issue 21): one rule for ROOTs that cannot be scanned, and `stats` telling
a file skipped for changing while read from an unreadable one.  (An empty file as --index:
``test_cli_scan.test_an_empty_file_as_index_is_one_with_nothing_in_it_yet``; the leaked-semaphore
warning after ``kill -9``: ``test_faults_kill``.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

from simscan.index import FileRecord, Index
from simscan.index.store import CHANGED_WHILE_READ
from tests.fault_campaign import cli, make_family_tree, scan


def test_a_missing_root_beside_others_changes_nothing(tmp_path: Path):
    """A ROOT that is not there (an unmounted disk) or cannot be read is named, and nothing is scanned,
    even beside ROOTs that can be: the files indexed under it are not forgotten (exit 2, as for every
    wrong argument; a missing ROOT exited 2 and an unreadable one 1, after scanning the others)."""
    root = tmp_path / "tree"
    make_family_tree(root, n_bases=2)
    idx = tmp_path / "i.db"
    assert scan(root, idx)[0] == 0
    before = idx.read_bytes()
    os.rename(root / "copies", tmp_path / "unplugged")  # the disk it was on is gone
    code, _, err = cli(["scan", str(root / "originals"), str(root / "copies"), "--index", str(idx)])
    assert code == 2 and f"cannot scan {root / 'copies'}: no such file or folder" in err and "Nothing was scanned" in err
    assert idx.read_bytes() == before


def test_stats_tells_files_that_changed_while_read_from_unreadable_ones(tmp_path: Path):
    idx = tmp_path / "i.db"
    with Index.open(idx) as ix:
        ix.write_files([
            FileRecord(b"/a", 1, 1, 10, 1, error=f"{CHANGED_WHILE_READ} (tried twice); skipped this time"),
            FileRecord(b"/b", 1, 2, 10, 1, error="cannot be read: Permission denied"),
            FileRecord(b"/c", 1, 3, 10, 1, error=f"{CHANGED_WHILE_READ} (tried twice); skipped this time"),
        ])  # fmt: skip
    code, out, _ = cli(["stats", "--index", str(idx)])
    assert code == 0 and "1 unreadable, 2 changed while being read (the next scan reads them)" in out
    code, out, _ = cli(["stats", "--index", str(idx), "--format", "json"])
    st = json.loads(out)
    assert st["files_with_errors"] == 3 and st["files_changed_while_read"] == 2
