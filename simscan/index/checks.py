"""Checksums of what the index stores, so that damage is found where it matters.

SQLite notices damage to the *structure* of its pages (a read of such a page fails with
"malformed"), but not to the *values* in them: random bytes in a fingerprint blob or in a row of
``files`` are read back as other values, without an error.  So every row that results are
computed from carries a checksum of its own values, computed when it is written and verified
whenever it is read:

``files.row_check``
    XXH3-64 of every column of the row (:data:`FILE_COLUMNS`, NULLs included) in one canonical
    byte form that SQLite itself makes from the stored row (:data:`FILE_ROW_SQL`).  ``meta.files_digest`` is the sum (mod 2^64) of
    all rows' checks, so a row that vanishes or appears (a damaged page's cell count) is found
    by a full read of the table too.
``fingerprints.chk``
    XXH3-64 of the blob, seeded with the file id and the number of rolling values
    (:func:`fingerprint_check`): a blob moved to another row, or its split point damaged, no
    longer matches.  A read also checks that each current file has exactly one blob and that
    its length agrees with ``files.fp_count``.
``runs.chk``, ``problems.chk``, ``meta.chk``
    :func:`row_check` of the row's other values (small tables, one call per row).
``results`` rows
    carry their own digest (:mod:`simscan.index.results`).

The checks are generic: any blob or row added later gets one the same way.  What is *not*
checked row by row: ``postings`` (the inverted index: 8 bytes of check per 17-byte posting would
cost half as much again; it only proposes candidates, which are then scored on their checked
fingerprint sets, and its damage breaks the B-tree order that ``PRAGMA quick_check`` verifies) and
``unposted`` (ids of files waiting for the inverted index).

Why 64 bits: a damaged value passes its check with probability 2^-64.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xxhash

from simscan.fingerprint.checksum import to_signed64


class Mismatch(Exception):
    """Stored values fail their checks.  ``file_ids``: the files whose rows or fingerprints are
    damaged (empty when what is damaged belongs to no file: a run, a problem line, a setting)."""

    def __init__(self, what: str, file_ids: Sequence[int] = ()) -> None:
        super().__init__(what)
        self.what = what
        self.file_ids = sorted({int(i) for i in file_ids})

#: The columns of ``files`` that ``row_check`` covers, in the order rows are given to
#: :func:`file_row_check` (also the column order of ``Index.write_files``'s INSERT).  A column added to
#: ``files`` must be added here, with a migration that recomputes the checks.
FILE_COLUMNS = (
    "id", "path", "device", "inode", "size", "mtime_ns", "is_text", "encoding", "checksum", "partial",
    "content_hash", "simhash", "fp_count", "units", "algorithm_version", "error", "run_id", "ctime_ns",
)  # fmt: skip
#: Which of them hold bytes or text; the others hold integers.
_BYTES = ("path", "checksum", "content_hash", "encoding", "error")
_INTS = tuple(c for c in FILE_COLUMNS if c not in _BYTES)
_INT_POS = tuple(FILE_COLUMNS.index(c) for c in _INTS)
_BYTES_POS = tuple(FILE_COLUMNS.index(c) for c in _BYTES)

#: The bytes a row's check hashes, computed by SQLite from the stored row: each integer and then
#: each bytes value's length in bytes as decimal text followed by "|" (NULL: nothing, so a NULL and a
#: 0 differ; a REAL where an integer belongs shows as "5.0"), then the bytes values themselves (text
#: as its UTF-8 bytes).  :func:`file_row_bytes` makes the same bytes from the values being written.
#: Reading this expression costs ~1.4 us a row in SQLite; a check-only pass over 1,000,000 rows takes
#: ~1.7 s, against ~3.5 s for reading the columns and hashing them in numpy.
FILE_ROW_SQL = (
    "CAST(printf('" + "%s|" * (len(_INTS) + len(_BYTES)) + "', "
    + ", ".join((*_INTS, *(f"length(CAST({c} AS BLOB))" for c in _BYTES)))
    + ") || " + " || ".join(f"ifnull({c}, x'')" for c in _BYTES) + " AS BLOB)"
)


def file_row_bytes(row: Sequence[Any]) -> bytes:
    """The bytes :data:`FILE_ROW_SQL` gives for a row of ``files`` with these values (in
    :data:`FILE_COLUMNS` order; ints, bytes, str or None)."""
    raw = [None if (v := row[k]) is None else v.encode() if isinstance(v, str) else bytes(v) for k in _BYTES_POS]
    head = "".join(("" if (v := row[k]) is None else str(int(v))) + "|" for k in _INT_POS)
    head += "".join(("" if b is None else str(len(b))) + "|" for b in raw)
    return head.encode() + b"".join(b for b in raw if b is not None)


def file_row_check(row: Sequence[Any]) -> int:
    """``files.row_check`` of a row being written (values in :data:`FILE_COLUMNS` order), signed."""
    return to_signed64(xxhash.xxh3_64_intdigest(file_row_bytes(row)))


def stored_row_checks(raw: Sequence[bytes]) -> np.ndarray:
    """The checks (int64) of rows as :data:`FILE_ROW_SQL` read them, to compare with ``row_check``."""
    return np.fromiter(map(xxhash.xxh3_64_intdigest, raw), np.uint64, len(raw)).view(np.int64)


def digest(checks: np.ndarray | Sequence[int]) -> int:
    """The sum of ``checks`` mod 2^64, signed (what ``meta.files_digest`` holds)."""
    a = np.asarray(checks, np.int64)
    return to_signed64(int(a.view(np.uint64).sum(dtype=np.uint64))) if a.size else 0


def add_digest(total: int, plus: np.ndarray | Sequence[int] = (), minus: np.ndarray | Sequence[int] = ()) -> int:
    """``total`` + sum(``plus``) - sum(``minus``), mod 2^64, signed."""
    return to_signed64((total + digest(plus) - digest(minus)) & ((1 << 64) - 1))


def fingerprint_check(file_id: int, n_rolling: int, blob: Any) -> int:
    """``fingerprints.chk`` of a blob (bytes or a buffer): XXH3-64 seeded with the file id and the
    rolling count, signed."""
    seed = (int(file_id) * 0x9E3779B97F4A7C15 + int(n_rolling)) & ((1 << 64) - 1)
    return to_signed64(xxhash.xxh3_64_intdigest(blob, seed))


def _canon(v: Any) -> bytes | None:
    """A value as ``CAST(value AS BLOB)`` gives it (the form checks of small tables hash): text as
    its UTF-8 bytes, an integer as its decimal digits.  (REAL values are only ever hashed as SQLite
    reads them back, see :func:`seal_rows`.)"""
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, int):
        return str(v).encode()
    raise TypeError(f"a {type(v).__name__} is hashed as SQLite reads it back, not from Python")


def row_check(table: str, *values: Any) -> int:
    """The ``chk`` of a row of a small table (runs, problems, meta): XXH3-64 of the table's name and
    the row's values in the form ``CAST(value AS BLOB)`` reads them (so that a damaged text that is no
    longer UTF-8 reads, and fails its check), signed."""
    return to_signed64(xxhash.xxh3_64_intdigest(repr((table, *map(_canon, values))).encode()))


def blob_is_well_formed(blob: bytes, n_rolling: int, fp_count: int) -> bool:
    """Whether a blob stored before checksums existed has the byte layout (sorted distinct
    little-endian uint64, rolling values with the top bit clear first) and the count its file row
    says: random bytes in a blob break the strict order almost surely, so an older index's blobs
    can be given checks once (schema 6) without blessing damage."""
    if len(blob) != 8 * fp_count or not 0 <= n_rolling <= fp_count:
        return False
    v = np.frombuffer(blob, "<u8")
    if v.size > 1 and not bool(np.all(v[1:] > v[:-1])):
        return False
    top = v >> np.uint64(63)
    return int(np.count_nonzero(top == 0)) == n_rolling


#: The columns of the small tables whose rows carry ``chk`` (:func:`row_check` of these values, the
#: table's name first).  ``problems`` leaves out its id, which only orders the lines.
SMALL_TABLES: dict[str, tuple[str, ...]] = {
    "runs": (
        "id", "started_at", "finished_at", "status", "roots", "options", "files_seen", "files_read",
        "files_unchanged", "files_removed", "bytes_read", "problems", "elapsed_s",
    ),
    "problems": ("run_id", "path", "reason"),
    "meta": ("key", "value"),
}  # fmt: skip


def seal_rows(conn: Any, table: str, where: str = "", params: Sequence[Any] = ()) -> None:
    """Set ``chk`` of the rows of a small table (those matching ``where``) from their values as
    stored (so a value's storage class, e.g. an int kept in a REAL column, is what is hashed), and
    keep the table's digest (``meta.<table>_digest``) the sum of its rows' checks."""
    rows = conn.execute(f"SELECT rowid, ifnull(chk, 0), {_as_blobs(table)} FROM {table} {where}", params).fetchall()
    new = [row_check(table, *r[2:]) for r in rows]
    conn.executemany(f"UPDATE {table} SET chk = ? WHERE rowid = ?", zip(new, (r[0] for r in rows)))
    add_to_table_digest(conn, table, new, [r[1] for r in rows])


def delete_rows(conn: Any, table: str, where: str, params: Sequence[Any] = ()) -> None:
    """Delete rows of a small table, keeping its digest."""
    old = [r[0] for r in conn.execute(f"SELECT ifnull(chk, 0) FROM {table} {where}", params)]
    conn.execute(f"DELETE FROM {table} {where}", params)
    add_to_table_digest(conn, table, (), old)


def add_to_table_digest(conn: Any, table: str, plus: Sequence[int] = (), minus: Sequence[int] = ()) -> None:
    """``meta.<table>_digest`` += sum(plus) - sum(minus) (a damaged digest is left to the checks)."""
    if not (plus or minus):
        return
    try:
        total = int(meta_get(conn, f"{table}_digest") or 0)
    except (Mismatch, ValueError):
        return
    meta_set(conn, f"{table}_digest", add_digest(total, plus, minus))


def reseal_table_digest(conn: Any, table: str) -> None:
    """Set ``meta.<table>_digest`` to the sum of the checks the rows hold now."""
    meta_set(conn, f"{table}_digest", digest([r[0] for r in conn.execute(f"SELECT ifnull(chk, 0) FROM {table}")]))


def table_digest_ok(conn: Any, table: str) -> bool:
    """Whether the rows of a small table are all there: the sum of their checks is the table's digest (a
    row that vanished -- a damaged page's cell count -- or appeared changes it)."""
    try:
        want = int(meta_get(conn, f"{table}_digest") or 0)
    except (Mismatch, ValueError):
        return False
    return digest([r[0] for r in conn.execute(f"SELECT ifnull(chk, 0) FROM {table}")]) == want


def _as_blobs(table: str) -> str:
    return ", ".join(f"CAST({c} AS BLOB)" for c in SMALL_TABLES[table])


def bad_rows(conn: Any, table: str, where: str = "", params: Sequence[Any] = ()) -> list[int]:
    """Rowids of the rows of a small table (matching ``where``) whose ``chk`` fails."""
    cur = conn.execute(f"SELECT rowid, chk, {_as_blobs(table)} FROM {table} {where}", params)
    return [r[0] for r in cur if r[1] != row_check(table, *r[2:])]


def meta_get(conn: Any, key: str, checked: bool = True) -> str | None:
    """The ``meta`` value of ``key`` (None when absent); raises :class:`Mismatch` when the row fails
    its check (``checked``: the index has checks, schema 6 on)."""
    if not checked:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]
    row = conn.execute("SELECT CAST(value AS BLOB), chk FROM meta WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    if row[0] is None or row[1] != row_check("meta", key, row[0]):
        raise Mismatch(f"the setting {key!r} of the index fails its checksum")
    return row[0].decode()


def meta_set(conn: Any, key: str, value: Any, checked: bool = True) -> None:
    """Set a ``meta`` value (as text), with its check when the index has checks."""
    text = str(value)
    if checked:
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value, chk) VALUES (?, ?, ?)", (key, text, row_check("meta", key, text))
        )
    else:
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, text))


def note_damage(path: Any) -> None:
    """Record in the index at ``path`` that a command found damage, so that the next scan checks all
    of it (``meta.check_due``).  Best-effort, through a short connection of its own: nothing happens
    on a read-only, locked or badly damaged index."""
    import os
    import sqlite3
    from urllib.parse import quote

    try:
        conn = sqlite3.connect(f"file:{quote(os.fsencode(path))}?mode=rw", uri=True, isolation_level=None, timeout=1.0)
    except sqlite3.Error:
        return
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] < 6:
            return
        conn.execute("BEGIN IMMEDIATE")
        meta_set(conn, "check_due", 1)
        conn.execute("COMMIT")
    except sqlite3.Error:
        pass
    finally:
        conn.close()
