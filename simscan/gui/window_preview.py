"""The preview side of the window: which pair the preview compares for the current row (the
selected file beside its reference, or the reference beside its closest file), kept as it is when a
regroup leaves the two files and their scores unchanged; the preview beside or below the list.

A mixin of :class:`~simscan.gui.mainwindow.MainWindow`: it uses the window's widgets, models and job
runner, and runs nothing slow itself (the core is called from ``jobs`` in workers)."""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QModelIndex, Qt

from simscan.gui import dialogs, jobs
from simscan.gui.preview import FileInfo


class PreviewMixin:
    """Part of :class:`~simscan.gui.mainwindow.MainWindow` (see the module)."""

    def _on_current_changed(self, idx: QModelIndex) -> None:
        self._update_actions()
        # Moving through the rows with the keyboard changes the current row many times a
        # second: compare only where the user settles.
        self._preview_timer.start()

    def _preview_current(self) -> None:
        idx = self.view.currentIndex()
        if not idx.isValid() or self.reviewing:  # (the Pairs tab previews its own selection)
            return
        src = self.proxy.mapToSource(idx)
        snap = self.model.snapshot
        g = self.model.group_of(src)
        ref = snap.l_start[g]
        sel = self.model.member_of(src)
        closest = sel == ref
        if closest:
            # The reference (or the group row) is selected: show it beside the closest file of its
            # group, said so (not as "the selected file": the person selected the reference).
            if snap.group_size(g) < 2:
                return
            sel = self._closest_member(g)
        key = (snap.paths[ref], snap.paths[sel], closest, snap.scores_text(sel), snap.kind_name(sel))
        if key == self._previewed and self.preview.currentIndex() == 1:
            # The same two files with the same scores (the slider regrouped, a sort, a filter kept the
            # row): keep the preview as it is, scrolled where the person left it.
            return
        self._previewed = key
        self.show_preview(ref, sel, closest=closest)

    def _closest_member(self, g: int) -> int:
        """The member of group ``g`` most similar to its reference (the first of equals; after a
        "make reference" members are not in score order, and some may have no score: NaN)."""
        snap = self.model.snapshot
        ms = range(snap.l_start[g] + 1, snap.l_start[g + 1])
        return max(ms, key=lambda m: (-1.0 if math.isnan(snap.l_sim[m]) else snap.l_sim[m], -m))

    def _info(self, m: int, role: str) -> FileInfo:
        s = self.model.snapshot
        return FileInfo(s.paths[m], s.l_size[m], s.l_mtime[m], s.encodings[m], s.is_text[m], role)

    def show_preview(self, ref: int, sel: int, closest: bool = False) -> None:
        """Compare member ``sel`` with its group's reference ``ref`` (flattened indexes) in a worker;
        ``closest``: the reference row is selected and ``sel`` is shown as its closest file."""
        snap = self.model.snapshot
        req = jobs.PreviewRequest(
            snap.paths[ref], snap.paths[sel],
            self._info(ref, "reference"), self._info(sel, "closest" if closest else "selected"),
            snap.pairs[sel] if sel < len(snap.pairs) else None, snap.l_sim[sel],
            self.results.code_view if self.results is not None else self.code_view,  # as the rows were scored
            self.results.ignore if self.results is not None else (),
            closest,
        )
        self.preview.show_message(self.tr("Comparing…"))
        self.runner.start(
            "preview",
            lambda p, c: jobs.compare_files(req, p, c),
            finished=self._on_preview,
            failed=self._on_preview_failed,
        )

    def _on_preview(self, value: tuple[jobs.PreviewRequest, Any]) -> None:
        req, comp = value
        self.preview.show_comparison(comp, req.ref_info, req.sel_info, req.pair, req.similarity, req.closest,
                                     pair_mode=req.pair_mode)
        self.previewShown.emit()

    def _on_preview_failed(self, err: BaseException) -> None:
        what, todo = dialogs.describe_error(err)
        self.preview.show_message(f"{what}\n{todo}")
        self.previewShown.emit()

    def toggle_preview_beside(self) -> None:
        """The preview below the list, or beside it (remembered)."""
        beside = self.act_beside.isChecked()
        self.right_split.setOrientation(Qt.Orientation.Horizontal if beside else Qt.Orientation.Vertical)
        total = self.right_split.width() if beside else self.right_split.height()
        self.right_split.setSizes([total * 55 // 100, total * 45 // 100] if beside else [total * 3 // 4, total // 4])
        self.settings.setValue("window/preview_beside", beside)
