"""The window end to end: real files, a real index, scans and actions through the widgets."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QApplication, QPlainTextEdit

from simscan.gui import dialogs
from simscan.gui.mainwindow import MainWindow
from simscan.gui.results_model import (
    COL_KIND,
    COL_PATH,
    COL_SIMILARITY,
    COL_SIZE,
    IsGroupRole,
    PathRole,
    SimilarityRole,
    SortRole,
)
from simscan.index import Index
from simscan.similarity import DEFAULT_MIN_SIMILARITY, find_pairs, group_pairs
from simscan.similarity.core import expand_copy_pairs
from simscan.similarity.types import shown_pct
from tests.gui.helpers import WAIT, member_row, preview_of, scan


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


def test_preview_highlights_matching_passages(qtbot, window, corpus):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    pv = preview_of(qtbot, win, "edited.txt")
    assert pv.currentIndex() == 1
    assert pv.left.edit.toPlainText() == (corpus / "original.txt").read_text()
    assert pv.right.edit.toPlainText() == (corpus / "edited.txt").read_text()
    assert pv.left.ranges and len(pv.left.ranges) == len(pv.right.ranges)
    assert len(pv.left.edit.extraSelections()) == len(pv.left.ranges)
    # Every highlighted passage on the left is the same text as its partner on the right,
    # modulo white space (matching is on normalised text).
    left, right = pv.left.edit.toPlainText(), pv.right.edit.toPlainText()
    for (a0, a1), (b0, b1) in zip(pv.left.ranges, pv.right.ranges):
        assert left[a0:a1].split() == right[b0:b1].split()
    assert "%" in pv.summary.text()
    # Scrolling in step: moving the left side moves the right side.
    pv.resize(900, 300)
    win.resize(1200, 700)
    qtbot.wait(50)
    sb_l, sb_r = pv.left.edit.verticalScrollBar(), pv.right.edit.verticalScrollBar()
    assert sb_l.maximum() > 10
    sb_l.setValue(sb_l.maximum() // 2)
    assert sb_r.value() > 0
    # The passage at the top on the left is at the top on the right too (same words).
    top_l = pv.left.top_position()
    i = next(k for k, (a0, a1) in enumerate(pv.left.ranges) if a1 > top_l)
    a0, a1 = pv.left.ranges[i]
    b0, b1 = pv.right.ranges[i]
    top_r = pv.right.top_position()
    assert b0 - 200 <= top_r <= b1


@pytest.mark.parametrize("one_paragraph", [False, True])
def test_preview_opens_scrolled_to_the_first_shared_passage_on_both_sides(qtbot, window, tmp_path, one_paragraph):
    """Two files that share their second half behind different openings (60 and 90 lines; or the
    same text with no line breaks, one long wrapped paragraph each): the preview shows each side
    scrolled to where the shared text begins, near the top, on both sides."""
    import numpy as np

    from tests.gui.conftest import prose

    root = tmp_path / "docs"
    root.mkdir()
    shared = prose(np.random.default_rng(5), 600)
    opening = [prose(np.random.default_rng(seed), words).splitlines() for seed, words in ((6, 1000), (8, 1500))]
    assert len(opening[0]) >= 60 and len(opening[1]) >= 90
    texts = ["\n".join(opening[0][:60]) + "\n" + shared, "\n".join(opening[1][:90]) + "\n" + shared]
    if one_paragraph:
        texts = [t.replace("\n", " ") for t in texts]
    (root / "a.txt").write_text(texts[0])
    (root / "b.txt").write_text(texts[1])
    win = window(roots=[str(root)])
    win.threshold_slider.setValue(20)
    scan(qtbot, win)
    snap = win.model.snapshot
    assert snap.n_groups == 1
    pv = preview_of(qtbot, win, snap.l_start[0] + 1)

    def top_lines(pane) -> int:
        """Lines shown above the first passage's first line (its paragraph laid out: it is on screen)."""
        cursor = QTextCursor(pane.edit.document())
        cursor.setPosition(pane.ranges[0][0])
        rect = pane.edit.cursorRect(cursor)
        assert pane.edit.viewport().rect().contains(rect), "the first shared passage is not in view"
        return round(rect.top() / pane.edit.fontMetrics().lineSpacing())

    for pane in (pv.left, pv.right):
        assert pane.ranges and pane.ranges[0][0] > 1000  # the passage starts after its file's opening
        assert pane.edit.verticalScrollBar().value() > 0 and 1 <= top_lines(pane) <= 3
    qtbot.wait(200)  # laid out and painted: still there
    assert all(1 <= top_lines(pane) <= 3 for pane in (pv.left, pv.right))


def test_preview_of_a_file_gone_since_the_scan(qtbot, window, corpus):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    (corpus / "edited.txt").unlink()
    with qtbot.waitSignal(win.previewShown, timeout=WAIT):
        win.select_member(member_row(win, "edited.txt"))
    assert win.preview.currentIndex() == 0
    assert "no longer exists" in win.preview.message.text()
    assert "Scan again" in win.preview.message.text()


def test_binary_files_show_metadata(qtbot, window, tmp_path):
    root = tmp_path / "bin"
    root.mkdir()
    data = bytes(range(256)) * 64
    (root / "a.bin").write_bytes(data)
    (root / "b.bin").write_bytes(data)
    win = window(roots=[str(root)])
    scan(qtbot, win)
    assert preview_of(qtbot, win, "b.bin").currentIndex() == 1
    text = win.preview.right.edit.toPlainText()
    assert "Binary file" in text and "16,384 bytes" in text


def test_space_marks_and_trash_moves_exactly_the_marked_files(qtbot, window, corpus, tmp_path, monkeypatch):
    asked = []

    def confirm(parent, title, text, details="", danger=False):
        asked.append((text, details, danger))
        return True

    monkeypatch.setattr(dialogs, "confirm", confirm)
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win, timeout=5000)  # for the Del shortcut
    # Space on two selected files marks them.
    for name in ("copy.txt", "utf16.txt"):
        win.select_member(member_row(win, name))
        win.view.setFocus()
        qtbot.keyClick(win.view, Qt.Key.Key_Space)
    marked = {os.path.basename(win.model.snapshot.paths[m]) for m in win.model.marked_members()}
    assert marked == {"copy.txt", "utf16.txt"}
    # Space again unmarks; mark again.
    qtbot.keyClick(win.view, Qt.Key.Key_Space)
    assert len(win.model.marked) == 1
    qtbot.keyClick(win.view, Qt.Key.Key_Space)
    assert "2 marked" in win.summary_label.text()

    before = {p.name for p in corpus.iterdir()}
    with qtbot.waitSignal(win.trashFinished, timeout=WAIT) as blocker:
        qtbot.keyClick(win.view, Qt.Key.Key_Delete)
    assert len(asked) == 1 and not asked[0][2]  # asked once; not every file of the group was marked
    out = blocker.args[0]
    assert sorted(os.path.basename(p) for p in out.trashed) == ["copy.txt", "utf16.txt"]
    trash = tmp_path / "xdg-data" / "Trash" / "files"
    assert sorted(p.name for p in trash.iterdir()) == ["copy.txt", "utf16.txt"]
    assert {p.name for p in corpus.iterdir()} == before - {"copy.txt", "utf16.txt"}
    assert (trash / "copy.txt").read_bytes() == (corpus / "original.txt").read_bytes()
    # The index and the view forgot them; the rest is unchanged.
    with Index.open(tmp_path / "index.sqlite3", readonly=True) as idx:
        names = {os.path.basename(p) for p in idx.files().paths}
    assert names == before - {"copy.txt", "utf16.txt"}
    shown = shown_groups(win)
    assert set(shown[0]) == {"original.txt", "edited.txt", "excerpt.txt"}
    assert not win.model.marked
    # The original stayed, so the new pairs were derived from the last ones, not searched again,
    # and they are what a search finds.
    assert win.results.pair_set.derived
    assert sorted(map(sorted, shown)) == sorted(map(sorted, core_groups(tmp_path / "index.sqlite3", 30)))


def test_confirmation_warns_when_a_whole_group_is_marked(qtbot, window, corpus, monkeypatch):
    asked = []
    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: asked.append((a, k)) or False)
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(99)
    scan(qtbot, win)
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):  # the UTF-16 copy is read beside its reference
        win.mark_all_but_reference()
    members = set(shown_groups(win)[0])
    # Ctrl+M marks the true copies only; the excerpt (contained) is marked by hand.
    assert {os.path.basename(win.model.snapshot.paths[m]) for m in win.model.marked_members()} == {
        "copy.txt", "utf16.txt"
    }
    for name in ("excerpt.txt", "original.txt"):
        win.select_member(member_row(win, name))
        win.toggle_mark_selection()  # now every file of the group is marked
    assert win.model.fully_marked_groups() == [0]
    win.trash_marked()
    assert len(asked) == 1
    (_parent, _title, _text, details), kw = asked[0][0], asked[0][1]
    assert kw["danger"] is True and "EVERY file" in details and "original.txt" in details
    # Declined: nothing moved, marks kept.
    assert sorted(p.name for p in corpus.iterdir()) == sorted(
        ["original.txt", "copy.txt", "utf16.txt", "edited.txt", "excerpt.txt", "other.txt"]
    )
    assert len(win.model.marked) == len(members)


@pytest.mark.parametrize("marked", ["whole group", "reference and its copies"])
def test_a_move_refused_for_the_marks_says_why(qtbot, window, corpus, monkeypatch, marked):
    """Every file of a group marked (or the reference with every copy of it, only the edited version
    and the excerpt left): the move is refused, and the banner gives that reason, as the confirmation
    dialog did, not "scan again" (nothing changed on disk)."""
    asked = []
    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: asked.append((a, k)) or True)
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    names = ["original.txt", "copy.txt", "utf16.txt"]
    if marked == "whole group":
        names += ["edited.txt", "excerpt.txt"]
    win.model.set_marked([win.model.snapshot.l_file_id[member_row(win, n)] for n in names], True)
    before = {p.name: p.read_bytes() for p in corpus.iterdir()}
    with qtbot.waitSignal(win.trashFinished, timeout=WAIT) as blocker:
        win.trash_marked()
    out = blocker.args[0]
    assert not out.trashed and sorted(os.path.basename(p) for p, _ in out.refused) == sorted(names)
    assert {p.name: p.read_bytes() for p in corpus.iterdir()} == before
    details, kw = asked[0][0][3], asked[0][1]
    text = win.message.text.text()
    assert win.message.isVisible() and "NOT moved" in text
    assert "scan again" not in text.lower()
    assert "Unmark the file to keep in each of those groups (e.g. its reference)" in text
    assert kw["danger"] is True
    if marked == "whole group":
        assert "EVERY file is marked, so no copy of them would be kept" in details
        assert "Every file of their group is marked, so no copy of them would be kept" in text
    else:
        assert "the reference and every copy of it are marked" in details
        assert "The reference and every copy of it are marked" in text
    assert all(str(corpus / n) in text for n in names)
    assert len(win.model.marked) == len(names)  # still marked: unmark the one to keep, move the others


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


def test_trash_unavailable_is_reported_in_the_window(qtbot, window, corpus, monkeypatch, tmp_path):
    from simscan.gui import jobs

    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: True)
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(99)
    scan(qtbot, win)
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):
        win.mark_all_but_reference()
    # A data folder that cannot hold a trash (a file in its place): Qt's moveToTrash fails.
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("x")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocked))
    monkeypatch.setattr(jobs, "trash_dir_ready", lambda: None)
    with qtbot.waitSignal(win.trashFinished, timeout=WAIT) as blocker:
        win.trash_marked()
    out = blocker.args[0]
    assert not out.trashed and sorted(os.path.basename(p) for p, _ in out.failed) == ["copy.txt", "utf16.txt"]
    assert (corpus / "copy.txt").exists() and (corpus / "utf16.txt").exists()
    assert win.message.isVisible() and "could not be moved to the trash" in win.message.text.text()
    assert "nothing was deleted" in win.message.text.text()


def test_make_reference(qtbot, window, corpus):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    win.select_member(member_row(win, "copy.txt"))
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.make_reference()
    g = shown_groups(win)[0]
    assert g["copy.txt"][0] == "reference"
    assert set(g) == {"original.txt", "copy.txt", "utf16.txt", "edited.txt", "excerpt.txt"}
    # A copy as reference: every score stays what it was against the original.
    assert g["original.txt"] == ("exact", 100.0) and g["utf16.txt"] == ("content", 100.0)
    before = core_groups(win.index_path, 30)[0]
    assert g["edited.txt"][1] == pytest.approx(before["edited.txt"][1])
    # An edited version as reference: the original and its copies score as the edited file did.
    win.select_member(member_row(win, "edited.txt"))
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.make_reference()
    g = shown_groups(win)[0]
    assert g["edited.txt"][0] == "reference"
    for name in ("original.txt", "copy.txt", "utf16.txt"):
        assert g[name][1] == pytest.approx(before["edited.txt"][1])
    # The choice outlives the window: opened again on this index, edited.txt is the reference.
    win.close()
    win2 = window()
    qtbot.waitUntil(lambda: win2.model.snapshot.n_groups > 0 and not win2.runner.busy("group"), timeout=WAIT)
    assert shown_groups(win2)[0]["edited.txt"][0] == "reference"
    assert win2.model.snapshot is win2.results.snapshot  # grouped once, by the load, with the remembered one
    # Another index has its own choices (none here).
    assert win2._saved_references_all().keys() == {str(win2.index_path)}


@pytest.mark.parametrize("chosen", ["edited.txt", "edited-copy.txt"])
def test_make_reference_of_a_file_with_copies_scores_every_member(qtbot, window, corpus, chosen):
    """Ctrl+E on a file that has an exact copy: the pair search scores only one file of the two
    against the others, yet whichever is chosen, every member shows its score against it (as
    `simscan pairs` lists them, copies inheriting their twin's pairs), best first.  (The copy that
    was not scored showed a blank similarity for most of its group, in list order.)"""
    (corpus / "edited-copy.txt").write_bytes((corpus / "edited.txt").read_bytes())
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    win.select_member(member_row(win, chosen))
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.make_reference()
    with Index.open(win.index_path, readonly=True) as idx:
        listed, _ = expand_copy_pairs(find_pairs(idx, min_similarity=DEFAULT_MIN_SIMILARITY))  # as `pairs` lists
    best = {frozenset((os.path.basename(p.a_path), os.path.basename(p.b_path))): p.best for p in listed}
    snap = win.model.snapshot
    g = snap.l_group[member_row(win, chosen)]
    names = [os.path.basename(snap.paths[m]) for m in range(snap.l_start[g], snap.l_start[g + 1])]
    sims = snap.l_sim[snap.l_start[g] + 1 : snap.l_start[g + 1]]
    assert names[0] == chosen and set(names) == {"original.txt", "copy.txt", "utf16.txt", "edited.txt",
                                                 "edited-copy.txt", "excerpt.txt"}
    for name, sim in zip(names[1:], sims):
        assert sim == pytest.approx(best[frozenset((chosen, name))], abs=0.01), name
        assert snap.pairs[names.index(name) + snap.l_start[g]] is not None, name
    assert sims == sorted(sims, reverse=True)  # best first, as every group
    assert names[1] == {"edited.txt": "edited-copy.txt"}.get(chosen, "edited.txt")  # the copy before equal scores
    # What the row shows is what the preview's scores say.
    m = member_row(win, "excerpt.txt")
    assert snap.pairs[m].best == pytest.approx(snap.l_sim[m], abs=0.01)


def test_remembering_a_reference_reads_only_the_chosen_files(qtbot, window, corpus):
    """Ctrl+E saves the chosen files' paths from the GUI thread: it must look at those files' rows
    only, not map every indexed file (0.13 s a press with 1,000,000 files indexed, the window frozen
    meanwhile).  Counted on the real file table's path list; the saved paths are the chosen ones."""
    import dataclasses

    class CountingList(list):
        reads = 0

        def __getitem__(self, i):
            CountingList.reads += 1
            return super().__getitem__(i)

        def __iter__(self):
            CountingList.reads += len(self)
            return super().__iter__()

    for i in range(40):  # unrelated files, so the table is larger than the choice
        (corpus / f"extra{i}.txt").write_text(f"note {i} " + "unrelated words " * (i + 3))
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    files = win.results.files
    win.results = dataclasses.replace(win.results, files=dataclasses.replace(files, paths=CountingList(files.paths)))
    chosen = [win.model.snapshot.l_file_id[member_row(win, n)] for n in ("edited.txt", "excerpt.txt")]
    win.preferred_refs = chosen
    CountingList.reads = 0
    win._save_references()
    assert CountingList.reads <= len(chosen)
    saved = win._saved_references_all()[str(win.index_path)]
    assert saved == [str(corpus / "edited.txt"), str(corpus / "excerpt.txt")]


def test_preview_after_make_reference_shows_the_selected_row_with_its_scores(qtbot, window, corpus):
    """Ctrl+E on edited.txt: the row stays selected, now the reference.  The preview must not call
    another file "Selected"; every member's preview is that member against the new reference, with
    the detailed scores of that pair (resemblance, both containments) as the row lists them."""
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    preview_of(qtbot, win, "edited.txt")
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT), qtbot.waitSignal(win.previewShown, timeout=WAIT):
        win.act_make_ref.trigger()
    qtbot.waitUntil(lambda: not win.runner.busy("preview") and not win._preview_timer.isActive(), timeout=WAIT)
    snap = win.model.snapshot
    edited = str(corpus / "edited.txt")
    assert win._current_path() == edited and snap.l_is_ref[member_row(win, "edited.txt")]
    pv = win.preview
    # The reference row is selected: it is on the left, marked as the selection; the right pane says
    # what it holds (the closest file of the group), not "Selected".
    assert pv.left.title.toolTip() == edited and "(selected)" in pv.left.title.text()
    closest = pv.right.title.toolTip()
    assert closest != edited and pv.right.title.text().startswith("Closest file")
    assert os.path.basename(closest) in pv.summary.text() and "resemblance" in pv.summary.text()
    m_closest = snap.paths.index(closest)
    g = snap.l_group[m_closest]
    assert snap.l_sim[m_closest] == max(v for v in snap.l_sim[snap.l_start[g] + 1 : snap.l_start[g + 1]]
                                        if not math.isnan(v))
    for name in ("original.txt", "copy.txt", "excerpt.txt"):
        m = member_row(win, name)
        text = preview_of(qtbot, win, m).summary.text()
        assert pv.left.title.toolTip() == edited and pv.right.title.toolTip() == str(corpus / name)
        assert pv.right.title.text().startswith("Selected:")
        pair = snap.pairs[m]
        assert pair is not None and pair.a_path == edited and pair.b_path == str(corpus / name)
        assert text.startswith(f"{pair.kind.capitalize()}: {shown_pct(snap.l_sim[m]):.1f} % similar — resemblance")
        assert f"{shown_pct(pair.containment_b):.1f} % of the selected file is in the reference" in text
        assert pair.best == pytest.approx(snap.l_sim[m], abs=0.05)
        assert snap.scores_text(m)  # the similarity tooltip has them too
    # Read from the new reference's side: original.txt holds what edited.txt shares with it, so the
    # share of the reference found in the selected file is the old pair's other containment.
    with Index.open(win.index_path, readonly=True) as idx:
        old = next(p for p in find_pairs(idx, min_similarity=30)
                   if {os.path.basename(p.a_path), os.path.basename(p.b_path)} == {"original.txt", "edited.txt"})
    mine = snap.pairs[member_row(win, "original.txt")]
    share_of = {old.a_path: old.containment_a, old.b_path: old.containment_b}
    assert mine.containment_a == pytest.approx(share_of[edited]) and mine.containment_b == pytest.approx(
        share_of[str(corpus / "original.txt")])


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


def test_open_reveal_copy(qtbot, window, corpus, monkeypatch):
    from PySide6.QtGui import QGuiApplication

    from simscan.gui import mainwindow

    opened = []
    monkeypatch.setattr(mainwindow, "open_url", lambda url: opened.append(url.toLocalFile()) or True)
    monkeypatch.setattr(mainwindow, "show_in_file_manager", lambda path: False)  # no file manager in tests
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    win.select_member(member_row(win, "edited.txt"))
    win.view.setFocus()
    qtbot.keyClick(win.view, Qt.Key.Key_Return)
    win.reveal_current()
    assert opened == [str(corpus / "edited.txt"), str(corpus)]
    win.copy_path()
    assert QGuiApplication.clipboard().text() == str(corpus / "edited.txt")


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


def test_scan_problems_are_listed_in_the_window(qtbot, window, corpus):
    os.mkfifo(corpus / "a-pipe")
    (corpus / "broken-link").symlink_to(corpus / "nowhere")
    win = window(roots=[str(corpus)])
    scan(qtbot, win)
    assert not win.message.isHidden() and "2 files could not be read" in win.message.text.text()
    win.message.action.click()  # "Show Problems": read from the index in a worker, then a dialog
    qtbot.waitUntil(lambda: getattr(win, "problems_dialog", None) is not None, timeout=WAIT)
    text = win.problems_dialog.findChild(QPlainTextEdit).toPlainText()
    assert "a-pipe" in text and "broken-link" in text
    win.problems_dialog.close()
    # The rest of the tree was scanned as usual.
    assert "original.txt" in shown_groups(win)[0]


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


def test_mark_copies_spares_reference_folders_similar_and_empty_files(qtbot, window, corpus, tmp_path):
    refs = tmp_path / "originals"
    refs.mkdir()
    for name in ("kept.txt", "second.txt"):
        (refs / name).write_bytes((corpus / "original.txt").read_bytes())
    (corpus / "empty1.txt").write_bytes(b"")
    (corpus / "empty2.txt").write_bytes(b"")
    win = window(roots=[str(corpus), str(refs)])
    win.folders.set_reference(1, True)
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    assert "Copies" in win.act_mark_dupes.text()
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):
        win.act_mark_dupes.trigger()  # Ctrl+M
    snap = win.model.snapshot
    marked = {os.path.basename(snap.paths[m]) for m in win.model.marked_members()}
    # The true copies outside the reference folder; never a file in it, nor an edited version,
    # an excerpt or an empty file.
    assert marked == {"original.txt", "copy.txt", "utf16.txt"}
    # The group's check box spares the reference folder too, but takes the similar files.
    g = win.model.group_index(snap.l_group[member_row(win, "second.txt")])
    win.model.setData(g, Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole)
    marked = {os.path.basename(snap.paths[m]) for m in win.model.marked_members()}
    assert {"edited.txt", "excerpt.txt"} <= marked and not marked & {"kept.txt", "second.txt"}
    # By hand (Space) a file in a reference folder can still be marked, with a warning.
    win.select_member(member_row(win, "second.txt"))
    win.toggle_mark_selection()
    assert win.model.is_marked(snap.l_file_id[member_row(win, "second.txt")])
    assert win.message.isVisible() and "reference folder" in win.message.text.text()


def test_preview_highlights_exact_passages_with_crlf_and_emoji(qtbot, window, tmp_path):
    import numpy as np

    from simscan.gui.preview import whole_words
    from simscan.similarity import compare
    from tests.gui.conftest import edit, prose

    root = tmp_path / "docs"
    root.mkdir()
    rng = np.random.default_rng(11)
    lines = prose(rng, 900).splitlines()
    # Emoji (outside the BMP: two UTF-16 units each) sprinkled before the matching passages.
    emoji = [("🙂🚀 " if i % 5 == 0 else "") + line for i, line in enumerate(lines)]
    (root / "a_crlf.txt").write_bytes("\r\n".join(emoji).encode() + b"\r\n")
    (root / "b_emoji.txt").write_bytes(edit(rng, "\n".join(emoji) + "\n", 0.2).encode())
    os.utime(root / "a_crlf.txt", (1_600_000_000, 1_600_000_000))
    win = window(roots=[str(root)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    pv = preview_of(qtbot, win, "b_emoji.txt")
    assert pv.currentIndex() == 1
    comp = compare(str(root / "a_crlf.txt"), str(root / "b_emoji.txt"))
    assert comp.ranges_a and "\r\n" in comp.text_a and "🙂" in comp.text_b
    for pane, text, ranges in ((pv.left, comp.text_a, comp.ranges_a), (pv.right, comp.text_b, comp.ranges_b)):
        sels = pane.edit.extraSelections()
        ranges = [r for r in whole_words(text, ranges) if r[1] > r[0]]  # (partial words at the ends left out)
        assert len(sels) == len(ranges)
        for sel, (a, b) in zip(sels, ranges):
            # What Qt highlights is exactly the passage compare() found (paragraph breaks as U+2029).
            want = text[a:b].replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\u2029")
            assert QTextCursor(sel.cursor).selectedText() == want
    assert pv.left.edit.toPlainText() == comp.text_a.replace("\r\n", "\n")


def test_shown_text_matches_a_slow_reference():
    from simscan.gui.preview import shown_text

    rng = __import__("random").Random(5)
    alphabet = ["a", "b", " ", "\r", "\n", "\r\n", "é", "🙂", "𝄞"]
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        n = len(text)
        ranges = sorted({tuple(sorted(rng.sample(range(n + 1), 2))) for _ in range(3)}) if n > 1 else []
        shown, pos = shown_text(text, list(ranges))

        def slow(o: int, text: str = text) -> int:  # UTF-16 units of the shown text before offset o
            pre = text[:o]
            if o and text[o - 1 : o + 1] == "\r\n":
                pre = pre[:-1]  # the CR of a CRLF split by o is not shown on its own
            return len(pre.replace("\r\n", "\n").replace("\r", "\n").encode("utf-16-le")) // 2

        assert shown == text.replace("\r\n", "\n").replace("\r", "\n")
        assert pos == [(slow(a), slow(b)) for a, b in ranges]


def test_preview_summary_shows_the_rows_scores(qtbot, window, tmp_path):
    """The list discounts passages common across the index (find_pairs); compare() sees two files
    alone.  The summary shows the row's numbers and labels compare()'s as such."""
    import numpy as np

    from simscan.similarity import compare
    from tests.gui.conftest import prose

    root = tmp_path / "docs"
    root.mkdir()
    common = prose(np.random.default_rng(1), 300)  # boilerplate in more files than the common cut-off
    shared = prose(np.random.default_rng(2), 300)
    for i in range(60):
        (root / f"f{i:02}.txt").write_text(common + prose(np.random.default_rng(100 + i), 100))
    (root / "a.txt").write_text(common + shared + prose(np.random.default_rng(50), 200))
    (root / "b.txt").write_text(common + shared + prose(np.random.default_rng(51), 200))
    win = window(roots=[str(root)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    snap = win.model.snapshot
    m = next(m for m, p in enumerate(snap.paths) if os.path.basename(p) in ("a.txt", "b.txt") and not snap.l_is_ref[m])
    ref = snap.l_start[snap.l_group[m]]
    row_pair = snap.pairs[m]
    alone = compare(snap.paths[ref], snap.paths[m]).pair
    assert shown_pct(alone.best) != shown_pct(snap.l_sim[m])  # the case this test is about
    text = preview_of(qtbot, win, m).summary.text()
    listed = win.proxy.mapFromSource(win.model.member_index(m, COL_SIMILARITY)).data(SimilarityRole)
    assert text.startswith(f"{row_pair.kind.capitalize()}: {shown_pct(listed):.1f} % similar")
    assert f"resemblance {shown_pct(row_pair.resemblance):.1f} %" in text
    assert f"These two files alone: {shown_pct(alone.best):.1f} %" in text


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
