"""Documents read in worker processes under per-file limits of time and memory.

A document reader runs third-party parsers (PDFium, libxml2, zlib) on files of any origin: a
crafted or damaged file can make one loop, or ask for gigabytes.  So each document is read in a
worker process (``forkserver``: no fork of a process that may run Qt or threads), one at a time:

* **memory**: a worker's address space is capped at what it had after start-up plus
  ``memory_limit`` (``RLIMIT_AS``; default :data:`MEMORY_LIMIT`): an allocation beyond fails (Python
  raises MemoryError, which the reader turns into a note) or kills the worker;
* **time**: a document that takes longer than ``time_limit`` seconds (:func:`time_limit` of its
  size) is killed by the parent, and its worker's CPU time is capped a little above that
  (``RLIMIT_CPU``), so even a worker whose parent died cannot spin for ever.  A worker whose parent
  is gone sees its pipe close and exits;
* a killed or dead worker is replaced by a fresh one, and the document is then fingerprinted by
  its bytes (in this process: the scanner's own reading, bounded in memory) with a problem line
  saying why; the scan goes on.

:class:`ExtractionPool` serves the scanner (results in the order documents were submitted, so a
scan stays deterministic); :func:`read_isolated` reads one document for ``compare`` and the
window's preview.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from simscan.extract.base import ExtractError, shown

#: Memory a document may take in its worker beyond the worker's own (bytes).
MEMORY_LIMIT = 1 << 30
#: Seconds a document may take: this much, plus TIME_PER_MB per MB of file.
TIME_BASE = 60.0
TIME_PER_MB = 1.0
#: Modules the fork server imports once, so that each worker starts warm (the fork server is one per
#: process, started by whoever comes first).
FORKSERVER_PRELOAD = ["simscan.fingerprint", "simscan.extract.document"]


def time_limit(size: int) -> float:
    """Seconds a document of ``size`` bytes may take to be read."""
    return TIME_BASE + TIME_PER_MB * size / (1 << 20)


def _context() -> Any:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(FORKSERVER_PRELOAD)
    return ctx


def _limit_memory(extra: int) -> None:
    try:
        import resource

        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        soft = vm + extra
        resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    except (OSError, ValueError, ImportError):
        pass  # not Linux: the parent's time limit still holds


def _limit_cpu(seconds: float) -> None:
    """Cap this process's CPU time at what it used so far plus ``seconds`` (SIGXCPU ends it)."""
    try:
        import resource

        used = resource.getrusage(resource.RUSAGE_SELF)
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        soft = int(used.ru_utime + used.ru_stime + seconds) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    except (OSError, ValueError, ImportError):
        pass


def _worker(conn: Connection, memory_limit: int) -> None:
    """A worker's loop: receive a task, answer, until the parent closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the group: the parent decides
    _limit_memory(memory_limit)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        kind, args, seconds = task
        _limit_cpu(seconds * 1.5)
        try:
            result: tuple[str, Any] = ("ok", _run(kind, args))
        except ExtractError as e:
            result = ("extract-error", (str(e), e.kind, e.format))
        except OSError as e:
            result = ("oserror", f"cannot be read: {e.strerror or e}")
        except MemoryError:
            result = ("error", "not enough memory to read it")
        except Exception as e:  # noqa: BLE001 - one bad file must not end the worker
            result = ("error", f"{type(e).__name__}: {e}")
        try:
            conn.send(result)
        except (OSError, ValueError):
            return


def _run(kind: str, args: tuple) -> Any:
    if kind == "document":
        from simscan.extract.document import read_or_reason

        return read_or_reason(*args)
    if kind == "read":
        from simscan.extract import sniff_fd
        from simscan.extract.document import open_document, read_document

        path, keep_text = args
        fd = open_document(path)
        try:
            fmt = sniff_fd(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        return None if fmt is None else read_document(path, fmt, True, None, keep_text)
    raise ValueError(kind)


class _Worker:
    __slots__ = ("conn", "proc", "started", "task")

    def __init__(self, ctx: Any, memory_limit: int) -> None:
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, memory_limit), name="simscan-extract", daemon=True)
        self.proc.start()
        child.close()
        self.conn: Connection = parent
        self.task: _Task | None = None
        self.started = 0.0

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.join(5)
        except Exception:  # noqa: BLE001, S110 - gone already
            pass
        self.conn.close()


@dataclass(slots=True)
class _Task:
    tid: int
    key: Any
    path: bytes
    fmt: str
    size: int


#: What :meth:`ExtractionPool.collect` gives per document: (key, DocumentRead or None, reason or None).
Outcome = tuple[Any, Any, "str | None"]


class ExtractionPool:
    """Reads documents for the scanner in up to ``jobs`` worker processes (started as needed)."""

    def __init__(self, jobs: int = 1, follow: bool = False, memory_limit: int = MEMORY_LIMIT,
                 limit: Any = time_limit) -> None:
        self.jobs = max(1, jobs)
        self.follow = follow
        self.memory_limit = memory_limit
        self.limit = limit
        self.ctx: Any = None
        self.workers: list[_Worker] = []
        self.queue: deque[_Task] = deque()
        self.order: deque[int] = deque()  # task ids in submission order
        self.done: dict[int, Outcome] = {}
        self.next_id = 0

    @property
    def pending(self) -> int:
        """Documents submitted and not yet collected."""
        return len(self.order)

    def submit(self, key: Any, path: bytes, fmt: str, size: int) -> None:
        self.queue.append(_Task(self.next_id, key, path, fmt, size))
        self.order.append(self.next_id)
        self.next_id += 1
        self._dispatch()

    def collect(self, timeout: float = 0.0) -> list[Outcome]:
        """Finished documents, in submission order, waiting up to ``timeout`` seconds for the next one."""
        deadline = time.monotonic() + timeout
        while True:
            self._dispatch()
            busy = [w for w in self.workers if w.task is not None]
            if not busy:
                break
            now = time.monotonic()
            next_kill = min(w.started + self.limit(w.task.size) for w in busy)  # type: ignore[union-attr]
            wait_s = max(0.0, min(deadline, next_kill) - now)
            ready = wait([w.conn for w in busy], wait_s)
            for w in busy:
                if w.conn in ready:
                    self._receive(w)
            now = time.monotonic()
            for w in busy:
                if w.task is not None and now - w.started > self.limit(w.task.size):
                    self._failed(w, f"took longer than {self.limit(w.task.size):.0f} s to read")
            if self.order and self.order[0] in self.done or time.monotonic() >= deadline:
                break
        out = []
        while self.order and self.order[0] in self.done:
            out.append(self.done.pop(self.order.popleft()))
        return out

    def close(self) -> None:
        for w in self.workers:
            w.kill()
        self.workers.clear()

    # -- inside
    def _dispatch(self) -> None:
        while self.queue:
            idle = next((w for w in self.workers if w.task is None), None)
            if idle is None:
                if len(self.workers) >= self.jobs:
                    return
                if self.ctx is None:
                    self.ctx = _context()
                idle = _Worker(self.ctx, self.memory_limit)
                self.workers.append(idle)
            t = self.queue.popleft()
            idle.task, idle.started = t, time.monotonic()
            try:
                idle.conn.send(("document", (t.path, t.fmt, self.follow), self.limit(t.size)))
            except (OSError, ValueError):
                self._failed(idle, "its reading process could not be reached")

    def _receive(self, w: _Worker) -> None:
        t = w.task
        assert t is not None
        try:
            status, value = w.conn.recv()
        except (EOFError, OSError):
            w.proc.join(1)
            code = w.proc.exitcode
            why = "its reading process died" + (" (out of memory or CPU time?)" if code is None or code < 0 else "")
            self._failed(w, why)
            return
        w.task = None
        if status == "ok" and not isinstance(value, str):
            self.done[t.tid] = (t.key, value, None)
        elif status == "ok":
            self.done[t.tid] = (t.key, None, value)  # the file vanished or changed: a reason, as the scanner's
        else:
            self._retry_raw(t, f"{shown(t.fmt)}: {value[0] if status == 'extract-error' else value}")

    def _failed(self, w: _Worker, why: str) -> None:
        """``w`` was killed or died on its task: replace it and read that file by its bytes."""
        t = w.task
        w.kill()
        self.workers.remove(w)
        if t is not None:
            self._retry_raw(t, f"{shown(t.fmt)}: {why}")

    def _retry_raw(self, t: _Task, why: str) -> None:
        """Fingerprint ``t``'s file by its bytes, here: the scanner's own reading, with bounded memory
        (chunks) and time (the bytes' speed), which needs no isolation."""
        from simscan.extract.document import BY_ITS_BYTES, read_or_reason

        got = read_or_reason(t.path, t.fmt, self.follow, f"{why}; {BY_ITS_BYTES}")
        self.done[t.tid] = (t.key, None, got) if isinstance(got, str) else (t.key, got, None)


def read_isolated(path: str | os.PathLike[str], keep_text: bool = False, memory_limit: int = MEMORY_LIMIT) -> Any:
    """The document at ``path`` read as the scan reads it (a ``document.DocumentRead``, its text
    too with ``keep_text``), in a worker process under the limits of time and memory; None when the
    file is no document.  A document whose reader was killed is read by its bytes here (with a note).
    Raises OSError when the file cannot be read."""
    from simscan.extract import sniff_fd
    from simscan.extract.document import BY_ITS_BYTES, open_document, read_document

    raw = os.fsencode(path)
    fd = open_document(raw)
    try:
        size = os.fstat(fd).st_size
        fmt = sniff_fd(fd, size)
    finally:
        os.close(fd)
    if fmt is None:
        return None
    w = _Worker(_context(), memory_limit)
    seconds = time_limit(size)
    why = ""
    try:
        w.conn.send(("read", (raw, keep_text), seconds))
        if w.conn.poll(seconds):
            try:
                status, value = w.conn.recv()
            except (EOFError, OSError):
                why = "its reading process died (out of memory?)"
            else:
                if status == "oserror" or (status == "ok" and isinstance(value, str)):
                    raise OSError(value)
                if status == "ok":
                    return value
                why = value[0] if status == "extract-error" else str(value)
        else:
            why = f"took longer than {seconds:.0f} s to read"
    finally:
        w.kill()
    return read_document(raw, fmt, True, f"{shown(fmt)}: {why}; {BY_ITS_BYTES}")
