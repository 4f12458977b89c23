"""The work the window hands to workers: plain functions over the core API.

Each takes its inputs by value, a progress sink and a cancel token, and returns a frozen
result; none touches a widget (they run on pool threads, see ``workers``).  Each opens its own
:class:`~simscan.index.Index` (one connection per thread; WAL lets a load read while a scan
writes).
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simscan.errors import SimscanError
from simscan.gui.models import Snapshot
from simscan.index import FileTable, Index
from simscan.progress import Cancelled, CancelToken, Progress
from simscan.scanner import ScanRequest, ScanResult, run_scan
from simscan.similarity import DEFAULT_MIN_SIMILARITY, Pair, compare, find_pairs, group_pairs

Sink = Callable[[Progress], None]

#: Pairs are found once at this floor (percent) and kept in memory; the threshold slider then
#: regroups them (group_pairs) without reading the index.  It is the similarity layer's
#: default threshold, chosen on the evaluation corpus: lower values mostly add noise.
PAIR_FLOOR = DEFAULT_MIN_SIMILARITY


@dataclass(frozen=True)
class Results:
    """Everything the window shows about one index, read at one moment."""

    index_path: Path
    exists: bool  # False: no index yet (nothing scanned)
    files: FileTable | None = field(repr=False)
    pairs: list[Pair] = field(repr=False)
    best: np.ndarray = field(repr=False)  # each pair's best score (percent), for the histogram
    snapshot: Snapshot = field(repr=False)
    n_files: int = 0


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_state: dict[str, bool] = {}


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a job builds large result structures.

    Loading 100,000 groups allocates a few million small objects; each allocation burst
    triggers collections that walk every live object while holding the GIL, which stalled
    the GUI thread for up to ~150 ms per collection (measured: event-loop latency 140–160 ms
    with the collector on, ~50 ms with it paused, see benchmarks/gui_responsiveness.py).
    The objects built here are acyclic dataclasses, so nothing accumulates meanwhile.
    Reference-counted: overlapping jobs re-enable it only when the last one ends.

    On the way out the surviving objects (the results: long-lived, acyclic, freed by reference
    counting) are frozen (``gc.freeze``) so that re-enabling the collector does not start by
    walking them all at once — which stalled the GUI for ~200 ms right after a regroup.
    """
    global _gc_depth
    with _gc_lock:
        _gc_depth += 1
        if _gc_depth == 1:
            was_enabled = gc.isenabled()
            gc.disable()
            _gc_state["enabled"] = was_enabled
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_state.get("enabled", True):
                gc.freeze()
                gc.enable()


class _KnownFiles:
    """An index whose ``files()`` is the table already read: find_pairs reads it again
    otherwise (~0.5 s for 200,000 files).  Everything else goes to the index."""

    def __init__(self, index: Index, files: FileTable) -> None:
        self._index = index
        self._files = files

    def files(self) -> FileTable:
        return self._files

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)


def _check(cancel: CancelToken) -> None:
    if cancel.cancelled:
        raise Cancelled()


def group(
    files: FileTable | None,
    pairs: Sequence[Pair],
    threshold: float,
    reference_roots: Sequence[str],
    preferred: Sequence[int] = (),
) -> Snapshot:
    """Groups at ``threshold`` (percent) as a Snapshot; ``preferred`` file ids become their
    group's reference ("make reference")."""
    if files is None or len(files) == 0:
        return Snapshot.empty(threshold)
    with gc_paused():
        groups = group_pairs(pairs, files, min_similarity=threshold, reference_roots=tuple(reference_roots))
        snap = Snapshot.from_groups(groups, threshold, preferred, _pair_lookup(pairs, preferred))
        _ = snap.folders  # computed here, off the GUI thread
        release(groups)
        return snap


def release(items: list[Any]) -> None:
    """Free a big list's objects a slice at a time: one ``del`` of 100,000 groups frees ~500,000
    objects in a single C call that holds the GIL for ~100 ms (a GUI stall); slices of 2,000
    let the GUI thread run in between."""
    while items:
        del items[-2000:]


def _pair_lookup(pairs: Sequence[Pair], preferred: Sequence[int]) -> Callable[[int, int], float | None] | None:
    """best(a, b) for pairs touching a user-chosen reference (one pass over the pairs)."""
    if not preferred:
        return None
    want = set(preferred)
    best: dict[tuple[int, int], float] = {}
    for p in pairs:
        if p.a_id in want or p.b_id in want:
            best[(p.a_id, p.b_id)] = best[(p.b_id, p.a_id)] = p.best
    return lambda a, b: best.get((a, b))


def load(
    index_path: Path,
    threshold: float,
    reference_roots: Sequence[str],
    preferred: Sequence[int],
    progress: Sink,
    cancel: CancelToken,
) -> Results:
    """Read the index: files, pairs above :data:`PAIR_FLOOR`, groups at ``threshold``."""
    if not index_path.exists():
        return Results(index_path, False, None, [], np.zeros(0), Snapshot.empty(threshold))
    progress(Progress("load", message=str(index_path)))
    with gc_paused():
        with Index.open(index_path, readonly=True) as idx:
            files = idx.files()
            _check(cancel)
            pairs = find_pairs(
                _KnownFiles(idx, files), min_similarity=min(PAIR_FLOOR, threshold), progress=progress, cancel=cancel
            )
        _check(cancel)
        progress(Progress("groups", files_done=0, files_total=len(pairs)))
        snap = group(files, pairs, threshold, reference_roots, preferred)
        _check(cancel)
        best = np.fromiter((p.best for p in pairs), dtype=np.float64, count=len(pairs))
    return Results(index_path, True, files, pairs, best, snap, len(files))


@dataclass(frozen=True)
class ScanOutcome:
    result: ScanResult
    results: Results | None


def scan_and_load(
    request: ScanRequest,
    threshold: float,
    reference_roots: Sequence[str],
    preferred: Sequence[int],
    progress: Sink,
    cancel: CancelToken,
) -> ScanOutcome:
    """Scan, then read the results (unless cancelled: the window then reloads what was kept)."""
    result = run_scan(request, progress=progress, cancel=cancel)
    if result.cancelled or cancel.cancelled:
        return ScanOutcome(result, None)
    assert request.index_path is not None
    return ScanOutcome(result, load(request.index_path, threshold, reference_roots, preferred, progress, cancel))


@dataclass(frozen=True)
class TrashOutcome:
    trashed: list[str]  # moved to the trash
    missing: list[str]  # already gone (forgotten by the index too)
    failed: list[tuple[str, str]]  # (path, reason): left where they are
    results: Results | None
    index_error: str = ""  # the files moved, but the index could not be told (a rescan fixes it)


def trash_dir_ready() -> None:
    """Make sure the user's data folder exists: Qt's freedesktop trash lives in it and fails
    (rather than creating it) when it is missing."""
    from PySide6.QtCore import QStandardPaths

    data = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericDataLocation)
    if data:
        os.makedirs(data, exist_ok=True)


def move_to_trash(path: str) -> tuple[bool, str]:
    """(moved, reason) using Qt's QFile.moveToTrash — the platform trash, never a delete."""
    from PySide6.QtCore import QFile

    f = QFile(path)
    if f.moveToTrash():
        return True, ""
    return False, f.errorString()


def trash(
    paths: Sequence[str],
    index_path: Path,
    threshold: float,
    reference_roots: Sequence[str],
    preferred: Sequence[int],
    progress: Sink,
    cancel: CancelToken,
) -> TrashOutcome:
    """Move ``paths`` to the trash, forget them (and those already gone) in the index, reload.

    Not cancellable half-way on purpose: the index must learn about every file that moved.
    """
    trashed: list[str] = []
    missing: list[str] = []
    failed: list[tuple[str, str]] = []
    trash_dir_ready()
    for i, p in enumerate(paths):
        progress(Progress("trash", files_done=i, files_total=len(paths), current=p))
        if not os.path.lexists(p):
            missing.append(p)
            continue
        ok, reason = move_to_trash(p)
        if ok:
            trashed.append(p)
        else:
            failed.append((p, reason))
    gone = trashed + missing
    index_error = ""
    results = None
    try:
        if gone:
            with Index.open(index_path) as idx:
                idx.remove_paths([os.fsencode(p) for p in gone])
        # Pairs are re-found rather than patched: copies of a file are paired with their class's
        # representative only, so removing a representative changes which pairs exist.
        results = load(index_path, threshold, reference_roots, preferred, progress, CancelToken())
    except SimscanError as e:
        # The files are in the trash either way; say so rather than fail the whole action.
        index_error = str(e)
    return TrashOutcome(trashed, missing, failed, results, index_error)


def problems(index_path: Path, progress: Sink, cancel: CancelToken) -> list[tuple[str, str]]:
    """(path, reason) of the files the last scan could not read."""
    with Index.open(index_path, readonly=True) as idx:
        return idx.problems(last_run_only=True)


@dataclass(frozen=True)
class PreviewRequest:
    ref_path: str
    sel_path: str
    ref_info: Any
    sel_info: Any


def compare_files(req: PreviewRequest, progress: Sink, cancel: CancelToken) -> tuple[PreviewRequest, Any]:
    return req, compare(req.ref_path, req.sel_path)
