"""A Dask client: of a running scheduler (``--scheduler ADDRESS``), or of a ``LocalCluster`` of
worker processes on this machine.  Workers must run this very simscan: the answers are the
local ones only when every worker reads and fingerprints with the same code, so the versions
are checked before any work is sent."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simscan import __version__
from simscan.cluster import INSTALL_HINT, ClusterUnavailable, require
from simscan.model import ALGORITHM_VERSION

#: Seconds to wait for a scheduler that does not answer.
CONNECT_TIMEOUT_S = 30
#: Seconds a running scheduler may hold no worker before a command gives up (Dask would wait for
#: new workers forever; a nanny restarts a killed worker in seconds).
NO_WORKERS_S = 60
#: Seconds between two looks at the scheduler's workers.
WATCH_EVERY_S = 2.0


def worker_versions() -> tuple[str, int]:
    """(simscan version, fingerprint algorithm version) of the process it runs in (a worker)."""
    import simscan
    from simscan.model import ALGORITHM_VERSION as algorithm

    return simscan.__version__, algorithm


def check_workers(client: Any) -> int:
    """The number of workers, after checking that each runs this simscan.  Raises
    :class:`ClusterUnavailable` when there is none or one runs another version."""
    try:
        got = client.run(worker_versions)
    except Exception as e:
        raise ClusterUnavailable(f"the workers cannot run simscan: {type(e).__name__}: {e}",
                                 f"Install this simscan ({__version__}) with its cluster extra on every worker. "
                                 + INSTALL_HINT) from e
    if not got:
        raise ClusterUnavailable("the scheduler has no workers", "Start some: `dask worker ADDRESS`.")
    wrong = {addr: v for addr, v in got.items() if tuple(v) != (__version__, ALGORITHM_VERSION)}
    if wrong:
        addr, (ver, alg) = next(iter(wrong.items()))
        raise ClusterUnavailable(
            f"{len(wrong)} of {len(got)} workers run another simscan (e.g. {addr}: simscan {ver}, algorithm {alg}; "
            f"this one is {__version__}, algorithm {ALGORITHM_VERSION})",
            "Install the same simscan on the workers: their answers would differ.",
        )
    return len(got)


def check_workers_see(client: Any, store: Any, roots: Any = ()) -> None:
    """Raise unless every worker sees the store's manifest (``StoreError``) and the ``roots``
    (:class:`ClusterUnavailable`) under the paths this machine gives them: else a worker's first
    task would fail on a path it does not have (a traceback), or read nothing."""
    from simscan.cluster.store import MANIFEST, StoreError

    hint = "Every worker must see the store and the files under the same paths as this machine (a share)."
    for path, error in ((store.root / MANIFEST, StoreError), *((Path(r).absolute(), ClusterUnavailable)
                                                             for r in roots)):
        seen = client.run(os.path.exists, str(path))
        blind = sorted(addr for addr, ok in seen.items() if not ok)
        if blind:
            what = f"the store {store.root}" if error is StoreError else str(path)
            raise error(f"{len(blind)} of {len(seen)} workers do not see {what} (e.g. the worker at {blind[0]})",
                        hint)


@contextlib.contextmanager
def connect(scheduler: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` for the block: of ``scheduler`` (an address such as
    ``tcp://host:8786``), or of a new ``LocalCluster`` of ``workers`` processes (default: one per
    CPU) closed after it.  Raises :class:`ClusterUnavailable`."""
    require()
    from distributed import Client, LocalCluster

    if scheduler:
        hint = ("Check the address (the scheduler's, e.g. tcp://host:8786, not its dashboard's); start one with "
                "`dask scheduler` and workers with `dask worker ADDRESS`.")
        try:
            _probe(scheduler)
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except ClusterUnavailable:
            raise
        except (OSError, TimeoutError) as e:
            raise ClusterUnavailable(f"cannot reach the Dask scheduler at {scheduler}: {e}",
                                     hint) from e
        except ValueError as e:  # (Dask's parse of the address)
            raise ClusterUnavailable(f"not the address of a Dask scheduler: {scheduler} ({e})", hint) from e
        try:
            check_workers(client)
            with _watched(client, scheduler):
                yield client
        finally:
            client.close()
        return
    import dask

    n = workers or os.cpu_count() or 1
    # One thread a worker: the native core reads with the GIL released, but a task's numpy work
    # does not, and a process a core keeps the figures per worker honest.  The worker processes are
    # started with SIGINT ignored (and keep it so: Python and asyncio leave an ignored SIGINT alone):
    # Ctrl-C reaches every process of the terminal, and it is this one's to stop the work and close
    # the cluster, without a traceback from each worker.  They are not daemonic (also when a nanny
    # restarts one), so that they may start the processes that read documents under limits, as a
    # local scan does (``simscan.extract.pool``).
    with dask.config.set({"distributed.worker.daemon": False}):
        with _sigint_ignored():
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None, silence_logs=logging.ERROR)
        try:
            client = Client(cluster)
            try:
                check_workers(client)
                yield client
            finally:
                client.close()
        finally:
            cluster.close()


def _workers(client: Any) -> int:
    """How many workers the scheduler holds (-1: it does not answer)."""
    try:
        return len(client.nthreads())
    except Exception:  # noqa: BLE001 - a scheduler being lost: Dask's client handles it
        return -1


@contextlib.contextmanager
def _watched(client: Any, address: str) -> Iterator[None]:
    """Run the block; when the scheduler is lost (Dask's client closes itself after trying to reconnect)
    or holds no worker for :data:`NO_WORKERS_S` (the client is then closed here, which stops what
    waits on it), what the block raises becomes a :class:`ClusterUnavailable` saying so."""
    stop = threading.Event()
    reason: list[str] = []

    def watch() -> None:
        since = None
        while not stop.wait(WATCH_EVERY_S):
            n = _workers(client)
            if n:  # (-1: the scheduler does not answer, which Dask's client handles)
                since = None
            elif since is None:
                since = time.monotonic()
            elif time.monotonic() - since >= NO_WORKERS_S:
                reason.append(f"the Dask scheduler at {address} has had no worker for {NO_WORKERS_S} s: every "
                              "worker died or was stopped")
                client.close()
                return

    watcher = threading.Thread(target=watch, name="simscan-cluster-watch", daemon=True)
    watcher.start()
    try:
        yield
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit, ClusterUnavailable)):
            raise
        if client.status == "running" and not _workers(client):  # (e.g. scatter: 'No valid workers found')
            reason.append(f"the Dask scheduler at {address} has no worker left: every worker died or was stopped")
        if reason:
            raise ClusterUnavailable(reason[0], "Start workers (`dask worker ADDRESS`) and run the command again: "
                                     "what a scan's workers finished is staged, and the next scan uses it.") from e
        if client.status != "running":
            # (closing the client cancels Dask's attempts to reconnect, which it logs as errors)
            log = logging.getLogger("distributed.client")
            level = log.level
            log.setLevel(logging.CRITICAL)
            try:
                client.close()
            finally:
                log.setLevel(level)
            raise ClusterUnavailable(f"lost the Dask scheduler at {address} ({type(e).__name__})",
                                     "Check it is running and run the command again: what a scan's workers "
                                     "finished is staged, and the next scan uses it.") from e
        raise
    finally:
        stop.set()
        watcher.join()


def _probe(address: str) -> None:
    """Ask ``address`` who it is, within :data:`CONNECT_TIMEOUT_S`; raises :class:`ClusterUnavailable`
    unless a Dask scheduler answers.  Dask's own client waits forever for a peer that accepts the
    connection and never speaks Dask (the dashboard's port, a web server), and takes a garbled
    answer for a message of exabytes (MemoryError)."""
    import asyncio

    from distributed.comm import connect as open_comm
    from distributed.comm.addressing import get_address_host_port

    get_address_host_port(address)  # (ValueError for what is no address)

    async def identity() -> Any:
        comm = await open_comm(address, timeout=CONNECT_TIMEOUT_S)  # (OSError when nothing answers)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    silent = False
    try:
        # (Dask's own timeout first: its OSError says nothing answers; this one, that a peer is silent)
        info = asyncio.run(asyncio.wait_for(identity(), CONNECT_TIMEOUT_S + 5))
    except TimeoutError:  # (connected, and no answer)
        info, silent = None, True
    except OSError:
        raise
    except Exception:  # noqa: BLE001 - whatever a peer that is no scheduler makes Dask raise
        info = None
    if not isinstance(info, dict) or info.get("type") != "Scheduler":
        raise ClusterUnavailable(
            f"{address} is not a Dask scheduler: something answers there, but not as one"
            + (f" (no answer in {CONNECT_TIMEOUT_S + 5} s)" if silent else ""),
            "Check the address: the scheduler's, e.g. tcp://host:8786, not its dashboard's (8787).",
        )


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored in this process for the block (in the main thread; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
