"""What ``--rebuild`` keeps of a damaged index: every file whose row and fingerprints pass their checks.

A rebuild moves the damaged file aside and starts a new index (``store.rebuild``); a new index would
have every file read again (a million files: minutes).  But the rows of ``files`` and the fingerprint
blobs carry checksums (:mod:`simscan.index.checks`), so whatever of them can still be read and passes
is exactly what a scan would store again: it is copied into the new index, and the next scan reads
only the files whose entries were lost (and those that changed, as always).  The inverted index is
made again from the fingerprints (by that scan); scan records and problem lines are not kept, so a file
with a problem line (a document compared by its bytes, a file read in part) is not kept either: the scan
reads it again and meets its problem again, which ``simscan problems`` then lists as before.

Reading a damaged database: a B-tree page SQLite cannot read makes every read that crosses it fail,
so the rows are read in id order a batch at a time, and past a failure the next readable id is
sought a doubling step further each time (the rows skipped this way, up to the step, are read again
by the scan).  Only an index of this schema (with checks) is salvaged; from an older one nothing is
kept (its rows could not be verified).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from simscan.index import checks as _checks
from simscan.index.schema import SCHEMA_VERSION
from simscan.model import ALGORITHM_VERSION

_BATCH = 4096
_U64 = (1 << 64) - 1
_POS = {c: k for k, c in enumerate(_checks.FILE_COLUMNS)}


def salvage(src: Path, index: Any) -> tuple[int, int]:
    """Copy the verified files of the damaged index ``src`` into the new, empty ``index``; returns
    (files kept, rows found that were not kept).  Never raises for damage: what cannot be read is
    not kept."""
    try:
        conn = sqlite3.connect(f"file:{quote(os.fsencode(src))}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0, 0
    with contextlib.closing(conn):
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                return 0, 0
        except (sqlite3.Error, UnicodeDecodeError):
            return 0, 0
        try:
            top = conn.execute("SELECT max(id) FROM files").fetchone()[0] or 0
        except (sqlite3.Error, UnicodeDecodeError):
            top = 1 << 62  # (the rightmost page cannot be read: the ids are sought until none is left)
        again = _with_problems(conn)
        kept = dropped = 0
        for rows in _readable_rows(conn, top):
            records, bad = _verified(conn, rows)
            dropped += bad
            records = [r for r in records if bytes(r.path) not in again]
            if records:
                index.write_files(records, defer_postings=True)
                kept += len(records)
        return kept, dropped


def _with_problems(conn: sqlite3.Connection) -> set[bytes]:
    """The paths with a problem line in the damaged index (empty when its lines cannot be read: then every
    verified file is kept, and their lines are lost)."""
    try:
        return {bytes(p) for (p,) in conn.execute("SELECT DISTINCT path FROM problems")}
    except (sqlite3.Error, UnicodeDecodeError, TypeError):
        return set()


def _readable_rows(conn: sqlite3.Connection, top: int) -> Any:
    """Batches of the rows of ``files`` (columns as :func:`checks.file_checks` takes them, then the
    stored check) that can be read, in id order."""
    q = f"SELECT {_checks.FILE_COLUMNS_SQL}, row_check FROM files WHERE id > ? ORDER BY id LIMIT {_BATCH}"
    last, step = -1, 1
    while last < top:
        rows: list[tuple[Any, ...]] = []
        failed = False
        try:
            cur = conn.execute(q, (last,))
            while batch := cur.fetchmany(64):  # (a failure keeps the rows read before it)
                rows += batch
        except (sqlite3.Error, UnicodeDecodeError):
            failed = True
        if rows:
            last = rows[-1][0]
            yield rows
        if failed:
            last += step  # past the page that cannot be read
            step *= 2
        elif not rows:
            return
        else:
            step = 1


def _verified(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> tuple[list[Any], int]:
    """FileRecords of the current rows whose row and fingerprints pass their checks; and how many of
    ``rows`` were left out for failing them (rows of files that could not be read, or fingerprinted by
    another version, are left out without counting: a scan reads them again anyway)."""
    from simscan.index.store import FileRecord

    got = _checks.file_checks(rows)
    ok = [r for r, k in zip(rows, got.tolist()) if r[-1] == k]
    bad = len(rows) - len(ok)
    current = [r for r in ok if r[_POS["error"]] is None and r[_POS["algorithm_version"]] == ALGORITHM_VERSION]
    blobs = _blobs(conn, [r[0] for r in current])
    out = []
    for r in current:
        blob = blobs.get(r[0])
        if blob is None or len(blob[1]) != 8 * r[_POS["fp_count"]] or len(blob[2]) != 11 * r[_POS["fp_count"]]:
            bad += 1
            continue
        n_roll, data, meta = blob
        out.append(FileRecord(
            path=r[1], device=r[_POS["device"]] & _U64, inode=r[_POS["inode"]] & _U64, size=r[_POS["size"]],
            mtime_ns=r[_POS["mtime_ns"]], is_text=bool(r[_POS["is_text"]]),
            encoding=None if r[_POS["encoding"]] is None else r[_POS["encoding"]].decode("utf-8", "replace"),
            checksum=r[_POS["checksum"]], partial=r[_POS["partial"]], content_hash=r[_POS["content_hash"]],
            simhash=r[_POS["simhash"]] & _U64, units=r[_POS["units"]], fps=np.frombuffer(data, "<u8").copy(),
            n_rolling=n_roll, ctime_ns=r[_POS["ctime_ns"]], meta=meta,
        ))  # fmt: skip
    return out, bad


def _blobs(conn: sqlite3.Connection, ids: list[int]) -> dict[int, tuple[int, bytes, bytes]]:
    """file id -> (rolling count, blob, meta: spans then places) of those of ``ids`` whose blobs read
    and pass their checks."""
    out: dict[int, tuple[int, bytes, bytes]] = {}
    q = ("SELECT file_id, n_rolling, CAST(fps AS BLOB), chk, CAST(spans AS BLOB), schk, CAST(places AS BLOB), pchk"
         " FROM fingerprints WHERE file_id IN ({})")
    for s in range(0, len(ids), 500):
        chunk = ids[s : s + 500]
        try:
            rows = conn.execute(q.format(",".join("?" * len(chunk))), chunk).fetchall()
        except (sqlite3.Error, UnicodeDecodeError):
            rows = []
            for fid in chunk:  # one at a time: keep those that can be read
                with contextlib.suppress(sqlite3.Error, UnicodeDecodeError):
                    rows += conn.execute(q.format("?"), (fid,)).fetchall()
        for fid, n_roll, blob, chk, spans, schk, places, pchk in rows:
            if (blob is not None and isinstance(n_roll, int) and chk == _checks.fingerprint_check(fid, n_roll, blob)
                    and spans is not None and schk == _checks.meta_check(fid, _checks.SPANS, spans)
                    and places is not None and pchk == _checks.meta_check(fid, _checks.PLACES, places)):
                out[fid] = (n_roll, blob, spans + places)
    return out
