"""The window end to end: real files, a real index, scans and actions through the widgets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPlainTextEdit

from simscan.gui import dialogs
from simscan.gui.mainwindow import MainWindow
from simscan.gui.results_model import (
    COL_KIND,
    COL_PATH,
    COL_SIMILARITY,
    COL_SIZE,
    SortRole,
)
from simscan.index import Index
from simscan.similarity import DEFAULT_MIN_SIMILARITY, find_pairs
from simscan.similarity.types import shown_pct
from tests.gui.helpers import WAIT, core_groups, member_row, preview_of, scan, shown_groups


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
    # The summary counts the shown group, its files, and the reclaimable bytes: the extra copies only
    # (same bytes or same text), never the edited version or the excerpt.
    sizes = sum((corpus / n).stat().st_size for n in ("copy.txt", "utf16.txt"))
    assert win.proxy.totals() == (1, 5, 2, sizes)
    assert "1 group · 5 files" in win.summary_label.text()
    # The per-folder picture counts the same: all copies are in one folder; clicking it searches for it.
    assert win.folder_chart.rows == [(str(corpus), sizes, 2)]
    win.folder_chart.folderPicked.emit(str(corpus))
    assert win.search_edit.text() == str(corpus) + os.sep


def test_threshold_slider_regroups_without_rescanning(qtbot, window, corpus, tmp_path):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    assert {"edited.txt", "excerpt.txt"} <= set(shown_groups(win)[0])
    runs_before = Index.open(tmp_path / "index.sqlite3", readonly=True).runs()
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.threshold_slider.setValue(99)
    shown = shown_groups(win)
    assert sorted(map(sorted, shown)) == sorted(map(sorted, core_groups(tmp_path / "index.sqlite3", 99)))
    # Copies stay grouped whatever the threshold; the edited text leaves.
    assert {"original.txt", "copy.txt", "utf16.txt"} <= set(shown[0]) and "edited.txt" not in shown[0]
    assert win.model.snapshot.threshold == 99
    assert Index.open(tmp_path / "index.sqlite3", readonly=True).runs() == runs_before  # no scan ran
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.threshold_slider.setValue(30)
    assert {"edited.txt", "excerpt.txt"} <= set(shown_groups(win)[0])


def test_cancel_stops_scan_and_window_stays_usable(qtbot, window, tmp_path, monkeypatch):
    import time

    from simscan.gui import jobs

    big = tmp_path / "many"
    for d in range(10):
        sub = big / f"d{d:02d}"
        sub.mkdir(parents=True)
        for i in range(150):
            (sub / f"f{i:03d}.txt").write_text(f"file {d} {i} " * (20 + i % 7))
    total = 10 * 150
    scan_and_load = jobs.scan_and_load

    def held_at_first_read(request, threshold, roots, preferred, progress, cancel, *more, **kw):
        """The real scan, held at its first "read" report until the user presses Cancel, so the
        cancel lands mid-scan however fast the machine reads."""
        def sink(p):
            progress(p)
            deadline = time.monotonic() + 10
            while p.phase == "read" and not cancel.cancelled and time.monotonic() < deadline:
                time.sleep(0.005)

        return scan_and_load(request, threshold, roots, preferred, sink, cancel, *more, **kw)

    monkeypatch.setattr(jobs, "scan_and_load", held_at_first_read)
    win = window(roots=[str(big)])
    phases = []
    on_progress = win._on_progress

    def progress(p):  # the user presses Cancel once files are being read
        phases.append(p.phase)
        on_progress(p)
        if p.phase == "read" and win.act_cancel.isEnabled():
            win.act_cancel.trigger()

    win._on_progress = progress
    with qtbot.waitSignal(win.scanFinished, timeout=WAIT) as blocker:
        win.start_scan()
        assert win.act_cancel.isEnabled() and not win.act_scan.isEnabled()
        assert "Scanning" in win.view.placeholder()
    assert blocker.args == [None]  # reported as cancelled
    assert "walk" in phases and "read" in phases
    win._on_progress = on_progress
    monkeypatch.setattr(jobs, "scan_and_load", scan_and_load)
    assert "cancelled" in win.status_label.text().lower()
    qtbot.waitUntil(lambda: not win.runner.busy("load"), timeout=WAIT)
    with Index.open(tmp_path / "index.sqlite3", readonly=True) as idx:
        assert len(idx.files()) < total
    # Still usable: a new scan completes and indexes everything.
    assert win.act_scan.isEnabled() and not win.act_cancel.isEnabled()
    with qtbot.waitSignal(win.scanFinished, timeout=WAIT) as blocker:
        win.start_scan()
    assert blocker.args[0] is not None and not blocker.args[0].cancelled
    with Index.open(tmp_path / "index.sqlite3", readonly=True) as idx:
        assert len(idx.files()) == total


def test_opening_the_window_shows_indexed_results_without_scanning(qtbot, window, corpus, tmp_path):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    first = shown_groups(win)
    win.close()
    runs = Index.open(tmp_path / "index.sqlite3", readonly=True).runs()
    win2 = window(autoload=False)
    with qtbot.waitSignal(win2.resultsLoaded, timeout=WAIT):
        win2.load_results()
    assert sorted(map(sorted, shown_groups(win2))) == sorted(map(sorted, first))
    assert Index.open(tmp_path / "index.sqlite3", readonly=True).runs() == runs


def test_settings_are_remembered(qtbot, window, corpus, tmp_path, monkeypatch):
    win = window(autoload=False)
    win.folders.add([str(corpus)])
    win.folders.set_reference(0, True)
    win.exclude_edit.setText("*.tmp; build")
    win.hidden_check.setChecked(True)
    win.min_size_spin.setValue(4)
    win.threshold_slider.setValue(77)
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("similar"))
    win.close()
    assert list((tmp_path / "settings").rglob("*.ini")), "settings must go to the temporary location"
    monkeypatch.delenv("SIMSCAN_INDEX")  # else $SIMSCAN_INDEX chooses the index
    win2 = MainWindow(autoload=False)
    qtbot.addWidget(win2)
    assert [(f.path, f.reference) for f in win2.folders.folders] == [(str(corpus), True)]
    assert win2.exclude_edit.text() == "*.tmp; build"
    assert win2.hidden_check.isChecked() and win2.min_size_spin.value() == 4
    assert win2.threshold_slider.value() == 77
    assert win2.kind_combo.currentData() == "similar"
    assert win2.index_path == tmp_path / "index.sqlite3"
    req = win2.scan_request()
    assert req.exclude == ["*.tmp", "build"] and req.hidden and req.min_size == 4000
    monkeypatch.setenv("SIMSCAN_INDEX", str(tmp_path / "from-env.sqlite3"))
    win3 = MainWindow(autoload=False)
    qtbot.addWidget(win3)
    assert win3.index_path == tmp_path / "from-env.sqlite3"


def test_messages_about_a_state_go_with_the_state(qtbot, window, corpus, tmp_path):
    """A banner that describes a state is updated with it and goes when it does: marked files in a
    reference folder (unmarked, or the folder no longer a reference folder), nothing marked, listed
    folders that do not exist, an index that could not be read (another one loaded fine)."""
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.folders.set_reference(0, True)  # (a regroup follows)

    def space_on(name: str) -> None:
        assert win.select_member(member_row(win, name))  # (selects the row alone)
        win.toggle_mark_selection()

    space_on("copy.txt")
    assert win.message.isVisible() and "Marked 1 file(s) in a reference folder" in win.message.text.text()
    space_on("copy.txt")  # unmarked: the warning goes
    assert not win.model.marked and not win.message.isVisible()
    space_on("copy.txt")
    win.model.set_marked([win.model.snapshot.l_file_id[member_row(win, "edited.txt")]], True)
    assert "Marked 2 file(s) in a reference folder" in win.message.text.text()  # follows the marks
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.folders.set_reference(0, False)  # no longer a reference folder: nothing to warn about
    assert len(win.model.marked) == 2 and not win.message.isVisible()
    win.unmark_all()
    # Nothing marked: said when Del is pressed, gone once something is marked.
    win.trash_marked()
    assert win.message.isVisible() and "Nothing is marked" in win.message.text.text()
    win.model.set_marked([win.model.snapshot.l_file_id[member_row(win, "copy.txt")]], True)
    assert not win.message.isVisible()
    # A listed folder that does not exist: gone once it is removed from the list.
    win.folders.add([str(tmp_path / "unplugged")])
    win.start_scan()
    assert win.message.isVisible() and "do not exist" in win.message.text.text()
    win.folders.remove_rows([1])
    assert not win.message.isVisible()
    # An index that cannot be read: the error goes once another index loads.
    bad = tmp_path / "notes.txt"
    bad.write_text("not an index")
    with qtbot.waitSignal(win.errorShown, timeout=WAIT):
        win.set_index(bad)
    assert win.message.isVisible() and "not a simscan index" in win.message.text.text()
    win.set_index(tmp_path / "index.sqlite3")
    qtbot.waitUntil(lambda: win.model.snapshot.n_groups == 1, timeout=WAIT)
    assert not win.message.isVisible()


def test_filters_kind_and_search(qtbot, window, corpus):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("exact"))
    assert set(shown_groups(win)[0]) == {"original.txt", "copy.txt", "utf16.txt"}
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("contained"))
    assert set(shown_groups(win)[0]) == {"original.txt", "excerpt.txt"}
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("all"))
    win.search_edit.setText("EXCERPT")
    qtbot.waitUntil(lambda: not win._search_timer.isActive(), timeout=WAIT)
    assert len(shown_groups(win)) == 1
    win.search_edit.setText("no-such-file")
    qtbot.waitUntil(lambda: win.proxy.rowCount() == 0, timeout=WAIT)
    assert win.proxy.totals() == (0, 0, 0, 0)
    assert win.summary_label.text().startswith("Shown: 0 of 1 group · 0 of 5 files")
    # The empty list says why it is empty: the search, not a missing scan.
    assert "No group matches" in win.view.placeholder()


def search(qtbot, win: MainWindow, text: str) -> None:
    win.search_edit.setText(text)
    qtbot.waitUntil(lambda: not win._search_timer.isActive(), timeout=WAIT)


def visible_row(win: MainWindow, m: int) -> bool:
    """Whether member ``m``'s row is laid out inside the list's viewport (its group open)."""
    idx = win.proxy.mapFromSource(win.model.member_index(m))
    if not idx.isValid() or not win.view.isExpanded(idx.parent()):
        return False
    return win.view.viewport().rect().intersects(win.view.visualRect(idx))


def test_search_opens_the_groups_holding_its_match_and_selects_it(qtbot, window, tmp_path):
    """30 groups of two copies (g00/a.txt, g00/b.txt …), one copy named needle.txt.  Typing in the
    search box opens the group holding the match and makes the matching file current, in view."""
    import numpy as np

    from tests.gui.conftest import prose

    root = tmp_path / "docs"
    for i in range(30):
        (root / f"g{i:02}").mkdir(parents=True)
        text = prose(np.random.default_rng(300 + i), 200 + 10 * i)
        (root / f"g{i:02}" / "a.txt").write_text(text)
        (root / f"g{i:02}" / ("needle.txt" if i == 7 else "b.txt")).write_text(text)
    win = window(roots=[str(root)])
    scan(qtbot, win)
    assert win.model.snapshot.n_groups == 30 and not win.view.currentIndex().isValid()
    win.view.collapseAll()
    search(qtbot, win, "NEEDLE")
    needle = member_row(win, "needle.txt")
    assert win._current_path() == str(root / "g07" / "needle.txt")
    assert visible_row(win, needle)
    # A broader search: every group holding a match is opened; the current file still matches, so it stays.
    search(qtbot, win, "g0")
    assert win.proxy.totals()[0] == 10
    assert win._current_path() == str(root / "g07" / "needle.txt") and visible_row(win, needle)
    for m in win.proxy.search_matches(100):
        assert win.view.isExpanded(win.proxy.mapFromSource(win.model.member_index(m)).parent())
    # Every group matches: 30 open groups are taller than the list; the current file is scrolled to.
    search(qtbot, win, ".TXT")
    assert win.proxy.totals()[0] == 30 and win.view.verticalScrollBar().maximum() > 0
    assert win._current_path() == str(root / "g07" / "needle.txt") and visible_row(win, needle)
    # A search the current file does not match: the first match becomes current, in view.
    search(qtbot, win, "g12")
    first = win.proxy.search_matches(1)[0]
    assert win._current_path() == win.model.snapshot.paths[first] and "g12" in win._current_path()
    assert visible_row(win, first)
    # Clearing the search keeps the file selected (the rows were reset under it).
    search(qtbot, win, "")
    assert win._current_path() == win.model.snapshot.paths[first]


def test_search_does_not_list_a_group_for_a_match_the_show_filter_hides(qtbot, window, corpus):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("similar"))
    search(qtbot, win, "copy.txt")  # an exact copy: not shown under "Similar"
    assert win.proxy.totals()[0] == 0 and not win.view.currentIndex().isValid()
    search(qtbot, win, "edited")
    assert win._current_path() == str(corpus / "edited.txt") and visible_row(win, member_row(win, "edited.txt"))


def test_show_filter_counts_what_is_shown(qtbot, window, corpus):
    """The group header and the summary line count the rows the Show filter leaves, not the whole
    groups; a marked file the filter hides is still counted as marked, and said to be hidden."""
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    size = {p.name: p.stat().st_size for p in corpus.iterdir()}
    header = win.proxy.index(0, COL_PATH)
    assert header.data() == "original.txt  (5 files)"
    assert win.summary_label.text().startswith("1 group · 5 files")
    win.model.set_marked([win.model.snapshot.l_file_id[member_row(win, "edited.txt")]], True)
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("exact"))
    header = win.proxy.index(0, COL_PATH)
    assert win.proxy.rowCount(header) == 3
    assert header.data() == "original.txt  (3 of 5 files shown)"
    copies = size["copy.txt"] + size["utf16.txt"]
    assert win.proxy.index(0, COL_SIZE).data(SortRole) == copies
    assert win.proxy.totals() == (1, 3, 2, copies)
    text = win.summary_label.text()
    assert text.startswith("Shown: 1 of 1 group · 3 of 5 files")
    assert "1 marked" in text and "1 of the marked files not shown" in text
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("similar"))
    header = win.proxy.index(0, COL_PATH)
    assert header.data() == "original.txt  (2 of 5 files shown)" and win.proxy.rowCount(header) == 2
    assert win.proxy.totals() == (1, 2, 0, 0)  # the copies are not shown: nothing reclaimable in view
    assert "not shown" not in win.summary_label.text()  # edited.txt, the marked file, is
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("all"))
    assert win.proxy.index(0, COL_PATH).data() == "original.txt  (5 files)"
    assert win.summary_label.text().startswith("1 group · 5 files")


def test_a_scan_that_finds_nothing_similar_says_so(qtbot, window, tmp_path):
    root = tmp_path / "unrelated"
    root.mkdir()
    for k, word in enumerate(("apple", "river", "copper")):
        (root / f"{word}.txt").write_text(" ".join(f"{word}{k}{i * 7919 % 1000}" for i in range(400)))
    win = window(roots=[str(root)])
    scan(qtbot, win)
    assert win.proxy.rowCount() == 0
    text = win.view.placeholder()
    assert "No similar files" in text and "3 indexed files" in text and "press Scan" not in text


def test_a_file_that_is_not_an_index_is_never_moved(qtbot, window, tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: asked.append(a) or True)
    bad = tmp_path / "index.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    win = window(autoload=False)
    with qtbot.waitSignal(win.errorShown, timeout=WAIT) as blocker:
        win.load_results()
    # The window's way out (another index), not the CLI's options, and nothing offers to move it.
    assert "not a simscan index" in blocker.args[0] and "--" not in blocker.args[0]
    assert "File > Open Index" in blocker.args[0]
    assert win.message.action.isVisible() and win.message.action.text() == "Open Another Index…"
    with qtbot.waitSignal(win.errorShown, timeout=WAIT):
        win.rebuild_index()  # even if asked directly (and confirmed), index.rebuild refuses it
    assert "not moved" in win.message.text.text() and "--" not in win.message.text.text()
    assert bad.read_bytes() == b"this is not a database" * 100
    assert not list(tmp_path.glob("index.sqlite3.corrupt*"))


def damaged_index(qtbot, window, corpus, tmp_path, header: bool = True) -> Path:
    """A real index with its pages overwritten (the SQLite header intact, or overwritten too: then
    only the lock file beside it and its size in whole pages say it was simscan's index)."""
    win = window(roots=[str(corpus)])
    scan(qtbot, win)
    win.close()
    path = tmp_path / "index.sqlite3"
    for side in tmp_path.glob("index.sqlite3-*"):
        side.unlink()
    data = bytearray(path.read_bytes())
    for off in range(4096 if header else 0, len(data), 4096):
        data[off : off + 100] = b"\xff" * 100
    path.write_bytes(bytes(data))
    return path


def test_the_empty_list_says_why_it_is_empty(qtbot, window, corpus, tmp_path):
    """The empty list's text follows the state: folders listed but nothing scanned ("press Scan",
    not "add folders"); an index that cannot be read (not "add folders and press Scan" over the
    folders already scanned: the index failed, the banner says what to do); fixed, it goes."""
    win = window(autoload=False)
    win.folders.add([str(corpus)])
    assert "Press Scan" in win.view.placeholder() and "Add folders" not in win.view.placeholder()
    win.close()
    damaged_index(qtbot, window, corpus, tmp_path)
    win = window(autoload=False)
    with qtbot.waitSignal(win.errorShown, timeout=WAIT):
        win.load_results()
    qtbot.waitUntil(lambda: not win.runner.busy("load"), timeout=WAIT)
    text = win.view.placeholder()
    assert "cannot be shown" in text and "damaged" in text and "message above" in text
    assert "Add folders" not in text
    win.set_index(tmp_path / "other.sqlite3")  # another index (none yet): the error is not its own
    qtbot.waitUntil(lambda: win.results is not None, timeout=WAIT)
    assert "cannot be shown" not in win.view.placeholder()


@pytest.mark.parametrize("header", [True, False])
def test_damaged_index_is_rebuilt_from_the_window(qtbot, window, corpus, tmp_path, monkeypatch, header):
    """A damaged index: the banner offers "Rebuild Index…" (not the CLI's --rebuild); after a
    confirmation naming the file, the file is renamed aside (kept byte for byte), a fresh index is
    opened in its place, and the window says where the old one went."""
    asked = []
    answer = [False]
    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: asked.append((a, k)) or answer[0])
    bad = damaged_index(qtbot, window, corpus, tmp_path, header)
    win = window(autoload=False)
    with qtbot.waitSignal(win.errorShown, timeout=WAIT) as blocker:
        win.load_results()
    assert "damaged" in blocker.args[0] and "--rebuild" not in blocker.args[0] and "Rebuild" in blocker.args[0]
    assert win.message.action.isVisible() and win.message.action.text() == "Rebuild Index…"
    damaged = bad.read_bytes()
    win.message.action.click()  # declined: nothing moves
    (_parent, _title, text, details), kw = asked[0]
    assert str(bad) in text and ".corrupt-" in details and kw["accept"] == "Rebuild Index"
    assert bad.read_bytes() == damaged and not list(tmp_path.glob("index.sqlite3.corrupt*"))
    answer[0] = True
    win.rebuild_index()
    qtbot.waitUntil(lambda: not win.runner.busy("rebuild"), timeout=WAIT)
    kept = [p for p in tmp_path.glob("index.sqlite3.corrupt*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1 and kept[0].read_bytes() == damaged
    assert win.message.isVisible() and str(kept[0]) in win.message.text.text()
    qtbot.waitUntil(lambda: win.results is not None and not win.runner.busy("load"), timeout=WAIT)
    assert win.results.exists and win.results.n_files == 0  # the fresh index, opened
    assert win.message.isVisible() and str(kept[0]) in win.message.text.text()  # (still says where it went)
    with Index.open(bad, readonly=True) as idx:
        assert len(idx.files()) == 0
    assert all(p.exists() for p in corpus.iterdir())
    scan(qtbot, win)  # and it fills like any index
    assert win.model.snapshot.n_groups == 1


def test_a_rebuild_in_the_window_keeps_the_entries_that_pass_their_checksums_and_says_so(
    qtbot, window, corpus, tmp_path, monkeypatch
):
    """The window's rebuild keeps, as `scan --rebuild` does, every file whose entries pass their checksums,
    but said "a new, empty index was started … press Scan to fill it" (acceptance test: 2,621 of 2,625
    files kept), and it ran on the GUI thread (0.45 s for those 2,625 files: minutes at a million).  Now
    it is a job, and the message says how many files it kept."""
    import sqlite3

    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: True)
    win = window(roots=[str(corpus)])
    scan(qtbot, win)
    win.close()
    path = tmp_path / "index.sqlite3"
    with sqlite3.connect(path) as c:  # one file's row no longer matches its checksum
        c.execute("UPDATE files SET size = size + 1 WHERE id = (SELECT min(id) FROM files)")
    win = window(autoload=False)
    win.rebuild_index()
    assert win.runner.busy("rebuild") and not win.act_scan.isEnabled()  # a job, not the GUI thread's work
    qtbot.waitUntil(lambda: not win.runner.busy("rebuild") and win.results is not None
                    and not win.runner.busy("load"), timeout=WAIT)
    text = win.message.text.text()
    assert "with the 5 files whose entries passed their checksums" in text and "empty" not in text, text
    assert win.results.n_files == 5
    scan(qtbot, win)
    assert win.results.n_files == 6


def test_rebuild_waits_for_a_scan_holding_the_index(qtbot, window, corpus, tmp_path, monkeypatch):
    import fcntl

    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: True)
    bad = damaged_index(qtbot, window, corpus, tmp_path)
    win = window(autoload=False)
    with qtbot.waitSignal(win.errorShown, timeout=WAIT):
        win.load_results()
    # Another program's scan holds the index's lock.
    fd = os.open(f"{bad}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with qtbot.waitSignal(win.errorShown, timeout=WAIT) as blocker:
            win.message.action.click()
    finally:
        os.close(fd)
    assert "not moved" in blocker.args[0] and "scan" in blocker.args[0]
    assert win.message.action.text() == "Try Again"
    assert bad.exists() and not list(tmp_path.glob("index.sqlite3.corrupt*"))


def test_scan_problems_are_listed_in_the_window(qtbot, window, corpus):
    os.mkfifo(corpus / "a-pipe")
    (corpus / "broken-link").symlink_to(corpus / "nowhere")
    win = window(roots=[str(corpus)])
    scan(qtbot, win)
    assert not win.message.isHidden() and "2 problems: files skipped" in win.message.text.text()
    win.message.action.click()  # "Show Problems": read from the index in a worker, then a dialog
    qtbot.waitUntil(lambda: getattr(win, "problems_dialog", None) is not None, timeout=WAIT)
    text = win.problems_dialog.findChild(QPlainTextEdit).toPlainText()
    assert "a-pipe" in text and "broken-link" in text
    win.problems_dialog.close()
    # The rest of the tree was scanned as usual.
    assert "original.txt" in shown_groups(win)[0]


def test_a_document_read_by_its_bytes_is_a_problem_not_a_file_that_could_not_be_read(qtbot, window, corpus):
    """The banner after a scan said "N files could not be read" of every problem line; but a damaged document
    is compared by its bytes and is in the results (acceptance test: 5 "could not be read", of which a
    truncated DOCX and a PDF with a blank page had been read, and 3 were a FIFO and links)."""
    from tests.helpers_documents import DATA

    damaged = (DATA / "essay.docx").read_bytes()[:3000]
    (corpus / "truncated.docx").write_bytes(damaged)
    (corpus / "truncated copy.docx").write_bytes(damaged)
    win = window(roots=[str(corpus)])
    scan(qtbot, win)
    text = win.message.text.text()
    assert not win.message.isHidden() and "could not be read" not in text, text
    assert "2 problems: files skipped, or read only by their bytes or in part" in text, text
    assert any({"truncated.docx", "truncated copy.docx"} <= set(g) for g in shown_groups(win))  # (read, grouped)
    win.message.action.click()
    qtbot.waitUntil(lambda: getattr(win, "problems_dialog", None) is not None, timeout=WAIT)
    assert win.problems_dialog.windowTitle() == "Problems of the last scan"
    assert "compared by its bytes" in win.problems_dialog.findChild(QPlainTextEdit).toPlainText()
    win.problems_dialog.close()


def test_the_problems_tell_files_left_out_from_files_compared_by_their_bytes(qtbot, window, corpus):
    """A damaged Word file and a PDF without a text layer are scanned all the same (by their bytes): the
    problems dialog must not call them skipped, nor advise a scan to include them; a FIFO is left out."""
    from tests.helpers_documents import docx_of_paragraphs, pdf_bytes

    os.mkfifo(corpus / "a-pipe")
    whole = docx_of_paragraphs(["An essay of some length. " * 40])
    (corpus / "essay.docx").write_bytes(whole[: len(whole) // 2])  # (a truncated zip)
    (corpus / "scanned.pdf").write_bytes(pdf_bytes([[]]))
    win = window(roots=[str(corpus)])
    scan(qtbot, win)
    assert "3 problems: files skipped, or read only by their bytes or in part" in win.message.text.text()
    win.message.action.click()
    qtbot.waitUntil(lambda: getattr(win, "problems_dialog", None) is not None, timeout=WAIT)
    intro = " ".join(w.text() for w in win.problems_dialog.findChildren(QLabel))
    text = win.problems_dialog.findChild(QPlainTextEdit).toPlainText()
    assert "essay.docx" in text and "scanned.pdf" in text and "a-pipe" in text
    assert "1 file was left out of the scan" in intro
    assert "2 files were scanned, but their text could not be read" in intro and "skipped" not in intro
    win.problems_dialog.close()
    with Index.open(win.index_path, readonly=True) as idx:  # (what the dialog says: both are indexed)
        held = idx.ids_for_paths([os.fsencode(corpus / n) for n in ("essay.docx", "scanned.pdf", "a-pipe")])
    assert len(held) == 2


def test_similarity_tooltip_gives_the_detailed_scores(qtbot, window, corpus, tmp_path):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    s = win.model.snapshot
    m = member_row(win, "excerpt.txt")
    tip = win.model.member_index(m, COL_SIMILARITY).data(Qt.ItemDataRole.ToolTipRole)
    with Index.open(tmp_path / "index.sqlite3", readonly=True) as idx:
        pairs = find_pairs(idx, min_similarity=DEFAULT_MIN_SIMILARITY)
    ids = {s.l_file_id[s.l_start[0]], s.l_file_id[m]}
    (pair,) = [p for p in pairs if {p.a_id, p.b_id} == ids]
    assert f"Resemblance {shown_pct(pair.resemblance):.1f} %" in tip
    # The excerpt lies wholly inside the original: nearly all of it is found in the reference.
    inside = pair.containment_a if pair.a_id == s.l_file_id[m] else pair.containment_b
    assert f"{shown_pct(inside):.1f} % of this file is in the reference" in tip


def test_a_member_holding_its_reference_is_shown_as_contains(qtbot, window, tmp_path):
    """The older excerpt leads the group: the source listed under it "contains" it (it read "contained",
    as if the source were the excerpt), as the CLI says; the export says the same."""
    from similarity_support import words

    root = tmp_path / "answers"
    root.mkdir()
    text = words(5, 1700)
    (root / "source.txt").write_text(text)
    (root / "answer.txt").write_text(text[4000:5500])
    os.utime(root / "answer.txt", (1_000_000_000, 1_000_000_000))  # the older
    win = window(roots=[str(root)])
    scan(qtbot, win)
    # The file the other lies in leads, although newer (the answer quoting it was the reference).
    assert shown_groups(win) == [{"source.txt": ("reference", 100.0), "answer.txt": ("contained", 100.0)}]
    assert shown_groups(win) == core_groups(tmp_path / "index.sqlite3", win.threshold_slider.value())
    # Made the reference (Ctrl+E), the excerpt leads, and the source listed under it "contains" it.
    win.select_member(member_row(win, "answer.txt"))
    with qtbot.waitSignal(win.resultsLoaded, timeout=20_000):
        win.make_reference()
    m = member_row(win, "source.txt")
    assert win.model.snapshot.kind_name(m) == "contains"
    assert preview_of(qtbot, win, m).summary.text().startswith("Contains: ")


def test_code_view_is_shown_and_can_be_switched_off(qtbot, window, tmp_path):
    """A renamed copy of a program is listed as compared by its code; View > Compare Program Code by
    Structure off re-reads the results on the text alone, and the choice is remembered."""
    from test_code_view import _NAMES, _RENAMED, _rename, java_program

    root = tmp_path / "src"
    root.mkdir()
    orig = java_program(10, _NAMES)
    (root / "Original.java").write_text(orig)
    os.utime(root / "Original.java", (1_000_000_000, 1_000_000_000))  # the older: the reference
    (root / "Renamed.java").write_text(_rename(orig, _NAMES, _RENAMED))
    win = window(roots=[str(root)])
    win.threshold_slider.setValue(50)
    scan(qtbot, win)
    m = member_row(win, "Renamed.java")
    s = win.model.snapshot
    assert s.pairs[m].view == "code" and s.l_sim[m] >= 90
    tip = win.model.member_index(m, COL_SIMILARITY).data(Qt.ItemDataRole.ToolTipRole)
    assert "program code" in tip
    assert win.model.member_index(m, COL_KIND).data() == "near (code)"
    assert "program code" in preview_of(qtbot, win, m).summary.text()
    assert win.act_code_view.isChecked()
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.act_code_view.trigger()
    assert not win.act_code_view.isChecked()
    assert win.settings.value("results/code_view", True, bool) is False
    # On the text alone the renamed copy is far below 50 %: no group is left.
    assert win.model.snapshot.n_groups == 0
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.act_code_view.trigger()
    assert win.model.snapshot.n_groups == 1


def test_ignored_text_leaves_the_question_every_answer_repeats(qtbot, window, tmp_path):
    """View > Ignore Text of Files…: answers that only repeat the question stop being similar; the
    copied answer stays; the summary says what is ignored; the choice is remembered; Stop Ignoring
    Texts brings the old groups back."""
    import numpy as np

    from tests.gui.conftest import prose

    root = tmp_path / "answers"
    root.mkdir()
    question = "Question: " + prose(np.random.default_rng(9), 60) + "\n\nAnswer: "
    (tmp_path / "question.txt").write_text(question)
    for i in range(12):
        (root / f"s{i:02}.txt").write_text(question + prose(np.random.default_rng(200 + i), 120))
    (root / "s99.txt").write_text(question + prose(np.random.default_rng(203), 120))  # copied s03
    win = window(roots=[str(root)])
    win.threshold_slider.setValue(15)
    scan(qtbot, win)
    assert win.model.snapshot.n_members > 2 and not win.act_ignore_stop.isEnabled()
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.set_ignored_texts([str(tmp_path / "question.txt")])
    s = win.model.snapshot
    assert s.n_groups == 1 and sorted(os.path.basename(p) for p in s.paths) == ["s03.txt", "s99.txt"]
    assert "ignoring the text of question.txt" in win.summary_label.text()
    assert json.loads(win.settings.value("results/ignore_texts", "[]", str)) == [str(tmp_path / "question.txt")]
    assert win.act_ignore_stop.isEnabled()
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.act_ignore_stop.trigger()
    assert win.model.snapshot.n_members > 2 and "ignoring" not in win.summary_label.text()
    # A text to ignore that is gone stops a scan before it reads anything, and says how to go on
    # (it failed only after the whole scan, found re-reading the change).
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.set_ignored_texts([str(tmp_path / "question.txt")])
    (tmp_path / "question.txt").unlink()
    (root / "new.txt").write_text(question + prose(np.random.default_rng(300), 120))
    win.start_scan()
    qtbot.waitUntil(lambda: not win.runner.busy("scan"), timeout=WAIT)
    assert "a text to ignore" in win.message.text.text() and "Stop Ignoring" in win.message.text.text()
    with Index.open(win.index_path, readonly=True) as idx:
        assert str(root / "new.txt") not in idx.files().paths


def test_status_line_counts_files_gone_since_the_last_scan_and_moved_to_the_trash(qtbot, window, corpus,
                                                                                monkeypatch):
    """After deleting files outside the window, a scan's status line says they left the results
    (it used to list read / unchanged / problems only, so the shorter list was unexplained); one
    file moved to the trash reads "1 file", not "1 files"."""
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    (corpus / "other.txt").unlink()
    (corpus / "excerpt.txt").unlink()
    scan(qtbot, win)
    assert "2 no longer there, removed from the index" in win.status_label.text()
    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: True)
    win.model.set_marked([win.model.snapshot.l_file_id[member_row(win, "copy.txt")]], True)
    with qtbot.waitSignal(win.trashFinished, timeout=WAIT):
        win.trash_marked()
    assert win.status_label.text() == "Moved 1 file to the trash."
