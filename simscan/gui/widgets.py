"""Small widgets: the similarity bar delegate, the in-window message bar, a list view with a
placeholder, a label that shortens long paths, and the results tree (Space marks, Enter opens).  Colours come from the palette,
so light and dark themes both work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QModelIndex, QPersistentModelIndex, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QPainter, QPalette, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListView,
    QPushButton,
    QSizePolicy,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QTreeView,
    QWidget,
)

from simscan.gui.results_model import SimilarityRole


def blend(a: QColor, b: QColor, t: float) -> QColor:
    """``a`` moved a fraction ``t`` (0..1) towards ``b``: tints that follow the theme."""
    return QColor(
        round(a.red() + (b.red() - a.red()) * t),
        round(a.green() + (b.green() - a.green()) * t),
        round(a.blue() + (b.blue() - a.blue()) * t),
    )



def paint_placeholder(view: QAbstractItemView, text: str | Callable[[], str], margin: int) -> None:
    """Draw ``text`` (or what it returns, asked only then) greyed in the middle of an item view
    whose model has no rows."""
    model = view.model()
    if model is None or model.rowCount() != 0:
        return
    if callable(text):
        text = text()
    if not text:
        return
    p = QPainter(view.viewport())
    p.setPen(view.palette().color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text))
    p.drawText(
        view.viewport().rect().adjusted(margin, margin, -margin, -margin),
        int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap),
        text,
    )
    p.end()

class SimilarityBarDelegate(QStyledItemDelegate):
    """Draws a percentage (``SimilarityRole``, 0..100) as a bar behind its text."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        value = index.data(SimilarityRole)
        if value is None:
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text = opt.text
        opt.text = ""
        style = opt.widget.style() if opt.widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)

        pal = opt.palette
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        under = pal.color(QPalette.ColorRole.Highlight if selected else QPalette.ColorRole.Base)
        # On the selected row the bar stays a faint tint of the highlight, so that its text (in the
        # highlighted-text colour) keeps the contrast of any selected text.
        accent = pal.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Highlight)
        track_col = blend(under, accent, 0.08 if selected else 0.12)
        bar_col = blend(under, accent, 0.22 if selected else 0.45)
        r = self.bar_rect(opt.rect)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(track_col)
        painter.drawRoundedRect(r, 3, 3)
        frac = max(0.0, min(1.0, float(value) / 100.0))
        if frac > 0:
            painter.setBrush(bar_col)
            painter.drawRoundedRect(QRectF(r.left(), r.top(), max(4.0, r.width() * frac), r.height()), 3, 3)
        painter.setPen(pal.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text))
        painter.drawText(self.text_rect(opt.rect), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight),
                         text)
        painter.restore()

    @staticmethod
    def bar_rect(cell: Any) -> QRectF:
        """The bar behind the text, inset in the cell."""
        return QRectF(cell).adjusted(3, 2, -3, -2)

    @staticmethod
    def text_rect(cell: Any) -> QRectF:
        """Where the percentage is drawn: the cell's full height (inset, the digits were clipped by
        1-2 px in every row), its sides inset."""
        return QRectF(cell).adjusted(7, 0, -7, 0)


class ElidedLabel(QLabel):
    """One line of plain text shortened in the middle ("…") to the width the layout gives it: a
    long path never widens the window.  ``text()`` is the whole text (give it a tooltip too)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:
        self._full = text
        self._elide()

    def text(self) -> str:
        return self._full

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideMiddle, max(0, self.contentsRect().width()))
        super().setText(shown)


class MessageBar(QFrame):
    """A dismissable message inside the window (errors with what to do; never a console
    traceback).  Optional action button.

    A message that describes a state ("marked files in a reference folder", "the index is
    damaged") comes with ``refresh``: a function giving its text for the state now, or None once
    the state is gone; :meth:`recheck` (the window calls it when marks, folders or results change)
    then updates or hides it, so that it never outlives what it describes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.setBackgroundRole(QPalette.ColorRole.AlternateBase)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 6, 6, 6)
        self.icon = QLabel()
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.action = QPushButton()
        self.action.hide()
        close = QToolButton()
        close.setAutoRaise(True)
        close.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_TitleBarCloseButton))
        close.setToolTip(self.tr("Dismiss"))
        close.clicked.connect(self.hide)
        lay.addWidget(self.icon, 0, Qt.AlignmentFlag.AlignTop)
        lay.addWidget(self.text, 1)
        lay.addWidget(self.action, 0, Qt.AlignmentFlag.AlignTop)
        lay.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self._callback: Any = None
        self._refresh: Callable[[], str | None] | None = None
        self.action.clicked.connect(self._run_action)
        self.hide()

    def show_message(
        self,
        text: str,
        level: str = "error",
        action: str = "",
        callback: Any = None,
        refresh: Callable[[], str | None] | None = None,
    ) -> None:
        icons = {
            "error": QStyle.StandardPixmap.SP_MessageBoxCritical,
            "warning": QStyle.StandardPixmap.SP_MessageBoxWarning,
            "info": QStyle.StandardPixmap.SP_MessageBoxInformation,
        }
        size = self.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
        self.icon.setPixmap(self.style().standardIcon(icons.get(level, icons["info"])).pixmap(size, size))
        self.text.setText(text)
        self.level = level
        self._callback = callback
        self.action.setVisible(bool(action and callback))
        self.action.setText(action)
        self._refresh = refresh
        self.show()

    def recheck(self) -> None:
        """Update a state's message to the state now; hide it when the state is gone."""
        if self._refresh is None or self.isHidden():
            return
        text = self._refresh()
        if text is None:
            self.hide()
        elif text != self.text.text():
            self.text.setText(text)

    def _run_action(self) -> None:
        cb = self._callback
        self.hide()
        if cb is not None:
            cb()


class PlaceholderListView(QListView):
    """A list view that shows a hint when empty (e.g. "drop folders here")."""

    def __init__(self, placeholder: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.placeholder = placeholder

    def paintEvent(self, event: Any) -> None:
        super().paintEvent(event)
        paint_placeholder(self, self.placeholder, 8)


class ResultsView(QTreeView):
    """The results tree: Space toggles marks of the selected files, Enter opens the current
    file; both as signals so the window decides what they do."""

    markRequested = Signal()
    openRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        #: What the empty view says, asked when it is painted empty.
        self.placeholder: Callable[[], str] = str

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key == Qt.Key.Key_Space and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            self.markRequested.emit()
            event.accept()
            return
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.openRequested.emit()
            event.accept()
            return
        super().keyPressEvent(event)

    def event(self, e: QEvent) -> bool:
        # Keep Space for marking even where the style would use it to toggle a check box.
        if e.type() == QEvent.Type.ShortcutOverride and isinstance(e, QKeyEvent) and e.key() == Qt.Key.Key_Space:
            e.accept()
            return True
        return super().event(e)

    def paintEvent(self, event: Any) -> None:
        super().paintEvent(event)
        paint_placeholder(self, self.placeholder, 24)
