"""The index schema and its numbered migrations (``PRAGMA user_version``).

Policy: migration N brings a database at version N-1 to version N.  Each runs in ONE
transaction together with its ``user_version`` bump, so a crash leaves the database at N-1 or
N, never between.  Migrations only add: user data (paths, scan runs, problems) is carried over,
never dropped; fingerprints are a cache and may be cleared, because a scan recomputes them
(rows whose ``algorithm_version`` differs from :data:`simscan.model.ALGORITHM_VERSION` are
re-read by the next scan anyway).  A database whose version is higher than
:data:`SCHEMA_VERSION` was written by a newer simscan and is refused, not downgraded.

Layout (version 1)
------------------
``files``         one row per indexed path.  ``path`` is the raw file-system bytes (BLOB, any
                  name a file system allows, undecodable ones included).  Identity for the
                  incremental scan is (device, inode, size, mtime_ns).  ``simhash`` and
                  ``partial`` are the signed 64-bit views of unsigned values (SQLite integers
                  are signed).  ``error`` is the last read error (then the content columns are
                  NULL and the file is not offered to similarity search).
``fingerprints``  per file, its sorted distinct uint64 fingerprints as one little-endian BLOB
                  (rolling values first - their top bit is clear - then anchored);
                  ``n_rolling`` is where the anchored ones start.
``postings``      the inverted index ``(fp, file_id)``, a WITHOUT ROWID B-tree keyed by
                  fingerprint, so "which files hold fingerprint X" is one index seek.  It holds
                  a value-sampled subset (see :mod:`simscan.index.postings`).
``runs``          one row per scan: roots, options, status, counts.
``problems``      per scan, each path that could not be (fully) scanned and why.
``meta``          key/value settings of the index itself (e.g. the posting sample rate).

Version 2
---------
``unposted``      ids of files whose fingerprints are stored but not yet in ``postings``.  A scan
                  writes files with their postings deferred and adds them in one sorted pass at
                  its end (:meth:`Index.post_pending`): inserting each commit's postings at once
                  rewrote most of the B-tree's pages per commit (measured for 100 k files:
                  1,042 MB written and 49.5 us/file, against 84 MB and 32.9 us/file for one
                  sorted pass).  A scan killed before that pass leaves the ids here; the next scan
                  posts them.

Version 3
---------
``results``       the results cache (:mod:`simscan.index.results`): per key (what was computed:
                  cache format, algorithm, similarity parameters, reference folders) one blob of
                  columns (the file table and the scored pairs), the ``generation`` of the files
                  it was computed from and the lowest similarity it holds (``floor``).  Derived
                  data: deleted whenever the files change, recomputed when absent or damaged.
``meta``          gains ``generation``, a counter bumped in the same transaction as every change
                  of ``files`` / ``fingerprints`` (see :func:`simscan.index.results.bump`).
                  Read-only opens also accept a version-2 index (they then work without the cache).

Version 4
---------
``files``         gains ``ctime_ns``, the inode change time the scan saw (NULL before version 4: such
                  a row is read again once).  A rescan reads a file whose ctime changed even with
                  its size and mtime kept: ``cp -p``, ``rsync -t --inplace`` or ``touch -r`` put other
                  content under an old size and time, and only the ctime, which no program can set,
                  tells.  (A chmod, chown or new hard link changes it too: one needless read.)

Version 5
---------
``files_bare``    a partial index on ``files(content_hash)`` of the rows with no fingerprints
                  (``fp_count = 0``, no error): files too short for a window.  Their copies can only be
                  found by checksum, and a query of such a file read the whole table (138 ms for a
                  million files); the seek takes well under a millisecond.  Only such rows pay the
                  insert, so a scan of ordinary files writes nothing more.  (A copy of a file that has
                  fingerprints shares all of them, and the fingerprint lookup finds it.)

Version 6 (documents, :mod:`simscan.extract`)
---------
``files``         gains ``format`` (what the content is: "text", "binary", or the document format read
                  from it: "docx", "pdf" ...), ``extractor`` (the reader of a document: "ooxml", "pdf" ...;
                  NULL for a plain file) and ``extractor_version`` (that reader's version string, e.g.
                  "pdf/1+pypdfium2-5.15.2", or ``extract.PLAIN_VERSION`` for a plain file).  A scan reads
                  again a row whose version is not one of ``extract.current_versions()``: a new reader
                  version re-reads the files of its format only.  Rows from before version 6 have NULL
                  there and are read once more by the next scan (documents among them were indexed as
                  bytes, and nothing tells which they are without reading them).

Version 7
---------
Checksums (:mod:`simscan.index.checks`): ``files.row_check`` (every column of the row),
``fingerprints.chk`` (the blob), ``runs.chk``, ``problems.chk`` and ``meta.chk``, verified whenever
the rows are read; ``meta.files_digest`` (the sum of the row checks: a row that vanishes is found)
and ``meta.schema_version`` (the header's ``user_version`` again: a damaged header is told from an
index of a newer simscan).  The migration computes them from the rows as they are, after checking
each fingerprint blob's byte layout (sorted distinct values, as many as ``fp_count`` says): a blob
that fails it was damaged before checksums existed, and its file is read again by the next scan.
Costs 8 bytes per row; the migration reads and rewrites the index once (a 1,000,000-file index:
measured in ``Index._seal``).

Version 8 (passages, ALGORITHM_VERSION 12)
---------
``fingerprints`` gains ``spans`` (one byte a value, in the order of ``fps``: its dominance span, which
says at which winnowing windows it counts, :mod:`simscan.similarity.evidence`) and ``places`` (ten
bytes a value, column by column: the unit offset of its window (uint32), its first character (uint32)
and its length in characters (uint16), little-endian: where a shared passage lies), each with its
check (``schk``, ``pchk``: :func:`simscan.index.checks.meta_check`).  Apart from ``fps`` so that what
reads only values (the posting lists, a query) reads no more than before, and the pair search reads
the spans without the places.  Rows of an older algorithm version have NULL there (they are read
again by the next scan).
"""

from __future__ import annotations

import functools
import sqlite3

SCHEMA_VERSION = 8
#: The first version whose rows carry checksums (``simscan.index.checks``); older ones opened
#: read-only are read without them.
CHECKED_VERSION = 7
#: The rows of the partial index ``files_bare`` (version 5; never to change): a query seeks it only
#: when its WHERE repeats this condition.
BARE_ROWS = "fp_count = 0 AND error IS NULL"
#: The oldest schema that read-only opens (pairs, groups, the window) read as it is: version 3
#: only adds the results cache, which they then do without.
READABLE_VERSION = 2

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            path BLOB NOT NULL UNIQUE,
            device INTEGER NOT NULL,
            inode INTEGER NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            is_text INTEGER,
            encoding TEXT,
            checksum BLOB,
            partial INTEGER,
            content_hash BLOB,
            simhash INTEGER,
            fp_count INTEGER NOT NULL DEFAULT 0,
            units INTEGER NOT NULL DEFAULT 0,
            algorithm_version INTEGER NOT NULL,
            error TEXT,
            run_id INTEGER
        )""",
        "CREATE INDEX files_inode ON files(device, inode)",
        """CREATE TABLE fingerprints (
            file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
            n_rolling INTEGER NOT NULL,
            fps BLOB NOT NULL
        )""",
        """CREATE TABLE postings (
            fp INTEGER NOT NULL,
            file_id INTEGER NOT NULL,
            PRIMARY KEY (fp, file_id)
        ) WITHOUT ROWID""",
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            started_at REAL NOT NULL,
            finished_at REAL,
            status TEXT NOT NULL,
            roots TEXT NOT NULL,
            options TEXT NOT NULL,
            files_seen INTEGER NOT NULL DEFAULT 0,
            files_read INTEGER NOT NULL DEFAULT 0,
            files_unchanged INTEGER NOT NULL DEFAULT 0,
            files_removed INTEGER NOT NULL DEFAULT 0,
            bytes_read INTEGER NOT NULL DEFAULT 0,
            problems INTEGER NOT NULL DEFAULT 0,
            elapsed_s REAL NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE problems (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            path BLOB NOT NULL,
            reason TEXT NOT NULL
        )""",
        "CREATE INDEX problems_run ON problems(run_id)",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    2: ("CREATE TABLE unposted (file_id INTEGER PRIMARY KEY)",),
    3: (
        """CREATE TABLE results (
            key TEXT PRIMARY KEY,
            generation INTEGER NOT NULL,
            floor REAL NOT NULL,
            created_at REAL NOT NULL,
            data BLOB NOT NULL
        )""",
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('generation', '1')",
    ),
    4: ("ALTER TABLE files ADD COLUMN ctime_ns INTEGER",),
    5: (f"CREATE INDEX files_bare ON files(content_hash) WHERE {BARE_ROWS}",),
    6: (
        "ALTER TABLE files ADD COLUMN format TEXT",
        "ALTER TABLE files ADD COLUMN extractor TEXT",
        "ALTER TABLE files ADD COLUMN extractor_version TEXT",
    ),
    # The checks are filled in by ``Index._seal`` in the same transaction.
    7: (
        "ALTER TABLE files ADD COLUMN row_check INTEGER",
        "ALTER TABLE fingerprints ADD COLUMN chk INTEGER",
        "ALTER TABLE runs ADD COLUMN chk INTEGER",
        "ALTER TABLE problems ADD COLUMN chk INTEGER",
        "ALTER TABLE meta ADD COLUMN chk INTEGER",
    ),
    8: (
        "ALTER TABLE fingerprints ADD COLUMN spans BLOB",
        "ALTER TABLE fingerprints ADD COLUMN schk INTEGER",
        "ALTER TABLE fingerprints ADD COLUMN places BLOB",
        "ALTER TABLE fingerprints ADD COLUMN pchk INTEGER",
    ),
}


def _normal(sql: str | None) -> str | None:
    return None if sql is None else " ".join(sql.split())


@functools.cache
def expected_schema(version: int) -> frozenset[tuple[str, str, str, str | None]]:
    """What ``sqlite_master`` holds in an index of schema ``version``: (type, name, table, SQL with
    white space collapsed) of every table and index, as the migrations make them (applied to an
    empty database in memory, which takes ~1 ms).  An index whose schema differs has a damaged
    schema page or header (a changed ``user_version``), or another program changed it."""
    conn = sqlite3.connect(":memory:")
    try:
        for v in range(1, version + 1):
            for stmt in MIGRATIONS[v]:
                conn.execute(stmt)
        return frozenset(actual_schema(conn))
    finally:
        conn.close()


def actual_schema(conn: sqlite3.Connection) -> set[tuple[str, str, str, str | None]]:
    """The (type, name, table, normalised SQL) of the tables and indexes of the open database."""
    # As bytes: a damaged schema page may hold text that is not UTF-8 (then it differs from every
    # expected schema instead of failing to decode).
    rows = conn.execute(
        "SELECT CAST(type AS BLOB), CAST(name AS BLOB), CAST(tbl_name AS BLOB), CAST(sql AS BLOB) FROM sqlite_master"
        " WHERE type IN ('table', 'index')"
    )
    return {tuple(None if v is None else v.decode("utf-8", "replace") for v in (t, n, tb)) + (_normal(
        None if sql is None else sql.decode("utf-8", "replace")),) for t, n, tb, sql in rows}  # type: ignore[misc]
