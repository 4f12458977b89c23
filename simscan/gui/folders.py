"""The folders to scan: each optionally a reference folder (its files are the originals); folders
can be dropped on the list from a file manager (``text/uri-list``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QCoreApplication,
    QMimeData,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    QUrl,
    Signal,
)

from simscan.gui.results_model import no_data

ModelIndex = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()


def _tr(text: str) -> str:
    return QCoreApplication.translate("FolderModel", text)


@dataclass(frozen=True)
class Folder:
    path: str
    reference: bool = False


class FolderModel(QAbstractListModel):
    """Folders to scan.  Check state = reference folder (its files are the originals).
    Folders can be dropped on it from a file manager (``text/uri-list``)."""

    foldersChanged = Signal()

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._folders: list[Folder] = []

    @property
    def folders(self) -> list[Folder]:
        return list(self._folders)

    def set_folders(self, folders: Iterable[Folder]) -> None:
        self.beginResetModel()
        self._folders = []
        seen: set[str] = set()
        for f in folders:
            if f.path not in seen:
                seen.add(f.path)
                self._folders.append(f)
        self.endResetModel()
        self.foldersChanged.emit()

    def add(self, paths: Iterable[str], reference: bool = False) -> int:
        """Add folders not yet listed (normalised absolute paths); returns how many were added."""
        have = {f.path for f in self._folders}
        new = []
        for p in paths:
            p = os.path.abspath(os.path.expanduser(p))
            if p not in have:
                have.add(p)
                new.append(Folder(p, reference))
        if new:
            self.beginInsertRows(QModelIndex(), len(self._folders), len(self._folders) + len(new) - 1)
            self._folders.extend(new)
            self.endInsertRows()
            self.foldersChanged.emit()
        return len(new)

    def remove_rows(self, rows: Iterable[int]) -> None:
        for row in sorted(set(rows), reverse=True):
            if 0 <= row < len(self._folders):
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._folders[row]
                self.endRemoveRows()
        self.foldersChanged.emit()

    def set_reference(self, row: int, on: bool) -> None:
        self.setData(
            self.index(row, 0), Qt.CheckState.Checked if on else Qt.CheckState.Unchecked, Qt.ItemDataRole.CheckStateRole
        )

    def rowCount(self, parent: ModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._folders)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._folders):
            return no_data()
        f = self._folders[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return f.path
        if role == Qt.ItemDataRole.CheckStateRole:
            return Qt.CheckState.Checked if f.reference else Qt.CheckState.Unchecked
        if role == Qt.ItemDataRole.ToolTipRole:
            exists = os.path.isdir(f.path)
            tip = _tr("Reference folder: its files are kept as the originals") if f.reference else _tr(
                "Tick to make this a reference folder (its files are kept as the originals)"
            )
            return f"{f.path}\n{tip}" + ("" if exists else "\n" + _tr("This folder does not exist."))
        return no_data()

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.ItemIsDropEnabled
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.CheckStateRole:
            return False
        state = Qt.CheckState(value) if not isinstance(value, Qt.CheckState) else value
        row = index.row()
        self._folders[row] = Folder(self._folders[row].path, state == Qt.CheckState.Checked)
        self.dataChanged.emit(index, index, [Qt.ItemDataRole.CheckStateRole])
        self.foldersChanged.emit()
        return True

    # -- drag and drop ----------------------------------------------------------------------
    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.CopyAction | Qt.DropAction.LinkAction

    def mimeTypes(self) -> list[str]:
        return ["text/uri-list"]

    @staticmethod
    def folders_in(mime: QMimeData) -> list[str]:
        """Local folders among dropped URLs (a dropped file adds its folder)."""
        out = []
        for url in mime.urls() if mime.hasUrls() else []:
            if not isinstance(url, QUrl) or not url.isLocalFile():
                continue
            p = url.toLocalFile()
            if os.path.isdir(p):
                out.append(p)
            elif os.path.isfile(p):
                out.append(os.path.dirname(p))
        return out

    def canDropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: ModelIndex) -> bool:
        return bool(self.folders_in(data))

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: ModelIndex) -> bool:
        paths = self.folders_in(data)
        if not paths:
            return False
        self.add(paths)
        return True
