"""Dialogs and the error hook.

:func:`confirm` is the one place the window asks a yes/no question; tests replace it
(monkeypatch ``simscan.gui.dialogs.confirm``) to answer and to see what was asked, without
mocking any of the core.  :func:`install_excepthook` makes an unexpected exception a dialog
with what to do, never a traceback on the console.
"""

from __future__ import annotations

import os
import sys
import traceback
from types import TracebackType

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from simscan.display import display_path
from simscan.errors import SimscanError
from simscan.similarity.keep import CRITERIA, KeepRules


def _tr(text: str) -> str:
    return QCoreApplication.translate("dialogs", text)


def confirm(
    parent: QWidget | None, title: str, text: str, details: str = "", danger: bool = False, accept: str = ""
) -> bool:
    """Ask a yes/no question; ``danger`` makes "Cancel" the default button; ``accept``: the label
    of the button that goes ahead (default "Move to Trash")."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning if danger else QMessageBox.Icon.Question)
    box.setWindowTitle(title)
    box.setText(text)
    if details:
        box.setInformativeText(details)
    ok = box.addButton(accept or _tr("Move to Trash"), QMessageBox.ButtonRole.AcceptRole)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(cancel if danger else ok)
    box.setEscapeButton(cancel)
    box.exec()
    return box.clickedButton() is ok


def _filename(err: OSError) -> str:
    """The file an OSError names, as the lists show paths (the core opens files by their bytes: Python's
    ``b'...'`` form is no name for a person); "" when it names none."""
    name = err.filename
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    return display_path(name) if isinstance(name, str) else ""


def describe_error(err: BaseException) -> tuple[str, str]:
    """(what happened, what to do) for a person."""
    if isinstance(err, SimscanError):
        what = str(err.args[0]) if err.args else str(err)
        return what[:1].upper() + what[1:], err.hint  # core messages follow "simscan: " on the CLI
    if isinstance(err, PermissionError):
        return _tr("Permission denied: {0}").format(_filename(err) or err), _tr(
            "Check that you may read this file or folder."
        )
    if isinstance(err, FileNotFoundError):
        return _tr("{0} no longer exists.").format(_filename(err) or err), _tr(
            "It was moved or deleted after the scan. Scan again to update the results."
        )
    if isinstance(err, OSError):
        return f"{err.strerror or err}: {_filename(err)}".strip(": "), _tr("Check the file and try again.")
    if isinstance(err, MemoryError):
        return _tr("Not enough memory."), _tr("Close other programs, or scan fewer folders at once.")
    return _tr("Unexpected error: {0}").format(err) or type(err).__name__, _tr(
        "Your files were not changed. Please report this problem with the details below."
    )


def show_error(parent: QWidget | None, err: BaseException, tb: TracebackType | None = None) -> None:
    what, todo = describe_error(err)
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle(_tr("simscan"))
    box.setText(what)
    if todo:
        box.setInformativeText(todo)
    if not isinstance(err, SimscanError):
        box.setDetailedText("".join(traceback.format_exception(type(err), err, tb or err.__traceback__)))
    box.exec()


_showing = False


def _hook(kind: type[BaseException], err: BaseException, tb: TracebackType | None) -> None:
    global _showing
    if issubclass(kind, KeyboardInterrupt):
        QApplication.quit()
        return
    if _showing or QApplication.instance() is None:
        return  # one dialog at a time; an error while showing it must not loop
    _showing = True
    try:
        show_error(QApplication.activeWindow(), err, tb)
    finally:
        _showing = False


def install_excepthook() -> None:
    """Unhandled exceptions (e.g. in a slot) become a dialog instead of a console traceback."""
    sys.excepthook = _hook


class KeepRulesDialog(QDialog):
    """Edit > Keep Rules…: which file of each set of copies is kept (and leads its group), as an
    ordered list of rules, dupeGuru's "re-prioritize" style: tick the rules that count, drag or move
    them into order (the first decides first, the next breaks its ties), and give the pattern of
    "a path matching the pattern".  Files in reference folders always come first."""

    def __init__(self, rules: KeepRules, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(_tr("Keep Rules"))
        lay = QVBoxLayout(self)
        intro = QLabel(_tr("Which file of each set of copies is kept, and which file leads a group of similar files "
                           "(after the file the others are contained in). Files in reference folders always come "
                           "first; then the ticked rules decide, the first one first:"))
        intro.setWordWrap(True)
        lay.addWidget(intro)
        row = QHBoxLayout()
        self.list = QListWidget()
        self.list.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        order = list(rules.order) + [c for c in CRITERIA if c not in rules.order]
        for c in order:
            item = QListWidgetItem(_tr(CRITERIA[c]))
            item.setData(Qt.ItemDataRole.UserRole, c)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if c in rules.order else Qt.CheckState.Unchecked)
            self.list.addItem(item)
        row.addWidget(self.list, 1)
        buttons = QVBoxLayout()
        for text, step in ((_tr("Up"), -1), (_tr("Down"), 1)):
            b = QPushButton(text)
            b.clicked.connect(lambda _c=False, d=step: self.move(d))
            buttons.addWidget(b)
        buttons.addStretch(1)
        row.addLayout(buttons)
        lay.addLayout(row, 1)
        form = QFormLayout()
        self.pattern = QLineEdit(rules.pattern)
        self.pattern.setPlaceholderText(_tr("e.g. */originals/*  or  *.docx"))
        form.addRow(_tr("Pattern:"), self.pattern)
        lay.addLayout(form)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
                               | QDialogButtonBox.StandardButton.RestoreDefaults)
        box.accepted.connect(self.accept)
        box.rejected.connect(self.reject)
        box.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(lambda: self.set_rules(KeepRules()))
        lay.addWidget(box)
        self.resize(460, 360)

    def move(self, step: int) -> None:
        row = self.list.currentRow()
        if row < 0 or not 0 <= row + step < self.list.count():
            return
        item = self.list.takeItem(row)
        self.list.insertItem(row + step, item)
        self.list.setCurrentRow(row + step)

    def set_rules(self, rules: KeepRules) -> None:
        order = list(rules.order) + [c for c in CRITERIA if c not in rules.order]
        items = {self.list.item(i).data(Qt.ItemDataRole.UserRole): self.list.takeItem(i)
                 for i in reversed(range(self.list.count()))}
        for c in order:
            item = items[c]
            item.setCheckState(Qt.CheckState.Checked if c in rules.order else Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.pattern.setText(rules.pattern)

    def rules(self) -> KeepRules:
        order = tuple(
            str(self.list.item(i).data(Qt.ItemDataRole.UserRole)) for i in range(self.list.count())
            if self.list.item(i).checkState() == Qt.CheckState.Checked
        )
        return KeepRules(order, self.pattern.text().strip())


def ask_keep_rules(parent: QWidget | None, rules: KeepRules) -> KeepRules | None:
    """The keep rules the person chose, or None when cancelled (tests replace this)."""
    dlg = KeepRulesDialog(rules, parent)
    return dlg.rules() if dlg.exec() == QDialog.DialogCode.Accepted else None


def show_list(parent: QWidget | None, title: str, intro: str, lines: list[str]) -> QDialog:
    """A window listing ``lines`` (paths) under ``intro``, opened without blocking; returned."""
    dlg = QDialog(parent)
    dlg.setWindowTitle(title)
    lay = QVBoxLayout(dlg)
    label = QLabel(intro)
    label.setWordWrap(True)
    lay.addWidget(label)
    text = QPlainTextEdit()
    text.setReadOnly(True)
    text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    text.setPlainText("\n".join(lines))
    lay.addWidget(text, 1)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dlg.reject)
    lay.addWidget(buttons)
    dlg.resize(760, 420)
    dlg.open()
    return dlg
