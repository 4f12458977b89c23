"""The preview (simscan/gui/preview.py, window_preview.py): the selected file beside its reference,
shared passages highlighted, scrolled to them, with the list's scores."""

from __future__ import annotations

import math
import os

import pytest
from PySide6.QtGui import QTextCursor

from simscan.gui.results_model import (
    COL_SIMILARITY,
    SimilarityRole,
)
from simscan.index import Index
from simscan.similarity import find_pairs
from simscan.similarity.types import shown_pct
from tests.gui.helpers import WAIT, member_row, preview_of, scan


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


def test_a_long_file_cut_for_the_comparison_is_not_said_to_be_that_long(qtbot, window, tmp_path, monkeypatch):
    """The preview compares the first ``compare.MAX_BYTES`` of a long file (16 MiB; 1 MiB here, so the test
    stays small) and shows its first ``TEXT_CAP`` characters.  Its note said "showing the first 400,000 of
    16,777,216 characters" for two 420 MB notes files: the length of the part read, not of the file."""
    import importlib
    import random

    monkeypatch.setattr(importlib.import_module("simscan.similarity.compare"), "MAX_BYTES", 1 << 20)
    rng = random.Random(5)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(3000)]
    text = " ".join(rng.choice(vocab) for _ in range(240_000))  # ~1.5 MB
    root = tmp_path / "notes"
    root.mkdir()
    (root / "notes.txt").write_text(text)
    (root / "notes_edited.txt").write_text(text[:700_000] + " an added sentence here " + text[700_000:])
    win = window(roots=[str(root)])
    scan(qtbot, win)
    preview_of(qtbot, win, "notes_edited.txt")
    note = win.preview.note.text()
    assert "showing the first 400,000 characters." in note and f"of {1 << 20:,}" not in note, note
    assert "searched in their first part only" in note


def test_a_document_gone_since_the_scan_is_named_by_its_path(qtbot, window, tmp_path):
    """A student's essay renamed after the scan: the preview says which file is gone, by its path as the
    list shows it -- it said "b'/…/essay.docx' no longer exists." (the bytes of the name, as Python writes
    them) for a document."""
    from tests.helpers_documents import docx_of_paragraphs

    root = tmp_path / "class"
    root.mkdir()
    text = " ".join(f"Sentence {i} of the essay about rivers and the towns along them." for i in range(60))
    (root / "source.txt").write_text(text)
    (root / "essay.docx").write_bytes(docx_of_paragraphs([text[:2500]]))
    win = window(roots=[str(root)])
    scan(qtbot, win)
    (root / "essay.docx").rename(root / "essay-renamed.docx")
    with qtbot.waitSignal(win.previewShown, timeout=WAIT):
        win.select_member(member_row(win, "essay.docx"))
    message = win.preview.message.text()
    assert f"{root / 'essay.docx'} no longer exists" in message and "b'" not in message, message
