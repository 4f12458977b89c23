"""The folders panel (window_folders.py): folders listed, dropped, named at start; reference folders."""

from __future__ import annotations

import os

from PySide6.QtCore import QModelIndex, Qt

from tests.gui.helpers import WAIT, scan, shown_groups


def test_reference_folder_decides_the_reference(qtbot, window, corpus, tmp_path):
    refs = tmp_path / "originals"
    refs.mkdir()
    # The newest copy, but in a reference folder: it must become the reference.
    kept = refs / "kept.txt"
    kept.write_bytes((corpus / "original.txt").read_bytes())
    # Strictly newer than the original: file systems with coarse timestamps could tie them.
    newer = (corpus / "original.txt").stat().st_mtime_ns + 10**10
    os.utime(kept, ns=(newer, newer))
    win = window(roots=[str(corpus), str(refs)])
    win.folders.set_reference(1, True)
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    g = shown_groups(win)[0]
    assert g["kept.txt"][0] == "reference"
    assert g["original.txt"] == ("exact", 100.0)
    # Unticking the reference folder regroups at once (no scan): the oldest file is kept again.
    # Wait for the regrouped state itself: a load still finishing from the scan may also emit
    # resultsLoaded, so waiting for one signal could read the grouping before the untick.
    win.folders.set_reference(1, False)

    def regrouped() -> bool:
        groups = shown_groups(win)
        return bool(groups) and groups[0].get("original.txt", ("",))[0] == "reference"

    qtbot.waitUntil(regrouped, timeout=WAIT)
    g = shown_groups(win)[0]
    assert g["original.txt"][0] == "reference" and g["kept.txt"] == ("exact", 100.0)


def test_folders_drag_and_drop(qtbot, window, tmp_path):
    from PySide6.QtCore import QMimeData, QUrl

    win = window(autoload=False)
    a = tmp_path / "a"
    a.mkdir()
    (a / "f.txt").write_text("x")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(a)), QUrl.fromLocalFile(str(a / "f.txt")), QUrl("https://example.com/")])
    assert win.folders.canDropMimeData(mime, Qt.DropAction.CopyAction, -1, -1, QModelIndex())
    assert win.folders.dropMimeData(mime, Qt.DropAction.CopyAction, -1, -1, QModelIndex())
    assert [f.path for f in win.folders.folders] == [str(a)]  # a dropped file adds its folder, once


def test_dropping_folders_on_the_window_adds_them(qtbot, window, tmp_path):
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    win = window(autoload=False)
    folder = tmp_path / "dropped"
    folder.mkdir()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(folder))])
    ev = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                    Qt.KeyboardModifier.NoModifier)
    win.dropEvent(ev)
    assert [f.path for f in win.folders.folders] == [str(folder)]
    assert win.act_scan.isEnabled()
