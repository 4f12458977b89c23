"""Checksums of what the index stores, so that damage is found where it matters.

SQLite notices damage to the *structure* of its pages (a read of such a page fails with
"malformed"), but not to the *values* in them: random bytes in a fingerprint blob or in a row of
``files`` are read back as other values, without an error.  So every row that results are
computed from carries a checksum of its own values, computed when it is written and verified
whenever it is read:

``files.row_check``
    a 64-bit hash of every column of the row (:data:`FILE_COLUMNS`, NULLs included),
    computed for a batch of rows a column at a time (:func:`file_checks`).  ``meta.files_digest``
    is the sum (mod 2^64) of all rows' checks, so a row that vanishes or appears (a damaged page's
    cell count) is found by a full read of the table too.
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
from operator import itemgetter
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


#: The columns of ``files`` that ``row_check`` covers, in the order :func:`file_checks` takes them (also
#: the column order of ``Index.write_files``'s INSERT).  A column added to ``files`` must be added here,
#: with a migration that recomputes the checks.
FILE_COLUMNS = (
    "id", "path", "device", "inode", "size", "mtime_ns", "is_text", "encoding", "checksum", "partial",
    "content_hash", "simhash", "fp_count", "units", "algorithm_version", "error", "run_id", "ctime_ns",
    "format", "extractor", "extractor_version",
)  # fmt: skip
#: Which of them hold bytes or text (hashed as their bytes, text as UTF-8); the others hold integers.
_TEXT = frozenset({"encoding", "error", "format", "extractor", "extractor_version"})
_BYTES = frozenset({"path", "checksum", "content_hash"}) | _TEXT
#: ``FILE_COLUMNS`` as a SELECT list, text as bytes (a damaged text that is not UTF-8 still reads).
FILE_COLUMNS_SQL = ", ".join(f"CAST({c} AS BLOB)" if c in _TEXT else c for c in FILE_COLUMNS)

_P = np.uint64(0x100000001B3)
_SEED = np.uint64(0x5349_4D53_4341_4E31)  # "SIMSCAN1"
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
#: The check given to a row whose values cannot be hashed (the wrong types: a damaged row); a stored
#: check equals it with probability 2^-64.
UNHASHABLE = 0x7FFF_FFFF_FFFF_FFFF


def file_checks(rows: Sequence[Sequence[Any]]) -> np.ndarray:
    """``files.row_check`` (signed int64) of each row, given as tuples whose first values are the row's
    :data:`FILE_COLUMNS` (ints, bytes or str, None for NULL; more values after them are ignored).

    Computed a column at a time, so a batch costs a few numpy passes and one XXH3 call per bytes value
    (~0.6 us a row): with ``mask`` the NULL columns (bit k: column k) and each column's value (an
    integer as its 64 bits, NULL as 0; bytes by their XXH3-64, NULL as empty), ``acc = acc * P + v``
    over (mask, the columns in order), then MurmurHash3's finaliser.  A row whose values have the
    wrong types (a text where a number belongs: damage) gets :data:`UNHASHABLE`."""
    n = len(rows)
    try:
        return _file_checks(rows, n)
    except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
        out = np.empty(n, np.int64)
        for k, row in enumerate(rows):
            try:
                out[k] = _file_checks([row], 1)[0]
            except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
                out[k] = UNHASHABLE
        return out


def _file_checks(rows: Sequence[Sequence[Any]], n: int) -> np.ndarray:
    h = xxhash.xxh3_64_intdigest
    mask = np.zeros(n, np.uint64)
    acc = np.full(n, _SEED, np.uint64) * _P
    values: list[np.ndarray] = []
    for k, name in enumerate(FILE_COLUMNS):
        col: Any = list(map(itemgetter(k), rows))
        is_bytes = name in _BYTES
        if None in col:  # (error, run_id and ctime_ns of most rows; the content columns of a failed file)
            obj = np.array(col, dtype=object)
            nulls = obj == None
            mask |= nulls.astype(np.uint64) << np.uint64(k)
            if nulls.all():
                values.append(np.full(n, h(b"") if is_bytes else 0, np.uint64))
                continue
            obj[nulls] = b"" if is_bytes else 0
            col = obj
        if name in _TEXT:  # (str from the writer, bytes as read back)
            col = [v.encode() if v.__class__ is str else v for v in col]
        if is_bytes:
            values.append(np.fromiter(map(h, col), np.uint64, n))
        else:  # (text or bytes where a number belongs, damage, raises here; see file_checks)
            values.append(np.fromiter(col, np.int64, n).view(np.uint64))
    acc += mask
    for v in values:
        acc = acc * _P + v
    acc ^= acc >> _S33
    acc *= _M1
    acc ^= acc >> _S33
    acc *= _M2
    acc ^= acc >> _S33
    return acc.view(np.int64)


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


#: ``part`` of :func:`meta_check`: the spans blob, the places blob.
SPANS, PLACES = 1, 2


def meta_check(file_id: int, part: int, blob: Any) -> int:
    """``fingerprints.schk`` / ``pchk`` (schema 8) of a file's spans or places blob: XXH3-64 seeded
    with the file id and the part, signed (a blob moved to another row or column fails)."""
    seed = (int(file_id) * 0x9E3779B97F4A7C15 + 0x5350_414E_0000 + int(part)) & ((1 << 64) - 1)
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
    can be given checks once (schema 7) without blessing damage."""
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


#: The small tables whose rows are summed in ``meta.<table>_digest`` (the settings are each checked).
DIGESTED = ("runs", "problems")


def seal_rows(conn: Any, table: str, where: str = "", params: Sequence[Any] = ()) -> None:
    """Set ``chk`` of the rows of a small table (those matching ``where``) from their values as
    stored (so a value's storage class, e.g. an int kept in a REAL column, is what is hashed), and
    keep the table's digest (``meta.<table>_digest``; runs and problems) the sum of its rows' checks."""
    rows = conn.execute(f"SELECT rowid, ifnull(chk, 0), {_as_blobs(table)} FROM {table} {where}", params).fetchall()
    new = [row_check(table, *r[2:]) for r in rows]
    conn.executemany(f"UPDATE {table} SET chk = ? WHERE rowid = ?", zip(new, (r[0] for r in rows)))
    if table in DIGESTED:
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
    its check (``checked``: the index has checks, schema 7 on)."""
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

    from simscan.index.schema import CHECKED_VERSION

    try:
        conn = sqlite3.connect(f"file:{quote(os.fsencode(path))}?mode=rw", uri=True, isolation_level=None, timeout=1.0)
    except sqlite3.Error:
        return
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] < CHECKED_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        meta_set(conn, "check_due", 1)
        conn.execute("COMMIT")
    except sqlite3.Error:
        pass
    finally:
        conn.close()
