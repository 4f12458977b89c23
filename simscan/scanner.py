"""Scanning: walk the roots, read what changed on reading threads, write it to the index.

One core API for the CLI and the GUI::

    result = run_scan(ScanRequest([Path("~/Documents")]), progress=sink, cancel=token)

Phases (reported through :class:`simscan.progress.Throttle`, about 10 reports a second):
``walk`` (list and stat, nothing opened), ``read`` (fingerprint the new and changed files),
``write`` (add the last new fingerprints to the inverted index in one sorted pass, see
:mod:`simscan.index.schema` version 2; most were added in slices while the writer waited for its
workers, from the posted values kept per commit, and once every task is submitted the writer posts
what waits in smaller jobs so that this pass holds only the last files) and ``done``.

Roots are resolved to real paths (symbolic links followed) and a root inside another one, or
given twice, is dropped: every file has one path in the index.  A new path whose (device, inode)
is already indexed under another path outside the roots that still leads to the same file (a
hard link, a bind mount, an earlier scan by another route) is not indexed again but noted as a
problem ("same file as ...: indexed once"), as the walk does for hard links within one scan.

Incremental: a path whose (device, inode, size, mtime_ns) matches its index row, computed by
the current algorithm version and without error, is not opened.  A path not in the index whose
(device, inode, size, mtime_ns) matches an indexed path that has disappeared is a rename: its
row gets the new path, nothing is read.  Indexed paths under the roots that the walk no longer
finds (deleted, or now excluded by the options) are forgotten with their fingerprints - except
below folders that could not be listed this time, whose rows are kept.

Threading model: the calling thread walks, decides and is the ONLY writer to SQLite; ``jobs``
reading threads open, read and fingerprint files in batches - up to :data:`BATCH_FILES` small
files or one large file per task - in the native core (``simscan._native.read_task``), which
releases the GIL for the whole batch and hands back compact tuples (one job: the calling thread
reads between folders).  Reading starts while the walk goes on: after each folder the walker
queues its new and changed files and collects finished batches without waiting.  A new path that
might be a rename (it has the identity of an indexed file) waits for the end of the walk, when it
is known whether the old path is gone.  The writer commits every :data:`COMMIT_FILES` files or
:data:`COMMIT_SECONDS`, so a crash, a cancel or Ctrl-C loses at most one batch, and the next scan
picks up the rest.  At most ``3 x jobs`` tasks are in flight (``8 x jobs`` while they hold at most
64 MB of files), which bounds memory whatever the tree.  Threads replaced the worker processes of
earlier versions: no fork server to start, no pickling of results, nothing left behind by a
``kill -9``, and a panic in the core is a problem line for its file.

A rescan of a large tree (:data:`SPLIT_WALK_MIN_FILES`) from the command line, with a CPU idle, walks
in two processes: a forked child (:class:`simscan.walk.ForkedShare`, before any thread or worker
exists; it never touches SQLite) stats the files of its share of the names while this process reads
the index rows, then walks its own share and classifies the child's list.  A child that fails has
its share walked again here.  An unchanged file is never listed, only counted.

Files are opened read-only with O_NOATIME where the kernel permits it (owner or root), with
O_NONBLOCK (a file swapped for a FIFO after the walk cannot block the scan) and O_NOFOLLOW
unless links are followed.  A file whose size or mtime changes while it is read is retried
once, then reported as a problem.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from simscan import _native
from simscan.extract import PLAIN_VERSION, sniff_bytes, sniff_fd
from simscan.extract.pool import ExtractionPool
from simscan.fingerprint import DEFAULT_PARAMS, fingerprint_bytes, fingerprint_file, open_fd_unseen
from simscan.index import FileRecord, Index, PostingJob, companion_paths, posting_spans, set_aside_paths
from simscan.index.store import KEPT_PROBLEM
from simscan.progress import Cancelled, CancelToken, Progress, ProgressSink, Throttle
from simscan.walk import (
    SHARES,
    Entry,
    ForkedShare,
    WalkOptions,
    WalkResult,
    admit_linked,
    can_fork,
    is_unchanged,
    spare_cpu,
    walk,
)  # fmt: skip

#: Small files per task: one call into the native core (and one GIL release) per 256 files, while
#: 256 x ~8 KB keeps a task ~2 MB and the in-flight window (3 x jobs tasks) a few MB.
BATCH_FILES = 256
#: A task's byte budget; files of at least LARGE_FILE bytes are a task each (streamed, not read whole).
BATCH_BYTES = 8 << 20
LARGE_FILE = _native.LARGE_FILE
#: Tasks in flight per thread while they are small (their files total at most IN_FLIGHT_BYTES; larger
#: ones: 3 per thread).  A thread's queue of 3 tasks of 256 small files lasts a few ms, less than the
#: writer may spend on one commit or posting step, after which the thread would wait; results of
#: small files are ~1.7 KB each, so 8 tasks cost a few MB.
IN_FLIGHT_TASKS = 8
IN_FLIGHT_BYTES = 64 << 20
#: Fingerprints kept per file at most (8 M = a 64 MB blob: ~330 MB of text or ~2.3 GB of binary with the
#: default densities, measured 24.5 and 3.5 per KB).  Beyond it a file keeps its checksums only: its set
#: would cost hundreds of MB in the writer and in the index; SQLite's blob limit is 1 GB anyway.
MAX_FINGERPRINTS = 8 << 20
#: A rescan of at least this many indexed files walks the tree in two processes.  A stat costs ~2.5 us here
#: and reading 100 k rows ~0.15 s: a forked child lists every folder and stats the files of CHILD_SHARE
#: (11/16 of them) while this process reads the rows, then stats the rest, comparing each with its row, and
#: classifies what the child found (~0.5 us a file).  The child costs ~20 ms (fork, its list sent back).
#: 100,000 unchanged files, quiet machine: 0.57 s in one process; 0.47 s with 12/16 to the child, 0.45
#: with 11/16, 0.47 with 10/16.
SPLIT_WALK_MIN_FILES = 30_000
OWN_SHARE = (0, 5)
CHILD_SHARE = (5, SHARES)
#: Commit after this many files or seconds, whichever comes first: a commit costs a few ms (WAL, no
#: fsync with synchronous=NORMAL), and a crash loses at most this much work.
COMMIT_FILES = 4000
COMMIT_SECONDS = 2.0
#: ... or once this many bytes of fingerprints wait (large files: keeps the writer's memory bounded).
COMMIT_BYTES = 32 << 20
#: ... and, while the writer waits for its workers, as soon as this many bytes of fingerprints wait
#: (a large file; ~2,700 small ones, near COMMIT_FILES anyway).
IDLE_COMMIT_BYTES = 4 << 20
#: Posted (value, file id) pairs kept in memory for the posting jobs at most (16 bytes a pair, ~25 pairs per
#: small file: ~160,000 files); beyond it the newest commits' jobs read their fingerprints back from the index.
WAITING_PAIRS_BYTES = 64 << 20
#: Files that wait for the inverted index before the scan posts them while its workers are busy.
POST_JOB_FILES = 16_000
#: ... and at most this many per job, holding at most POST_JOB_MAX_FINGERPRINTS: a text posts up to about
#: half its values (its sample and its values of span 128; a third on a tree of 150,000 small texts), 12
#: bytes a posting, ~32 while the job sorts them.  100,000 small texts (22 M values, 7.75 M postings): a
#: job peaks at ~190 MB, the scan of 150,000 files at 556 MB (758 MB when a job held every copy at once).
POST_JOB_MAX_FILES = 100_000
POST_JOB_MAX_FINGERPRINTS = 24_000_000
#: ... or once this many fingerprints wait, however few files hold them (about what 16,000 small
#: files have; 2-3 large text files): large files are then posted while the workers read the next
#: ones instead of in a final pass (8 files of 25-100 MB: ~0.5 s less after the last one is read).
POST_JOB_FINGERPRINTS = 3_000_000
#: Progress reports per second (0: every report, for tests).
PROGRESS_RATE = 10.0


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """What to scan.  Sizes in bytes; ``jobs`` reading threads (None: one per CPU)."""

    roots: list[Path]
    index_path: Path | None = None
    exclude: list[str] = field(default_factory=list)
    include: list[str] = field(default_factory=list)
    hidden: bool = False
    min_size: int = 0
    max_size: int | None = None
    follow_links: bool = False
    jobs: int | None = None


@dataclass(frozen=True, slots=True)
class ScanResult:
    run_id: int
    files_seen: int
    files_read: int
    files_unchanged: int
    files_removed: int
    bytes_read: int
    problems: int
    cancelled: bool
    elapsed_s: float
    files_renamed: int = 0
    files_failed: int = 0
    index_path: str = ""
    #: Hidden files and folders left out (names starting with "."; ``ScanRequest.hidden`` False).
    hidden_skipped: int = 0
    #: Files whose entries in the index were damaged: forgotten before the walk, so read again
    #: (those under the roots by this scan; see ``Index.check_for_scan``).
    files_repaired: int = 0
    #: What the scan's check of the index found damaged and repaired, for a person (empty: nothing).
    repairs: tuple[str, ...] = ()


# --------------------------------------------------------------------------- reading
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

#: One task: (follow_links, [(slot, path, size), ...]).
Task = tuple[bool, list[tuple[int, bytes, int]]]
#: Per file: (slot, None, reason) on failure, or (slot, stat (dev, ino, size, mtime_ns, ctime_ns), payload) on success;
#: a document's payload is (DOCUMENT, format) until the extraction pool has read it.
Outcome = tuple[int, Any, Any]
#: Marks a payload that says "this file is a document" (``simscan.extract.sniff``).
DOCUMENT = "document"


class _Changed(Exception):
    pass


def _open(path: bytes, follow: bool) -> int:
    return open_fd_unseen(path, os.O_RDONLY | os.O_NONBLOCK | _O_CLOEXEC | (0 if follow else _O_NOFOLLOW))


def _payload(fp: Any) -> tuple[Any, ...]:
    """The payload ``_native.read_task`` makes, for a file fingerprinted in Python (legacy text)."""
    note = None
    if fp.rolling.size + fp.anchored.size > MAX_FINGERPRINTS:
        # Kept whole, such a set would cost hundreds of MB in the writer and in the index.
        note = (
            f"too large for content fingerprints ({fp.rolling.size + fp.anchored.size:,} > {MAX_FINGERPRINTS:,}); "
            "indexed by checksum only (exact copies are still found)"
        )
        fps, n_roll = b"", 0
    else:
        fps = np.concatenate((fp.rolling, fp.anchored)).astype("<u8", copy=False).tobytes()
        n_roll = int(fp.rolling.size)
    meta = b"" if note else fp.meta.blob()
    return (
        fp.is_text, fp.encoding, fp.checksum, fp.partial, fp.content_hash, fp.simhash, fp.units,
        fps, n_roll, fp.size, note, meta,
    )  # fmt: skip


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What a file is as read: (device, inode, size, mtime_ns, ctime_ns)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_task(task: Task, stop: _native.StopFlag | None = None) -> list[Outcome]:
    """Open, read and fingerprint one task's files (on a reading thread, or inline).

    The native core does it all with the GIL released (``_native.read_task``: open without
    touching the access time, fstat before and after, read at most one byte past the size, retry a
    file that changed once, fingerprint; a panic there is a problem line for that file).  Two kinds
    of file come back to be finished here: texts in a legacy encoding (chardet's verdict), and files
    whose first bytes may be a document's (a zip, ``%PDF-``, RTF, markup), which
    ``simscan.extract.sniff`` tells apart: a document's payload is then ``(DOCUMENT, format)``, for
    the extraction pool.  ``stop`` set (a cancelled scan): the files not yet read come back as
    "cancelled" and a large file stops at its next chunk."""
    follow, items = task
    out: list[Outcome] = _native.read_task(items, follow, DEFAULT_PARAMS.native, MAX_FINGERPRINTS, stop)
    for k, (slot, key, payload) in enumerate(out):
        if key is None:
            if isinstance(payload, int):
                out[k] = (slot, None, f"cannot be read: {os.strerror(payload)}")
        elif payload[0] in ("legacy", "maybe-document"):
            path = next(item[1] for item in items if item[0] == slot)
            out[k] = _read_in_python(slot, key, path, payload[1], follow, sniff=payload[0] == "maybe-document")
    return out


def _read_in_python(slot: int, key: tuple[int, ...], path: bytes, data: bytes | None, follow: bool, sniff: bool) -> Outcome:
    """A file the core hands back: small files from the bytes it read (``data``), large ones read
    again, checked against the stat key the core saw.  ``sniff``: it may be a document."""
    try:
        if data is not None:
            fmt = sniff_bytes(data) if sniff else None
            return (slot, key, (DOCUMENT, fmt) if fmt else _payload(fingerprint_bytes(data)))
        fd = _open(path, follow)
        try:
            st = os.fstat(fd)
            fmt = sniff_fd(fd, st.st_size) if sniff and _stat_key(st) == tuple(key) else None
            fp = None if fmt else fingerprint_file(os.dup(fd), limit=st.st_size + 1)
            st2 = os.fstat(fd)
        finally:
            os.close(fd)
        if _stat_key(st) != tuple(key) or _stat_key(st2) != tuple(key) or (fp is not None and fp.size != st.st_size):
            return (slot, None, "changed while being read (tried twice); skipped this time")
        return (slot, key, (DOCUMENT, fmt) if fmt else _payload(fp))
    except FileNotFoundError:
        return (slot, None, "vanished before it could be read")
    except OSError as e:
        return (slot, None, f"cannot be read: {e.strerror or e}")
    except MemoryError:
        return (slot, None, "not enough memory to read it")
    except Exception as e:  # noqa: BLE001 - one bad input must not sink its task
        return (slot, None, f"could not be fingerprinted: {type(e).__name__}: {e}")


# --------------------------------------------------------------------------- planning
def _normalise_roots(roots: Sequence[Path | str | bytes]) -> list[bytes]:
    """Real (symlink-free) absolute byte paths of ``roots``, without duplicates or roots inside others.

    Resolving links matters: one folder reached as ``docs`` and as ``link -> docs`` (in one scan or
    in two) would otherwise be indexed twice, and its files reported as exact copies of themselves.
    """
    out: list[bytes] = []
    for r in roots:
        b = os.fsencode(os.path.expanduser(os.fsdecode(r)))
        b = os.path.realpath(os.path.abspath(b))
        if b not in out:
            out.append(b)
    # A root inside another root is scanned once, as part of the outer one.
    return [
        r for r in out
        if not any(o != r and r.startswith(o if o.endswith(b"/") else o + b"/") for o in out)
    ]  # fmt: skip


# --------------------------------------------------------------------------- the scan
def run_scan(
    request: ScanRequest, progress: ProgressSink | None = None, cancel: CancelToken | None = None
) -> ScanResult:
    """Scan ``request.roots`` into the index at ``request.index_path`` (default index if None).

    Raises the index errors (IndexLocked when another scan runs, IndexCorrupt, IndexUnavailable)
    and KeyboardInterrupt (after committing the finished work).  Problems with scanned files are
    recorded, never raised.  A cancelled scan returns with ``cancelled=True``.
    """
    import sqlite3

    from simscan.index.store import sqlite_failed

    t0 = time.monotonic()
    index = Index.open(request.index_path)
    try:
        index.scan_lock()
        try:
            return _scan(index, request, Throttle(progress, PROGRESS_RATE), cancel or CancelToken(), t0)
        except sqlite3.Error as e:
            raise sqlite_failed(index.path, e) from e  # (damage: the next scan checks all of the index)
    finally:
        index.close()


class _Writer:
    """Buffers finished files and commits them in batches (the only writer)."""

    def __init__(self, index: Index, run_id: int) -> None:
        self.index = index
        self.run_id = run_id
        self.records: list[FileRecord] = []
        self.problems: list[tuple[bytes, str]] = []
        self.remove: list[int] = []
        self.last = time.monotonic()
        self.n_problems = 0
        self.fp_bytes = 0
        #: Files this scan wrote whose postings are deferred, one entry per commit: (ids, fingerprint
        #: count, their posted (fp, file id) pairs).  The pairs are kept from the arrays just written,
        #: so a posting job need not read the blobs back (~10 us a file); they are 1/8 of the values,
        #: ~2 bytes per fingerprint, and bounded by the posting job thresholds.
        self.waiting: deque[tuple[list[int], int, np.ndarray | None, np.ndarray | None]] = deque()
        self.waiting_files = 0
        self.waiting_fps = 0
        self.waiting_pair_bytes = 0
        #: How many files and fingerprints it has posted so far.
        self.posted = 0
        self.posted_fps = 0

    def add(self, rec: FileRecord) -> None:
        self.records.append(rec)
        self.fp_bytes += rec.fps.nbytes

    def problem(self, path: bytes, reason: str) -> None:
        self.problems.append((path, reason))
        self.n_problems += 1

    def maybe_flush(self) -> None:
        if (
            len(self.records) >= COMMIT_FILES
            or self.fp_bytes >= COMMIT_BYTES
            or time.monotonic() - self.last >= COMMIT_SECONDS
        ):
            self.flush()

    def flush(self) -> None:
        if self.records or self.problems or self.remove:
            with self.index.atomic():
                ids = self.index.write_files(self.records, self.run_id, defer_postings=True)
                self.index.add_problems(self.run_id, self.problems)
                self.index.remove_ids(self.remove)
            ok = [i for i, r in enumerate(self.records) if r.error is None]
            if ok:
                ok_ids = ids[ok].tolist()
                arrays = [self.records[i].fps for i in ok]
                n_fps = sum(int(a.size) for a in arrays)
                # The posted pairs are kept for the posting job while there is room
                # (WAITING_PAIRS_BYTES); beyond it (results arriving faster than the writer finds a
                # moment to post, e.g. with many workers) a commit keeps its ids only, and its job
                # reads its fingerprints back.
                fp = owner = None
                if self.waiting_pair_bytes < WAITING_PAIRS_BYTES:
                    fp, owner = self.index.posted_pairs(ok_ids, arrays, [posting_spans(self.records[i]) for i in ok])
                    self.waiting_pair_bytes += fp.nbytes + owner.nbytes
                self.waiting.append((ok_ids, n_fps, fp, owner))
                self.waiting_files += len(ok_ids)
                self.waiting_fps += n_fps
            self.records, self.problems, self.remove = [], [], []
        self.last = time.monotonic()
        self.fp_bytes = 0


def _split_walk(req: ScanRequest, index: Index, roots: Sequence[bytes]) -> bool:
    """Whether to walk in two processes (:class:`simscan.walk.ForkedShare`): a rescan of at least
    :data:`SPLIT_WALK_MIN_FILES` indexed files, several processes allowed, links not followed, a
    process that may fork (:func:`simscan.walk.can_fork`: the command line, not the GUI) and a CPU
    idle right now (:func:`simscan.walk.spare_cpu`)."""
    return (
        not req.follow_links
        and (req.jobs is None or req.jobs > 1)
        and can_fork()
        and spare_cpu()
        and index.count_under(roots) >= SPLIT_WALK_MIN_FILES
    )


def _merge_share(
    walked: WalkResult,
    other: WalkResult,
    on_dir: Callable[[bytes, list[Entry], int], None],
    roots: Sequence[bytes],
    opts: WalkOptions,
) -> None:
    """Fold the child's share of the walk into ``walked`` (this process's share, which reported the
    folder problems).  Its files are classified like this process's own.  Files with several links
    (both shares held them back) are decided in walk order, as one walk decides them: the same name
    is indexed whatever the machine's load."""
    on_dir(b"", other.files, 0)
    linked = admit_linked(walked.linked + other.linked, roots, opts)
    on_dir(b"", linked.files, 0)
    walked.problems.extend(other.problems + linked.problems)
    walked.unreadable_dirs.extend(other.unreadable_dirs)  # a folder the child could not list keeps its rows
    walked.found += other.found + linked.found
    walked.skipped += other.skipped + linked.skipped
    walked.hidden += other.hidden
    walked.links_skipped += other.links_skipped
    walked.unchanged += other.unchanged


def _scan(index: Index, req: ScanRequest, throttle: Throttle, cancel: CancelToken, t0: float) -> ScanResult:
    roots = _normalise_roots(req.roots)
    skip = frozenset(os.fsencode(str(p)) for p in companion_paths(index.path) + set_aside_paths(index.path))
    opts = WalkOptions(
        exclude=tuple(req.exclude), include=tuple(req.include), hidden=req.hidden,
        min_size=req.min_size, max_size=req.max_size, follow_links=req.follow_links, skip_paths=skip,
    )  # fmt: skip
    options = {
        "exclude": list(req.exclude), "include": list(req.include), "hidden": req.hidden,
        "min_size": req.min_size, "max_size": req.max_size, "follow_links": req.follow_links,
    }  # fmt: skip
    # Reliability (simscan.index.verify): check the next slice of the index (all of it when due) and
    # forget the files whose entries or fingerprints are damaged, so that this walk reads them again.
    checked, repaired = index.check_for_scan()
    run_id = index.begin_run(roots, options)
    writer = _Writer(index, run_id)
    for path, why in repaired:
        writer.problem(path, why)
    counts: dict[str, float] = {"files_repaired": len(repaired)}
    repairs = tuple(checked.findings())
    status = "failed"
    helper: ForkedShare | None = None
    try:
        if _split_walk(req, index, roots):
            # A large rescan: a forked child stats most files while this process reads their rows.
            try:
                helper = ForkedShare(roots, opts, CHILD_SHARE)
            except OSError:  # no process to spare (EAGAIN, ENOMEM): one walk, as always
                helper = None
        old = index.identities_under(roots)  # path -> (path, id, dev, ino, size, mtime_ns, current, ctime_ns)
        by_key: dict[tuple[int, int, int, int], bytes] | None = None  # identity -> path, made when first needed

        def keys() -> dict[tuple[int, int, int, int], bytes]:
            nonlocal by_key
            if by_key is None:
                by_key = {r[2:6]: p for p, r in old.items() if r[6]}
            return by_key

        reader = _Reader(req, writer, throttle, counts, first_scan=not old)
        deferred: list[Entry] = []  # new paths that may be renames: decided once the walk is over
        unchanged = 0
        status = "running"

        found = 0
        counted = 0  # unchanged files of the walks already finished (the progress counts them with the others)
        fresh: list[Entry] = []  # new paths of the folder just listed
        prefixes = tuple(r if r.endswith(b"/") else r + b"/" for r in roots)

        def under_roots(p: bytes) -> bool:
            return p in roots or p.startswith(prefixes)

        def on_dir(folder: bytes, files: list[Entry], start: int, walk_unchanged: int = 0) -> None:
            nonlocal unchanged, found
            found += len(files) - start
            for k in range(start, len(files)):
                e = files[k]
                row = old.pop(e[0], None)
                if row is None:
                    if e[1:5] in keys():
                        deferred.append(e)
                    else:
                        fresh.append(e)
                elif is_unchanged(row, e):  # the walk's test, for the files it listed (links, shares)
                    unchanged += 1
                else:
                    reader.add(e, row[1])
            if fresh:
                elsewhere = _indexed_elsewhere(index, under_roots, fresh)
                for e in fresh:
                    first = elsewhere.get((e[1], e[2]))
                    if first is None:
                        reader.add(e, None)
                    else:
                        writer.problem(e[0], f"same file as {os.fsdecode(first)} (already in the index): indexed once")
                fresh.clear()
            if not reader.pump(cancel, block=False):
                raise Cancelled
            throttle.report(
                Progress("walk", files_done=found + counted + walk_unchanged, current=os.fsdecode(folder))
            )

        try:  # from here on the workers must be stopped whatever happens (Ctrl-C, index errors, bugs)
            try:
                # Classified as found: no list of the tree; unchanged files are not even listed.
                walked = walk(roots, opts, on_dir, keep=False, known=old, share=OWN_SHARE if helper else None)
                if helper is not None:
                    counted = walked.unchanged
                    other = helper.result()
                    if other is None:  # the child failed: its share is walked here
                        other = walk(roots, opts, on_dir, keep=False, known=old, share=CHILD_SHARE)
                        counted += other.unchanged
                    _merge_share(walked, other, on_dir, roots, opts)
                unchanged += walked.unchanged
            except Cancelled:
                walked = None
            reader.walking = False
            if walked is not None:
                for p, r in walked.problems:
                    writer.problem(p, r)
                throttle.report(Progress("walk", files_done=walked.found + walked.unchanged), force=True)
                # What the walk did not find again is gone, or renamed to one of the deferred paths.
                gone = old
                renames: list[tuple[int, bytes, int, int, int]] = []
                for e in deferred:
                    oldp = keys().get(e[1:5])
                    if oldp is not None and oldp in gone:
                        renames.append((gone.pop(oldp)[1], e[0], e[1], e[2], e[5]))
                    elif oldp is not None and _same_file(oldp, e):
                        # Both paths were walked and lead to one file (e.g. a bind mount): index it once.
                        writer.problem(e[0], f"same file as {os.fsdecode(oldp)} (already in the index): indexed once")
                    else:
                        reader.add(e, None)
                prot = tuple(u if u.endswith(b"/") else u + b"/" for u in walked.unreadable_dirs)
                remove = [r[1] for p, r in gone.items() if not (prot and p.startswith(prot))]
                with index.atomic():
                    index.rename_files(renames)
                    index.remove_ids(remove)
                    writer.flush()
                counts.update(
                    files_seen=walked.found + walked.unchanged, files_unchanged=unchanged, hidden_skipped=walked.hidden,
                    files_removed=len(remove), files_renamed=len(renames),
                )  # fmt: skip
                reader.report(force=True)
                cancelled = not reader.pump(cancel, block=True)
            else:
                cancelled = True
        finally:
            reader.close()
        writer.flush()
        if not cancelled:
            # Files this scan found unchanged keep the problems the scan that read them met (a document
            # read by its bytes, a file partly read): `problems` lists the last scan's, and they still hold.
            for path, reason in index.problems_kept(run_id, under_roots):
                writer.problem(path, reason + KEPT_PROBLEM)
            writer.flush()
            # A cancel should be quick: what was read stays stored (pairs and groups see it); only the
            # inverted index, used by `query`, waits for the next scan.
            reader.finish_job()
            cancelled = _post_pending(index, reader, throttle, cancel)
        status = "cancelled" if cancelled else "done"
        counts["problems"] = writer.n_problems
        counts["elapsed_s"] = time.monotonic() - t0
        throttle.report(
            Progress("done", files_done=int(counts.get("files_read", 0)), bytes_done=int(counts.get("bytes_read", 0))),
            force=True,
        )
        return replace(_result(run_id, counts, cancelled, index), repairs=repairs)
    except KeyboardInterrupt:
        status = "interrupted"
        writer.flush()
        raise
    finally:
        if helper is not None:
            helper.kill()
        counts.setdefault("problems", writer.n_problems)
        counts.setdefault("elapsed_s", time.monotonic() - t0)
        try:
            index.finish_run(run_id, status if status != "running" else "failed", counts)
        except Exception:  # never mask the original error with a bookkeeping one
            if status in ("done", "cancelled"):
                raise  # reliability: a scan whose record cannot be written (a full disk) says so



def _same_file(path: bytes, e: Entry) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (e[1], e[2])


def _indexed_elsewhere(
    index: Index, under_roots: Callable[[bytes], bool], entries: list[Entry]
) -> dict[tuple[int, int], bytes]:
    """(device, inode) -> indexed path, for those of ``entries`` (new paths) whose file is already
    indexed under another path outside the roots that still leads to that same file: a hard link, a
    bind mount or an earlier scan through another route.  Such a file is indexed once, else
    similarity would report it as an exact copy of itself (and trashing "the copy" loses it).
    Rows under the roots are left to the walk, which keeps the first path of a hard link it meets."""
    out: dict[tuple[int, int], bytes] = {}
    for (dev, ino), path in index.paths_for_inodes([(e[1], e[2]) for e in entries]):
        if (dev, ino) in out or under_roots(path):
            continue
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            continue  # gone (or unreachable): this path is the one to index now
        if (st.st_dev, st.st_ino) == (dev, ino):
            out[(dev, ino)] = path
    return out


def _post_pending(index: Index, reader: _Reader, throttle: Throttle, cancel: CancelToken) -> bool:
    """Phase "write": add this scan's remaining files (from the posted pairs kept in memory), then
    any a killed scan left, to the inverted index in sorted passes (well under a second per 100 k
    files); returns True when cancelled (between slices: what is not posted stays in ``unposted``
    for the next scan)."""
    total = index.pending_postings()
    if not total:
        return _upgrade_postings(index, throttle, cancel)
    msg = "adding fingerprints to the inverted index"
    throttle.report(Progress("write", 0, total, message=msg), force=True)
    done = 0
    while reader.writer.waiting:
        reader.start_job(POST_JOB_MAX_FILES)
        job = reader.job
        assert job is not None
        size = max(1, job.remaining)
        while job.step():
            throttle.report(Progress("write", done + len(job.ids) * (size - job.remaining) // size, total, message=msg))
            if cancel.cancelled:
                return True
        done += len(job.ids)
        reader.finish_job()
        throttle.report(Progress("write", done, total, message=msg))

    def step(d: int, tot: int) -> None:
        throttle.report(Progress("write", done + d, done + tot, message=msg))
        if cancel.cancelled:
            raise Cancelled

    try:
        index.post_pending(on_progress=step)
    except Cancelled:
        return True
    return _upgrade_postings(index, throttle, cancel)


def _upgrade_postings(index: Index, throttle: Throttle, cancel: CancelToken) -> bool:
    """An inverted index an older simscan posted (the value sample alone) gets each text's values of
    span 128 too (``Index.upgrade_postings``: ~18 s a million files, once); returns True when
    cancelled (the next scan does it again)."""
    msg = "updating the inverted index (once, after an upgrade of simscan)"

    def step(d: int, tot: int) -> None:
        throttle.report(Progress("write", d, tot, message=msg))
        if cancel.cancelled:
            raise Cancelled

    try:
        index.upgrade_postings(on_progress=step)
    except Cancelled:
        return True
    return False


def _result(run_id: int, counts: dict[str, float], cancelled: bool, index: Index) -> ScanResult:
    return ScanResult(
        run_id=run_id,
        files_seen=int(counts.get("files_seen", 0)),
        files_read=int(counts.get("files_read", 0)),
        files_unchanged=int(counts.get("files_unchanged", 0)),
        files_removed=int(counts.get("files_removed", 0)),
        bytes_read=int(counts.get("bytes_read", 0)),
        problems=int(counts.get("problems", 0)),
        cancelled=cancelled,
        elapsed_s=float(counts.get("elapsed_s", 0.0)),
        files_renamed=int(counts.get("files_renamed", 0)),
        files_failed=int(counts.get("files_failed", 0)),
        index_path=str(index.path),
        hidden_skipped=int(counts.get("hidden_skipped", 0)),
        files_repaired=int(counts.get("files_repaired", 0)),
    )


def document_outcomes(done: list[tuple[Any, Any, str | None]]) -> list[Outcome]:
    """Outcomes of the extraction pool (``(slot, simscan.extract.document.DocumentRead | None,
    reason)``) as the reading threads give theirs, the payload ending in the document's source."""
    outcomes: list[Outcome] = []
    for slot, read, reason in done:
        if read is None:
            outcomes.append((slot, None, reason))
            continue
        payload = _payload(read.fingerprints)
        note = "; ".join(n for n in (read.note, payload[10]) if n) or None
        outcomes.append((slot, read.key, (*payload[:10], note, payload[11], read.source)))
    return outcomes


def _task_bytes(task: Task) -> int:
    return sum(item[2] for item in task[1])


def _read_safely(task: Task, stop: _native.StopFlag | None = None) -> list[Outcome]:
    """:func:`read_task`, whose failure costs only its files (each a problem line)."""
    try:
        return read_task(task, stop)
    except Exception as e:  # noqa: BLE001 - one bad batch must not end the scan
        return [(slot, None, f"could not be fingerprinted: {type(e).__name__}: {e}") for slot, _, _ in task[1]]


class _Reader:
    """Reads files as the walk finds them: batches tasks, runs them on reading threads (the native
    core releases the GIL) or, with one job, in this thread, and hands finished files to the writer
    in the order they were queued (deterministic ids)."""

    def __init__(
        self, req: ScanRequest, writer: _Writer, throttle: Throttle, counts: dict[str, float], first_scan: bool
    ) -> None:
        self.follow = req.follow_links
        self.jobs = max(1, req.jobs or os.cpu_count() or 1)
        self.writer = writer
        self.throttle = throttle
        self.counts = counts
        self.entries: list[tuple[Entry, int | None] | None] = []  # slot -> (entry, id of the row it replaces)
        self.bytes_total = 0
        self.queue: deque[Task] = deque()
        self.reorder = False
        self.cur: list[tuple[int, bytes, int]] = []
        self.cur_bytes = 0
        self.pending: deque[tuple[Task, Future[list[Outcome]]]] = deque()
        self.pending_bytes = 0  # size of the files of the tasks in flight
        self.pool: ThreadPoolExecutor | None = None
        self.stop = _native.StopFlag()
        self.walking = True
        self.done_files = self.done_bytes = self.read_ok = self.failed = 0
        self.current = ""
        self.job: PostingJob | None = None
        self.job_fps = 0
        # Documents (simscan.extract): read in their own worker processes under limits of time and memory.
        self.docs = ExtractionPool(self.jobs, self.follow)

    # -- queueing
    def add(self, e: Entry, old_id: int | None) -> None:
        slot = len(self.entries)
        self.entries.append((e, old_id))
        size = e[3]
        self.bytes_total += size
        if size >= LARGE_FILE:
            self.queue.append((self.follow, [(slot, e[0], size)]))
            self.reorder = True
            return
        if self.cur and (len(self.cur) >= BATCH_FILES or self.cur_bytes + size > BATCH_BYTES):
            self._close_task()
        self.cur.append((slot, e[0], size))
        self.cur_bytes += size

    def _close_task(self) -> None:
        if self.cur:
            self.queue.append((self.follow, self.cur))
            self.cur, self.cur_bytes = [], 0

    # -- running
    def pump(self, cancel: CancelToken, block: bool) -> bool:
        """Make progress; with ``block`` run until everything queued is done.  Returns False when cancelled."""
        if not self._pump(cancel, block):
            return False
        # Documents: collect those read meanwhile; at the end wait for the rest (posting while waiting).
        self._handle_documents(self.docs.collect(0))
        while block and self.docs.pending:
            if cancel.cancelled:
                return False
            if not self._idle_work():
                self._handle_documents(self.docs.collect(0.1))
            else:
                self._handle_documents(self.docs.collect(0))
        return True

    def _handle_documents(self, done: list[tuple[Any, Any, str | None]]) -> None:
        if done:
            self._handle(document_outcomes(done))

    def _pump(self, cancel: CancelToken, block: bool) -> bool:
        if not self.walking:
            self._close_task()
        while True:
            if cancel.cancelled:
                return False
            if self.jobs == 1:
                # One job: read in this thread, between folders of the walk and at its end.
                if not self.queue:
                    return True
                self._handle(_read_safely(self.queue.popleft()))
                if not block:
                    return True
                continue
            if self.pool is None:
                self.pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="simscan-read")
            if self.reorder:
                # Largest tasks first (LPT scheduling): a big file started last would leave the other
                # threads idle while it finishes.  Stable, so the order stays deterministic.
                self.queue = deque(sorted(self.queue, key=_task_bytes, reverse=True))
                self.reorder = False
            while self.queue and self._room(self.queue[0]):
                t = self.queue.popleft()
                self.pending_bytes += _task_bytes(t)
                self.pending.append((t, self.pool.submit(_read_safely, t, self.stop)))
            if not self.pending:
                return True
            head = self.pending[0][1]
            if not head.done():
                if not block:
                    return True
                if self._idle_work():
                    continue
                try:
                    head.result(timeout=0.1)
                except TimeoutError:
                    continue
            self.pending_bytes -= _task_bytes(self.pending.popleft()[0])
            self._handle(head.result())

    def _room(self, task: Task) -> bool:
        """Whether ``task`` may be submitted now: up to ``3 x jobs`` tasks in flight, and up to
        :data:`IN_FLIGHT_TASKS` ``x jobs`` while they hold at most :data:`IN_FLIGHT_BYTES` of files."""
        n = len(self.pending)
        if n < 3 * self.jobs:
            return True
        return n < IN_FLIGHT_TASKS * self.jobs and self.pending_bytes + _task_bytes(task) <= IN_FLIGHT_BYTES

    def _idle_work(self) -> bool:
        """While the workers are busy, put finished files into the inverted index a slice at a time
        (see :class:`simscan.index.PostingJob`), so that little is left for the "write" phase.  A
        job starts once :data:`POST_JOB_FILES` files or :data:`POST_JOB_FINGERPRINTS` fingerprints
        wait, or as many as were posted so far (each job walks the whole B-tree, so jobs grow with
        it).  Once the walk is over and every task is submitted, a quarter of that is enough: what
        waits then would otherwise be left for the final pass, when the workers are done and one
        core idles (100,000 small files: ~36,000 files, ~0.4 s).  True when it did some work.
        Documents the extraction pool has read meanwhile are handled first."""
        done = self.docs.collect(0)
        if done:
            self._handle_documents(done)
            return True
        w = self.writer
        if self.job is not None:
            if not self.job.step():
                self.finish_job()
            return True
        if w.fp_bytes >= IDLE_COMMIT_BYTES:
            # Large files: commit what was read while waiting anyway, not with the next file (the
            # last commit of 8 files of 25-100 MB held 2-3 of them, 0.2 s after the last was read).
            w.flush()
            return True
        if not w.waiting:
            return False
        files = min(max(POST_JOB_FILES, w.posted), POST_JOB_MAX_FILES)
        fps = min(max(POST_JOB_FINGERPRINTS, w.posted_fps), POST_JOB_MAX_FINGERPRINTS)
        if not self.walking and not self.queue:
            files, fps = files // 4, fps // 4
        if w.waiting_files >= files or w.waiting_fps >= fps:
            self.start_job(POST_JOB_MAX_FILES)
            return True
        return False

    def start_job(self, max_files: int) -> None:
        """A posting job for the first waiting commits, about ``max_files`` files and at most
        :data:`POST_JOB_MAX_FINGERPRINTS` values (at least one commit)."""
        w = self.writer
        ids: list[int] = []
        fps: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        n_fps = 0
        in_memory = True
        while w.waiting and (not ids or (len(ids) + len(w.waiting[0][0]) <= max_files
                                          and n_fps + w.waiting[0][1] <= POST_JOB_MAX_FINGERPRINTS)):
            i, n, fp, owner = w.waiting.popleft()
            ids += i
            n_fps += n
            if fp is None or owner is None:
                in_memory = False
            else:
                w.waiting_pair_bytes -= fp.nbytes + owner.nbytes
                fps.append(fp)
                owners.append(owner)
        w.waiting_files -= len(ids)
        w.waiting_fps -= n_fps
        if ids:
            self.job = w.index.posting_job(ids, pairs=(fps, owners) if in_memory else None)
            self.job_fps = n_fps

    def finish_job(self) -> None:
        if self.job is not None:
            self.job.finish()
            self.writer.posted += len(self.job.ids)
            self.writer.posted_fps += self.job_fps
            self.job = None

    def close(self) -> None:
        """Stop reading: queued tasks are dropped, and the tasks the threads have begun stop at their
        next file or chunk (their results are not used)."""
        self.docs.close()
        self.stop.set()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None

    # -- results
    def _handle(self, outcomes: list[Outcome]) -> None:
        writer, counts = self.writer, self.counts
        for slot, key, payload in outcomes:
            (path, dev, ino, size, mtime, ctime), old_id = self.entries[slot]  # type: ignore[misc]
            if key is not None and payload[0] == DOCUMENT:
                self.docs.submit(slot, path, payload[1], size)  # its outcome comes back through here
                continue
            self.entries[slot] = None  # handled once: let it go (memory follows the work in flight)
            self.done_files += 1
            self.done_bytes += size
            self.current = os.fsdecode(path)
            if key is None:
                self.failed += 1
                writer.problem(path, payload)
                if payload.startswith("vanished"):
                    if old_id is not None:
                        writer.remove.append(old_id)
                else:
                    writer.add(FileRecord(path, dev, ino, size, mtime, error=payload, ctime_ns=ctime))
                continue
            is_text, enc, checksum, partial, chash, simh, units, fps, n_roll, nread, note, meta, *doc = payload
            source = doc[0] if doc else (None, None, PLAIN_VERSION)  # a document: (format, extractor, version)
            self.read_ok += 1
            if note:
                writer.problem(path, note)
            counts["bytes_read"] = counts.get("bytes_read", 0) + nread
            writer.add(
                FileRecord(
                    path, key[0], key[1], key[2], key[3], bool(is_text), enc, checksum, partial, chash, simh, units,
                    np.frombuffer(fps, "<u8"), n_roll, ctime_ns=key[4], format=source[0], extractor=source[1],
                    extractor_version=source[2], meta=bytes(meta) if fps else b"",
                )
            )  # fmt: skip
        counts["files_read"] = self.read_ok
        counts["files_failed"] = self.failed
        if not self.walking:
            self.report()
        writer.maybe_flush()

    def report(self, force: bool = False) -> None:
        self.throttle.report(
            Progress(
                "read", self.done_files, len(self.entries), self.done_bytes, self.bytes_total, current=self.current
            ),
            force=force,
        )
