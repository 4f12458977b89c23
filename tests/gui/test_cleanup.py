"""Cleaning up in the window (issue 18): copy sets wherever they sit, keep rules, the source leading,
results that follow the folders, plans, empty files apart, marking; each defect the issue lists."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QModelIndex, QRect, Qt

from simscan.cli import main
from simscan.gui import dialogs
from simscan.gui.results_model import COL_COPIES, COL_FOLDER, COL_KIND, COL_MODIFIED, COL_NAME, COL_SIZE
from simscan.gui.snapshot import Snapshot
from simscan.index import Index
from simscan.similarity.keep import KeepRules
from tests.gui.conftest import edit, prose
from tests.gui.helpers import WAIT, member_row, preview_of, scan

T0 = 1_600_000_000


def _write(root: Path, files: dict[str, bytes]) -> None:
    """Write ``files``, each one second newer than the one before (the first is the oldest)."""
    for k, (name, data) in enumerate(files.items()):
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.utime(p, (T0 + k, T0 + k))


def _names(win, column: int) -> dict[str, str]:
    """{file name: the text of ``column``} over every listed file."""
    m = win.proxy
    while m.canFetchMore(QModelIndex()):
        m.fetchMore(QModelIndex())
    out = {}
    for r in range(m.rowCount()):
        g = m.index(r, 0)
        for c in range(m.rowCount(g)):
            out[m.index(c, COL_NAME, g).data()] = m.index(c, column, g).data()
    return out


def _marked(win) -> list[str]:
    s = win.model.snapshot
    return sorted(os.path.basename(s.paths[m]) for m in win.model.marked_members())


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """notes.txt (the oldest, 4 kB) shares a passage with big.txt, which has two byte copies elsewhere:
    a "near" pair, so the three big files are one member unit of notes.txt's group (the defect: listed
    as "near" members, never marked as copies, not counted as reclaimable)."""
    rng = np.random.default_rng(5)
    shared = prose(rng, 300)
    notes = shared + prose(rng, 500)
    big = prose(rng, 400) + shared + prose(rng, 1500)
    root = tmp_path / "tree"
    _write(root, {"notes.txt": notes.encode(), "big.txt": big.encode(), "a/big-a.txt": big.encode(),
                  "b/big-b.txt": big.encode()})
    return root


def test_copies_among_members_are_shown_marked_and_counted_at_every_threshold(qtbot, window, nested):
    """Defect 1: byte copies sitting as members of another file's group are one copy set: shown as
    such, Ctrl+M marks all but the one kept, and reclaimable counts them, the same at every threshold."""
    win = window(roots=[str(nested)])
    win.threshold_slider.setValue(15)
    scan(qtbot, win)
    s = win.model.snapshot
    assert s.n_groups == 1 and os.path.basename(s.paths[0]) == "notes.txt"
    kinds = _names(win, COL_KIND)
    assert kinds["big.txt"] == kinds["big-a.txt"] == kinds["big-b.txt"] == "near"
    copies = _names(win, COL_COPIES)
    assert copies["notes.txt"] == ""
    kept = [n for n, t in copies.items() if t.startswith("kept")]
    assert len(kept) == 1 and copies[kept[0]] == "kept · 3"
    assert sorted(t for t in copies.values() if t == "copy") == ["copy", "copy"]
    big = (nested / "big.txt").stat().st_size
    totals = win.proxy.totals()
    assert totals[2:] == (2, 2 * big)
    assert "reclaimable (2 extra copies)" in win.summary_label.text()
    assert win.folder_chart.rows and sum(r[1] for r in win.folder_chart.rows) == 2 * big
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):
        win.mark_all_but_reference()
    assert len(win.model.marked) == 2 and "notes.txt" not in _marked(win)
    # At another threshold the copies sit in their own group: the same two extra copies, the same bytes.
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.threshold_slider.setValue(90)
    assert win.proxy.totals()[2:] == (2, 2 * big)
    # The Show filter's "Exact copies" shows the copy sets wherever they sit.
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.threshold_slider.setValue(15)
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("exact"))
    assert sorted(_names(win, COL_KIND)) == ["big-a.txt", "big-b.txt", "big.txt", "notes.txt"]


def test_the_source_leads_and_the_utf8_copy_is_kept(qtbot, window, tmp_path):
    """Defect 3: the answer quoting a source led its group (the source a 24.6 % member), and Ctrl+M
    kept a GB18030 copy and marked the UTF-8 one."""
    rng = np.random.default_rng(8)
    source = prose(rng, 1500)
    lines = source.splitlines()
    answer = "\n".join(lines[20:32]) + "\n"
    text = "中文段落。" * 200 + "\n" + prose(rng, 300)
    root = tmp_path / "class"
    _write(root, {"answer.txt": answer.encode(), "legacy/notes.txt": text.encode("gb18030"),
                  "source.txt": source.encode(), "notes-utf8.txt": text.encode()})
    win = window(roots=[str(root)])
    scan(qtbot, win)
    s = win.model.snapshot
    refs = sorted(os.path.basename(s.paths[m]) for m in range(s.n_members) if s.l_is_ref[m])
    assert refs == ["notes-utf8.txt", "source.txt"]
    assert _names(win, COL_KIND)["answer.txt"] == "contained"
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):
        win.mark_all_but_reference()
    assert _marked(win) == ["notes.txt"]


KEEP_CASES = [
    (KeepRules(("oldest",)), "a1.txt"),
    (KeepRules(("newest",)), "deep/down/a4.txt"),
    (KeepRules(("shortest-path",)), "a1.txt"),
    (KeepRules(("longest-path",)), "deep/down/a4.txt"),
    (KeepRules(("pattern", "oldest"), "*/keep/*"), "keep/a3.txt"),
    (KeepRules(("encoding", "oldest")), "a2.txt"),
]


@pytest.mark.parametrize(("rules", "kept"), KEEP_CASES, ids=[r.text() for r, _ in KEEP_CASES])
def test_every_keep_rule_chooses_the_kept_file_and_is_remembered_per_index(qtbot, window, tmp_path, rules, kept):
    text = prose(np.random.default_rng(3), 600) + "Café, naïve déjà vu.\n"
    root = tmp_path / "copies"
    _write(root, {"a1.txt": text.encode("cp1252"), "a2.txt": ("\ufeff" + text).encode("utf-8"),
                  "keep/a3.txt": text.encode("utf-16"), "deep/down/a4.txt": text.encode("cp1252")})
    win = window(roots=[str(root)])
    scan(qtbot, win)
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.set_keep_rules(rules)
    s = win.model.snapshot
    assert os.path.relpath(s.paths[0], root) == kept and s.l_keeper[0]
    assert s.n_groups == 1 and int(s.g_extra[0]) == 3
    win.close()
    again = window(roots=[str(root)])
    qtbot.waitUntil(lambda: again.model.snapshot.n_groups == 1, timeout=WAIT)
    assert again.keep_rules == rules and os.path.relpath(again.model.snapshot.paths[0], root) == kept


def test_keep_rules_dialog_returns_the_ticked_rules_in_order(qtbot):
    dlg = dialogs.KeepRulesDialog(KeepRules(("oldest",)))
    qtbot.addWidget(dlg)
    assert dlg.rules() == KeepRules(("oldest",))
    dlg.set_rules(KeepRules(("pattern", "newest"), "*.docx"))
    assert dlg.rules() == KeepRules(("pattern", "newest"), "*.docx")
    dlg.list.setCurrentRow(1)
    dlg.move(-1)
    assert dlg.rules().order == ("newest", "pattern")


def test_removing_a_folder_forgets_its_results_with_undo(qtbot, window, corpus, nested, monkeypatch):
    """Defect 2: a removed folder's groups stayed listed after another folder was scanned."""
    win = window(roots=[str(corpus), str(nested)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    assert win.model.snapshot.n_groups == 2
    win.folder_view.selectionModel().select(win.folders.index(0), win.folder_view.selectionModel().SelectionFlag.Select)
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.remove_selected_folders()
    s = win.model.snapshot
    assert s.n_groups == 1 and not any(p.startswith(str(corpus)) for p in s.paths)
    assert win.message.isVisible() and win.message.action.text() == "Undo"
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.message.action.click()
    assert win.model.snapshot.n_groups == 2 and [f.path for f in win.folders.folders] == [str(nested), str(corpus)]
    # Removed again and another scan: still gone; Forget Results forgets them in the index.
    win.folder_view.selectionModel().select(win.folders.index(1), win.folder_view.selectionModel().SelectionFlag.Select)
    win.remove_selected_folders()
    scan(qtbot, win)
    assert win.model.snapshot.n_groups == 1
    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: True)
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.act_forget.trigger()
    with Index.open(win.index_path, readonly=True) as idx:
        assert not any(p.startswith(str(corpus)) for p in idx.files().paths)


def test_plan_round_trip_from_the_window(qtbot, window, nested, tmp_path):
    """Export the plan of the marked extra copies, change one file, apply it: that file is refused,
    the rest go to the (temporary) trash, the kept file stays; nothing is deleted."""
    win = window(roots=[str(nested)])
    scan(qtbot, win)
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):
        win.mark_all_but_reference()
    marked = [win.model.snapshot.paths[m] for m in win.model.marked_members()]
    assert len(marked) == 2
    plan = tmp_path / "plan.sh"
    assert win.export_plan(str(plan)) == 2
    text = plan.read_text()
    assert all(json.dumps(p) in text for p in marked)
    changed, moved = Path(marked[0]), Path(marked[1])
    st = changed.stat()
    changed.write_bytes(changed.read_bytes().replace(b"e", b"o", 1))
    os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert main(["apply", str(plan)]) == 1
    trash = Path(os.environ["XDG_DATA_HOME"]) / "Trash" / "files"
    assert changed.exists() and not moved.exists() and [p.name for p in trash.iterdir()] == [moved.name]
    kept = [p for p in nested.rglob("*big*.txt")]
    assert len(kept) == 2 and all(p.read_bytes() for p in kept)


def test_export_values_equal_the_windows(qtbot, window, nested, tmp_path):
    win = window(roots=[str(nested)])
    scan(qtbot, win)
    out = tmp_path / "r.json"
    win.export(str(out))
    doc = json.loads(out.read_text())
    assert sum(g["reclaimable_bytes"] for g in doc["groups"]) == win.proxy.totals()[3]
    shown = _names(win, COL_COPIES)
    for g in doc["groups"]:
        for m in g["members"]:
            assert m["copies"] == shown[os.path.basename(m["path"])].split(" ·")[0]


def test_html_export_cuts_the_percentage_as_the_window_does(tmp_path):
    """Defect 4: the HTML export rounded 99.97 to 100.0 % where the window and CSV cut it (99.9)."""
    from simscan.gui.export import write_html
    from simscan.gui.results_model import percent_text

    snap = Snapshot.from_columns(20.0, [0, 2], [2], [0, 0], [1, 2], [10, 10], [0, 0], [100.0, 99.97], [0, 2],
                                 [True, False], ["/a", "/b"], ["utf-8", "utf-8"])
    out = tmp_path / "r.html"
    write_html(out, snap, [0], frozenset())
    member = out.read_text().split('<td class="path">/b</td>')[1]
    assert percent_text(99.97) == "99.9 %" and member.startswith('<td class="num">99.9 %<')


def test_empty_files_are_reported_apart(qtbot, window, corpus):
    """Defect 5: 2,000 empty files made one 2,000-member duplicate group."""
    for i in range(40):
        (corpus / f"empty{i}.dat").touch()
    win = window(roots=[str(corpus)])
    scan(qtbot, win)
    s = win.model.snapshot
    assert not any(os.path.basename(p).startswith("empty") for p in s.paths)
    assert len(s.empty_files) == 40 and "40 empty files apart" in win.summary_label.text()
    win.show_empty_files()
    assert str(corpus / "empty7.dat") in win.empty_dialog.findChild(dialogs.QPlainTextEdit).toPlainText()


def test_percentage_digits_are_drawn_at_the_rows_full_height(qtbot, window):
    """Defect 4: the digits were drawn in a rectangle inset by 3 px top and bottom, clipped by 1-2 px."""
    from simscan.gui.widgets import SimilarityBarDelegate

    win = window()
    row = win.view.sizeHintForRow(0) if win.proxy.rowCount() else win.view.fontMetrics().height() + 4
    cell = QRect(0, 0, 100, row)
    text = SimilarityBarDelegate.text_rect(cell)
    assert text.top() == cell.top() and text.height() == cell.height() >= win.view.fontMetrics().height()


def test_the_preview_goes_with_a_filtered_row_and_stays_through_a_regroup(qtbot, window, corpus):
    """Defect 4: the preview kept showing a row a filter hid; moving the slider blanked it and
    scrolled it to the top."""
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    pv = preview_of(qtbot, win, "edited.txt")
    assert pv.currentIndex() == 1
    bar = pv.right.edit.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)
    shown: list[int] = []
    win.previewShown.connect(lambda: shown.append(1))
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.threshold_slider.setValue(35)
    qtbot.wait(300)  # (the preview's settle time and more)
    assert pv.currentIndex() == 1 and not shown and abs(bar.value() - bar.maximum() // 2) <= 2
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("exact"))
    assert not win.view.currentIndex().isValid() and pv.currentIndex() == 0


def test_highlights_start_and_end_on_whole_words(qtbot, window, tmp_path):
    """Defect 4: passages are found on normalised windows, so a highlight started inside a word."""
    from PySide6.QtGui import QTextCursor

    rng = np.random.default_rng(12)
    text = prose(rng, 900)
    root = tmp_path / "w"
    _write(root, {"a.txt": text.encode(), "b.txt": edit(rng, text, 0.3).encode()})
    win = window(roots=[str(root)])
    win.threshold_slider.setValue(20)
    scan(qtbot, win)
    pv = preview_of(qtbot, win, "b.txt")
    for pane in (pv.left, pv.right):
        doc = pane.edit.toPlainText()
        sels = pane.edit.extraSelections()
        assert sels
        for sel in sels:
            c = QTextCursor(sel.cursor)
            a, b = c.selectionStart(), c.selectionEnd()
            assert a == 0 or not (doc[a - 1].isalnum() and doc[a].isalnum()), doc[max(0, a - 10):a + 10]
            assert b == len(doc) or not (doc[b - 1].isalnum() and doc[b].isalnum())


def test_the_window_title_does_not_repeat_the_application_name(qtbot, window):
    """Defect 4: the desktop adds the application's name ("simscan") to the title: the title itself
    must not hold it too ("simscan — similar files — simscan")."""
    from PySide6.QtWidgets import QApplication

    from simscan.gui.app import ensure_app

    ensure_app()  # (the application's names, as simscan-gui sets them)
    win = window()
    assert QApplication.applicationDisplayName() == "simscan"
    assert "simscan" not in win.windowTitle().lower()


def test_name_folder_and_date_columns(qtbot, window, nested):
    win = window(roots=[str(nested)])
    scan(qtbot, win)
    g = win.proxy.index(0, 0)
    m = win.proxy.index(1, COL_NAME, g)
    path = Path(m.data(Qt.ItemDataRole.ToolTipRole).split(": ")[-1])
    assert m.data() == path.name and win.proxy.index(1, COL_FOLDER, g).data() == str(path.parent)
    assert win.proxy.index(0, COL_FOLDER).data() == str(nested)
    import re

    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", win.proxy.index(1, COL_MODIFIED, g).data())
    assert win.proxy.index(0, COL_SIZE).data()  # the group's reclaimable bytes


def test_differences_view_goes_from_one_difference_to_the_next(qtbot, window, tmp_path):
    """In a near-duplicate almost all is shared: the differences view highlights what is not, and
    Next Difference (F8) scrolls both files to the next one."""
    rng = np.random.default_rng(21)
    lines = prose(rng, 4000).splitlines()
    changed = list(lines)
    for i in (15, 140, 260):
        changed[i] = "CHANGED " + prose(np.random.default_rng(i), 12).strip()
    root = tmp_path / "d"
    _write(root, {"a.txt": ("\n".join(lines) + "\n").encode(), "b.txt": ("\n".join(changed) + "\n").encode()})
    win = window(roots=[str(root)])
    scan(qtbot, win)
    pv = preview_of(qtbot, win, "b.txt")
    right = pv.right
    assert len(right.gaps) >= 3
    seen = []
    for _ in range(3):
        win.act_next_diff.trigger()
        a, b = pv.current_difference
        seen.append(right.edit.toPlainText()[a:b])
        assert right.edit.document().findBlock(a).firstLineNumber() >= right.edit.verticalScrollBar().value()
    assert pv.differences.isChecked()
    assert all("CHANGED" in t for t in seen) and len(set(seen)) == 3
    sels = right.edit.extraSelections()
    assert len(sels) == len([g for g in right.gaps if g[1] > g[0]])


def test_invert_marks_and_hidden_files_are_remembered(qtbot, window, corpus):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    s = win.model.snapshot
    win.model.set_marked([s.l_file_id[member_row(win, "copy.txt")]], True)
    win.invert_marks()
    assert _marked(win) == ["edited.txt", "excerpt.txt", "utf16.txt"]  # never the reference
    win.select_member(member_row(win, "excerpt.txt"))
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.act_hide.trigger()
    assert "excerpt.txt" not in [os.path.basename(p) for p in win.model.snapshot.paths]
    assert "excerpt.txt" not in _marked(win)
    win.model.clear_marks()  # (marks are not remembered: closing with marks would ask first)
    win.close()
    again = window(roots=[str(corpus)])
    qtbot.waitUntil(lambda: again.model.snapshot.n_groups == 1, timeout=WAIT)
    assert "excerpt.txt" not in [os.path.basename(p) for p in again.model.snapshot.paths]
    with qtbot.waitSignal(again.resultsLoaded, timeout=WAIT):
        again.act_unhide.trigger()
    assert "excerpt.txt" in [os.path.basename(p) for p in again.model.snapshot.paths]


def test_layout_more_rows_one_scan_button_and_a_labelled_histogram(qtbot, window):
    from PySide6.QtWidgets import QPushButton

    win = window()
    qtbot.waitExposed(win)
    labels = [b.text() for b in win.findChildren(QPushButton)]
    assert "Scan" not in labels and "Cancel" not in labels  # the toolbar has them
    row = win.view.fontMetrics().height() + 6
    assert win.view.viewport().height() // row >= 21  # ~19 before, at the default size
    win.act_beside.trigger()
    assert win.view.viewport().height() // row >= 28
    win.chart.set_data(np.array([20.0, 30.0, 100.0, 100.0, 100.0, 100.0]), 15.0, 15.0)
    assert [c for c, _ in win.chart.y_ticks()] == [0, 1, 4]


def test_html_export_names_undecodable_files_as_the_command_line_does(tmp_path):
    """A name with a byte that is not UTF-8 reads \\xff in the HTML export, as in `groups` and the
    plans (it read \\udcff)."""
    from simscan.gui.export import write_html

    bad = os.fsdecode(b"/caf\xff.txt")
    snap = Snapshot.from_columns(20.0, [0, 2], [2], [0, 0], [1, 2], [10, 10], [0, 0], [100.0, 99.97], [0, 2],
                                 [True, False], ["/a", bad], ["utf-8", "utf-8"])
    out = tmp_path / "r.html"
    write_html(out, snap, [0], frozenset())
    page = out.read_text()
    assert '<td class="path">/caf\\xff.txt</td>' in page and "udcff" not in page
