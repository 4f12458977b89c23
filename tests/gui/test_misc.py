"""Keyboard, progress text, the error hook, the empty state, the app entry points."""

from __future__ import annotations

import os
import sys

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from simscan.gui import dialogs
from simscan.gui.mainwindow import MainWindow, describe_progress
from simscan.index import IndexLocked
from simscan.progress import Progress


def test_describe_progress_has_phase_files_mb_rate_eta():
    text = describe_progress(
        Progress("read", files_done=1234, files_total=5678, bytes_done=120_000_000, bytes_total=800_000_000,
                 rate_bytes_s=45_000_000, eta_s=75)
    )
    assert text.startswith("Reading")
    assert "1,234 of 5,678 files" in text and "120.0 MB of 800.0 MB" in text
    assert "45.0 MB/s" in text and "1 min 15 s left" in text
    assert describe_progress(Progress("walk", files_done=10)) == "Finding files · 10 files"
    # Phases counting other things than files show a percentage.
    assert describe_progress(Progress("pairs", files_done=250, files_total=1000)) == "Comparing · 25 %"


def test_ctrl_f_focuses_search_and_escape_cancels(qtbot, tmp_path):
    win = MainWindow(index_path=tmp_path / "i.sqlite3", autoload=False)
    qtbot.addWidget(win)
    win.show()
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=5000)  # window shortcuts need it
    win.view.setFocus()
    qtbot.keyClick(win.view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert win.focusWidget() is win.search_edit
    # Escape cancels a running scan.
    (tmp_path / "d").mkdir()
    for i in range(300):
        (tmp_path / "d" / f"{i}.txt").write_text(f"text {i} " * 50)
    win.folders.add([str(tmp_path / "d")])
    with qtbot.waitSignal(win.scanFinished, timeout=30_000) as blocker:
        win.start_scan()
        qtbot.keyClick(win.view, Qt.Key.Key_Escape)
    assert blocker.args == [None]
    qtbot.waitUntil(lambda: not win.runner.busy("load"), timeout=30_000)


def test_empty_index_shows_what_to_do(qtbot, tmp_path):
    win = MainWindow(index_path=tmp_path / "missing.sqlite3", autoload=False)
    qtbot.addWidget(win)
    with qtbot.waitSignal(win.resultsLoaded, timeout=10_000):
        win.load_results()
    assert "No index yet" in win.status_label.text()
    assert win.model.rowCount() == 0 and "press Scan" in win.view.placeholder()
    # Scanning with no folder explains instead of failing.
    win.start_scan()
    assert not win.message.isHidden() and "Add a folder" in win.message.text.text()
    assert not win.runner.busy("scan")


def test_missing_folder_is_explained(qtbot, tmp_path):
    win = MainWindow(index_path=tmp_path / "i.sqlite3", roots=[str(tmp_path / "gone")], autoload=False)
    qtbot.addWidget(win)
    win.start_scan()
    assert "do not exist" in win.message.text.text() and not win.runner.busy("scan")


def test_index_errors_in_jobs_are_shown_in_the_window(qtbot, tmp_path):
    win = MainWindow(index_path=tmp_path / "i.sqlite3", autoload=False)
    qtbot.addWidget(win)
    win._on_job_failed(IndexLocked("the index is busy.", "Wait for the other scan to finish."))
    assert "busy" in win.message.text.text() and "Wait for the other scan" in win.message.text.text()


def test_excepthook_shows_a_dialog_not_a_traceback(monkeypatch, capsys, qapp):
    shown = []
    monkeypatch.setattr(dialogs, "show_error", lambda parent, err, tb=None: shown.append(err))
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    dialogs.install_excepthook()
    try:
        raise ValueError("boom")
    except ValueError as e:
        sys.excepthook(type(e), e, e.__traceback__)
    assert [str(e) for e in shown] == ["boom"]
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "Traceback" not in out.out


def test_describe_error_says_what_to_do():
    what, todo = dialogs.describe_error(FileNotFoundError(2, "No such file", "/x/y.txt"))
    assert "/x/y.txt no longer exists" in what and "Scan again" in todo
    what, todo = dialogs.describe_error(IndexLocked("locked!", "wait"))
    assert (what, todo) == ("Locked!", "wait")  # capitalised: on the CLI it follows "simscan: "


def test_cli_has_gui_command_without_importing_qt_until_run():
    from simscan.cli import build_parser

    args = build_parser().parse_args(["gui", "/tmp", "--index", "/tmp/x.sqlite3"])
    assert args.roots == ["/tmp"] and args.index == "/tmp/x.sqlite3"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland display variables")
def test_gui_without_a_display_says_so_and_exits_1(tmp_path):
    # Qt's xcb plugin would abort the process (exit 134) and advise reinstalling the application.
    import os
    import subprocess
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    r = subprocess.run([sys.executable, "-m", "simscan", "gui", "--index", str(tmp_path / "i.db")], env=env,
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 1, r.stderr
    assert "no graphical display" in r.stderr and "simscan scan FOLDER" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "i.db").exists()


def test_a_long_path_in_the_preview_header_never_widens_the_window(qtbot, tmp_path):
    from PySide6.QtWidgets import QLabel

    from simscan.gui.preview import PreviewPane

    pane = PreviewPane()
    qtbot.addWidget(pane)
    pane.resize(400, 300)
    pane.show()
    path = "/very/long/" + "folder/" * 60 + "name.txt"
    pane.set_header(f"Selected: {path}", path, "")
    assert pane.minimumSizeHint().width() < 400 and pane.width() == 400
    assert pane.title.text() == f"Selected: {path}" and pane.title.toolTip() == path
    shown = QLabel.text(pane.title)  # what is painted: shortened in the middle
    assert "…" in shown and shown.startswith("Selected: /very") and shown.endswith("name.txt")


@pytest.mark.parametrize("threshold", [100.0, 97.0, 90.0])
def test_histogram_colours_the_bins_that_hold_pairs_at_or_above_the_threshold(qtbot, threshold):
    import numpy as np
    from PySide6.QtGui import QPalette

    from simscan.gui.chart import SimilarityHistogram

    chart = SimilarityHistogram()
    qtbot.addWidget(chart)
    chart.resize(400, 200)
    chart.set_data(np.array([100.0] * 9 + [92.0] * 9), 50.0, threshold)
    img = chart.grab().toImage()
    r = chart._plot_rect()
    n = len(chart.counts)
    accent = chart.palette().color(QPalette.ColorRole.Highlight)

    def bar_colour(i):  # the middle of bin i, just above the axis
        x = int(r.left() + (i + 0.5) * r.width() / n)
        return img.pixelColor(x, int(r.bottom()) - 3)

    assert bar_colour(n - 1) == accent  # 95-100 holds the pairs at 100: always at or above
    assert (bar_colour(n - 2) == accent) == (threshold <= 92.0)  # 90-95 holds the pairs at 92


def test_app_icon_loads(qapp):
    from simscan.gui.app import app_icon

    icon = app_icon()
    assert not icon.isNull() and icon.availableSizes()


@pytest.mark.parametrize("argv", [["--index", "/tmp/i.sqlite3", "/a", "/b"]])
def test_gui_entry_point_arguments(argv):
    from simscan.gui.app import build_parser

    args = build_parser().parse_args(argv)
    assert args.roots == ["/a", "/b"] and args.index == "/tmp/i.sqlite3"


def test_signals_do_not_leak_bool_references(qapp):
    """PySide6 6.12 on CPython 3.11 dropped a reference to True per emit(); after a few
    thousand signals the interpreter aborted.  simscan.gui installs a correction when needed."""
    from PySide6.QtCore import QObject, Signal

    from simscan.gui import compat

    class S(QObject):
        ping = Signal(object)

    s = S()
    s.ping.connect(lambda v: None)
    before = sys.getrefcount(True), sys.getrefcount(False)
    for _ in range(20_000):
        s.ping.emit(1)
    assert (sys.getrefcount(True), sys.getrefcount(False)) >= before
    # With the correction installed, the probe no longer sees a leak.
    assert not compat.emit_steals_bool_reference()


def test_folders_named_at_start_are_the_ones_scanned(qtbot, tmp_path):
    """`simscan-gui FOLDER` (run: MainWindow(roots=...), then a scan): the named folder is scanned, not
    the folders remembered from earlier sessions too; those are named in a banner with a way back,
    and still remembered afterwards.  (They used to be scanned as well, unasked.)"""
    from simscan.gui.folders import Folder
    from simscan.index import Index

    dirs = {}
    for name in ("old", "ref", "named"):
        d = dirs[name] = tmp_path / name
        d.mkdir()
        (d / f"{name}.txt").write_text(f"{name} " * 200)
    first = MainWindow(index_path=tmp_path / "i.sqlite3", autoload=False)
    qtbot.addWidget(first)
    first.folders.set_folders([Folder(str(dirs["old"])), Folder(str(dirs["ref"]), True)])
    first.close()

    win = MainWindow(index_path=tmp_path / "i.sqlite3", roots=[str(dirs["named"]), str(dirs["ref"])], autoload=False)
    qtbot.addWidget(win)
    win.show()
    # The named folders only; one named again keeps its reference tick.
    assert [(f.path, f.reference) for f in win.folders.folders] == [(str(dirs["named"]), False),
                                                                    (str(dirs["ref"]), True)]
    with qtbot.waitSignal(win.scanFinished, timeout=30_000):
        win.start_scan()
    with Index.open(tmp_path / "i.sqlite3", readonly=True) as idx:
        assert sorted(os.path.basename(p) for p in idx.files().paths) == ["named.txt", "ref.txt"]
    bar = win.message
    assert bar.isVisible() and str(dirs["old"]) in bar.text.text() and bar.action.text() == "Restore Folders"
    bar.action.click()
    assert [f.path for f in win.folders.folders] == [str(dirs["named"]), str(dirs["ref"]), str(dirs["old"])]
    assert bar.isHidden()  # the state it described is gone
    win.close()

    # Not restored: still remembered for the next session.
    again = MainWindow(index_path=tmp_path / "i.sqlite3", roots=[str(dirs["named"])], autoload=False)
    qtbot.addWidget(again)
    again.close()
    later = MainWindow(index_path=tmp_path / "i.sqlite3", autoload=False)
    qtbot.addWidget(later)
    assert {f.path for f in later.folders.folders} == {str(d) for d in dirs.values()}


def test_void_qt_calls_do_not_use_up_none(qapp):
    """PySide6 6.12.0 on CPython 3.11 drops a reference to None at every void method call
    (``update()``, ``processEvents()`` …): a long session ended with "deallocating None".  The
    compat layer gives None references to spare when the bug is there."""
    import sys

    from PySide6.QtWidgets import QWidget

    from simscan.gui import compat

    w = QWidget()
    before = sys.getrefcount(None)
    for _ in range(100_000):
        w.update()
    after = sys.getrefcount(None)
    if compat.void_call_steals_none_reference():
        assert compat._none_reserved and after > compat.NONE_RESERVE // 2
    else:
        assert after >= before - 10
