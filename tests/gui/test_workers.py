"""The job runner: outcomes on the GUI thread, latest-wins per slot, nothing kept alive."""

from __future__ import annotations

import gc
import threading
import weakref

from simscan.gui.workers import JobRunner, running_jobs
from simscan.progress import Cancelled


class Payload:
    """Stands for a result set a job function captured."""


def test_outcomes_arrive_on_the_gui_thread(qtbot):
    runner = JobRunner()
    main = threading.get_ident()
    seen = {}

    def fn(progress, cancel):
        progress("halfway")
        return threading.get_ident()

    with qtbot.waitCallback() as cb:
        runner.start("a", fn, finished=lambda v: (seen.update(worker=v, here=threading.get_ident()), cb(v)),
                     progress=lambda p: seen.update(progress=(p, threading.get_ident())))
    assert seen["worker"] != main and seen["here"] == main
    assert seen["progress"] == ("halfway", main)
    assert running_jobs() == 0 and runner.shutdown(5000)


def test_failures_and_cancellation_are_delivered(qtbot):
    runner = JobRunner()

    def boom(progress, cancel):
        raise OSError(5, "I/O error", "/x")

    with qtbot.waitCallback() as cb:
        runner.start("a", boom, failed=cb)
    assert isinstance(cb.args[0], OSError)

    def stops(progress, cancel):
        raise Cancelled()

    with qtbot.waitCallback() as cb:
        runner.start("b", stops, cancelled=cb)

    # An error after the job was cancelled is not shown: e.g. a load finding the empty file of an
    # index that the scan which cancelled it has just created.
    started, go = threading.Event(), threading.Event()

    def fails_once_cancelled(progress, cancel):
        started.set()
        go.wait(5)
        raise OSError(5, "I/O error", "/x")

    errors = []
    with qtbot.waitCallback() as cb:
        runner.start("c", fails_once_cancelled, failed=errors.append, cancelled=cb)
        assert started.wait(5)
        runner.cancel("c")
        go.set()
    assert errors == []
    assert not runner.busy("a") and not runner.busy("b")
    assert runner.shutdown(5000)


def test_only_the_latest_job_of_a_slot_reports(qtbot):
    runner = JobRunner(max_threads=1)
    gate = threading.Event()
    results = []

    def slow(progress, cancel):
        gate.wait(5)
        return "old"

    runner.start("preview", slow, finished=results.append)
    runner.start("preview", lambda p, c: "queued-then-superseded", finished=results.append)
    with qtbot.waitCallback() as cb:
        runner.start("preview", lambda p, c: "new", finished=lambda v: (results.append(v), cb()))
        gate.set()
    qtbot.waitUntil(lambda: running_jobs() == 0)
    assert results == ["new"]
    assert runner.shutdown(5000)


def test_delivered_jobs_release_what_they_captured(qtbot):
    runner = JobRunner()
    payload = Payload()
    ref = weakref.ref(payload)
    with qtbot.waitCallback() as cb:
        runner.start("a", lambda p, c, data=payload: len(str(data)), finished=cb)
    del payload
    qtbot.waitUntil(lambda: running_jobs() == 0)
    gc.collect()
    assert ref() is None, "a finished job must not keep its data alive"
    assert runner.shutdown(5000)
