"""Documents in the window: the preview shows a document's text and where it came from, and a DOCX
and its PDF export (a "content" pair: same text, other format) are never each other's true copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from simscan.gui import dialogs, jobs
from simscan.gui.mainwindow import MainWindow
from tests.helpers_documents import DATA

WAIT = 30_000


@pytest.fixture
def win(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MainWindow:
    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: True)
    root = tmp_path / "submissions"
    root.mkdir()
    for i, name in enumerate(("student.docx", "student.pdf", "essay.docx")):
        shutil.copyfile(DATA / name, root / name)
        os.utime(root / name, ns=(1_600_000_000 * 10**9, (1_600_000_000 + i) * 10**9))  # the DOCX is the oldest
    w = MainWindow(index_path=tmp_path / "index.sqlite3", roots=[str(root)])
    qtbot.addWidget(w)
    w.show()
    w.threshold_slider.setValue(20)
    with qtbot.waitSignal(w.resultsLoaded, timeout=WAIT), qtbot.waitSignal(w.scanFinished, timeout=WAIT):
        w.start_scan()
    return w


def row(win: MainWindow, name: str) -> int:
    return next(m for m, p in enumerate(win.model.snapshot.paths) if os.path.basename(p) == name)


def test_preview_shows_the_pdf_text_and_where_it_came_from(qtbot, win: MainWindow) -> None:
    s = win.model.snapshot
    m = row(win, "student.pdf")
    assert s.kind_name(m) == "content"  # the DOCX's PDF export: same text, other format
    with qtbot.waitSignal(win.previewShown, timeout=WAIT):
        assert win.select_member(m)
    pv = win.preview
    assert "PDF, 1 page, text layer" in pv.right.info.text()
    assert pv.left.info.text().endswith("DOCX; left out: styles, field codes, comments, deleted text")
    shown = pv.right.edit.toPlainText()
    assert shown.startswith("How Energy Shaped the Early Village") and "%PDF" not in shown
    assert pv.right.ranges and pv.left.ranges  # the whole text is shared: highlighted on both sides


def test_a_docx_and_its_pdf_are_never_marked_or_trashed_as_copies(qtbot, win: MainWindow) -> None:
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):
        win.mark_all_but_reference()
    assert not win.model.marked_members()
    docx, pdf = (str(Path(win.model.snapshot.paths[row(win, n)])) for n in ("student.docx", "student.pdf"))
    assert jobs.true_copies([(pdf, docx)], lambda p: None, jobs.CancelToken()) == [False]
    st = os.stat(pdf)
    target = jobs.TrashTarget(pdf, st.st_size, st.st_mtime_ns,
                              (jobs.KeptFile(docx, os.path.getsize(docx), os.stat(docx).st_mtime_ns),), True)
    assert "no kept file holds its content" in jobs.refusal(target)
