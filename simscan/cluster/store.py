"""The cluster's store: a folder of Parquet files that the client and every worker can read
(a share, or a local folder for a ``LocalCluster``).

Layout of ``STORE/``::

    simscan-store.json                    the manifest: the segments that make the store now
    segments/<seg>/files/*.parquet        the files a scan added: one row each, fingerprint set and its meta as blobs
    segments/<seg>/removed.parquet        ids of earlier rows the scan retired (changed, gone, left out)
    segments/<seg>/fp/part-<p>.parquet    (value, file_id, d) of partition p, sorted by value
    staging/<scan>/batch-<k>.parquet      rows a scan's reading task wrote, before the commit
    staging/<scan>/batch-<k>.fp.parquet   their fingerprints, one row group per partition
    problems.parquet                      what the last scan could not read, and why
    scan.lock                             held by the scan that writes (one at a time)

**Partitions.** Fingerprint values are partitioned by their bits 40 and up (``partition_of``):
the bits the local pair search partitions by too, uniform hash bits (the top bits carry the
rolling/anchored kind and the view, so ranges of the raw values would be uneven).  A value
lives in one partition, so every posting list of the pair search lies in one partition: the
partitions are counted apart and the counts added up (``simscan.cluster.search``).  Each value
carries its dominance span ``d`` there (ALGORITHM_VERSION 12: a value counts for a pair where its
span reaches the pair's window in both files), and its file row carries the whole meta (spans and
places: the passages of the pairs kept, read for those files only).

**Ids.** A file row's id is ``scan << 32 | k``: the scan that read it (numbered in the manifest
when the scan begins) and its place in that scan's walk.  Ids are never reused, so a changed file
gets a new row and its old id is retired; the rows of the live files are those of every segment
less the retired ids.  File tables list them by id, that is in walk order, as a fresh local index
numbers them.

**Atomic.** Every file is written under a temporary name, flushed to disk and renamed into place,
so no reader ever sees half a file, and a rename of the manifest is the commit: a segment counts
from the moment the manifest names it.  What a killed scan leaves (temporary files, a segment no
manifest names) is never read; the next scan removes it, and reuses the batches it had staged.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from simscan.errors import SimscanError
from simscan.index import FileTable
from simscan.model import ALGORITHM_VERSION, FingerprintMeta

try:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
except ImportError:  # the extra is not installed: ``simscan.cluster.require`` says what to install
    pa = pc = pq = None  # type: ignore[assignment]

MANIFEST = "simscan-store.json"
#: Version of the store's layout (a store of another format is refused, not misread).  2: each
#: value's span in the partitions (``d``) and every file's meta in its row (``meta``).
FORMAT = 2
#: Partitions of a new store (a power of two; fixed for the store's life).  64 keeps a partition
#: of a 10-million-document store near 500 MB (ARCHITECTURE.md, "Beyond one machine").
DEFAULT_PARTITIONS = 64
MAX_PARTITIONS = 1 << 16
#: Bits below the partition bits (as ``simscan.similarity.core``'s partitions).
PARTITION_SHIFT = 40
#: Rows per row group of the files tables (what a look-up by id reads at least).
FILE_ROW_GROUP = 4096
#: Rows per row group of a partition (what a look-up of a value reads at least).
PART_ROW_GROUP = 1 << 16
#: Compression of the file rows.  zstd: their meta (11 bytes a value: span, unit, character, length)
#: takes 3.1 bytes a value instead of snappy's 5.1 (benchmarks/cluster_scale.py's 5,000-file tree;
#: the fingerprint blobs, random hashes, take 8.0 either way), for ~2 ns more a value to write.
FILE_COMPRESSION = "zstd"


class StoreError(SimscanError):
    """The store cannot be used: not a store, damaged, of another version, or locked."""

    exit_code = 3


def _require_arrow() -> None:
    if pq is None:
        from simscan.cluster import require

        require()


def file_schema() -> Any:
    """Columns of a segment's and a staged batch's file rows (``fps``: the set as little-endian
    uint64, rolling values first, ``n_rolling`` of them; ``meta``: their ``FingerprintMeta`` blob as
    the scan made it; ``n_code``: how many are of the code view; ``format``, ``extractor``,
    ``extractor_version``: a document's, as the local index stores them)."""
    _require_arrow()
    return pa.schema([
        ("id", pa.int64()), ("path", pa.binary()), ("device", pa.int64()), ("inode", pa.int64()),
        ("size", pa.int64()), ("mtime_ns", pa.int64()), ("is_text", pa.bool_()), ("encoding", pa.string()),
        ("checksum", pa.binary()), ("partial", pa.int64()), ("content_hash", pa.binary()),
        ("simhash", pa.uint64()), ("units", pa.int64()), ("fp_count", pa.int64()), ("n_rolling", pa.int64()),
        ("n_code", pa.int64()), ("error", pa.string()), ("format", pa.string()), ("extractor", pa.string()),
        ("extractor_version", pa.string()), ("fps", pa.large_binary()), ("meta", pa.large_binary()),
    ])  # fmt: skip


def fp_schema() -> Any:
    """Columns of a partition and of a staged batch's fingerprints: each value, its file, its span."""
    _require_arrow()
    return pa.schema([("value", pa.uint64()), ("file_id", pa.int64()), ("d", pa.uint8())])


def partition_of(values: np.ndarray, partitions: int) -> np.ndarray:
    """Partition of each fingerprint value (int64): bits 40.. of the value, ``partitions`` a power of two."""
    v = np.asarray(values, dtype=np.uint64)
    return ((v >> np.uint64(PARTITION_SHIFT)) & np.uint64(partitions - 1)).astype(np.int64)


@dataclass(frozen=True)
class Manifest:
    """What the store is now.  segments: in the order they were added.  scans: scans begun so
    far (each numbers its files' ids).  last_scan: what the last finished scan did."""

    partitions: int = DEFAULT_PARTITIONS
    segments: tuple[str, ...] = ()
    scans: int = 0
    algorithm: int = ALGORITHM_VERSION
    format: int = FORMAT
    last_scan: dict[str, Any] = field(default_factory=dict)


def write_atomic(path: Path, write: Any) -> None:
    """Write ``path`` whole or not at all: ``write(f)`` fills a temporary file beside it, which is
    flushed to disk and renamed over ``path``."""
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_table(path: Path, table: Any, row_group_size: int | None = None, compression: str = "snappy") -> None:
    """A Parquet file written atomically (:func:`write_atomic`)."""
    write_atomic(path, lambda f: pq.write_table(table, f, row_group_size=row_group_size, compression=compression))


def write_file_rows(path: Path, table: Any) -> None:
    """File rows (:func:`file_schema`) written atomically."""
    write_table(path, table, FILE_ROW_GROUP, FILE_COMPRESSION)


class Store:
    """An open store (``root``) as its manifest names it.  Reads see the segments the manifest
    named when it was opened, whatever a scan commits meanwhile."""

    def __init__(self, root: Path, manifest: Manifest) -> None:
        self.root = root
        self.manifest = manifest

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, root: Path | str, *, create: bool = False, partitions: int | None = None) -> Store:
        """Open the store at ``root``; with ``create`` make it when the folder is missing or empty
        (``partitions``: a power of two).  Raises :class:`StoreError`."""
        _require_arrow()
        root = Path(os.path.abspath(os.fspath(root)))
        mpath = root / MANIFEST
        if not mpath.exists():
            if not create:
                raise StoreError(f"{root} is not a simscan store (no {MANIFEST})",
                                 "Run `simscan cluster scan ROOT... --store DIR` first.")
            if root.exists() and (not root.is_dir() or any(root.iterdir())):
                raise StoreError(f"{root} is not a simscan store and not an empty folder",
                                 "Give a new or empty folder for a new store.")
            n = DEFAULT_PARTITIONS if partitions is None else partitions
            if n < 1 or n > MAX_PARTITIONS or n & (n - 1):
                raise StoreError(f"--partitions must be a power of two from 1 to {MAX_PARTITIONS}, not {n}")
            try:
                root.mkdir(parents=True, exist_ok=True)
                store = cls(root, Manifest(partitions=n))
                store.commit(store.manifest)
            except OSError as e:
                raise StoreError(f"cannot create the store {root}: {e.strerror or e}") from e
            return store
        try:
            data = json.loads(mpath.read_bytes())
            m = Manifest(
                partitions=int(data["partitions"]), segments=tuple(data["segments"]), scans=int(data["scans"]),
                algorithm=int(data["algorithm"]), format=int(data["format"]),
                last_scan=dict(data.get("last_scan") or {}),
            )
        except OSError as e:
            raise StoreError(f"cannot read the store {root}: {e.strerror or e}") from e
        except (ValueError, KeyError, TypeError) as e:
            raise StoreError(f"the store's manifest {mpath} is damaged ({e})",
                             "Scan into a new store (a new --store folder).") from e
        if m.format != FORMAT:
            raise StoreError(f"{root} is a store of another simscan version (format {m.format}; this one reads "
                             f"{FORMAT})",
                             "Scan into a new store with this version.")
        if partitions is not None and partitions != m.partitions:
            raise StoreError(f"the store {root} has {m.partitions} partitions, not {partitions}",
                             "Leave --partitions out, or scan into a new store.")
        return cls(root, m)

    def commit(self, manifest: Manifest) -> None:
        """Make ``manifest`` the store's (the commit point of a scan)."""
        data = asdict(manifest)
        data["segments"] = list(manifest.segments)
        write_atomic(self.root / MANIFEST, lambda f: f.write(json.dumps(data, indent=1, sort_keys=True).encode()))
        self.manifest = manifest

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the store's scan lock (one writer at a time).  Raises :class:`StoreError` when another
        scan holds it, or when the store cannot be written (read-only storage, no permission)."""
        try:
            fd = os.open(self.root / "scan.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise StoreError(f"cannot write to the store {self.root}: {e.strerror or e}",
                             "A scan writes into its store: give a folder this machine and every worker can "
                             "write (the other commands only read it).") from e
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.EACCES):
                    raise StoreError(f"another scan is writing to the store {self.root}",
                                     "Wait for it to finish (one scan at a time per store).") from e
                raise
            yield
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ paths
    def segment_dir(self, seg: str) -> Path:
        return self.root / "segments" / seg

    def rows_dir(self, seg: str) -> Path:
        return self.segment_dir(seg) / "files"

    def row_files(self, seg: str) -> list[Path]:
        """The files holding a segment's file rows (its scan's batches, moved in whole)."""
        d = self.rows_dir(seg)
        return sorted(d.glob("*.parquet")) if d.is_dir() else []

    def removed_path(self, seg: str) -> Path:
        return self.segment_dir(seg) / "removed.parquet"

    def part_path(self, seg: str, p: int) -> Path:
        return self.segment_dir(seg) / "fp" / f"part-{p:05d}.parquet"

    def staging_dir(self, scan: int) -> Path:
        return self.root / "staging" / f"scan-{scan:06d}"

    def new_segment_name(self) -> str:
        return f"seg-{self.manifest.scans:06d}-{uuid.uuid4().hex[:8]}"

    # ------------------------------------------------------------------ reading
    def removed_ids(self) -> np.ndarray:
        """Sorted ids retired by the segments (their rows are no longer live)."""
        parts = [pq.read_table(self.removed_path(s), columns=["id"]).column("id").to_numpy()
                 for s in self.manifest.segments if self.removed_path(s).exists()]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    def rows(self, columns: Sequence[str], ids: np.ndarray | None = None) -> Any:
        """The live file rows (failed files too) as one Arrow table of ``columns`` (plus ``id``),
        sorted by id; ``ids``: only those (a look-up: row groups without them are skipped)."""
        cols = list(dict.fromkeys(["id", *columns]))
        dead = self.removed_ids()
        tables = []
        for path in (f for seg in self.manifest.segments for f in self.row_files(seg)):
            if ids is None:
                t = pq.read_table(path, columns=cols)
            else:
                t = pq.read_table(path, columns=cols, filters=[("id", "in", np.asarray(ids, np.int64).tolist())])
            if dead.size and t.num_rows:
                t = t.filter(pc.invert(pc.is_in(t.column("id"), value_set=pa.array(dead))))
            tables.append(t)
        if not tables:
            return file_schema().empty_table().select(cols)
        t = pa.concat_tables(tables)
        return t.take(pc.sort_indices(t, sort_keys=[("id", "ascending")]))

    def file_table(self) -> FileTable:
        """The live files that were read (no error), as the local index's ``files()`` gives them:
        a :class:`simscan.index.FileTable` sorted by id."""
        cols = ["path", "size", "mtime_ns", "is_text", "encoding", "checksum", "partial", "content_hash", "simhash",
                "fp_count", "units", "device", "inode", "error"]
        t = self.rows(cols)
        t = t.filter(pc.is_null(t.column("error")))
        return table_from_rows(t)

    def fingerprints(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The stored sets of the live files ``ids`` as a CSR ``(ids ascending, offsets, values)``,
        as :meth:`simscan.index.Index.fingerprints` gives them (files that failed left out)."""
        t, offsets, values = self._sets(ids, [])
        return t.column("id").to_numpy(), offsets, values

    def stored_sets(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, FingerprintMeta]:
        """:meth:`fingerprints` with each value's meta aligned (span and place), as
        :meth:`simscan.index.Index.stored_sets` gives them."""
        t, offsets, values = self._sets(ids, ["meta"])
        meta = meta_columns(b"".join(t.column("meta").to_pylist()), offsets)
        return t.column("id").to_numpy(), offsets, values, meta

    def _sets(self, ids: np.ndarray, columns: list[str]) -> tuple[Any, np.ndarray, np.ndarray]:
        """(rows of ``columns`` of the live files ``ids`` read without error, offsets, values)."""
        t = self.rows(["fps", "error", *columns], np.unique(np.asarray(ids, np.int64)))
        t = t.filter(pc.is_null(t.column("error")))
        blobs = t.column("fps").to_pylist()
        lens = np.fromiter((len(b) // 8 for b in blobs), np.int64, len(blobs))
        offsets = np.zeros(lens.size + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        return t, offsets, np.frombuffer(b"".join(blobs), "<u8").astype(np.uint64)

    def part_files(self, p: int) -> list[Path]:
        """The files holding partition ``p`` (one per segment that has values there)."""
        return [path for s in self.manifest.segments if (path := self.part_path(s, p)).exists()]

    # ------------------------------------------------------------------ housekeeping
    def remove_garbage(self, keep_staging: bool = True) -> None:
        """Remove what no manifest names: segments of scans killed before their commit, those a
        compaction replaced, temporary files; and, unless ``keep_staging``, every staged batch."""
        live = set(self.manifest.segments)
        seg_root = self.root / "segments"
        if seg_root.is_dir():
            for d in seg_root.iterdir():
                if d.name not in live:
                    shutil.rmtree(d, ignore_errors=True)
        if not keep_staging:
            shutil.rmtree(self.root / "staging", ignore_errors=True)
        for tmp in self.root.rglob(".*.tmp-*"):
            with contextlib.suppress(OSError):
                tmp.unlink()

    def stats(self) -> dict[str, Any]:
        """Counts for people and tools.  ``files``: every live row, failed files too (what the
        local index's ``stats()`` counts)."""
        t = self.rows(["size", "is_text", "error", "fp_count"])
        err = t.column("error").is_null().to_numpy(zero_copy_only=False)
        return {
            "store": str(self.root),
            "format": self.manifest.format,
            "algorithm_version": self.manifest.algorithm,
            "partitions": self.manifest.partitions,
            "segments": len(self.manifest.segments),
            "files": int(t.num_rows),
            "bytes": int(pc.sum(t.column("size")).as_py() or 0),
            "text_files": int(np.count_nonzero(t.column("is_text").to_numpy(zero_copy_only=False)[err])),
            "binary_files": int(np.count_nonzero(~t.column("is_text").to_numpy(zero_copy_only=False)[err])),
            "files_with_errors": int(np.count_nonzero(~err)),
            "fingerprints": int(pc.sum(t.column("fp_count")).as_py() or 0),
            "last_scan": self.manifest.last_scan or None,
        }

    def with_manifest(self, **changes: Any) -> Manifest:
        return replace(self.manifest, **changes)


def meta_columns(blob: bytes, offsets: np.ndarray) -> FingerprintMeta:
    """The meta of the sets ``offsets`` (a CSR) from their ``FingerprintMeta`` blobs joined in row
    order (each one's columns one after the other: d, unit, char, chars), column by column."""
    buf = np.frombuffer(blob, np.uint8)
    offsets = np.asarray(offsets, np.int64)
    n = int(offsets[-1])
    if buf.size != FingerprintMeta.BYTES * n:
        raise ValueError(f"the meta of {n} values has {FingerprintMeta.BYTES * n} bytes, not {buf.size}")
    counts = np.diff(offsets)
    # Which column each byte is of: per set, n bytes of d, 4n of unit, 4n of char, 2n of chars.
    column = np.repeat(np.tile(np.arange(4, dtype=np.uint8), counts.size), (counts[:, None] * _META_WIDTHS).ravel())
    d, unit, char, chars = (buf[column == k].view(dt) for k, dt in enumerate(("u1", "<u4", "<u4", "<u2")))
    return FingerprintMeta(d, unit.astype(np.uint32), char.astype(np.uint32), chars.astype(np.uint16))


#: Bytes a value of each column of a ``FingerprintMeta`` blob.
_META_WIDTHS = np.array([1, 4, 4, 2], np.int64)


def table_from_rows(t: Any) -> FileTable:
    """A :class:`simscan.index.FileTable` of Arrow file rows (in their order)."""
    n = t.num_rows

    def col(name: str, dtype: Any) -> np.ndarray:
        return np.asarray(t.column(name).to_numpy(zero_copy_only=False), dtype=dtype).reshape(n)

    raw = [bytes(p) for p in t.column("path").to_pylist()]
    return FileTable(
        ids=col("id", np.int64),
        paths=[os.fsdecode(p) for p in raw],
        raw_paths=raw,
        size=col("size", np.int64),
        mtime_ns=col("mtime_ns", np.int64),
        is_text=col("is_text", bool),
        encoding=t.column("encoding").to_pylist(),
        checksum=[bytes(x) for x in t.column("checksum").to_pylist()],
        partial=col("partial", np.int64),
        content_hash=[bytes(x) for x in t.column("content_hash").to_pylist()],
        simhash=col("simhash", np.uint64),
        fp_count=col("fp_count", np.int64),
        units=col("units", np.int64),
        device=col("device", np.int64),
        inode=col("inode", np.int64),
    )

