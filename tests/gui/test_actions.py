"""The actions on files (window_actions.py): marking, making a reference, moving to the trash."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from simscan.gui import dialogs
from simscan.index import Index
from simscan.similarity import DEFAULT_MIN_SIMILARITY, find_pairs
from simscan.similarity.core import expand_copy_pairs
from tests.gui.helpers import WAIT, core_groups, member_row, scan, shown_groups


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


def _answer_the_next_dialog(button: str | None, seen: list) -> None:
    """Answer the dialog that the next call opens, modal, by clicking its ``button`` (its text without the
    accelerator's &; None: the test expects no dialog, so one that shows is rejected, and ``seen`` tells
    it), and note its (title, text, details) in ``seen``.  (A timer due at once: it runs in the dialog's
    own event loop, or, when none opened, at the next events the test processes, finding nothing.)"""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QMessageBox

    def look() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            return
        seen.append((box.windowTitle(), box.text(), box.informativeText()))
        if button is None:
            box.reject()
            return
        next(b for b in box.buttons() if b.text().replace("&", "") == button).click()

    QTimer.singleShot(0, look)


def test_quitting_with_marks_asks_first(qtbot, window, corpus):
    """Marks are the person's work (files chosen for the trash) and are kept nowhere: Quit (Ctrl+Q) and
    closing the window ask first when files are marked (Cancel keeps the window and its marks), and
    never when none is."""
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(99)
    scan(qtbot, win)
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):
        win.mark_all_but_reference()
    marked = win.model.marked
    assert len(marked) == 2  # copy.txt, utf16.txt
    seen: list = []
    _answer_the_next_dialog("Cancel", seen)
    win.act_quit.trigger()  # File > Quit (Ctrl+Q where the desktop binds it: Qt's standard Quit key)
    assert [s[:2] for s in seen] == [("Quit simscan", "Quit with 2 files marked?")]
    assert "The marks are lost" in seen[0][2]
    assert win.isVisible() and win.model.marked == marked  # still there, marks too
    # The window's close button: Quit closes it.
    _answer_the_next_dialog("Quit", seen)
    win.close()
    assert len(seen) == 2 and not win.isVisible()
    # No mark: no question.
    again = window()
    qtbot.waitUntil(lambda: again.model.snapshot.n_groups > 0 and not again.runner.busy("group"), timeout=WAIT)
    assert not again.model.has_marks
    seen.clear()
    _answer_the_next_dialog(None, seen)
    again.act_quit.trigger()
    assert seen == [] and not again.isVisible()


def test_quit_has_a_key_on_every_platform(qtbot, window):
    """Quit's key is the platform's, and Ctrl+Q where Qt binds none (offscreen here, as on Windows): the
    key closes the window (no file marked: nothing asked)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QKeySequence

    win = window()
    standard = QKeySequence.keyBindings(QKeySequence.StandardKey.Quit)
    assert win.act_quit.shortcuts() == (standard or [QKeySequence("Ctrl+Q")])
    qtbot.waitUntil(lambda: not win.runner.busy("group"), timeout=WAIT)
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=WAIT)
    qtbot.keyClick(win, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=WAIT)
