"""Checking a whole index (or a slice of it) and repairing what can be repaired.

Every read verifies the rows it uses (:mod:`simscan.index.checks`); this module looks at rows that
no command may read for a long time, so that damage is found, and repaired, before it matters:

* :func:`check` verifies the rows of ``files`` (a slice of them, or all), the fingerprint blob of
  each current file among them, every row of ``runs``, ``problems`` and ``meta``, and, for a full
  check, the sum of the row checks against ``meta.files_digest``, fingerprints of no file, and
  SQLite's own ``PRAGMA quick_check`` (or ``integrity_check``) of the pages' structure.
* :func:`repair` (a scan, holding the scan lock) forgets the files whose row or fingerprints are
  damaged (row, fingerprints, postings: the scan then reads them again like new files), drops
  damaged runs and problem lines, and rewrites damaged settings, all of which is derived; then
  rebuilds SQLite's indexes over ``files`` after a full check (``REINDEX``: damage inside them is
  invisible to ``quick_check``).  Damage to the pages' structure cannot be repaired in place (SQLite
  cannot even free such pages): that is :class:`IndexCorrupt`, and ``--rebuild``.

What a scan checks, and how often (``run_scan`` calls :func:`check_for_scan`): every scan checks
1/:data:`SLICES` of the files in turn (the next slice of ids, where the last scan stopped), so every
row and blob is verified once every :data:`SLICES` scans; a full check runs instead when a command
found damage since (``meta.check_due``), and every :data:`FULL_EVERY` scans.  Costs measured on a
1,000,000-file index (2-core VM, warm page cache): see ARCHITECTURE.md (Index).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simscan.index import checks as _checks
from simscan.index import results as _results
from simscan.index.checks import Mismatch, meta_get, meta_set
from simscan.index.errors import corrupt
from simscan.model import ALGORITHM_VERSION

#: The settings an index of schema 6 holds, written anew by :func:`repair` when their rows are damaged.
_SETTINGS = ("generation", "posting_shift", "files_digest", "schema_version", "runs_digest", "problems_digest")
#: A scan checks 1/SLICES of the files ...
SLICES = 16
#: ... and every FULL_EVERY-th scan all of the index (see the module docstring).
FULL_EVERY = 64


@dataclass
class CheckReport:
    """What :func:`check` found.  ``damaged``: file id -> (path as stored, why) of the files whose row
    or fingerprints fail their checks."""

    full: bool
    files_checked: int = 0
    #: Where the next slice starts (ids); 0 after the last slice.
    next_id: int = 0
    damaged: dict[int, tuple[bytes, str]] = field(default_factory=dict)
    orphans: list[int] = field(default_factory=list)
    lost_rows: bool = False
    #: Small tables whose rows are not all there (their digest differs).
    lost_history: list[str] = field(default_factory=list)
    #: Tables whose SQLite indexes disagree with them (rebuilt by :func:`repair`).
    reindex: list[str] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    problems: list[int] = field(default_factory=list)
    #: rowid -> key (as far as it reads) of the settings that fail their checks.
    meta: dict[int, str] = field(default_factory=dict)
    structure: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.damaged or self.orphans or self.lost_rows or self.runs or self.problems or self.meta
                    or self.structure or self.lost_history or self.reindex)

    def findings(self) -> list[str]:
        """One line per kind of damage found, for a person."""
        out = list(self.structure)
        rows = sum(1 for _, why in self.damaged.values() if why == ROW_FAILS)
        blobs = len(self.damaged) - rows
        if rows:
            out.append(f"the entries of {rows:,} file{'' if rows == 1 else 's'} fail their checksums")
        if blobs:
            out.append(f"the fingerprints of {blobs:,} file{'' if blobs == 1 else 's'} fail their checksums")
        if self.lost_rows:
            out.append("the files table does not hold the rows it should (some were lost or added)")
        if self.orphans:
            out.append(f"{len(self.orphans):,} fingerprint sets belong to no file")
        if self.reindex:
            out.append(f"SQLite's indexes over {', '.join(self.reindex)} disagree with their tables")
        for table in self.lost_history:
            out.append(f"the {'records of past scans' if table == 'runs' else 'problem lines'} are not all there")
        if self.runs:
            out.append(f"{len(self.runs):,} records of past scans fail their checksums")
        if self.problems:
            out.append(f"{len(self.problems):,} problem lines fail their checksums")
        if self.meta:
            out.append(f"the index's settings {', '.join(map(repr, sorted(self.meta.values())))} fail their checksums")
        return out


ROW_FAILS = "its entry in the index was damaged (it failed its checksum); dropped, so that it is read again"
BLOB_FAILS = "its fingerprints in the index were damaged (they failed their checksum); dropped, so that it is read again"


def check(index: Any, *, start: int = 0, limit: int | None = None, full: bool = False,
          integrity: bool = False) -> CheckReport:
    """Verify the files with ids from ``start`` on (``limit`` of them; all with ``full``), with their
    fingerprints, and the small tables.  ``full`` adds the digest, orphan blobs and SQLite's
    ``quick_check`` (``integrity``: the slower ``integrity_check``, which also compares SQLite's
    indexes with their tables).  Read-only: works on any open :class:`Index` of schema 6 on."""
    c = index.connection
    rep = CheckReport(full=full)
    began = not c.in_transaction
    if began:
        c.execute("BEGIN")  # one snapshot for the digest and the rows
    try:
        if full:
            pragma = "integrity_check" if integrity else "quick_check"
            msgs: list[str] = []
            try:
                msgs += [r[0] for r in c.execute(f"PRAGMA {pragma}")]
            except sqlite3.DatabaseError as e:  # (it may stop at a page it cannot read at all)
                msgs.append(str(e))
            if msgs != ["ok"]:
                rep.structure = [f"SQLite's {pragma}: {m}" for m in msgs[:5]]
                return rep  # rows cannot be trusted to read: the structure itself is damaged
        lo = 0 if full else start
        q = (f"SELECT id, path, ifnull(row_check, 0), {_checks.FILE_ROW_SQL} FROM files WHERE id >= ? ORDER BY id"
             + ("" if full or limit is None else " LIMIT ?"))
        cur = c.execute(q, (lo,) if full or limit is None else (lo, limit))
        total = 0
        last = lo - 1
        while batch := cur.fetchmany(16384):
            stored = np.fromiter((r[2] for r in batch), np.int64, len(batch))
            got = _checks.stored_row_checks([r[3] for r in batch])
            for k in np.flatnonzero(stored != got).tolist():
                rep.damaged[batch[k][0]] = (bytes(batch[k][1]) if isinstance(batch[k][1], bytes) else b"", ROW_FAILS)
            total = _checks.add_digest(total, stored)
            rep.files_checked += len(batch)
            last = batch[-1][0]
        rep.next_id = 0 if full or limit is None or rep.files_checked < limit else last + 1
        _check_blobs(index, lo, last, rep)
        if full:
            try:
                rep.lost_rows = total != int(meta_get(c, "files_digest") or 0)
            except Mismatch:
                pass  # (reported below with the other settings)
            rep.orphans = [r[0] for r in c.execute(
                "SELECT file_id FROM fingerprints WHERE NOT EXISTS (SELECT 1 FROM files WHERE id = file_id)")]
        rep.lost_history = [t for t in ("runs", "problems") if not _checks.table_digest_ok(c, t)]
        if not full:
            # SQLite's indexes over the small tables, every time (they are small): damage in them misleads
            # a lookup by key without any error (a setting written twice, a problem line left out).
            for table in ("meta", "runs", "problems"):
                try:
                    ok = [r[0] for r in c.execute(f"PRAGMA integrity_check({table})")] == ["ok"]
                except sqlite3.DatabaseError:
                    ok = False
                if not ok:
                    rep.reindex.append(table)
        rep.runs = _checks.bad_rows(c, "runs")
        rep.problems = _checks.bad_rows(c, "problems")
        rep.meta = {rowid: (k or b"").decode("utf-8", "replace") for rowid, k, v, chk in c.execute(
            "SELECT rowid, CAST(key AS BLOB), CAST(value AS BLOB), chk FROM meta") if chk != _checks.row_check("meta", k, v)}
        return rep
    finally:
        if began and c.in_transaction:
            c.execute("ROLLBACK")


def _check_blobs(index: Any, lo: int, hi: int, rep: CheckReport) -> None:
    """Verify the fingerprints of the current files with ids in [lo, hi] into ``rep``."""
    from simscan.index.store import _CHECKED_FINGERPRINT_ROWS, _verify_blobs

    if hi < lo:
        return
    cur = index.connection.execute(
        f"{_CHECKED_FINGERPRINT_ROWS} AND files.id BETWEEN ? AND ? ORDER BY files.id", (ALGORITHM_VERSION, lo, hi)
    )
    while batch := cur.fetchmany(4096):
        try:
            _verify_blobs(batch)
        except Mismatch as e:
            for fid in e.file_ids:
                if fid not in rep.damaged:
                    row = index.connection.execute("SELECT path FROM files WHERE id = ?", (fid,)).fetchone()
                    rep.damaged[fid] = (bytes(row[0]) if row and isinstance(row[0], bytes) else b"", BLOB_FAILS)


def repair(index: Any, rep: CheckReport) -> list[tuple[bytes, str]]:
    """Repair what ``rep`` found (in one transaction; the caller holds the scan lock): returns the
    (path, why) of the files forgotten so that they are read again.  Raises :class:`IndexCorrupt`
    when the pages' structure is damaged (only ``--rebuild`` helps then)."""
    if rep.structure:
        raise corrupt(index.path, "; ".join(rep.structure)[:400])
    c = index.connection
    gone: list[tuple[bytes, str]] = []
    with index.atomic():
        # The settings first: every lookup below goes through the index on their keys.
        c.executemany("DELETE FROM meta WHERE rowid = ?", [(r,) for r in rep.meta])
        if rep.full or rep.meta or "meta" in rep.reindex:
            _reindex(index, "meta")
        if rep.damaged:
            ids = sorted(rep.damaged)
            index._forget_fingerprints(ids)
            for s in range(0, len(ids), 900):
                chunk = ids[s : s + 900]
                c.execute(f"DELETE FROM files WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            gone = [rep.damaged[i] for i in ids]
        if rep.orphans:
            index._forget_fingerprints(rep.orphans)
        c.executemany("DELETE FROM runs WHERE rowid = ?", [(r,) for r in rep.runs])
        c.executemany("DELETE FROM problems WHERE rowid = ?", [(r,) for r in rep.problems])
        # SQLite's indexes are derived from their tables: rebuilt where rows were dropped (an entry of a
        # damaged key would stay behind), and all of them after a full check (damage inside an index is
        # invisible to quick_check and to every read that does not use that entry).
        if rep.full:
            _reindex(index, "")
        else:
            for table, dropped in (("files", rep.damaged), ("runs", rep.runs), ("problems", rep.problems)):
                if dropped or table in rep.reindex:
                    _reindex(index, table)
        # Every setting that is missing now (its row was damaged: its key cannot be trusted either) or
        # that sums rows just dropped is written anew; all of them are derived.
        missing = set()
        for key in _SETTINGS:
            try:
                if meta_get(c, key) is None:
                    missing.add(key)
            except Mismatch:
                missing.add(key)
        if missing & {"files_digest"} or rep.damaged or rep.lost_rows:
            # The rows left were verified (a full check), or are by the next full one: their sum.
            total = 0
            cur = c.execute("SELECT ifnull(row_check, 0) FROM files")
            while batch := cur.fetchmany(65536):
                total = _checks.add_digest(total, [r[0] for r in batch])
            meta_set(c, "files_digest", total)
        if rep.runs or rep.problems or rep.lost_history or missing & {"runs_digest", "problems_digest"}:
            for table in ("runs", "problems"):
                _checks.reseal_table_digest(c, table)
        if "schema_version" in missing:
            meta_set(c, "schema_version", index.version)
        if "generation" in missing:
            # A value no cache row holds (later than any count of changes), the cache emptied.
            meta_set(c, "generation", int(time.time() * 1000))
            c.execute("DELETE FROM results")
        elif rep.damaged or rep.orphans:
            _results.bump(c)
    if "posting_shift" in missing:
        # The inverted index was made at a sample rate no longer known: made again from the fingerprints.
        with index.atomic():
            c.execute("DELETE FROM postings")
            c.execute("INSERT OR IGNORE INTO unposted(file_id) SELECT file_id FROM fingerprints")
        index._check_posting_shift()
    return gone


def _reindex(index: Any, table: str) -> None:
    """``REINDEX`` (``table``, or every index).  Keys that only a damaged index let in twice are
    dropped first, so that the unique indexes can be built again: settings written twice (they are
    derived, and written anew), and rows of files sharing a path (forgotten: read again)."""
    c = index.connection
    try:
        c.execute(f"REINDEX {table}")
    except sqlite3.IntegrityError:
        c.execute("DELETE FROM meta WHERE key IN (SELECT key FROM meta GROUP BY key HAVING count(*) > 1)")
        twins = [r[0] for r in c.execute(
            "SELECT id FROM files WHERE path IN (SELECT path FROM files GROUP BY path HAVING count(*) > 1)")]
        index._forget_fingerprints(twins)
        c.executemany("DELETE FROM files WHERE id = ?", [(i,) for i in twins])
        c.execute(f"REINDEX {table}")


def check_for_scan(index: Any) -> tuple[CheckReport, list[tuple[bytes, str]]]:
    """The check a scan runs before it walks, and its repair: the next slice of the files, or all
    of them when due (see the module docstring).  Returns the report and the files forgotten."""
    c = index.connection
    try:
        due = meta_get(c, "check_due") is not None
    except Mismatch:
        due = True
    try:
        start = int(meta_get(c, "check_next") or 0)
    except (Mismatch, ValueError):
        start = 0
    try:
        since = int(meta_get(c, "check_scans") or 0)  # scans since the last full check
    except (Mismatch, ValueError):
        since = FULL_EVERY
    full = due or since + 1 >= FULL_EVERY
    n = c.execute("SELECT count(*) FROM files").fetchone()[0]
    rep = check(index, start=start, limit=max(1, -(-n // SLICES)), full=full)
    gone = repair(index, rep)
    with index.atomic():
        c.execute("DELETE FROM meta WHERE key = 'check_due'")
        if not full:
            meta_set(c, "check_next", rep.next_id)
        meta_set(c, "check_scans", 0 if full else since + 1)
    return rep, gone
