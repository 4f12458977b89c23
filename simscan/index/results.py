"""The results cache: derived results (the file table and the scored pairs) stored in the index
so that opening results computed before costs milliseconds instead of a new pair search.

Validity.  The ``meta`` row ``generation`` is a counter that every change of the ``files`` or
``fingerprints`` tables increments in the same transaction (:func:`bump`, called by each
``Index`` method that writes them: ``write_files``, ``remove_ids`` — hence ``remove_paths`` —
and ``rename_files``, and by every migration from version 3 on).  A cache row
records the generation of the read snapshot it was computed from and is used only while the
generation is still the same: then the files and fingerprints are exactly those it was
computed from.  The row's ``key`` names everything else the result depends on (cache format,
schema, ``ALGORITHM_VERSION``, similarity parameters, reference folders) and ``floor`` the
lowest similarity it holds (a request for P >= floor filters it).  A bump also deletes every
cache row, so stale results never linger on disk.

Safety.  Writing is best-effort and never touches user data: a separate short connection with
a short busy timeout, one transaction that first re-checks the generation (a scan that changed
the files meanwhile makes the write a no-op), and any failure (read-only storage, a locked
index, an older schema, a full disk) only means "not cached".  A row that does not decode
(truncated, digest mismatch, unknown format) is ignored and recomputed; the digest also covers
the row's key, generation and floor.

Blob layout: ``MAGIC``, header length (u32 LE), a JSON header listing each array's name,
dtype, shape, byte range, stored dtype and base (integer columns whose range fits 32 bits are
stored as ``value - base`` in the narrowest unsigned type), the XXH3-64 of the payload, then
the payload (the arrays' bytes, each 8-byte aligned).
"""

from __future__ import annotations

import json
import os
import sqlite3
import struct
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import xxhash

from simscan.columns import ByteColumn, EncodedPaths
from simscan.index.checks import Mismatch, meta_get, meta_set

#: Version of the blob layout and of what the arrays mean; part of every key.  3: the digest also
#: covers the row's key, generation and floor.
CACHE_FORMAT = 3
MAGIC = b"SIMSCAN-RESULTS\n"
#: How long a cache write waits for a scan's transaction before giving up (seconds): a scan
#: commits at least every 2 s and holds the write lock a fraction of that.
WRITE_TIMEOUT_S = 1.0
#: Cache rows kept at once (the window's, and a few of `simscan groups --reference DIR`).
MAX_ENTRIES = 4
#: Results larger than this are not cached (bytes): 200,000 files and 100,000 pairs take ~30 MB.
#: Below SQLite's default blob limit (SQLITE_MAX_LENGTH, 10^9 bytes), which would refuse the write.
MAX_BLOB_BYTES = 900_000_000


def bump(conn: sqlite3.Connection, checked: bool = True) -> None:
    """Mark the files as changed (call inside the write transaction that changes them).  A generation
    that fails its check starts again from a value no cache row holds (every row is deleted anyway).
    ``checked``: the index has checks (schema 7 on)."""
    try:
        value = meta_get(conn, "generation", checked)
    except Mismatch:
        value = None
    if value is not None or conn.execute("SELECT 1 FROM meta WHERE key = 'generation'").fetchone():
        try:
            nxt = int(value) + 1  # type: ignore[arg-type]
        except (TypeError, ValueError):
            nxt = int(time.time() * 1000)  # (later than any count of changes a real index reached)
        meta_set(conn, "generation", nxt, checked)
    conn.execute("DELETE FROM results")


def generation(conn: sqlite3.Connection, checked: bool = True) -> int | None:
    """The current generation, or None when the index has no results cache (an older schema) or
    the value fails its check (then nothing is read from or written to the cache)."""
    try:
        value = meta_get(conn, "generation", checked)
    except (sqlite3.Error, Mismatch):
        return None
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def cached_bytes(conn: sqlite3.Connection) -> int:
    """Bytes of cached results in the index (0 without a cache)."""
    try:
        return int(conn.execute("SELECT coalesce(sum(length(data)), 0) FROM results").fetchone()[0])
    except sqlite3.Error:
        return 0


def _narrow_type(a: np.ndarray) -> tuple[np.dtype, int]:
    """(the narrowest unsigned type holding ``a - base``, base) for integer arrays whose range fits
    32 bits (ids, sizes, counts, devices: a quarter to an eighth of the bytes); else (a's type, 0).
    Cuts the blob of 200,000 files by ~20 %, which is write and read time."""
    if a.dtype.kind not in "iu" or a.size == 0 or a.dtype.itemsize == 1:
        return a.dtype, 0
    lo, hi = int(a.min()), int(a.max())
    span = hi - lo
    for t in (np.uint8, np.uint16, np.uint32):
        if span <= np.iinfo(t).max and np.dtype(t).itemsize < a.dtype.itemsize:
            return np.dtype(t), lo
    return a.dtype, 0


def _narrow(a: np.ndarray) -> tuple[np.ndarray, int]:
    """(``a`` stored as :func:`_narrow_type` says, base)."""
    dt, base = _narrow_type(a)
    if dt == a.dtype:
        return a, 0
    return (a - a.dtype.type(base)).astype(dt), base


def _digest(payload: Any, bind: tuple[Any, ...]) -> str:
    """XXH3-64 of the row's ``bind`` values (key, generation, floor) and the payload: a row whose
    key, generation or floor was damaged (e.g. a floor lowered, claiming pairs it does not hold) is
    rejected like a damaged payload."""
    h = xxhash.xxh3_64(repr(bind).encode())
    h.update(payload)
    return h.hexdigest()


class _Layout:
    """Where each array of a blob goes: the header's entries and the payload's length.  The arrays
    are narrowed one at a time as they are written (:meth:`pieces`), so that writing a blob holds no
    second copy of them: a million files' results are ~115 MB, and copying them on the way (bytes,
    padding, joins, SQLite's own copy of a bound blob) took the window's first load past 1 GB."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays = arrays
        self.entries: list[list[Any]] = []
        off = 0
        for name, a in arrays.items():
            a = np.asarray(a)
            if a.dtype.hasobject:
                raise TypeError(f"{name}: object arrays cannot be cached")
            dt, base = _narrow_type(a)
            nbytes = a.size * dt.itemsize
            self.entries.append([name, a.dtype.str, list(a.shape), off, nbytes, dt.str, base])
            off += nbytes + (-nbytes) % 8
        self.payload = off
        # The header's length does not depend on the digest (16 hex digits): it is written last.
        self.start = len(self.header("0" * 16))
        self.size = self.start + self.payload

    def header(self, digest: str) -> bytes:
        """MAGIC, the header's length and the JSON header, padded so that the payload starts on 8 bytes."""
        header = json.dumps({"arrays": self.entries, "xxh3": digest}).encode()
        header += b" " * ((-(len(MAGIC) + 4 + len(header))) % 8)
        return MAGIC + struct.pack("<I", len(header)) + header

    def pieces(self) -> Iterator[tuple[int, memoryview]]:
        """(payload offset, bytes) of each array in turn, as stored (narrowed, C order); the padding
        between them is zeros."""
        for (_name, _dt, _shape, off, nbytes, _st, _base), a in zip(self.entries, self.arrays.values()):
            if nbytes:
                stored, _ = _narrow(np.ascontiguousarray(a))
                yield off, memoryview(np.ascontiguousarray(stored).reshape(-1).view(np.uint8))

    def write(self, put: Callable[[int, memoryview | bytes], None], bind: tuple[Any, ...]) -> None:
        """The blob through ``put(offset, data)`` (a zero-filled destination of :attr:`size` bytes):
        the payload array by array, then the header with the payload's digest."""
        h = xxhash.xxh3_64(repr(bind).encode())
        at = 0
        for off, data in self.pieces():
            if off > at:
                h.update(bytes(off - at))  # the padding before it
            put(self.start + off, data)
            h.update(data)
            at = off + len(data)
        if self.payload > at:
            h.update(bytes(self.payload - at))
        put(0, self.header(h.hexdigest()))


def pack(arrays: dict[str, np.ndarray], bind: tuple[Any, ...] = ()) -> bytearray:
    """One blob holding ``arrays`` (numeric or bool numpy arrays of any shape), for the row whose
    key, generation and floor are ``bind``."""
    layout = _Layout(arrays)
    blob = bytearray(layout.size)

    def put(at: int, data: memoryview | bytes) -> None:
        blob[at : at + len(data)] = data

    layout.write(put, bind)
    return blob


def unpack(blob: bytes, bind: tuple[Any, ...] = ()) -> dict[str, np.ndarray] | None:
    """The arrays of :func:`pack` (for the row ``bind``), or None when the blob or the row is damaged,
    or of another layout.
    Arrays stored as they are are read-only views of ``blob``; narrowed ones are new arrays."""
    try:
        if not blob.startswith(MAGIC):
            return None
        (hlen,) = struct.unpack_from("<I", blob, len(MAGIC))
        start = len(MAGIC) + 4
        header = json.loads(bytes(blob[start : start + hlen]))
        payload = memoryview(blob)[start + hlen :]
        if _digest(payload, bind) != header["xxh3"]:
            return None
        out: dict[str, np.ndarray] = {}
        for entry in header["arrays"]:
            a = _array(entry, payload, entry[3])
            if a is None:
                return None
            out[entry[0]] = a
        return out
    except (ValueError, KeyError, TypeError, OverflowError, struct.error):
        return None


def _array(entry: list[Any], payload: Any, off: int) -> np.ndarray | None:
    """The array of a header ``entry`` (name, dtype, shape, offset, bytes, stored dtype, base) whose
    bytes start at ``off`` of ``payload``; None when they do not fit there or its shape.  Stored as it
    is: a read-only view of ``payload``; narrowed: a new array."""
    _name, dtype, shape, _at, nbytes, stored, base = entry
    dt, st = np.dtype(dtype), np.dtype(stored)
    if off + nbytes > len(payload) or nbytes != st.itemsize * int(np.prod(shape, dtype=np.int64)):
        return None
    a = np.frombuffer(payload, st, count=nbytes // st.itemsize, offset=off).reshape(shape)
    return a.astype(dt) + dt.type(base) if st != dt else a


def read(conn: sqlite3.Connection, key: str, gen: int | None, floor: float) -> dict[str, np.ndarray] | None:
    """The cached arrays for ``key`` if they are valid at generation ``gen`` and were computed at
    exactly ``floor``, else None.  Exactly: a pair set searched at a lower floor is not the same set
    filtered (a pair kept for a passage is scored by the better of the views that keep it, and a
    view keeps more pairs at a lower floor: after ``pairs -m 5`` the cached pairs at 15 of 3 of the
    evaluation corpus's Java cases came out scored by another view than a search at 15).  Call
    inside the read transaction that read ``gen``."""
    if gen is None:
        return None
    try:
        row = conn.execute(
            "SELECT key, generation, floor, data FROM results WHERE key = ? AND generation = ? AND floor = ?",
            (key, gen, float(floor)),
        ).fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else unpack(row[3], _bind(*row[:3]))


#: Bytes of a cached blob read at once when one of its arrays is read (:func:`read_one`).
_READ_CHUNK = 1 << 22


def read_one(conn: sqlite3.Connection, key: str, gen: int | None, floor: float,
             name: str) -> dict[str, np.ndarray] | None:
    """``{name: array}`` of the row :func:`read` would read (``{}`` when the row holds no such array), or
    None (no such row, or damage).  The blob is read a chunk at a time through incremental blob I/O,
    for its digest, and only that array is kept: ``compare`` wants the search's cut-off, not a million
    files' pairs (~130 MB)."""
    if gen is None:
        return None
    try:
        q = "SELECT rowid, key, generation, floor FROM results WHERE key = ? AND generation = ? AND floor = ?"
        row = conn.execute(q, (key, gen, float(floor))).fetchone()
        if row is None:
            return None
        with conn.blobopen("results", "data", row[0], readonly=True) as blob:
            head = blob.read(len(MAGIC) + 4)
            if not head.startswith(MAGIC):
                return None
            (hlen,) = struct.unpack_from("<I", head, len(MAGIC))
            header = json.loads(blob.read(hlen))
            start, size = len(head) + hlen, len(blob)
            entry = next((e for e in header["arrays"] if e[0] == name), None)
            h = xxhash.xxh3_64(repr(_bind(*row[1:])).encode())
            want = bytearray()
            while blob.tell() < size:
                at = blob.tell() - start
                chunk = blob.read(_READ_CHUNK)
                h.update(chunk)
                if entry is not None and at < entry[3] + entry[4] and entry[3] < at + len(chunk):
                    want += chunk[max(0, entry[3] - at) : entry[3] + entry[4] - at]
        if h.hexdigest() != header["xxh3"]:
            return None
        if entry is None:
            return {}
        a = _array(entry, bytes(want), 0)
        return None if a is None else {name: a}
    except (sqlite3.Error, ValueError, KeyError, TypeError, OverflowError, IndexError, struct.error):
        return None


def _bind(key: str, gen: int, floor: float) -> tuple[Any, ...]:
    """What a row's digest binds its payload to (as stored: the floor is a REAL)."""
    return (key, int(gen), float(floor))


def present(conn: sqlite3.Connection, key: str, gen: int | None, floor: float) -> bool:
    """Whether :func:`read` would find a row (without reading or checking its blob)."""
    if gen is None:
        return False
    try:
        q = "SELECT 1 FROM results WHERE key = ? AND generation = ? AND floor = ?"
        return conn.execute(q, (key, gen, float(floor))).fetchone() is not None
    except sqlite3.Error:
        return False


def store(path: Path, schema_version: int, key: str, gen: int | None, floor: float, arrays: dict[str, np.ndarray]) -> bool:
    """Write one cache row, best-effort: True when it was written.  Skipped (False) when ``gen``
    is unknown or no longer current, the index has another schema, or it cannot be written now
    (read-only, locked past :data:`WRITE_TIMEOUT_S`, damaged, full).  The blob is written in place,
    array by array (``zeroblob`` then incremental blob I/O): no copy of the whole blob in memory."""
    if gen is None:
        return False
    bind = _bind(key, gen, floor)
    try:
        layout = _Layout(arrays)
    except (TypeError, ValueError, MemoryError):
        return False
    if layout.size > MAX_BLOB_BYTES:
        return False
    try:
        uri = f"file:{quote(os.fsencode(path))}?mode=rw"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=WRITE_TIMEOUT_S)
    except sqlite3.Error:
        return False
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != schema_version:
            return False
        conn.execute("PRAGMA synchronous = NORMAL")  # as the index's own connections (WAL)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if generation(conn) != gen:
                return False
            conn.execute("DELETE FROM results WHERE key = ? OR generation != ?", (key, gen))
            cur = conn.execute(
                "INSERT INTO results(key, generation, floor, created_at, data) VALUES (?, ?, ?, ?, zeroblob(?))",
                (key, gen, float(floor), time.time(), layout.size),
            )
            with conn.blobopen("results", "data", cur.lastrowid) as blob:

                def put(at: int, data: memoryview | bytes) -> None:
                    blob.seek(at)
                    blob.write(data)

                layout.write(put, bind)
            # Each set of reference folders has its own key: keep the most recent few only.
            conn.execute(
                "DELETE FROM results WHERE key NOT IN (SELECT key FROM results ORDER BY created_at DESC, rowid DESC"
                " LIMIT ?)",
                (MAX_ENTRIES,),
            )
            conn.execute("COMMIT")
            return True
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
    except (sqlite3.Error, MemoryError, ValueError):
        return False
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------- file tables
def _pack_bytes(items: list[Any], prefix: str, out: dict[str, np.ndarray]) -> None:
    """A list of bytes (or None) as lengths (-1: None) and the joined bytes."""
    n = len(items)
    if isinstance(items, ByteColumn):  # (already packed so)
        out[prefix + "_len"], out[prefix + "_data"] = items.packed()
        return
    widths = set(map(len, items)) if None not in items else set()
    if len(widths) == 1:  # the usual case: every digest has the same length
        lens = np.full(n, widths.pop(), np.int64)
        data = b"".join(items)
    else:
        lens = np.fromiter((-1 if x is None else len(x) for x in items), np.int64, n)
        data = b"".join(x for x in items if x is not None)
    out[prefix + "_len"] = lens
    out[prefix + "_data"] = np.frombuffer(data, np.uint8)


def _unpack_bytes(d: dict[str, np.ndarray], prefix: str) -> list[Any]:
    lens = d[prefix + "_len"]
    data = d[prefix + "_data"].tobytes()
    n = lens.size
    if n and lens.min() >= 0 and lens.max() == lens.min():
        w = int(lens[0])
        return [data[i : i + w] for i in range(0, n * w, w)]
    ends = np.cumsum(np.maximum(lens, 0)).tolist()
    out: list[Any] = []
    s = 0
    for length, e in zip(lens.tolist(), ends):
        out.append(None if length < 0 else data[s:e])
        s = e
    return out


_NUMERIC = ("ids", "size", "mtime_ns", "is_text", "partial", "simhash", "fp_count", "units", "device", "inode")


def pack_file_table(ft: Any, out: dict[str, np.ndarray], prefix: str = "files.") -> None:
    """Add the columns of a ``FileTable`` to ``out`` (names under ``prefix``)."""
    for name in _NUMERIC:
        out[prefix + name] = np.asarray(getattr(ft, name))
    raw = ft.raw_paths
    joined = b"\0".join(raw)
    if joined.count(b"\0") != max(0, len(raw) - 1):  # never on POSIX; keeps the NUL-joined layout exact
        raise ValueError("a path holds a NUL byte")
    out[prefix + "paths"] = np.frombuffer(joined, np.uint8)
    out[prefix + "n"] = np.array([len(raw)], np.int64)
    _pack_bytes(ft.checksum, prefix + "checksum", out)
    _pack_bytes(ft.content_hash, prefix + "content_hash", out)
    names = sorted({e for e in ft.encoding if e is not None})
    code: dict[str | None, int] = {e: i for i, e in enumerate(names)}
    code[None] = -1
    out[prefix + "encoding"] = np.fromiter(map(code.__getitem__, ft.encoding), np.int32, len(ft.encoding))
    _pack_bytes([e.encode() for e in names], prefix + "encoding_names", out)


def _decode_paths(raw: list[bytes], joined: bytes) -> list[str]:
    """``[os.fsdecode(p) for p in raw]``, in one C call when the file-system codec allows it."""
    if sys.getfilesystemencoding().lower() in ("utf-8", "utf8") and sys.getfilesystemencodeerrors() == "surrogateescape":
        # UTF-8 never uses a NUL byte inside a sequence, so decoding the NUL-joined bytes and
        # splitting gives each path's own decoding (an invalid sequence ends at the NUL).
        out = joined.decode("utf-8", "surrogateescape").split("\0") if raw else []
        if len(out) == len(raw):
            return out
    return [os.fsdecode(p) for p in raw]


def unpack_file_table(d: dict[str, np.ndarray], table_type: type, prefix: str = "files.") -> Any:
    """The ``FileTable`` packed by :func:`pack_file_table` (arrays copied: writable, owned)."""
    n = int(d[prefix + "n"][0])
    joined = d[prefix + "paths"].tobytes()
    raw = joined.split(b"\0") if n else []
    if len(raw) != n:
        raise ValueError("path count mismatch")
    names = [b.decode() for b in _unpack_bytes(d, prefix + "encoding_names")]
    enc_codes = d[prefix + "encoding"].tolist()
    encoding = [None if c < 0 else names[c] for c in enc_codes]
    cols = {name: np.array(d[prefix + name]) for name in _NUMERIC}
    for name, a in cols.items():
        if a.shape[:1] != (n,):
            raise ValueError(f"column {name} has {a.shape[:1]} rows, not {n}")
    paths = _decode_paths(raw, joined)
    del raw, joined
    return table_type(
        paths=paths,
        raw_paths=EncodedPaths(paths),
        encoding=encoding,
        checksum=_byte_column(d, prefix + "checksum"),
        content_hash=_byte_column(d, prefix + "content_hash"),
        **cols,
    )


def _byte_column(d: dict[str, np.ndarray], prefix: str) -> ByteColumn:
    """What :func:`_pack_bytes` packed, as a ``ByteColumn`` (no object per row)."""
    lens = np.asarray(d[prefix + "_len"], np.int64)
    off = np.zeros(lens.size + 1, np.int64)
    np.cumsum(np.maximum(lens, 0), out=off[1:])
    data = d[prefix + "_data"].tobytes()
    if len(data) != int(off[-1]):
        raise ValueError(f"column {prefix} holds {len(data)} bytes, not {int(off[-1])}")
    return ByteColumn(data, off, lens < 0)
