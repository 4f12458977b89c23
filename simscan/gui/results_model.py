"""Qt item models of the results over an immutable :class:`~simscan.gui.snapshot.Snapshot`.
``data()`` never touches SQLite or the disk.

* :class:`ResultsModel` — tree of groups → member files over a Snapshot.  Group rows carry
  ``internalId`` 0; a member row carries ``1 + its group's snapshot index``, which stays valid
  when the groups are re-sorted, so only group rows move on a sort.
* :class:`ResultsProxy` — filtering (kind, path search) through precomputed masks and sorting
  delegated to the source model (one numpy argsort instead of ~n·log n Python ``lessThan``
  calls: 100,000 groups sort in milliseconds instead of seconds).
"""

from __future__ import annotations

import ctypes
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import (
    QAbstractItemModel,
    QDateTime,
    QLocale,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QFont

from simscan.display import display_path
from simscan.gui.snapshot import Snapshot
from simscan.similarity.types import KIND_CODE, KINDS, shown_pct

ModelIndex = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()  # the invalid index, a default argument (never mutated)

KIND_FILTERS: dict[str, frozenset[int]] = {
    "all": frozenset(range(len(KINDS))),
    "exact": frozenset({KIND_CODE["exact"], KIND_CODE["content"]}),
    "similar": frozenset({KIND_CODE["near"]}),
    "contained": frozenset({KIND_CODE["contained"]}),
}

SortRole = Qt.ItemDataRole.UserRole + 1  # raw number / string used for sorting
PathRole = Qt.ItemDataRole.UserRole + 2  # member path (group rows: the reference's path)
FileIdRole = Qt.ItemDataRole.UserRole + 3  # index file id (group rows: the reference's)
IsGroupRole = Qt.ItemDataRole.UserRole + 4
SimilarityRole = Qt.ItemDataRole.UserRole + 5  # float percent 0..100, or None
MemberRole = Qt.ItemDataRole.UserRole + 6  # flattened member index (group rows: the reference's)

COL_NAME, COL_FOLDER, COL_SIMILARITY, COL_KIND, COL_COPIES, COL_SIZE, COL_MODIFIED, COL_ENCODING = range(8)
_N_COLUMNS = 8
#: The file column (check boxes, the tree's branches): the name.
COL_PATH = COL_NAME
#: How dates read in the list: one unambiguous form whatever the locale's short format ("27 11 2026").
DATE_FORMAT = "yyyy-MM-dd HH:mm"

#: Top-level rows handed to the view at a time (fetchMore).  A QTreeView lays out every
#: top-level row it knows (index + flags + rowCount per row, each a Python call here, ~5 µs),
#: so 100,000 groups at once cost ~2 s; 1,000 rows cost ~25 ms, and scrolling to the end
#: fetches the next batch.
FETCH_BATCH = 1000

_F_ITEM = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
_F_GROUP0 = _F_ITEM | Qt.ItemFlag.ItemIsUserCheckable
_F_MEMBER = _F_ITEM | Qt.ItemFlag.ItemNeverHasChildren
_F_MEMBER0 = _F_MEMBER | Qt.ItemFlag.ItemIsUserCheckable
_NO_FLAGS = Qt.ItemFlag.NoItemFlags


_Py_IncRef = ctypes.pythonapi.Py_IncRef
_Py_IncRef.argtypes = [ctypes.py_object]
_Py_IncRef.restype = None


def no_data() -> None:
    """``None`` for a ``data()`` / ``headerData()`` override ("no value for this role").

    PySide6 6.12.0 drops one reference to ``None`` each time C++ converts a ``None`` returned
    by a Python ``data()`` override into an invalid QVariant (measured: ``sys.getrefcount(None)``
    falls by exactly one per call through a proxy or ``QModelIndex.data``).  A view calls
    data() millions of times, so the interpreter eventually aborts with "deallocating None".
    Taking one extra reference per return compensates; an extra reference to None is harmless
    if a later PySide6 fixes the bug (see tests/gui/test_models.py).
    """
    _Py_IncRef(None)


def _tr(text: str) -> str:
    from PySide6.QtCore import QCoreApplication

    return QCoreApplication.translate("ResultsModel", text)


def percent_text(v: float) -> str:
    """A score as the list shows it ("" when there is none): cut to one decimal, as everywhere
    (``shown_pct``), so the slider's threshold keeps every row shown at or above it."""
    return "" if math.isnan(v) else f"{shown_pct(v):.1f} %"


def format_date(mtime_ns: int) -> str:
    """A modification time as the list shows it (:data:`DATE_FORMAT`, local time)."""
    return QDateTime.fromMSecsSinceEpoch(mtime_ns // 1_000_000).toString(DATE_FORMAT)


_HEADER_TIPS = {
    COL_SIMILARITY: "A file's best score against its group's reference; on a group row, the lowest of its files",
    COL_COPIES: "Sets of copies (same bytes, or the same text in another encoding or line ending), wherever they "
                "sit in a group: the file kept of each set, and its extra copies",
    COL_SIZE: "File size; for a group, the space freed by removing its extra copies (every copy but the one kept)",
}


def format_size(n: int) -> str:
    """Bytes as a short localised size ("1.2 MB"; decimal units like most file managers)."""
    return QLocale().formattedDataSize(int(n), 1, QLocale.DataSizeFormat.DataSizeSIFormat)


@dataclass(frozen=True)
class GroupShown:
    """Per snapshot group, of the files a filter shows: how many (the reference included), and
    the bytes of those that are not the reference."""

    files: list[int]
    bytes: list[int]


class BatchedRows:
    """Top-level rows handed to views :data:`FETCH_BATCH` at a time (``fetchMore``), for a Qt model
    whose shown rows are ``self._order`` and which has exposed ``self._loaded`` of them so far."""

    _order: list[int]
    _loaded: int

    def canFetchMore(self, parent: ModelIndex) -> bool:
        return not parent.isValid() and self._loaded < len(self._order)

    def fetchMore(self, parent: ModelIndex) -> None:
        if not parent.isValid():
            self.ensure_loaded(self._loaded + FETCH_BATCH - 1)

    def ensure_loaded(self, row: int) -> None:
        """Expose top-level rows up to ``row`` (e.g. to select one further down)."""
        new = min(len(self._order), row + 1)
        if new > self._loaded:
            self.beginInsertRows(QModelIndex(), self._loaded, new - 1)  # type: ignore[attr-defined]
            self._loaded = new
            self.endInsertRows()  # type: ignore[attr-defined]


class ResultsModel(BatchedRows, QAbstractItemModel):
    """Groups → member files.  Check state (column 0) = marked for the trash; the group row's
    check box shows whether none, some or all of its members are marked."""

    marksChanged = Signal()
    #: Many marks changed at once: views repaint their visible rows (their check states are read anew).
    marksRepaint = Signal()

    HEADERS = ("Name", "Folder", "Similarity", "Kind", "Copies", "Size", "Modified", "Encoding")

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._snap = Snapshot.empty()
        self._sorted: list[int] = []  # every group, in sort order
        self._order: list[int] = []  # row → snapshot group index (sorted, filtered)
        self._pos: list[int] = []  # snapshot group index → row, -1 when filtered out
        self._loaded = 0  # rows exposed to views so far (fetchMore)
        self._group_filter: list[bool] | None = None  # per snapshot group; None shows all
        # Per snapshot group, of the files the filter shows: how many, and the bytes of those that are not
        # the reference (None: every file is shown).
        self._g_shown: list[int] | None = None
        self._g_shown_bytes: list[int] | None = None
        self._marked: set[int] = set()  # file ids
        self._marked_members: list[int] | None = None  # (marked_members, until the marks change)
        self._protected_roots: tuple[str, ...] = ()
        self._protected_prefixes: tuple[str, ...] = ()
        self._bold = QFont()
        self._bold.setBold(True)
        self._sort: tuple[int, Qt.SortOrder] | None = None
        self._locale = QLocale()

    # -- snapshot ---------------------------------------------------------------------------
    @property
    def snapshot(self) -> Snapshot:
        return self._snap

    def set_snapshot(
        self, snap: Snapshot, group_filter: list[bool] | None = None, shown: GroupShown | None = None
    ) -> None:
        """Swap in new results (a model reset), showing groups ``g`` with ``group_filter[g]``
        (None: all) and counting in each group header only the files ``shown`` counts (None: all).
        Marks of files still present are kept.  Views normally go through
        :meth:`ResultsProxy.set_snapshot`, which computes the filter."""
        self.beginResetModel()
        self._snap = snap
        self._group_filter = group_filter
        self._set_shown(shown)
        self._sorted = self._sorted_order(*self._sort) if self._sort is not None else list(range(snap.n_groups))
        self._apply_filter()
        self._marked_members = None
        if self._marked:
            self._marked &= set(snap.l_file_id)
        self.endResetModel()
        self.marksChanged.emit()

    def set_group_filter(self, visible: list[bool] | None, shown: GroupShown | None = None) -> None:
        """Show only groups ``g`` with ``visible[g]`` (None: all), their headers counting the files
        ``shown`` counts (None: all).  A model reset."""
        self.beginResetModel()
        self._group_filter = visible
        self._set_shown(shown)
        if self._sort is not None and self._sort[0] == COL_SIZE:
            self._sorted = self._sorted_order(*self._sort)  # (a group's size counts its shown files)
        self._apply_filter()
        self.endResetModel()

    def _set_shown(self, shown: GroupShown | None) -> None:
        self._g_shown = None if shown is None else shown.files
        self._g_shown_bytes = None if shown is None else shown.bytes

    def group_bytes(self, g: int) -> int:
        """Bytes of group ``g``'s shown extra copies: what removing them would free."""
        return self._snap.l_g_reclaim[g] if self._g_shown_bytes is None else self._g_shown_bytes[g]

    def _apply_filter(self) -> None:
        vis = self._group_filter
        self._order = self._sorted if vis is None else [g for g in self._sorted if vis[g]]
        pos = np.full(self._snap.n_groups, -1, dtype=np.int64)
        pos[np.asarray(self._order, dtype=np.int64)] = np.arange(len(self._order), dtype=np.int64)
        self._pos = pos.tolist()
        self._loaded = min(FETCH_BATCH, len(self._order))

    def shown_order(self) -> list[int]:
        """Snapshot indexes of the groups the filter shows, in the shown order (fetched or not)."""
        return list(self._order)

    @property
    def shown_groups(self) -> int:
        """Groups passing the group filter (loaded into views or not)."""
        return len(self._order)

    def group_at_row(self, row: int) -> int:
        return self._order[row]

    def row_of_group(self, g: int) -> int:
        """Row of group ``g``, -1 when the filter hides it."""
        return self._pos[g]

    def member_of(self, index: ModelIndex) -> int:
        """Flattened member index of a file row; of the reference for a group row; -1 if invalid."""
        if not index.isValid():
            return -1
        iid = index.internalId()
        if iid == 0:
            return self._snap.l_start[self._order[index.row()]]
        return self._snap.l_start[iid - 1] + index.row()

    def group_of(self, index: ModelIndex) -> int:
        if not index.isValid():
            return -1
        iid = index.internalId()
        return self._order[index.row()] if iid == 0 else iid - 1

    def group_index(self, g: int, column: int = 0, load: bool = False) -> QModelIndex:
        """Index of group ``g`` (invalid when filtered out or, unless ``load``, not fetched yet)."""
        row = self._pos[g]
        if row < 0:
            return QModelIndex()
        if row >= self._loaded:
            if not load:
                return QModelIndex()
            self.ensure_loaded(row)
        return self.createIndex(row, column, 0)

    def member_index(self, m: int, column: int = 0, load: bool = False) -> QModelIndex:
        g = self._snap.l_group[m]
        if not self.group_index(g, load=load).isValid():
            return QModelIndex()
        return self.createIndex(m - self._snap.l_start[g], column, g + 1)

    # -- structure --------------------------------------------------------------------------
    def index(self, row: int, column: int, parent: ModelIndex = _ROOT) -> QModelIndex:
        # Bounds checked here rather than with hasIndex(), which would call rowCount and
        # columnCount back through Python: index() runs for every laid-out row.
        if row < 0 or not 0 <= column < _N_COLUMNS:
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column, 0) if row < self._loaded else QModelIndex()
        if parent.internalId() != 0 or parent.column() != 0:
            return QModelIndex()
        g = self._order[parent.row()]
        if row >= self._snap.l_start[g + 1] - self._snap.l_start[g]:
            return QModelIndex()
        return self.createIndex(row, column, g + 1)

    def parent(self, child: ModelIndex | None = None) -> Any:  # type: ignore[override]
        if child is None:  # QObject.parent()
            return super().parent()
        if not child.isValid():
            return QModelIndex()
        iid = child.internalId()
        if iid == 0:
            return QModelIndex()
        return self.createIndex(self._pos[iid - 1], 0, 0)

    def rowCount(self, parent: ModelIndex = _ROOT) -> int:
        if not parent.isValid():
            return self._loaded
        if parent.column() != 0 or parent.internalId() != 0:
            return 0
        return self._snap.group_size(self._order[parent.row()])

    def columnCount(self, parent: ModelIndex = _ROOT) -> int:
        return len(self.HEADERS)

    def hasChildren(self, parent: ModelIndex = _ROOT) -> bool:
        return self.rowCount(parent) > 0

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(self.HEADERS):
            if role == Qt.ItemDataRole.DisplayRole:
                return _tr(self.HEADERS[section])
            if role == Qt.ItemDataRole.ToolTipRole:
                return _HEADER_TIPS.get(section) and _tr(_HEADER_TIPS[section]) or no_data()
        return no_data()

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        # Called for every laid-out row: precomputed constants, no enum arithmetic here.
        if not index.isValid():
            return _NO_FLAGS
        if index.internalId() == 0:
            return _F_GROUP0 if index.column() == 0 else _F_ITEM
        return _F_MEMBER0 if index.column() == 0 else _F_MEMBER

    # -- data -------------------------------------------------------------------------------
    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return no_data()
        s = self._snap
        iid = index.internalId()
        col = index.column()
        if iid == 0:
            return self._group_data(self._order[index.row()], col, role)
        m = s.l_start[iid - 1] + index.row()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == COL_NAME:  # (a name that is not UTF-8 as the command line shows it: caf\xe9, not caf�)
                return display_path(s.names[m])
            if col == COL_FOLDER:
                return display_path(s.folder_of(m))
            if col == COL_COPIES:
                return self._copies_text(m)
            if col == COL_SIMILARITY:
                v = s.l_sim[m]
                return percent_text(v)
            if col == COL_KIND:
                if s.l_is_ref[m]:
                    return _tr("reference")
                if s.member_view(m) == "code":
                    return _tr("{0} (code)").format(_tr(s.kind_name(m)))
                return _tr(s.kind_name(m))
            if col == COL_SIZE:
                return format_size(s.l_size[m])
            if col == COL_MODIFIED:
                return format_date(s.l_mtime[m])
            if col == COL_ENCODING:
                return s.encodings[m] or (_tr("binary") if not s.is_text[m] else "")
            return no_data()
        if role == SortRole:
            return (s.names[m], s.folder_of(m), s.l_sim[m], s.l_kind[m], s.l_set_size[m], s.l_size[m], s.l_mtime[m],
                    s.encodings[m] or "")[col]
        if role == Qt.ItemDataRole.CheckStateRole and col == 0:
            return Qt.CheckState.Checked if s.l_file_id[m] in self._marked else Qt.CheckState.Unchecked
        if role == SimilarityRole:
            v = s.l_sim[m]
            return no_data() if math.isnan(v) else v
        if role == PathRole:
            return s.paths[m]
        if role == FileIdRole:
            return s.l_file_id[m]
        if role == MemberRole:
            return m
        if role == IsGroupRole:
            return False
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == COL_COPIES and s.l_set_size[m] > 1:
                return self._copies_tip(m)
            if s.l_is_ref[m]:
                return _tr("Reference (kept): {0}").format(display_path(s.paths[m]))
            if col == COL_SIMILARITY:
                return s.scores_text(m) or display_path(s.paths[m])
            return display_path(s.paths[m])
        if role == Qt.ItemDataRole.FontRole and s.l_is_ref[m]:
            return self._bold
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_SIMILARITY, COL_SIZE):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return no_data()

    def _copies_text(self, m: int) -> str:
        """A member's place in its copy set: "kept · 12" for the file kept of a set of 12,
        "copy" (same bytes) or "copy (text)" (same text in another encoding or line ending) for
        the others, "" for a file without a copy."""
        s = self._snap
        if s.l_set_size[m] < 2:
            return ""
        if s.l_keeper[m]:
            return _tr("kept · {0}").format(s.l_set_size[m])
        return _tr("copy") if s.l_copy_kind[m] == KIND_CODE["exact"] else _tr("copy (text)")

    def _copies_tip(self, m: int) -> str:
        s = self._snap
        k = s.l_keeper_of[m]
        if s.l_keeper[m]:
            return _tr("One of {0} copies (same bytes, or the same text in another encoding or line ending): this "
                       "one is kept (keep rules, Edit > Keep Rules…); Mark Extra Copies marks the others.").format(
                s.l_set_size[m])
        how = (_tr("the same bytes as") if s.l_copy_kind[m] == KIND_CODE["exact"]
               else _tr("the same text as (another encoding or line ending)"))
        return _tr("An extra copy: {0} {1}, which is kept.").format(how, s.paths[k])

    def _group_data(self, g: int, col: int, role: int) -> Any:
        s = self._snap
        ref = s.l_start[g]
        count = s.l_start[g + 1] - ref
        if role == Qt.ItemDataRole.DisplayRole:
            if col == COL_NAME:
                name = display_path(s.names[ref] or s.paths[ref])
                shown = count if self._g_shown is None else self._g_shown[g]
                if shown < count:  # the Show filter or the search hides some
                    return _tr("{0}  ({1} of {2} files shown)").format(name, shown, count)
                return _tr("{0}  ({1} files)").format(name, count)
            if col == COL_FOLDER:
                return display_path(s.folder_of(ref))
            if col == COL_SIMILARITY:
                v = s.l_g_min_sim[g]
                return percent_text(v)
            if col == COL_KIND:
                return _tr(KINDS[s.l_g_kind[g]])
            if col == COL_COPIES:
                n = s.l_g_extra[g]
                return "" if n == 0 else _tr("{0} extra").format(n)
            if col == COL_SIZE:
                n = self.group_bytes(g)
                return format_size(n) if n else ""  # (nothing reclaimable: no copies)
            return ""
        if role == SortRole:
            v = s.l_g_min_sim[g]
            return (s.names[ref], s.folder_of(ref), v, s.l_g_kind[g], s.l_g_extra[g], self.group_bytes(g),
                    int(s.g_mtime[g]), "")[col]
        if role == Qt.ItemDataRole.CheckStateRole and col == 0:
            marked = sum(1 for f in s.l_file_id[ref : ref + count] if f in self._marked)
            if marked == 0:
                return Qt.CheckState.Unchecked
            return Qt.CheckState.Checked if marked == count else Qt.CheckState.PartiallyChecked
        if role == SimilarityRole:
            v = s.l_g_min_sim[g]
            return no_data() if math.isnan(v) else v
        if role == PathRole:
            return s.paths[ref]
        if role == FileIdRole:
            return s.l_file_id[ref]
        if role == MemberRole:
            return ref
        if role == IsGroupRole:
            return True
        if role == Qt.ItemDataRole.FontRole and col == COL_NAME:
            return self._bold
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == COL_SIZE:
                if self._g_shown is not None and self._g_shown[g] < count:
                    return _tr("{0} can be freed by removing the shown extra copies ({1} with every extra copy "
                               "of the group)").format(format_size(self.group_bytes(g)), format_size(s.l_g_reclaim[g]))
                return _tr("{0} can be freed by removing the extra copies (every copy but the one kept of each set); "
                           "edited versions and excerpts are not counted").format(format_size(s.l_g_reclaim[g]))
            if col == COL_SIMILARITY:
                return _tr("The lowest similarity of a file of this group to its reference (each file's own row "
                           "says its similarity)")
            return _tr("Reference: {0}").format(display_path(s.paths[ref]))
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_SIMILARITY, COL_SIZE):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return no_data()

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.CheckStateRole or index.column() != 0:
            return False
        state = Qt.CheckState(value) if not isinstance(value, Qt.CheckState) else value
        s = self._snap
        if index.internalId() == 0:
            g = self._order[index.row()]
            lo, hi = s.l_start[g], s.l_start[g + 1]
            if state == Qt.CheckState.Unchecked:
                self.set_marked(s.l_file_id[lo:hi], False)
            else:
                # Checking a group marks its copies, never its reference nor a file in a reference
                # folder: the safe choice.
                self.set_marked([s.l_file_id[m] for m in range(lo + 1, hi) if not self.is_protected(m)], True)
            return True
        m = s.l_start[index.internalId() - 1] + index.row()
        self.set_marked([s.l_file_id[m]], state == Qt.CheckState.Checked)
        return True

    # -- marks ------------------------------------------------------------------------------
    @property
    def marked(self) -> frozenset[int]:
        return frozenset(self._marked)

    @property
    def has_marks(self) -> bool:
        return bool(self._marked)

    def is_marked(self, file_id: int) -> bool:
        return file_id in self._marked

    def set_marked(self, file_ids: Iterable[int], on: bool) -> None:
        ids = set(file_ids)
        if on:
            self._marked |= ids
        else:
            self._marked -= ids
        self._marked_members = None
        self._emit_marks(ids)

    def toggle_marked(self, file_ids: Iterable[int]) -> None:
        """Space on a selection: if any is unmarked mark them all, else unmark them all."""
        ids = set(file_ids)
        self.set_marked(ids, not ids <= self._marked)

    def clear_marks(self) -> None:
        ids = set(self._marked)
        self._marked.clear()
        self._marked_members = None
        self._emit_marks(ids)

    def is_protected(self, m: int) -> bool:
        """Whether member ``m`` lies in a reference folder (:attr:`protected_roots`): such files
        are what the user keeps, so no automatic marking ever proposes them."""
        return bool(self._protected_prefixes) and self._snap.paths[m].startswith(self._protected_prefixes)

    @property
    def protected_roots(self) -> tuple[str, ...]:
        return self._protected_roots

    @protected_roots.setter
    def protected_roots(self, roots: Iterable[str]) -> None:
        self._protected_roots = tuple(roots)
        prefixes: set[str] = set()
        for r in self._protected_roots:
            # The folder as listed and as resolved: indexed paths may use either spelling.
            for form in (os.path.abspath(r), os.path.realpath(r)):
                prefixes.add(form.rstrip(os.sep) + os.sep)
        self._protected_prefixes = tuple(sorted(prefixes))

    def copies_to_mark(self, groups: Iterable[int] | None = None) -> list[int]:
        """The members (flattened indexes) Ctrl+M marks (``MainWindow.mark_all_but_reference``,
        which reads "content" copies first): the extra copies of every copy set of ``groups`` (all
        when None) wherever the set sits -- every file of a set but its keeper, chosen by the keep
        rules --, never a file in a reference folder or an empty file.  Edited versions and
        excerpts (near / contained) hold text the reference lacks: they are marked by hand only."""
        s = self._snap
        if s.n_members == 0:
            return []
        want = ~s.m_keeper & (s.m_size > 0)
        if groups is not None:
            shown = np.zeros(s.n_groups, dtype=bool)
            shown[np.fromiter(groups, dtype=np.int64)] = True
            want &= shown[s.m_group]
        ms = np.flatnonzero(want).tolist()
        if self._protected_prefixes:
            ms = [m for m in ms if not self.is_protected(m)]
        return ms

    def _emit_marks(self, ids: set[int]) -> None:
        if not ids:
            return
        s = self._snap
        if len(ids) > 200:
            # Many rows (Ctrl+M over 100,000 groups): the views repaint the rows they show, reading the
            # check states anew (``marksRepaint``), rather than be told one group at a time, which cost
            # ~0.13 ms a group through the proxy (0.26 s for the 1,000 groups fetched), or by one
            # range of the group rows (~40 ms more).
            self.marksRepaint.emit()
        else:
            roles = [Qt.ItemDataRole.CheckStateRole]
            groups: set[int] = set()
            for m in np.flatnonzero(np.isin(s.m_file_id, np.fromiter(ids, np.int64, len(ids)))).tolist():
                idx = self.member_index(m)
                if idx.isValid():
                    self.dataChanged.emit(idx, idx, roles)
                groups.add(s.l_group[m])
            for g in groups:
                idx = self.group_index(g)
                if idx.isValid():
                    self.dataChanged.emit(idx, idx, roles)
        self.marksChanged.emit()

    def marked_members(self) -> list[int]:
        """Flattened member indexes of marked files (each file once); remembered until the marks or
        the snapshot change (the summary and the actions ask for it after every change)."""
        if not self._marked:
            return []
        if self._marked_members is None:
            s = self._snap
            hit = np.flatnonzero(np.isin(s.m_file_id, np.fromiter(self._marked, np.int64, len(self._marked))))
            _, first = np.unique(s.m_file_id[hit], return_index=True)
            self._marked_members = hit[np.sort(first)].tolist()
        return self._marked_members

    def fully_marked_groups(self) -> list[int]:
        """Groups all of whose files are marked: trashing them would keep no copy."""
        s = self._snap
        if not self._marked or s.n_groups == 0:
            return []
        marked = np.isin(s.m_file_id, np.fromiter(self._marked, np.int64, len(self._marked)))
        return np.flatnonzero(np.logical_and.reduceat(marked, s.g_start[:-1])).tolist()

    # -- sorting ----------------------------------------------------------------------------
    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Re-order the groups (members stay reference first).  Vectorised: one argsort."""
        self._sort = (column, order)
        self.layoutAboutToBeChanged.emit()
        old_order = self._order
        loaded = self._loaded
        self._sorted = self._sorted_order(column, order)
        self._apply_filter()
        self._loaded = max(self._loaded, min(loaded, len(self._order)))
        changed_from = []
        changed_to = []
        for pidx in self.persistentIndexList():
            if not pidx.isValid():
                continue
            iid = pidx.internalId()
            g = old_order[pidx.row()] if iid == 0 else iid - 1
            row = self._pos[g]
            changed_from.append(pidx)
            if row < 0 or row >= self._loaded:
                changed_to.append(QModelIndex())  # scrolled out of the fetched rows
            elif iid == 0:
                changed_to.append(self.createIndex(row, pidx.column(), 0))
            else:
                changed_to.append(self.createIndex(pidx.row(), pidx.column(), iid))
        self.changePersistentIndexList(changed_from, changed_to)
        self.layoutChanged.emit()

    def _sorted_order(self, column: int, order: Qt.SortOrder) -> list[int]:
        s = self._snap
        n = s.n_groups
        if n == 0:
            return []
        heads = s.g_start[:-1]
        key: np.ndarray
        if column in (COL_NAME, COL_FOLDER):
            names = [s.names[i].casefold() if column == COL_NAME else s.folder_of(i).casefold()
                     for i in s.l_start[:-1]]
            idx = sorted(range(n), key=names.__getitem__)
            key = np.empty(n, np.int64)
            key[np.asarray(idx, dtype=np.int64)] = np.arange(n)
        elif column == COL_COPIES:
            key = s.g_extra
        elif column == COL_SIMILARITY:
            key = np.nan_to_num(s.g_min_sim, nan=-1.0)
        elif column == COL_KIND:
            key = s.g_kind.astype(np.int64)
        elif column == COL_SIZE:
            key = s.g_reclaim if self._g_shown_bytes is None else np.asarray(self._g_shown_bytes, dtype=np.int64)
        elif column == COL_MODIFIED:
            key = s.g_mtime
        else:
            encs = [s.encodings[i] or "" for i in s.l_start[:-1]]
            idx = sorted(range(n), key=encs.__getitem__)
            key = np.empty(n, np.int64)
            key[np.asarray(idx, dtype=np.int64)] = np.arange(n)
        del heads
        # Stable both ways: descending sorts the negated key, so ties keep snapshot order.
        perm = np.argsort(-key if order == Qt.SortOrder.DescendingOrder else key, kind="stable")
        return perm.tolist()


class ResultsProxy(QSortFilterProxyModel):
    """Filters by member kind and a path search; sorting is done by the source model.

    Masks are computed once per filter change (numpy, plus one pass over the casefolded
    paths).  A group is shown when at least one of its non-reference members is of a chosen
    kind and, with a search text, when any of its files' paths contains the text
    (case-insensitive); of a shown group, the reference and the members of the chosen kinds are
    shown.  The group-level decision is handed to the source model (which then exposes only
    shown groups, in batches): a proxy only sees the rows fetched so far, so filtering groups
    here would find matches only among those.  Members are filtered here, by a list lookup.
    """

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setRecursiveFilteringEnabled(True)
        self.setDynamicSortFilter(False)
        self.setSortRole(SortRole)
        self._kinds = KIND_FILTERS["all"]
        self._search = ""
        self._g_vis: np.ndarray | None = None  # None: everything passes
        self._m_vis: list[bool] | None = None
        self._m_hit: np.ndarray | None = None  # shown files whose path holds the search text (None: no search)
        self._m_shown: np.ndarray | None = None  # bool per member: shown (None: everything passes)
        self._shown: GroupShown | None = None  # per group, what the filter shows (None: everything)

    def setSourceModel(self, model: QAbstractItemModel) -> None:  # type: ignore[override]
        assert isinstance(model, ResultsModel)
        super().setSourceModel(model)

    @property
    def results(self) -> ResultsModel:
        m = self.sourceModel()
        assert isinstance(m, ResultsModel)
        return m

    @property
    def active(self) -> bool:
        return self._kinds != KIND_FILTERS["all"] or bool(self._search)

    def set_snapshot(self, snap: Snapshot) -> None:
        """New results, filtered as before (one model reset)."""
        self._compute(snap)
        self.results.set_snapshot(snap, self._group_list(), self._shown)

    def set_filters(self, kinds: frozenset[int] | None = None, search: str | None = None) -> None:
        if kinds is not None:
            self._kinds = kinds
        if search is not None:
            self._search = search.strip().casefold()
        self._compute(self.results.snapshot)
        # The source resets (group filter), which also makes this proxy re-filter its members.
        self.results.set_group_filter(self._group_list(), self._shown)

    def _group_list(self) -> list[bool] | None:
        return None if self._g_vis is None else self._g_vis.tolist()

    def _compute(self, s: Snapshot) -> None:
        self._m_hit = None
        if not self.active or s.n_groups == 0:
            self._g_vis = None
            self._m_vis = None
            self._m_shown = None
            self._shown = None
            return
        heads = s.g_start[:-1]
        m_kind_ok = np.isin(s.m_kind, np.fromiter(self._kinds, dtype=np.int8))
        if self._kinds == KIND_FILTERS["exact"]:
            m_kind_ok |= s.m_set_size > 1  # the copy sets among members, wherever they sit
        m_shown = m_kind_ok | s.m_is_ref
        g_ok = np.logical_or.reduceat(m_kind_ok & ~s.m_is_ref, heads)
        if self._search:
            q = self._search
            # Only a file the kind filter shows counts as a match: a group must never be listed
            # for a match it then hides.
            m_match = np.fromiter((q in p for p in s.folded), dtype=bool, count=s.n_members) & m_shown
            g_ok &= np.logical_or.reduceat(m_match, heads)
            self._m_hit = m_match & g_ok[s.m_group]
        self._g_vis = g_ok
        m_vis = m_shown & g_ok[s.m_group]
        self._m_shown = m_vis
        self._m_vis = m_vis.tolist()
        self._shown = GroupShown(
            np.add.reduceat(m_vis.astype(np.int64), heads).tolist(),
            np.add.reduceat(np.where(m_vis & ~s.m_keeper, s.m_size, 0), heads).tolist(),
        )

    def filterAcceptsRow(self, source_row: int, source_parent: ModelIndex) -> bool:
        m_vis = self._m_vis
        if m_vis is None or not source_parent.isValid():
            return True  # groups are filtered by the source model
        src = self.results
        return m_vis[src.snapshot.l_start[src.group_at_row(source_parent.row())] + source_row]

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.results.sort(column, order)

    def search_matches(self, max_groups: int) -> list[int]:
        """The shown files whose path holds the search text (flattened member indexes), in the
        shown order, from the first ``max_groups`` shown groups (each holds one); [] without a
        search."""
        hit = self._m_hit
        if hit is None:
            return []
        src = self.results
        s = src.snapshot
        out: list[int] = []
        for row in range(min(max_groups, src.shown_groups)):
            g = src.group_at_row(row)
            lo = s.l_start[g]
            out.extend((lo + np.flatnonzero(hit[lo : s.l_start[g + 1]])).tolist())
        return out

    def visible_groups(self) -> np.ndarray:
        """Snapshot indexes of the groups that pass the filter (int64)."""
        s = self.results.snapshot
        if self._g_vis is None or len(self._g_vis) != s.n_groups:
            return np.arange(s.n_groups, dtype=np.int64)
        return np.flatnonzero(self._g_vis)

    def shown_members(self) -> np.ndarray:
        """bool per member of the snapshot: its row is shown (its group passes and the Show
        filter keeps it)."""
        s = self.results.snapshot
        if self._m_shown is None or self._m_shown.size != s.n_members:
            return np.ones(s.n_members, dtype=bool)
        return self._m_shown

    def totals(self) -> tuple[int, int, int, int]:
        """(groups, files, extra copies, their bytes) of what the filter shows: the rows, not the
        whole groups they belong to.  The bytes are the reclaimable space: every copy but the one
        kept of each copy set (never an edited version or an excerpt), the same at every
        threshold."""
        s = self.results.snapshot
        if s.n_members == 0:
            return 0, 0, 0, 0
        shown = self.shown_members()
        extra = shown & ~s.m_keeper
        return int(self.visible_groups().size), int(shown.sum()), int(extra.sum()), int(s.m_size[extra].sum())
