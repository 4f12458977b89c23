"""The fault campaign's ``kill -9``: a scan (or the window's trash action) killed at a random moment of a
chosen phase while another process reads the index, then held to the rule: the integrity check passes,
the next scan completes, and its results are those of a fresh scan of the same files.

Run as a script, this module is the process that gets killed: ``scan`` runs ``simscan scan`` (the CLI,
results at the end included), ``trash`` the window's trash job on the exact copies; both print each
phase as it begins (``PHASE name``) so that the campaign kills inside the phase it chose.  ``reader``
is the other process: it reads the index over and over until told to stop, and logs any error that is
not "busy" or "no index yet".  Progress is reported at every step and each report pauses 1 ms, so
that even the short phases last long enough to be hit (the kill still lands in the real code).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fault_campaign import REPO, cli, copy_index, integrity, make_family_tree, outputs, scan

#: The phases a kill is aimed at (in the order a scan goes through them; "results" is the pair search
#: and the results written at the end of a scan; "trash" the window moving marked copies to the trash).
PHASES = ("walk", "read", "write", "results", "trash")
#: Progress phases of each campaign phase.
_MEMBERS = {"walk": {"walk"}, "read": {"read"}, "write": {"write"},
            "results": {"exact", "pairs", "score", "code:pairs", "code:score"}, "trash": {"trash"}}


@dataclass
class Campaign:
    """A tree, the index of half of it that each scan starts from, and what a fresh scan gives."""

    root: Path
    work: Path
    start: Path
    queries: list[Path]
    fresh: dict[str, Any]
    #: How long each phase lasted in a scan that was not killed (s).
    durations: dict[str, float] = field(default_factory=dict)
    reader: subprocess.Popen | None = None
    reader_log: Path | None = None


def prepare(root: Path, work: Path, bases: int = 120) -> Campaign:
    files = make_family_tree(root, n_bases=bases)
    work.mkdir(parents=True, exist_ok=True)
    start = work / "start.db"
    assert scan(root / "originals", start)[0] == 0  # the scan then has old files, new files, and all phases
    fresh = work / "fresh.db"
    assert scan(root, fresh)[0] == 0
    queries = [files[0], files[len(files) // 2]]
    c = Campaign(root, work, start, queries, outputs(fresh, queries))
    copy_index(start, work / "timing.db")
    _, phases = _child(c, "scan", work / "timing.db", None, 0.0)
    c.durations = phases
    tree, idx = _trash_tree(c)
    c.durations["trash"] = _child(c, "trash", idx, None, 0.0, tree)[1]["trash"]
    return c


def _trash_tree(c: Campaign) -> tuple[Path, Path]:
    """A copy of the tree, and its index, for the window to move files of to the trash."""
    root = c.work / "trash-tree"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(c.root, root, ignore=lambda d, names: [n for n in names if n == "pipe"])
    os.mkfifo(root / "other" / "pipe")
    idx = c.work / "killed.db"
    for p in c.work.glob("killed.db*"):
        p.unlink()
    assert scan(root, idx)[0] == 0
    return root, idx


def _env(home: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO), HOME=str(home), XDG_DATA_HOME=str(home / "data"),
                QT_QPA_PLATFORM="offscreen")


def _child(c: Campaign, mode: str, index: Path, target: str | None, delay: float,
           root: Path | None = None) -> tuple[subprocess.Popen, dict[str, float]]:
    """Run the child; with ``target``, kill it ``delay`` s after that phase began (or, if the phase never
    came, when it ends).  Returns the process (ended) and when each phase began and lasted."""
    home = c.work / "home"
    home.mkdir(exist_ok=True)
    linger = "1" if target else "0"  # a child to be killed waits at its end, so that the kill always comes
    proc = subprocess.Popen(
        [sys.executable, "-u", __file__, mode, str(root or c.root), str(index), linger], cwd=REPO, env=_env(home),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    began: dict[str, float] = {}
    order: list[str] = []
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    kill_at = None
    buf = b""
    while True:
        now = time.monotonic()
        if kill_at is not None and now >= kill_at:
            proc.send_signal(signal.SIGKILL)
            break
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            chunk = b""
        if chunk:
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.startswith(b"PHASE "):
                    name = line[6:].decode()
                    ph = next((k for k, v in _MEMBERS.items() if name in v), name)
                    if ph not in began:
                        began[ph] = now
                        order.append(ph)
                        if ph == target and kill_at is None:
                            kill_at = now + delay
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.0005)
    os.set_blocking(fd, True)
    _, proc.err_text = proc.communicate(timeout=60)  # type: ignore[attr-defined]
    ends = order[1:] + ["(end)"]
    end_times = {**began, "(end)": time.monotonic()}
    phases = {ph: end_times[nxt] - began[ph] for ph, nxt in zip(order, ends)}
    phases["(order)"] = order  # type: ignore[assignment]
    return proc, phases


def start_reader(c: Campaign, index: Path) -> None:
    c.reader_log = c.work / "reader.log"
    c.reader_log.write_text("")
    c.reader = subprocess.Popen(
        [sys.executable, "-u", __file__, "reader", str(c.root), str(index), str(c.reader_log)], cwd=REPO,
        env=_env(c.work / "home"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )


def stop_reader(c: Campaign) -> list[str]:
    """Stop the reader; the errors it met (none expected)."""
    assert c.reader is not None and c.reader_log is not None
    c.reader.send_signal(signal.SIGTERM)
    _, err = c.reader.communicate(timeout=30)
    lines = [x for x in c.reader_log.read_text().splitlines() if x.strip()]
    return lines + ([err] if "Traceback" in err else [])


def kill_cycle(c: Campaign, phase: str, rng: random.Random) -> dict[str, Any]:
    """One kill in ``phase`` at a random moment of it; asserts the rule, returns what happened."""
    idx = c.work / "killed.db"
    root = c.root
    if phase == "trash":  # the window moves files: its own copy of the tree, and of its index, each time
        root, idx = _trash_tree(c)
    else:
        copy_index(c.start, idx)
    delay = rng.uniform(0, max(0.002, 0.8 * c.durations.get(phase, 0.05)))
    start_reader(c, idx)
    try:
        proc, phases = _child(c, "trash" if phase == "trash" else "scan", idx, phase, delay, root)
    finally:
        errors = stop_reader(c)
    err = proc.err_text  # type: ignore[attr-defined]
    order = phases["(order)"]
    killed = proc.returncode == -signal.SIGKILL
    where = f"{phase} (+{delay * 1000:.0f} ms; phases seen {order})"
    assert not errors, f"{where}: the reader met {errors[:3]}"
    assert "Traceback" not in err and "leaked" not in err, f"{where}: {err[-800:]}"
    assert integrity(idx) == "ok", f"{where}: {integrity(idx)}"
    code, _, out = cli(["check", "--index", str(idx)])
    assert code == 0, f"{where}: check says {out}"
    code, err = scan(root, idx)
    assert code == 0, f"{where}: the next scan: {err}"
    fresh = c.fresh
    if phase == "trash":
        f2 = c.work / "trash-fresh.db"
        for p in c.work.glob("trash-fresh.db*"):
            p.unlink()
        assert scan(root, f2)[0] == 0
        fresh = outputs(f2, [q for q in c.queries])
    got = outputs(idx, c.queries)
    identical = all(got[k] == fresh[k] for k in fresh if k != "problems" or phase != "trash")
    assert identical, f"{where}: after the next scan: " + ", ".join(k for k in fresh if got[k] != fresh[k])
    return {"killed": killed, "after_phase_began": phase in order,
            "killed_in_phase": killed and phase in order and order[-1] == phase, "identical": identical, "where": where}


# ------------------------------------------------------------------------------------- the children
def _phase_printer() -> Any:
    from simscan.cli.common import ProgressBar

    class Phases(ProgressBar):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            self.enabled = True
            self.seen = ""

        def __call__(self, p: Any) -> None:
            if p.phase != self.seen:
                self.seen = p.phase
                print(f"PHASE {p.phase}", flush=True)
            time.sleep(0.001)

        def finish(self) -> None:
            pass

    return Phases


def _run_scan(root: str, index: str) -> int:
    from simscan import scanner
    from simscan.cli import main, scan_cmds

    scanner.PROGRESS_RATE = 0.0  # every step reported (and paused 1 ms: see the module docstring)
    scanner.INLINE_MAX_FILES = 0  # the worker processes always (as in a large scan)
    scan_cmds.ProgressBar = _phase_printer()
    return main(["scan", root, "--index", index, "--jobs", "2"])


def _run_trash(root: str, index: str) -> int:
    from PySide6.QtCore import QCoreApplication

    from simscan.gui import jobs
    from simscan.index import Index
    from simscan.progress import CancelToken
    from simscan.similarity.engine import find_groups

    app = QCoreApplication([])  # noqa: F841 - Qt's trash needs an application object
    with Index.open(index, readonly=True) as ix:
        groups = find_groups(ix)
    targets = []
    for g in groups:
        ref = g.members[0]
        kept = (jobs.KeptFile(ref.path, ref.size, ref.mtime_ns),)
        for m in g.members[1:]:
            if m.kind == "exact":
                targets.append(jobs.TrashTarget(m.path, m.size, m.mtime_ns, kept, True))
    reporter = _phase_printer()(enabled=True)
    print("PHASE trash", flush=True)
    jobs.trash(targets, Path(index), 15.0, [], [], reporter, CancelToken())
    return 0


def _run_reader(index: str, log: str) -> int:
    """Read the index over and over (as a window that stays open does) until SIGTERM."""
    from simscan.index import Index, IndexLocked, IndexUnavailable
    from simscan.similarity.engine import find_pair_set

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while not stop:
        try:
            with Index.open(index, readonly=True) as ix:
                ps = find_pair_set(ix, cache=False)
                ix.stats()
                ix.problems()
                assert len(ps.files) >= 0
        except (IndexLocked, IndexUnavailable) as e:  # busy, or no index yet: a reader waits
            if "damaged" in str(e):
                _log(log, e)
        except Exception as e:  # noqa: BLE001 - logged for the campaign
            _log(log, e)
        time.sleep(0.01)
    return 0


def _log(log: str, e: BaseException) -> None:
    with open(log, "a") as f:
        f.write(json.dumps(f"{type(e).__name__}: {e}") + "\n")


if __name__ == "__main__":
    mode, root_arg, index_arg, extra = sys.argv[1:5]
    if mode == "reader":
        sys.exit(_run_reader(index_arg, extra))
    code = _run_scan(root_arg, index_arg) if mode == "scan" else _run_trash(root_arg, index_arg)
    print("PHASE end", flush=True)
    if extra == "1":
        time.sleep(30)  # (killed meanwhile)
    sys.exit(code)
