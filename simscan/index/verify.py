"""Checking the index (a slice of it, or all of it) and repairing what can be repaired.

Every read verifies the rows it uses (:mod:`simscan.index.checks`); this module looks at rows that
no command may read for a long time, so that damage is found, and repaired, before it matters:

* :func:`check` verifies the rows of ``files`` (a slice of them, or all), the fingerprints in their
  id range (each current file's blob, as long as its row says; blobs of no file), every row of
  ``runs``, ``problems`` and ``meta`` with the digests of the first two, SQLite's ``integrity_check``
  of those small tables; and, checking the structure, SQLite's ``quick_check`` (or
  ``integrity_check``) of every page, the sum of all row checks against ``meta.files_digest`` and
  fingerprints of no file anywhere.
* :func:`repair` (a scan, holding the scan lock) forgets the files whose row or fingerprints are
  damaged (row, fingerprints, postings: the scan then reads them again like new files), drops
  damaged runs and problem lines, writes damaged settings anew (all derived), and rebuilds SQLite's
  indexes where rows were dropped, and all of them after a structure check (``REINDEX``: damage
  inside an index is invisible to ``quick_check``).  Damage to the pages' structure cannot be
  repaired in place (SQLite cannot even free such pages): that is :class:`IndexCorrupt`, and
  ``--rebuild`` (:mod:`simscan.index.salvage`).

What a scan checks, and how often (``run_scan`` calls :func:`check_for_scan` before it walks): the
next 1/:data:`SLICES` of the files by id, where the last scan stopped, so every row and blob is
verified once every :data:`SLICES` scans; the slice that completes the round checks the structure
too; after a command found damage (``meta.check_due``) all of it.  Costs on a 1,000,000-file index:
ARCHITECTURE.md (Index).
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

#: The settings an index of schema 7 holds, written anew by :func:`repair` when their rows are damaged.
_SETTINGS = ("generation", "posting_shift", "files_digest", "schema_version", "runs_digest", "problems_digest")
#: A scan checks 1/SLICES of the files (see the module docstring for the costs).
SLICES = 64


@dataclass
class CheckReport:
    """What :func:`check` found.  ``damaged``: file id -> (path as stored, why) of the files whose row
    or fingerprints fail their checks."""

    full: bool
    #: Whether the pages' structure was checked (then SQLite's indexes are rebuilt by :func:`repair`).
    structure_checked: bool = False
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


def check(index: Any, *, start: int = 0, limit: int | None = None, structure: bool = False,
          integrity: bool = False) -> CheckReport:
    """Verify ``limit`` files (all: None) from id ``start`` on, their fingerprints, and the small
    tables; with ``structure`` also SQLite's ``quick_check`` of every page (``integrity``: the slower
    ``integrity_check``, which also compares SQLite's indexes with their tables), the sum of all the
    files' checks against ``meta.files_digest`` and fingerprints of no file.  ``full`` in the report:
    everything was checked.  Read-only: works on any open :class:`Index` of schema 7 on."""
    c = index.connection
    rep = CheckReport(full=structure and start == 0 and limit is None, structure_checked=structure)
    began = not c.in_transaction
    if began:
        c.execute("BEGIN")  # one snapshot for the digest and the rows
    try:
        if structure:
            pragma = "integrity_check" if integrity else "quick_check"
            msgs: list[str] = []
            try:
                # (a message can hold several lines: "*** in database main ***\nTree 5 page 5: ...")
                msgs += [line for r in c.execute(f"PRAGMA {pragma}") for line in str(r[0]).splitlines() if line]
            except sqlite3.DatabaseError as e:  # (it may stop at a page it cannot read at all)
                msgs.append(str(e))
            if msgs != ["ok"]:
                rep.structure = [f"SQLite's {pragma}: {m}" for m in msgs[:8]]
                return rep  # rows cannot be trusted to read: the structure itself is damaged
            cur = c.execute("SELECT ifnull(row_check, 0) FROM files")
            total = 0
            while batch := cur.fetchmany(65536):
                total = _checks.add_digest(total, [r[0] for r in batch])
            try:
                rep.lost_rows = total != int(meta_get(c, "files_digest") or 0)
            except Mismatch:
                pass  # (reported below with the other settings)
            rep.orphans = [r[0] for r in c.execute(
                "SELECT file_id FROM fingerprints WHERE NOT EXISTS (SELECT 1 FROM files WHERE id = file_id)")]
        _check_rows(c, start, limit, rep)
        rep.lost_history = [t for t in _checks.DIGESTED if not _checks.table_digest_ok(c, t)]
        if not integrity:
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


def _check_rows(c: Any, start: int, limit: int | None, rep: CheckReport) -> None:
    """Verify ``limit`` rows of files from id ``start`` on (all: None) and the fingerprints in their id
    range (each current file's blob there, as long as its row says; blobs of no file are orphans)."""
    from simscan.index.store import _verify_blobs, _verify_meta

    q = (f"SELECT {_checks.FILE_COLUMNS_SQL}, ifnull(row_check, 0), error IS NULL AND algorithm_version = ?"
         " FROM files WHERE id >= ? ORDER BY id" + ("" if limit is None else " LIMIT ?"))
    cur = c.execute(q, (ALGORITHM_VERSION, start) if limit is None else (ALGORITHM_VERSION, start, limit))
    ids: list[np.ndarray] = []
    counts: list[np.ndarray] = []  # fp_count of the current files, -1 for the others
    fp = _checks.FILE_COLUMNS.index("fp_count")
    while batch := cur.fetchmany(16384):
        stored = np.fromiter((r[-2] for r in batch), np.int64, len(batch))
        got = _checks.file_checks(batch)
        for k in np.flatnonzero(stored != got).tolist():
            rep.damaged[batch[k][0]] = (batch[k][1] if isinstance(batch[k][1], bytes) else b"", ROW_FAILS)
        ids.append(np.fromiter((r[0] for r in batch), np.int64, len(batch)))
        counts.append(np.fromiter((r[fp] if r[-1] and isinstance(r[fp], int) else -1 for r in batch), np.int64,
                                  len(batch)))
    all_ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    fp_count = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    rep.files_checked = int(all_ids.size)
    rep.next_id = 0 if limit is None or all_ids.size < limit else int(all_ids[-1]) + 1
    if not all_ids.size:
        return
    has_blob = np.zeros(all_ids.size, bool)
    bad: list[int] = []
    cur = c.execute("SELECT file_id, n_rolling, CAST(fps AS BLOB), chk, CAST(spans AS BLOB), schk, CAST(places AS BLOB),"
                    " pchk FROM fingerprints WHERE file_id BETWEEN ? AND ? ORDER BY file_id", (start, int(all_ids[-1])))
    while batch := cur.fetchmany(4096):
        fids = np.fromiter((r[0] for r in batch), np.int64, len(batch))
        pos = np.minimum(np.searchsorted(all_ids, fids), all_ids.size - 1)
        known = all_ids[pos] == fids
        has_blob[pos[known]] = True
        mine = []
        for r, k, p in zip(batch, known.tolist(), pos.tolist()):
            if not k:
                if r[0] not in rep.orphans:
                    rep.orphans.append(r[0])
            elif fp_count[p] >= 0 and (r[2] is None or len(r[2]) != 8 * fp_count[p] or r[4] is None or r[6] is None):
                bad.append(r[0])  # (a current file's fingerprints come with their spans and places)
            else:
                mine.append(r)
        try:
            _verify_blobs([r[:4] for r in mine])
        except Mismatch as e:
            bad += e.file_ids
        # Spans and places (schema 8; rows of an older algorithm version have none).
        for part, col in ((_checks.SPANS, 4), (_checks.PLACES, 6)):
            try:
                _verify_meta([(r[0], r[col], r[col + 1], len(r[2]) // 8) for r in mine if r[4] is not None], part)
            except Mismatch as e:
                bad += [f for f in e.file_ids if f not in bad]
    bad += all_ids[(fp_count >= 0) & ~has_blob].tolist()  # current files without their blob
    for fid in bad:
        if fid not in rep.damaged:
            row = c.execute("SELECT path FROM files WHERE id = ?", (fid,)).fetchone()
            rep.damaged[fid] = (row[0] if row and isinstance(row[0], bytes) else b"", BLOB_FAILS)


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
        if rep.structure_checked or rep.meta or "meta" in rep.reindex:
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
        if rep.structure_checked:
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
            for table in _checks.DIGESTED:
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
    index._check_posting_shift()  # (and when the rule's second setting, ``posting_rule``, was dropped)
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
    """The check a scan runs before it walks, and its repair: the next 1/:data:`SLICES` of the files,
    with the pages' structure when that completes a round; all of the index when a command found damage
    since the last scan.  Returns the report and the files forgotten."""
    c = index.connection
    try:
        due = meta_get(c, "check_due") is not None
    except Mismatch:
        due = True
    try:
        start = int(meta_get(c, "check_next") or 0)
    except (Mismatch, ValueError):
        start = 0
    if due:
        rep = check(index, structure=True)
    else:
        size = max(1, -(-c.execute("SELECT count(*) FROM files").fetchone()[0] // SLICES))
        last = c.execute("SELECT count(*) FROM files WHERE id >= ?", (start,)).fetchone()[0] <= size
        rep = check(index, start=start, limit=size, structure=last)  # the pages too, once a round
    gone = repair(index, rep)
    with index.atomic():
        c.execute("DELETE FROM meta WHERE key = 'check_due'")
        meta_set(c, "check_next", rep.next_id)
    return rep, gone
