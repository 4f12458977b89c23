"""The main window: where to scan, scan progress, results, preview, actions.

Threading: every call into the core runs as a :class:`~simscan.gui.workers.Job` (scan, load,
regroup, compare, trash); this module only builds requests, starts jobs and swaps in their
results.  Never call a widget from a job function.  Results older than the newest job of
their kind are dropped (``JobRunner`` slots), so a slow preview never overwrites a newer one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QItemSelectionModel, QSettings, QSize, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDesktopServices,
    QGuiApplication,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QProgressBar,
    QSlider,
    QSplitter,
    QStyle,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from simscan.errors import SimscanError
from simscan.gui import dialogs, jobs
from simscan.gui.export import PAIR_WRITERS, WRITERS, Shown
from simscan.gui.folders import Folder
from simscan.gui.preview import PreviewWidget
from simscan.gui.results_model import (
    COL_COPIES,
    COL_ENCODING,
    COL_FOLDER,
    COL_KIND,
    COL_MODIFIED,
    COL_NAME,
    COL_SIMILARITY,
    COL_SIZE,
    FETCH_BATCH,
    KIND_FILTERS,
    IsGroupRole,
    ResultsModel,
    ResultsProxy,
    format_size,
)
from simscan.gui.snapshot import Snapshot
from simscan.gui.widgets import MessageBar, ResultsView, SimilarityBarDelegate
from simscan.gui.window_actions import ActionsMixin
from simscan.gui.window_folders import FoldersMixin
from simscan.gui.window_preview import PreviewMixin
from simscan.gui.window_review import ReviewMixin
from simscan.gui.workers import JobRunner
from simscan.index import IndexCorrupt, IndexDamaged, IndexError_, IndexLocked, NotAnIndex, default_index_path
from simscan.progress import Progress
from simscan.scanner import ScanRequest
from simscan.similarity.keep import DEFAULT_KEEP

ORGANIZATION = "simscan"
APPLICATION = "simscan"
#: Settle time (ms) of the threshold slider before regrouping: moves faster than this are
#: merged into one regroup.  The histogram and the label follow every move at once.
REGROUP_DELAY_MS = 120
#: Settle time (ms) of the current row before its preview is computed.
PREVIEW_DELAY_MS = 60
#: Job slots (JobRunner) of the work shown in the status bar with the progress bar (started with
#: MainWindow._set_busy): while one runs, the bar stays.
PROGRESS_SLOTS = ("scan", "load", "trash", "verify", "rebuild")
#: Of those, the jobs during which marks and files must not be acted on (scan again, move to the trash,
#: mark copies, change what the pairs are found with): a scan and a trash change the index and the
#: files; Ctrl+M's reading ("verify") has not set all its marks yet; a rebuild replaces the index.  A load
#: does not block them: a scan or a trash cancels the load it replaces.
BLOCKING_SLOTS = ("scan", "trash", "verify", "rebuild")
#: Groups holding a match that a search opens (more would lay out thousands of rows for a broad
#: search such as a folder's path; the rest open with a click).
REVEAL_GROUPS = 50


def make_settings() -> QSettings:
    """simscan's settings, always in an INI file (tests point it elsewhere with
    ``QSettings.setPath(IniFormat, UserScope, tmp)``)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION)


def open_url(url: QUrl) -> bool:
    """Open with the desktop's default program (replaced in tests)."""
    return QDesktopServices.openUrl(url)


def show_in_file_manager(path: str) -> bool:
    """Ask the desktop's file manager to open the folder with ``path`` selected (the
    freedesktop ``org.freedesktop.FileManager1.ShowItems`` D-Bus call: Files, Dolphin, Nemo,
    Thunar…).  False when there is no session bus or no such service; the caller then opens
    the folder instead."""
    try:
        from PySide6.QtDBus import QDBusConnection, QDBusMessage
    except ImportError:
        return False
    bus = QDBusConnection.sessionBus()
    if not bus.isConnected():
        return False
    msg = QDBusMessage.createMethodCall(
        "org.freedesktop.FileManager1", "/org/freedesktop/FileManager1", "org.freedesktop.FileManager1", "ShowItems"
    )
    msg.setArguments([[QUrl.fromLocalFile(path).toString()], ""])
    reply = bus.call(msg, timeout=2000)
    return reply.type() != QDBusMessage.MessageType.ErrorMessage


PHASES = {
    "walk": "Finding files",
    "read": "Reading",
    "write": "Updating the index",
    "done": "Finishing",
    "load": "Opening the index",
    "exact": "Finding exact copies",
    "pairs": "Comparing",
    "score": "Scoring pairs",
    "code:pairs": "Comparing program code",
    "code:score": "Scoring program code",
    "passages": "Finding shared passages",
    "code:passages": "Finding shared passages of code",
    "groups": "Grouping",
    "trash": "Moving to the trash",
    "verify": "Checking the copies",
}
#: Phases whose counts are files; the others count other units (pairs, postings): a percentage.
FILE_PHASES = {"walk", "read", "done", "trash", "verify"}


def describe_progress(p: Progress, tr: Any = lambda s: s) -> str:
    """One line for the status bar: phase, files, MB, rate, ETA."""
    parts = [tr(PHASES.get(p.phase, p.phase.capitalize()))]
    if p.phase not in FILE_PHASES:
        if p.files_total:
            parts.append(f"{100 * p.files_done // max(1, p.files_total)} %")
        return " · ".join(parts)
    if p.files_total:
        parts.append(tr("{0:,} of {1:,} files").format(p.files_done, p.files_total))
    elif p.files_done:
        parts.append(tr("{0:,} files").format(p.files_done))
    if p.bytes_total:
        parts.append(tr("{0} of {1}").format(format_size(p.bytes_done), format_size(p.bytes_total)))
    elif p.bytes_done:
        parts.append(format_size(p.bytes_done))
    if p.rate_bytes_s > 0 and p.phase == "read":
        parts.append(tr("{0}/s").format(format_size(int(p.rate_bytes_s))))
    if p.eta_s is not None and p.phase == "read":
        s = round(p.eta_s)
        parts.append(tr("about {0} left").format(f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"))
    return " · ".join(parts)


class MainWindow(FoldersMixin, PreviewMixin, ActionsMixin, ReviewMixin, QMainWindow):
    """The simscan window.  Signals let tests (and the screenshot script) wait for work."""

    resultsLoaded = Signal()  # a snapshot was swapped in
    pairsLoaded = Signal()  # the pairs of the review list were swapped in
    scanFinished = Signal(object)  # ScanResult, or None when cancelled
    previewShown = Signal()
    trashFinished = Signal(object)  # jobs.TrashOutcome
    marksVerified = Signal()  # Ctrl+M's marks are all set (content copies read beside their references)
    errorShown = Signal(str)

    def __init__(
        self,
        index_path: Path | str | None = None,
        roots: Sequence[str] = (),
        settings: QSettings | None = None,
        autoload: bool = True,
    ) -> None:
        super().__init__()
        self.settings = settings if settings is not None else make_settings()
        self.runner = JobRunner(self)
        self.results: jobs.Results | None = None
        self.preferred_refs: list[int] = []
        self._closing = False
        self._load_note = ""
        self._last_refs: tuple[str, ...] = ()
        self._last_roots: tuple[str, ...] = ()
        self._loads = 0  # results swapped in so far: an error of a load before them is out of date
        #: The keep rules (which file of each copy set is kept, which leads a group), per index.
        self.keep_rules = DEFAULT_KEEP
        #: Files hidden from the results (Hide from Results), per index, by path.
        self.hidden: set[str] = set()
        #: Whether the results follow the listed folders: from the first change of the list on (a window
        #: opened on an index with no folder listed shows everything it holds).
        self._scoped = False
        self._load_error = ""  # what the last load (or scan) that failed said, until results load
        self._previewed: tuple[Any, ...] | None = None  # what the preview shows (files, scores)
        # The desktop adds the application's name ("Similar files — simscan"): not twice.
        self.setWindowTitle(self.tr("Similar files"))
        self.setAcceptDrops(True)
        # Which index: the one asked for, else $SIMSCAN_INDEX, else the last one used, else the default.
        last = self.settings.value("index/last", "", str)
        if index_path:
            self.index_path = Path(index_path)
        elif os.environ.get("SIMSCAN_INDEX") or not last:
            self.index_path = default_index_path()
        else:
            self.index_path = Path(last)

        self._build_actions()
        self._build_ui()
        #: Remembered folders left out of this session's list because folders were named on the
        #: command line (``simscan-gui FOLDER``); kept in the settings, back with "Restore Folders".
        self._set_aside: list[Folder] = []
        self._removed_folders: list[Folder] = []
        self._restore_settings()
        if roots:
            self._use_named_folders(roots)
        self._last_roots = tuple(f.path for f in self.folders.folders)
        # The listed folders are those of the index used last: another index (named, or from
        # $SIMSCAN_INDEX) shows everything it holds, as File > Open Index… does, unless folders are
        # named too; the first change of the list scopes the results to it.
        other_index = bool(last) and str(self.index_path) != last
        listed = bool(self._last_roots) or self.settings.value("scan/scoped", False, bool)  # (the last one removed)
        self._scoped = listed and (bool(roots) or not other_index)
        self._restore_per_index()
        self._update_actions()
        if autoload:
            QTimer.singleShot(0, self.load_results)

    # ------------------------------------------------------------------ construction
    def _action(
        self, text: str, slot: Any, shortcut: Any = None, icon: QStyle.StandardPixmap | None = None, tip: str = ""
    ) -> QAction:
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if icon is not None:
            a.setIcon(self.style().standardIcon(icon))
        if tip:
            a.setToolTip(tip)
            a.setStatusTip(tip)
        a.triggered.connect(slot)
        self.addAction(a)
        return a

    def _build_actions(self) -> None:
        sp = QStyle.StandardPixmap
        tr = self.tr
        self.act_add = self._action(tr("&Add Folder…"), self.add_folder_dialog, "Ctrl+O", sp.SP_DirOpenIcon,
                                    tr("Add a folder to scan"))
        self.act_scan = self._action(tr("&Scan"), self.start_scan, "Ctrl+R", sp.SP_BrowserReload,
                                     tr("Scan the folders (only what changed is read again)"))
        self.act_cancel = self._action(tr("&Cancel"), self.cancel_work, "Esc", sp.SP_BrowserStop,
                                       tr("Stop the scan; what was read is kept"))
        self.act_open = self._action(tr("&Open"), self.open_current, None, sp.SP_FileIcon,
                                     tr("Open the file with its default program (Enter)"))
        self.act_reveal = self._action(tr("Show in &Folder"), self.reveal_current, "Ctrl+Shift+O", sp.SP_DirIcon,
                                       tr("Open the folder holding the file"))
        self.act_copy = self._action(tr("&Copy Path"), self.copy_path, QKeySequence.StandardKey.Copy, None,
                                     tr("Copy the selected files' paths"))
        self.act_mark = self._action(tr("&Mark / Unmark"), self.toggle_mark_selection, None, None,
                                     tr("Mark the selected files for the trash (Space)"))
        self.act_mark_dupes = self._action(tr("Mark Extra &Copies"), self.mark_all_but_reference, "Ctrl+M",
                                           sp.SP_DialogApplyButton,
                                           tr("Mark every copy but the one kept of each set of copies (same bytes, or "
                                              "the same text in another encoding or line ending) in the shown groups, "
                                              "by the keep rules; never a file in a reference folder. Mark edited "
                                              "versions and excerpts by hand (Space)."))
        self.act_unmark_all = self._action(tr("&Unmark All"), self.unmark_all, "Ctrl+Shift+M", None,
                                           tr("Clear all marks"))
        self.act_invert = self._action(tr("&Invert Marks"), self.invert_marks, "Ctrl+I", None,
                                       tr("Mark the unmarked files of the shown groups and unmark the marked ones "
                                          "(never a reference or a file in a reference folder)"))
        self.act_keep = self._action(tr("&Keep Rules…"), self.edit_keep_rules, None, None,
                                     tr("Choose which file of each set of copies is kept (and leads its group): "
                                        "the best encoding, the oldest or newest, a path…"))
        self.act_hide = self._action(tr("&Hide from Results"), self.hide_selection, "Ctrl+H", None,
                                     tr("Leave the selected files out of the results (remembered for this index)"))
        self.act_unhide = self._action(tr("Show Hidden &Files Again"), self.unhide_all, None, None,
                                       tr("Bring back the files hidden from the results"))
        self.act_next_diff = self._action(tr("&Next Difference"), lambda: self.preview.next_difference(), "F8", None,
                                          tr("Scroll the preview to the next passage the two files do not share"))
        self.act_next_passage = self._action(tr("Next &Passage"), lambda: self.preview.next_passage(1), "F7", None,
                                             tr("Scroll both files of the preview to the next passage they share"))
        self.act_prev_passage = self._action(tr("P&revious Passage"), lambda: self.preview.next_passage(-1), "Shift+F7",
                                             None,
                                             tr("Scroll both files of the preview to the previous passage they share"))
        self.act_beside = self._action(tr("Preview &Beside the List"), self.toggle_preview_beside, None, None,
                                       tr("Show the preview to the right of the list, which then has the window's "
                                          "whole height"))
        self.act_beside.setCheckable(True)
        self.act_empty = self._action(tr("&Empty Files…"), self.show_empty_files, None, None,
                                      tr("List the empty files, which groups leave out (every empty file is alike)"))
        self.act_make_ref = self._action(tr("Make Re&ference"), self.make_reference, "Ctrl+E", None,
                                         tr("Keep this file as its group's original"))
        self.act_trash = self._action(tr("Move Marked to &Trash…"), self.trash_marked, QKeySequence.StandardKey.Delete,
                                      sp.SP_TrashIcon, tr("Move the marked files to the trash (Del)"))
        self.act_export = self._action(tr("&Export Results…"), self.export_dialog, "Ctrl+S", sp.SP_DialogSaveButton,
                                       tr("Save the shown results as CSV, JSON or HTML"))
        self.act_find = self._action(tr("&Find"), self.focus_search, QKeySequence.StandardKey.Find, None,
                                     tr("Search the results by path (Ctrl+F)"))
        self.act_open_index = self._action(tr("Open &Index…"), self.open_index_dialog, None, None,
                                           tr("Use another index file"))
        self.act_forget = self._action(tr("&Forget Results…"), self.forget_results, None, None,
                                       tr("Forget what the index holds about files outside the listed folders"))
        self.act_plan = self._action(tr("Export &Plan…"), self.export_plan_dialog, "Ctrl+Shift+S", None,
                                     tr("Save the marked files, each with the file kept in its place, as a plan that "
                                        "`simscan apply` checks and applies (JSON or a shell script)"))
        # The platform's Quit key, else Ctrl+Q (Qt binds none to Quit on some platforms, e.g. Windows).
        quit_keys = QKeySequence.keyBindings(QKeySequence.StandardKey.Quit) or [QKeySequence("Ctrl+Q")]
        self.act_quit = self._action(tr("&Quit"), self.close, quit_keys[0], None)
        self.act_quit.setShortcuts(quit_keys)
        self.act_about = self._action(tr("&About simscan"), self.about, None, None)
        self.act_code_view = self._action(
            tr("Compare Program Code by &Structure"), self.toggle_code_view, None, None,
            tr("Also compare two program sources with every name and literal ignored, and list the better score "
               "(finds copies with renamed variables; also pairs sources that merely share a shape)"),
        )
        self.act_code_view.setCheckable(True)
        self.act_code_view.setChecked(True)
        self.act_ignore = self._action(
            tr("&Ignore Text of Files…"), self.choose_ignored_texts, None, None,
            tr("Text that counts nowhere, e.g. the question or template every answer repeats: answers are not "
               "similar for repeating it"),
        )
        self.act_ignore_stop = self._action(tr("Stop Ignoring &Texts"), self.stop_ignoring_texts, None, None)
        #: Files whose text counts nowhere (``SimilarityParams.ignore_values``), as the person chose them.
        self.ignored_texts: list[str] = []
        self.act_common = self._action(
            tr("Text Held by &Many Files…"), self.choose_common_cutoff, None, None,
            tr("Text held by more files than this counts nowhere, as licences and templates do; raise it when a "
               "folder holds more versions of one document than that"),
        )
        #: Text held by more files counts nowhere (``SimilarityParams.common_min_df``; --common-cutoff).
        self.common_cutoff = jobs.DEFAULT_COMMON_CUTOFF

    def _build_ui(self) -> None:
        tr = self.tr
        mb = self.menuBar()
        m = mb.addMenu(tr("&File"))
        for a in (self.act_add, self.act_scan, self.act_cancel, None, self.act_open_index, self.act_export,
                  self.act_plan, None, self.act_forget, None, self.act_quit):
            m.addSeparator() if a is None else m.addAction(a)
        m = mb.addMenu(tr("&Edit"))
        for a in (self.act_find, None, self.act_mark, self.act_mark_dupes, self.act_invert, self.act_unmark_all,
                  None, self.act_make_ref, self.act_keep, None, self.act_hide, self.act_unhide, None, self.act_trash):
            m.addSeparator() if a is None else m.addAction(a)
        m = mb.addMenu(tr("&Selection"))
        for a in (self.act_open, self.act_reveal, self.act_copy):
            m.addAction(a)
        m = mb.addMenu(tr("&View"))
        for a in (self.act_next_passage, self.act_prev_passage, self.act_next_diff, self.act_beside, None,
                  self.act_code_view, None, self.act_ignore, self.act_ignore_stop, self.act_common, None,
                  self.act_empty):
            m.addSeparator() if a is None else m.addAction(a)
        mb.addMenu(tr("&Help")).addAction(self.act_about)

        tb = QToolBar(tr("Main"))
        tb.setObjectName("main_toolbar")
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        tb.setIconSize(QSize(16, 16))
        tb.setMovable(False)
        for a in (self.act_add, self.act_scan, self.act_cancel, None, self.act_mark_dupes, self.act_trash, None,
                  self.act_export):
            tb.addSeparator() if a is None else tb.addAction(a)
        self.addToolBar(tb)

        left = self._build_folders_panel()

        # -- right: filter bar, results, preview
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(6, 6, 6, 6)
        bar = QHBoxLayout()
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText(tr("Search paths (Ctrl+F)"))
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.textChanged.connect(lambda _t: self._search_timer.start())
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(150)
        self._search_timer.timeout.connect(self._apply_filters)
        self.kind_combo = QComboBox()
        for key, label in (
            ("all", tr("All")),
            ("exact", tr("Exact copies")),
            ("similar", tr("Similar")),
            ("contained", tr("Contained")),
        ):
            self.kind_combo.addItem(label, key)
        self.kind_combo.setToolTip(tr("Show only files of this kind"))
        self.kind_combo.currentIndexChanged.connect(lambda _i: self._apply_filters())
        self.threshold_slider = QSlider(Qt.Orientation.Horizontal)
        self.threshold_slider.setRange(int(jobs.PAIR_FLOOR), 100)
        self.threshold_slider.setPageStep(5)
        # Default: the similarity layer's measured default threshold (the CLI's too).
        self.threshold_slider.setValue(int(jobs.PAIR_FLOOR))
        self.threshold_slider.setToolTip(tr("Minimum similarity of a file to its group's reference"))
        self.threshold_slider.setMinimumWidth(140)
        self.threshold_label = QLabel()
        self.threshold_label.setMinimumWidth(QLabel("≥ 100 %").sizeHint().width())
        self.threshold_slider.valueChanged.connect(self._on_threshold_moved)
        self._regroup_timer = QTimer(self)
        self._regroup_timer.setSingleShot(True)
        self._regroup_timer.setInterval(REGROUP_DELAY_MS)
        self._regroup_timer.timeout.connect(self.regroup)
        self._preview_timer = QTimer(self)
        self._preview_timer.setSingleShot(True)
        self._preview_timer.setInterval(PREVIEW_DELAY_MS)
        self._preview_timer.timeout.connect(self._preview_current)
        bar.addWidget(self.search_edit, 3)
        bar.addWidget(QLabel(tr("Show:")))
        bar.addWidget(self.kind_combo)
        bar.addSpacing(12)
        bar.addWidget(QLabel(tr("Similarity:")))
        bar.addWidget(self.threshold_slider, 1)
        bar.addWidget(self.threshold_label)
        bar.addSpacing(12)
        bar.addWidget(QLabel(tr("or passage ≥")))
        bar.addWidget(self._build_min_passage())
        rl.addLayout(bar)

        self.message = MessageBar()
        rl.addWidget(self.message)

        self.model = ResultsModel(self)
        self.proxy = ResultsProxy(self)
        self.proxy.setSourceModel(self.model)
        self.view = ResultsView()
        self.view.setModel(self.proxy)
        self.view.setUniformRowHeights(True)
        self.view.setSortingEnabled(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.view.setItemDelegateForColumn(COL_SIMILARITY, SimilarityBarDelegate(self.view))
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.view.markRequested.connect(self.toggle_mark_selection)
        self.view.openRequested.connect(self.open_current)
        self.view.doubleClicked.connect(lambda idx: self.open_current() if not idx.data(IsGroupRole) else None)
        self.view.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._on_current_changed(cur))
        self.view.selectionModel().selectionChanged.connect(lambda *_: self._update_actions())
        hdr = self.view.header()
        hdr.setStretchLastSection(False)
        hdr.setSectionResizeMode(COL_FOLDER, QHeaderView.ResizeMode.Stretch)
        fm = self.view.fontMetrics()
        # Wide enough for their longest usual text at the font in use (a fixed 110 px clipped "100.0 %").
        widths = ((COL_NAME, fm.horizontalAdvance("M" * 22)), (COL_SIMILARITY, fm.horizontalAdvance(" 100.0 % ") + 24),
                  (COL_KIND, fm.horizontalAdvance("contained (code)") + 12),
                  (COL_COPIES, fm.horizontalAdvance("copy (text)") + 16), (COL_SIZE, fm.horizontalAdvance("999.9 MB") + 16),
                  (COL_MODIFIED, fm.horizontalAdvance("2026-12-31 23:59") + 28),  # (bold on the reference)
                  (COL_ENCODING, fm.horizontalAdvance("utf-16-le") + 16))
        for col, w in widths:
            hdr.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            hdr.resizeSection(col, w)
        hdr.setSortIndicator(COL_SIZE, Qt.SortOrder.DescendingOrder)
        self._empty_text = tr("No results yet. Add folders on the left and press Scan.")
        self.view.placeholder = self._placeholder_text
        self.model.marksChanged.connect(self._update_summary)
        self.model.marksRepaint.connect(self.view.viewport().update)

        self.preview = PreviewWidget()
        self.summary_label = QLabel()
        self.summary_label.setTextFormat(Qt.TextFormat.PlainText)
        self.summary_label.setToolTip(
            self.tr(
                "Reclaimable: the space freed by removing every extra copy (files with the same bytes, or the "
                "same text in another encoding or line ending, wherever they sit in a group), keeping one of "
                "each set by the keep rules; edited versions and excerpts are never counted. It is the same "
                "at every similarity threshold, in the Folders tab and in an export. Mark Extra Copies "
                "(Ctrl+M) marks them (those in another encoding after reading them again)."
            )
        )

        results_box = QWidget()
        rbl = QVBoxLayout(results_box)
        rbl.setContentsMargins(0, 0, 0, 0)
        rbl.addWidget(self.view, 1)
        rbl.addWidget(self.summary_label)
        # Groups (cleaning up) and pairs ranked by evidence (reviewing plagiarism), one preview below.
        self.results_tabs = QTabWidget()
        self.results_tabs.setDocumentMode(True)
        self.results_tabs.addTab(results_box, tr("Groups"))
        self.results_tabs.addTab(self._build_review_tab(), tr("Pairs"))
        self.results_tabs.setTabToolTip(0, tr("Groups of similar files, each file with its reference: to clean up"))
        self.results_tabs.setTabToolTip(1, tr("Every pair of similar files ranked by evidence (the longest passage "
                                              "they share first): to review plagiarism"))
        self.results_tabs.currentChanged.connect(self._on_results_tab_changed)
        self.right_split = QSplitter(Qt.Orientation.Vertical)
        self.right_split.addWidget(self.results_tabs)
        self.right_split.addWidget(self.preview)
        # The list takes most of the height (it showed ~19 rows at 1280 × 820): the preview needs a few
        # lines of each file, and View > Preview Beside the List gives the list the whole height.
        self.right_split.setStretchFactor(0, 3)
        self.right_split.setStretchFactor(1, 1)
        self.right_split.setSizes([720, 240])
        self.preview.setMinimumHeight(170)
        self.right_split.setChildrenCollapsible(False)
        rl.addWidget(self.right_split, 1)

        self.main_split = QSplitter(Qt.Orientation.Horizontal)
        self.main_split.addWidget(left)
        self.main_split.addWidget(right)
        self.main_split.setStretchFactor(1, 1)
        self.main_split.setSizes([300, 1000])
        self.setCentralWidget(self.main_split)

        sb = self.statusBar()
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(220)
        self.progress_bar.setTextVisible(False)
        self.progress_bar.hide()
        self.status_label = QLabel()
        sb.addWidget(self.status_label, 1)
        sb.addPermanentWidget(self.progress_bar)
        self.folders.foldersChanged.connect(self._on_folders_changed)
        self._on_threshold_moved(self.threshold_slider.value())
        self._update_summary()

    # ------------------------------------------------------------------ settings
    def _restore_settings(self) -> None:
        s = self.settings
        try:
            raw = json.loads(s.value("scan/folders", "[]", str) or "[]")
            self.folders.set_folders(Folder(str(p), bool(r)) for p, r in raw)
        except (ValueError, TypeError):
            pass  # unreadable setting: start with no folders rather than fail
        self.exclude_edit.setText(s.value("scan/exclude", "", str))
        self.hidden_check.setChecked(s.value("scan/hidden", False, bool))
        self.min_size_spin.setValue(s.value("scan/min_size_kb", 0, int))
        self.threshold_slider.setValue(s.value("results/threshold", int(jobs.PAIR_FLOOR), int))
        self.act_code_view.setChecked(s.value("results/code_view", True, bool))
        try:
            self.ignored_texts = [str(p) for p in json.loads(s.value("results/ignore_texts", "[]", str) or "[]")]
        except (ValueError, TypeError):
            self.ignored_texts = []
        common = s.value("results/common_cutoff", jobs.DEFAULT_COMMON_CUTOFF, int)  # (0: not a number)
        self.common_cutoff = common if 2 <= common <= jobs.MAX_COMMON_CUTOFF else jobs.DEFAULT_COMMON_CUTOFF
        k = self.kind_combo.findData(s.value("results/kind", "all", str))
        self.kind_combo.setCurrentIndex(max(0, k))
        self._restore_review_settings()
        if s.value("window/preview_beside", False, bool):
            self.act_beside.setChecked(True)
            self.right_split.setOrientation(Qt.Orientation.Horizontal)
        for key, setter in (
            ("window/geometry", self.restoreGeometry),
            ("window/main_split", self.main_split.restoreState),
            ("window/right_split", self.right_split.restoreState),
        ):
            v = s.value(key)
            if isinstance(v, QByteArray) and not v.isEmpty():
                setter(v)
        if not s.contains("window/geometry"):
            self.resize(1280, 820)

    def save_settings(self) -> None:
        s = self.settings
        listed = self.folders.folders
        have = {f.path for f in listed}
        kept = listed + [f for f in self._set_aside if f.path not in have]  # (set aside for this session only)
        s.setValue("scan/folders", json.dumps([[f.path, f.reference] for f in kept]))
        s.setValue("scan/scoped", self._scoped)  # (results follow the list, an emptied one too)
        s.setValue("scan/exclude", self.exclude_edit.text())
        s.setValue("scan/hidden", self.hidden_check.isChecked())
        s.setValue("scan/min_size_kb", self.min_size_spin.value())
        s.setValue("results/threshold", self.threshold_slider.value())
        s.setValue("results/kind", self.kind_combo.currentData())
        s.setValue("results/code_view", self.code_view)
        s.setValue("results/min_passage", self.min_passage)
        s.setValue("window/results_tab", self.results_tabs.currentIndex())
        s.setValue("index/last", str(self.index_path))
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/main_split", self.main_split.saveState())
        s.setValue("window/right_split", self.right_split.saveState())
        s.sync()

    # ------------------------------------------------------------------ scanning
    @property
    def threshold(self) -> float:
        return float(self.threshold_slider.value())

    @property
    def code_view(self) -> bool:
        """Program sources are also compared by structure (``SimilarityParams.code_view``)."""
        return self.act_code_view.isChecked()

    def toggle_code_view(self) -> None:
        """Re-read the results with the other setting (the index caches the pairs of each apart)."""
        self.settings.setValue("results/code_view", self.code_view)
        self.load_results()

    def choose_ignored_texts(self) -> None:
        start = os.path.dirname(self.ignored_texts[0]) if self.ignored_texts else ""
        paths, _ = QFileDialog.getOpenFileNames(self, self.tr("Text to Ignore (e.g. the question every answer "
                                                              "repeats)"), start)
        if paths:
            self.set_ignored_texts(paths)

    def stop_ignoring_texts(self) -> None:
        self.set_ignored_texts([])

    def choose_common_cutoff(self) -> None:
        n, ok = QInputDialog.getInt(
            self, self.tr("Text Held by Many Files"),
            self.tr("Text held by more than this many indexed files counts nowhere, as licences and templates do\n"
                    "(or by more than 0.1 % of them when that is more). Default {0}. Raise it when a folder holds\n"
                    "more versions of one document than that: they are then paired by all their text, at more\n"
                    "time and memory.").format(jobs.DEFAULT_COMMON_CUTOFF),
            self.common_cutoff, 2, jobs.MAX_COMMON_CUTOFF)
        if ok:
            self.set_common_cutoff(n)

    def set_common_cutoff(self, n: int) -> None:
        """Re-read the results with text held by more than ``n`` files counting nowhere (remembered)."""
        self.common_cutoff = min(max(2, int(n)), jobs.MAX_COMMON_CUTOFF)
        self.settings.setValue("results/common_cutoff", self.common_cutoff)
        self.load_results()

    def set_ignored_texts(self, paths: list[str]) -> None:
        """Re-read the results with these texts counting nowhere (remembered for the next session)."""
        self.ignored_texts = [os.path.abspath(p) for p in paths]
        self.settings.setValue("results/ignore_texts", json.dumps(self.ignored_texts))
        self._update_actions()
        self.load_results()

    def scan_request(self) -> ScanRequest:
        exclude = [p.strip() for p in self.exclude_edit.text().split(";") if p.strip()]
        return ScanRequest(
            roots=[Path(f.path) for f in self.folders.folders],
            index_path=self.index_path,
            exclude=exclude,
            hidden=self.hidden_check.isChecked(),
            min_size=self.min_size_spin.value() * 1000,
        )

    def start_scan(self) -> None:
        if self.runner.busy("scan"):
            return
        if not self.folders.folders:
            text = self.tr("Add a folder to scan first (Add…, or drop one on the list).")
            self.show_message(text, "info", refresh=lambda: None if self.folders.folders else text)
            return
        missing = self._missing_folders_text()
        if missing:
            self.show_message(missing, "warning", refresh=self._missing_folders_text)
            return
        self.message.hide()
        aside = self._set_aside_text()
        if aside:
            self.show_message(aside, "info", self.tr("Restore Folders"), self.restore_folders,
                              refresh=self._set_aside_text)
        req = self.scan_request()
        args = (self.threshold, self.reference_roots(), list(self.preferred_refs))
        code_view, ignore, remembered = self.code_view, tuple(self.ignored_texts), self._remembered_references()
        keep, scope, min_passage, common = self.keep_rules, self.scope(), self.min_passage, self.common_cutoff
        self.runner.cancel("load")
        self.runner.start(
            "scan",
            lambda progress, cancel: jobs.scan_and_load(req, *args, progress, cancel, code_view, ignore=ignore,
                                                        remembered=remembered, keep=keep, scope=scope,
                                                        min_passage=min_passage, common_cutoff=common),
            finished=self._on_scan_finished,
            failed=self._on_load_failed,
            cancelled=self._on_scan_cancelled,
            progress=self._on_progress,
        )
        self._set_busy(self.tr("Starting the scan…"))
        self.view.viewport().update()

    def _missing_folders_text(self) -> str | None:
        """The message about listed folders that do not exist, None when all do."""
        missing = [f.path for f in self.folders.folders if not os.path.isdir(f.path)]
        if not missing:
            return None
        return self.tr("These folders do not exist: {0}. Remove them from the list or reconnect their drive.").format(
            ", ".join(missing))

    def cancel_work(self) -> None:
        if self.runner.busy("scan"):
            self.runner.cancel("scan")
            self.status_label.setText(self.tr("Cancelling… finishing the current files"))
        elif self.runner.busy("verify"):  # (the only other job Esc stops: a load follows a choice made)
            self.runner.cancel("verify")

    def _on_scan_finished(self, outcome: jobs.ScanOutcome) -> None:
        r = outcome.result
        text = self.tr("Scanned {0:,} files: {1:,} read, {2:,} unchanged, {3:,} problems, in {4:.1f} s").format(
            r.files_seen, r.files_read, r.files_unchanged, r.problems, r.elapsed_s
        )
        if r.files_removed:
            # Files deleted or moved away since the last scan leave the results: say so, or a shorter
            # list looks like a loss.
            text += " · " + self.tr("{0:,} no longer there, removed from the index").format(r.files_removed)
        self._set_idle(text)
        if r.problems:
            # Not "could not be read": a line is also a document compared by its bytes, or a file read in part,
            # which the results hold.
            self.show_message(
                self.tr("1 problem: a file skipped, or read only by its bytes or in part; the rest were scanned.")
                if r.problems == 1
                else self.tr("{0:,} problems: files skipped, or read only by their bytes or in part; the rest were "
                             "scanned.").format(r.problems),
                "warning",
                self.tr("Show Problems"),
                self.show_problems,
            )
        if outcome.results is not None:
            self._apply_results(outcome.results)
        self.scanFinished.emit(r)

    def _on_scan_cancelled(self) -> None:
        note = self.tr("Scan cancelled. What was read is kept; scan again to finish.")
        self._set_idle(note)
        self.load_results()
        self._load_note = note
        self.status_label.setText(note)
        self.scanFinished.emit(None)

    def _on_progress(self, p: Progress) -> None:
        self.status_label.setText(describe_progress(p, self.tr))
        bar = self.progress_bar
        if p.files_total:
            bar.setRange(0, 1000)
            if p.bytes_total:
                bar.setValue(int(1000 * p.bytes_done / max(1, p.bytes_total)))
            else:
                bar.setValue(int(1000 * p.files_done / max(1, p.files_total)))
        else:
            bar.setRange(0, 0)  # busy indicator while totals are unknown

    def _set_busy(self, text: str) -> None:
        self.status_label.setText(text)
        self.progress_bar.setRange(0, 0)
        self.progress_bar.show()
        self._update_actions()

    def _working(self, slots: tuple[str, ...] = PROGRESS_SLOTS) -> bool:
        """Whether a job of one of ``slots`` is under way (:data:`PROGRESS_SLOTS`: shown with the
        progress bar; :data:`BLOCKING_SLOTS`: blocking the actions on marks and files)."""
        return any(self.runner.busy(slot) for slot in slots)

    def _set_idle(self, text: str = "") -> None:
        self.status_label.setText(text)
        if not self._working():
            self.progress_bar.hide()  # (another job still running keeps its bar)
        self.view.viewport().update()
        self._update_actions()

    # ------------------------------------------------------------------ loading and grouping
    def load_results(self) -> None:
        """Read what the index holds (no scan), off the GUI thread."""
        if self.runner.busy("scan") or self._closing:
            return
        self._regroup_timer.stop()  # (the load groups with what the regroup would have used)
        path = self.index_path
        args = (self.threshold, self.reference_roots(), list(self.preferred_refs))
        code_view, ignore, remembered = self.code_view, tuple(self.ignored_texts), self._remembered_references()
        keep, scope, min_passage, common = self.keep_rules, self.scope(), self.min_passage, self.common_cutoff
        self.runner.start(
            "load",
            lambda progress, cancel: jobs.load(path, *args, progress, cancel, code_view, ignore=ignore,
                                               remembered=remembered, keep=keep, scope=scope,
                                               min_passage=min_passage, common_cutoff=common),
            finished=self._on_loaded,
            failed=self._on_load_failed,
            cancelled=lambda: self._idle_unless_working(),  # (a scan cancels the load it replaces)
            progress=self._on_progress,
        )
        self._set_busy(self.tr("Opening the index…"))

    def _on_loaded(self, results: jobs.Results) -> None:
        note, self._load_note = self._load_note, ""
        self._set_idle(
            note
            or (
                self.tr("Index: {0} ({1:,} files)").format(results.index_path, results.n_files)
                if results.exists
                else self.tr("No index yet: add folders and press Scan.")
            )
        )
        self._apply_results(results)

    def _cutoff_text(self) -> str | None:
        """The banner's warning while the results shown come from a search whose common cut-off the pair
        budget lowered (``engine.PairSet.cutoff``; the command line says the same), or that found more
        files mostly common than the cut-off (``PairSet.crowded``), None once they do not
        (``MessageBar.recheck`` then hides it)."""
        ps = self.results.pair_set if self.results is not None else None
        cutoff = getattr(ps, "cutoff", None)
        if cutoff is not None:
            return self.tr("These results are incomplete: the index holds too many shared passages for the pair "
                           "search's budget, so text held by more than {0:,} files (usually {1:,}) counted nowhere. "
                           "Files with many versions may be missing or score lower; compare two of them to see "
                           "their own figures.").format(*cutoff)
        crowded = getattr(ps, "crowded", None)  # (``core.mostly_common``: the command line says the same)
        if crowded is not None:
            return self.tr("{0:,} files are mostly text that more than {1:,} indexed files hold: a template or "
                           "licence, or more versions of one text than that. Such text counts nowhere, so "
                           "near-copies of it may be missing here. If they are versions of one document, View > "
                           "Text Held by Many Files… with a number above theirs counts it.").format(*crowded)
        return None

    def _unfinished_text(self) -> str | None:
        """The banner's warning while the results shown were read during a scan of their index by another
        window or command, or after a scan that did not finish (the command line says the same), None once
        they were not (``MessageBar.recheck`` then hides it)."""
        state = self.results.unfinished if self.results is not None else None
        if state is None:
            return None
        if state == "running":
            return self.tr("These results are incomplete: a scan (another window or command) is writing to this "
                           "index now, and they cover only the files it has stored so far. Open the index again "
                           "when it ends.")
        how = {"killed": self.tr("was killed"), "cancelled": self.tr("was cancelled"), "failed": self.tr("failed")}
        return self.tr("These results are incomplete: the last scan of this index {0} before it finished, and they "
                       "cover only the files it stored. Scan its folders again to complete them.").format(
                           how.get(state, state))

    def _results_warning(self) -> str | None:
        """What the banner warns of the results shown: an unfinished scan first, then a lowered cut-off."""
        return self._unfinished_text() or self._cutoff_text()

    def _apply_results(self, results: jobs.Results) -> None:
        self.results = results
        self._load_error = ""
        self._loads += 1
        self.chart.set_data(results.best, jobs.PAIR_FLOOR, self.threshold)
        if results.preferred and not self.preferred_refs:  # references remembered from an earlier session
            self.preferred_refs = list(results.preferred)
        self._set_snapshot(results.snapshot)
        self._review_rebuild()  # (a job of its own: the groups are painted first)
        self.message.recheck()  # (an error of an earlier load is out of date)
        warning = self._results_warning()
        if warning is not None and self.message.isHidden():  # (never over another message)
            self.show_message(warning, "warning", refresh=self._results_warning)

    def _placeholder_text(self) -> str:
        """What the empty results list says: why it is empty now."""
        if self.runner.busy("scan"):
            return self.tr("Scanning… the results appear here when the scan finishes.")
        res = self.results
        if self._load_error and (res is None or not res.n_files):
            # Not "add folders and scan": the folders may be scanned already, the index is what failed.
            return self.tr("The results cannot be shown: {0}\nSee the message above for what to do.").format(
                self._load_error)
        if res is None and self.runner.busy("load"):
            return self.tr("Opening the index…")
        if res is None or not res.exists or not res.n_files:
            if self.folders.folders:
                return self.tr("No results yet. Press Scan to read the folders on the left.")
            return self._empty_text
        if self.model.snapshot.n_groups:  # (groups at the threshold, before the Show filter and the search)
            return self.tr("No group matches the Show filter or the search.")
        return self.tr(
            "No similar files at {0} % or more among the {1:,} indexed files. Lower the Similarity threshold to see "
            "files that share less."
        ).format(round(self.threshold), res.n_files)

    def _set_snapshot(self, snap: Snapshot) -> None:
        current = self._current_file_id()
        self.proxy.set_snapshot(snap)
        self.folder_chart.set_rows(snap.folders)
        self._update_summary()
        self._update_actions()
        self._reveal(current, jump=False)
        if not self.view.currentIndex().isValid() and not self.reviewing:
            self._previewed = None
            self.preview.show_message(self.tr("Select a file to compare it with its group's reference."))
        self.resultsLoaded.emit()

    def _on_threshold_moved(self, value: int) -> None:
        self.threshold_label.setText(f"≥ {value} %")
        self.chart.set_threshold(float(value))
        if self.results is not None:
            self._regroup_timer.start()

    def regroup(self) -> None:
        """Group the pairs in memory at the current threshold (no index access); nothing when it
        cannot now (no results, or a scan is running)."""
        res = self.results
        if res is None or self.runner.busy("scan"):
            return
        args = (res.files, res.pairs, self.threshold, self.reference_roots(), list(self.preferred_refs),
                self.keep_rules, self.scope())

        def finished(snap: Snapshot) -> None:
            if self.results is res:  # not if a scan, reload or trash replaced the results meanwhile
                self._set_snapshot(snap)

        self.runner.start("group", lambda _p, _c: jobs.group(*args), finished=finished, failed=self._on_job_failed)
        self._review_rebuild()

    def _apply_filters(self) -> None:
        current = self._current_file_id()
        self.proxy.set_filters(KIND_FILTERS[self.kind_combo.currentData()], self.search_edit.text())
        self._update_summary()
        self._reveal(current)
        self._filter_pairs()
        if not self.view.currentIndex().isValid() and not self.reviewing:
            # The filter hid the file previewed: the preview must not go on showing it.
            self._previewed = None
            self.preview.show_message(self.tr("Select a file to compare it with its group's reference."))

    def _reveal(self, current: int | None, jump: bool = True) -> None:
        """After the rows were reset (filter, search, new results).  With a search: open the first
        :data:`REVEAL_GROUPS` groups holding a match, so that the matching files show, and make
        the first match current (scrolled to) unless the current file is a match, or, with
        ``jump`` False (new results of the same search), is still shown.  Otherwise keep the
        current file selected if it is still shown."""
        matches = self.proxy.search_matches(REVEAL_GROUPS)
        snap = self.model.snapshot
        for g in dict.fromkeys(snap.l_group[m] for m in matches):
            idx = self.proxy.mapFromSource(self.model.group_index(g))
            if idx.isValid():
                self.view.expand(idx)
        keep = current is not None and (not jump or not matches or current in {snap.l_file_id[m] for m in matches})
        # (Keep the user's place, unless that would mean laying out thousands of rows.)
        if keep and self.select_file(current, max_row=5 * FETCH_BATCH):  # type: ignore[arg-type]
            return
        if matches:
            self.select_member(matches[0])

    def _count(self, n: int, noun: str) -> str:
        """"1 group", "2 groups" (the nouns counted in the window: group, file)."""
        if noun == "group":
            return self.tr("{0:,} group").format(n) if n == 1 else self.tr("{0:,} groups").format(n)
        return self.tr("{0:,} file").format(n) if n == 1 else self.tr("{0:,} files").format(n)

    def _update_summary(self) -> None:
        """The line under the list: what it shows (the rows the Show filter and the search leave,
        "n of m" then), the space the shown files would free, the marks."""
        groups, files, extra, reclaim = self.proxy.totals()
        marked = self.model.marked_members()
        snap = self.model.snapshot
        marked_bytes = int(snap.m_size[marked].sum()) if marked else 0
        if self.proxy.active:
            counts = self.tr("Shown: {0:,} of {1} · {2:,} of {3}").format(
                groups, self._count(snap.n_groups, "group"), files, self._count(snap.n_members, "file"))
        else:
            counts = self._count(groups, "group") + " · " + self._count(files, "file")
        text = self.tr("{0} · {1} reclaimable ({2:,} extra copies)").format(counts, format_size(reclaim), extra)
        empty = snap.empty_files
        if empty:
            text += " · " + self.tr("{0:,} empty files apart").format(len(empty))
        if marked:
            text += " · " + self.tr("{0:,} marked ({1})").format(len(marked), format_size(marked_bytes))
            hidden = len(marked) - int(self.proxy.shown_members()[marked].sum())
            if hidden:
                # Marked files the filter hides are moved to the trash too: say so.
                text += " · " + self.tr("{0:,} of the marked files not shown").format(hidden)
        ignored = self.results.ignore if self.results is not None else ()
        if ignored:
            text += " · " + self.tr("ignoring the text of {0}").format(", ".join(os.path.basename(p) for p in ignored))
        self.summary_label.setText(text)
        self._update_actions()
        self.message.recheck()  # (marks and shown rows changed: a message about them may be out of date)

    def _update_actions(self) -> None:
        scanning = self.runner.busy("scan")
        verifying = self.runner.busy("verify")  # Ctrl+M reading copies: its marks are not all in yet
        busy = self._working(BLOCKING_SLOTS)
        has_sel = self.view.currentIndex().isValid()
        self.act_scan.setEnabled(not busy and bool(self.folders.folders))
        self.act_cancel.setEnabled(scanning or verifying)
        self.act_trash.setEnabled(not busy and self.model.has_marks)
        self.act_mark_dupes.setEnabled(self.model.snapshot.n_groups > 0 and not busy)
        self.act_unmark_all.setEnabled(self.model.has_marks)
        self.act_export.setEnabled(self.pairs_model.rows.n > 0 if self.reviewing else self.model.snapshot.n_groups > 0)
        for a in (self.act_open, self.act_reveal, self.act_copy, self.act_mark, self.act_make_ref):
            a.setEnabled(has_sel)
        self.b_remove.setEnabled(not scanning)
        self.act_code_view.setEnabled(not busy)
        self.min_passage_spin.setEnabled(not busy)
        self.act_invert.setEnabled(self.model.snapshot.n_groups > 0 and not busy)
        self.act_hide.setEnabled(has_sel)
        self.act_unhide.setEnabled(bool(self.hidden))
        self.act_empty.setEnabled(bool(self.model.snapshot.empty_files))
        self.act_ignore.setEnabled(not busy)
        self.act_ignore_stop.setEnabled(not busy and bool(self.ignored_texts))
        self.act_common.setEnabled(not busy)

    # ------------------------------------------------------------------ selection and preview
    def _current_file_id(self) -> int | None:
        idx = self.view.currentIndex()
        if not idx.isValid() or idx.data(IsGroupRole):
            return None
        m = self.model.member_of(self.proxy.mapToSource(idx))
        return self.model.snapshot.l_file_id[m] if m >= 0 else None

    def select_file(self, file_id: int, max_row: int | None = None) -> bool:
        """Make the row of ``file_id`` current (fetching and expanding as needed)."""
        snap = self.model.snapshot
        try:
            m = snap.l_file_id.index(file_id)
        except ValueError:
            return False
        return self.select_member(m, max_row)

    def select_member(self, m: int, max_row: int | None = None) -> bool:
        """Make member ``m`` current; False when hidden by the filter (or below ``max_row``)."""
        row = self.model.row_of_group(self.model.snapshot.l_group[m])
        if row < 0 or (max_row is not None and row > max_row):
            return False
        src = self.model.member_index(m, load=True)
        idx = self.proxy.mapFromSource(src)
        if not idx.isValid():
            return False
        self.view.expand(idx.parent())
        self.view.selectionModel().setCurrentIndex(
            idx, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        )
        self.view.scrollTo(idx, QAbstractItemView.ScrollHint.PositionAtCenter)
        return True

    def selected_members(self) -> list[int]:
        """Flattened member indexes of the selected file rows (a selected group: its members)."""
        out: list[int] = []
        seen: set[int] = set()
        snap = self.model.snapshot
        for idx in self.view.selectionModel().selectedRows(0):
            src = self.proxy.mapToSource(idx)
            if src.data(IsGroupRole):
                g = self.model.group_of(src)
                ms = range(snap.l_start[g], snap.l_start[g + 1])
            else:
                ms = [self.model.member_of(src)]
            for m in ms:
                if m not in seen:
                    seen.add(m)
                    out.append(m)
        return out


    # ------------------------------------------------------------------ actions
    def _current_path(self) -> str | None:
        idx = self.view.currentIndex()
        if not idx.isValid():
            return None
        m = self.model.member_of(self.proxy.mapToSource(idx))
        return self.model.snapshot.paths[m] if m >= 0 else None

    def open_current(self) -> None:
        p = self._current_path()
        if p is not None:
            self.open_path(p)

    def open_path(self, p: str) -> None:
        """Open ``p`` with the desktop's default program, or say why not."""
        if not os.path.exists(p):
            self.show_message(self._gone(p), "warning")
        elif not open_url(QUrl.fromLocalFile(p)):
            self.show_message(self.tr("No program is set up to open {0}.").format(p), "warning")

    def reveal_current(self) -> None:
        p = self._current_path()
        if p is None:
            return
        folder = os.path.dirname(p)
        if not os.path.isdir(folder):
            self.show_message(self._gone(folder), "warning")
            return
        if os.path.exists(p) and show_in_file_manager(p):
            return
        open_url(QUrl.fromLocalFile(folder))

    def copy_path(self) -> None:
        paths = [self.model.snapshot.paths[m] for m in self.selected_members()]
        if not paths and (p := self._current_path()):
            paths = [p]
        if paths:
            QGuiApplication.clipboard().setText("\n".join(paths))
            self.status_label.setText(self.tr("Copied {0} path(s).").format(len(paths)))

    def _gone(self, path: str) -> str:
        return self.tr("{0} no longer exists: it was moved or deleted after the scan. Scan again to update the "
                       "results.").format(path)

    # ------------------------------------------------------------------ problems, exports, index
    def show_problems(self) -> None:
        """List the last scan's problems: what it skipped or read only in part (read from the index in a worker)."""
        path = self.index_path
        self.runner.start(
            "problems", lambda p, c: jobs.problems(path, p, c), finished=self._show_problems,
            failed=self._on_job_failed,
        )

    def _show_problems(self, rows: list[tuple[str, str, bool]]) -> None:
        # A document whose text cannot be read (password, damage, no text layer) and a text too large for
        # content fingerprints are indexed all the same, by their bytes or checksum: not "skipped".
        kept = sum(1 for _p, _why, indexed in rows if indexed)
        intro = []
        out = len(rows) - kept
        if out:
            intro.append(self.tr("1 file was left out of the scan; fix the cause and scan again to include it.")
                         if out == 1 else
                         self.tr("{0:,} files were left out of the scan; fix the cause and scan again to include "
                                 "them.").format(out))
        if kept:
            intro.append(self.tr("1 file was scanned, but its text could not be read: it is compared by its bytes "
                                 "(or its checksum) alone, so no passage it shares with another file is found.")
                         if kept == 1 else
                         self.tr("{0:,} files were scanned, but their text could not be read: they are compared by "
                                 "their bytes (or their checksum) alone, so no passage they share with another file "
                                 "is found.").format(kept))
        self.problems_dialog = dialogs.show_list(
            self, self.tr("Problems of the last scan"), " ".join(intro),
            [f"{p}\t{why}" for p, why, _indexed in rows])

    def export_dialog(self) -> None:
        what = self._export_filter().describe()
        title = self.tr("Export the shown results ({0})").format(what) if what else self.tr("Export results")
        if self.reviewing:
            title = (self.tr("Export the shown pairs ({0})").format(what) if what
                     else self.tr("Export the pairs ranked by evidence"))
        path, chosen = QFileDialog.getSaveFileName(
            self, title, os.path.expanduser("~/simscan-results.csv"),
            self.tr("CSV (*.csv);;JSON (*.json);;HTML (*.html)"),
        )
        if not path:
            return
        if not Path(path).suffix:  # no extension typed: take the chosen file type's
            ext = next((e for e in ("csv", "json", "html") if f"*.{e}" in chosen), "csv")
            path = f"{path}.{ext}"
        self.export(path)

    def export(self, path: str, fmt: str | None = None) -> int:
        """Write the shown groups (filters applied, in the shown order) to ``path``; with the Pairs tab
        shown, the shown pairs (``export_pairs``)."""
        fmt = fmt or Path(path).suffix.lower().lstrip(".") or "csv"
        if fmt == "htm":
            fmt = "html"
        writer = WRITERS.get(fmt)
        if writer is None:
            self.show_message(self.tr("Unknown export format {0!r}: use .csv, .json or .html.").format(fmt), "warning")
            return 0
        shown = self._export_filter(groups=not self.reviewing)
        if self.reviewing:
            rows = self.pairs_model.shown_rows().tolist()
            what = self.tr("{0:,} pairs").format(len(rows)) if len(rows) != 1 else self.tr("1 pair")
            write = lambda: PAIR_WRITERS[fmt](path, self.pairs_model.rows, rows, shown)
        else:
            order = self.model.shown_order()
            what = self._count(len(order), "group")
            write = lambda: writer(path, self.model.snapshot, order, self.model.marked, shown)
        try:
            n = write()
        except OSError as e:
            self.show_message(self.tr("Could not write {0}: {1}").format(path, e.strerror or e), "error")
            return 0
        if shown.describe():
            what = self.tr("{0} as shown ({1})").format(what, shown.describe())
        self.status_label.setText(self.tr("Exported {0} to {1}").format(what, path))
        return n


    def _export_filter(self, groups: bool = True) -> Shown:
        """What the list shows, for an export: the rows the Show filter and the search leave (with
        ``groups``, the members they leave; the pairs model filters its own rows)."""
        kind = self.kind_combo.currentData()
        return Shown(
            self.proxy.shown_members() if groups and self.proxy.active else None,
            self.kind_combo.currentText() if kind != "all" else "",
            self.search_edit.text().strip(),
        )

    def focus_search(self) -> None:
        self.search_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_edit.selectAll()

    def open_index_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, self.tr("Open an index"), str(self.index_path.parent), self.tr("simscan index (*.sqlite3 *.db);;All (*)")
        )
        if path:
            self.set_index(Path(path))

    def set_index(self, path: Path) -> None:
        self.runner.cancel("verify")
        self.model.clear_marks()  # marks are file ids of the index they were made in
        self.index_path = path
        self._scoped = False  # another index: everything it holds, until the folder list changes
        self._restore_per_index()
        self.preferred_refs = []
        # The old index's rows go at once: marked or made references while the new index loads, their
        # file ids would name other files of the new one.
        self._drop_results()
        self.load_results()

    def _drop_results(self) -> None:
        self.results = None
        self._load_error = ""
        self._set_snapshot(Snapshot.empty(self.threshold))
        self._set_review(None)

    def about(self) -> None:
        from PySide6.QtWidgets import QMessageBox

        from simscan import __version__

        QMessageBox.about(
            self,
            self.tr("About simscan"),
            self.tr("simscan {0}\nFinds files with similar content: exact copies, the same text in another encoding, "
                    "edited versions, excerpts and plagiarised passages.\nIndex: {1}").format(__version__,
                                                                                             self.index_path),
        )

    def _context_menu(self, pos: Any) -> None:
        if not self.view.indexAt(pos).isValid():
            return
        menu = QMenu(self)
        for a in (self.act_open, self.act_reveal, self.act_copy, None, self.act_mark, self.act_make_ref,
                  self.act_mark_dupes, self.act_hide, None, self.act_trash):
            menu.addSeparator() if a is None else menu.addAction(a)
        menu.exec(self.view.viewport().mapToGlobal(pos))

    # ------------------------------------------------------------------ errors
    def show_message(
        self, text: str, level: str = "error", action: str = "", callback: Any = None,
        refresh: Callable[[], str | None] | None = None,
    ) -> None:
        """Show a message in the banner above the list.  ``refresh``: for a message describing a
        state, its text for the state now or None once the state is gone (``MessageBar.recheck``,
        run whenever marks, folders or results change)."""
        self.message.show_message(text, level, action, callback, refresh)
        self.errorShown.emit(text)

    def _on_load_failed(self, err: BaseException) -> None:
        """A load (or a scan, which loads after it) failed: its message stays until results load, and
        the empty list says why it is empty."""
        self._load_error = dialogs.describe_error(err)[0]
        self._on_job_failed(err, until_loaded=True)

    def _on_job_failed(self, err: BaseException, until_loaded: bool = False) -> None:
        self._set_idle()
        what, todo = dialogs.describe_error(err)
        action, callback = "", None
        if isinstance(err, IndexError_):
            # The core's hints name the CLI's options (--rebuild, --index PATH): here, the window's ways out.
            todo, action, callback = self._index_way_out(err)
        text = f"{what}\n{todo}" if todo else what
        loads = self._loads
        self.show_message(text, "error", action, callback,
                          refresh=(lambda: None if self._loads > loads else text) if until_loaded else None)
        self._update_actions()

    def _index_way_out(self, err: SimscanError) -> tuple[str, str, Callable[[], None] | None]:
        """(what to do, action label, action) for an error about the index file itself, in the
        window's terms."""
        tr = self.tr
        if isinstance(err, IndexDamaged) and self.folders.folders:
            # Entries that fail their checksums: a scan drops them and reads those files again (reliability).
            return (tr("Scan again: the scan drops the damaged entries and reads those files again (your files "
                       "are not touched)."), tr("Scan"), self.start_scan)
        if isinstance(err, IndexCorrupt):
            # Whether the file may be moved aside is index.rebuild's decision (a damaged simscan
            # index: yes; a file opened as an index by mistake: never).
            return (tr("Rebuild the index: the damaged file is kept beside it (renamed …corrupt-<date>), a new index "
                       "keeping every entry of it that passes its checksums is started in its place and your files "
                       "are not touched; then scan again."),
                    tr("Rebuild Index…"), self.rebuild_index)
        if isinstance(err, NotAnIndex):
            return (tr("It was left untouched. Open a simscan index instead (File > Open Index…)."),
                    tr("Open Another Index…"), self.open_index_dialog)
        if isinstance(err, IndexLocked):
            return tr("Wait for the other scan to finish, then try again."), tr("Try Again"), self.load_results
        what = str(err.args[0]) if err.args else ""
        if "newer simscan" in what:
            return tr("Upgrade simscan, or open another index (File > Open Index…)."), "", None
        if "older layout" in what:
            return tr("Press Scan to upgrade it (the files already indexed are kept)."), "", None
        return (tr("Check that the folder {0} exists and that you may write to it, or open another index (File > "
                   "Open Index…).").format(self.index_path.parent), tr("Open Another Index…"), self.open_index_dialog)

    def rebuild_index(self) -> None:
        """"Rebuild Index…": after a confirmation naming the file, move the damaged index aside and
        start a new one in its place with every entry of it that passes its checksums, through
        ``index.rebuild`` (which renames, never deletes, and refuses while a scan -- this window's or
        another program's -- holds the index, or when the file is not a damaged simscan index).  A job:
        keeping the entries of a large index takes minutes (~0.2 ms a file)."""
        tr = self.tr
        path = self.index_path
        if self._working(BLOCKING_SLOTS):
            self.show_message(tr("A scan or another change of the index is under way; wait for it to finish, then "
                                 "try again."), "warning")
            return
        if not dialogs.confirm(
            self,
            tr("Rebuild Index"),
            tr("Rebuild the damaged index {0}?").format(path),
            tr("It is not deleted: it is renamed to {0}.corrupt-<date and time> in the same folder, and a new "
               "index is started at {1} with every entry of it that passes its checksums. Your files are not "
               "touched; press Scan afterwards to read the others again.").format(path.name, path),
            accept=tr("Rebuild Index"),
        ):
            return
        self.runner.start(
            "rebuild",
            lambda progress, cancel: jobs.rebuild(path),
            finished=lambda out: self._on_rebuilt(path, *out),
            failed=lambda err: self._on_rebuild_failed(path, err),
        )
        self._set_busy(tr("Rebuilding the index: keeping every entry that passes its checksums…"))

    def _on_rebuilt(self, path: Path, moved: Path | None, kept: int) -> None:
        tr = self.tr
        self._set_idle()
        self.set_index(path)  # the fresh one: marks and rows of the damaged one go
        if moved is None:
            text = tr("The damaged index was empty, so nothing was kept. A new, empty index was started at {0}; press "
                      "Scan to fill it.").format(path)
        elif kept:
            text = tr("The damaged index was kept as {0}. A new index was started at {1} with the {2:,} files whose "
                      "entries passed their checksums; press Scan to read the others again.").format(moved, path, kept)
        else:
            text = tr("The damaged index was kept as {0}. None of its entries could be kept: a new, empty index was "
                      "started at {1}; press Scan to fill it.").format(moved, path)
        self.show_message(text, "info")

    def _on_rebuild_failed(self, path: Path, err: BaseException) -> None:
        tr = self.tr
        self._set_idle()
        if isinstance(err, IndexLocked):
            self.show_message(tr("The damaged index was not moved: another scan is writing to {0}. Wait for it to "
                                 "finish, then try again.").format(path), "error", tr("Try Again"), self.rebuild_index)
        elif isinstance(err, NotAnIndex):
            what, _hint = dialogs.describe_error(err)
            self.show_message(tr("The damaged index was not moved: {0}\nsimscan moves aside only what it recognises "
                                 "as its own index. Open another index (File > Open Index…), or move this file away "
                                 "yourself.").format(what), "error", tr("Open Another Index…"), self.open_index_dialog)
        elif isinstance(err, (SimscanError, OSError)):
            what, _hint = dialogs.describe_error(err)
            self.show_message(tr("The damaged index was not moved: {0}\nCheck that you may write to the folder {1}.")
                              .format(what, path.parent), "error")
        else:
            self._on_job_failed(err)

    # ------------------------------------------------------------------ closing
    def _may_quit(self) -> bool:
        """Whether the window may close (Quit, Ctrl+Q, the title bar's close button): always when no
        file is marked; with marks -- the person's choice of files to move to the trash, which are kept
        nowhere -- only when they confirm it (Quit / Cancel; Cancel is the default, so a stray Enter
        loses nothing)."""
        n = len(self.model.marked)  # (file ids: each marked file once)
        if n == 0:
            return True
        tr = self.tr
        return dialogs.confirm(
            self,
            tr("Quit simscan"),
            tr("Quit with {0:,} files marked?").format(n) if n != 1 else tr("Quit with 1 file marked?"),
            tr("The marks are lost when simscan quits; no file was moved. To keep them, save them as a plan "
               "(File > Export Plan…) or move the marked files to the trash first."),
            danger=True,
            accept=tr("Quit"),
        )

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self._may_quit():
            event.ignore()
            return
        self._closing = True
        self.save_settings()
        self._regroup_timer.stop()
        self._search_timer.stop()
        self._preview_timer.stop()
        self._pair_timer.stop()
        self._min_passage_timer.stop()
        # Jobs stop at their next check; a compare of a huge file may take a few seconds more.
        self.hide()
        if not self.runner.shutdown(60_000):
            event.ignore()
            self._closing = False
            self.show()
            return
        super().closeEvent(event)
