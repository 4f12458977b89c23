"""The window meets a damaged index: entries that fail their checksums are repaired by a scan, which
the banner offers (it offered only "Rebuild Index…", which re-read every file, for a damaged blob)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from simscan.gui.mainwindow import MainWindow

WAIT = 30_000


def test_damaged_fingerprints_are_repaired_by_the_scan_the_banner_offers(qtbot, corpus, tmp_path: Path):
    idx = tmp_path / "index.sqlite3"
    win = MainWindow(index_path=idx, roots=[str(corpus)])
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT), qtbot.waitSignal(win.scanFinished, timeout=WAIT):
        win.start_scan()
    groups = win.model.snapshot.n_groups
    win.close()
    with sqlite3.connect(idx, isolation_level=None) as c:  # one value of one blob changed; no results kept
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.execute("DELETE FROM results")
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        blob = c.execute("SELECT fps FROM fingerprints WHERE length(fps) > 800 LIMIT 1").fetchone()[0]
    data = idx.read_bytes()
    at = data.index(blob) + 400
    with open(idx, "r+b") as f:
        f.seek(at)
        f.write(bytes([data[at] ^ 0x10]))
    win = MainWindow(index_path=idx, roots=[str(corpus)], autoload=False)
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.errorShown, timeout=WAIT) as blocker:
        win.load_results()
    assert "fail their checksums" in blocker.args[0] and "Nothing was computed" in blocker.args[0]
    assert win.message.action.isVisible() and win.message.action.text() == "Scan"
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT), qtbot.waitSignal(win.scanFinished, timeout=WAIT):
        win.message.action.click()
    assert win.model.snapshot.n_groups == groups
    assert "damaged" not in (win.message.text.text() if win.message.isVisible() else "")
