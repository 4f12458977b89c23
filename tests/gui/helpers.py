"""Helpers of the window tests: scan through the window, find a member, wait for its preview."""

from __future__ import annotations

import os

from simscan.gui.mainwindow import MainWindow

WAIT = 30_000


def scan(qtbot, win: MainWindow) -> None:
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT), qtbot.waitSignal(win.scanFinished, timeout=WAIT):
        win.start_scan()


def preview_of(qtbot, win: MainWindow, member: int | str):
    """Select a member (row number or file name) and wait for its preview; returns the preview."""
    m = member_row(win, member) if isinstance(member, str) else member
    with qtbot.waitSignal(win.previewShown, timeout=WAIT):
        assert win.select_member(m)
    return win.preview


def member_row(win: MainWindow, name: str) -> int:
    s = win.model.snapshot
    return next(m for m, p in enumerate(s.paths) if os.path.basename(p) == name)
