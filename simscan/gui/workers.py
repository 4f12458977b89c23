"""Run core jobs off the GUI thread.

A :class:`Job` is a ``QRunnable`` (not a QObject) that owns a :class:`JobSignals` QObject; the
signals object lives in the GUI thread, so its signals reach GUI slots through queued
connections.  The job function receives a progress sink (the ``progress`` signal's ``emit``) and a
:class:`~simscan.progress.CancelToken`; it must never touch a widget.  Exceptions are caught in the
worker and delivered as the ``failed`` signal, never printed.

Every job is counted while its ``run()`` executes (:func:`running_jobs`), and every pool is
registered (:func:`pools`), so tests can assert that nothing is left running.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from simscan.progress import Cancelled, CancelToken, Progress

JobFn = Callable[[Callable[[Progress], None], CancelToken], Any]

_lock = threading.Lock()
_running = 0
_pools: weakref.WeakSet[QThreadPool] = weakref.WeakSet()


def running_jobs() -> int:
    """Jobs whose ``run()`` has started and not yet returned its result."""
    with _lock:
        return _running


def pools() -> list[QThreadPool]:
    """Every live pool made by :func:`make_pool` (plus the global one)."""
    return [*_pools, QThreadPool.globalInstance()]


def make_pool(max_threads: int = 4) -> QThreadPool:
    """A private pool: scans, loads and previews of one window run here, so closing the window
    can wait for exactly its own jobs.  Four threads: one scan, one load/regroup, one compare and
    one spare; more would only contend for the GIL."""
    pool = QThreadPool()
    pool.setMaxThreadCount(max_threads)
    _pools.add(pool)
    return pool


class JobSignals(QObject):
    """progress(Progress), finished(result), failed(BaseException), cancelled()."""

    progress = Signal(object)
    finished = Signal(object)
    failed = Signal(object)
    cancelled = Signal()


class Job(QRunnable):
    """One call of ``fn(progress, cancel)`` on a pool thread; the outcome arrives as exactly one of
    ``finished``, ``failed`` or ``cancelled`` (a job raising :class:`Cancelled`, or returning or
    raising anything after its token was cancelled, counts as cancelled)."""

    def __init__(self, fn: JobFn, name: str = "job") -> None:
        super().__init__()
        # Python keeps the job alive (the window holds it until its outcome arrives); letting the
        # pool delete the C++ side as well would free it twice.
        self.setAutoDelete(False)
        self.fn = fn
        self.name = name
        self.token = CancelToken()
        self.signals = JobSignals()

    def cancel(self) -> None:
        self.token.cancel()

    def run(self) -> None:  # runs on a pool thread
        global _running
        with _lock:
            _running += 1
        outcome: tuple[str, Any] = ("failed", RuntimeError("job did not finish"))
        try:
            result = self.fn(self.signals.progress.emit, self.token)
            outcome = ("cancelled", None) if self.token.cancelled else ("finished", result)
        except Cancelled:
            outcome = ("cancelled", None)
        except BaseException as e:  # noqa: BLE001 - delivered to the GUI, which shows it
            # A job the user or the window stopped has no error to show: e.g. the load of a new
            # index cancelled by a scan that has just created the file, found empty by the load.
            outcome = ("cancelled", None) if self.token.cancelled else ("failed", e)
        finally:
            # Count down before the outcome is delivered: a test that waited for the outcome then
            # sees no job running.
            with _lock:
                _running -= 1
        kind, value = outcome
        try:
            if kind == "finished":
                self.signals.finished.emit(value)
            elif kind == "cancelled":
                self.signals.cancelled.emit()
            else:
                self.signals.failed.emit(value)
        except RuntimeError:
            # The signals object is gone: the application is shutting down without waiting for this
            # job (seen when a script ends with a window's job still running).  Nobody is left to tell.
            pass


class JobRunner(QObject):
    """Starts jobs on a private pool, keeps them alive until their outcome arrives, and drops
    outcomes of superseded jobs of the same ``slot`` (e.g. a preview for a row no longer
    selected): only the latest job per slot reports.

    The callbacks connected to a job's signals refer to it by number, never by reference: a
    job → signals → callback → job cycle runs through Qt's C++ connection list, which Python's
    collector cannot see, so every job (and whatever its function captured: whole result sets)
    would stay in memory for good.  Once its outcome is delivered the job also drops its
    function.  (Python keeps a running job alive through ``run()``'s own reference to it.)
    """

    def __init__(self, parent: QObject | None = None, max_threads: int = 4) -> None:
        super().__init__(parent)
        self.pool = make_pool(max_threads)
        self._live: dict[int, Job] = {}
        self._latest: dict[str, int] = {}
        self._serial = 0

    def start(
        self,
        slot: str,
        fn: JobFn,
        *,
        finished: Callable[[Any], None] | None = None,
        failed: Callable[[BaseException], None] | None = None,
        cancelled: Callable[[], None] | None = None,
        progress: Callable[[Progress], None] | None = None,
    ) -> Job:
        old_key = self._latest.get(slot)
        old = self._live.get(old_key) if old_key is not None else None
        if old is not None:
            old.cancel()
            # Still queued (all threads busy)?  Then it never needs to run at all.
            if self.pool.tryTake(old):
                self._drop(old_key)
        self._serial += 1
        key = self._serial
        job = Job(fn, slot)
        self._live[key] = job
        self._latest[slot] = key
        runner = self

        def deliver(callback: Callable[..., None] | None, *value: Any) -> None:
            latest = runner._latest.get(slot) == key
            runner._drop(key)
            if latest:
                del runner._latest[slot]
                if callback is not None:
                    callback(*value)

        job.signals.finished.connect(lambda v: deliver(finished, v))
        job.signals.failed.connect(lambda e: deliver(failed, e))
        job.signals.cancelled.connect(lambda: deliver(cancelled))
        if progress is not None:
            job.signals.progress.connect(lambda p: progress(p) if runner._latest.get(slot) == key else None)
        self.pool.start(job)
        return job

    def _drop(self, key: int | None) -> None:
        job = self._live.pop(key, None) if key is not None else None
        if job is not None:
            job.fn = _spent  # release what the function captured (data, windows)

    def busy(self, slot: str) -> bool:
        return slot in self._latest

    def cancel(self, slot: str) -> None:
        key = self._latest.get(slot)
        job = self._live.get(key) if key is not None else None
        if job is not None:
            job.cancel()

    def shutdown(self, timeout_ms: int = 30000) -> bool:
        """Cancel everything and wait for the pool; True when every job has returned."""
        for key, job in list(self._live.items()):
            job.cancel()
            if self.pool.tryTake(job):  # queued, never started: nothing to wait for
                self._drop(key)
        return self.pool.waitForDone(timeout_ms)


def _spent(progress: Callable[[Progress], None], cancel: CancelToken) -> None:
    """Stands in for a delivered job's function."""
