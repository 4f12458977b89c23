"""The folders panel: the folders to scan (reference folders ticked), the scan filters, the two
pictures; and what the window does with the list: folders named at start, results that follow the
listed folders (removing one, with Undo; File > Forget Results), drops.

A mixin of :class:`~simscan.gui.mainwindow.MainWindow`: it uses the window's widgets, models and job
runner, and runs nothing slow itself (the core is called from ``jobs`` in workers)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QDragEnterEvent,
    QDropEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QStyle,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from simscan.gui import dialogs, jobs
from simscan.gui.chart import FolderSpaceChart, SimilarityHistogram
from simscan.gui.folders import Folder, FolderModel
from simscan.gui.widgets import PlaceholderListView


class FoldersMixin:
    """Part of :class:`~simscan.gui.mainwindow.MainWindow` (see the module)."""

    def _build_folders_panel(self) -> QWidget:
        """The left side: the folders to scan, the scan filters, the pictures (similarity histogram,
        reclaimable space by folder)."""
        tr = self.tr
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(6, 6, 6, 6)
        title = QLabel(tr("Folders to scan"))
        f = title.font()
        f.setBold(True)
        title.setFont(f)
        ll.addWidget(title)
        self.folders = FolderModel(self)
        self.folder_view = PlaceholderListView(tr("Drop folders here, or click Add."))
        self.folder_view.setModel(self.folders)
        self.folder_view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.folder_view.setDragDropMode(QAbstractItemView.DragDropMode.DropOnly)
        self.folder_view.setAcceptDrops(True)
        self.folder_view.setTextElideMode(Qt.TextElideMode.ElideLeft)
        self.folder_view.setToolTip(tr("Tick a folder to make it a reference folder: its files are the originals."))
        ll.addWidget(self.folder_view, 1)
        self.folder_view.setMinimumHeight(90)
        row = QHBoxLayout()
        b_add = QPushButton(self.style().standardIcon(QStyle.StandardPixmap.SP_DirOpenIcon), tr("Add…"))
        b_add.clicked.connect(self.add_folder_dialog)
        self.b_remove = QPushButton(tr("Remove"))
        self.b_remove.clicked.connect(self.remove_selected_folders)
        row.addWidget(b_add)
        row.addWidget(self.b_remove)
        row.addStretch(1)
        ll.addLayout(row)
        hint = QLabel(tr("☑ = reference folder (its files are kept as the originals)"))
        hint.setWordWrap(True)
        hint.setForegroundRole(hint.foregroundRole().PlaceholderText)
        ll.addWidget(hint)

        box = QGroupBox(tr("Filters"))
        form = QFormLayout(box)
        self.exclude_edit = QLineEdit()
        self.exclude_edit.setPlaceholderText(tr("e.g. *.tmp; .git; node_modules"))
        self.exclude_edit.setToolTip(tr("Names or paths to skip, as glob patterns separated by ';'"))
        self.exclude_edit.setClearButtonEnabled(True)
        self.hidden_check = QCheckBox(tr("Include hidden files"))
        self.min_size_spin = QSpinBox()
        self.min_size_spin.setRange(0, 10_000_000)
        self.min_size_spin.setSuffix(tr(" kB"))
        self.min_size_spin.setToolTip(tr("Skip files smaller than this (0: scan every file)"))
        form.addRow(tr("Exclude:"), self.exclude_edit)
        form.addRow("", self.hidden_check)
        form.addRow(tr("Minimum size:"), self.min_size_spin)
        ll.addWidget(box)


        self.chart = SimilarityHistogram()
        self.chart.thresholdPicked.connect(lambda v: self.threshold_slider.setValue(int(v)))
        self.folder_chart = FolderSpaceChart()
        self.folder_chart.folderPicked.connect(lambda f: self.search_edit.setText(os.path.join(f, "")))
        self.charts = QTabWidget()
        self.charts.setDocumentMode(True)
        self.charts.addTab(self.chart, tr("Similarity"))
        self.charts.addTab(self.folder_chart, tr("Folders"))
        ll.addWidget(self.charts, 1)
        return left

    def _use_named_folders(self, roots: Sequence[str]) -> None:
        """Folders named on the command line are this session's list: a person who runs
        ``simscan-gui FOLDER`` means that folder, not every folder scanned before too.  The
        remembered ones are set aside (a remembered folder named again keeps its reference tick),
        still remembered for the next session, and back with one click (the banner a scan shows)."""
        before = self.folders.folders
        self.folders.set_folders([])
        self.folders.add(roots)
        named = {f.path for f in self.folders.folders}
        refs = {f.path for f in before if f.reference}
        self.folders.set_folders(Folder(f.path, f.path in refs) for f in self.folders.folders)
        self._set_aside = [f for f in before if f.path not in named]

    def _set_aside_text(self) -> str | None:
        """The banner about remembered folders this session leaves out; None once restored."""
        have = {f.path for f in self.folders.folders}
        left = [f.path for f in self._set_aside if f.path not in have]
        if not left:
            return None
        return self.tr("Only the folders named when simscan was started are scanned; {0} remembered folder(s) are "
                       "left out this time: {1}.").format(len(left), ", ".join(left[:3]) + (" …" if len(left) > 3
                                                                                       else ""))

    def restore_folders(self) -> None:
        """Put the remembered folders set aside for this session back in the list."""
        have = {f.path for f in self.folders.folders}
        self.folders.set_folders(self.folders.folders + [f for f in self._set_aside if f.path not in have])
        self._set_aside = []

    def add_folder_dialog(self) -> None:
        d = QFileDialog.getExistingDirectory(self, self.tr("Add a folder to scan"), os.path.expanduser("~"))
        if d:
            self.folders.add([d])

    def remove_selected_folders(self) -> None:
        """Remove the selected folders from the list: their results leave the list at once (the index
        keeps what it knows, so Undo or adding them again reads nothing; File > Forget Results…
        forgets it)."""
        rows = sorted(i.row() for i in self.folder_view.selectionModel().selectedRows())
        listed = self.folders.folders
        removed = [listed[r] for r in rows if 0 <= r < len(listed)]
        if not removed:
            return
        self.folders.remove_rows(rows)
        self._removed_folders = removed
        names = ", ".join(f.path for f in removed[:3]) + (" …" if len(removed) > 3 else "")
        text = self.tr("Removed {0} from the list: its results are no longer shown. The files and the index are "
                       "untouched (File > Forget Results… forgets what the index holds about them).").format(names)
        self.show_message(text, "info", self.tr("Undo"), self.undo_remove_folders,
                          refresh=lambda: text if self._removed_folders else None)

    def undo_remove_folders(self) -> None:
        """Put the folders removed last back in the list (their results come back without a scan)."""
        have = {f.path for f in self.folders.folders}
        back = [f for f in self._removed_folders if f.path not in have]
        self._removed_folders = []
        if back:
            self.folders.set_folders(self.folders.folders + back)

    def forget_results(self) -> None:
        """File > Forget Results…: forget what the index holds about the files outside the listed
        folders (after a confirmation; the files are not touched)."""
        roots = [f.path for f in self.folders.folders]
        res = self.results
        if res is None or res.files is None:
            return
        outside = len(res.files.paths) - int(jobs.Scope(tuple(roots)).mask(res.files).sum()) if roots else len(
            res.files.paths)
        if outside == 0:
            self.show_message(self.tr("The index holds nothing outside the listed folders."), "info")
            return
        where = self.tr("outside the listed folders") if roots else self.tr("(no folder is listed: every file)")
        if not dialogs.confirm(
            self, self.tr("Forget Results"),
            self.tr("Forget what the index knows about {0:,} files {1}?").format(outside, where),
            self.tr("Their groups leave the results for good. The files themselves are not touched; scanning their "
                    "folders again reads them again."),
            accept=self.tr("Forget"),
        ):
            return
        path = self.index_path
        self.runner.cancel("load")
        self.runner.start("trash", lambda p, c: jobs.forget_outside(path, roots), finished=self._on_forgotten,
                          failed=self._on_job_failed)
        self._set_busy(self.tr("Forgetting…"))

    def _on_forgotten(self, n: int) -> None:
        self._set_idle(self.tr("Forgot {0:,} files outside the listed folders.").format(n))
        self.load_results()

    def _on_folders_changed(self) -> None:
        self._update_actions()
        refs = tuple(self.reference_roots())
        self.model.protected_roots = refs
        self.message.recheck()  # (after protected_roots: a warning about reference folders reads them)
        roots = tuple(f.path for f in self.folders.folders)
        if refs != self._last_refs or roots != self._last_roots:
            # Reference folders decide which file of a group is kept, and the results follow the listed
            # folders: regroup, no scan needed.
            self._last_refs = refs
            self._last_roots = roots
            self._scoped = True
            if self.results is not None:
                self._regroup_timer.start()

    def reference_roots(self) -> list[str]:
        return [f.path for f in self.folders.folders if f.reference]

    def scope(self) -> jobs.Scope:
        """The files the results show: those under the listed folders (all indexed files while no
        folder was ever listed), but the hidden ones."""
        roots = tuple(f.path for f in self.folders.folders)
        return jobs.Scope(roots if self._scoped else None, frozenset(self.hidden))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if FolderModel.folders_in(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = FolderModel.folders_in(event.mimeData())
        if paths:
            self.folders.add(paths)
            event.acceptProposedAction()
