"""The SQLite index: connection discipline, bulk writes, columnar reads.

Connection discipline (one :class:`Index` per thread; SQLite connections are not shared):
``isolation_level=None`` so Python never opens transactions behind our back; every write goes
through :meth:`Index.atomic` (``BEGIN IMMEDIATE`` ... ``COMMIT``, a SAVEPOINT when nested,
rolled back on any ``BaseException`` including Ctrl-C); ``journal_mode=WAL`` so readers (the
GUI) query while a scan writes; ``synchronous=NORMAL`` (in WAL mode a power loss may lose the
last commits but never corrupts); ``busy_timeout`` so short write collisions wait instead of
failing.  The file is created with mode 0600 (SQLite gives the -wal/-shm files the same mode).

A read-only open never writes or creates anything: it checks the 16-byte SQLite header itself
first (an empty or foreign file is "not a simscan index", left untouched and never offered to be
moved aside), refuses a schema older than ``READABLE_VERSION`` (a scan upgrades it) and, on
storage where SQLite cannot create its shared-memory file, reads with ``immutable=1`` when no
write-ahead log exists.  The one exception is derived data: :meth:`Index.store_results` (the
results cache, :mod:`simscan.index.results`) writes through its own short connection when the
file is writable and has the current schema, and silently does nothing otherwise.
:func:`move_aside` / :func:`rebuild` only move a file with the SQLite header (or one whose header
was overwritten, recognised by simscan's lock file beside it), never another program's file.

Scans are serialised by an exclusive ``flock`` on ``<index>.lock`` (:meth:`Index.scan_lock`):
the kernel drops it when the process dies, even by ``kill -9``, so a crashed scan never leaves
a stale lock behind.

Write costs, measured on 8,000 files of the scan benchmark (8.7 KB of text each, ~186
fingerprints): :meth:`Index.write_files` in batches of 4,000 with postings deferred took
17.7 us per file (files row 4.2, fingerprint blob 3.5, commit 5.2); posting them afterwards
(:meth:`Index.post_pending`, ~23 postings per file) 18.5 us per file.  Rows are now bound
several hundred to one ``INSERT ... VALUES (...),(...)`` statement instead of one at a time by
``executemany`` (:data:`_ROWS_PER_INSERT`): a posting costs ~0.25 us instead of ~0.78 us, and
on the scan benchmark's 20,000-file tree ``write_files`` takes ~9 us per file plus ~5 us of commit.
(Those figures are of the 1-in-8 sample alone; a text's values of span 128 post too since posting
rule 2, ~3.5x the postings of a long text: see :mod:`simscan.index.postings`.)
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import functools
import inspect
import itertools
import json
import os
import shlex
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, Self, TypeVar
from urllib.parse import quote

import numpy as np
import xxhash

from simscan.columns import ByteColumn, EncodedPaths
from simscan.extract import PLAIN_VERSION, current_versions
from simscan.fingerprint.checksum import to_signed64
from simscan.index import checks as _checks
from simscan.index import postings as _postings
from simscan.index import results as _results
from simscan.index.checks import Mismatch, meta_get, meta_set
from simscan.index.errors import (
    IndexCorrupt,
    IndexLocked,
    IndexUnavailable,
    NotAnIndex,
    RefusedToMove,
    corrupt,
    damaged,
    disk_full,
    translate,
)
from simscan.index.schema import (
    BARE_ROWS,
    CHECKED_VERSION,
    MIGRATIONS,
    READABLE_VERSION,
    SCHEMA_VERSION,
    actual_schema,
    expected_schema,
)
from simscan.model import ALGORITHM_VERSION, FingerprintMeta, Fingerprints

BUSY_TIMEOUT_MS = 10_000
#: Page size of new index files (bytes); see Index._setup for the measurement.
PAGE_SIZE = 8192
#: Scan runs whose problems are kept (older runs keep their summary row only).
KEEP_RUNS = 20
#: Rows per ``IN (...)`` list; below SQLite's historic 999-parameter limit.
_CHUNK = 900
#: Postings bound to SQLite per slice (bounds the Python ints alive at once).
_POST_SLICE = 200_000
#: Rows per multi-row ``INSERT ... VALUES (...),(...)`` statement.  Binding a whole slice to one statement
#: per 500 rows costs ~0.25 us a posting, against ~0.78 us bound row by row through ``executemany``
#: (540,000 sorted postings into a fresh WITHOUT ROWID table, SQLite 3.40); 2,000 rows per statement
#: measured the same.  Fewer rows when the library allows fewer bound parameters (999 before 3.32).
_ROWS_PER_INSERT = 500
#: Rows a multi-row INSERT of fingerprint blobs (at most 64 KB each): a cached statement keeps its
#: last bound blobs, so this bounds what stays held after a commit to ~4 MB.
_BLOB_ROWS_PER_INSERT = 64
#: Fingerprint blobs larger than this (bytes) are inserted one a statement (see write_files).
_BIG_BLOB = 64 << 10
#: Fingerprint blobs held at once while collecting postings.
_BLOB_HOLD = 8 << 20
_TOP = np.uint64(1 << 63)
_U64 = (1 << 64) - 1


def default_index_path() -> Path:
    """``$SIMSCAN_INDEX``, else ``$XDG_DATA_HOME/simscan/index.sqlite3`` (``~/.local/share`` by default)."""
    env = os.environ.get("SIMSCAN_INDEX")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "simscan" / "index.sqlite3"


def companion_paths(path: Path) -> list[Path]:
    """The index file and the files SQLite and simscan keep next to it."""
    return [path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal"), Path(f"{path}.lock")]


#: ``Index.bare_copies``: its WHERE holds the partial index's condition, so SQLite seeks that index.
BARE_COPIES_SQL = f"SELECT id FROM files WHERE {BARE_ROWS} AND content_hash = ? AND is_text = ?"

#: What ``move_aside`` adds to an index's name (then the UTC time).
_ASIDE = ".corrupt-"


def set_aside_paths(path: Path) -> list[Path]:
    """Earlier indexes at ``path`` that a rebuild moved aside (``move_aside``), with their -wal/-shm:
    simscan's own files, which a scan of a folder holding the index leaves out like the index."""
    path = Path(path)
    try:
        with os.scandir(path.parent) as it:
            return [Path(e.path) for e in it if e.name.startswith(f"{path.name}{_ASIDE}")]
    except OSError:
        return []


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One file to store.  ``fps``: sorted distinct uint64 (rolling then anchored), ``n_rolling``
    of them rolling.  ``simhash`` unsigned 64-bit, ``partial`` signed 64-bit.  When ``error`` is
    set the content fields are ignored and stored as NULL."""

    path: bytes
    device: int
    inode: int
    size: int
    mtime_ns: int
    is_text: bool = False
    encoding: str | None = None
    checksum: bytes | None = None
    partial: int | None = None
    content_hash: bytes | None = None
    simhash: int = 0
    units: int = 0
    fps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64), repr=False)
    n_rolling: int = 0
    error: str | None = None
    #: The inode change time the scan saw (``st_ctime_ns``); None: unknown (the next scan reads it again).
    ctime_ns: int | None = None
    #: What the content is and who read it (schema 6, :mod:`simscan.extract`): "text"/"binary" (None: from
    #: ``is_text``) or a document format; its extractor (None: plain) and that reader's version string.
    format: str | None = None
    extractor: str | None = None
    extractor_version: str = PLAIN_VERSION
    #: Where each value comes from (``FingerprintMeta.blob``: 11 bytes a value, in ``fps`` order; schema
    #: 8 stores its first byte a value as ``spans``, the rest as ``places``); empty: none.
    meta: bytes = field(default=b"", repr=False)

    @staticmethod
    def from_fingerprints(path: bytes, device: int, inode: int, mtime_ns: int, fp: Fingerprints) -> FileRecord:
        """Record for ``fp`` (its ``size`` is the number of bytes actually read)."""
        return FileRecord(
            path=path,
            device=device,
            inode=inode,
            size=fp.size,
            mtime_ns=mtime_ns,
            is_text=fp.is_text,
            encoding=fp.encoding,
            checksum=fp.checksum,
            partial=fp.partial,
            content_hash=fp.content_hash,
            simhash=fp.simhash,
            units=fp.units,
            fps=np.concatenate((fp.rolling, fp.anchored)).astype(np.uint64, copy=False),
            n_rolling=int(fp.rolling.size),
            meta=fp.meta.blob() if fp.meta is not None else b"",
        )


@dataclass(frozen=True, slots=True)
class FileTable:
    """Columnar snapshot of the indexed files (same order in every column, ascending id).

    :meth:`Index.files` gives ``raw_paths`` as an ``EncodedPaths`` of ``paths`` and the digests as
    ``ByteColumn`` s (``simscan.columns``: no object per row; they read as lists); other tables
    may hold lists."""

    ids: np.ndarray
    paths: list[str]
    raw_paths: Sequence[bytes]
    size: np.ndarray
    mtime_ns: np.ndarray
    is_text: np.ndarray
    encoding: list[str | None]
    checksum: Sequence[bytes]
    partial: np.ndarray
    content_hash: Sequence[bytes | None]
    simhash: np.ndarray
    fp_count: np.ndarray
    units: np.ndarray
    #: ``st_dev`` and ``st_ino`` when the file was scanned (int64: the signed view of the 64-bit values).  Two rows with the same pair are one
    #: file reached by two paths (hard link, bind mount): never a pair of copies.
    device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    inode: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return int(self.ids.size)


_F = TypeVar("_F", bound=Callable[..., Any])


def _sql_errors(fn: _F) -> _F:
    """Report SQLite failures of an Index method as index errors (corrupt / locked / unavailable);
    of a generator method too, whose queries run as it is iterated, not when it is called."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def generator(self: Index, *args: Any, **kwargs: Any) -> Any:
            try:
                yield from fn(self, *args, **kwargs)
            except (sqlite3.Error, UnicodeDecodeError) as e:
                raise sqlite_failed(self.path, e) from e
            except Mismatch as e:
                raise _damage_found(self.path, e) from e

        return generator  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(self: Index, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except (sqlite3.Error, UnicodeDecodeError) as e:
            raise sqlite_failed(self.path, e) from e
        except Mismatch as e:
            raise _damage_found(self.path, e) from e

    return wrapper  # type: ignore[return-value]


def sqlite_failed(path: Path, e: sqlite3.Error | UnicodeDecodeError) -> Exception:
    """The error for a failure SQLite reported; when it found a damaged page, the next scan is told to
    check all of the index (it then names ``--rebuild`` if the damage cannot be repaired).  (A
    UnicodeDecodeError: SQLite's message quoted damaged text, which Python could not decode.)"""
    err = corrupt(path, "a text in it is not readable") if isinstance(e, UnicodeDecodeError) else translate(e, path)
    if isinstance(err, IndexCorrupt):
        _checks.note_damage(path)
    return err


def _damage_found(path: Path, e: Mismatch) -> Exception:
    """The error for values that failed their checks while read, after noting in the index (best-effort,
    as the results cache is written: read-only commands never write anything else) that the next scan
    must check all of it."""
    _checks.note_damage(path)
    return damaged(path, e.what, len(e.file_ids))


def _table_names(c: sqlite3.Connection) -> set[str]:
    """The names of the database's tables (read as bytes: a damaged schema page may not be UTF-8)."""
    rows = c.execute("SELECT CAST(name AS BLOB) FROM sqlite_master WHERE type = 'table'")
    return {(r[0] or b"").decode("utf-8", "replace") for r in rows}


def _written_by_newer(c: sqlite3.Connection, version: int) -> bool:
    """Whether a database whose header says schema ``version`` (above this simscan's) was written by a
    newer simscan, rather than being an index of a known version whose header was damaged."""
    said = None
    try:
        row = c.execute("SELECT CAST(value AS BLOB) FROM meta WHERE key = 'schema_version'").fetchone()
        said = None if row is None or row[0] is None else row[0].decode("utf-8", "replace")
    except sqlite3.Error:
        pass
    if said is not None:
        return said == str(version)
    # A newer simscan records its version in the settings too (schema 7 on); an index that records none
    # predates that, so tables of a version this one knows mean a damaged header.
    known = actual_schema(c)
    return not any(known == expected_schema(v) for v in range(1, SCHEMA_VERSION + 1))


def _files_fail(n: int) -> str:
    return f"the entries of {n:,} file{'' if n == 1 else 's'} fail their checksums"


def _blobs_fail(n: int) -> str:
    return f"the fingerprints of {n:,} file{'' if n == 1 else 's'} fail their checksums"


#: The first 16 bytes of every SQLite 3 database file (https://www.sqlite.org/fileformat.html, 1.3).
SQLITE_MAGIC = b"SQLite format 3\x00"
#: Tables whose presence makes a SQLite file a simscan index (schema version 1 on).
_OUR_TABLES = frozenset({"files", "fingerprints", "postings", "runs", "problems", "meta"})


def _uri(path: Path, *, immutable: bool = False) -> str:
    """A read-only SQLite URI for ``path``; bytes, so a name that is not valid UTF-8 works too."""
    return f"file:{quote(os.fsencode(path))}?mode=ro" + ("&immutable=1" if immutable else "")


def _header(path: Path) -> bytes:
    """The file's first 16 bytes (fewer when shorter); OSError when it cannot be read."""
    with open(path, "rb") as f:
        return f.read(16)


def _damaged_index(path: Path, head: bytes) -> bool:
    """Whether a file that is not a readable simscan index is a damaged one (safe to move aside),
    not the user's own file.  True with the SQLite header, or when simscan's lock file lies beside it
    and the size is a whole number of 512-byte pages (a database whose first page was overwritten):
    the lock file is only created once a file was opened as an index."""
    if head.startswith(SQLITE_MAGIC):
        return True
    try:
        size = path.stat().st_size
    except OSError:
        return False
    return size > 0 and size % 512 == 0 and Path(f"{path}.lock").exists()


def _not_an_index(path: Path, what: str) -> NotAnIndex:
    return NotAnIndex(
        f"{path} is not a simscan index ({what}).",
        "It was left untouched. Give the path of an index with --index PATH (or $SIMSCAN_INDEX), "
        "or a new file name to start one.",
    )


def _check_kind(path: Path) -> None:
    """Refuse a path that exists but is not a regular file (a FIFO would block the open forever, a
    device would get SQLite's journal written beside it)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise IndexUnavailable(
            f"the index {path} cannot be reached: {e.strerror or e}.",
            "Check the folder's permissions, or use another --index PATH.",
        ) from e
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise _not_an_index(path, kind)


def _check_file(path: Path) -> None:
    """Refuse (without writing anything) a file that is not a SQLite database: an empty file is no
    index yet (IndexUnavailable, as a missing one), another kind of file gets NotAnIndex, a damaged
    index IndexCorrupt (which suggests --rebuild)."""
    try:
        head = _header(path)
    except OSError as e:
        raise IndexUnavailable(
            f"the index {path} cannot be read: {e.strerror or e}.",
            "Check its permissions, or use another --index PATH.",
        ) from e
    if head.startswith(SQLITE_MAGIC) or (not head and Path(f"{path}-wal").exists()):
        return  # (an index being created may have its first page in the write-ahead log only)
    if _damaged_index(path, head):
        raise corrupt(path, "its SQLite header is gone")
    if not head:
        raise _no_index_yet(path, "an empty file")
    raise _not_an_index(path, "not a SQLite database")


def _no_index_yet(path: Path, what: str) -> IndexUnavailable:
    """One rule for an empty file (or an empty database) given as the index: it is an index with nothing in
    it yet.  A scan starts the index in it; a read-only command says, as for a path where nothing is."""
    return IndexUnavailable(
        f"there is no index at {path} yet ({what}: nothing was scanned into it).",
        f"Scan some folders first: `simscan scan --index {path} FOLDER`.",
    )


def _create_private(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def storable_text(text: str) -> str:
    """``text`` as a TEXT column takes it: a message naming a path that is not UTF-8 (decoded with
    surrogate escapes, e.g. a link's target) gets ``\\xNN`` escapes, as paths are shown; SQLite
    would refuse the lone surrogates and, before, failed the whole scan."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


#: How the scan's reason for a file skipped because it changed while being read begins (``files.error``):
#: ``stats`` counts such files apart from the unreadable ones (the next scan reads them).
CHANGED_WHILE_READ = "changed while being read"

#: How long a starting scan waits for looks at the scan lock (``Index.scan_running``) to end.
_LOOK_WAIT_S = 5.0


class Index:
    """A simscan index file.  Use :meth:`open`; a context manager; one per thread."""

    def __init__(self, conn: sqlite3.Connection, path: Path, readonly: bool) -> None:
        self._conn = conn
        self.path = path
        self.readonly = readonly
        self._depth = 0
        self._lock_fd: int | None = None
        #: The inverted index's posting rule (``postings``: a shift, plus ``SPANS``), as ``meta`` says.
        self.posting_shift = _postings.DEFAULT_RULE
        #: The schema version of the file (an older one when opened read-only and not upgraded).
        self.version = 0
        #: Whether its rows carry checks (schema 7 on): then every read verifies them.
        self.checked = False
        self._shift_damage: Mismatch | None = None
        #: After :func:`rebuild`: (files kept from the index moved aside, rows left out as damaged).
        self.salvaged = (0, 0)

    # ----------------------------------------------------------------- open / close
    @classmethod
    def open(cls, path: Path | str | None = None, *, readonly: bool = False) -> Index:
        """Open (creating and migrating unless ``readonly``) the index at ``path``.

        Raises IndexUnavailable (missing when read-only, not creatable, newer schema),
        IndexCorrupt (not a database / malformed), IndexLocked (busy past the timeout).
        """
        p = Path(path).expanduser() if path is not None else default_index_path()
        p = Path(os.path.abspath(p))
        _check_kind(p)
        if readonly:
            # A read-only open never writes: not even to upgrade an older index or to start an empty one.
            if not p.exists():
                raise IndexUnavailable(f"there is no index at {p}.", "Scan some folders first: `simscan scan FOLDER`.")
            _check_file(p)
            return cls._open_readonly(p)
        try:
            _create_private(p)
        except OSError as e:
            raise IndexUnavailable(
                f"cannot create the index {p}: {e.strerror or e}.",
                "Choose a writable place with --index PATH or $SIMSCAN_INDEX.",
            ) from e
        if p.stat().st_size > 0:  # empty: just created by us (or by a crash right after that)
            _check_file(p)
        try:
            # A path object: sqlite3 encodes it with os.fsencode, so undecodable names work.
            conn = sqlite3.connect(p, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as e:
            raise translate(e, p) from e
        return cls._finish_open(conn, p, False)

    @classmethod
    def _open_readonly(cls, p: Path) -> Index:
        """Read-only connection; on storage where SQLite cannot create the shared-memory file (a
        read-only folder or medium) and no write-ahead log exists, open it as immutable instead."""
        try:
            conn = sqlite3.connect(_uri(p), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            return cls._finish_open(conn, p, True)
        except IndexUnavailable as e:
            cause = e.__cause__
            name = getattr(cause, "sqlite_errorname", "")
            if not name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")):
                raise
            if Path(f"{p}-wal").exists():
                raise IndexUnavailable(
                    f"the index {p} cannot be read consistently: {cause}.",
                    "Its folder must be writable (SQLite keeps a shared-memory file beside a database that has a "
                    "write-ahead log), or copy the index with its -wal file to a writable folder.",
                ) from cause
        try:
            conn = sqlite3.connect(_uri(p, immutable=True), uri=True, isolation_level=None)
        except sqlite3.Error as e:
            raise translate(e, p) from e
        return cls._finish_open(conn, p, True)

    @classmethod
    def _finish_open(cls, conn: sqlite3.Connection, p: Path, readonly: bool) -> Index:
        idx = cls(conn, p, readonly)
        try:
            idx._setup()
        except sqlite3.DatabaseError as e:
            conn.close()
            raise translate(e, p) from e
        except UnicodeDecodeError as e:  # (SQLite's message quoting a damaged schema, which Python cannot decode)
            conn.close()
            raise corrupt(p, "its schema cannot be read") from e
        except BaseException:
            conn.close()
            raise
        return idx

    def _setup(self) -> None:
        c = self._conn
        c.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Reading the header first: a non-database file fails here with "file is not a database".
        version = c.execute("PRAGMA user_version").fetchone()[0]
        tables = _table_names(c)
        empty = c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        if not empty and not (tables & _OUR_TABLES):
            # Another program's database: neither read nor "upgraded" (that would add our tables to it).
            raise _not_an_index(self.path, "a SQLite database of another program")
        if version > SCHEMA_VERSION:
            self._refuse_newer(version)
        if not empty:
            self._check_schema(version)
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("PRAGMA temp_store = MEMORY")
        c.execute("PRAGMA cache_size = -65536")  # 64 MiB page cache per connection
        if self.readonly:
            if empty:
                raise _no_index_yet(self.path, "an empty SQLite database")
            if version < READABLE_VERSION:
                raise IndexUnavailable(
                    f"the index {self.path} has an older layout (schema {version}) and read-only commands "
                    "do not change it.",
                    f"Run `simscan scan --index {self.path} FOLDER` once to upgrade it (files already indexed "
                    "are kept).",
                )
        else:
            if empty and version == 0:
                # Only possible before the first write.  8 KiB pages, measured on 20,000 benchmark files
                # against 4 KiB: 10 % smaller (fingerprint blobs of 0.4-3 KB waste less per page), writes
                # 21 -> 17 us and postings 32 -> 30 us per file.  16 KiB gained little more and makes every
                # small update (a rescan, the GUI forgetting a file) rewrite bigger pages.
                c.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            mode = c.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise IndexUnavailable(f"the index {self.path} cannot use write-ahead logging (mode {mode}).")
            c.execute("PRAGMA synchronous = NORMAL")
            if version and version < SCHEMA_VERSION:
                # An older simscan may be scanning into this index right now: it holds the scan lock
                # and knows nothing of what newer schemas keep in step (the results cache's
                # generation).  Upgrade only while no scan runs.
                held = self._lock_fd is not None
                self.scan_lock()
                try:
                    self._migrate(version)
                finally:
                    if not held:
                        self.release_scan_lock()
            else:
                self._migrate(version)
            version = SCHEMA_VERSION
        self.version = version
        self.checked = version >= CHECKED_VERSION
        if not self.readonly:
            self._check_posting_shift()  # (rebuilds the inverted index when the setting is damaged)
        try:
            rule = _read_rule(c, self.checked)
            if rule is not None:
                self.posting_shift = rule
        except Mismatch as e:
            self._shift_damage = e  # only the inverted index's lookups need it: they raise it

    def _refuse_newer(self, version: int) -> None:
        """Refuse an index of a newer schema, untouched; but a header whose ``user_version`` was damaged
        (the rest of the index is of a version this simscan knows) is damage, not a newer index."""
        if not _written_by_newer(self._conn, version):
            raise corrupt(self.path, f"its header says schema {version}, but its tables are of an earlier one")
        raise IndexUnavailable(
            f"the index {self.path} was written by a newer simscan (schema {version}, this one knows {SCHEMA_VERSION}); "
            "it was left untouched.",
            "Upgrade simscan, or use another index with --index PATH.",
        )

    def _check_schema(self, version: int) -> None:
        """Check the header and the schema against what this version's migrations make (reads one page).
        A mismatch is damage: the schema page or the header was overwritten."""
        c = self._conn
        enc = c.execute("PRAGMA encoding").fetchone()[0]
        if str(enc).upper() != "UTF-8":
            raise corrupt(self.path, f"its header says the text is {enc}")
        have = actual_schema(c)
        want = expected_schema(version)
        if have != want:
            odd = sorted(n for _, n, _, _ in have ^ want)
            raise corrupt(self.path, f"its schema is not that of version {version}: {', '.join(odd[:3])} differ")
        if version >= CHECKED_VERSION:
            try:
                said = meta_get(c, "schema_version")
            except Mismatch:
                said = str(version)  # the setting alone is damaged (the scan's check rewrites it)
            if said != str(version):
                raise corrupt(self.path, f"its header says schema {version}, its settings say {said}")

    def _migrate(self, version: int) -> None:
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self.atomic():
                # Another process may have migrated while we waited for the write lock.
                if self._conn.execute("PRAGMA user_version").fetchone()[0] >= target:
                    continue
                for stmt in MIGRATIONS[target]:
                    self._conn.execute(stmt)
                checked = target >= CHECKED_VERSION
                if target == CHECKED_VERSION:
                    self._seal()
                if target >= 3:  # from the version that has a results cache: any migration may change files
                    _results.bump(self._conn, checked)
                if checked:
                    meta_set(self._conn, "schema_version", target)
                self._conn.execute(f"PRAGMA user_version = {target}")

    def _seal(self) -> None:
        """Schema 7: give every row its check, from the values as they are (in the migration's
        transaction).  A fingerprint blob that is not well formed (:func:`checks.blob_is_well_formed`)
        was damaged before checks existed: it is dropped and its file marked for reading again (the
        row gets another algorithm version, as a row of an older simscan).  1,000,000 files: ~15 s."""
        c = self._conn
        _checks.seal_rows(c, "meta")
        for table in _checks.DIGESTED:
            _checks.seal_rows(c, table)
            _checks.reseal_table_digest(c, table)
        counts = dict(c.execute("SELECT id, fp_count FROM files WHERE error IS NULL"))
        bad: list[int] = []
        upd: list[tuple[int, int]] = []
        cur = c.execute("SELECT file_id, n_rolling, fps FROM fingerprints")
        while batch := cur.fetchmany(4096):
            for fid, n_roll, blob in batch:
                if fid in counts and not _checks.blob_is_well_formed(blob, n_roll, counts[fid]):
                    bad.append(fid)
                else:
                    upd.append((_checks.fingerprint_check(fid, n_roll, blob), fid))
            if len(upd) >= 65536:
                c.executemany("UPDATE fingerprints SET chk = ? WHERE file_id = ?", upd)
                upd = []
        c.executemany("UPDATE fingerprints SET chk = ? WHERE file_id = ?", upd)
        if bad:
            self._forget_fingerprints(bad)
            c.executemany("UPDATE files SET algorithm_version = 0 WHERE id = ?", [(i,) for i in bad])
        total = 0
        cur = c.execute(f"SELECT {_checks.FILE_COLUMNS_SQL} FROM files")
        while batch := cur.fetchmany(4096):
            checks = _checks.file_checks(batch)
            total = _checks.add_digest(total, checks)
            c.executemany("UPDATE files SET row_check = ? WHERE id = ?", zip(checks.tolist(), (r[0] for r in batch)))
        meta_set(c, "files_digest", total)

    def _forget_fingerprints(self, ids: Sequence[int]) -> None:
        """Drop the fingerprints of these files, and their postings, whatever their blobs hold (they may
        be damaged: the postings are found by a pass over the inverted index, ~0.5 s per million files)."""
        c = self._conn
        ids = sorted({int(i) for i in ids})
        if not ids:
            return
        c.execute("CREATE TEMP TABLE IF NOT EXISTS forget_ids (id INTEGER PRIMARY KEY)")
        try:
            c.executemany("INSERT OR IGNORE INTO temp.forget_ids(id) VALUES (?)", [(i,) for i in ids])
            c.execute("DELETE FROM postings WHERE file_id IN (SELECT id FROM temp.forget_ids)")
            c.execute("DELETE FROM fingerprints WHERE file_id IN (SELECT id FROM temp.forget_ids)")
            c.execute("DELETE FROM unposted WHERE file_id IN (SELECT id FROM temp.forget_ids)")
        finally:
            c.execute("DELETE FROM temp.forget_ids")

    def _check_posting_shift(self) -> None:
        want = _postings.DEFAULT_RULE
        c = self._conn
        try:
            have = _read_rule(c, self.checked)
            damaged_row = False
        except Mismatch:
            have, damaged_row = None, True  # derived data: the postings are rebuilt, as for another shift
        if have == want:
            return
        if have == _postings.DEFAULT_SHIFT:
            # The earlier rule (the sample alone): the current one adds to it, which a scan's
            # posting phase does with its progress (``upgrade_postings``); until then it is read so.
            self.posting_shift = have
            return
        with self.atomic():
            if have is not None or damaged_row:
                # Postings are derived data: rebuild them from the stored fingerprints.
                c.execute("DELETE FROM postings")
                c.execute("INSERT OR IGNORE INTO unposted(file_id) SELECT file_id FROM fingerprints")
            _write_rule(c, self.checked)
        self.posting_shift = want
        self.post_pending()

    @_sql_errors
    def upgrade_postings(
        self, on_progress: Callable[[int, int], None] | None = None, max_values: int = 2_000_000,
    ) -> int:
        """Bring an inverted index of the earlier posting rule (the 1-in-8 sample alone) to the current
        one by adding each text file's values of span 128 (``postings``), in sorted passes of at most
        ``max_values`` postings a transaction (~16 bytes each in memory);
        the rule is recorded once every file has them, so readers meanwhile look up by the earlier
        rule (a posting more is never wrong under it).  Stopped part way (``on_progress`` may raise),
        the next call adds them again (``INSERT OR IGNORE``).  Returns the number of files gone through
        (0 when there was nothing to do)."""
        if self.posting_shift != _postings.DEFAULT_SHIFT:
            return 0
        c = self._conn
        ids = [r[0] for r in c.execute("SELECT file_id FROM fingerprints ORDER BY file_id")]
        fps: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        held = 0
        for s in range(0, len(ids), _CHUNK):
            with self.atomic():
                fp, owner = self._stored_posted_pairs(ids[s : s + _CHUNK], _postings.DEFAULT_RULE)
            new = ~_postings.posted_mask(fp.view(np.uint64), _postings.DEFAULT_SHIFT)  # (the sample is there)
            fps.append(fp[new])
            owners.append(owner[new])
            held += int(np.count_nonzero(new))
            done = min(len(ids), s + _CHUNK)
            if held >= max_values or done == len(ids):
                # Inserted in key order, a few million at once: the B-tree walked once a pass (a pass of
                # 4,096 files' postings spread over the whole tree took 4x as long at 1M files).
                with self.atomic():
                    self._insert_pairs(np.concatenate(fps), np.concatenate(owners))
                fps, owners, held = [], [], 0
            if on_progress is not None:
                on_progress(done, len(ids))
        with self.atomic():
            _write_rule(c, self.checked)
        self.posting_shift = _postings.DEFAULT_RULE
        return len(ids)

    def close(self) -> None:
        self.release_scan_lock()
        try:
            self._conn.close()
        except sqlite3.Error:
            pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- transactions
    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """One transaction (``BEGIN IMMEDIATE``; a SAVEPOINT when nested).  Any exception,
        KeyboardInterrupt included, rolls it back and propagates."""
        c = self._conn
        if self._depth == 0:
            c.execute("BEGIN IMMEDIATE")
        else:
            c.execute(f"SAVEPOINT sp{self._depth}")
        self._depth += 1
        try:
            yield c
        except BaseException:
            self._depth -= 1
            if self._depth == 0:
                if c.in_transaction:
                    c.execute("ROLLBACK")
            else:
                c.execute(f"ROLLBACK TO sp{self._depth}")
                c.execute(f"RELEASE sp{self._depth}")
            raise
        else:
            self._depth -= 1
            if self._depth == 0:
                c.execute("COMMIT")
            else:
                c.execute(f"RELEASE sp{self._depth}")

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection (read queries only; write through :meth:`atomic`)."""
        return self._conn

    # ----------------------------------------------------------------- scan lock
    def scan_lock(self) -> None:
        """Take the exclusive scan lock or raise :class:`IndexLocked` naming the holder."""
        if self._lock_fd is not None:
            return
        lock = Path(f"{self.path}.lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise _unavailable(self.path, f"open the lock file {lock}", e) from e
        deadline = None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            # Who holds it?  A scan holds it exclusively; a look of scan_running (stats, the
            # window) shares it for a moment.  Wait for looks, refuse a scan at once.
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                os.close(fd)
                raise IndexLocked(
                    f"another scan (process {holder or '?'}) is writing to the index {self.path}.",
                    "Wait for it to finish (or stop it), or scan into another index with --index PATH.",
                ) from None
            fcntl.flock(fd, fcntl.LOCK_UN)
            now = time.monotonic()
            if deadline is None:
                deadline = now + _LOOK_WAIT_S
            elif now > deadline:
                os.close(fd)
                raise IndexLocked(
                    f"another process has held the lock file {lock} of the index {self.path} (shared) for "
                    f"{_LOOK_WAIT_S:.0f} s; a scan cannot start.",
                    "Close other simscan commands or windows on this index and scan again.",
                ) from None
            time.sleep(0.005)
        try:  # who holds it, for the message a second scan gives; the lock itself is the flock
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass  # (a full disk: the scan's first write says so, as an index error)
        self._lock_fd = fd

    def scan_running(self) -> bool:
        """Whether a scan holds the scan lock now (another process, or this one)."""
        if self._lock_fd is not None:
            return True
        try:
            fd = os.open(f"{self.path}.lock", os.O_RDONLY)
        except OSError:
            return False  # no lock file: no scan ever wrote here
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops the shared lock taken to look
        return False

    def unfinished_scan(self) -> str | None:
        """Why what this index holds may be short of its folders: ``"running"`` while a scan is writing to
        it (another process, or this one), else the last scan's status when it did not finish (``"killed"``:
        its process died; ``"cancelled"``, ``"failed"``); None once it finished, or when none ran.  The
        command line and the window say the same from it."""
        if self.scan_running():
            return "running"
        runs = self.runs(1)
        status = runs[0]["status"] if runs else None
        if status in (None, "done"):
            return None
        return "killed" if status == "running" else str(status)

    def release_scan_lock(self) -> None:
        if self._lock_fd is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None

    # ----------------------------------------------------------------- writes
    @_sql_errors
    def write_files(
        self, records: Sequence[FileRecord], run_id: int | None = None, *, defer_postings: bool = False
    ) -> np.ndarray:
        """Insert or replace (by path) ``records`` in ONE transaction; returns their ids (same order).

        Old fingerprints and postings of replaced paths are removed.  Records must have distinct paths.
        With ``defer_postings`` the new files enter the inverted index only at :meth:`post_pending`
        (much cheaper for many batches: one sorted pass instead of one per batch).
        """
        if not records:
            return np.zeros(0, np.int64)
        with self.atomic() as c:
            paths = [r.path for r in records]
            old = self._rows_for_paths(paths)
            existing = {p: v[0] for p, v in old.items()}
            old_ids = [existing[p] for p in paths if p in existing]
            if old_ids:
                self._delete_postings(old_ids)
            next_id = self._next_file_id(c)
            ids = np.empty(len(records), np.int64)
            new_rows: list[tuple[Any, ...]] = []
            upd_rows: list[tuple[Any, ...]] = []
            for i, r in enumerate(records):
                err = storable_text(r.error) if r.error else r.error
                values: tuple[Any, ...] = (
                    to_signed64(r.device),  # st_ino may use all 64 bits (overlayfs xino, NFS); SQLite's are signed
                    to_signed64(r.inode),
                    r.size,
                    r.mtime_ns,
                    None if err else int(r.is_text),
                    None if err else r.encoding,
                    None if err else r.checksum,
                    None if err else r.partial,
                    None if err else r.content_hash,
                    None if err else to_signed64(int(r.simhash)),
                    0 if err else int(r.fps.size),
                    0 if err else int(r.units),
                    ALGORITHM_VERSION,
                    err,
                    run_id,
                    r.ctime_ns,
                    r.format or ("text" if r.is_text else "binary"),
                    r.extractor,
                    r.extractor_version,
                )
                fid = existing.get(r.path)
                if fid is None:
                    fid = next_id
                    next_id += 1
                    new_rows.append((fid, r.path, *values))
                else:
                    upd_rows.append((fid, r.path, *values))
                ids[i] = fid
            # Each row with its check (FILE_COLUMNS order), for the INSERT and the UPDATE statements.
            new_rows = [(*row, k) for row, k in zip(new_rows, _checks.file_checks(new_rows).tolist())]
            upd_rows = [(*row[2:], k, row[0]) for row, k in zip(upd_rows, _checks.file_checks(upd_rows).tolist())]
            self._add_to_digest(
                [row[-1] for row in new_rows] + [row[-2] for row in upd_rows],
                [old[p][1] or 0 for p in paths if p in old],
            )
            if new_rows:
                self._insert_rows(
                    "INSERT INTO files(id, path, device, inode, size, mtime_ns, is_text, encoding, checksum, partial,"
                    " content_hash, simhash, fp_count, units, algorithm_version, error, run_id, ctime_ns, format,"
                    " extractor, extractor_version, row_check)",
                    22,
                    [v for row in new_rows for v in row],
                )
                meta_set(c, "next_file_id", next_id)
            if upd_rows:
                c.executemany(
                    "UPDATE files SET device=?, inode=?, size=?, mtime_ns=?, is_text=?, encoding=?, checksum=?,"
                    " partial=?, content_hash=?, simhash=?, fp_count=?, units=?, algorithm_version=?, error=?,"
                    " run_id=?, ctime_ns=?, format=?, extractor=?, extractor_version=?, row_check=? WHERE id=?",
                    upd_rows,
                )
            ok = [i for i, r in enumerate(records) if not r.error]
            bad_ids = [int(ids[i]) for i, r in enumerate(records) if r.error]
            if bad_ids:
                c.executemany("DELETE FROM fingerprints WHERE file_id = ?", [(i,) for i in bad_ids])
                c.executemany("DELETE FROM unposted WHERE file_id = ?", [(i,) for i in bad_ids])
            if ok:
                arrays = [np.ascontiguousarray(records[i].fps, dtype="<u8") for i in ok]
                ok_ids = ids[ok].tolist()
                flat: list[Any] = []
                big: list[tuple[Any, ...]] = []
                fp_check, m_check = _checks.fingerprint_check, _checks.meta_check
                for fid, i, a in zip(ok_ids, ok, arrays):
                    n_roll = int(records[i].n_rolling)
                    blob = memoryview(a)
                    spans, places = _split_meta(records[i].meta, a.size)
                    row = (
                        fid, n_roll, blob, fp_check(fid, n_roll, blob),
                        spans, None if spans is None else m_check(fid, _checks.SPANS, spans),
                        places, None if places is None else m_check(fid, _checks.PLACES, places),
                    )  # fmt: skip
                    if a.nbytes > _BIG_BLOB:
                        big.append(row)
                    else:
                        flat += row
                # Fewer rows a statement for blobs: a cached statement keeps copies of its last bound ones.
                self._insert_rows(f"INSERT OR REPLACE INTO fingerprints({_FP_COLUMNS})", 8, flat,
                                  _BLOB_ROWS_PER_INSERT)
                # One at a time: SQLite copies each bound blob and a cached statement keeps its last
                # bindings, so a 500-row statement of large files' blobs held them all after the commit
                # (few-large scan: +90 MB peak RSS of the writer).
                c.executemany(f"INSERT OR REPLACE INTO fingerprints({_FP_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)", big)
                if defer_postings:
                    self._insert_rows("INSERT OR IGNORE INTO unposted(file_id)", 1, ok_ids)
                else:
                    self._insert_postings(ids[ok], arrays, [posting_spans(records[i]) for i in ok])
            _results.bump(c)
        return ids

    def _insert_rows(self, head: str, ncols: int, flat: list[Any], rows_per: int | None = None) -> None:
        """Run ``head VALUES (...), (...), ...`` over ``flat`` (row-major, ``ncols`` values a row) with
        ``rows_per`` (default :data:`_ROWS_PER_INSERT`) rows a statement, the rows left over one a
        statement.  So each table uses two statement shapes, prepared once and cached by the
        connection: a shape per leftover count would fill the cache with statements that each keep
        their last bound values (SQLite copies bound blobs) long after the commit."""
        c = self._conn
        n = len(flat) // ncols
        if not n:
            return
        per = rows_per or _ROWS_PER_INSERT
        per = max(1, min(per, c.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // ncols))
        row = "(" + ",".join("?" * ncols) + ")"
        full = n - n % per
        if full:
            stmt = f"{head} VALUES {','.join([row] * per)}"
            step = per * ncols
            for s in range(0, full * ncols, step):
                c.execute(stmt, flat[s : s + step])
        if full < n:
            rest = flat[full * ncols :]
            c.executemany(f"{head} VALUES {row}", [rest[k : k + ncols] for k in range(0, len(rest), ncols)])

    def _next_file_id(self, c: sqlite3.Connection) -> int:
        """The id for the next new file: never one a removed file had (``meta.next_file_id`` keeps the
        high-water mark), so nothing kept under an id (a scan's postings waiting in memory) can
        land on another file's row when a file is removed by another process meanwhile."""
        top = (c.execute("SELECT max(id) FROM files").fetchone()[0] or 0) + 1
        try:
            value = meta_get(c, "next_file_id", self.checked)
            return max(top, int(value)) if value is not None else top
        except (TypeError, ValueError, Mismatch):
            return top  # (a damaged mark: the ids above it are still never reused within this scan)

    def _add_to_digest(self, plus: Sequence[int], minus: Sequence[int] = ()) -> None:
        """Keep ``meta.files_digest`` the sum of the rows' checks: add the checks of rows written, take
        away those of rows replaced or removed (in the caller's transaction)."""
        if not (plus or minus):
            return
        c = self._conn
        total = meta_get(c, "files_digest")
        meta_set(c, "files_digest", _checks.add_digest(int(total or 0), plus, minus))

    def _insert_postings_sorted(self, fp: np.ndarray, owner: np.ndarray) -> None:
        """``INSERT OR IGNORE`` these (fp, file id) pairs, already in key order (the B-tree is walked once)."""
        for s in range(0, fp.size, _POST_SLICE):
            flat = np.column_stack((fp[s : s + _POST_SLICE], owner[s : s + _POST_SLICE])).ravel().tolist()
            self._insert_rows("INSERT OR IGNORE INTO postings(fp, file_id)", 2, flat)

    def posted_pairs(
        self, ids: Sequence[int], arrays: list[np.ndarray], spans: Sequence[np.ndarray | None],
    ) -> tuple[np.ndarray, np.ndarray]:
        """The posted (fp as int64, file id) pairs of these files' fingerprint arrays (one array per id,
        as stored; ``spans``: each one's dominance spans when it is a text file's, see
        :func:`posting_spans`), sorted by value (ties in file order); what :meth:`posting_job` takes as
        ``pairs``.
        Sorting here, a commit's worth at a time, lets a job of many commits merge sorted runs (~5x
        cheaper than sorting 2.5 M pairs at once, 0.25 s that kept the scan from collecting its workers'
        results)."""
        fp, owner = self._posted_pairs(ids, arrays, spans)
        order = np.argsort(fp, kind="stable")
        return fp[order], owner[order]

    def _posted_pairs(
        self, ids: Sequence[int], arrays: list[np.ndarray], spans: Sequence[np.ndarray | None],
        rule: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The posted (fp as int64, file id) pairs of these files' fingerprint arrays (``spans``: as
        :meth:`posted_pairs` takes them) under ``rule`` (None: the index's)."""
        lens = np.fromiter((a.size for a in arrays), np.int64, len(arrays))
        if not arrays or int(lens.sum()) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        allv = np.concatenate(arrays).astype(np.uint64, copy=False)
        alld = None
        if any(d is not None for d in spans):
            # A binary file's spans (all 128) post nothing more: zeros stand for them.
            alld = np.concatenate([np.zeros(a.size, np.uint8) if d is None else d for a, d in zip(arrays, spans)])
        m = _postings.posted_mask(allv, self.posting_shift if rule is None else rule, alld)
        return allv[m].view(np.int64), np.repeat(np.asarray(ids, np.int64), lens)[m]

    def _insert_postings(
        self, ids: Sequence[int], arrays: list[np.ndarray], spans: Sequence[np.ndarray | None],
    ) -> None:
        fp, owner = self._posted_pairs(ids, arrays, spans)
        self._insert_pairs(fp, owner)

    def _stored_posted_pairs(self, ids: list[int], rule: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The posted pairs (``_posted_pairs``, under ``rule``; None: the index's) of these files' stored
        sets, read back after their checks (a failed one raises :class:`IndexDamaged`)."""
        rows = self._conn.execute(_POSTING_ROWS + f" WHERE f.file_id IN ({','.join('?' * len(ids))})", ids).fetchall()
        try:
            _verify_blobs([r[:4] for r in rows])
            spans = self._row_spans(rows)
        except Mismatch as e:
            raise _damage_found(self.path, e) from e
        return self._posted_pairs([r[0] for r in rows], [np.frombuffer(r[2], "<u8") for r in rows], spans, rule)

    def _row_spans(self, rows: Sequence[tuple[Any, ...]]) -> list[np.ndarray | None]:
        """The spans that post (``posted_pairs``) of :data:`_UNPOSTED_ROWS`-shaped rows (file id, rolling
        count, blob, check, spans, their check, is_text): a text file's spans after their check, None
        for a binary file, a file without its blob or spans (an index older than schema 8)."""
        out: list[np.ndarray | None] = []
        checked = [(r[0], r[4], r[5], len(r[2]) // 8) for r in rows if r[2] is not None and r[4] is not None and r[6]]
        if checked and self.checked:
            _verify_meta(checked, _checks.SPANS)
        for r in rows:
            ok = r[2] is not None and r[4] is not None and r[6] and len(r[4]) == len(r[2]) // 8
            out.append(np.frombuffer(r[4], np.uint8) if ok else None)
        return out

    def _insert_pairs(self, fp: np.ndarray, owner: np.ndarray) -> None:
        # Sorted by key, the B-tree is walked once in order; Python ints are made a slice at a time.
        order = np.lexsort((owner, fp))
        self._insert_postings_sorted(fp[order], owner[order])

    @_sql_errors
    def pending_postings(self) -> int:
        """Files whose fingerprints are stored but not yet in the inverted index."""
        return int(self._conn.execute("SELECT count(*) FROM unposted").fetchone()[0])

    @_sql_errors
    def post_pending(self, max_values: int = 2_000_000, on_progress: Callable[[int, int], None] | None = None) -> int:
        """Add the deferred files to the inverted index in sorted passes, each one transaction of at
        most ``max_values`` postings (~16 bytes each in memory; fingerprint blobs are read 4,096 files at
        a time and only their posted values kept).  Returns the number of files posted.

        ``on_progress(done, total)`` is called after each pass.
        """
        c = self._conn
        total = self.pending_postings()
        done = 0
        fetch = max(1, min(4096, max_values // 100))  # (postings a file: ~25 by the sample, ~90 by the rule)
        while True:
            with self.atomic():
                ids: list[int] = []
                fps: list[np.ndarray] = []
                owners: list[np.ndarray] = []
                n = 0
                cur = c.execute(_UNPOSTED_ROWS)
                sub: list[int] = []
                arrays: list[np.ndarray] = []
                held = 0
                rows: list[tuple[Any, ...]] = []
                while n < max_values:
                    row = cur.fetchone()
                    if row is not None:
                        rows.append(row)
                        sub.append(row[0])
                        arrays.append(np.frombuffer(row[2], "<u8") if row[2] is not None else np.zeros(0, np.uint64))
                        held += arrays[-1].nbytes
                    # Keep only the posted values of every few files (or few MB of blobs): bounded memory.
                    if row is None or len(sub) >= fetch or held >= _BLOB_HOLD:
                        _verify_blobs([r[:4] for r in rows if r[2] is not None])
                        spans = self._row_spans(rows)
                        rows = []
                        fp, owner = self._posted_pairs(sub, arrays, spans)
                        ids.extend(sub)
                        fps.append(fp)
                        owners.append(owner)
                        n += fp.size
                        sub, arrays, held = [], [], 0
                    if row is None:
                        break
                cur.close()
                if not ids:
                    return done
                if fps:
                    self._insert_pairs(np.concatenate(fps), np.concatenate(owners))
                _delete_unposted(c, ids)
            done += len(ids)
            if on_progress is not None:
                on_progress(done, total)

    def _delete_postings(self, ids: Iterable[int]) -> None:
        """Remove these files' postings (and take them off ``unposted``); a damaged blob's file has its
        fingerprints dropped too (the caller replaces or removes them anyway)."""
        c = self._conn
        rows: list[tuple[int, int]] = []
        damaged_ids: list[int] = []
        for chunk in _chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            # A file still waiting in ``unposted`` may have part of its postings (a posting job stopped
            # half-way by a crash), so its postings are deleted like any other's.
            c.execute(f"DELETE FROM unposted WHERE file_id IN ({marks})", chunk)
            for fid, n_roll, blob, chk, spans, schk, is_text in c.execute(
                    _POSTING_ROWS + f" WHERE f.file_id IN ({marks})", chunk):
                if chk != _checks.fingerprint_check(fid, n_roll, blob):
                    damaged_ids.append(fid)  # its values are unknown: its postings are found by file
                    continue
                values = np.frombuffer(blob, "<u8")
                # A binary file posted its sample, a text its values of span 128 too; a text whose spans
                # are missing or fail their check (or a file without a row to say which) every value it
                # may have posted: deleting a pair that is not there costs a seek, nothing more.
                ok = (is_text and spans is not None and len(spans) == values.size
                      and (not self.checked or schk == _checks.meta_check(fid, _checks.SPANS, spans)))
                if ok:
                    d = np.frombuffer(spans, np.uint8)
                elif is_text is None or is_text:
                    d = np.full(values.size, _postings.SPAN_POSTED, np.uint8)
                else:
                    d = None
                vals = _postings.posted(values, self.posting_shift, d)
                rows.extend((v, fid) for v in vals.view(np.int64).tolist())
        if rows:
            c.executemany("DELETE FROM postings WHERE fp = ? AND file_id = ?", rows)
        self._forget_fingerprints(damaged_ids)

    def posting_job(
        self, ids: Sequence[int], slice_rows: int = 40_000,
        pairs: tuple[list[np.ndarray], list[np.ndarray]] | None = None,
    ) -> PostingJob:
        """Post these (deferred) files in small steps that a caller interleaves with other work;
        see :class:`PostingJob`.  ``pairs``: these files' posted pairs as :meth:`posted_pairs` made them
        from the arrays just written (saves reading the blobs back), as lists of such runs (values,
        file ids) that the job empties as it joins them; None reads them from the index."""
        return PostingJob(self, list(ids), slice_rows, pairs)

    @_sql_errors
    def ids_for_paths(self, paths: Sequence[bytes]) -> dict[bytes, int]:
        """path -> file id of those of ``paths`` (raw bytes) that are indexed."""
        return self._ids_for_paths(paths)

    def _ids_for_paths(self, paths: Sequence[bytes]) -> dict[bytes, int]:
        return {p: v[0] for p, v in self._rows_for_paths(paths).items()}

    def _rows_for_paths(self, paths: Sequence[bytes]) -> dict[bytes, tuple[int, int | None]]:
        """path -> (id, stored row check) of those of ``paths`` that are indexed."""
        out: dict[bytes, tuple[int, int | None]] = {}
        for chunk in _chunks(list(paths)):
            q = f"SELECT path, id, row_check FROM files WHERE path IN ({','.join('?' * len(chunk))})"
            out.update((p, (i, k)) for p, i, k in self._conn.execute(q, chunk))
        return out

    @_sql_errors
    def remove_ids(self, ids: Sequence[int]) -> int:
        """Forget files by id (rows, fingerprints, postings) in one transaction; returns how many."""
        ids = [int(i) for i in ids]
        if not ids:
            return 0
        with self.atomic() as c:
            self._delete_postings(ids)
            c.executemany("DELETE FROM fingerprints WHERE file_id = ?", [(i,) for i in ids])
            gone: list[int] = []
            for chunk in _chunks(ids):
                q = f"SELECT row_check FROM files WHERE id IN ({','.join('?' * len(chunk))})"
                gone.extend(k or 0 for (k,) in c.execute(q, chunk))
            before = c.total_changes
            c.executemany("DELETE FROM files WHERE id = ?", [(i,) for i in ids])
            removed = c.total_changes - before
            if removed:
                self._add_to_digest((), gone)
                _results.bump(c)
            return removed

    @_sql_errors
    def remove_paths(self, paths: Sequence[bytes | str | os.PathLike[str]]) -> int:
        """Forget these paths (e.g. after the GUI moved them to the trash); returns how many were indexed."""
        raw = [os.fsencode(p) for p in paths]
        with self.atomic():
            ids = list(self._ids_for_paths(raw).values())
            return self.remove_ids(ids)

    @_sql_errors
    def rename_files(self, moves: Sequence[tuple[int, bytes, int, int, int | None]]) -> None:
        """Give indexed files a new path (``(id, new_path, device, inode, ctime_ns)``: a rename changes the
        ctime) without touching their content rows."""
        if moves:
            with self.atomic() as c:
                self._verify_rows([m[0] for m in moves])  # (a damaged row must not get a check anew)
                c.executemany(
                    "UPDATE files SET path = ?, device = ?, inode = ?, ctime_ns = ? WHERE id = ?",
                    [(p, to_signed64(d), to_signed64(i), ct, fid) for fid, p, d, i, ct in moves],
                )
                self._reseal_files([m[0] for m in moves])
                _results.bump(c)

    def _verify_rows(self, ids: Sequence[int]) -> None:
        """Raise :class:`Mismatch` when a row of these files fails its check."""
        bad: list[int] = []
        for chunk in _chunks(list(ids)):
            q = f"SELECT {_checks.FILE_COLUMNS_SQL}, row_check FROM files WHERE id IN ({','.join('?' * len(chunk))})"
            rows = self._conn.execute(q, chunk).fetchall()
            got = _checks.file_checks(rows)
            bad += [r[0] for r, k in zip(rows, got.tolist()) if r[-1] != k]
        if bad:
            raise Mismatch(_files_fail(len(bad)), bad)

    def _reseal_files(self, ids: Sequence[int]) -> None:
        """Recompute the checks of rows this transaction changed in place (verified before the change)."""
        c = self._conn
        plus: list[int] = []
        minus: list[int] = []
        for chunk in _chunks(list(ids)):
            q = f"SELECT {_checks.FILE_COLUMNS_SQL}, row_check FROM files WHERE id IN ({','.join('?' * len(chunk))})"
            rows = c.execute(q, chunk).fetchall()
            new = _checks.file_checks(rows).tolist()
            c.executemany("UPDATE files SET row_check = ? WHERE id = ?", zip(new, (r[0] for r in rows)))
            plus += new
            minus += [r[-1] or 0 for r in rows]
        self._add_to_digest(plus, minus)

    @_sql_errors
    def begin_run(self, roots: Sequence[bytes], options: dict[str, Any]) -> int:
        """Record a new scan run (call with the scan lock held); returns its id.

        Runs still marked "running" belong to scans that died (the lock is ours now): they are
        marked "killed", their finished batches stay in the index.
        """
        with self.atomic() as c:
            # (A damaged row stays damaged: only the rows that pass their check are changed and sealed again.)
            dead = [r for r in c.execute("SELECT rowid FROM runs WHERE status = 'running'").fetchall()
                    if r[0] not in _checks.bad_rows(c, "runs", "WHERE rowid = ?", r)]
            c.executemany("UPDATE runs SET status = 'killed' WHERE rowid = ?", dead)
            for r in dead:
                _checks.seal_rows(c, "runs", "WHERE rowid = ?", r)
            # Problems are re-found by every scan: keep those of the last KEEP_RUNS runs only.
            _checks.delete_rows(
                c, "problems", "WHERE run_id <= (SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (KEEP_RUNS - 1,),
            )
            cur = c.execute(
                "INSERT INTO runs(started_at, status, roots, options) VALUES (?, 'running', ?, ?)",
                (time.time(), json.dumps([os.fsdecode(r) for r in roots]), json.dumps(options, sort_keys=True)),
            )
            run_id = int(cur.lastrowid or 0)
            _checks.seal_rows(c, "runs", "WHERE id = ?", (run_id,))
            return run_id

    @_sql_errors
    def finish_run(self, run_id: int, status: str, counts: dict[str, float]) -> None:
        cols = ("files_seen", "files_read", "files_unchanged", "files_removed", "bytes_read", "problems", "elapsed_s")
        with self.atomic() as c:
            if _checks.bad_rows(c, "runs", "WHERE id = ?", (run_id,)):
                return  # damaged since it began: left to the next scan's check, which drops it
            c.execute(
                f"UPDATE runs SET status = ?, finished_at = ?, {', '.join(f'{k} = ?' for k in cols)} WHERE id = ?",
                (status, time.time(), *(counts.get(k, 0) for k in cols), run_id),
            )
            _checks.seal_rows(c, "runs", "WHERE id = ?", (run_id,))
            gen = _results.generation(c, self.checked)
            if gen is not None:  # (see files_needing_rescan)
                meta_set(c, "stale_files", f"{ALGORITHM_VERSION} {gen} {self._count_stale()}", self.checked)

    def _count_stale(self) -> int:
        return int(self._conn.execute(
            "SELECT count(*) FROM files WHERE algorithm_version != ?", (ALGORITHM_VERSION,)).fetchone()[0])

    @_sql_errors
    def files_needing_rescan(self) -> int:
        """How many indexed files an older simscan fingerprinted (left out of results until rescanned).
        The count the last scan recorded at its end (``meta.stale_files``: this simscan's algorithm
        version, the files' generation then, the count) while no change came since; else counted (a
        pass over ``files``: ~0.3 s a million files, which every ``pairs``/``query`` paid before)."""
        with self._reading():
            c = self._conn
            try:
                kept = (meta_get(c, "stale_files", self.checked) or "").split()
            except Mismatch:
                kept = []
            gen = _results.generation(c, self.checked)
            if len(kept) == 3 and gen is not None and kept[:2] == [str(ALGORITHM_VERSION), str(gen)]:
                return int(kept[2])
            return self._count_stale()

    @_sql_errors
    def problems_kept(self, run_id: int, keep: Callable[[bytes], bool]) -> list[tuple[bytes, str]]:
        """``(path, reason)`` of the problems of each current file that run ``run_id`` did not read (it
        found them unchanged): the lines of the latest other scan that has any for the path, since the
        scan that last read the file (a scan carries them over, so they outlive the pruning of old
        scans), for the paths ``keep`` accepts, in the order they were met."""
        rows = self._conn.execute(
            "SELECT p.path, p.reason, p.run_id FROM problems p JOIN files f ON f.path = p.path "
            "WHERE p.run_id >= f.run_id AND p.run_id <> ? AND f.run_id <> ? ORDER BY p.id", (run_id, run_id),
        ).fetchall()
        latest: dict[bytes, int] = {}
        for p, _r, rid in rows:
            latest[bytes(p)] = max(rid, latest.get(bytes(p), rid))
        return [(bytes(p), r.removesuffix(KEPT_PROBLEM)) for p, r, rid in rows
                if rid == latest[bytes(p)] and keep(bytes(p))]

    def add_problems(self, run_id: int, problems: Sequence[tuple[bytes, str]]) -> None:
        if problems:
            with self.atomic() as c:
                rows = [(run_id, bytes(p), storable_text(r)) for p, r in problems]
                chks = [_checks.row_check("problems", *row) for row in rows]
                c.executemany(
                    "INSERT INTO problems(run_id, path, reason, chk) VALUES (?, ?, ?, ?)",
                    [(*row, k) for row, k in zip(rows, chks)],
                )
                _checks.add_to_table_digest(c, "problems", chks)

    # ----------------------------------------------------------------- checks
    @_sql_errors
    def check(self, integrity: bool = False) -> Any:
        """Verify all of the index (see :mod:`simscan.index.verify`) without changing it: a
        :class:`simscan.index.verify.CheckReport`.  An index without checks (older than schema 7,
        opened read-only) gets SQLite's own check only."""
        from simscan.index import verify

        if not self.checked:
            pragma = "integrity_check" if integrity else "quick_check"
            msgs = [r[0] for r in self._conn.execute(f"PRAGMA {pragma}")]
            return verify.CheckReport(full=True, structure=[] if msgs == ["ok"] else [f"{pragma}: {m}" for m in msgs])
        return verify.check(self, structure=True, integrity=integrity)

    @_sql_errors
    def check_for_scan(self) -> tuple[Any, list[tuple[bytes, str]]]:
        """The check a scan runs before walking, and the repair of what it found (the scan lock
        held): the report and (path, why) of each file forgotten so that the scan reads it again.
        Raises IndexCorrupt when the damage cannot be repaired (see :mod:`simscan.index.verify`)."""
        from simscan.index import verify

        return verify.check_for_scan(self)

    # ----------------------------------------------------------------- reads
    @_sql_errors
    def identities_under(
        self, roots: Sequence[bytes]
    ) -> dict[bytes, tuple[bytes, int, int, int, int, int, int, int | None]]:
        """Every indexed file at or below one of ``roots`` (absolute, normalised byte paths):
        path -> (path, id, device, inode, size, mtime_ns, current, ctime_ns) where ``current`` is 1
        when the row has fingerprints of this algorithm version, no error, and was read by a reader of
        the current version (``extract.current_versions``: a new document reader re-reads its format's
        files only).  The rows as SQLite returns them: a rescan of 100 k unchanged files spends most of
        its time here and in the walk."""
        versions = current_versions()
        q = (
            "SELECT path, id, device, inode, size, mtime_ns, (error IS NULL AND algorithm_version = ?"
            f" AND extractor_version IN ({','.join('?' * len(versions))})), ctime_ns FROM files WHERE {_UNDER}"
        )
        out: dict[bytes, tuple[bytes, int, int, int, int, int, int, int | None]] = {}
        for root in roots:
            # A comprehension: ~40 % cheaper than dict.update of a generator (100 k rows: ~0.1 s).
            rows = {r[0]: r for r in self._conn.execute(q, (ALGORITHM_VERSION, *versions, *_under(root)))}
            if out:
                out.update(rows)
            else:
                out = rows
        for p, r in out.items():
            if r[2] < 0 or r[3] < 0:  # stored signed: give back st_dev / st_ino as os.stat has them
                out[p] = (r[0], r[1], r[2] & _U64, r[3] & _U64, *r[4:])
        return out

    @_sql_errors
    def count_under(self, roots: Sequence[bytes]) -> int:
        """How many indexed files are at or below ``roots`` (as :meth:`identities_under`), counted on
        the path index alone (~10 ms per 100 k files)."""
        q = f"SELECT count(*) FROM files WHERE {_UNDER}"
        return sum(self._conn.execute(q, _under(root)).fetchone()[0] for root in roots)

    @_sql_errors
    def paths_for_inodes(self, keys: Sequence[tuple[int, int]]) -> list[tuple[tuple[int, int], bytes]]:
        """Indexed rows (any state) of these (device, inode) pairs: ``((device, inode), path)``, by id."""
        by_dev: dict[int, list[int]] = {}
        for dev, ino in keys:
            by_dev.setdefault(to_signed64(int(dev)), []).append(to_signed64(int(ino)))
        rows: list[tuple[int, int, int, bytes]] = []
        for dev, inos in by_dev.items():
            for chunk in _chunks(sorted(set(inos))):
                q = f"SELECT id, device, inode, path FROM files WHERE device = ? AND inode IN ({','.join('?' * len(chunk))})"
                rows.extend(self._conn.execute(q, (dev, *chunk)).fetchall())
        rows.sort()
        return [((d & _U64, i & _U64), p) for _, d, i, p in rows]

    _FILE_COLS = (
        "id, path, size, mtime_ns, is_text, CAST(encoding AS BLOB), checksum, partial, content_hash, simhash, fp_count, units,"
        " device, inode"
    )

    @_sql_errors
    def files(self) -> FileTable:
        """Snapshot of the files with current fingerprints (no error, current algorithm version).

        With checks (schema 7 on) every row of the table is verified, those left out too (a damaged
        ``error`` or version must not hide a file), and the sum of their checks against
        ``meta.files_digest`` (a row lost or added); raises :class:`IndexDamaged` otherwise.
        1,000,000 rows: ~3.3 s unchecked, ~5 s checked.  Built :data:`_TABLE_ROWS` rows at a time, so that
        only one batch of rows is held beside the table (all of them at once peaked at ~1.1 GB for
        1,000,000 files, twice the table)."""
        if not self.checked:
            cur = self._conn.execute(
                f"SELECT {self._FILE_COLS} FROM files WHERE error IS NULL AND algorithm_version = ? ORDER BY id",
                (ALGORITHM_VERSION,),
            )
            parts = []
            while batch := cur.fetchmany(_TABLE_ROWS):
                parts.append(_table(batch))
                del batch
            return _joined(parts)
        with self._reading():
            cur = self._conn.execute(f"SELECT {_CHECKED_COLS} FROM files ORDER BY id")
            table, total = self._verified_table(cur)
            if total != int(meta_get(self._conn, "files_digest") or 0):
                raise Mismatch("the files table does not hold the rows it should (some were lost or added)")
        return table

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """One read transaction around several statements (unless the caller holds one), so that
        they see one state of the index while a scan commits."""
        c = self._conn
        if c.in_transaction:
            yield
            return
        c.execute("BEGIN")
        try:
            yield
        finally:
            if c.in_transaction:
                c.execute("ROLLBACK")  # nothing was written; ends the read snapshot

    def _verified_rows(self, cur: sqlite3.Cursor) -> tuple[list[tuple[Any, ...]], int]:
        """The current rows (no error, this algorithm version) of a cursor over ``_CHECKED_COLS``, after
        verifying every row's check, and the digest of all rows read."""
        rows: list[tuple[Any, ...]] = []
        total = self._verify_batches(cur, rows.extend)
        return rows, total

    def _verified_table(self, cur: sqlite3.Cursor) -> tuple[FileTable, int]:
        """:meth:`_verified_rows` as a FileTable, built a batch at a time."""
        parts: list[FileTable] = []
        total = self._verify_batches(cur, lambda rows: parts.append(_table(rows, _CHECKED_POS)))
        return _joined(parts), total

    def _verify_batches(self, cur: sqlite3.Cursor, take: Callable[[list[tuple[Any, ...]]], Any]) -> int:
        """Verifies every row's check of a cursor over ``_CHECKED_COLS``, gives the current rows (no error,
        this algorithm version) of each batch to ``take``, and returns the digest of all rows read;
        raises :class:`Mismatch` once all are read when some fail."""
        total = 0
        bad: list[int] = []
        err, ver = (_checks.FILE_COLUMNS.index(c) for c in ("error", "algorithm_version"))
        chk = len(_checks.FILE_COLUMNS)
        while batch := cur.fetchmany(_TABLE_ROWS):
            stored = np.fromiter((r[chk] for r in batch), np.int64, len(batch))
            got = _checks.file_checks(batch)
            if not np.array_equal(stored, got):
                bad += [batch[k][0] for k in np.flatnonzero(stored != got).tolist()]
            total = _checks.add_digest(total, stored)
            take([r for r in batch if r[err] is None and r[ver] == ALGORITHM_VERSION])
            del batch
        if bad:
            raise Mismatch(_files_fail(len(bad)), bad)
        return total

    @_sql_errors
    def files_by_ids(self, ids: np.ndarray | Sequence[int]) -> FileTable:
        """Like :meth:`files` for just these ids (ascending; unknown, failed or stale ids left out),
        each row verified."""
        want = np.unique(np.asarray(ids, np.int64)).tolist()
        rows: list[tuple[Any, ...]] = []
        for chunk in _chunks(want):
            marks = ",".join("?" * len(chunk))
            if self.checked:
                q = f"SELECT {_CHECKED_COLS} FROM files WHERE id IN ({marks})"
                rows += self._verified_rows(self._conn.execute(q, chunk))[0]
            else:
                q = f"SELECT {self._FILE_COLS} FROM files WHERE error IS NULL AND algorithm_version = ? AND id IN ({marks})"
                rows.extend(self._conn.execute(q, (ALGORITHM_VERSION, *chunk)).fetchall())
        rows.sort(key=lambda r: r[0])
        return _table(rows, _CHECKED_POS if self.checked else None)

    @_sql_errors
    def file_count(self) -> int:
        """Indexed files usable for similarity (same filter as :meth:`files`)."""
        q = "SELECT count(*) FROM files WHERE error IS NULL AND algorithm_version = ?"
        return int(self._conn.execute(q, (ALGORITHM_VERSION,)).fetchone()[0])

    @_sql_errors
    def fingerprints(
        self, file_ids: np.ndarray | Sequence[int] | None = None, kind: str = "rolling",
        spans: list[np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR of fingerprints: ``(ids int64[n], offsets int64[n+1], values uint64[m])``.

        ``ids`` ascending (files without stored fingerprints are left out); file i's sorted distinct
        values are ``values[offsets[i]:offsets[i+1]]``.  ``kind``: "rolling", "anchored" or "all".
        ``spans`` (kind "all"): receives each value's dominance span (uint8, aligned with the values),
        read in the same pass (as :meth:`spans`).
        """
        if kind not in ("rolling", "anchored", "all"):
            raise ValueError(f"kind must be rolling, anchored or all, not {kind!r}")
        if spans is not None and kind != "all":
            raise ValueError("spans come with kind 'all'")
        base, key, with_spans = self._fingerprint_rows(spans is not None)
        span_parts: list[bytes] = []
        if file_ids is None:
            cursors: Iterable[sqlite3.Cursor] = [self._conn.execute(f"{base} ORDER BY {key}", (ALGORITHM_VERSION,))]
        else:
            want = np.unique(np.asarray(file_ids, np.int64)).tolist()
            cursors = (
                # Ascending chunks of ascending ids, each in id order: the ids come out ascending.
                self._conn.execute(
                    f"{base} AND {key} IN ({','.join('?' * len(chunk))}) ORDER BY {key}",
                    (ALGORITHM_VERSION, *chunk),
                )
                for chunk in _chunks(want)
            )
        # Rows are taken a few thousand at a time and their blobs joined per batch: one fetchall of
        # 200,000 rows (100 MB of blobs), joined at once and freed at once, held the GIL for ~50 ms
        # at a time (a stall of the window's event loop while it loads).  Reading everything, the
        # batches go straight into one array sized from the files' fingerprint counts, so the values
        # are not held twice (a list of blobs, then the array: 52.7 M fingerprints peaked at twice
        # their 420 MB).  Should the counts disagree with the blobs (another writer between the two
        # reads, outside a transaction), what does not fit is kept aside and joined at the end.
        cap = self._fingerprint_count_hint() if file_ids is None and kind == "all" else 0
        values = np.empty(cap, "<u8")
        out = memoryview(values).cast("B")
        pos = 0
        id_parts: list[np.ndarray] = []
        len_parts: list[np.ndarray] = []
        blobs: list[bytes] = []  # what does not fit in ``values``, in order
        for cur in cursors:
            while batch := cur.fetchmany(4096):
                if self.checked:
                    _verify_blobs(batch)
                if with_spans:
                    span_parts.append(self._batch_spans(batch))
                parts = _kind_parts(batch, kind)
                id_parts.append(np.fromiter((r[0] for r in batch), np.int64, len(batch)))
                len_parts.append(np.fromiter((len(p) // 8 for p in parts), np.int64, len(batch)))
                blob = b"".join(parts)
                if not blobs and pos + len(blob) <= len(out):
                    out[pos : pos + len(blob)] = blob
                    pos += len(blob)
                else:
                    blobs.append(blob)
                del batch, parts, blob
        ids = np.concatenate(id_parts) if id_parts else np.zeros(0, np.int64)
        lens = np.concatenate(len_parts) if len_parts else np.zeros(0, np.int64)
        offsets = np.zeros(ids.size + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        del out
        if blobs or pos < values.nbytes:
            full = np.empty(int(offsets[-1]), "<u8")
            full_b = memoryview(full).cast("B")
            full_b[:pos] = memoryview(values).cast("B")[:pos]
            del values
            for blob in blobs:
                full_b[pos : pos + len(blob)] = blob
                pos += len(blob)
            del blobs, full_b
            values = full
        if spans is not None:
            spans[:] = [np.frombuffer(b"".join(span_parts), np.uint8) if with_spans
                        else np.full(values.size, 255, np.uint8)]
        return ids, offsets, values.astype(np.uint64, copy=False)

    @_sql_errors
    def spans(self, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The dominance span (uint8) of every value of a CSR :meth:`fingerprints` gave with kind "all"
        (``ids``, ``offsets``), aligned with its values.  Raises :class:`Mismatch` (damage) when a file's
        spans are missing, of the wrong length or fail their check."""
        ids = np.asarray(ids, np.int64)
        offsets = np.asarray(offsets, np.int64)
        if self.version < _SPANS_VERSION:  # an older index read as it is: its values count at every window
            return np.full(int(offsets[-1]) if offsets.size else 0, 255, np.uint8)
        out = np.empty(int(offsets[-1]) if offsets.size else 0, np.uint8)
        at = {int(f): k for k, f in enumerate(ids.tolist())}
        seen: set[int] = set()
        for chunk in _chunks(ids.tolist()):
            rows = self._conn.execute(
                f"SELECT file_id, CAST(spans AS BLOB), schk FROM fingerprints WHERE file_id IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
            rows = [(fid, blob, chk, int(offsets[at[fid] + 1] - offsets[at[fid]])) for fid, blob, chk in rows]
            if self.checked:
                _verify_meta(rows, _checks.SPANS)
            for fid, blob, _chk, n in rows:
                if blob is None or len(blob) != n:
                    raise Mismatch(_blobs_fail(1), [fid])
                k = at[fid]
                out[offsets[k] : offsets[k + 1]] = np.frombuffer(blob, np.uint8)
                seen.add(fid)
        if len(seen) != ids.size:
            missing = sorted(set(at) - seen)
            raise Mismatch(_blobs_fail(len(missing)), missing)
        return out

    @_sql_errors
    def stored_sets(self, file_ids: np.ndarray | Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, FingerprintMeta]:
        """For a pair's evidence (``similarity.evidence``): ``(ids, offsets, values, meta)`` of the given
        files' current stored sets (kind "all"; ids ascending, files without fingerprints left out), the
        meta aligned with the values.  Checked like :meth:`fingerprints`."""
        d: list[np.ndarray] = []
        ids, offsets, values = self.fingerprints(file_ids, kind="all", spans=d)
        n = int(offsets[-1]) if offsets.size else 0
        if self.version < _SPANS_VERSION:  # (an older index read as it is: no places)
            z = np.zeros(n, np.uint32)
            return ids, offsets, values, FingerprintMeta(d[0], z, z.copy(), np.zeros(n, np.uint16))
        counts = np.diff(offsets)
        blobs: list[bytes] = []
        seen = 0
        for chunk in _chunks(ids.tolist()):
            rows = self._conn.execute(
                f"SELECT file_id, CAST(places AS BLOB), pchk FROM fingerprints WHERE file_id IN ({','.join('?' * len(chunk))})"
                " ORDER BY file_id", chunk,
            ).fetchall()
            if len(rows) != len(chunk):
                raise Mismatch(_blobs_fail(len(chunk) - len(rows)), sorted(set(chunk) - {r[0] for r in rows}))
            rows = [(fid, blob, chk, int(counts[seen + k])) for k, (fid, blob, chk) in enumerate(rows)]
            if self.checked:
                _verify_meta(rows, _checks.PLACES)
            for fid, blob, _chk, m in rows:
                if blob is None or len(blob) != 10 * m:
                    raise Mismatch(_blobs_fail(1), [fid])
            blobs.extend(r[1] for r in rows)
            seen += len(rows)
        places = np.frombuffer(b"".join(blobs), "<u2")
        del blobs
        # Each file's places are its columns (unit u32, char u32, chars u16; 5 half-words a value): the
        # value at position j of the batch, in the file whose values start at o (m of them; rank j - o),
        # has its unit at half-word 5·o + 2·(j - o) = 3·o + 2·j, its char 2·m further and its chars at
        # 5·o + 4·m + (j - o) = 4·o + 4·m + j.  One index array, moved along in place (gathering
        # bytes took index arrays of 4 × n int64: ~300 MB of temporaries for 3 M values).
        idx = np.repeat(offsets[:-1], counts)
        m2 = np.repeat(2 * counts, counts)
        idx *= 3
        idx += np.arange(0, 2 * n, 2, dtype=np.int64)
        unit = _u32_at(places, idx)
        idx += m2
        char = _u32_at(places, idx)
        # 3·o + 2·j + 2·m -> 4·o + 4·m + j: add o + 2·m - j.
        idx += m2
        idx += np.repeat(offsets[:-1], counts)
        idx -= np.arange(n, dtype=np.int64)
        del m2
        chars = places[idx].astype(np.uint16)
        return ids, offsets, values, FingerprintMeta(d[0], unit, char, chars)

    def _fingerprint_rows(self, spans: bool) -> tuple[str, str, bool]:
        """(query, its id column, whether it reads spans) of the current files' stored sets: rows of
        (file id, rolling count, blob[, check, fp_count][, spans, their check]), ``spans`` when asked and
        the schema stores them."""
        base, key = (_CHECKED_FINGERPRINT_ROWS, "files.id") if self.checked else (_FINGERPRINT_ROWS, "f.file_id")
        with_spans = spans and self.version >= _SPANS_VERSION
        if with_spans:
            base = base.replace(" FROM ", ", CAST(f.spans AS BLOB), f.schk FROM ", 1)
        return base, key, with_spans

    def _batch_spans(self, batch: Sequence[tuple[Any, ...]]) -> bytes:
        """The spans of a batch of :meth:`_fingerprint_rows` rows read with spans, joined, after their
        checks (or their lengths, without checks)."""
        # (file id, spans, check, values) after the row's own columns.
        rows = [(r[0], r[-2], r[-1], len(r[2]) // 8 if r[2] is not None else -1) for r in batch]
        if self.checked:
            _verify_meta(rows, _checks.SPANS)
        elif any(r[1] is None or len(r[1]) != r[3] for r in rows):
            raise Mismatch(_blobs_fail(1), [r[0] for r in rows if r[1] is None][:1])
        return b"".join(r[1] for r in rows)

    @_sql_errors
    def iter_fingerprints(
        self, kind: str = "all", rows: int = 4096, spans: bool = False,
    ) -> Iterator[tuple[np.ndarray, ...]]:
        """Every current file's fingerprints as :meth:`fingerprints` gives them, in CSR batches of
        about ``rows`` files (ascending ids): a full pass in memory of one batch (a query of a short
        file looks through every stored set; the sliced pair search reads them so).  ``spans`` (kind
        "all"): each batch also carries its values' dominance spans (uint8, aligned; 255 each for an
        index older than schema 8), a fourth array."""
        if kind not in ("rolling", "anchored", "all"):
            raise ValueError(f"kind must be rolling, anchored or all, not {kind!r}")
        if spans and kind != "all":
            raise ValueError("spans come with kind 'all'")
        base, key, with_spans = self._fingerprint_rows(spans)
        cur = self._conn.execute(f"{base} ORDER BY {key}", (ALGORITHM_VERSION,))
        while batch := cur.fetchmany(rows):
            if self.checked:
                _verify_blobs(batch)
            got = self._batch_spans(batch) if with_spans else None
            parts = _kind_parts(batch, kind)
            ids = np.fromiter((r[0] for r in batch), np.int64, len(batch))
            offsets = np.zeros(len(batch) + 1, np.int64)
            np.cumsum(np.fromiter(map(len, parts), np.int64, len(batch)) // 8, out=offsets[1:])
            values = np.frombuffer(b"".join(parts), "<u8").astype(np.uint64, copy=False)
            del batch, parts
            if not spans:
                yield ids, offsets, values
            elif got is not None:
                yield ids, offsets, values, np.frombuffer(got, np.uint8)
            else:
                yield ids, offsets, values, np.full(values.size, 255, np.uint8)

    def _fingerprint_count_hint(self) -> int:
        """Values the current files store (the ``files.fp_count`` column), to size a full read."""
        try:
            row = self._conn.execute(
                "SELECT coalesce(sum(fp_count), 0) FROM files WHERE algorithm_version = ? AND error IS NULL",
                (ALGORITHM_VERSION,),
            ).fetchone()
            return max(0, int(row[0]))
        except (sqlite3.Error, TypeError, ValueError):
            return 0

    @_sql_errors
    def bare_copies(self, content_hash: bytes, is_text: bool) -> np.ndarray:
        """Ids (int64) of the files with no fingerprints (too short for a window) and this content
        hash: the copies of such a file, which no fingerprint lookup finds.  A seek of ``files_bare``
        (schema 5; a read-only open of an older index reads the table instead)."""
        rows = self._conn.execute(BARE_COPIES_SQL, (content_hash, int(is_text))).fetchall()
        return np.array([r[0] for r in rows], np.int64)

    @_sql_errors
    def files_with_fingerprints(
        self, values: np.ndarray, spans: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Inverted-index lookup: ``(values uint64[k], file_ids int64[k])`` sorted by value then id.

        Only posted values (see :mod:`simscan.index.postings`, :meth:`posted_mask`; ``spans``: the
        values' dominance spans, aligned, when they are a text's) can be found; the others are dropped
        before the lookup.  Each query value costs one B-tree seek.  Files
        whose postings are still pending (a scan stopped or running before its posting pass, see
        ``unposted``) are found too, by reading their stored sets.
        """
        if self._shift_damage is not None:
            raise _damage_found(self.path, self._shift_damage)
        v = np.asarray(values, dtype=np.uint64)
        v = np.unique(v[_postings.posted_mask(v, self.posting_shift, spans)])
        out_v: list[int] = []
        out_f: list[int] = []
        for chunk in _chunks(v.view(np.int64).tolist()):
            q = f"SELECT fp, file_id FROM postings WHERE fp IN ({','.join('?' * len(chunk))})"
            for fp, fid in self._conn.execute(q, chunk):
                out_v.append(fp)
                out_f.append(fid)
        vals = np.asarray(out_v, np.int64).view(np.uint64)
        fids = np.asarray(out_f, np.int64)
        pending = np.array([r[0] for r in self._conn.execute("SELECT file_id FROM unposted")], np.int64)
        if pending.size and v.size:
            ids, offsets, stored = self.fingerprints(pending, kind="all")
            hit = np.flatnonzero(np.isin(stored, v))
            vals = np.concatenate((vals, stored[hit]))
            fids = np.concatenate((fids, ids[np.searchsorted(offsets, hit, side="right") - 1]))
            # (a file stopped part way through its posting holds some pairs twice now)
            vals, fids = np.unique(np.stack((vals.view(np.int64), fids)), axis=1)
            vals = vals.view(np.uint64)
        order = np.lexsort((fids, vals))
        return vals[order], fids[order]

    def posted_mask(self, values: np.ndarray, spans: np.ndarray | None = None) -> np.ndarray:
        """Which of ``values`` the inverted index holds (``spans``: theirs, aligned, when they are a
        text's: every text file posts its values of span 128 too, under this simscan's rule)."""
        if self._shift_damage is not None:
            raise _damage_found(self.path, self._shift_damage)
        return _postings.posted_mask(values, self.posting_shift, spans)

    # ----------------------------------------------------------------- results cache
    def generation(self) -> int | None:
        """The generation of the files (see :mod:`simscan.index.results`); None without a cache
        (an index of schema 2 opened read-only)."""
        return _results.generation(self._conn)

    def cached_results(self, key: str, gen: int | None, floor: float) -> dict[str, np.ndarray] | None:
        """The arrays cached under ``key`` when still valid at ``gen`` (read in the same read
        transaction) and computed at ``floor`` (:func:`simscan.index.results.read`); None otherwise."""
        return _results.read(self._conn, key, gen, floor)

    def cached_result(self, key: str, gen: int | None, floor: float, name: str) -> dict[str, np.ndarray] | None:
        """The one array ``name`` of :meth:`cached_results` (``{}`` when the row has none), without
        holding the others (:func:`simscan.index.results.read_one`)."""
        return _results.read_one(self._conn, key, gen, floor, name)

    def has_results(self, key: str, gen: int | None, floor: float) -> bool:
        """Whether :meth:`cached_results` would find a row (its blob is neither read nor checked)."""
        return _results.present(self._conn, key, gen, floor)

    def store_results(self, key: str, gen: int | None, floor: float, arrays: dict[str, np.ndarray]) -> bool:
        """Cache ``arrays`` computed at generation ``gen``, best-effort (see
        :func:`simscan.index.results.store`; a separate short connection, so a read-only
        ``Index`` can store too when the file is writable).  True when written."""
        return _results.store(self.path, SCHEMA_VERSION, key, gen, floor, arrays)

    def _verify_history(self) -> None:
        """Raise :class:`Mismatch` unless the records of scans and their problem lines are all there
        (each table's digest and its rows read in one snapshot: a scan committing between the two
        reads is no damage)."""
        with self._reading():
            for table, what in (("runs", "records of past scans"), ("problems", "problem lines")):
                if not _checks.table_digest_ok(self._conn, table):
                    raise Mismatch(f"the {what} are not all there (some were lost or added)")

    @_sql_errors
    def last_run_id(self) -> int | None:
        row = self._conn.execute("SELECT max(id) FROM runs").fetchone()
        return None if row is None or row[0] is None else int(row[0])

    @_sql_errors
    def problems(self, last_run_only: bool = True) -> list[tuple[str, str]]:
        """``(path, reason)`` of the last scan (or of every scan), in the order they were met."""
        with self._reading():  # the last scan's id, the checks and the lines: one state of the index
            where, params = "", ()
            if last_run_only:
                rid = self.last_run_id()
                if rid is None:
                    return []
                # "+ 0": read the table itself, not the index on run_id, which, damaged, could leave lines out.
                where, params = "WHERE run_id + 0 = ?", (rid,)
            if self.checked:
                self._verify_history()
                if bad := _checks.bad_rows(self._conn, "problems", where, params):
                    raise Mismatch(f"{len(bad):,} of the lines `simscan problems` lists fail their checksums")
            rows = self._conn.execute(f"SELECT path, reason FROM problems {where} ORDER BY id", params)
            return [(os.fsdecode(p), r) for p, r in rows]

    @_sql_errors
    def runs(self, limit: int = 10) -> list[dict[str, Any]]:
        cols = _checks.SMALL_TABLES["runs"]
        where = "WHERE id IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?)"
        with self._reading():  # the checks and the records in one state of the index
            if self.checked:
                self._verify_history()
            if self.checked and (bad := _checks.bad_rows(self._conn, "runs", where, (limit,))):
                raise Mismatch(f"{len(bad):,} record{' of a past scan fails its checksum' if len(bad) == 1 else 's of past scans fail their checksums'}")
            rows = self._conn.execute(f"SELECT {', '.join(cols)} FROM runs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        out = []
        for row in rows:
            d = dict(zip(cols, row))
            d["roots"] = json.loads(d["roots"])
            d["options"] = json.loads(d["options"])
            out.append(d)
        return out

    @_sql_errors
    def stats(self, verify: bool = False) -> dict[str, Any]:
        """Summary for people and tools: counts, sizes, the last scan.  ``verify``: check every row of
        ``files`` first (the sums are computed from them; ~4.5 s per 1,000,000 files)."""
        with self._reading():
            if verify and self.checked:
                self._verify_all_rows()
            return self._stats()

    def _verify_all_rows(self) -> None:
        """Raise :class:`Mismatch` unless every row of ``files`` passes its check and their sum is
        ``meta.files_digest`` (in the caller's read transaction)."""
        cur = self._conn.execute(f"SELECT {_checks.FILE_COLUMNS_SQL}, ifnull(row_check, 0) FROM files")
        total = 0
        bad: list[int] = []
        while batch := cur.fetchmany(65536):
            stored = np.fromiter((r[-1] for r in batch), np.int64, len(batch))
            got = _checks.file_checks(batch)
            bad += [batch[k][0] for k in np.flatnonzero(stored != got).tolist()]
            total = _checks.add_digest(total, stored)
        if bad:
            raise Mismatch(_files_fail(len(bad)), bad)
        if total != int(meta_get(self._conn, "files_digest") or 0):
            raise Mismatch("the files table does not hold the rows it should (some were lost or added)")

    def _stats(self) -> dict[str, Any]:
        c = self._conn
        n, total, text, errors, changed, stale, fps = c.execute(
            "SELECT count(*), coalesce(sum(size), 0), coalesce(sum(is_text), 0),"
            " coalesce(sum(error IS NOT NULL), 0), coalesce(sum(substr(error, 1, ?) = ?), 0),"
            " coalesce(sum(algorithm_version != ?), 0), coalesce(sum(fp_count), 0) FROM files",
            (len(CHANGED_WHILE_READ), CHANGED_WHILE_READ, ALGORITHM_VERSION),
        ).fetchone()
        runs = self.runs(1)
        size = 0
        for p in (self.path, Path(f"{self.path}-wal")):
            try:
                size += p.stat().st_size
            except OSError:
                pass
        return {
            "index": str(self.path),
            "schema_version": self.version,
            "algorithm_version": ALGORITHM_VERSION,
            "files": int(n),
            "bytes": int(total),
            "text_files": int(text),
            "binary_files": int(n - text - errors),
            "files_with_errors": int(errors),
            # (of those: skipped because they changed while being read, not unreadable; read by the next scan)
            "files_changed_while_read": int(changed),
            "files_needing_rescan": int(stale),
            "fingerprints": int(fps),
            "posting_sample": _postings.describe(self.posting_shift),
            "files_waiting_for_postings": self.pending_postings(),
            "results_cache_bytes": _results.cached_bytes(c),
            "index_bytes": size,
            "last_scan": runs[0] if runs else None,
        }


class PostingJob:
    """Puts a set of deferred files into the inverted index a slice at a time.

    The files' posted pairs are sorted once; each :meth:`step` inserts the next contiguous
    fingerprint range in its own short transaction, so a scan can post during the moments it
    waits for its workers and the B-tree is still walked in key order.  :meth:`finish` takes the
    files off ``unposted`` and drops the pairs of files that another connection removed meanwhile.
    A crash between steps leaves the files in ``unposted``; the next pass re-inserts their pairs
    (``INSERT OR IGNORE``).  The caller must not rewrite these files before :meth:`finish`.
    """

    def __init__(
        self, index: Index, ids: list[int], slice_rows: int,
        pairs: tuple[list[np.ndarray], list[np.ndarray]] | None = None,
    ) -> None:
        self._index = index
        self.path = index.path  # for the error messages of _sql_errors
        self.ids = ids
        self._slice = max(1, slice_rows)
        fps, owners = pairs if pairs is not None else ([], [])
        if pairs is None:
            for chunk in _chunks(ids):
                for run, got in zip((fps, owners), index._stored_posted_pairs(chunk)):
                    run.append(got)
        # Each array is let go as soon as the next one is made (the lists are the caller's too: emptied
        # here), and file ids are held in 32 bits where they fit: a job of 100,000 small text files
        # (7.75 M postings) peaked at ~435 MB holding the runs, their concatenation, the order and the
        # sorted copies at once; ~190 MB this way.
        fp = _joined_runs(fps, np.int64)
        owner = _joined_runs(owners, np.int32 if ids and max(ids) < 1 << 31 else np.int64)
        # Key order walks the B-tree once.  The stable sort (timsort) merges the sorted runs that
        # posted_pairs made per commit; ties keep their order, which only affects locality.
        order = np.argsort(fp, kind="stable")
        self._fp = fp[order]
        del fp
        self._owner = owner[order]
        del owner, order
        self._pos = 0

    @property
    def remaining(self) -> int:
        return int(self._fp.size - self._pos)

    @_sql_errors
    def step(self) -> bool:
        """Insert the next slice (one transaction); True while slices remain."""
        end = min(self._fp.size, self._pos + self._slice)
        if end > self._pos:
            with self._index.atomic():
                self._index._insert_postings_sorted(self._fp[self._pos : end], self._owner[self._pos : end])
            self._pos = end
        return self._pos < self._fp.size

    @_sql_errors
    def finish(self) -> None:
        while self.step():
            pass
        with self._index.atomic() as c:
            gone: set[int] = set(self.ids)
            for chunk in _chunks(self.ids):
                gone.difference_update(
                    r[0] for r in c.execute(f"SELECT id FROM files WHERE id IN ({','.join('?' * len(chunk))})", chunk)
                )
            if gone:
                stale = np.isin(self._owner, np.fromiter(gone, np.int64, len(gone)))
                c.executemany(
                    "DELETE FROM postings WHERE fp = ? AND file_id = ?",
                    zip(self._fp[stale].tolist(), self._owner[stale].tolist()),
                )
            _delete_unposted(c, self.ids)
        self._fp = self._owner = np.zeros(0, np.int64)
        self._pos = 0


#: Rows of the files table read at once (:meth:`Index.files`).
_TABLE_ROWS = 65536


def _joined_runs(runs: list[np.ndarray], dtype: Any) -> np.ndarray:
    """The arrays of ``runs`` one after the other as ``dtype``, the list emptied as they are copied."""
    out = np.empty(sum(int(r.size) for r in runs), dtype)
    at = 0
    runs.reverse()
    while runs:
        r = runs.pop()
        out[at : at + r.size] = r
        at += r.size
    return out


def _joined(parts: list[FileTable]) -> FileTable:
    """One FileTable of consecutive ones (their columns joined in order)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _table([])
    cols: dict[str, Any] = {}
    for f in dataclasses.fields(FileTable):
        got = [getattr(p, f.name) for p in parts]
        if isinstance(got[0], np.ndarray):
            cols[f.name] = np.concatenate(got)
        elif isinstance(got[0], ByteColumn):
            cols[f.name] = ByteColumn.concat(got)
        elif not isinstance(got[0], EncodedPaths):
            cols[f.name] = list(itertools.chain.from_iterable(got))
    if "raw_paths" not in cols:
        cols["raw_paths"] = EncodedPaths(cols["paths"])
    return FileTable(**cols)


def _table(rows: list[tuple[Any, ...]], pos: Sequence[int] | None = None) -> FileTable:
    """The FileTable of rows in ``Index._FILE_COLS`` order (or with those columns at ``pos``).  Each
    column is taken with ``map(itemgetter(k), rows)``: ``zip(*rows)`` over 200,000 rows took 0.25 s of
    the 0.6 s."""
    n = len(rows)
    at = pos or range(14)

    def col(k: int) -> Iterator[Any]:
        return map(itemgetter(at[k]), rows)

    paths = list(map(os.fsdecode, col(1)))
    names: dict[bytes | None, str | None] = {None: None}  # (read as bytes: a damaged text must not fail the read)
    encoding = [names[e] if e in names else names.setdefault(e, e.decode("utf-8", "replace")) for e in col(5)]
    return FileTable(
        ids=np.fromiter(col(0), np.int64, n),
        paths=paths,
        raw_paths=EncodedPaths(paths),
        size=np.fromiter(col(2), np.int64, n),
        mtime_ns=np.fromiter(col(3), np.int64, n),
        is_text=np.fromiter(col(4), bool, n),
        encoding=encoding,
        checksum=ByteColumn.of(list(col(6))),
        partial=np.fromiter(col(7), np.int64, n),
        content_hash=ByteColumn.of(list(col(8))),
        simhash=np.fromiter(col(9), np.int64, n).view(np.uint64),
        fp_count=np.fromiter(col(10), np.int64, n),
        units=np.fromiter(col(11), np.int64, n),
        device=np.fromiter(col(12), np.int64, n),
        inode=np.fromiter(col(13), np.int64, n),
    )


#: The stored sets of the current files: (file id, rolling count, blob) rows (an index without checks).
_FINGERPRINT_ROWS = (
    "SELECT f.file_id, f.n_rolling, f.fps FROM fingerprints f JOIN files ON files.id = f.file_id"
    " WHERE files.algorithm_version = ? AND files.error IS NULL"
)
#: The same with checks: (file id, rolling count, blob, check, the file's fp_count), one row per current
#: file, a file without its blob included (its blob is then NULL: damage).
_CHECKED_FINGERPRINT_ROWS = (
    "SELECT files.id, f.n_rolling, CAST(f.fps AS BLOB), f.chk, files.fp_count FROM files"
    " LEFT JOIN fingerprints f ON f.file_id = files.id WHERE files.algorithm_version = ? AND files.error IS NULL"
)
#: What :meth:`Index._verified_rows` reads: every column the row check covers, then the check.
_CHECKED_COLS = f"{_checks.FILE_COLUMNS_SQL}, ifnull(row_check, 0)"
#: Where :func:`_table` finds each of its columns in those rows.
_CHECKED_POS = tuple(_checks.FILE_COLUMNS.index(c) for c in (
    "id", "path", "size", "mtime_ns", "is_text", "encoding", "checksum", "partial", "content_hash", "simhash",
    "fp_count", "units", "device", "inode"))
_K64 = np.uint64(0x9E3779B97F4A7C15)


#: What a problem line a scan keeps for a file it found unchanged ends with (``Index.problems_kept``).
KEPT_PROBLEM = " (unchanged since an earlier scan)"

#: The schema that stores spans and places.
_SPANS_VERSION = 8
#: The columns a fingerprint row is written with (schema 8).
_FP_COLUMNS = "file_id, n_rolling, fps, chk, spans, schk, places, pchk"
#: What posting reads of a file (``Index._row_spans``): (file id, rolling count, blob, check, spans, their
#: check, is_text); schema 8 on (a writable open upgrades the schema before it posts).
_POSTING_ROWS = (
    "SELECT f.file_id, f.n_rolling, CAST(f.fps AS BLOB), f.chk, CAST(f.spans AS BLOB), f.schk, fl.is_text"
    " FROM fingerprints f LEFT JOIN files fl ON fl.id = f.file_id"
)
#: The same of the files waiting in ``unposted`` (a file without its blob: NULLs), by id.
_UNPOSTED_ROWS = (
    "SELECT u.file_id, f.n_rolling, CAST(f.fps AS BLOB), f.chk, CAST(f.spans AS BLOB), f.schk, fl.is_text"
    " FROM unposted u LEFT JOIN fingerprints f ON f.file_id = u.file_id LEFT JOIN files fl ON fl.id = u.file_id"
    " ORDER BY u.file_id"
)


def _u32_at(half: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The little-endian uint32 made of half-words ``idx`` and ``idx + 1`` of ``half`` (uint16)."""
    out = half[idx].astype(np.uint32)
    out |= half[idx + 1].astype(np.uint32) << 16
    return out


def _read_rule(c: sqlite3.Connection, checked: bool) -> int | None:
    """The posting rule the inverted index was written by (None: not recorded).  The current rule is
    recorded as ``posting_shift`` 0 and ``posting_rule`` (an older simscan, which knows the first
    only, then looks every value up: right, as every posted value is found so; and a writable open of
    it posts the sample again, which leaves ``posting_shift`` 3: the earlier rule, read so here)."""
    shift = meta_get(c, "posting_shift", checked)
    if shift is None:
        return None
    if int(shift) == 0:  # (never written by itself: an older simscan's shift is 3)
        rule = meta_get(c, "posting_rule", checked)
        if rule is None or int(rule) != _postings.DEFAULT_RULE:
            raise Mismatch("the setting 'posting_rule' of the index is missing or unknown")
        return int(rule)
    return int(shift)


def _write_rule(c: sqlite3.Connection, checked: bool) -> None:
    """Record that the inverted index follows the current posting rule (see :func:`_read_rule`)."""
    meta_set(c, "posting_shift", 0, checked)
    meta_set(c, "posting_rule", _postings.DEFAULT_RULE, checked)


def posting_spans(record: FileRecord) -> np.ndarray | None:
    """The spans a record's values post by (``Index.posted_pairs``): a text file's, else None."""
    n = int(np.asarray(record.fps).size)
    if not record.is_text or not record.meta or len(record.meta) != FingerprintMeta.BYTES * n:
        return None
    return np.frombuffer(record.meta, np.uint8, n)


def _split_meta(meta: bytes, n: int) -> tuple[memoryview | None, memoryview | None]:
    """(spans, places) of a record's meta blob for ``n`` values; (None, None) without one."""
    if n == 0:
        return memoryview(b""), memoryview(b"")
    if not meta:
        return None, None
    if len(meta) != FingerprintMeta.BYTES * n:
        raise ValueError(f"a meta blob of {n} values has {FingerprintMeta.BYTES * n} bytes, not {len(meta)}")
    m = memoryview(meta)
    return m[:n], m[n:]


def _verify_meta(rows: Sequence[tuple[Any, ...]], part: int) -> None:
    """Raise :class:`Mismatch` unless every (file id, blob, check, values) row has its blob, as long as
    its values need (1 or 10 bytes each), with its check."""
    per = 1 if part == _checks.SPANS else FingerprintMeta.BYTES - 1
    bad = [r[0] for r in rows if r[1] is None or r[2] is None or len(r[1]) != per * r[3]
           or _checks.meta_check(r[0], part, r[1]) != r[2]]
    if bad:
        raise Mismatch(_blobs_fail(len(bad)), bad)


def _verify_blobs(batch: Sequence[tuple[Any, ...]]) -> None:
    """Raise :class:`Mismatch` unless every (file id, rolling count, blob, check[, fp_count]) row has
    its blob, of the length ``fp_count`` says, with its check (:func:`checks.fingerprint_check`,
    computed here for a whole batch: one XXH3 call per blob)."""
    bad = [r[0] for r in batch if r[2] is None or r[1] is None or r[3] is None
           or (len(r) > 4 and len(r[2]) != 8 * r[4])]
    ok = [r for r in batch if r[0] not in bad] if bad else batch
    if ok:
        ids = np.fromiter((r[0] for r in ok), np.int64, len(ok)).view(np.uint64)
        roll = np.fromiter((r[1] for r in ok), np.int64, len(ok)).view(np.uint64)
        seeds = (ids * _K64 + roll).tolist()
        got = np.fromiter(map(xxhash.xxh3_64_intdigest, (r[2] for r in ok), seeds), np.uint64, len(ok))
        stored = np.fromiter((r[3] for r in ok), np.int64, len(ok)).view(np.uint64)
        if not np.array_equal(got, stored):
            bad += [ok[k][0] for k in np.flatnonzero(got != stored).tolist()]
    if bad:
        raise Mismatch(_blobs_fail(len(bad)), bad)


def _kind_parts(rows: list[tuple[int, int, bytes]], kind: str) -> list[bytes]:
    """The bytes of each row's values of one ``kind`` ("all", "rolling" or "anchored")."""
    if kind == "all":
        return [r[2] for r in rows]
    if kind == "rolling":
        return [r[2][: 8 * r[1]] for r in rows]
    return [r[2][8 * r[1] :] for r in rows]


#: The rows of ``files`` at or below a root, with the parameters :func:`_under` gives (on the path index).
_UNDER = "path = ? OR (path >= ? AND path < ?)"


def _under(root: bytes) -> tuple[bytes, bytes, bytes]:
    """Parameters of :data:`_UNDER`: the root itself, then the range of paths below it (b"0" sorts
    right after b"/", so the range is exactly "under root")."""
    prefix = root if root.endswith(b"/") else root + b"/"
    return root, prefix, prefix[:-1] + b"0"


def _chunks(seq: list[Any], n: int = _CHUNK) -> Iterator[list[Any]]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]


def _delete_unposted(c: sqlite3.Connection, ids: list[int]) -> None:
    """Take these files off ``unposted``: IN lists, ~3x cheaper than one statement per id."""
    for chunk in _chunks(ids):
        c.execute(f"DELETE FROM unposted WHERE file_id IN ({','.join('?' * len(chunk))})", chunk)


def _refusal(path: Path) -> str | None:
    """Why ``path`` must not be moved aside as a damaged index (None: it may be)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # (move_aside's own callers; a FIFO would block the read)
            return f"{path} is not a regular file, so not a simscan index: it was left untouched"
        head = _header(path)
    except OSError as e:
        return f"{path} cannot be read ({e.strerror or e})"
    if not head:
        return None  # an empty file holds nothing; a fresh index simply uses it
    if not _damaged_index(path, head):
        return f"{path} is not a SQLite database, so not a simscan index: it was left untouched"
    try:
        conn = sqlite3.connect(_uri(path, immutable=True), uri=True)
        try:
            names = _table_names(conn)
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            newer = version > SCHEMA_VERSION and names & _OUR_TABLES and _written_by_newer(conn, version)
        finally:
            conn.close()
    except (sqlite3.Error, UnicodeDecodeError):  # (SQLite's message may quote damaged text)
        return None  # damaged: exactly what moving aside is for
    if names and not names & _OUR_TABLES:
        return f"{path} is the database of another program, not a simscan index: it was left untouched"
    if newer:
        return (f"{path} was written by a newer simscan (schema {version}, this one knows {SCHEMA_VERSION}), and is not "
                "damaged: it was left untouched. Upgrade simscan, or use another index with --index PATH")
    return None


def move_aside(path: Path) -> Path | None:
    """Rename a damaged index (and its -wal/-shm) to ``<name>.corrupt-<UTC time>``; never deletes.

    Returns the new name of the main file, or None when there was nothing to move.  Raises
    :class:`RefusedToMove` (an OSError) for a file that is not a SQLite database or is another
    program's one: that is the user's file, not a damaged index.
    """
    path = Path(path)
    if path.exists():
        why = _refusal(path)
        if why is not None:
            raise RefusedToMove(why)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    dest = Path(f"{path}{_ASIDE}{stamp}")
    k = 1
    while dest.exists():
        dest = Path(f"{path}{_ASIDE}{stamp}-{k}")
        k += 1
    moved = None
    if path.exists() and path.stat().st_size > 0:
        os.rename(path, dest)
        moved = dest
    for suffix in ("-wal", "-shm", "-journal"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.rename(side, Path(f"{dest}{suffix}"))
    return moved


def _unavailable(p: Path, doing: str, e: OSError) -> IndexUnavailable:
    if e.errno == errno.EROFS:
        return IndexUnavailable(
            f"cannot {doing} for the index {p}: it is on read-only storage, and a scan writes to the index.",
            "The read commands (stats, problems, pairs, groups, query, check) work as it is; to scan, copy the "
            "index (with its -wal file, if any) to a writable place and give it with --index PATH.",
        )
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return disk_full(p)
    return IndexUnavailable(
        f"cannot {doing} for the index {p}: {e.strerror or e}.",
        f"The folder {p.parent} must be writable by you; or choose another place with --index PATH.",
    )


def rebuild(path: Path | str | None = None) -> tuple[Index, Path | None]:
    """Move the index at ``path`` aside (if any) and open a fresh one holding every file of the old one
    whose entries pass their checks (:mod:`simscan.index.salvage`; ``Index.salvaged`` says how many);
    returns it and where the old went.

    Refuses with IndexLocked while another scan holds the index, with NotAnIndex when the file is not a
    (damaged) simscan index, and IndexUnavailable when its folder cannot be written.
    """
    p = Path(os.path.abspath(Path(path).expanduser() if path is not None else default_index_path()))
    _check_kind(p)  # a folder or a device is not an index to move aside, whatever --rebuild says
    if p.exists():
        # Before creating anything beside it (the lock file would make it look like an index).
        why = _refusal(p)
        if why is not None:
            raise NotAnIndex(f"will not rebuild: {why}.", _NOT_REBUILT.format(path=shlex.quote(str(p))))
    try:
        p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise _unavailable(p, f"create the folder {p.parent}", e) from e
    lock = Path(f"{p}.lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        raise _unavailable(p, f"open the lock file {lock}", e) from e
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IndexLocked(
                f"another scan is writing to the index {p}; it cannot be rebuilt now.", "Wait for it to finish."
            ) from None
        try:
            moved = move_aside(p)
        except RefusedToMove as e:
            raise NotAnIndex(f"will not rebuild: {e}.", _NOT_REBUILT.format(path=shlex.quote(str(p)))) from e
        except OSError as e:
            raise _unavailable(p, "move the damaged index aside", e) from e
        fresh = Index.open(p)
        if moved is not None:
            # Keep every file whose entries pass their checks: only the others are read again.
            from simscan.index.salvage import salvage

            try:
                fresh.salvaged = salvage(moved, fresh)
            except BaseException:
                fresh.close()
                raise
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return fresh, moved


#: The way out when --rebuild refuses a file: simscan moves aside only what it recognises as its index, so
#: an index damaged past recognition (its header overwritten) has to be moved by hand.
_NOT_REBUILT = (
    "Give the path of a simscan index with --index PATH.  If this is simscan's own index, damaged past "
    "recognition, move it away yourself (mv {path} {path}.broken) and scan again."
)


__all__ = [
    "FileRecord",
    "FileTable",
    "Index",
    "PostingJob",
    "companion_paths",
    "corrupt",
    "default_index_path",
    "move_aside",
    "rebuild",
    "set_aside_paths",
]
