"""The actions on files: marking (Space, Ctrl+M the extra copies by the keep rules, invert,
hide), the keep rules and the other choices remembered per index (references made with Ctrl+E,
hidden files), moving the marked files to the trash after the checks, and the plan of them for
``simscan apply``.

A mixin of :class:`~simscan.gui.mainwindow.MainWindow`: it uses the window's widgets, models and job
runner, and runs nothing slow itself (the core is called from ``jobs`` in workers)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtWidgets import QFileDialog

from simscan import cleanup
from simscan.gui import dialogs, jobs
from simscan.gui.results_model import (
    KIND_CODE,
    IsGroupRole,
    format_size,
)
from simscan.similarity.keep import DEFAULT_KEEP, KeepRules

#: Files made references (Ctrl+E) remembered per index, the latest ones.
MAX_SAVED_REFERENCES = 10_000


class ActionsMixin:
    """Part of :class:`~simscan.gui.mainwindow.MainWindow` (see the module)."""

    def toggle_mark_selection(self) -> None:
        """Space: mark the selected files, or unmark them if all are marked.  A selected group
        row stands for its copies (never its reference)."""
        snap = self.model.snapshot
        self.model.protected_roots = self.reference_roots()
        ids: list[int] = []
        protected: list[tuple[int, str]] = []  # (file id, path) selected in a reference folder
        rows = self.view.selectionModel().selectedRows(0)
        if not rows and self.view.currentIndex().isValid():
            rows = [self.view.currentIndex().siblingAtColumn(0)]
        for idx in rows:
            src = self.proxy.mapToSource(idx)
            if src.data(IsGroupRole):
                g = self.model.group_of(src)
                # A group row stands for its copies, never for files in a reference folder.
                ids.extend(snap.l_file_id[m] for m in range(snap.l_start[g] + 1, snap.l_start[g + 1])
                           if not self.model.is_protected(m))
            else:
                m = self.model.member_of(src)
                ids.append(snap.l_file_id[m])
                if self.model.is_protected(m):
                    protected.append((snap.l_file_id[m], snap.paths[m]))
        if ids:
            self.model.toggle_marked(ids)
            if any(self.model.is_marked(fid) for fid, _ in protected):
                text = self._reference_marks_text()
                if text:
                    self.show_message(text, "warning", refresh=self._reference_marks_text)

    def _reference_marks_text(self) -> str | None:
        """The warning about marked files in reference folders, for the marks now; None when no
        marked file is in one (unmarked, moved, or the folder no longer a reference folder)."""
        snap = self.model.snapshot
        inside = [m for m in self.model.marked_members() if self.model.is_protected(m)]
        if not inside:
            return None
        return self.tr("Marked {0:,} file(s) in a reference folder, e.g. {1}. Files there are the ones you keep; "
                       "unmark them (Space) unless you really mean to remove them.").format(
            len(inside), snap.paths[inside[0]])

    def mark_all_but_reference(self) -> None:
        """Ctrl+M: mark the extra copies of the shown groups, wherever their sets sit (see
        ResultsModel.copies_to_mark).  Byte copies are marked at once; "content" copies (same words,
        other bytes) once a worker has read each beside its set's kept file: only those that differ
        in encoding and line endings alone are true copies -- not another indentation, spacing or
        wrapping (two different programs)."""
        self.model.protected_roots = self.reference_roots()
        s = self.model.snapshot
        ms = np.asarray(self.model.copies_to_mark(self.proxy.visible_groups().tolist()), dtype=np.int64)
        text = s.m_copy_kind[ms] == KIND_CODE["content"]
        self.model.set_marked(s.m_file_id[ms[~text]].tolist(), True)
        check = ms[text].tolist()
        if not check:
            self.marksVerified.emit()
            return
        pairs = [(s.paths[m], s.paths[s.l_keeper_of[m]]) for m in check]
        ids = [s.l_file_id[m] for m in check]
        index = self.index_path  # file ids name files of this index only
        self.runner.start(
            "verify",
            lambda progress, cancel: jobs.true_copies(pairs, progress, cancel),
            finished=lambda ok: self._on_copies_verified(index, ids, ok),
            failed=self._on_job_failed,
            cancelled=lambda: self._on_copies_verified(index, ids, None),
            progress=self._on_progress,
        )
        self._set_busy(self.tr("Reading the copies in other encodings beside their references…"))

    def _idle_unless_working(self, text: str = "") -> None:
        """The end of a side job (Ctrl+M's reading, a cancelled load): idle, unless other work with a
        progress bar (a scan, load or trash) is under way.  (The job that called this is no longer
        counted: JobRunner forgets a slot's job before delivering its outcome.)"""
        if self._working():
            self._update_actions()
        else:
            self._set_idle(text)

    def _on_copies_verified(self, index: Path, ids: list[int], ok: list[bool] | None) -> None:
        """The end of Ctrl+M's reading: ``ok`` per copy, or None when it was stopped."""
        if index != self.index_path:  # another index was opened meanwhile: these ids are not its files
            self._idle_unless_working()
            self.marksVerified.emit()
            return
        if ok is None:
            self._idle_unless_working(self.tr("Stopped reading the copies: only exact copies marked"))
            self.marksVerified.emit()
            return
        self._idle_unless_working()
        # Only what Ctrl+M would still mark: the grouping may have changed during the reading (a copy made
        # the reference, the threshold moved).
        snap = self.model.snapshot
        allowed = {snap.l_file_id[m] for m in self.model.copies_to_mark()}
        self.model.set_marked([fid for fid, good in zip(ids, ok) if good and fid in allowed], True)
        left = len(ids) - sum(ok)
        if left:
            why = self.tr(
                "another document format (a DOCX beside its text or PDF), another indentation, spacing or wrapping "
                "(two programs that differ only in indentation differ), or unreadable now. Mark by hand what you "
                "mean to move."
            )
            self.show_message(
                (
                    self.tr("1 file with the same words as its kept copy was not marked: its text is not exactly the "
                            "kept copy's — ")
                    if left == 1
                    else self.tr("{0:,} files with the same words as their kept copies were not marked: their text is "
                                 "not exactly the kept copy's — ").format(left)
                )
                + why,
                "info",
            )
        self.marksVerified.emit()

    def unmark_all(self) -> None:
        self.model.clear_marks()

    def invert_marks(self) -> None:
        """Ctrl+I: in the shown rows, mark what is unmarked and unmark what is marked -- never marking a
        group's reference or a file in a reference folder (the files kept)."""
        self.model.protected_roots = self.reference_roots()
        s = self.model.snapshot
        shown = np.flatnonzero(self.proxy.shown_members() & ~s.m_is_ref).tolist()
        on = [s.l_file_id[m] for m in shown if not self.model.is_marked(s.l_file_id[m]) and not self.model.is_protected(m)]
        off = [s.l_file_id[m] for m in shown if self.model.is_marked(s.l_file_id[m])]
        self.model.set_marked(off, False)
        self.model.set_marked(on, True)

    def _per_index(self, key: str) -> dict[str, Any]:
        """A setting kept per index (``key``: the settings key of a JSON object index path -> value)."""
        try:
            raw = json.loads(self.settings.value(key, "{}", str) or "{}")
        except (ValueError, TypeError):
            return {}
        return raw if isinstance(raw, dict) else {}

    def _save_per_index(self, key: str, value: Any) -> None:
        saved = self._per_index(key)
        saved[str(self.index_path)] = value
        self.settings.setValue(key, json.dumps(saved))

    def _restore_per_index(self) -> None:
        """The keep rules and the hidden files remembered for this index."""
        raw = self._per_index("results/keep_rules").get(str(self.index_path))
        try:
            self.keep_rules = KeepRules(tuple(raw["order"]), str(raw.get("pattern", ""))) if raw else DEFAULT_KEEP
        except (KeyError, TypeError, ValueError):
            self.keep_rules = DEFAULT_KEEP
        hidden = self._per_index("results/hidden").get(str(self.index_path), [])
        self.hidden = {str(p) for p in hidden} if isinstance(hidden, list) else set()
        self._update_actions()

    def edit_keep_rules(self) -> None:
        rules = dialogs.ask_keep_rules(self, self.keep_rules)
        if rules is not None:
            self.set_keep_rules(rules)

    def set_keep_rules(self, rules: KeepRules) -> None:
        """Use ``rules`` for every copy set and group (remembered for this index) and regroup."""
        self.keep_rules = rules
        self._save_per_index("results/keep_rules", {"order": list(rules.order), "pattern": rules.pattern})
        self.status_label.setText(self.tr("Keeping the file {0}.").format(self.tr(rules.describe())))
        self.regroup()

    def hide_selection(self) -> None:
        """Ctrl+H: leave the selected files out of the results, for this index, until Show Hidden Files
        Again; their marks go."""
        snap = self.model.snapshot
        ms = self.selected_members()
        if not ms and (cur := self.model.member_of(self.proxy.mapToSource(self.view.currentIndex()))) >= 0:
            ms = [cur]
        if not ms:
            return
        self.model.set_marked([snap.l_file_id[m] for m in ms], False)
        self.hidden |= {snap.paths[m] for m in ms}
        self._save_per_index("results/hidden", sorted(self.hidden))
        self.status_label.setText(self.tr("Hid {0} from the results (View > Show Hidden Files Again brings them "
                                          "back).").format(self._count(len(ms), "file")))
        self._update_actions()
        self.regroup()

    def unhide_all(self) -> None:
        self.hidden = set()
        self._save_per_index("results/hidden", [])
        self._update_actions()
        self.regroup()

    def show_empty_files(self) -> None:
        empty = self.model.snapshot.empty_files
        self.empty_dialog = dialogs.show_list(
            self, self.tr("Empty files"),
            self.tr("{0:,} empty files. They are left out of the groups: every empty file is alike, so one group of "
                    "them would pair unrelated files.").format(len(empty)), list(empty))

    def make_reference(self) -> None:
        fid = self._current_file_id()
        if fid is None or self.results is None:
            return
        self.preferred_refs = [f for f in self.preferred_refs if f != fid] + [fid]
        self.model.set_marked([fid], False)  # a reference is kept
        self._save_references()
        self.regroup()

    def _save_references(self) -> None:
        """Remember the files made references for this index (by path: ids are the index's own,
        paths survive a rebuilt index), the latest :data:`MAX_SAVED_REFERENCES` of them."""
        res = self.results
        if res is None or res.files is None:
            return
        # Only the chosen files' rows are looked at (this runs on the GUI thread at each Ctrl+E: a
        # mapping of every indexed file took 0.13 s per press with 1,000,000 files; this ~1 ms).
        ids = np.asarray(res.files.ids, dtype=np.int64)
        chosen = self.preferred_refs[-MAX_SAVED_REFERENCES:]
        rows = np.flatnonzero(np.isin(ids, np.asarray(chosen, dtype=np.int64)))
        path_of = {int(ids[r]): res.files.paths[int(r)] for r in rows}
        paths = [path_of[f] for f in chosen if f in path_of]
        saved = self._saved_references_all()
        saved[str(self.index_path)] = paths
        self.settings.setValue("results/references", json.dumps(saved))

    def _saved_references_all(self) -> dict[str, list[str]]:
        try:
            raw = json.loads(self.settings.value("results/references", "{}", str) or "{}")
        except (ValueError, TypeError):
            return {}
        if not isinstance(raw, dict):
            return {}
        return {str(k): [str(p) for p in v] for k, v in raw.items() if isinstance(v, list)}

    def _remembered_references(self) -> tuple[str, ...]:
        """Until the first load of an index: the paths of the files made references in an earlier
        session, which the load prefers again (``jobs.load``'s ``remembered``)."""
        if self.preferred_refs:
            return ()
        return tuple(self._saved_references_all().get(str(self.index_path), []))

    def trash_marked(self) -> None:
        if self.runner.busy("trash") or self.runner.busy("scan"):
            return
        snap = self.model.snapshot
        members = self.model.marked_members()
        if not members:
            text = self.tr("Nothing is marked. Mark files with Space or their check boxes first.")
            self.show_message(text, "info", refresh=lambda: text if not self.model.marked else None)
            return
        paths = [snap.paths[m] for m in members]
        size = sum(snap.l_size[m] for m in members)
        targets = self.trash_targets(members)
        whole = self.model.fully_marked_groups()
        # Groups keeping edited versions or excerpts only: the reference and its copies all marked.
        content = sorted({snap.l_group[m] for m, t in zip(members, targets) if not t.kept and t.same_content})
        text = self.tr("Move {0:,} marked files ({1}) to the trash?").format(len(paths), format_size(size))
        details = self.tr("They can be restored from the trash.")
        warnings = []
        if whole:
            warnings.append(self.tr(
                "Warning: in {0:,} group(s) EVERY file is marked, so no copy of them would be kept, e.g.:\n{1}"
            ).format(len(whole), "\n".join("  " + snap.paths[snap.l_start[g]] for g in whole[:5])))
        if content:
            warnings.append(self.tr(
                "Warning: in {0:,} group(s) the reference and every copy of it are marked (only edited versions or "
                "excerpts are left), so no copy of that content would be kept, e.g.:\n{1}"
            ).format(len(content), "\n".join("  " + snap.paths[snap.l_start[g]] for g in content[:5])))
        if warnings:
            details = "\n\n".join(warnings) + "\n\n" + self.tr(
                "Those files will be left in place. Unmark the file to keep in each of those groups (e.g. its "
                "reference) to move the others."
            ) + "\n\n" + details
        if not dialogs.confirm(self, self.tr("Move to Trash"), text, details, danger=bool(warnings)):
            return
        args = (self.index_path, self.threshold, self.reference_roots(), list(self.preferred_refs))
        code_view, ignore = self.code_view, tuple(self.ignored_texts)
        keep, scope, min_passage, common = self.keep_rules, self.scope(), self.min_passage, self.common_cutoff
        previous = self.results.pair_set if self.results is not None else None
        self.runner.cancel("load")
        self.runner.start(
            "trash",
            lambda p, c: jobs.trash(targets, *args, p, c, code_view, previous, ignore=ignore, keep=keep, scope=scope,
                                    min_passage=min_passage, common_cutoff=common),
            finished=self._on_trashed,
            failed=self._on_job_failed,
            progress=self._on_progress,
        )
        self._set_busy(self.tr("Moving to the trash…"))

    def trash_targets(self, members: list[int]) -> list[jobs.TrashTarget]:
        """What the trash job needs to check each marked member (flattened index) before it moves:
        the file as scanned and the unmarked members of its group that stay.  A true copy of the
        reference (kind exact/content) is checked against the kept files with that content only
        (the reference and its unmarked copies): an edited draft left in the group is no copy."""
        snap = self.model.snapshot
        marked = self.model.marked
        out = []

        def files(ks: list[int]) -> tuple[jobs.KeptFile, ...]:
            return tuple(jobs.KeptFile(snap.paths[k], snap.l_size[k], snap.l_mtime[k]) for k in ks)

        # Per group and per copy set, once (groups can hold thousands): the kept members.
        kept_of: dict[int, tuple[jobs.KeptFile, ...]] = {}
        kept_set: dict[int, tuple[jobs.KeptFile, ...]] = {}
        for m in members:
            g = snap.l_group[m]
            if g not in kept_of:
                span = range(snap.l_start[g], snap.l_start[g + 1])
                stay = [k for k in span if snap.l_file_id[k] not in marked]
                kept_of[g] = files(stay)
                for k in span:  # (keyed by the set's keeper: one per set in the group)
                    kept_set.setdefault(snap.l_keeper_of[k], ())
                for k in stay:
                    kept_set[snap.l_keeper_of[k]] += files([k])
            # A file of a copy set (an extra copy, or its keeper marked by hand) must leave a file of its
            # set, with its content; any other file any file of its group.  Every file of the group marked:
            # refused as such (jobs.ALL_MARKED), copy or not.
            copy = bool(kept_of[g]) and snap.l_set_size[m] > 1
            out.append(jobs.TrashTarget(snap.paths[m], snap.l_size[m], snap.l_mtime[m],
                                        kept_set[snap.l_keeper_of[m]] if copy else kept_of[g], copy))
        return out

    def _on_trashed(self, out: jobs.TrashOutcome) -> None:
        self._set_idle(self.tr("Moved {0} to the trash.").format(self._count(len(out.trashed), "file")))
        trashed = set(out.trashed)  # once: a set per member made this quadratic on the GUI thread
        self.model.set_marked(
            [fid for fid, p in zip(self.model.snapshot.l_file_id, self.model.snapshot.paths) if p in trashed],
            False,
        )
        if out.refused:
            self.show_message(self._refused_text(out), "warning")
        elif out.failed:
            lines = "\n".join(f"{p}: {why}" for p, why in out.failed[:5])
            self.show_message(
                self.tr(
                    "{0:,} files could not be moved to the trash and were left in place (nothing was deleted):\n{1}\n"
                    "The drive may have no trash folder, or you may lack permission; delete them yourself if you are "
                    "sure."
                ).format(len(out.failed), lines),
                "warning",
            )
        elif out.index_error:
            self.show_message(
                self.tr("The files were moved to the trash, but the index could not be updated:\n{0}\n"
                        "They still show here until the next scan.").format(out.index_error),
                "warning",
            )
        elif out.missing:
            self.show_message(
                self.tr("{0:,} marked files were already gone; the index has forgotten them.").format(len(out.missing)),
                "info",
            )
        if out.results is not None:
            self._apply_results(out.results)
        self.trashFinished.emit(out)

    def _refused_text(self, out: jobs.TrashOutcome) -> str:
        """The banner after a move that left marked files in place: why, in the confirmation
        dialog's words when the marks were the reason (a whole group, or a reference with every copy
        of it, marked: nothing to scan again), with the advice each kind of reason calls for."""
        by_marks = [(p, why) for p, why in out.refused if why in (jobs.ALL_MARKED, jobs.ALL_COPIES_MARKED)]
        on_disk = [(p, why) for p, why in out.refused if why not in (jobs.ALL_MARKED, jobs.ALL_COPIES_MARKED)]
        n = len(out.refused)
        text = (self.tr("1 marked file was NOT moved to the trash, for safety (nothing was deleted).") if n == 1
                else self.tr("{0:,} marked files were NOT moved to the trash, for safety (nothing was deleted).")
                .format(n))

        def listing(rows: list[tuple[str, str]], reasons: bool) -> str:
            lines = "\n".join(f"{p}: {why}" if reasons else f"  {p}" for p, why in rows[:5])
            if len(rows) > 5:
                lines += "\n" + self.tr("… and {0:,} more").format(len(rows) - 5)
            return lines

        if by_marks:
            whole = sum(1 for _, why in by_marks if why == jobs.ALL_MARKED)
            if whole == len(by_marks):
                why = self.tr("Every file of their group is marked, so no copy of them would be kept:")
            elif whole == 0:
                why = self.tr("The reference and every copy of it are marked (only edited versions or excerpts are "
                              "left), so no copy of that content would be kept:")
            else:
                why = self.tr("Every file of their group, or the reference and every copy of it, are marked, so no "
                              "copy would be kept:")
            text += "\n" + why + "\n" + listing(by_marks, False) + "\n" + self.tr(
                "Unmark the file to keep in each of those groups (e.g. its reference) to move the others.")
        if on_disk:
            text += "\n" + listing(on_disk, True)
            if any(why.endswith(jobs.RESCAN) for _, why in on_disk):
                text += "\n" + self.tr("Scan again to update the results, then mark them again if you still want "
                                        "them gone.")
        if out.failed:
            text += "\n" + self.tr("{0:,} more could not be moved to the trash (left in place).").format(len(out.failed))
        return text

    def export_plan_dialog(self) -> None:
        if not self.model.marked:
            text = self.tr("Nothing is marked. Mark the files to remove (Ctrl+M marks the extra copies) first.")
            self.show_message(text, "info", refresh=lambda: text if not self.model.marked else None)
            return
        path, chosen = QFileDialog.getSaveFileName(
            self, self.tr("Export a plan of the marked files"), os.path.expanduser("~/simscan-plan.sh"),
            self.tr("Shell script (*.sh);;JSON (*.json)"),
        )
        if not path:
            return
        if not Path(path).suffix:
            path += ".json" if "json" in chosen else ".sh"
        self.export_plan(path)

    def plan(self) -> cleanup.Plan:
        """The marked files as a plan: each as the scan saw it (with its checksum), with the files kept in
        its place -- what Move to Trash would check, for ``simscan apply`` to check again later."""
        snap = self.model.snapshot
        members = self.model.marked_members()
        targets = self.trash_targets(members)
        sums: dict[int, str] = {}
        res = self.results
        if res is not None and res.files is not None and members:
            ids = np.asarray(res.files.ids, dtype=np.int64)
            want = np.asarray([snap.l_file_id[m] for m in members], dtype=np.int64)
            for r in np.flatnonzero(np.isin(ids, want)).tolist():
                c = res.files.checksum[r]
                sums[int(ids[r])] = c.hex() if isinstance(c, bytes) else ""
        entries = tuple(cleanup.PlanEntry(t, sums.get(snap.l_file_id[m], ""), snap.l_group[m] + 1)
                        for m, t in zip(members, targets))
        return cleanup.Plan(entries, str(self.index_path))

    def export_plan(self, path: str) -> int:
        """Write the plan of the marked files to ``path`` (a shell script for ``.sh``, else JSON)."""
        plan = self.plan()
        try:
            cleanup.write_plan(plan, path)
        except OSError as e:
            self.show_message(self.tr("Could not write {0}: {1}").format(path, e.strerror or e), "error")
            return 0
        self.status_label.setText(self.tr("Exported a plan moving {0} ({1}) to {2}: check and apply it with "
                                          "`simscan apply {2}`").format(self._count(len(plan.entries), "file"),
                                                                         format_size(plan.size), path))
        return len(plan.entries)
