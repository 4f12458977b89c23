"""Trashing from the window never moves a file other than the one marked, nor the last copy.

Real files in tmp_path, a real index, the real window offscreen; the file system is changed
between the scan and the trash the way a user (or a link) would change it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from simscan.cleanup import refusal
from simscan.gui import dialogs
from simscan.gui.mainwindow import MainWindow
from simscan.index import Index
from tests.gui.conftest import mark_copies, prose

WAIT = 30_000


@pytest.fixture
def window(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: True)

    def make(roots: list[str]) -> MainWindow:
        win = MainWindow(index_path=tmp_path / "index.sqlite3", roots=roots)
        qtbot.addWidget(win)
        win.show()
        win.threshold_slider.setValue(30)
        with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT), qtbot.waitSignal(win.scanFinished, timeout=WAIT):
            win.start_scan()
        return win

    return make


def write_copies(folder: Path, names: list[str], seed: int = 3) -> bytes:
    """The same text under each name (bytes names allowed), all with one mtime."""
    folder.mkdir(parents=True, exist_ok=True)
    data = prose(np.random.default_rng(seed), 400).encode()
    for name in names:
        p = os.path.join(os.fsencode(folder), os.fsencode(name))
        with open(p, "wb") as f:
            f.write(data)
        os.utime(p, ns=(1_600_000_000 * 10**9, 1_600_000_000 * 10**9))
    return data


def mark(win: MainWindow, *paths: str | bytes) -> None:
    want = {os.fsdecode(p) for p in paths}
    s = win.model.snapshot
    ids = [fid for fid, p in zip(s.l_file_id, s.paths) if p in want]
    assert len(ids) == len(want), "every path to mark is shown"
    win.model.set_marked(ids, True)


def trash(qtbot, win: MainWindow):
    with qtbot.waitSignal(win.trashFinished, timeout=WAIT) as blocker:
        win.trash_marked()
    return blocker.args[0]


def indexed(win: MainWindow) -> set[bytes]:
    with Index.open(win.index_path, readonly=True) as idx:
        return set(idx.files().raw_paths)


def trash_undecodable(qtbot, window, root: Path, name: bytes):
    """Copies under an original: ``name`` (not valid UTF-8) and its look-alike (the bytes Qt would read it
    as, U+FFFD in its place); the window scans them, marks ``name`` alone and moves it to the trash.
    Returns (its path, the look-alike's, their bytes, the window, the trash's outcome)."""
    bad = os.fsdecode(os.path.join(os.fsencode(root), name))
    look = os.path.join(root, name.decode("utf-8", "replace"))
    try:
        data = write_copies(root, ["original.txt", name, os.path.basename(look)])
    except OSError:
        pytest.skip("this file system rejects non-UTF-8 names")
    win = window([str(root)])
    assert {bad, look} <= set(win.model.snapshot.paths)
    mark(win, bad)
    return bad, look, data, win, trash(qtbot, win)


def test_undecodable_name_is_trashed_by_its_bytes_never_its_lookalike(qtbot, window, tmp_path):
    """A name that is not valid text (a Latin-1 "café" from an old archive) cannot be given to Qt's trash
    byte for byte; the window refused it, while `simscan apply` moved it (acceptance test).  On the
    freedesktop.org trash it now goes there by its bytes, as `apply` moves it; its look-alike stays."""
    root = tmp_path / "docs"
    bad, look, data, win, out = trash_undecodable(qtbot, window, root, b"caf\xe9.txt")
    assert out.trashed == [bad] and not out.failed and not out.refused
    assert not os.path.lexists(os.fsencode(bad)) and Path(look).read_bytes() == data
    bin_ = os.fsencode(tmp_path / "xdg-data" / "Trash")
    assert os.listdir(bin_ + b"/files") == [b"caf\xe9.txt"]
    with open(bin_ + b"/files/caf\xe9.txt", "rb") as f:
        assert f.read() == data
    with open(bin_ + b"/info/caf\xe9.txt.trashinfo", "rb") as f:
        assert f"Path={root}/caf%E9.txt".encode() in f.read()
    assert os.fsencode(bad) not in indexed(win) and os.fsencode(look) in indexed(win)


def test_undecodable_name_is_refused_where_the_trash_is_not_freedesktops(qtbot, window, tmp_path, monkeypatch):
    """Where the platform's trash is not the freedesktop.org one (macOS, Windows), only Qt can move a file
    there: a name it cannot give byte for byte is refused, never its look-alike moved."""
    from simscan.gui import jobs

    monkeypatch.setattr(jobs, "FREEDESKTOP_TRASH", False)
    bad, look, data, win, out = trash_undecodable(qtbot, window, tmp_path / "docs", b"bad\xff.txt")
    # Neither moved: the look-alike is not the marked file, and the marked name cannot be given
    # to the trash byte for byte.
    assert os.path.exists(os.fsencode(bad)) and Path(look).read_bytes() == data
    assert not out.trashed and not out.failed and [p for p, _ in out.refused] == [bad]
    assert "not valid text" in out.refused[0][1] and "rename it" in out.refused[0][1]
    trash_files = tmp_path / "xdg-data" / "Trash" / "files"
    assert not trash_files.exists() or not list(trash_files.iterdir())
    assert {os.fsencode(bad), os.fsencode(look)} <= indexed(win)  # the index forgot nothing
    assert "NOT moved" in win.message.text.text() and "not valid text" in win.message.text.text()


def test_valid_non_ascii_name_is_trashed_exactly(qtbot, window, tmp_path):
    root = tmp_path / "docs"
    write_copies(root, ["original.txt", "résumé ✓.txt", "bad\ufffd.txt"])
    win = window([str(root)])
    mark(win, str(root / "résumé ✓.txt"))
    out = trash(qtbot, win)
    assert out.trashed == [str(root / "résumé ✓.txt")]
    assert sorted(p.name for p in root.iterdir()) == sorted(["original.txt", "bad\ufffd.txt"])
    assert os.fsencode(str(root / "résumé ✓.txt")) not in indexed(win)


def test_hard_link_to_the_kept_file_is_refused(qtbot, window, tmp_path):
    root = tmp_path / "docs"
    data = write_copies(root, ["original.txt", "copy.txt", "third.txt"])
    win = window([str(root)])
    s = win.model.snapshot
    ref, linked, third = (Path(s.paths[m]) for m in range(3))
    # After the scan one copy becomes another name of the reference (same size and mtime).
    linked.unlink()
    os.link(ref, linked)
    mark(win, linked, third)
    out = trash(qtbot, win)
    assert out.trashed == [str(third)]  # a real copy goes
    assert [p for p, _ in out.refused] == [str(linked)]
    assert "same file" in out.refused[0][1] and "scan again" in out.refused[0][1]
    assert ref.read_bytes() == data and linked.exists()
    text = win.message.text.text()
    assert "NOT moved" in text and linked.name in text and "Scan again" in text
    assert text.startswith("1 marked file was NOT moved")  # (the acceptance test saw "1 marked files were")


def test_same_file_through_a_linked_folder_is_refused(qtbot, window, tmp_path):
    root = tmp_path / "docs"
    data = write_copies(root / "real", ["a.txt"])
    write_copies(root / "other", ["a.txt"])
    win = window([str(root)])
    # After the scan the second folder becomes a link to the first: both paths are one file.
    for p in (root / "other").iterdir():
        p.unlink()
    (root / "other").rmdir()
    (root / "other").symlink_to(root / "real", target_is_directory=True)
    s = win.model.snapshot
    marked = next(p for p in s.paths if p != s.paths[0])
    mark(win, marked)
    out = trash(qtbot, win)
    assert not out.trashed and [p for p, _ in out.refused] == [marked]
    assert (root / "real" / "a.txt").read_bytes() == data


def test_changed_or_lonely_files_are_refused(qtbot, window, tmp_path):
    root = tmp_path / "docs"
    write_copies(root / "g1", ["original.txt", "changed.txt", "dir.txt", "fifo.txt"], seed=1)
    write_copies(root / "g2", ["original.txt", "copy.txt"], seed=2)
    write_copies(root / "g3", ["original.txt", "copy.txt"], seed=3)
    win = window([str(root)])
    s = win.model.snapshot
    assert s.n_groups == 3
    # g1: the marked files changed since the scan.
    with open(root / "g1" / "changed.txt", "ab") as f:
        f.write(b"more")
    (root / "g1" / "dir.txt").unlink()
    (root / "g1" / "dir.txt").mkdir()
    (root / "g1" / "fifo.txt").unlink()
    os.mkfifo(root / "g1" / "fifo.txt")
    # g2: the kept file is gone; g3: the kept copy is no longer the same size.
    (root / "g2" / "original.txt").unlink()
    with open(root / "g3" / "original.txt", "ab") as f:
        f.write(b"edited")
    mark(win, *(root / "g1" / n for n in ("changed.txt", "dir.txt", "fifo.txt")), root / "g2" / "copy.txt",
         root / "g3" / "copy.txt")
    out = trash(qtbot, win)
    assert not out.trashed and not out.failed
    why = {os.path.relpath(p, root): r for p, r in out.refused}
    assert set(why) == {"g1/changed.txt", "g1/dir.txt", "g1/fifo.txt", "g2/copy.txt", "g3/copy.txt"}
    assert "changed since the scan" in why["g1/changed.txt"]
    assert "folder" in why["g1/dir.txt"]
    assert "regular file" in why["g1/fifo.txt"]
    assert "no copy would be kept" in why["g2/copy.txt"] and "no copy would be kept" in why["g3/copy.txt"]
    assert all("scan again" in r for r in why.values())
    assert (root / "g2" / "copy.txt").exists() and (root / "g3" / "copy.txt").exists()
    # The marks stay (nothing moved) so the user sees what was refused.
    assert len(win.model.marked) == 5


def test_after_trash_marks_are_cleared_in_one_pass(qtbot, window, tmp_path, monkeypatch):
    """The trashed paths become one set, not one set per shown member (quadratic on the GUI
    thread: 2.8 s for 20,000 members)."""
    import builtins

    from simscan.gui import jobs, mainwindow

    root = tmp_path / "docs"
    write_copies(root, [f"c{i:02}.txt" for i in range(30)])
    win = window([str(root)])
    s = win.model.snapshot
    assert s.n_members == 30
    win.model.set_marked(s.l_file_id[1:], True)
    gone = s.paths[1:11]
    calls = []

    def counting_set(*a):
        calls.append(1)
        return builtins.set(*a)

    monkeypatch.setattr(mainwindow, "set", counting_set, raising=False)
    win._on_trashed(jobs.TrashOutcome(list(gone), [], [], None))
    assert len(calls) <= 2
    assert win.model.marked == builtins.set(s.l_file_id[11:])


def test_move_to_trash_itself_never_gives_qt_a_name_it_would_change(qapp, tmp_path, monkeypatch):
    from simscan.gui import jobs

    root = tmp_path / "docs"
    try:
        write_copies(root, [b"bad\xff.txt", "bad\ufffd.txt"])
    except OSError:
        pytest.skip("this file system rejects non-UTF-8 names")
    bad = os.fsdecode(os.fsencode(str(root)) + b"/bad\xff.txt")
    assert jobs.qt_file_name(bad) is None
    assert jobs.qt_file_name(str(root / "bad\ufffd.txt")) == str(root / "bad\ufffd.txt")
    jobs.trash_dir_ready()
    monkeypatch.setattr(jobs, "FREEDESKTOP_TRASH", False)  # (macOS, Windows: only Qt's trash)
    assert jobs.move_to_trash(bad) == (False, jobs.UNNAMEABLE)
    assert sorted(os.listdir(os.fsencode(root))) == sorted([b"bad\xff.txt", "bad\ufffd.txt".encode()])
    monkeypatch.setattr(jobs, "FREEDESKTOP_TRASH", True)  # the freedesktop.org trash: by its bytes
    assert jobs.move_to_trash(bad) == (True, "")
    assert os.listdir(os.fsencode(root)) == ["bad\ufffd.txt".encode()]
    assert os.listdir(os.fsencode(tmp_path / "xdg-data" / "Trash" / "files")) == [b"bad\xff.txt"]


def test_a_fully_marked_group_keeps_every_file(qtbot, window, tmp_path):
    root = tmp_path / "docs"
    write_copies(root, ["a.txt", "b.txt", "c.txt"])
    win = window([str(root)])
    s = win.model.snapshot
    win.model.set_marked(s.l_file_id, True)
    assert win.model.fully_marked_groups() == [0]
    out = trash(qtbot, win)
    assert not out.trashed and len(out.refused) == 3
    assert all("no copy would be kept" in why for _, why in out.refused)
    assert sorted(p.name for p in root.iterdir()) == ["a.txt", "b.txt", "c.txt"]


def test_a_copy_needs_a_kept_file_with_its_content(qtbot, window, tmp_path):
    """A marked exact copy in a group that also holds an edited draft: the draft is no copy,
    so once the reference is gone the copy stays; a reference edited in place at the same size
    (new mtime) no longer counts as the kept copy either."""
    root = tmp_path / "docs"
    data = write_copies(root / "g1", ["report.txt", "report_backup.txt"], seed=5)
    draft = root / "g1" / "report_draft.txt"
    draft.write_bytes(data[: len(data) // 2] + b" a new paragraph written for the draft. " * 8 + data[len(data) // 2 :])
    os.utime(draft, ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))  # newer: not the reference
    write_copies(root / "g2", ["a.txt", "b.txt"], seed=6)
    win = window([str(root)])
    s = win.model.snapshot
    kinds = {os.path.basename(p): s.l_kind[m] for m, p in enumerate(s.paths)}
    assert s.n_groups == 2 and kinds["report_draft.txt"] not in (0, 1)
    mark_copies(win.model)
    assert {os.path.basename(s.paths[m]) for m in win.model.marked_members()} == {"report_backup.txt", "b.txt"}
    (root / "g1" / "report.txt").unlink()  # the reference is gone; only the draft stays
    ref2 = root / "g2" / "a.txt"
    ref2.write_bytes(ref2.read_bytes()[::-1])  # same size, other content, new mtime
    out = trash(qtbot, win)
    assert not out.trashed
    why = {os.path.basename(p): r for p, r in out.refused}
    assert set(why) == {"report_backup.txt", "b.txt"} and all("no copy would be kept" in r for r in why.values())
    assert (root / "g1" / "report_backup.txt").exists() and (root / "g2" / "b.txt").exists()


def test_a_reference_marked_by_hand_needs_its_copy_intact(qtbot, window, tmp_path):
    """The reference marked by hand in a group that also holds its byte copy and an edited draft:
    once the copy changed after the scan, the draft does not keep the reference's content."""
    root = tmp_path / "docs"
    data = write_copies(root / "g1", ["report.txt", "report_backup.txt"], seed=8)
    draft = root / "g1" / "report_draft.txt"
    draft.write_bytes(data[: len(data) // 2] + b" another paragraph, new in the draft. " * 8 + data[len(data) // 2 :])
    os.utime(draft, ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))
    win = window([str(root)])
    s = win.model.snapshot
    ref = [p for m, p in enumerate(s.paths) if s.l_is_ref[m]]
    assert len(ref) == 1 and os.path.basename(ref[0]) in ("report.txt", "report_backup.txt")
    other = root / "g1" / ("report_backup.txt" if ref[0].endswith("report.txt") else "report.txt")
    with open(other, "ab") as f:
        f.write(b" edited after the scan")
    mark(win, ref[0])
    out = trash(qtbot, win)
    assert not out.trashed and "no copy would be kept" in out.refused[0][1]
    assert os.path.exists(ref[0])


def test_a_copy_rewritten_with_its_size_and_time_is_refused(qtbot, window, tmp_path):
    """`cp -p` of another version over the reference keeps its size and mtime, so the scan (and
    the group) still call the marked file its exact copy; the trash reads both files now and keeps
    the only file with the old content (found by this session's review)."""
    root = tmp_path / "docs"
    write_copies(root, ["doc.txt", "orig_copy.txt"], seed=11)
    win = window([str(root)])
    mark(win, *[p for m, p in enumerate(win.model.snapshot.paths) if not win.model.snapshot.l_is_ref[m]])
    kept = next(p for m, p in enumerate(win.model.snapshot.paths) if win.model.snapshot.l_is_ref[m])
    st = os.stat(kept)
    data = Path(kept).read_bytes()
    Path(kept).write_bytes(bytes(b ^ 1 if 97 <= b <= 122 else b for b in data))  # same size, other text
    os.utime(kept, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime, as cp -p leaves it
    out = trash(qtbot, win)
    assert not out.trashed and "no kept file holds its content now" in out.refused[0][1]
    assert all(os.path.exists(p) for p in win.model.snapshot.paths)


def test_content_copies_must_differ_only_in_encoding_and_line_endings(qtbot, window, tmp_path):
    """Two Python programs that differ only in indentation have one light form ("content"
    copies), but are different programs: the marked one is refused.  The same text saved as
    UTF-16 with CRLF line endings is a true content copy and is trashed."""
    root = tmp_path / "src"
    root.mkdir()
    body = "".join(f"def f{i}(items):\n    total = 0\n    for x in items:\n        total += x * {i}\n" for i in range(30))
    (root / "a.py").write_text(body + "    return total\n")
    (root / "b.py").write_text(body + "        return total\n")  # the return moved into the loop
    prose_text = prose(np.random.default_rng(21), 300)
    (root / "notes.txt").write_text(prose_text)
    (root / "notes_utf16.txt").write_bytes(prose_text.replace("\n", "\r\n").encode("utf-16"))
    for name, t in (("a.py", 1), ("b.py", 2), ("notes.txt", 1), ("notes_utf16.txt", 2)):  # the older: reference
        os.utime(root / name, ns=(1_600_000_000 * 10**9, (1_600_000_000 + t) * 10**9))
    win = window([str(root)])
    s = win.model.snapshot
    kinds = {os.path.basename(p): s.l_kind[m] for m, p in enumerate(s.paths)}
    assert kinds.get("b.py") == kinds.get("notes_utf16.txt") == 1  # "content" copies, both
    mark_copies(win.model)  # (every "content" copy, unread: the trash must refuse b.py)
    assert {os.path.basename(s.paths[m]) for m in win.model.marked_members()} == {"b.py", "notes_utf16.txt"}
    out = trash(qtbot, win)
    assert [os.path.basename(p) for p in out.trashed] == ["notes_utf16.txt"]
    assert [os.path.basename(p) for p, _ in out.refused] == ["b.py"] and "indentation" in out.refused[0][1]
    assert (root / "b.py").exists() and (root / "a.py").exists() and (root / "notes.txt").exists()


def test_ctrl_m_marks_only_content_copies_that_differ_in_encoding_and_line_endings(qtbot, window, tmp_path):
    """The window's Ctrl+M reads each "content" copy beside its reference first: the UTF-16 CRLF copy
    of a text is marked, a Python file that differs in indentation is not, and the window says why."""
    root = tmp_path / "src"
    root.mkdir()
    body = "".join(f"def f{i}(items):\n    total = 0\n    for x in items:\n        total += x * {i}\n" for i in range(30))
    (root / "a.py").write_text(body + "    return total\n")
    (root / "b.py").write_text(body + "        return total\n")
    text = prose(np.random.default_rng(22), 300)
    (root / "notes.txt").write_text(text)
    (root / "notes_utf16.txt").write_bytes(text.replace("\n", "\r\n").encode("utf-16"))
    (root / "notes_copy.txt").write_text(text)
    for name, t in (("a.py", 1), ("b.py", 2), ("notes.txt", 1), ("notes_utf16.txt", 2), ("notes_copy.txt", 2)):
        os.utime(root / name, ns=(1_600_000_000 * 10**9, (1_600_000_000 + t) * 10**9))
    win = window([str(root)])
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):
        win.mark_all_but_reference()
    s = win.model.snapshot
    assert {os.path.basename(s.paths[m]) for m in win.model.marked_members()} == {"notes_utf16.txt", "notes_copy.txt"}
    assert win.message.isVisible() and "1 file with the same words" in win.message.text.text()
    assert "not exactly the kept copy's" in win.message.text.text()


def test_ctrl_m_says_why_a_document_beside_its_text_is_not_marked(qtbot, window, tmp_path):
    """A DOCX saved from a text is in the text's copy set (same words) but not a true copy: Ctrl+M leaves it,
    and the window and the trash's check named only indentation, spacing or wrapping as the reason
    (acceptance test: 22 files, every one a DOCX, PDF or ODT export, "not exactly the references'")."""
    from tests.helpers_documents import docx_of_paragraphs

    root = tmp_path / "docs"
    root.mkdir()
    lines = prose(np.random.default_rng(23), 300).splitlines()
    (root / "report.txt").write_text("\n".join(lines) + "\n")
    (root / "report.docx").write_bytes(docx_of_paragraphs(lines))
    os.utime(root / "report.txt", ns=(1_600_000_000 * 10**9,) * 2)
    win = window([str(root)])
    s = win.model.snapshot
    assert {os.path.basename(p) for p in s.paths} == {"report.txt", "report.docx"}
    with qtbot.waitSignal(win.marksVerified, timeout=WAIT):
        win.mark_all_but_reference()
    assert not win.model.marked
    text = win.message.text.text()
    assert "1 file with the same words as its kept copy" in text and "another document format" in text, text
    mark(win, str(root / "report.docx"))  # marked by hand as a copy: the trash's check says the same
    s = win.model.snapshot
    docx = next(m for m, p in enumerate(s.paths) if p.endswith(".docx"))
    target = next(t for t in win.trash_targets([docx]))
    assert "another document format" in refusal(target)


def test_marks_never_carry_over_to_another_index(qtbot, window, tmp_path):
    """Marks are file ids of one index.  Opening another index while Ctrl+M still reads the copies
    (the reviewer's case) marks nothing there: not the exact copies, not what the reading finds --
    the other index's files with those ids are unrelated files (found re-reading the change)."""
    from simscan.scanner import ScanRequest, run_scan

    root = tmp_path / "src"
    text = write_copies(root, ["a.txt", "b.txt"]).decode()
    (root / "c_utf16.txt").write_bytes(text.replace("\n", "\r\n").encode("utf-16"))
    other = tmp_path / "other"
    write_copies(other, ["x.txt", "y.txt", "z.txt", "w.txt"], seed=9)
    run_scan(ScanRequest([other], index_path=tmp_path / "other.sqlite3", jobs=1))
    win = window([str(root)])
    win.mark_all_but_reference()
    assert win.model.marked and win.runner.busy("verify")
    assert not win.act_scan.isEnabled() and not win.act_trash.isEnabled() and win.act_cancel.isEnabled()
    with qtbot.waitSignal(win.resultsLoaded, timeout=WAIT):
        win.set_index(tmp_path / "other.sqlite3")
    qtbot.waitUntil(lambda: not win.runner.busy("verify"), timeout=WAIT)
    # (the resultsLoaded above may be the emptied list's, emitted at once: wait for the other index's)
    qtbot.waitUntil(lambda: not win.runner.busy("load"), timeout=WAIT)
    qtbot.wait(50)  # any late delivery of the reading
    assert win.model.snapshot.n_groups == 1 and not win.model.marked
    assert not win.act_trash.isEnabled() and win.act_scan.isEnabled()


def test_rows_of_the_old_index_go_when_another_is_opened(qtbot, window, tmp_path):
    """While the other index loads, the old index's rows must not stay on screen to be marked: their
    file ids would name unrelated files of the new index (found by a review of the change)."""
    from simscan.scanner import ScanRequest, run_scan

    root = tmp_path / "src"
    write_copies(root, ["a.txt", "b.txt", "c.txt"])
    other = tmp_path / "other"
    write_copies(other, ["x.txt", "y.txt", "z.txt", "w.txt"], seed=9)
    run_scan(ScanRequest([other], index_path=tmp_path / "other.sqlite3", jobs=1))
    win = window([str(root)])
    assert win.model.snapshot.n_groups == 1
    win.set_index(tmp_path / "other.sqlite3")
    assert win.runner.busy("load") and win.model.snapshot.n_groups == 0
    assert not win.act_mark_dupes.isEnabled()
    win.mark_all_but_reference()  # (Ctrl+M while it loads: nothing to mark)
    assert not win.model.marked
    qtbot.waitUntil(lambda: not win.runner.busy("load") and win.model.snapshot.n_groups == 1, timeout=WAIT)
    assert not win.model.marked


def test_text_the_decoder_could_not_read_is_no_proof_of_a_copy(tmp_path):
    """Two files that start with 64 KiB of ASCII and end in different Latin-1 words decode alike
    (the unreadable bytes become U+FFFD), so the scan calls them content copies; the trash check
    (and Ctrl+M) must not: only the same bytes prove it (found by this session's code review)."""
    from simscan.gui import jobs

    head = b"plain words in ascii only, " * 2500
    a, b = tmp_path / "menu_a.txt", tmp_path / "menu_b.txt"
    a.write_bytes(head + "café, thé, crème\n".encode("latin-1"))
    b.write_bytes(head + "cafè, thè, créme\n".encode("latin-1"))
    assert jobs.content_digest(str(a), True) is None  # decoded with replacements: no text digest
    st = os.stat(b)
    target = jobs.TrashTarget(str(b), st.st_size, st.st_mtime_ns,
                              (jobs.KeptFile(str(a), a.stat().st_size, a.stat().st_mtime_ns),), True)
    assert "no kept file holds its content" in jobs.refusal(target)
    assert jobs.true_copies([(str(b), str(a))], lambda p: None, jobs.CancelToken()) == [False]


def test_an_undecodable_name_reads_as_the_command_line_shows_it(qtbot, window, tmp_path):
    """The window showed a Latin-1 "caf\\xe9.txt" as "caf\ufffd.txt", the very name of its look-alike (acceptance
    test); the command line shows caf\\xe9.txt.  The Name column, its tooltip and the Pairs tab now show the byte
    as the command line does, so the two files read apart."""
    from PySide6.QtCore import QModelIndex, Qt

    from simscan.gui.results_model import COL_FOLDER, COL_NAME
    from simscan.gui.review import COL_A, COL_B

    root = tmp_path / "docs"
    try:
        write_copies(root, ["original.txt", b"caf\xe9.txt", "caf\ufffd.txt"])
    except OSError:
        pytest.skip("this file system rejects non-UTF-8 names")
    win = window([str(root)])
    m = win.proxy
    while m.canFetchMore(QModelIndex()):
        m.fetchMore(QModelIndex())
    g = m.index(0, 0)
    names = sorted(m.index(c, COL_NAME, g).data() for c in range(m.rowCount(g)))
    assert names == ["caf\\xe9.txt", "caf\ufffd.txt", "original.txt"]
    assert {m.index(c, COL_FOLDER, g).data() for c in range(m.rowCount(g))} == {str(root)}
    tips = [m.index(c, COL_NAME, g).data(Qt.ItemDataRole.ToolTipRole) for c in range(m.rowCount(g))]
    assert any(t.endswith("caf\\xe9.txt") for t in tips)
    from simscan.gui.window_review import PAIRS_TAB

    win.results_tabs.setCurrentIndex(PAIRS_TAB)
    qtbot.waitUntil(lambda: win.pairs_model.shown_count > 0, timeout=WAIT)
    pm = win.pairs_model
    while pm.canFetchMore(QModelIndex()):
        pm.fetchMore(QModelIndex())
    shown = {pm.index(r, c).data() for r in range(pm.rowCount()) for c in (COL_A, COL_B)}
    assert "caf\\xe9.txt" in {os.path.basename(p) for p in shown}
