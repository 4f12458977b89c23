"""Dialogs and the error hook.

:func:`confirm` is the one place the window asks a yes/no question; tests replace it
(monkeypatch ``simscan.gui.dialogs.confirm``) to answer and to see what was asked, without
mocking any of the core.  :func:`install_excepthook` makes an unexpected exception a dialog
with what to do, never a traceback on the console.
"""

from __future__ import annotations

import sys
import traceback
from types import TracebackType

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from simscan.errors import SimscanError


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


def describe_error(err: BaseException) -> tuple[str, str]:
    """(what happened, what to do) for a person."""
    if isinstance(err, SimscanError):
        what = str(err.args[0]) if err.args else str(err)
        return what[:1].upper() + what[1:], err.hint  # core messages follow "simscan: " on the CLI
    if isinstance(err, PermissionError):
        return _tr("Permission denied: {0}").format(err.filename or err), _tr(
            "Check that you may read this file or folder."
        )
    if isinstance(err, FileNotFoundError):
        return _tr("{0} no longer exists.").format(err.filename or err), _tr(
            "It was moved or deleted after the scan. Scan again to update the results."
        )
    if isinstance(err, OSError):
        return f"{err.strerror or err}: {err.filename or ''}".strip(": "), _tr("Check the file and try again.")
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
