"""``simscan cluster scan``: walk here, read on the workers, commit a segment to the store.

1. **Walk** (this process, the local scan's walk: ``simscan.walk``, same options and rules).  A
   file whose path, size and mtime match its live row in the store, read by this algorithm
   version without error, is unchanged and not read.  A file an earlier, unfinished scan staged
   with the same size and mtime is taken from its staged batch instead of being read again.
   Others are queued in batches while the walk goes on, and each batch is sent to the cluster at
   once (:func:`tasks.read_batch`: the local scan's reading code; each task stages its rows and
   its fingerprints, one row group per partition).
2. **Read**: the batches run on the workers; a worker that dies costs Dask a retry of its
   batches (the staged files of a batch are written under fixed names, atomically).
3. **Write** (the shuffle): one task per partition gathers its row group of every batch into the
   new segment's partition file (:func:`tasks.write_partition`); the batches' row files move into
   the segment as they are; the client then writes the ids retired (changed files, files gone
   from under the ROOTs, files now left out) and renames the new manifest into place: the commit.
   Staged batches are removed after it.  Past :data:`MAX_SEGMENTS` segments (or after an
   algorithm change) the segments are compacted into one, the same way.

Progress: phases ``walk``, ``read``, ``write`` as the local scan reports them.  Cancel (a
``CancelToken``, or Ctrl-C) stops sending work, cancels what was sent, and commits nothing; the
batches finished are staged and the next scan takes them.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from simscan.cluster import tasks
from simscan.cluster.connect import check_workers_see
from simscan.cluster.store import Store, write_table
from simscan.index.store import KEPT_PROBLEM
from simscan.model import ALGORITHM_VERSION
from simscan.progress import Cancelled, CancelToken, Progress, ProgressSink, Throttle
from simscan.scanner import _normalise_roots
from simscan.walk import Entry, WalkOptions, walk

#: A batch (one task) holds at most this many files or bytes (a larger file is a batch alone):
#: a task's scheduling and its two staged files cost a few ms, a batch of small files ~0.1 s.
BATCH_FILES = 4096
BATCH_BYTES = 64 << 20
#: Segments kept before a scan compacts them into one (every partition read reads each).
MAX_SEGMENTS = 8
#: Progress reports per second.
PROGRESS_RATE = 10.0


@dataclass(frozen=True, slots=True)
class ClusterScanRequest:
    """What to scan into which store.  walk: which files (the local scan's options; the store's
    own folder is always left out).  partitions: for a new store (None: ``store.DEFAULT_PARTITIONS``)."""

    roots: list[Path]
    store: Path
    walk: WalkOptions = field(default_factory=WalkOptions)
    partitions: int | None = None
    batch_files: int = BATCH_FILES
    batch_bytes: int = BATCH_BYTES


@dataclass(frozen=True, slots=True)
class ClusterScanResult:
    """files_read: files sent to the workers and read; files_reused: taken from the batches an
    unfinished scan had staged; files_failed: could not be read (problems)."""

    files_seen: int
    files_read: int
    files_reused: int
    files_unchanged: int
    files_removed: int
    files_failed: int
    bytes_read: int
    problems: int
    cancelled: bool
    elapsed_s: float
    hidden_skipped: int = 0
    segments: int = 0
    compacted: bool = False


@dataclass(slots=True)
class _Staged:
    """A file row an unfinished scan staged: where, and as what."""

    rows: str
    fps: str
    file_id: int
    size: int
    mtime_ns: int


def _staged_rows(store: Store) -> dict[bytes, _Staged]:
    """path -> the row an earlier, unfinished scan staged for it (read without error); the newest
    batch wins.  A batch counts only when both of its files were written (rows last)."""
    import pyarrow.parquet as pq

    out: dict[bytes, _Staged] = {}
    root = store.root / "staging"
    if not root.is_dir():
        return out
    for rows_path in sorted(root.glob("scan-*/batch-*[0-9].parquet")):
        fp_path = rows_path.with_name(rows_path.name.replace(".parquet", ".fp.parquet"))
        if not fp_path.exists():
            continue
        try:
            t = pq.read_table(rows_path, columns=["id", "path", "size", "mtime_ns", "error"])
        except Exception:  # noqa: BLE001, S112 - a damaged staged batch is read again, not used
            continue
        for fid, path, size, mtime, err in zip(*(t.column(c).to_pylist() for c in t.column_names)):
            if err is None:
                out[bytes(path)] = _Staged(str(rows_path), str(fp_path), int(fid), int(size), int(mtime))
    return out


class _Scan:
    """One scan's state: the queue of batches, the futures sent, the counts."""

    def __init__(self, client: Any, store: Store, req: ClusterScanRequest, scan_no: int, throttle: Throttle,
                 cancel: CancelToken) -> None:
        self.client, self.store, self.req, self.scan_no = client, store, req, scan_no
        self.throttle, self.cancel = throttle, cancel
        self.staging = store.staging_dir(scan_no)
        self.staging.mkdir(parents=True, exist_ok=True)
        self.batch: list[tuple[int, bytes, int, int, int, int]] = []
        self.batch_bytes = 0
        self.next_k = 0
        self.tag = uuid.uuid4().hex[:8]
        self.futures: list[Any] = []
        self.batches: list[int] = []  # files per batch sent
        self.files_total = self.bytes_total = 0
        self.done_files = self.done_bytes = 0
        self.read_ok = self.failed = self.bytes_read = 0
        self.problems: list[tuple[bytes, str]] = []

    def add(self, e: Entry) -> None:
        fid = (self.scan_no << 32) | self.next_k
        self.next_k += 1
        path, dev, ino, size, mtime, _ = e
        if self.batch and (len(self.batch) >= self.req.batch_files or self.batch_bytes + size > self.req.batch_bytes):
            self.send()
        self.batch.append((fid, path, size, mtime, dev, ino))
        self.batch_bytes += size
        self.files_total += 1
        self.bytes_total += size

    def send(self) -> None:
        if not self.batch:
            return
        k = len(self.batches)
        self.futures.append(self.client.submit(
            tasks.read_batch, str(self.staging), k, self.req.walk.follow_links, self.batch,
            self.store.manifest.partitions, key=f"simscan-read-{self.scan_no}-{k}-{self.tag}", retries=1,
        ))
        self.batches.append(len(self.batch))
        self.batch, self.batch_bytes = [], 0

    def wait(self) -> None:
        """Until every batch sent is read (reporting ``read``); raises :class:`Cancelled`."""
        from distributed import as_completed

        self.send()
        files = {f.key: n for f, n in zip(self.futures, self.batches)}
        self.report(force=True)
        for fut, res in as_completed(self.futures, with_results=True):
            if self.cancel.cancelled:
                raise Cancelled
            if isinstance(res, BaseException):  # (a future cancelled: the client lost its scheduler)
                raise res
            self.done_files += files[fut.key]
            self.done_bytes += res.bytes_read
            self.read_ok += res.ok
            self.failed += res.failed
            self.bytes_read += res.bytes_read
            self.problems.extend(res.problems)
            self.report()
        self.report(force=True)

    def report(self, force: bool = False) -> None:
        self.throttle.report(
            Progress("read", self.done_files, self.files_total, min(self.done_bytes, self.bytes_total),
                     self.bytes_total),
            force=force,
        )

    def stop(self) -> None:
        if self.futures:
            self.client.cancel(self.futures)


def run_cluster_scan(
    client: Any, req: ClusterScanRequest, progress: ProgressSink | None = None, cancel: CancelToken | None = None
) -> ClusterScanResult:
    """Scan ``req.roots`` into the store ``req.store`` (made when missing) on the cluster of
    ``client``.  Raises ``StoreError`` (not a store, another scan writing) and KeyboardInterrupt
    (after cancelling the work sent; what finished stays staged).  A cancelled scan returns with
    ``cancelled=True`` and commits nothing."""
    t0 = time.monotonic()
    cancel = cancel or CancelToken()
    throttle = Throttle(progress, PROGRESS_RATE)
    store = Store.open(req.store, create=True, partitions=req.partitions)
    check_workers_see(client, store, req.roots)
    with store.writing():
        store.remove_garbage(keep_staging=True)
        scan_no = store.manifest.scans + 1
        # The scan's number is taken before any of its rows is written: its ids are its own.
        store.commit(store.with_manifest(scans=scan_no))
        scan = _Scan(client, store, req, scan_no, throttle, cancel)
        try:
            return _run(store, req, scan, t0)
        except Cancelled:
            scan.stop()
            _write_problems(store, scan.problems)
            return _result(scan, {}, cancelled=True, t0=t0)
        except BaseException:
            scan.stop()
            raise


def _run(store: Store, req: ClusterScanRequest, scan: _Scan, t0: float) -> ClusterScanResult:
    import pyarrow as pa
    import pyarrow.compute as pc

    from simscan.extract import current_versions

    roots = _normalise_roots(req.roots)
    opts = replace(req.walk, skip_paths=req.walk.skip_paths | {os.fsencode(store.root)})
    current = store.manifest.algorithm == ALGORITHM_VERSION
    rows = store.rows(["path", "size", "mtime_ns", "error", "extractor_version"])
    # Read by the current document readers too (a new reader re-reads its format's files only).
    readers = pa.array(current_versions())
    prefixes = tuple(r if r.endswith(b"/") else r + b"/" for r in roots)
    # path -> (id, size, mtime_ns, read without error) of the live rows under the roots.
    known: dict[bytes, tuple[int, int, int, bool]] = {}
    ok_rows = pc.and_(pc.is_null(rows.column("error")), pc.is_in(rows.column("extractor_version"), value_set=readers))
    for fid, path, size, mtime, ok in zip(
        rows.column("id").to_pylist(), rows.column("path").to_pylist(), rows.column("size").to_pylist(),
        rows.column("mtime_ns").to_pylist(), ok_rows.to_pylist(),
    ):
        p = bytes(path)
        if p in roots or p.startswith(prefixes):
            known[p] = (fid, size, mtime, ok and current)
    staged = _staged_rows(store)
    # What the last scans noted about files (a damaged document read by its bytes): kept, as the local
    # scan keeps it, for those found unchanged (the walk's own problems it finds again).
    noted = dict(_stored_problems(store)) if current else {}
    kept: list[tuple[bytes, str]] = []
    retire: list[int] = [] if current else rows.column("id").to_pylist()
    reuse: dict[tuple[str, str], list[int]] = {}
    counts = {"unchanged": 0, "reused": 0, "found": 0}

    def on_dir(folder: bytes, files: list[Entry], start: int, walk_unchanged: int = 0) -> None:
        if scan.cancel.cancelled:
            raise Cancelled
        counts["found"] += len(files) - start
        for e in files[start:]:
            path, size, mtime = e[0], e[3], e[4]
            row = known.pop(path, None)
            if row is not None:
                if row[3] and row[1] == size and row[2] == mtime:
                    counts["unchanged"] += 1
                    if path in noted:
                        kept.append((path, noted[path].removesuffix(KEPT_PROBLEM) + KEPT_PROBLEM))
                    continue
                if current:
                    retire.append(row[0])
            st = staged.get(path)
            if st is not None and st.size == size and st.mtime_ns == mtime:
                reuse.setdefault((st.rows, st.fps), []).append(st.file_id)
                counts["reused"] += 1
                continue
            scan.add(e)
        scan.throttle.report(Progress("walk", files_done=counts["found"], current=os.fsdecode(folder)))

    walked = walk(roots, opts, on_dir, keep=False)
    scan.problems.extend(walked.problems)
    scan.problems.extend(kept)
    scan.throttle.report(Progress("walk", files_done=walked.found), force=True)
    # What the walk did not find again is gone, or now left out -- except below folders it could not list.
    prot = tuple(u if u.endswith(b"/") else u + b"/" for u in walked.unreadable_dirs)
    gone = [row[0] for p, row in known.items() if not (prot and p.startswith(prot))]
    if current:
        retire.extend(gone)
    scan.wait()
    scan.throttle.report(Progress("write", 0, 1, message="shuffling fingerprints into partitions"), force=True)
    changed = bool(scan.batches or reuse or retire)
    compacted = False
    if changed:
        _commit(store, scan, reuse, np.unique(np.asarray(retire, np.int64)))
        if len(store.manifest.segments) > MAX_SEGMENTS or not current:
            compact(scan.client, store, scan.cancel)
            compacted = True
    done = {
        "files_seen": walked.found, "files_unchanged": counts["unchanged"], "files_reused": counts["reused"],
        "files_removed": len(gone), "hidden_skipped": walked.hidden,
    }
    _write_problems(store, scan.problems)
    result = _result(scan, done, cancelled=False, t0=t0, compacted=compacted)
    last = {"finished": time.time(), "roots": [os.fsdecode(r) for r in roots], "files_seen": result.files_seen,
            "files_read": result.files_read, "problems": result.problems, "elapsed_s": round(result.elapsed_s, 3)}
    store.commit(store.with_manifest(last_scan=last))
    store.remove_garbage(keep_staging=False)
    scan.throttle.report(Progress("done", files_done=result.files_read, bytes_done=result.bytes_read), force=True)
    return result


def _commit(store: Store, scan: _Scan, reuse: dict[tuple[str, str], list[int]], retire: np.ndarray) -> None:
    """Shuffle the staged batches (and the rows reused from earlier ones) into a new segment and
    commit it (phase ``write``).  The batches' row files move into the segment as they are."""
    client = scan.client
    seg = store.new_segment_name()
    batches = [tasks.batch_paths(scan.staging, k) for k in range(len(scan.batches))]
    fp_sources: list[tasks.Source] = [(str(fps), None) for _, fps in batches]
    fp_sources += [(fps, np.asarray(ids, np.int64)) for (_, fps), ids in reuse.items()]
    futures = [client.submit(tasks.write_partition, str(store.part_path(seg, p)), p, fp_sources,
                             key=f"simscan-shuffle-{seg}-{p}") for p in range(store.manifest.partitions)]
    rows = store.rows_dir(seg)
    # Rows reused from an earlier scan's batches: only those still wanted (one file of them).
    if reuse:
        futures.append(client.submit(tasks.write_rows, str(rows / "reused.parquet"),
                                     [(r, np.asarray(ids, np.int64)) for (r, _), ids in reuse.items()],
                                     key=f"simscan-rows-{seg}"))
    _wait_write(client, futures, scan.throttle, scan.cancel)
    rows.mkdir(parents=True, exist_ok=True)
    for rows_path, _ in batches:
        os.replace(rows_path, rows / rows_path.name)
    write_table(store.removed_path(seg), _ids_table(retire))
    store.commit(store.with_manifest(segments=(*store.manifest.segments, seg), algorithm=ALGORITHM_VERSION))


def compact(client: Any, store: Store, cancel: CancelToken | None = None, throttle: Throttle | None = None) -> None:
    """Rewrite the store's segments as one, without the retired rows, and commit it."""
    dead = store.removed_ids()
    seg = store.new_segment_name()
    dead_f = client.scatter(dead, broadcast=True, hash=False)
    futures = [client.submit(tasks.write_partition, str(store.part_path(seg, p)), None,
                             [(str(f), None) for f in store.part_files(p)], dead_f, key=f"simscan-compact-{seg}-{p}")
               for p in range(store.manifest.partitions)]
    row_files = [(str(f), None) for s in store.manifest.segments for f in store.row_files(s)]
    futures.append(client.submit(tasks.write_rows, str(store.rows_dir(seg) / "rows.parquet"), row_files, dead_f,
                                 key=f"simscan-compact-{seg}-rows"))
    _wait_write(client, futures, throttle, cancel)
    write_table(store.removed_path(seg), _ids_table(np.zeros(0, np.int64)))
    store.commit(store.with_manifest(segments=(seg,), algorithm=ALGORITHM_VERSION))
    store.remove_garbage()


def _wait_write(client: Any, futures: list[Any], throttle: Throttle | None, cancel: CancelToken | None) -> None:
    from distributed import as_completed

    for done, _ in enumerate(as_completed(futures), 1):
        if cancel is not None and cancel.cancelled:
            client.cancel(futures)
            raise Cancelled
        if throttle is not None:
            throttle.report(Progress("write", done, len(futures), message="shuffling fingerprints into partitions"))
    client.gather(futures)  # (raises what a task raised)


def _ids_table(ids: np.ndarray) -> Any:
    import pyarrow as pa

    return pa.table({"id": np.asarray(ids, np.int64)})


def _write_problems(store: Store, problems: Sequence[tuple[bytes, str]]) -> None:
    """The last scan's problems (``simscan cluster problems``)."""
    import pyarrow as pa

    from simscan.index.store import storable_text

    # (a reason may name a path that is not UTF-8: stored with \xNN escapes, as the local index stores it)
    t = pa.table({"path": pa.array([p for p, _ in problems], pa.binary()),
                  "reason": pa.array([storable_text(r) for _, r in problems], pa.string())})
    write_table(store.root / "problems.parquet", t)


def _stored_problems(store: Store) -> list[tuple[bytes, str]]:
    import pyarrow.parquet as pq

    path = store.root / "problems.parquet"
    if not path.exists():
        return []
    t = pq.read_table(path)
    return [(bytes(p), r) for p, r in zip(t.column("path").to_pylist(), t.column("reason").to_pylist())]


def problems(store: Store) -> list[tuple[str, str]]:
    """(path, reason) of what the last scan could not read, and of what it found unchanged with a
    problem an earlier scan noted."""
    return [(os.fsdecode(p), r) for p, r in _stored_problems(store)]


def _result(
    scan: _Scan, done: dict[str, int], *, cancelled: bool, t0: float, compacted: bool = False
) -> ClusterScanResult:
    return ClusterScanResult(
        files_seen=done.get("files_seen", 0), files_read=scan.read_ok, files_reused=done.get("files_reused", 0),
        files_unchanged=done.get("files_unchanged", 0), files_removed=done.get("files_removed", 0),
        files_failed=scan.failed, bytes_read=scan.bytes_read, problems=len(scan.problems), cancelled=cancelled,
        elapsed_s=time.monotonic() - t0, hidden_skipped=done.get("hidden_skipped", 0),
        segments=len(scan.store.manifest.segments), compacted=compacted,
    )


