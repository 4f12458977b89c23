"""The pairs review view (simscan/gui/review.py, window_review.py; issue 16): every listed pair ranked
by evidence beside the groups, the preview of a pair with "next passage", the minimum passage setting,
and the export of the evidence.  Real files in tmp_path, a real index, the real window offscreen."""

from __future__ import annotations

import csv
import json
import os
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QModelIndex, Qt

from simscan.gui import jobs
from simscan.gui.review import COL_A, COL_LONGEST, COL_SIMILARITY, PairsModel, review_rows
from simscan.index import Index
from simscan.similarity import find_pairs
from simscan.similarity.copies import expand_copies
from simscan.similarity.core import expand_copy_pairs, pairs_from_rounded, sorted_rounded
from simscan.similarity.types import KINDS, passes
from tests.grouping_reference import random_pair_arrays, random_table, reference_expand_copies
from tests.gui.conftest import prose
from tests.gui.helpers import WAIT
from tests.gui.helpers import scan as scan_groups

PAIRS_TAB = 1


def scan(qtbot, win) -> None:
    """Scan through the window and wait for the pairs too (a job after the groups')."""
    with qtbot.waitSignal(win.pairsLoaded, timeout=WAIT):
        scan_groups(qtbot, win)


def _paragraph(text: str, first: int, lines: int) -> str:
    return " ".join(text.splitlines()[first:first + lines])


@pytest.fixture
def essays(tmp_path: Path) -> dict[str, str]:
    """essays/: source.txt and student.txt, two long unrelated essays (~11 KB), student.txt holding a
    paragraph of ~400 characters of source.txt half-way through (a small share of both: under the
    15 % threshold); notes_a.txt and notes_b.txt, two short notes sharing one sentence of ~160
    characters (a large share, a short passage); other.txt, unrelated.  Returns the paragraph too."""
    root = tmp_path / "essays"
    root.mkdir()
    source = prose(np.random.default_rng(1), 1700)
    student = prose(np.random.default_rng(2), 1700).splitlines()
    paragraph = _paragraph(source, 60, 7)
    assert 380 <= len(paragraph) <= 520
    half = len(student) // 2
    notes = prose(np.random.default_rng(3), 60)[:160]
    files = {
        "source.txt": source,
        "student.txt": "\n".join(student[:half] + [paragraph] + student[half:]) + "\n",
        "notes_a.txt": notes + " " + prose(np.random.default_rng(4), 30),
        "notes_b.txt": prose(np.random.default_rng(5), 30) + notes,
        "other.txt": prose(np.random.default_rng(6), 1700),
    }
    for name, text in files.items():
        (root / name).write_text(text)
    return {"root": str(root), "paragraph": paragraph}


def _names(win, k: int) -> tuple[str, str]:
    rows = win.pairs_model.rows
    return os.path.basename(rows.path_a(k)), os.path.basename(rows.path_b(k))


def _show_pair(qtbot, win, row: int):
    with qtbot.waitSignal(win.previewShown, timeout=WAIT):
        assert win.select_pair_row(row)
        win._pair_timer.stop()  # (compared now: see helpers.preview_of)
        win._preview_pair()
    return win.preview


def _top_line(pane) -> int:
    """The line (of the laid-out text) at the top of a preview pane."""
    return pane.edit.document().findBlock(pane.top_position()).firstLineNumber()


def _line_of(pane, pos: int) -> int:
    doc = pane.edit.document()
    block = doc.findBlock(pos)
    return block.firstLineNumber() + block.layout().lineForTextPosition(pos - block.position()).lineNumber()


def test_a_shared_paragraph_is_ranked_first_and_next_passage_scrolls_both_files_to_it(qtbot, window, essays):
    win = window(roots=[essays["root"]])
    scan(qtbot, win)
    # Groups (at 15 %) leave the essays apart: the paragraph is a small share of each.
    snap = win.model.snapshot
    assert not any({"source.txt", "student.txt"} <= {os.path.basename(snap.paths[m])
                                                     for m in range(snap.l_start[g], snap.l_start[g + 1])}
                   for g in range(snap.n_groups))
    win.results_tabs.setCurrentIndex(PAIRS_TAB)
    model = win.pairs_model
    assert model.shown_count == 2
    first, second = model.row_at(0), model.row_at(1)
    # Ranked by evidence: the paragraph first, though its share is far lower than the notes'.
    assert set(_names(win, first)) == {"source.txt", "student.txt"}
    assert set(_names(win, second)) == {"notes_a.txt", "notes_b.txt"}
    rows = model.rows
    assert rows.longest[first] > rows.longest[second] >= 100
    assert rows.best[first] < 15 < rows.best[second]
    assert rows.by_passage == 1
    assert model.index(0, COL_SIMILARITY).data() == f"{int(rows.best[first] * 10) / 10:.1f} %"
    assert model.index(0, COL_LONGEST).data() == f"{rows.longest[first]:,}"
    assert model.index(0, COL_A).data() in ("source.txt", "student.txt")  # (below the folder the summary names)
    assert essays["root"] in win.pairs_summary.text() and "2 pairs" in win.pairs_summary.text()

    pv = _show_pair(qtbot, win, 0)
    texts = {os.path.basename(p.title.toolTip()): p.edit.toPlainText() for p in (pv.left, pv.right)}
    assert texts == {n: (Path(essays["root"]) / n).read_text() for n in ("source.txt", "student.txt")}
    assert "longest shared passage" in pv.summary.text()
    # The preview opens on the longest passage: the paragraph, on both sides.
    assert pv.current_passage is not None
    para = re.findall(r"\w+", essays["paragraph"])
    for pane in (pv.left, pv.right):
        a, b = pane.ranges[pv.current_passage]
        shown = re.findall(r"\w+", pane.edit.toPlainText()[a:b])
        assert len(shown) >= len(para) - 4 and " ".join(shown) in " ".join(para)
    assert pv.passage_label.text().startswith("Passage 1 of 1")

    # Scrolled away (to the end of both files), the next-passage key (F7) brings both to it again.
    win.resize(1280, 820)
    qtbot.wait(20)
    pv.current_passage = None
    for pane in (pv.left, pv.right):
        sb = pane.edit.verticalScrollBar()
        sb.setValue(sb.maximum())
    assert all(_top_line(p) > _line_of(p, p.ranges[0][0]) for p in (pv.left, pv.right))
    qtbot.keyClick(win.pairs_view, Qt.Key.Key_F7)
    assert pv.current_passage is not None
    for pane in (pv.left, pv.right):
        line = _line_of(pane, pane.ranges[pv.current_passage][0])
        assert _top_line(pane) <= line <= _top_line(pane) + 3  # (a few lines of context above it)
    # The current passage is highlighted more strongly than the others.
    sel = {s.cursor.selectionStart(): s.format.background().color() for s in pv.left.edit.extraSelections()}
    assert sel[pv.left.ranges[pv.current_passage][0]] == pv.left.current_color()
    # Shift+F7 with one passage: the same one.
    qtbot.keyClick(win.pairs_view, Qt.Key.Key_F7, Qt.KeyboardModifier.ShiftModifier)
    assert pv.current_passage == 0


def test_next_and_previous_passage_go_through_several_passages_in_order(qtbot, window, tmp_path):
    """Three paragraphs of a source in an essay, in another order: F7 visits them in the order of
    file A, from the one below the top line, and wraps; Shift+F7 goes back."""
    root = tmp_path / "d"
    root.mkdir()
    source = prose(np.random.default_rng(11), 1700)
    essay = prose(np.random.default_rng(12), 1700).splitlines()
    paras = [_paragraph(source, first, 6) for first in (10, 70, 130)]
    for at, p in zip((150, 20, 90), paras):
        essay.insert(at, p)
    (root / "source.txt").write_text(source)
    (root / "essay.txt").write_text("\n".join(essay) + "\n")
    os.utime(root / "source.txt", (1_600_000_000, 1_600_000_000))  # (the older file is A)
    win = window(roots=[str(root)])
    scan(qtbot, win)
    win.results_tabs.setCurrentIndex(PAIRS_TAB)
    assert win.pairs_model.shown_count == 1
    pv = _show_pair(qtbot, win, 0)
    assert os.path.basename(pv.left.title.toolTip()) == "source.txt"
    shown = pv.passages()
    assert len(shown) == 3
    starts = [pv.left.ranges[i][0] for i in shown]
    assert starts == sorted(starts)
    pv.current_passage = None
    pv.left.edit.verticalScrollBar().setValue(0)
    visited = []
    for _ in range(4):
        win.act_next_passage.trigger()
        visited.append(pv.current_passage)
    assert visited == shown + shown[:1]
    win.act_prev_passage.trigger()
    assert pv.current_passage == shown[-1]
    assert pv.passage_label.text().startswith("Passage 3 of 3")


def test_min_passage_setting_searches_again_and_is_remembered(qtbot, window, essays):
    win = window(roots=[essays["root"]])
    scan(qtbot, win)
    win.results_tabs.setCurrentIndex(PAIRS_TAB)
    assert win.min_passage == 100 and win.results.min_passage == 100

    def listed() -> set[frozenset[str]]:
        model = win.pairs_model
        return {frozenset(_names(win, model.row_at(r))) for r in range(model.shown_count)}

    essay_pair, notes_pair = frozenset({"source.txt", "student.txt"}), frozenset({"notes_a.txt", "notes_b.txt"})
    assert listed() == {essay_pair, notes_pair}
    for value, want in ((0, {notes_pair}), (2000, {notes_pair}), (150, {essay_pair, notes_pair})):
        with qtbot.waitSignal(win.pairsLoaded, timeout=WAIT):
            win.min_passage_spin.setValue(value)
        assert win.results.min_passage == value and win.pairs_model.rows.min_passage == value
        assert listed() == want, value
    # The same as the command line's pair search with that setting.
    from simscan.similarity import SimilarityParams

    with Index.open(win.index_path, readonly=True) as idx:
        cli = find_pairs(idx, params=SimilarityParams(min_passage=150))
    assert {frozenset(os.path.basename(p) for p in (q.a_path, q.b_path)) for q in cli} == listed()
    win.close()
    again = window(roots=[essays["root"]])
    qtbot.waitUntil(lambda: again.results is not None, timeout=WAIT)
    assert again.min_passage == 150 and again.results.min_passage == 150 and again.reviewing


def test_review_rows_are_the_pairs_the_command_line_lists(qtbot, window, corpus):
    """The window's list is the pair set its groups come from, copies' inherited pairs included: the
    same pairs, scores and evidence as ``find_pairs`` expanded by ``expand_copy_pairs`` (the CLI's
    ``pairs``), at the slider's threshold; ranked by evidence."""
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    with Index.open(win.index_path, readonly=True) as idx:
        want, _ = expand_copy_pairs(find_pairs(idx, min_similarity=30))

    def key(p):
        return (frozenset((p.a_id, p.b_id)), round(p.best, 3), p.kind, p.longest_passage, p.shared_chars)

    rows = win.pairs_model.rows
    got = [rows.pair(k) for k in range(rows.n)]
    assert Counter(map(key, got)) == Counter(map(key, want))
    assert any(p.longest_passage for p in got)  # (the edited version and the excerpt)
    # Ranked: copies (their whole text) by size, then the longest passage, the shared characters, the share.
    rank = [(rows.evidence[k], rows.shared[k] if rows.kind[k] > 1 else rows.evidence[k], rows.best[k])
            for k in range(rows.n)]
    assert rank == sorted(rank, reverse=True)
    # The slider regroups the pairs too, without a search.
    with qtbot.waitSignal(win.pairsLoaded, timeout=WAIT):
        win.threshold_slider.setValue(90)
    assert win.pairs_model.rows.threshold == 90
    assert all(passes(p.best, 90) or p.kind in ("exact", "content") or p.longest_passage >= 100
               for p in (win.pairs_model.rows.pair(k) for k in range(win.pairs_model.rows.n)))
    assert win.pairs_model.rows.by_passage > rows.by_passage  # (the edited version and the excerpt, now)


def test_search_and_show_filter_the_pairs_and_sorting_by_a_column(qtbot, window, corpus, qtmodeltester):
    win = window(roots=[str(corpus)])
    win.threshold_slider.setValue(30)
    scan(qtbot, win)
    win.results_tabs.setCurrentIndex(PAIRS_TAB)
    model = win.pairs_model
    everything = model.shown_count
    qtmodeltester.check(model)
    win.search_edit.setText("excerpt")
    win._apply_filters()
    assert 0 < model.shown_count < everything
    assert all("excerpt" in win.pairs_model.rows.path_a(model.row_at(r)) + win.pairs_model.rows.path_b(
        model.row_at(r)) for r in range(model.shown_count))
    assert "Shown:" in win.pairs_summary.text()
    win.search_edit.setText("")
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("exact"))
    assert 0 < model.shown_count < everything
    assert all(model.rows.kind[model.row_at(r)] <= 1 for r in range(model.shown_count))
    win.kind_combo.setCurrentIndex(win.kind_combo.findData("all"))
    win.pairs_view.sortByColumn(COL_SIMILARITY, Qt.SortOrder.AscendingOrder)
    best = [model.rows.best[model.row_at(r)] for r in range(model.shown_count)]
    assert best == sorted(best) and model.shown_count == everything
    qtmodeltester.check(model)


def test_pairs_export_carries_the_evidence(qtbot, window, essays, tmp_path):
    win = window(roots=[essays["root"]])
    scan(qtbot, win)
    win.results_tabs.setCurrentIndex(PAIRS_TAB)
    rows = win.pairs_model.rows
    first = win.pairs_model.row_at(0)
    out = tmp_path / "pairs.json"
    assert win.export(str(out)) == 2
    doc = json.loads(out.read_text())
    assert doc["min_passage"] == 100 and doc["threshold"] == 15.0
    top = doc["pairs"][0]
    assert {os.path.basename(top["a"]), os.path.basename(top["b"])} == {"source.txt", "student.txt"}
    assert top["longest_passage"] == rows.longest[first] and top["shared_chars"] == rows.shared[first]
    assert top["kind"] == "near" and top["view"] == "text" and top["best"] < 15
    out = tmp_path / "pairs.csv"
    assert win.export(str(out)) == 2
    with open(out, encoding="utf-8-sig", newline="") as f:
        got = list(csv.DictReader(f))
    assert [int(r["longest_passage"]) for r in got] == [p["longest_passage"] for p in doc["pairs"]]
    out = tmp_path / "pairs.html"
    assert win.export(str(out)) == 2
    assert f"{rows.longest[first]:,}" in out.read_text()
    # The groups' export carries each member's evidence with its reference.
    win.results_tabs.setCurrentIndex(0)
    out = tmp_path / "groups.json"
    win.export(str(out))
    members = [m for g in json.loads(out.read_text())["groups"] for m in g["members"] if not m["reference"]]
    assert members and all(isinstance(m["longest_passage"], int) and m["shared_chars"] >= m["longest_passage"]
                           for m in members)


@pytest.mark.parametrize("seed", range(30))
def test_expand_copies_equals_the_object_reference(seed: int) -> None:
    """The columnar expansion lists what the slow reference (one Pair at a time) lists, in its order."""
    rng = random.Random(900 + seed)
    t = random_table(rng, rng.randrange(2, 60))
    pa = sorted_rounded(random_pair_arrays(rng, t, rng.randrange(0, 120)))
    pa = pa.__class__(*(getattr(pa, f)[pa.a != pa.b] for f in pa.__slots__))
    ids = np.asarray(t.ids)
    kinds = ("exact", "content", "near", "contained")
    for limit in (10**9, rng.randrange(0, 20)):
        want, left_out = reference_expand_copies(pairs_from_rounded(pa, t), limit)
        a, b, src, n_left = expand_copies(pa.a, pa.b, pa.kind <= 1, len(t.paths), limit=limit)
        assert n_left == left_out
        # Each expanded pair keeps the scores of the pair it comes from.
        got = [(int(ids[x]), int(ids[y]), float(pa.resemblance[s]), float(pa.containment_a[s]),
                float(pa.containment_b[s]), kinds[int(pa.kind[s])]) for x, y, s in zip(a, b, src)]
        assert got == [(p.a_id, p.b_id, p.resemblance, p.containment_a, p.containment_b, p.kind) for p in want]
        assert a.size - pa.a.size <= limit


def test_review_rows_leave_out_files_outside_the_scope_and_empty_files(tmp_path):
    """Built from a real index: the scope (listed folders, hidden files) applies to both files of a
    pair; empty files (all alike) are never listed."""
    from simscan.scanner import ScanRequest, run_scan

    for d in ("in", "out"):
        (tmp_path / d).mkdir()
    text = prose(np.random.default_rng(8), 600)
    for i, p in enumerate(("out/c.txt", "in/a.txt", "in/b.txt", "in/d.txt")):
        (tmp_path / p).write_text(text if p != "in/d.txt" else text.replace("\n", "\r\n"))
        os.utime(tmp_path / p, (1_600_000_000 + i, 1_600_000_000 + i))  # (c.txt, the oldest, is the centre)
    for p in ("in/e1.txt", "in/e2.txt"):
        (tmp_path / p).write_text("")
    index = tmp_path / "i.sqlite3"
    run_scan(ScanRequest(roots=[tmp_path], index_path=index))
    res = jobs.load(index, 15.0, [], [], lambda p: None, jobs.CancelToken())
    everything = jobs.review(res.files, res.pairs, 15.0, 100)

    def listed(rows):
        return {(os.path.basename(rows.path_a(k)), os.path.basename(rows.path_b(k)), KINDS[rows.kind[k]])
                for k in range(rows.n)}

    # Copies are listed as a star around the oldest, as the command line lists them; no empty file.
    assert listed(everything) == {("c.txt", "a.txt", "exact"), ("c.txt", "b.txt", "exact"),
                                  ("c.txt", "d.txt", "content")}
    # Scoped to in/: the copies there are paired around the oldest of them.
    scoped = jobs.review(res.files, res.pairs, 15.0, 100, jobs.Scope((str(tmp_path / "in"),)))
    assert listed(scoped) == {("a.txt", "b.txt", "exact"), ("a.txt", "d.txt", "content")}
    assert scoped.prefix == str(tmp_path / "in") + os.sep
    hidden = jobs.review(res.files, res.pairs, 15.0, 100, jobs.Scope(None, frozenset({str(tmp_path / "out/c.txt"),
                                                                                      str(tmp_path / "in/a.txt")})))
    assert listed(hidden) == {("b.txt", "d.txt", "content")}
    assert review_rows(res.files, res.pairs, 15.0, 100, np.zeros(len(res.files.paths), bool)).n == 0


def test_pairs_model_over_no_rows(qtmodeltester):
    model = PairsModel()
    qtmodeltester.check(model)
    assert model.rowCount(QModelIndex()) == 0 and not model.canFetchMore(QModelIndex())
