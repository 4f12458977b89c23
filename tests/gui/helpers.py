"""Helpers of the window tests: scan through the window, find a member, wait for its preview."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QModelIndex

from simscan.gui.mainwindow import MainWindow
from simscan.gui.results_model import COL_KIND, COL_PATH, COL_SIMILARITY, IsGroupRole, PathRole, SimilarityRole
from simscan.index import Index
from simscan.similarity import DEFAULT_MIN_SIMILARITY, find_pairs, group_pairs

WAIT = 30_000


def scan(qtbot, win: MainWindow) -> None:
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT), qtbot.waitSignal(win.scanFinished, timeout=WAIT):
        win.start_scan()


def preview_of(qtbot, win: MainWindow, member: int | str):
    """Select a member (row number or file name) and wait for its preview; returns the preview."""
    m = member_row(win, member) if isinstance(member, str) else member
    with qtbot.waitSignal(win.previewShown, timeout=WAIT):
        assert win.select_member(m)
        # Compared now, not after the settle timer: the preview of an earlier selection still on its way
        # is then superseded (the runner drops it) and cannot pass for this one.
        win._preview_timer.stop()
        win._preview_current()
    return win.preview


def member_row(win: MainWindow, name: str) -> int:
    s = win.model.snapshot
    return next(m for m, p in enumerate(s.paths) if os.path.basename(p) == name)


def shown_groups(win: MainWindow) -> list[dict[str, float | str]]:
    """What the tree shows: {basename: (kind text, similarity)} per group, via the proxy."""
    m = win.proxy
    out = []
    while m.canFetchMore(QModelIndex()):
        m.fetchMore(QModelIndex())
    for r in range(m.rowCount()):
        g = m.index(r, 0)
        assert g.data(IsGroupRole)
        members = {}
        for c in range(m.rowCount(g)):
            name = os.path.basename(m.index(c, COL_PATH, g).data(PathRole))
            members[name] = (m.index(c, COL_KIND, g).data(), m.index(c, COL_SIMILARITY, g).data(SimilarityRole))
        out.append(members)
    return out


def core_groups(index_path: Path, threshold: float) -> list[dict[str, tuple[str, float]]]:
    """The same groups straight from the core, for comparison."""
    with Index.open(index_path, readonly=True) as idx:
        files = idx.files()
        pairs = find_pairs(idx, min_similarity=min(threshold, DEFAULT_MIN_SIMILARITY))
    out = []
    for g in group_pairs(pairs, files, min_similarity=threshold):
        out.append(
            {
                os.path.basename(m.path): ("reference" if m.is_reference else m.kind, m.similarity)
                for m in g.members
            }
        )
    return out
