"""The item models: qtmodeltester on each, sorting, fetchMore batches, filters, marks."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QModelIndex, Qt

from simscan.gui import jobs
from simscan.gui.folders import Folder, FolderModel
from simscan.gui.results_model import (
    COL_PATH,
    COL_SIMILARITY,
    COL_SIZE,
    FETCH_BATCH,
    KIND_CODE,
    KIND_FILTERS,
    KINDS,
    ResultsModel,
    ResultsProxy,
    SortRole,
)
from simscan.gui.snapshot import Snapshot
from simscan.progress import CancelToken
from simscan.scanner import ScanRequest, run_scan
from tests.gui.conftest import mark_copies


def synthetic(n_groups: int, seed: int = 0) -> Snapshot:
    """Groups of 2..4 files with random sizes, kinds and similarities (GUI data only)."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(2, 5, size=n_groups)
    start = [0, *np.cumsum(counts).tolist()]
    m = start[-1]
    group = np.repeat(np.arange(n_groups), counts).tolist()
    is_ref = np.zeros(m, bool)
    is_ref[start[:-1]] = True
    sim = np.where(is_ref, 100.0, np.round(rng.uniform(20, 100, m), 1))
    kinds = rng.integers(0, 4, size=m)
    gkind = rng.integers(0, 4, size=n_groups)
    return Snapshot.from_columns(
        50.0, start, gkind.tolist(), group, list(range(100, 100 + m)), rng.integers(1, 10**6, m).tolist(),
        (rng.integers(0, 10**9, m) * 10**9).tolist(), sim.tolist(), kinds.tolist(), is_ref.tolist(),
        [f"/data/d{g % 7}/file{i}.txt" for i, g in enumerate(group)], ["utf-8"] * m,
    )


@pytest.fixture
def real_snapshot(corpus: Path, tmp_path: Path) -> Snapshot:
    index = tmp_path / "i.sqlite3"
    run_scan(ScanRequest([corpus], index_path=index))
    return jobs.load(index, 30, [], [], lambda p: None, CancelToken()).snapshot


def test_results_model_passes_modeltester_on_real_results(qtmodeltester, real_snapshot):
    model = ResultsModel()
    model.set_snapshot(real_snapshot)
    assert model.rowCount() == 1 and model.rowCount(model.index(0, 0)) == 5
    qtmodeltester.check(model)


def test_results_model_and_proxy_pass_modeltester_with_batches(qtmodeltester):
    model = ResultsModel()
    proxy = ResultsProxy()
    proxy.setSourceModel(model)
    proxy.set_snapshot(synthetic(FETCH_BATCH + 300))
    qtmodeltester.check(model)
    qtmodeltester.check(proxy)
    proxy.set_filters(kinds=KIND_FILTERS["contained"], search="d3")
    qtmodeltester.check(proxy)
    model.sort(COL_SIZE, Qt.SortOrder.DescendingOrder)
    qtmodeltester.check(proxy)


def test_folder_model_passes_modeltester(qtmodeltester, tmp_path):
    fm = FolderModel()
    fm.set_folders([Folder(str(tmp_path), False), Folder("/nonexistent", True)])
    qtmodeltester.check(fm)
    assert fm.add([str(tmp_path), str(tmp_path / "x")]) == 1
    fm.remove_rows([0])
    qtmodeltester.check(fm)


def test_fetch_more_exposes_groups_in_batches():
    model = ResultsModel()
    snap = synthetic(2 * FETCH_BATCH + 10)
    model.set_snapshot(snap)
    root = QModelIndex()
    assert model.rowCount() == FETCH_BATCH and model.canFetchMore(root)
    model.fetchMore(root)
    model.fetchMore(root)
    assert model.rowCount() == snap.n_groups and not model.canFetchMore(root)
    # Asking for a group further down loads up to it.
    model.set_snapshot(snap)
    idx = model.group_index(snap.n_groups - 1, load=True)
    assert idx.isValid() and model.rowCount() == snap.n_groups


@pytest.mark.parametrize("column", [COL_PATH, COL_SIMILARITY, COL_SIZE])
@pytest.mark.parametrize("order", [Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder])
def test_sort_matches_python_sorted_on_the_sort_role(column, order):
    snap = synthetic(500, seed=3)
    model = ResultsModel()
    model.set_snapshot(snap)
    model.sort(column, order)
    keys = [model.index(r, column).data(SortRole) for r in range(model.rowCount())]
    keys = [-1.0 if isinstance(k, float) and math.isnan(k) else k for k in keys]
    if column == COL_PATH:
        keys = [k.casefold() for k in keys]
    assert keys == sorted(keys, reverse=order == Qt.SortOrder.DescendingOrder)


def test_sort_keeps_selection_on_the_same_group():
    snap = synthetic(50, seed=5)
    model = ResultsModel()
    model.set_snapshot(snap)
    from PySide6.QtCore import QPersistentModelIndex

    g_idx = QPersistentModelIndex(model.index(7, 0))
    child = QPersistentModelIndex(model.index(1, 0, model.index(7, 0)))
    g = model.group_of(g_idx)
    m = model.member_of(child)
    model.sort(COL_SIZE, Qt.SortOrder.DescendingOrder)
    assert model.group_of(g_idx) == g and model.member_of(child) == m


def test_proxy_filters_members_by_kind_and_groups_by_search():
    snap = synthetic(300, seed=9)
    model = ResultsModel()
    proxy = ResultsProxy()
    proxy.setSourceModel(model)
    proxy.set_snapshot(snap)
    proxy.set_filters(kinds=KIND_FILTERS["similar"], search="")
    near = KIND_CODE["near"]
    shown_groups = set()
    for r in range(proxy.rowCount()):
        gi = proxy.index(r, 0)
        g = model.group_of(proxy.mapToSource(gi))
        shown_groups.add(g)
        ms = [model.member_of(proxy.mapToSource(proxy.index(c, 0, gi))) for c in range(proxy.rowCount(gi))]
        assert snap.l_is_ref[ms[0]]
        assert all(snap.l_kind[m] == near for m in ms[1:]) and len(ms) >= 2
    # Reference: every group with a non-reference "near" member, brute force.
    expected = {
        g for g in range(snap.n_groups)
        if any(snap.l_kind[m] == near for m in range(snap.l_start[g] + 1, snap.l_start[g + 1]))
    }
    assert shown_groups == expected
    assert proxy.totals()[0] == len(expected)
    proxy.set_filters(kinds=KIND_FILTERS["all"], search="FILE12")
    hits = {g for g in range(snap.n_groups) if any("file12" in snap.paths[m]
                                                    for m in range(snap.l_start[g], snap.l_start[g + 1]))}
    assert {model.group_of(proxy.mapToSource(proxy.index(r, 0))) for r in range(proxy.rowCount())} == hits


def test_marks_and_check_states():
    snap = synthetic(10, seed=1)
    model = ResultsModel()
    model.set_snapshot(snap)
    g = model.index(0, 0)
    n = model.rowCount(g)
    assert model.setData(g, Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole)
    # Checking a group marks its copies, never its reference.
    assert model.index(0, 0, g).data(Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.Unchecked
    assert all(model.index(r, 0, g).data(Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.Checked for r in range(1, n))
    assert g.data(Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.PartiallyChecked
    model.setData(model.index(0, 0, g), Qt.CheckState.Checked, Qt.ItemDataRole.CheckStateRole)
    assert g.data(Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.Checked
    assert model.fully_marked_groups() == [model.group_of(g)]
    model.setData(g, Qt.CheckState.Unchecked, Qt.ItemDataRole.CheckStateRole)
    assert not model.marked
    mark_copies(model)
    # Only true copies (exact/content) that are not empty: the slow, obvious rule per member.
    copies = {snap.l_file_id[m] for m in range(snap.n_members)
              if not snap.l_is_ref[m] and KINDS[snap.l_kind[m]] in ("exact", "content") and snap.l_size[m] > 0}
    assert copies and len(copies) < snap.n_members - snap.n_groups  # the synthetic data has both sorts
    assert model.marked == copies and not model.fully_marked_groups()
    # Marks survive a new snapshot for the files still present.
    model.set_snapshot(snap)
    assert model.marked == copies


def test_none_returned_from_data_keeps_its_references():
    """Views call data() through C++ millions of times; PySide6 6.12 drops a reference to None
    on each None it converts, which eventually aborts the interpreter.  The models compensate."""
    import sys

    model = ResultsModel()
    proxy = ResultsProxy()
    proxy.setSourceModel(model)
    proxy.set_snapshot(synthetic(20))
    folders = FolderModel()
    folders.set_folders([Folder("/tmp")])
    idx = proxy.index(0, 2)
    before = sys.getrefcount(None)
    for _ in range(5000):
        proxy.data(idx, Qt.ItemDataRole.DecorationRole)  # a role the model has no value for
        idx.data(Qt.ItemDataRole.BackgroundRole)
        proxy.headerData(0, Qt.Orientation.Vertical, Qt.ItemDataRole.DisplayRole)
        folders.index(0, 0).data(Qt.ItemDataRole.DecorationRole)
    assert sys.getrefcount(None) >= before


def test_make_reference_then_mark_copies_keeps_the_original(tmp_path):
    """"Make reference" on an edited version re-expresses every kind against it: the old
    reference and its byte copy become edited versions of it (never marked by Ctrl+M), and a
    copy of the new reference becomes its copy (marked)."""
    words = [f"w{i % 97}x{(i * 7919) % 1009}" for i in range(900)]
    original = " ".join(words)
    edited = " ".join(words[:300] + ["inserted", "passage"] * 40 + words[450:])
    data = tmp_path / "data"
    data.mkdir()
    (data / "original.txt").write_text(original)
    (data / "copy_of_original.txt").write_text(original)
    (data / "edited.txt").write_text(edited)
    (data / "copy_of_edited.txt").write_text(edited)
    idx = tmp_path / "i.sqlite3"
    run_scan(ScanRequest([data], index_path=idx, jobs=1))
    res = jobs.load(idx, 13.0, [], [], lambda p: None, CancelToken())
    s = res.snapshot
    by_name = {Path(s.paths[m]).name: m for m in range(s.n_members)}
    assert s.n_groups == 1
    assert s.l_is_ref[by_name["original.txt"]] or s.l_is_ref[by_name["copy_of_original.txt"]]
    new_ref = s.l_file_id[by_name["edited.txt"]]

    snap = jobs.group(res.files, res.pairs, 13.0, [], [new_ref])
    kind = {Path(snap.paths[m]).name: KINDS[snap.l_kind[m]] for m in range(snap.n_members)}
    assert snap.l_is_ref[[Path(p).name for p in snap.paths].index("edited.txt")]
    assert kind["copy_of_edited.txt"] == "exact"
    assert kind["original.txt"] in ("near", "contained") and kind["copy_of_original.txt"] == kind["original.txt"]

    model = ResultsModel()
    model.set_snapshot(snap)
    mark_copies(model)
    # The copies of the new reference, and the old reference's copy: its set sits among the members.
    assert sorted(Path(snap.paths[m]).name for m in model.marked_members()) == ["copy_of_edited.txt",
                                                                                 "copy_of_original.txt"]
