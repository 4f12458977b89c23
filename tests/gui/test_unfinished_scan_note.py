"""The window says (a banner above the list) when the results it shows are short of their folders: the
last scan of the index was killed before it finished, or a scan by another window or command is writing
to the index as it is read.  The command line says both; the window showed such results without a word
(acceptance test: an index whose scan was killed opened on 318 groups of 1,239 of 2,625 files)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from helpers import WAIT, scan

from simscan.index import Index

#: A real scan in a process of its own that kills itself (SIGKILL, as ``kill -9`` would) once every file
#: is written, when the search for the results at its end begins: its files are stored, its run is not done.
_KILLED_SCAN = """
import os, signal, sys
from pathlib import Path
from simscan.scanner import ScanRequest, run_scan
seen = set()
def progress(p):
    if "write" in seen and p.phase != "write":
        os.kill(os.getpid(), signal.SIGKILL)
    seen.add(p.phase)
run_scan(ScanRequest([Path(sys.argv[1])], index_path=Path(sys.argv[2]), jobs=1), progress=progress)
"""


def _loaded(qtbot, win) -> None:
    qtbot.waitUntil(lambda: win.results is not None and not win.runner.busy("load"), timeout=WAIT)


def test_the_window_says_when_its_results_come_from_an_unfinished_scan(qtbot, window, corpus, tmp_path: Path):
    index = tmp_path / "index.sqlite3"
    child = subprocess.run([sys.executable, "-c", _KILLED_SCAN, str(corpus), str(index)],
                           check=False, timeout=120)
    assert child.returncode == -signal.SIGKILL
    with Index.open(index, readonly=True) as idx:
        assert len(idx.files()) == 6 and idx.runs(1)[0]["status"] == "running"

    win = window(index_path=index, roots=[str(corpus)])
    _loaded(qtbot, win)
    assert win.results.n_files == 6 and win.model.snapshot.n_groups  # what it stored is shown...
    text = win.message.text.text()
    assert not win.message.isHidden() and "incomplete" in text and "was killed before it finished" in text, text

    scan(qtbot, win)  # ...and a scan that finishes ends the warning
    assert win.results.unfinished is None and win.message.isHidden()

    # Another process scanning into the index as the window reads it (here: holding the scan lock).
    with Index.open(index) as other:
        other.scan_lock()
        with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
            win.load_results()
        text = win.message.text.text()
        assert not win.message.isHidden() and "a scan (another window or command) is writing" in text, text
        other.release_scan_lock()
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.load_results()
    assert win.message.isHidden()
