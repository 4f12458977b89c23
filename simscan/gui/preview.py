"""Side-by-side preview: the group's reference on the left, the selected file on the right,
matching passages highlighted, scrolling in step.

The comparison itself (``simscan.similarity.compare``) runs in a worker; this widget only
shows its result.  What is shown is capped (:data:`TEXT_CAP` characters and
:data:`RANGE_CAP` highlighted passages per side) so a multi-megabyte file appears at once.
Scrolling in step follows the matches: the passage at the top of one side is brought to the
top of the other; between matches the sides move proportionally.
"""

from __future__ import annotations

import bisect
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QFontDatabase, QPalette, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QStackedWidget,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from simscan.gui.widgets import ElidedLabel, blend
from simscan.similarity.types import member_kind, shown_pct

#: Characters shown per side (~150 printed pages).  Laying out more in a QPlainTextEdit takes
#: longer than a user waits for a preview; the rest is summarised in a note.
TEXT_CAP = 400_000
#: Highlighted passages per side (extra selections are painted per visible block, but
#: building them costs a few µs each on the GUI thread).
RANGE_CAP = 5_000
#: Lines of text kept above the first matching passage when a pair is shown scrolled to it: enough
#: to see what leads into it, few enough that the passage stays in the upper part of a short pane.
CONTEXT_LINES = 2


@dataclass(frozen=True)
class FileInfo:
    """What the preview says about a file besides its text."""

    path: str
    size: int
    mtime_ns: int
    encoding: str | None
    is_text: bool
    role: str  # "reference" / "selected"


#: A partial word longer than this at a passage's end is not trimmed (a long token: an identifier, a
#: hash), nor are characters of scripts written without spaces (CJK from U+2E80 on).
MAX_WORD = 40


def _wordish(c: str) -> bool:
    return c.isalnum() and ord(c) < 0x2E80


def whole_words(text: str, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``ranges`` (code-point offsets) trimmed to whole words: a matching passage is found on
    normalised 50-character windows, so it can start or end inside a word ("coin|ed"); the part of
    a word cut at either end is left out of the highlight.  Entries keep their places (one trimmed
    to nothing becomes empty), so a range still pairs with its partner on the other side."""
    n = len(text)
    out = []
    for a, b in ranges:
        a, b = max(0, a), min(b, n)
        if 0 < a < b and _wordish(text[a - 1]) and _wordish(text[a]):
            e = a
            while e < b and e - a <= MAX_WORD and _wordish(text[e]):
                e += 1
            if e - a <= MAX_WORD:
                a = e
        if a < b < n and _wordish(text[b - 1]) and _wordish(text[b]):
            e = b
            while e > a and b - e <= MAX_WORD and _wordish(text[e - 1]):
                e -= 1
            if b - e <= MAX_WORD:
                b = e
        out.append((a, max(a, b)))
    return out


def shown_text(text: str, ranges: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """The text to give the editor and ``ranges`` (code-point offsets into ``text``) as positions
    in the editor's document.

    Two things separate the two: QTextDocument positions count UTF-16 code units (a character
    outside the BMP, e.g. most emoji, takes two), and setPlainText makes one paragraph break of
    "\\r\\n" (and of a lone "\\r"), so the "\\r" of each CRLF takes no position.  The text is
    therefore normalised to "\\n" line ends before it is shown, and each offset ``o`` becomes
    ``o - (CRs of CRLFs before o) + (non-BMP characters before o)``: a prefix sum over the code
    points (numpy, ~2 ms for the 400,000-character cap) looked up for all ranges at once.
    """
    if "\r" not in text and text.isascii():
        return text, ranges
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    width = np.where(cp > 0xFFFF, 2, 1).astype(np.int64)
    cr = cp == 13
    crlf = np.zeros(len(cp), dtype=bool)
    crlf[:-1] = cr[:-1] & (cp[1:] == 10)
    width[crlf] = 0  # dropped: its "\n" makes the paragraph break
    pos = np.zeros(len(cp) + 1, dtype=np.int64)
    np.cumsum(width, out=pos[1:])
    shown = text.replace("\r\n", "\n").replace("\r", "\n") if cr.any() else text
    if not ranges:
        return shown, []
    mapped = pos[np.asarray(ranges, dtype=np.int64)]
    return shown, [(a, b) for a, b in mapped.tolist()]


def differences(text: str, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The stretches of ``text`` outside every range (document positions), white space alone left
    out: what one file has and the other has not."""
    out = []
    reach = 0
    for a, b in sorted(r for r in ranges if r[1] > r[0]) + [(len(text), len(text))]:
        if a > reach and text[reach:a].strip():
            lo, hi = reach, a
            while lo < hi and text[lo].isspace():
                lo += 1
            while hi > lo and text[hi - 1].isspace():
                hi -= 1
            out.append((lo, hi))
        reach = max(reach, b)
    return out


class PreviewPane(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.title = ElidedLabel()  # (not selectable: a shortened path would be copied; Copy Path copies it whole)
        f = self.title.font()
        f.setBold(True)
        self.title.setFont(f)
        self.info = QLabel()
        self.info.setTextFormat(Qt.TextFormat.PlainText)
        self.info.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.edit = QPlainTextEdit()
        self.edit.setReadOnly(True)
        self.edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        # Always there: a scroll bar appearing once the text is in narrows the text and re-wraps it,
        # which moves every line after the one scrolled to (scroll_to_first_match).
        self.edit.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.edit.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        lay.addWidget(self.title)
        lay.addWidget(self.info)
        lay.addWidget(self.edit, 1)
        self.ranges: list[tuple[int, int]] = []
        self.starts: list[int] = []
        self.gaps: list[tuple[int, int]] = []  # the text outside every shared passage (differences)
        self.show_differences = False
        self.current: int | None = None  # the passage "next passage" went to, highlighted more strongly

    def set_header(self, title: str, path: str, info: str) -> None:
        self.title.setText(title)
        self.title.setToolTip(path)
        self.info.setText(info)

    def set_text(self, text: str, ranges: list[tuple[int, int]]) -> None:
        """Show ``text`` with ``ranges`` ((start, end) offsets in code points into ``text``)
        highlighted.  :attr:`ranges` keeps them as document positions (see :func:`shown_text`)."""
        n = len(text)
        # (Entries keep their places, empty ones too: ranges[i] pairs with the other side's ranges[i].)
        ranges = whole_words(text, [(min(max(0, a), n), min(max(a, b), n)) for a, b in ranges[:RANGE_CAP]])
        shown, positions = shown_text(text, ranges)
        self.edit.setPlainText(shown)
        self.ranges = positions
        self.starts = [a for a, _ in self.ranges]
        self.gaps = differences(shown, positions)
        self.current = None
        self._highlight()

    def set_differences(self, on: bool) -> None:
        """Highlight what is *not* shared (the differences) instead of the shared passages."""
        if on != self.show_differences:
            self.show_differences = on
            self._highlight()

    def set_current(self, i: int | None) -> None:
        """Highlight passage ``i`` (an index into :attr:`ranges`) more strongly than the others."""
        if i != self.current:
            self.current = i
            self._highlight()

    def _highlight(self) -> None:
        pal = self.palette()
        fmt = QTextCharFormat()
        fmt.setBackground(self.difference_color() if self.show_differences else self.highlight_color())
        fmt.setForeground(pal.color(QPalette.ColorRole.Text))
        strong = QTextCharFormat(fmt)
        strong.setBackground(self.current_color())
        doc = self.edit.document()
        sels = []
        for i, (a, b) in enumerate(self.gaps if self.show_differences else self.ranges):
            if b <= a:
                continue
            c = QTextCursor(doc)
            c.setPosition(a)
            c.setPosition(b, QTextCursor.MoveMode.KeepAnchor)
            sel = QTextEdit.ExtraSelection()
            sel.cursor = c  # type: ignore[attr-defined]
            sel.format = strong if i == self.current and not self.show_differences else fmt  # type: ignore[attr-defined]
            sels.append(sel)
        self.edit.setExtraSelections(sels)

    def highlight_color(self) -> QColor:
        """A tint of the theme's highlight over its base colour: readable in light and dark themes."""
        pal = self.palette()
        return blend(pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Highlight), 0.35)

    def current_color(self) -> QColor:
        """The passage "next passage" went to: a stronger tint of the shared passages' colour."""
        pal = self.palette()
        return blend(pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Highlight), 0.65)

    def difference_color(self) -> QColor:
        """The differences' tint: the theme's link colour over its base (another hue than the shared
        passages' in the usual themes)."""
        pal = self.palette()
        return blend(pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.LinkVisited), 0.35)

    def top_position(self) -> int:
        """Character offset at the top-left of the visible text."""
        return self.edit.cursorForPosition(QPoint(2, 2)).position()

    def scroll_to_position(self, pos: int, context: int = 0) -> None:
        """Put the line holding character ``pos`` at the top, below ``context`` lines before it."""
        doc = self.edit.document()
        pos = max(0, min(pos, doc.characterCount() - 1))
        block = doc.findBlock(pos)
        if not block.isValid():
            return
        # The editor lays out paragraphs lazily, counting one never shown as a single line: lay out the
        # target and the few before it, so that the line within a long paragraph and the context lines
        # are real lines (the scroll bar counts lines).
        layout_of, b = doc.documentLayout(), block
        for _ in range(context + 1):
            if not b.isValid():
                break
            layout_of.blockBoundingRect(b)
            b = b.previous()
        line = block.firstLineNumber()
        layout = block.layout()
        if layout is not None and layout.lineCount() > 1:
            line += layout.lineForTextPosition(pos - block.position()).lineNumber()
        self.edit.verticalScrollBar().setValue(max(0, line - context))


class PreviewWidget(QStackedWidget):
    """Page 0: a message ("select a file", "comparing…", an error); page 1: the two panes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message = QLabel()
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.setContentsMargins(0, 0, 0, 0)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.PlainText)
        self.note.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.note.hide()
        self.left = PreviewPane()
        self.right = PreviewPane()
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.left)
        split.addWidget(self.right)
        split.setChildrenCollapsible(False)
        # The differences view: in a 97 % near-duplicate almost everything is shared, so the few
        # differences are what to highlight, and F8 goes from one to the next.
        controls = QHBoxLayout()
        self.differences = QCheckBox(self.tr("Highlight differences"))
        self.differences.setToolTip(self.tr("Highlight the text the two files do not share, instead of the passages "
                                            "they share"))
        self.differences.toggled.connect(self.set_differences)
        self.next_button = QToolButton()
        self.next_button.setText(self.tr("Next Difference"))
        self.next_button.setToolTip(self.tr("Scroll both files to the next passage they do not share (F8)"))
        self.next_button.clicked.connect(self.next_difference)
        # Shared passages one by one (the review of a pair): both sides scroll to the next one, which is
        # highlighted more strongly; the label says which one of how many.
        self.passage_label = QLabel()
        self.passage_label.setTextFormat(Qt.TextFormat.PlainText)
        self.prev_passage_button = QToolButton()
        self.prev_passage_button.setArrowType(Qt.ArrowType.UpArrow)
        self.prev_passage_button.setToolTip(self.tr("Scroll both files to the previous shared passage (Shift+F7)"))
        self.prev_passage_button.clicked.connect(lambda: self.next_passage(-1))
        self.next_passage_button = QToolButton()
        self.next_passage_button.setArrowType(Qt.ArrowType.DownArrow)
        self.next_passage_button.setToolTip(self.tr("Scroll both files to the next shared passage (F7)"))
        self.next_passage_button.clicked.connect(lambda: self.next_passage(1))
        controls.addWidget(self.summary, 1)
        controls.addSpacing(8)
        for w in (self.passage_label, self.prev_passage_button, self.next_passage_button, self.differences,
                  self.next_button):
            controls.addWidget(w, 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(controls)
        lay.addWidget(split, 1)
        lay.addWidget(self.note)
        self.addWidget(self.message)
        self.addWidget(page)
        self._syncing = False
        self.current_difference: tuple[int, int] | None = None
        self.current_passage: int | None = None  # index into the panes' ranges of the passage gone to
        self.left.edit.verticalScrollBar().valueChanged.connect(lambda _v: self._sync(self.left, self.right, True))
        self.right.edit.verticalScrollBar().valueChanged.connect(lambda _v: self._sync(self.right, self.left, False))
        self.show_message(self.tr("Select a file to compare it with its group's reference."))

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.setCurrentIndex(0)

    @staticmethod
    def _describe(info: FileInfo, source: str | None = None) -> str:
        """Size, time and encoding; for a document, where its text came from (``source``: "PDF, 12
        pages, text layer; left out: ..."), or why it is compared by its bytes."""
        from simscan.gui.results_model import format_date, format_size

        when = format_date(info.mtime_ns)
        enc = source or info.encoding or ("binary" if not info.is_text else "")
        return " · ".join(x for x in (format_size(info.size), when, enc) if x)

    def show_comparison(
        self,
        comp: Any,
        ref: FileInfo,
        sel: FileInfo,
        row_pair: Any = None,
        row_similarity: float | None = None,
        closest: bool = False,
        pair_mode: bool = False,
    ) -> None:
        """``comp``: a ``simscan.similarity.Comparison`` of (reference, selected), used for the
        highlighted passages.  The scores in the summary are the list's (``row_pair``: the
        member's Pair from find_pairs, ``row_similarity``: the percentage its row shows), so one
        pair never shows two numbers; find_pairs discounts fingerprints common across the index,
        compare() sees the two files alone — that figure is added, labelled, when it differs.
        ``closest``: the reference itself is selected, and ``sel`` is the closest file of its group
        (the right pane and the summary say so, rather than call it the selected file).
        ``pair_mode``: a pair of the review list, (file A, file B): the panes are A and B, the summary
        leads with the passages, and the longest passage is shown first."""
        if pair_mode:
            self.summary.setText(self.pair_text(comp.pair, row_pair))
            left, right = self.tr("A: {0}"), self.tr("B: {0}")
        elif closest:
            self.summary.setText(self.closest_text(comp.pair, row_pair, row_similarity, sel.path))
            left, right = self.tr("Reference (selected): {0}"), self.tr("Closest file in its group: {0}")
        else:
            self.summary.setText(self.summary_text(comp.pair, row_pair, row_similarity))
            left, right = self.tr("Reference: {0}"), self.tr("Selected: {0}")
        listed = row_similarity if row_similarity is not None and not math.isnan(row_similarity) else comp.pair.best
        self.left.set_header(left.format(ref.path), ref.path, self._describe(ref, getattr(comp, "source_a", None)))
        self.right.set_header(right.format(sel.path), sel.path, self._describe(sel, getattr(comp, "source_b", None)))
        notes = []
        if comp.text_a is None or comp.text_b is None:
            # Binary: show what we know instead of bytes.
            for pane, info, text in ((self.left, ref, comp.text_a), (self.right, sel, comp.text_b)):
                if text is None:
                    pane.set_text(self._metadata(info, comp.pair, listed), [])
                else:
                    pane.set_text(text[:TEXT_CAP], [])
            notes.append(self.tr("Binary files are compared by their bytes; there is no text to show."))
        else:
            for pane, text, ranges in ((self.left, comp.text_a, comp.ranges_a), (self.right, comp.text_b, comp.ranges_b)):
                pane.set_text(text[:TEXT_CAP], list(ranges))
                if len(text) > TEXT_CAP and getattr(comp, "truncated", False):
                    # (compare read the long file's start only: the text's length is not the file's)
                    notes.append(self.tr("{0}: showing the first {1:,} characters.").format(pane.title.text(), TEXT_CAP))
                elif len(text) > TEXT_CAP:
                    notes.append(
                        self.tr("{0}: showing the first {1:,} of {2:,} characters.").format(
                            pane.title.text(), TEXT_CAP, len(text)
                        )
                    )
            if len(comp.ranges_a) > RANGE_CAP:
                notes.append(self.tr("Only the first {0:,} matching passages are highlighted.").format(RANGE_CAP))
            if getattr(comp, "truncated", False):
                notes.append(self.tr("The files are long: matching passages were searched in their first part only."))
            if getattr(comp, "capped", False):
                notes.append(self.tr("Repetitive text: a passage that repeats many times is matched at a few of its places."))
        self.note.setText("\n".join(notes))
        self.note.setVisible(bool(notes))
        self.current_difference = None
        self.current_passage = None
        for pane in (self.left, self.right):
            pane.set_differences(self.differences.isChecked())
        self.setCurrentIndex(1)
        self.scroll_to_first_match()
        if pair_mode and self.passages():
            # The strongest evidence first: the passage whose shorter side is the longest.
            ra, rb = comp.ranges_a, comp.ranges_b
            self.go_to_passage(max(self.passages(), key=lambda i: (min(ra[i][1] - ra[i][0], rb[i][1] - rb[i][0]), -i)))
        self._update_passage_label()

    def set_differences(self, on: bool) -> None:
        """Highlight the differences (``on``) or the shared passages in both panes."""
        if self.differences.isChecked() != on:
            self.differences.setChecked(on)  # (calls back here)
            return
        for pane in (self.left, self.right):
            pane.set_differences(on)

    def next_difference(self) -> bool:
        """Scroll to the next stretch of the selected file (right) that the reference does not share,
        after the one at the top, and the reference to where the shared text before it ends; from the
        last one back to the first.  Turns the differences view on.  False when there is none."""
        right, left = self.right, self.left
        if self.currentIndex() != 1 or not right.gaps:
            return False
        self.set_differences(True)
        if self.current_difference in right.gaps:  # the one shown last: the next one
            gap = right.gaps[(right.gaps.index(self.current_difference) + 1) % len(right.gaps)]
        else:  # the first one below the line at the top
            block = right.edit.document().findBlock(right.top_position())
            line_end = block.position() + block.length()
            gap = next((g for g in right.gaps if g[0] >= line_end), right.gaps[0])
        # The shared passage that ends last before it, on the right: its partner's end on the left.
        before = [i for i, (a, b) in enumerate(right.ranges) if b > a and b <= gap[0]]
        target = left.ranges[max(before, key=lambda i: right.ranges[i][1])][1] if before else 0
        self._syncing = True
        try:
            right.scroll_to_position(gap[0], CONTEXT_LINES)
            left.scroll_to_position(min(target, max(0, left.edit.document().characterCount() - 1)), CONTEXT_LINES)
        finally:
            self._syncing = False
        self.current_difference = gap
        return True

    def passages(self) -> list[int]:
        """Indexes (into the panes' ranges, in the order of file A) of the passages shown on both
        sides (not trimmed to nothing, not past the text shown)."""
        left, right = self.left.ranges, self.right.ranges
        return [i for i, ((a0, a1), (b0, b1)) in enumerate(zip(left, right)) if a1 > a0 and b1 > b0]

    def next_passage(self, step: int = 1) -> bool:
        """Scroll both files to the next shared passage (``step`` 1) or the previous one (-1): after
        the one gone to last, else after (before) the line at the top of file A; from the last one
        back to the first.  Turns the differences view off.  False when there is none."""
        if self.currentIndex() != 1:
            return False
        shown = self.passages()
        if not shown:
            return False
        if self.current_passage in shown:
            i = shown[(shown.index(self.current_passage) + step) % len(shown)]
        else:
            left = self.left
            top = left.top_position()
            block = left.edit.document().findBlock(top)
            if step > 0:
                line_end = block.position() + block.length()
                i = next((k for k in shown if left.ranges[k][0] >= line_end), shown[0])
            else:
                i = next((k for k in reversed(shown) if left.ranges[k][0] < block.position()), shown[-1])
        self.go_to_passage(i)
        return True

    def go_to_passage(self, i: int) -> None:
        """Make passage ``i`` the current one: highlighted more strongly on both sides, each side
        scrolled to it (a few lines of context above)."""
        self.set_differences(False)
        self.current_passage = i
        page = self.currentWidget()
        if page is not None and page.layout() is not None:
            page.layout().activate()  # (lines are counted at the panes' widths: see scroll_to_first_match)
        self._syncing = True
        try:
            for pane in (self.left, self.right):
                pane.set_current(i)
                pane.scroll_to_position(pane.ranges[i][0], CONTEXT_LINES)
        finally:
            self._syncing = False
        self._update_passage_label()

    def _update_passage_label(self) -> None:
        shown = self.passages()
        for w in (self.prev_passage_button, self.next_passage_button):
            w.setEnabled(bool(shown))
        if not shown:
            self.passage_label.setText(self.tr("No shared passage") if self.currentIndex() == 1 else "")
        elif self.current_passage in shown:
            # (No length here: the highlight spans every matching window, the list's "longest passage" the
            # stored fingerprints' reach; two numbers for one passage would read as a contradiction.)
            self.passage_label.setText(self.tr("Passage {0} of {1}").format(shown.index(self.current_passage) + 1,
                                                                            len(shown)))
        else:
            self.passage_label.setText(self.tr("{0} shared passages").format(len(shown)) if len(shown) > 1
                                       else self.tr("1 shared passage"))

    def scroll_to_first_match(self) -> None:
        """Scroll each side to its first matching passage (a few lines of context above it), or to
        the top without one: a shared passage deep in a file is on screen at once, on both sides."""
        page = self.currentWidget()
        if page is not None and page.layout() is not None:
            # Lines are counted at the panes' widths: lay them out now (the first time the page
            # shows, it has not been), or the line scrolled to is another one once it is.
            page.layout().activate()
        self._syncing = True  # each side to its own passage, not one following the other
        try:
            for pane in (self.left, self.right):
                if pane.ranges:
                    pane.scroll_to_position(pane.ranges[0][0], CONTEXT_LINES)
                else:
                    pane.edit.verticalScrollBar().setValue(0)
        finally:
            self._syncing = False

    def closest_text(self, alone: Any, row_pair: Any, row_similarity: float | None, path: str) -> str:
        """The summary when the reference is selected: the scores of its closest file ``path``, the
        list's (``row_pair``, ``row_similarity``), else those of the two files alone."""
        shown = row_pair if row_pair is not None else alone
        listed = row_similarity is not None and not math.isnan(row_similarity)
        name = os.path.basename(path) or path
        text = self.tr(
            "The reference is selected. Closest file of its group: {name} — {kind}, {best:.1f} % similar: resemblance "
            "{r:.1f} %, {cb:.1f} % of {name} is in the reference, {ca:.1f} % of the reference is in {name}."
        ).format(
            name=name,
            kind=self.tr(member_kind(shown)),
            best=shown_pct(row_similarity if listed and row_pair is not None else shown.best),
            r=shown_pct(shown.resemblance),
            ca=shown_pct(shown.containment_a),
            cb=shown_pct(shown.containment_b),
        )
        if row_pair is None:
            text += " " + self.tr("(The two files alone: the list has no score of this pair.)")
        if getattr(shown, "view", "text") == "code":
            text += " " + self.tr("Compared as program code: every name and literal is ignored.")
        return text

    def pair_text(self, alone: Any, row_pair: Any) -> str:
        """The summary of a pair of the review list: its evidence (the longest passage, the characters
        shared), then its scores, as the list has them (``row_pair``), else those of the two files alone."""
        shown = row_pair if row_pair is not None else alone
        kind = self.tr(shown.kind).capitalize()
        if shown.kind in ("exact", "content"):
            text = self.tr("{kind}: the two files share their whole text.").format(kind=kind)
        elif getattr(shown, "longest_passage", None) is not None:
            text = self.tr("{kind}: longest shared passage {n:,} characters; {s:,} characters shared.").format(
                kind=kind, n=shown.longest_passage, s=shown.shared_chars or 0)
        else:
            text = self.tr("{kind}.").format(kind=kind)
        text += " " + self.tr(
            "{best:.1f} % similar — resemblance {r:.1f} %, {ca:.1f} % of A is in B, {cb:.1f} % of B is in A."
        ).format(best=shown_pct(shown.best), r=shown_pct(shown.resemblance), ca=shown_pct(shown.containment_a),
                 cb=shown_pct(shown.containment_b))
        if getattr(shown, "view", "text") == "code":
            text += " " + self.tr("Compared as program code: every name and literal is ignored.")
        if row_pair is not None and shown_pct(row_pair.best) != shown_pct(alone.best):
            text += " " + self.tr(
                "(These two files alone: {best:.1f} %; the list discounts passages that are common across the "
                "whole index.)"
            ).format(best=shown_pct(alone.best))
        return text

    def summary_text(self, alone: Any, row_pair: Any, row_similarity: float | None) -> str:
        """The summary line: the list's scores for the pair, then compare()'s if different."""
        shown = row_pair if row_pair is not None else alone
        best = row_similarity if row_similarity is not None and not math.isnan(row_similarity) else None
        if row_pair is not None:
            text = self.tr(
                "{kind}: {best:.1f} % similar — resemblance {r:.1f} %, {cb:.1f} % of the selected file is in the "
                "reference, {ca:.1f} % of the reference is in the selected file."
            ).format(
                kind=self.tr(member_kind(shown)).capitalize(),
                best=shown_pct(best if best is not None else shown.best),
                r=shown_pct(shown.resemblance),
                ca=shown_pct(shown.containment_a),
                cb=shown_pct(shown.containment_b),
            )
        elif best is not None:
            text = self.tr("{kind}: {best:.1f} % similar.").format(
                kind=self.tr(member_kind(alone)).capitalize(), best=shown_pct(best)
            )
        else:
            text = self.tr("{kind}.").format(kind=self.tr(member_kind(alone)).capitalize())
        if row_pair is not None and getattr(row_pair, "longest_passage", None) is not None:
            text += " " + self.tr("Longest shared passage: {0:,} characters.").format(row_pair.longest_passage)
        if getattr(shown, "view", "text") == "code":
            text += " " + self.tr(
                "Compared as program code: every name and literal is ignored, so this says how much of the two "
                "programs has the same structure (a copy with renamed variables, or code of the same shape)."
            )
        listed = best if best is not None else (row_pair.best if row_pair is not None else None)
        if listed is None or shown_pct(listed) != shown_pct(alone.best):
            text += " " + self.tr(
                "(These two files alone: {best:.1f} % — resemblance {r:.1f} %; the list discounts passages that "
                "are common across the whole index.)"
            ).format(best=shown_pct(alone.best), r=shown_pct(alone.resemblance))
        return text

    def _metadata(self, info: FileInfo, pair: Any, similarity: float) -> str:
        from simscan.gui.results_model import format_size

        lines = [
            self.tr("Binary file"),
            "",
            self.tr("Path: {0}").format(info.path),
            self.tr("Size: {0} ({1:,} bytes)").format(format_size(info.size), info.size),
            self.tr("Modified: {0}").format(self._describe(info).split(" · ")[1]),
            self.tr("Identical bytes: {0}").format(self.tr("yes") if pair.exact else self.tr("no")),
            self.tr("Similarity: {0:.1f} %").format(shown_pct(similarity)),
        ]
        return "\n".join(lines)

    def _sync(self, src: PreviewPane, dst: PreviewPane, src_is_a: bool) -> None:
        if self._syncing or self.currentIndex() != 1:
            return
        self._syncing = True
        try:
            pos = src.top_position()
            if src.ranges and dst.ranges:
                i = bisect.bisect_right(src.starts, pos) - 1
                if i >= 0 and pos < src.ranges[i][1] and i < len(dst.ranges):
                    # Inside a matching passage: the same offset into its partner.
                    target = dst.ranges[i][0] + (pos - src.ranges[i][0])
                    dst.scroll_to_position(min(target, dst.ranges[i][1]))
                    return
                j = i + 1
                if j < len(src.ranges) and j < len(dst.ranges):
                    # Before the next passage: keep the same distance to its partner.
                    dst.scroll_to_position(max(0, dst.ranges[j][0] - (src.ranges[j][0] - pos)))
                    return
            sb, db = src.edit.verticalScrollBar(), dst.edit.verticalScrollBar()
            if sb.maximum() > 0:
                db.setValue(round(sb.value() / sb.maximum() * db.maximum()))
        finally:
            self._syncing = False
