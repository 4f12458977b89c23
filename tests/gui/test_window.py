"""The window end to end: real files, a real index, scans and actions through the widgets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, Qt

from simscan.gui import dialogs
from simscan.gui.mainwindow import MainWindow
from simscan.gui.models import COL_KIND, COL_PATH, COL_SIMILARITY, IsGroupRole, PathRole, SimilarityRole
from simscan.index import Index
from simscan.similarity import DEFAULT_MIN_SIMILARITY, find_pairs, group_pairs

WAIT = 30_000


@pytest.fixture
def window(qtbot, tmp_path: Path):
    def make(**kw) -> MainWindow:
        kw.setdefault("index_path", tmp_path / "index.sqlite3")
        win = MainWindow(**kw)
        qtbot.addWidget(win)
        win.show()
        return win

    return make


def scan(qtbot, win: MainWindow) -> None:
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        with qtbot.waitSignal(win.scanFinished, timeout=WAIT):
            win.start_scan()


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


def test_scan_through_window_shows_expected_groups(qtbot, window, corpus, tmp_path):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    shown = shown_groups(win)
    expected = core_groups(tmp_path / "index.sqlite3", 30)
    assert sorted(map(sorted, shown)) == sorted(map(sorted, expected))
    # One group: the original (oldest) is the reference; copies at 100 %; other.txt is in none.
    assert len(shown) == 1
    g = shown[0]
    assert g["original.txt"][0] == "reference"
    assert g["copy.txt"] == ("exact", 100.0)
    assert g["utf16.txt"] == ("content", 100.0)
    assert 50 < g["edited.txt"][1] < 100 and g["edited.txt"][0] == "near"
    assert g["excerpt.txt"][0] == "contained"
    assert "other.txt" not in g
    for name, (kind, sim) in g.items():
        assert sim == pytest.approx(expected[0][name][1])
    # The summary counts the shown group, its files and the bytes of all but the reference.
    sizes = sum((corpus / n).stat().st_size for n in g if n != "original.txt")
    assert win.proxy.totals() == (1, 5, sizes)
    assert "1 groups" in win.summary_label.text() or "1 group" in win.summary_label.text()
