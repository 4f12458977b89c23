"""The review side of the window (issue 16): the *Pairs* tab beside the groups -- every listed pair
ranked by evidence (``review``) --, the preview of the selected pair with its passages, the "next
passage" keys, the minimum passage setting beside the similarity threshold, and the pairs' export.

A mixin of :class:`~simscan.gui.mainwindow.MainWindow`: it uses the window's widgets, models and job
runner, and runs nothing slow itself (the core is called from ``jobs`` in workers)."""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtCore import QItemSelectionModel, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QMenu, QSpinBox, QTreeView, QVBoxLayout, QWidget

from simscan.gui import jobs
from simscan.gui.preview import FileInfo
from simscan.gui.results_model import KIND_FILTERS
from simscan.gui.review import (
    COL_A,
    COL_B,
    COL_KIND,
    COL_LONGEST,
    COL_SHARED,
    COL_SIMILARITY,
    COL_VIEW,
    PairsModel,
    ReviewRows,
)
from simscan.gui.widgets import SimilarityBarDelegate, paint_placeholder
from simscan.similarity.evidence import DEFAULT_MIN_PASSAGE

#: Settle time (ms) of the minimum passage box before the pairs are searched again (arrow clicks
#: in a row are one search).
MIN_PASSAGE_DELAY_MS = 400
#: Largest minimum passage the box offers (characters): ten pages of text.
MAX_MIN_PASSAGE = 100_000
#: Index of the Pairs tab in ``results_tabs``.
PAIRS_TAB = 1


class PairsView(QTreeView):
    """The flat list of pairs, with a placeholder saying why it is empty."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.placeholder: Any = str

    def paintEvent(self, event: Any) -> None:
        super().paintEvent(event)
        paint_placeholder(self, self.placeholder, 24)


class ReviewMixin:
    """Part of :class:`~simscan.gui.mainwindow.MainWindow` (see the module)."""

    # ------------------------------------------------------------------ construction
    def _build_min_passage(self) -> QSpinBox:
        """The minimum passage beside the similarity threshold: a pair sharing a passage that long
        is listed whatever its share (``SimilarityParams.min_passage``; 0: by share only)."""
        tr = self.tr
        spin = QSpinBox()
        spin.setRange(0, MAX_MIN_PASSAGE)
        spin.setSingleStep(50)
        spin.setValue(DEFAULT_MIN_PASSAGE)
        spin.setSuffix(tr(" chars"))
        spin.setSpecialValueText(tr("off"))
        spin.setKeyboardTracking(False)  # (typing "250" is one search, not three)
        spin.setAccelerated(True)
        spin.setToolTip(tr("Also list two files that share a passage at least this long (characters), whatever "
                           "their similarity: a paragraph copied into a long essay is a small share of it. Off: by "
                           "similarity only. Changing it searches the pairs again."))
        self._min_passage_timer = QTimer(self)
        self._min_passage_timer.setSingleShot(True)
        self._min_passage_timer.setInterval(MIN_PASSAGE_DELAY_MS)
        self._min_passage_timer.timeout.connect(self._apply_min_passage)
        spin.valueChanged.connect(lambda _v: self._min_passage_timer.start())
        self.min_passage_spin = spin
        return spin

    def _build_review_tab(self) -> QWidget:
        """The Pairs tab: the pairs ranked by evidence, and a line saying what the list holds."""
        tr = self.tr
        self.pairs_model = PairsModel(self)
        view = PairsView()
        view.setModel(self.pairs_model)
        view.setRootIsDecorated(False)
        view.setUniformRowHeights(True)
        view.setAlternatingRowColors(True)
        view.setSortingEnabled(True)
        view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setTextElideMode(Qt.TextElideMode.ElideLeft)  # (the file name at the end stays)
        view.setItemDelegateForColumn(COL_SIMILARITY, SimilarityBarDelegate(view))
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(self._pairs_context_menu)
        view.placeholder = self._pairs_placeholder
        hdr = view.header()
        hdr.setStretchLastSection(False)
        fm = view.fontMetrics()
        for col in (COL_A, COL_B):
            hdr.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        for col, text in ((COL_LONGEST, "Longest (chars)"), (COL_SHARED, "Shared (chars)"),
                          (COL_SIMILARITY, " 100.0 % "), (COL_KIND, "contained"), (COL_VIEW, "code")):
            hdr.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            hdr.resizeSection(col, fm.horizontalAdvance(tr(text)) + 28)
        # The ranking (evidence: longest passage, then characters shared, then share) is the sort by
        # the longest passage, descending.
        view.sortByColumn(COL_LONGEST, Qt.SortOrder.DescendingOrder)
        view.selectionModel().currentRowChanged.connect(lambda _cur, _prev: self._on_pair_changed())
        self.pairs_view = view
        self._pair_timer = QTimer(self)
        self._pair_timer.setSingleShot(True)
        self._pair_timer.setInterval(60)
        self._pair_timer.timeout.connect(self._preview_pair)
        self.pairs_summary = QLabel()
        self.pairs_summary.setTextFormat(Qt.TextFormat.PlainText)
        self.pairs_summary.setToolTip(tr(
            "Pairs are ranked by their evidence: the longest passage the two files share, then the characters "
            "their shared passages cover, then their similarity. A copy shares its whole text. A file with copies "
            "is listed with each of them. Click a column to sort by it."))
        box = QWidget()
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(view, 1)
        lay.addWidget(self.pairs_summary)
        return box

    # ------------------------------------------------------------------ state
    @property
    def min_passage(self) -> int:
        """Characters of a shared passage that lists a pair whatever its share (0: by share only)."""
        return self.min_passage_spin.value()

    @property
    def reviewing(self) -> bool:
        """The Pairs tab is the one shown."""
        return self.results_tabs.currentIndex() == PAIRS_TAB

    def _apply_min_passage(self) -> None:
        """Search the pairs again with the new minimum passage (remembered)."""
        self.settings.setValue("results/min_passage", self.min_passage)
        res = self.results
        if res is None or res.min_passage != self.min_passage:
            self.load_results()

    def _set_review(self, rows: ReviewRows | None) -> None:
        """Swap in new pairs, keeping the selected pair when it is still listed."""
        current = self._current_pair_ids()
        self.pairs_model.set_rows(rows if rows is not None else ReviewRows.empty(self.threshold, self.min_passage))
        self._update_pairs_summary()
        if not (current is not None and self.select_pair(*current)) and self.reviewing:
            self._prompt_for_pair()
        self.pairsLoaded.emit()

    def _prompt_for_pair(self) -> None:
        """The preview of the Pairs tab with no pair selected."""
        self._previewed = None
        self.preview.show_message(self.tr("Select a pair to see its shared passages."))

    def _review_rebuild(self) -> None:
        """The pairs at the threshold and scope now, from the results in memory (a worker), unless
        the list holds them already."""
        res = self.results
        if res is None or res.files is None:
            if self.pairs_model.rows.n:
                self._set_review(None)
            return
        threshold, scope = self.threshold, self.scope()
        rows = self.pairs_model.rows
        if rows.files is res.files and rows.key == (threshold, scope) and rows.min_passage == res.min_passage:
            return
        files, pairs, min_passage = res.files, res.pairs, res.min_passage

        def finished(new: ReviewRows) -> None:
            if self.results is res:  # not if a scan, reload or trash replaced the results meanwhile
                self._set_review(new)

        self.runner.start("review", lambda _p, _c: jobs.review(files, pairs, threshold, min_passage, scope),
                          finished=finished, failed=self._on_job_failed)

    def _filter_pairs(self) -> None:
        """The Show box and the search apply to the pairs too (either file's path)."""
        current = self._current_pair_ids()
        self.pairs_model.set_filters(KIND_FILTERS[self.kind_combo.currentData()], self.search_edit.text())
        self._update_pairs_summary()
        if (current is None or not self.select_pair(*current)) and self.reviewing:
            self._prompt_for_pair()

    def _update_pairs_summary(self) -> None:
        rows = self.pairs_model.rows
        n, shown = rows.n, self.pairs_model.shown_count
        text = (self.tr("Shown: {0:,} of {1:,} pairs").format(shown, n) if self.pairs_model.active
                else self.tr("{0:,} pairs").format(n) if n != 1 else self.tr("1 pair"))
        if rows.by_passage:
            text += " · " + self.tr("{0:,} for a shared passage of ≥ {1:,} characters alone").format(
                rows.by_passage, rows.min_passage)
        if rows.prefix:
            text += " · " + self.tr("in {0}").format(rows.prefix)
        if rows.left_out:
            text += " · " + self.tr("{0:,} pairs of copies with other files left out").format(rows.left_out)
        self.pairs_summary.setText(text)

    def _pairs_placeholder(self) -> str:
        if self.pairs_model.rows.n:
            return self.tr("No pair matches the Show filter or the search.")
        if self.results is None or not self.results.n_files:
            return self._placeholder_text()
        if self.min_passage:
            return self.tr("No two files are {0} % similar or share a passage of {1:,} characters.").format(
                round(self.threshold), self.min_passage)
        return self.tr("No two files are {0} % similar.").format(round(self.threshold))

    def _on_results_tab_changed(self, _index: int) -> None:
        """Each tab previews its own selection: the selected file beside its reference, or the
        selected pair."""
        self._update_actions()
        self._previewed = None
        if self.reviewing:
            if self.pairs_view.currentIndex().isValid():
                self._preview_pair()
            else:
                self._prompt_for_pair()
        elif self.view.currentIndex().isValid():
            self._preview_current()
        else:
            self.preview.show_message(self.tr("Select a file to compare it with its group's reference."))

    # ------------------------------------------------------------------ selection and preview
    def _current_row(self) -> int:
        """The ReviewRows row of the current pair, -1 when none."""
        idx = self.pairs_view.currentIndex()
        return self.pairs_model.row_at(idx.row()) if idx.isValid() else -1

    def _current_pair_ids(self) -> tuple[int, int] | None:
        k = self._current_row()
        if k < 0:
            return None
        rows = self.pairs_model.rows
        return int(rows.files.ids[rows.a[k]]), int(rows.files.ids[rows.b[k]])

    def select_pair(self, a_id: int, b_id: int) -> bool:
        """Make the pair of these two file ids current (either order); False when not shown."""
        k = self.pairs_model.find(a_id, b_id)
        return k >= 0 and self.select_pair_row(self.pairs_model.view_row_of(k))

    def select_pair_row(self, row: int) -> bool:
        """Make view row ``row`` of the pairs list current (fetching up to it)."""
        if not 0 <= row < self.pairs_model.shown_count:
            return False
        self.pairs_model.ensure_loaded(row)
        idx = self.pairs_model.index(row, 0)
        self.pairs_view.selectionModel().setCurrentIndex(
            idx, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.pairs_view.scrollTo(idx)
        return True

    def _on_pair_changed(self) -> None:
        self._update_actions()
        self._pair_timer.start()  # (rows passed over with the keyboard are not compared)

    def _file_info(self, r: int, role: str) -> FileInfo:
        f = self.pairs_model.rows.files
        return FileInfo(f.paths[r], int(f.size[r]), int(f.mtime_ns[r]), f.encoding[r], bool(f.is_text[r]), role)

    def _preview_pair(self) -> None:
        """Compare the current pair in a worker; the preview then shows its longest passage."""
        k = self._current_row()
        if k < 0 or not self.reviewing:
            return
        rows = self.pairs_model.rows
        pair = rows.pair(k)
        key = ("pair", pair.a_path, pair.b_path, pair.best, pair.longest_passage)
        if key == self._previewed and self.preview.currentIndex() == 1:
            return  # (the same pair, e.g. after a regroup: the preview stays where the person left it)
        self._previewed = key
        req = jobs.PreviewRequest(
            pair.a_path, pair.b_path, self._file_info(int(rows.a[k]), "a"), self._file_info(int(rows.b[k]), "b"), pair,
            pair.best, self.results.code_view if self.results is not None else self.code_view,
            self.results.ignore if self.results is not None else (), pair_mode=True,
        )
        self.preview.show_message(self.tr("Comparing…"))
        self.runner.start("preview", lambda p, c: jobs.compare_files(req, p, c), finished=self._on_preview,
                          failed=self._on_preview_failed)

    # ------------------------------------------------------------------ actions on a pair
    def _pairs_context_menu(self, pos: Any) -> None:
        idx = self.pairs_view.indexAt(pos)
        if not idx.isValid():
            return
        k = self.pairs_model.row_at(idx.row())
        rows = self.pairs_model.rows
        a, b = rows.path_a(k), rows.path_b(k)
        menu = QMenu(self)
        menu.addAction(self.tr("Open A: {0}").format(os.path.basename(a)), lambda: self.open_path(a))
        menu.addAction(self.tr("Open B: {0}").format(os.path.basename(b)), lambda: self.open_path(b))
        menu.addSeparator()
        menu.addAction(self.tr("Copy Both Paths"), lambda: QGuiApplication.clipboard().setText(f"{a}\n{b}"))
        menu.exec(self.pairs_view.viewport().mapToGlobal(pos))

    def _restore_review_settings(self) -> None:
        s = self.settings
        self.min_passage_spin.blockSignals(True)  # (restoring is not a change: the load reads it)
        self.min_passage_spin.setValue(s.value("results/min_passage", DEFAULT_MIN_PASSAGE, int))
        self.min_passage_spin.blockSignals(False)
        self.results_tabs.setCurrentIndex(s.value("window/results_tab", 0, int))
