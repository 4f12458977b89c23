"""A histogram of pair similarities, drawn with QPainter (no QtCharts: simscan ships
PySide6-Essentials).  Bars at or above the threshold use the palette's highlight colour, the
rest a muted one; a click sets the threshold."""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QFontMetrics, QHelpEvent, QMouseEvent, QPainter, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from simscan.gui.widgets import blend

#: Bin width in percent.  5 % gives 16 bars over the default 20–100 % range: enough to see the
#: shape (a peak of copies at 100 %, a tail of partial matches) at 250 px wide.
BIN = 5.0


class SimilarityHistogram(QWidget):
    """Counts of pairs per 5 % similarity bin, from ``floor`` to 100 %."""

    thresholdPicked = Signal(float)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._counts = np.zeros(0, np.int64)
        self._floor = 0.0
        self._threshold = 0.0
        self.setMinimumHeight(120)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.setMouseTracking(True)
        self.setToolTip(self.tr("Pairs of files by similarity. Click to set the threshold."))
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def sizeHint(self) -> QSize:
        return QSize(260, 150)

    @property
    def counts(self) -> np.ndarray:
        return self._counts

    def set_data(self, best_scores: np.ndarray, floor: float, threshold: float) -> None:
        """best_scores: each pair's best score (percent)."""
        self._floor = float(np.floor(floor / BIN) * BIN)
        edges = np.arange(self._floor, 100.0 + BIN, BIN)
        edges[-1] = 100.0 + 1e-9  # 100 % belongs to the last bin
        self._counts = np.histogram(np.asarray(best_scores, dtype=np.float64), bins=edges)[0].astype(np.int64)
        self._threshold = threshold
        self.update()

    def set_threshold(self, threshold: float) -> None:
        self._threshold = threshold
        self.update()

    def y_ticks(self) -> list[tuple[int, float]]:
        """The y axis' labelled counts and their heights (0..1 of the plot): 0, the largest bin, and a
        quarter of it half-way up (the bars' square-root scale), when they differ."""
        top = int(self._counts.max()) if self._counts.size else 0
        if top <= 0:
            return []
        ticks = [(0, 0.0), (top, 1.0)]
        quarter = top // 4
        if 0 < quarter < top:
            ticks.insert(1, (quarter, float(np.sqrt(quarter / top))))
        return ticks

    def _plot_rect(self) -> QRectF:
        fm = QFontMetrics(self.font())
        ticks = self.y_ticks()
        gutter = max((fm.horizontalAdvance(f"{c:,}") for c, _ in ticks), default=0) + 6
        return QRectF(self.rect()).adjusted(6 + gutter, fm.height() + 6, -6, -(fm.height() + 6))

    def _bin_at(self, x: float) -> int:
        r = self._plot_rect()
        n = len(self._counts)
        if n == 0 or not r.left() <= x <= r.right():
            return -1
        return min(n - 1, int((x - r.left()) / r.width() * n))

    def paintEvent(self, event: Any) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text = pal.color(QPalette.ColorRole.WindowText)
        muted = pal.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText)
        accent = pal.color(QPalette.ColorRole.Highlight)
        below = blend(pal.color(QPalette.ColorRole.Window), muted, 0.55)
        fm = QFontMetrics(self.font())
        r = self._plot_rect()
        p.setPen(text)
        total = int(self._counts.sum())
        p.drawText(
            QRectF(self.rect()).adjusted(6, 2, -6, 0),
            int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop),
            self.tr("Pairs by similarity") + (f"  ({total:,})" if total else ""),
        )
        n = len(self._counts)
        if n == 0 or total == 0:
            p.setPen(muted)
            p.drawText(r, int(Qt.AlignmentFlag.AlignCenter), self.tr("No similar pairs yet"))
            p.end()
            return
        # Square-root scale: one bin of 10,000 exact copies must not flatten a tail of 20 pairs.
        top = float(np.sqrt(self._counts.max()))
        w = r.width() / n
        for i, c in enumerate(self._counts.tolist()):
            if c == 0:
                continue
            h = max(2.0, r.height() * np.sqrt(c) / top)
            lo = self._floor + i * BIN
            p.setPen(Qt.PenStyle.NoPen)
            on = lo + BIN > self._threshold or i == n - 1  # (the last bin holds 100, the highest threshold)
            p.setBrush(accent if on else below)
            p.drawRoundedRect(QRectF(r.left() + i * w + 1, r.bottom() - h, max(1.0, w - 2), h), 2, 2)
        # Threshold marker.
        x = r.left() + (self._threshold - self._floor) / (100.0 - self._floor) * r.width()
        pen = QPen(text)
        pen.setStyle(Qt.PenStyle.DashLine)
        p.setPen(pen)
        p.drawLine(QPointF(x, r.top() - 2), QPointF(x, r.bottom()))
        # Axes: the y axis labelled with pair counts (square-root scale), the x axis with percentages.
        p.setPen(muted)
        p.drawLine(QPointF(r.left(), r.bottom()), QPointF(r.right(), r.bottom()))
        p.drawLine(QPointF(r.left() - 2, r.top()), QPointF(r.left() - 2, r.bottom()))
        for count, frac in self.y_ticks():
            y = r.bottom() - frac * r.height()
            p.drawLine(QPointF(r.left() - 5, y), QPointF(r.left() - 2, y))
            p.drawText(QRectF(0, y - fm.height() / 2, r.left() - 7, fm.height()),
                       int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), f"{count:,}")
        p.setPen(text)
        ty = r.bottom() + 3
        label = f"≥ {self._threshold:.0f} %"
        lw = fm.horizontalAdvance(label) + 4
        lx = min(max(x - lw / 2, r.left()), r.right() - lw)
        p.drawText(QRectF(lx, ty, lw, fm.height()), int(Qt.AlignmentFlag.AlignCenter), label)
        # The ends of the axis, where the threshold's label leaves room for them.
        low, high = f"{self._floor:.0f} %", "100 %"
        if lx > r.left() + fm.horizontalAdvance(low) + 8:
            p.drawText(QRectF(r.left(), ty, 60, fm.height()), int(Qt.AlignmentFlag.AlignLeft), low)
        if lx + lw < r.right() - fm.horizontalAdvance(high) - 8:
            p.drawText(QRectF(r.right() - 60, ty, 60, fm.height()), int(Qt.AlignmentFlag.AlignRight), high)
        p.end()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            r = self._plot_rect()
            if r.width() > 0 and len(self._counts):
                frac = (event.position().x() - r.left()) / r.width()
                value = self._floor + max(0.0, min(1.0, frac)) * (100.0 - self._floor)
                self.thresholdPicked.emit(round(value))
        super().mousePressEvent(event)

    def event(self, e: Any) -> bool:
        if isinstance(e, QHelpEvent) and e.type() == QHelpEvent.Type.ToolTip:
            i = self._bin_at(e.pos().x())
            if i >= 0:
                lo = self._floor + i * BIN
                QToolTip.showText(
                    e.globalPos(),
                    self.tr("{0} pairs between {1:.0f} % and {2:.0f} %").format(
                        int(self._counts[i]), lo, min(100.0, lo + BIN)
                    ),
                    self,
                )
                return True
        return super().event(e)


class FolderSpaceChart(QWidget):
    """Horizontal bars: the folders where removing copies would free the most space.  A click
    on a bar searches the results for that folder."""

    folderPicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: list[tuple[str, int, int]] = []
        self.setMinimumHeight(120)
        self.setMouseTracking(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(self.tr("Folders holding the most duplicated space. Click one to show its groups."))

    def sizeHint(self) -> QSize:
        return QSize(260, 190)

    @property
    def rows(self) -> list[tuple[str, int, int]]:
        return list(self._rows)

    def set_rows(self, rows: list[tuple[str, int, int]]) -> None:
        """rows: (folder, reclaimable bytes, files), largest first."""
        self._rows = rows
        self.update()

    def _row_rects(self) -> list[QRectF]:
        fm = QFontMetrics(self.font())
        top = fm.height() + 8
        h = max(fm.height() * 2 + 6, 10)
        return [QRectF(6, top + i * h, self.width() - 12, h - 4) for i in range(len(self._rows))]

    def paintEvent(self, event: Any) -> None:
        from simscan.gui.results_model import format_size

        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text = pal.color(QPalette.ColorRole.WindowText)
        muted = pal.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText)
        bar = blend(pal.color(QPalette.ColorRole.Window), pal.color(QPalette.ColorRole.Highlight), 0.55)
        fm = QFontMetrics(self.font())
        p.setPen(text)
        p.drawText(QRectF(6, 2, self.width() - 12, fm.height() + 2), int(Qt.AlignmentFlag.AlignLeft),
                   self.tr("Duplicated space by folder"))
        if not self._rows:
            p.setPen(muted)
            p.drawText(QRectF(self.rect()), int(Qt.AlignmentFlag.AlignCenter), self.tr("No copies found yet"))
            p.end()
            return
        biggest = max(1, self._rows[0][1])
        for (folder, size, files), r in zip(self._rows, self._row_rects()):
            if r.bottom() > self.height():
                break
            label_h = fm.height()
            bar_r = QRectF(r.left(), r.top() + label_h + 1, max(3.0, r.width() * size / biggest), r.height() - label_h - 2)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(bar)
            p.drawRoundedRect(bar_r, 2, 2)
            p.setPen(text)
            value = f"{format_size(size)} · {files:,}"
            vw = fm.horizontalAdvance(value) + 6
            name = fm.elidedText(folder, Qt.TextElideMode.ElideLeft, int(r.width() - vw))
            p.drawText(QRectF(r.left(), r.top(), r.width() - vw, label_h), int(Qt.AlignmentFlag.AlignLeft), name)
            p.setPen(muted)
            p.drawText(QRectF(r.right() - vw, r.top(), vw, label_h), int(Qt.AlignmentFlag.AlignRight), value)
        p.end()

    def _row_at(self, y: float) -> int:
        for i, r in enumerate(self._row_rects()):
            if r.top() <= y <= r.bottom():
                return i
        return -1

    def mousePressEvent(self, event: QMouseEvent) -> None:
        i = self._row_at(event.position().y())
        if event.button() == Qt.MouseButton.LeftButton and 0 <= i < len(self._rows):
            self.folderPicked.emit(self._rows[i][0])
        super().mousePressEvent(event)

    def event(self, e: Any) -> bool:
        if isinstance(e, QHelpEvent) and e.type() == QHelpEvent.Type.ToolTip:
            from simscan.gui.results_model import format_size

            i = self._row_at(e.pos().y())
            if 0 <= i < len(self._rows):
                folder, size, files = self._rows[i]
                QToolTip.showText(
                    e.globalPos(),
                    self.tr("{0}\n{1} in {2:,} copies could be freed").format(folder, format_size(size), files),
                    self,
                )
                return True
        return super().event(e)
