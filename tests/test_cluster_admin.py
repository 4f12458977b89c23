"""What an admin meets running simscan on a cluster of their own: a real ``dask scheduler`` and
``dask worker`` started as separate processes with Dask's own command (as README's "On a cluster"
says), real trees and a real store, the real CLI.  Every failure gives a clear message, loses
nothing and never waits forever."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the cluster extra (dask[distributed]) is not installed")
pytest.importorskip("pyarrow", reason="the cluster extra (pyarrow) is not installed")

from helpers_tree import make_tree

from simscan.cli import main


def _dask(*args: str, log: Path, hide: Path | None = None) -> subprocess.Popen[bytes]:
    """``python -m dask ARGS``; with ``hide``, in a mount namespace of its own where an empty
    folder is mounted over ``hide`` (a worker that does not see the client's files there)."""
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
    cmd = [sys.executable, "-m", "dask", *args]
    if hide is not None:
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
               f'mount -t tmpfs none "{hide}" && exec "$@"', "sh", *cmd]
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


class DaskCluster:
    """A scheduler and workers, each a process group of its own (a worker is a nanny and its child)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.info = folder / "scheduler.json"
        self.scheduler = _dask("scheduler", "--scheduler-file", str(self.info), "--host", "127.0.0.1", "--port", "0",
                               "--dashboard-address", "127.0.0.1:0", log=folder / "scheduler.log")
        deadline = time.monotonic() + 60
        while not self.info.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.address = json.loads(self.info.read_text())["address"]
        self.workers: list[subprocess.Popen[bytes]] = []

    def add_worker(self, hide: Path | None = None) -> None:
        from distributed import Client

        n = len(self.workers)
        self.workers.append(_dask("worker", self.address, "--nthreads", "1", "--memory-limit", "1GB",
                                  "--name", f"w{n}", log=self.folder / f"worker{n}.log", hide=hide))
        with Client(self.address, timeout=30) as c:
            c.wait_for_workers(len([w for w in self.workers if w.poll() is None]), timeout=60)

    def kill_workers(self) -> None:
        """SIGKILL every worker with its nanny: the machines are lost, nothing restarts them."""
        for w in self.workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGKILL)
                w.wait()

    def close(self) -> None:
        self.kill_workers()
        if self.scheduler.poll() is None:
            os.killpg(self.scheduler.pid, signal.SIGKILL)
            self.scheduler.wait()


@pytest.fixture
def cluster(tmp_path):
    c = DaskCluster(tmp_path / "dask")
    try:
        c.add_worker()
        yield c
    finally:
        c.close()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_scan_into_a_read_only_store_says_so(tmp_path, capsys, cluster):
    """Read-only storage (a share mounted read-only here): exit 3 and a message, the store as it was;
    the commands that only read it still work."""
    root = tmp_path / "tree"
    make_tree(root, 30, seed=1)
    store = tmp_path / "store"
    assert run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", cluster.address,
               "--quiet")[0] == 0
    (root / "new.txt").write_text("a new file " * 50)
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() == 0:  # (root writes whatever the permissions: a read-only mount of the store)
        if subprocess.run(["mount", "--bind", str(store), str(ro)], check=False, capture_output=True).returncode:
            pytest.skip("cannot mount here")
        subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], check=True)
    else:
        ro.rmdir()
        store.rename(ro)
        for d, _, files in os.walk(ro):
            for f in files:
                os.chmod(Path(d) / f, 0o444)
            os.chmod(d, 0o555)
    try:
        before = sorted((p, p.stat().st_mtime_ns) for p in ro.rglob("*"))
        rc, _, err = run(capsys, "cluster", "scan", str(root), "--store", str(ro), "--scheduler", cluster.address)
        assert rc == 3
        assert f"cannot write to the store {ro}" in err and "Traceback" not in err
        assert sorted((p, p.stat().st_mtime_ns) for p in ro.rglob("*")) == before
        rc, out, _ = run(capsys, "cluster", "stats", "--store", str(ro))
        assert rc == 0 and "files:        30 " in out
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(ro)], check=True)
        else:
            for d, _, _ in os.walk(ro):
                os.chmod(d, 0o755)


def test_a_wrong_scheduler_address_says_so_and_never_hangs(tmp_path, capsys, cluster, monkeypatch):
    """A mistyped address, the dashboard's port (a web server: Dask's client waited there forever)
    and a server that answers something else: each a message (exit 1) within the connect timeout."""
    import socket
    import threading

    from simscan.cluster import connect as connect_mod

    monkeypatch.setattr(connect_mod, "CONNECT_TIMEOUT_S", 3)
    root = tmp_path / "tree"
    make_tree(root, 10, seed=2)
    store = tmp_path / "store"
    dashboard = json.loads(cluster.info.read_text())["services"]["dashboard"]
    talker = socket.create_server(("127.0.0.1", 0))

    def talk() -> None:  # answers every connection with bytes that are not Dask's
        while True:
            try:
                conn, _ = talker.accept()
            except OSError:
                return
            conn.sendall(b"\xff" * 64)
            conn.close()

    threading.Thread(target=talk, daemon=True).start()
    try:
        for address, says in (
            ("notanaddress", "not the address of a Dask scheduler: notanaddress"),
            (f"tcp://127.0.0.1:{dashboard}", f"tcp://127.0.0.1:{dashboard} is not a Dask scheduler"),
            (f"tcp://127.0.0.1:{talker.getsockname()[1]}", "is not a Dask scheduler"),
        ):
            t0 = time.monotonic()
            rc, _, err = run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", address)
            assert rc == 1 and says in err and "Check the address" in err, (address, err)
            assert time.monotonic() - t0 < 20
            assert not store.exists()
    finally:
        talker.close()


def _scan_and_lose(capsys, tmp_path, cluster, lose) -> tuple[int, str, Path, Path]:
    """A cluster scan of a tree, ``lose(cluster)`` called as soon as the scan has begun."""
    import threading

    root = tmp_path / "tree"
    make_tree(root, 1500, seed=4, min_size=4000, max_size=16000, per_dir=100)
    store = tmp_path / "store"
    begun = store / "staging" / "scan-000001"

    def watch() -> None:
        deadline = time.monotonic() + 60
        while not begun.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        lose(cluster)

    killer = threading.Thread(target=watch)
    killer.start()
    t0 = time.monotonic()
    rc, _, err = run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", cluster.address)
    killer.join()
    assert time.monotonic() - t0 < 50
    return rc, err, root, store


def _the_next_scan_gives_the_local_answers(capsys, tmp_path, root: Path, store: Path) -> None:
    again = DaskCluster(tmp_path / "dask-again")
    try:
        again.add_worker()
        rc, _, err = run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", again.address)
        assert rc == 0, err
        idx = tmp_path / "index.sqlite3"
        assert run(capsys, "scan", str(root), "--index", str(idx), "--quiet")[0] == 0
        _, local, _ = run(capsys, "pairs", "--index", str(idx), "-m", "5")
        _, remote, _ = run(capsys, "cluster", "pairs", "--store", str(store), "--scheduler", again.address, "-m", "5")
        assert sorted(remote.splitlines()) == sorted(local.splitlines())
    finally:
        again.close()


def test_a_scan_that_loses_every_worker_stops_with_a_message(tmp_path, capsys, cluster, monkeypatch):
    """Every worker killed with its nanny mid-scan (machines lost): Dask would wait for workers forever;
    the scan stops after NO_WORKERS_S with a message (exit 1), and the next scan completes."""
    from simscan.cluster import connect as connect_mod

    monkeypatch.setattr(connect_mod, "NO_WORKERS_S", 3)
    monkeypatch.setattr(connect_mod, "WATCH_EVERY_S", 0.2)
    rc, err, root, store = _scan_and_lose(capsys, tmp_path, cluster, DaskCluster.kill_workers)
    assert rc == 1 and "has had no worker for 3 s" in err and "Start workers" in err and "Traceback" not in err
    _the_next_scan_gives_the_local_answers(capsys, tmp_path, root, store)


def test_a_scan_that_loses_its_scheduler_stops_with_a_message(tmp_path, capsys, cluster):
    rc, err, root, store = _scan_and_lose(capsys, tmp_path, cluster, DaskCluster.close)
    assert rc == 1 and f"lost the Dask scheduler at {cluster.address}" in err and "Traceback" not in err
    _the_next_scan_gives_the_local_answers(capsys, tmp_path, root, store)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")
def test_files_the_workers_do_not_see_are_named_as_such(tmp_path, capsys):
    """A folder the client sees and the worker does not (not mounted there): each file is a problem that
    says so, not a file that 'vanished', and the store keeps nothing wrong."""
    root = tmp_path / "tree"
    make_tree(root, 20, seed=5)
    blind = DaskCluster(tmp_path / "dask")
    try:
        blind.add_worker(hide=root)
        store = tmp_path / "store"
        rc, _, err = run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", blind.address)
        assert rc == 0 and "0 read" in err and "20 problems" in err
        rc, out, _ = run(capsys, "cluster", "problems", "--store", str(store))
        lines = out.splitlines()
        assert len(lines) == 20 and all("not found by the worker on " in x for x in lines), out
        assert all("the workers do not see this path" in x for x in lines) and "vanished" not in out
        rc, out, _ = run(capsys, "cluster", "stats", "--store", str(store))
        assert "files:        0 " in out
    finally:
        blind.close()


def test_a_rescan_keeps_the_problems_of_unchanged_files_as_locally(tmp_path, capsys, cluster):
    """Documents that could not be read (encrypted, damaged): a second scan that finds them unchanged
    still lists them, as the local `problems` does, instead of listing nothing (as if they were
    fixed)."""
    root = tmp_path / "docs"
    shutil.copytree(Path(__file__).parent / "data" / "documents", root, ignore=shutil.ignore_patterns("*.py"))
    (root / "truncated.docx").write_bytes((root / "essay.docx").read_bytes()[:3000])
    idx, store = tmp_path / "i.sqlite3", tmp_path / "store"
    for _ in range(2):
        assert run(capsys, "scan", str(root), "--index", str(idx), "--quiet")[0] == 0
        rc, _, err = run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", cluster.address)
        (root / "new.txt").write_text("a file that is new in the second scan " * 20)
    assert rc == 0 and "0 read" not in err
    _, local, _ = run(capsys, "problems", "--index", str(idx), "--format", "json")
    _, remote, _ = run(capsys, "cluster", "problems", "--store", str(store), "--format", "json")
    assert "encrypted" in local and "truncated.docx" in local and "unchanged since an earlier scan" in local
    assert sorted(remote.splitlines()) == sorted(local.splitlines())
    n = len(local.splitlines())
    assert f"{n} problems" in err
    # a third scan keeps them once, not with the remark twice
    assert run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", cluster.address)[0] == 0
    _, again, _ = run(capsys, "cluster", "problems", "--store", str(store), "--format", "json")
    assert again == remote


def test_a_damaged_store_says_so(tmp_path, capsys, cluster):
    """A store file cut short (a share that lost writes, a copy gone wrong), read on a worker (a
    partition) or here (the file rows): exit 3 naming the store and the file, not a traceback; the
    store is left as it is."""
    root = tmp_path / "tree"
    make_tree(root, 40, seed=6)
    store = tmp_path / "store"
    assert run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", cluster.address,
               "--quiet")[0] == 0
    (seg,) = (store / "segments").iterdir()
    part = min((seg / "fp").glob("part-*.parquet"))
    rows = min((seg / "files").glob("*.parquet"))
    for cut, commands in ((part, (("pairs",),)), (rows, (("pairs",), ("stats",)))):
        whole = cut.read_bytes()
        cut.write_bytes(whole[:40])
        before = sorted((p, p.stat().st_size) for p in store.rglob("*"))
        for args in commands:
            more = ("--scheduler", cluster.address) if args[0] != "stats" else ()
            rc, _, err = run(capsys, "cluster", *args, "--store", str(store), *more)
            assert rc == 3 and f"the store {store} is damaged" in err and cut.name in err, err
            assert "Scan into a new store" in err
        assert sorted((p, p.stat().st_size) for p in store.rglob("*")) == before
        cut.write_bytes(whole)


def test_the_scan_names_the_command_that_uses_the_same_cluster(tmp_path, capsys, cluster):
    """The next command the scan suggests keeps --scheduler: without it, `cluster groups` would start a
    LocalCluster of every CPU on the machine that scans instead of using the cluster."""
    root = tmp_path / "tree"
    make_tree(root, 10, seed=7)
    store = tmp_path / "store"
    rc, _, err = run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", cluster.address)
    assert rc == 0
    assert f"run `simscan cluster groups --store {store} --scheduler {cluster.address}` to see similar files" in err


@pytest.mark.parametrize("watch_s", [3, 600])
def test_a_search_that_loses_every_worker_stops_with_a_message(tmp_path, capsys, cluster, monkeypatch, watch_s):
    """Every worker lost just as `cluster pairs` begins: a message (exit 1), whether the watch sees it
    first (3 s) or Dask gives up first (its scatter: 'No valid workers found' after 30 s)."""
    from simscan.cluster import connect as connect_mod

    root = tmp_path / "tree"
    make_tree(root, 30, seed=8)
    store = tmp_path / "store"
    assert run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", cluster.address,
               "--quiet")[0] == 0
    checked = connect_mod.check_workers

    def check_then_lose(client):  # (the real check, then the machines are lost)
        n = checked(client)
        cluster.kill_workers()
        return n

    monkeypatch.setattr(connect_mod, "check_workers", check_then_lose)
    monkeypatch.setattr(connect_mod, "NO_WORKERS_S", watch_s)
    monkeypatch.setattr(connect_mod, "WATCH_EVERY_S", 0.2)
    t0 = time.monotonic()
    rc, out, err = run(capsys, "cluster", "pairs", "--store", str(store), "--scheduler", cluster.address)
    assert rc == 1 and "no worker" in err and "Traceback" not in err and out == "", err
    assert time.monotonic() - t0 < 50


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")
def test_a_store_or_root_the_workers_do_not_see_is_refused_before_any_work(tmp_path, capsys):
    """A store on this machine's disk (not a share) or a ROOT only this machine has: the command says
    which, before any work is sent; the store holds nothing wrong and the files are untouched."""
    private = tmp_path / "private"
    (private / "tree").mkdir(parents=True)
    make_tree(private / "tree", 10, seed=9)
    seen = tmp_path / "seen"
    make_tree(seen, 10, seed=10)
    blind = DaskCluster(tmp_path / "dask")
    try:
        blind.add_worker(hide=private)
        a = ("--scheduler", blind.address)
        rc, _, err = run(capsys, "cluster", "scan", str(seen), "--store", str(private / "store"), *a)
        assert rc == 3 and f"1 of 1 workers do not see the store {private / 'store'}" in err, err
        assert "under the same paths" in err and "Traceback" not in err
        rc, _, err = run(capsys, "cluster", "scan", str(private / "tree"), "--store", str(tmp_path / "store"), *a)
        assert rc == 1 and f"1 of 1 workers do not see {private / 'tree'}" in err, err
        assert run(capsys, "cluster", "scan", str(seen), "--store", str(tmp_path / "store"), "-q", *a)[0] == 0
        for cmd in (("pairs",), ("groups",), ("query", str(seen / "d000" / "f00000.txt"))):
            rc, _, err = run(capsys, "cluster", *cmd, "--store", str(private / "store"), *a)
            assert rc == 3 and "do not see the store" in err, (cmd, err)
    finally:
        blind.close()


def test_stats_count_the_files_as_the_local_stats(tmp_path, capsys, cluster):
    """The files line adds up, as the local one: text, binary and unreadable files (binary files were
    left out: '1,479 text, 0 unreadable' of 1,484 files)."""
    root = tmp_path / "tree"
    make_tree(root, 20, seed=11, binary_every=4)
    idx, store = tmp_path / "i.sqlite3", tmp_path / "store"
    assert run(capsys, "scan", str(root), "--index", str(idx), "--quiet")[0] == 0
    assert run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", cluster.address,
               "--quiet")[0] == 0
    local = next(x for x in run(capsys, "stats", "--index", str(idx))[1].splitlines() if x.startswith("files:"))
    remote = next(x for x in run(capsys, "cluster", "stats", "--store", str(store))[1].splitlines()
                  if x.startswith("files:"))
    assert remote == local and " 5 binary" in remote
    # Copied with the others' options, --scheduler is accepted (the store is read here all the same).
    for command in ("stats", "problems"):
        assert run(capsys, "cluster", command, "--store", str(store), "--scheduler", cluster.address)[0] == 0
