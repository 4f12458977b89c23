"""The work the window hands to workers: plain functions over the core API.

Each takes its inputs by value, a progress sink and a cancel token, and returns a frozen
result; none touches a widget (they run on pool threads, see ``workers``).  Each opens its own
:class:`~simscan.index.Index` (one connection per thread; WAL lets a load read while a scan
writes).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simscan.cleanup import (  # noqa: F401 - the checks before a file leaves live in the core
    ALL_COPIES_MARKED,
    ALL_MARKED,
    MAX_TEXT_CHECK_BYTES,
    RESCAN,
    KeptFile,
    KeptState,
    TrashTarget,
    content_digest,
    forget_outside,
    kept_state,
    refusal,
    trash_file,
    true_copies,
)
from simscan.errors import SimscanError
from simscan.gui.review import ReviewRows, review_rows
from simscan.gui.snapshot import Snapshot
from simscan.index import FileTable, Index
from simscan.index import rebuild as rebuild_index
from simscan.progress import Cancelled, CancelToken, Progress
from simscan.scanner import ScanRequest, ScanResult, run_scan
from simscan.similarity import DEFAULT_MIN_SIMILARITY, compare
from simscan.similarity.core import PairArrays, SimilarityParams, sorted_rounded, under_roots
from simscan.similarity.engine import PairSet, find_pair_set, ignore_texts
from simscan.similarity.evidence import DEFAULT_MIN_PASSAGE
from simscan.similarity.grouping import empty_rows, group_pair_arrays
from simscan.similarity.keep import DEFAULT_KEEP, KeepRules

Sink = Callable[[Progress], None]

#: Pairs are found once at this floor (percent) and kept in memory; the threshold slider then
#: regroups them (group_pairs) without reading the index.  It is the similarity layer's
#: default threshold, chosen on the evaluation corpus: lower values mostly add noise.
PAIR_FLOOR = DEFAULT_MIN_SIMILARITY

#: Text held by more files than this counts nowhere unless the person chose another (View > Text Held by
#: Many Files…; the command line's --common-cutoff).
DEFAULT_COMMON_CUTOFF = SimilarityParams().common_min_df
#: The most it may be (the dialog's bound; the command line's too).
MAX_COMMON_CUTOFF = SimilarityParams.MAX_COMMON_MIN_DF


@dataclass(frozen=True)
class Results:
    """Everything the window shows about one index, read at one moment."""

    index_path: Path
    exists: bool  # False: no index yet (nothing scanned)
    files: FileTable | None = field(repr=False)
    pairs: PairArrays | None = field(repr=False)  # rows of ``files``, in find_pairs' order and rounding
    best: np.ndarray = field(repr=False)  # each pair's best score (percent), for the histogram
    snapshot: Snapshot = field(repr=False)
    n_files: int = 0
    cached: bool = False  # the pairs came from the index's results cache
    pair_set: PairSet | None = field(default=None, repr=False)  # unrounded, for the next load after a trash
    code_view: bool = True  # SimilarityParams.code_view the pairs were found with
    ignore: tuple[str, ...] = ()  # the texts ignored (View > Ignore Text of Files…)
    preferred: tuple[int, ...] = ()  # the ids preferred as references in the groups (with ``remembered``)
    min_passage: int = DEFAULT_MIN_PASSAGE  # SimilarityParams.min_passage the pairs were found with
    unfinished: str | None = None  # Index.unfinished_scan when read: a scan writing now, or the last one not done


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


def _check(cancel: CancelToken) -> None:
    if cancel.cancelled:
        raise Cancelled()


@dataclass(frozen=True)
class Scope:
    """Which indexed files the window shows: those under ``roots`` (the listed folders; None: every
    indexed file), but the ``hidden`` paths (Hide from Results: remembered per index)."""

    roots: tuple[str, ...] | None = None
    hidden: frozenset[str] = frozenset()

    def mask(self, files: FileTable) -> np.ndarray | None:
        """bool per row of ``files``: in the scope (None: every row)."""
        if self.roots is None and not self.hidden:
            return None
        cached = _SCOPE[0] if _SCOPE else None  # (one read: two jobs may race here)
        if cached is not None and cached[0] is files and cached[1] == self:
            return cached[2]
        mask = np.ones(len(files.paths), dtype=bool) if self.roots is None else under_roots(list(files.paths),
                                                                                           self.roots)
        if self.hidden:
            mask &= np.fromiter((p not in self.hidden for p in files.paths), bool, len(files.paths))
        _SCOPE[:] = [(files, self, mask)]
        return mask


ALL = Scope()
_SCOPE: list[tuple[Any, Scope, np.ndarray]] = []


def group(
    files: FileTable | None,
    pairs: PairArrays | None,
    threshold: float,
    reference_roots: Sequence[str],
    preferred: Sequence[int] = (),
    keep: KeepRules = DEFAULT_KEEP,
    scope: Scope = ALL,
) -> Snapshot:
    """Groups at ``threshold`` (percent) as a Snapshot; ``preferred`` file ids become their
    group's reference ("make reference"); ``keep``: the keep rules; ``scope``: the files shown.
    Columnar from end to end (``group_pair_arrays``, ``Snapshot.from_group_arrays``): no object
    per pair or member."""
    if files is None or len(files) == 0 or pairs is None:
        return Snapshot.empty(threshold)
    with gc_paused():
        mask = scope.mask(files)
        ga = group_pair_arrays(pairs, files, min_similarity=threshold, reference_roots=tuple(reference_roots),
                               keep=keep, scope=mask)
        snap = Snapshot.from_group_arrays(ga, files, pairs, threshold, preferred)
        snap = dataclasses.replace(snap, empty_files=[files.paths[r] for r in empty_rows(files, mask).tolist()])
        _ = snap.folders, snap.names  # computed here, off the GUI thread (names: ~0.15 s for 200,000)
        return snap


def review(
    files: FileTable | None, pairs: PairArrays | None, threshold: float, min_passage: int, scope: Scope = ALL
) -> ReviewRows:
    """The pairs review list at ``threshold`` (``review.review_rows``) of the files in ``scope``:
    columns, ranked by evidence, from the pairs the groups come from.  A job of its own after a load
    (~0.1-0.15 s of CPU for 100,000 pairs), so that the groups are painted without waiting for it."""
    with gc_paused():
        return review_rows(files, pairs, threshold, min_passage, scope.mask(files) if files is not None else None,
                           key=(threshold, scope))


def load(
    index_path: Path,
    threshold: float,
    reference_roots: Sequence[str],
    preferred: Sequence[int],
    progress: Sink,
    cancel: CancelToken,
    code_view: bool = True,
    previous: PairSet | None = None,
    *,
    ignore: Sequence[str] = (),
    params: SimilarityParams | None = None,
    remembered: Sequence[str] = (),
    keep: KeepRules = DEFAULT_KEEP,
    scope: Scope = ALL,
    min_passage: int = DEFAULT_MIN_PASSAGE,
    common_cutoff: int = DEFAULT_COMMON_CUTOFF,
) -> Results:
    """Read the index: files, pairs above :data:`PAIR_FLOOR` (or sharing a passage of ``min_passage``
    characters), groups at ``threshold``.
    ``code_view``: ``SimilarityParams.code_view`` (program sources also compared by structure).
    ``previous``: the pairs of the last load, from which those after a trash can be derived
    (``find_pair_set``).  ``ignore``: files whose text counts nowhere (``engine.ignore_texts``).
    ``params``: :func:`similarity_params` of those two, when the caller read them already.
    ``remembered``: paths made references in an earlier session, preferred when none is
    (``preferred`` empty) and they are indexed -- resolved here, so the groups are made once."""
    if not index_path.exists():
        return Results(index_path, False, None, None, np.zeros(0), Snapshot.empty(threshold), min_passage=min_passage)
    if params is None:
        params = similarity_params(code_view, ignore, min_passage, common_cutoff)
    progress(Progress("load", message=str(index_path)))
    with gc_paused():
        with Index.open(index_path, readonly=True) as idx:
            # Read from the index's results cache when the files did not change since the pairs
            # were last computed; else computed, then cached for the next load (best-effort).
            ps = find_pair_set(idx, min_similarity=min(PAIR_FLOOR, threshold), progress=progress, cancel=cancel,
                               params=params, previous=previous)
            try:
                unfinished = idx.unfinished_scan()
            except Exception:  # noqa: BLE001 - a hint, never a reason to show nothing
                unfinished = None
        _check(cancel)
        files = ps.files
        if remembered and not preferred:
            id_of = dict(zip(files.paths, np.asarray(files.ids).tolist()))
            preferred = [id_of[p] for p in remembered if p in id_of]
        pairs = sorted_rounded(ps.pairs)
        progress(Progress("groups", files_done=0, files_total=int(pairs.a.size)))
        snap = group(files, pairs, threshold, reference_roots, preferred, keep, scope)
        _check(cancel)
    return Results(index_path, True, files, pairs, pairs.best, snap, len(files), ps.cached or ps.derived, ps,
                   code_view, tuple(ignore), tuple(preferred), params.min_passage, unfinished)


def similarity_params(
    code_view: bool, ignore: Sequence[str], min_passage: int = DEFAULT_MIN_PASSAGE,
    common_cutoff: int = DEFAULT_COMMON_CUTOFF,
) -> SimilarityParams:
    """The pair search's settings from the window's (``min_passage``: a pair sharing a passage of that
    many characters is listed whatever its share; 0: by share only; ``common_cutoff``: text held by more
    files counts nowhere, ``SimilarityParams.common_min_df``): a text to ignore that cannot be
    read (moved, deleted) is an error saying how to stop ignoring it, not a silent change of the results."""
    try:
        ignored = ignore_texts(ignore)
    except OSError as e:
        name = e.filename if isinstance(e.filename, str) else "a text to ignore"
        raise SimscanError(
            f"cannot read {name}, a text to ignore: {e.strerror or e}",
            "Choose the texts again (View > Ignore Text of Files…), or View > Stop Ignoring Texts.",
        ) from e
    return SimilarityParams(code_view=code_view, ignore_values=ignored, min_passage=max(0, int(min_passage)),
                            common_min_df=min(max(2, int(common_cutoff)), MAX_COMMON_CUTOFF))


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
    code_view: bool = True,
    *,
    ignore: Sequence[str] = (),
    remembered: Sequence[str] = (),
    keep: KeepRules = DEFAULT_KEEP,
    scope: Scope = ALL,
    min_passage: int = DEFAULT_MIN_PASSAGE,
    common_cutoff: int = DEFAULT_COMMON_CUTOFF,
) -> ScanOutcome:
    """Scan, then read the results (unless cancelled: the window then reloads what was kept).  A text
    to ignore that cannot be read stops it before the scan, not after."""
    params = similarity_params(code_view, ignore, min_passage, common_cutoff)
    result = run_scan(request, progress=progress, cancel=cancel)
    if result.cancelled or cancel.cancelled:
        return ScanOutcome(result, None)
    assert request.index_path is not None
    return ScanOutcome(
        result, load(request.index_path, threshold, reference_roots, preferred, progress, cancel, code_view,
                     ignore=ignore, params=params, remembered=remembered, keep=keep, scope=scope,
                     min_passage=min_passage, common_cutoff=common_cutoff)
    )


@dataclass(frozen=True)
class TrashOutcome:
    trashed: list[str]  # moved to the trash
    missing: list[str]  # already gone (forgotten by the index too)
    failed: list[tuple[str, str]]  # (path, reason): left where they are
    results: Results | None
    index_error: str = ""  # the files moved, but the index could not be told (a rescan fixes it)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): checked and left in place


def trash_dir_ready() -> None:
    """Make sure the user's data folder exists: Qt's freedesktop trash lives in it and fails
    (rather than creating it) when it is missing."""
    from PySide6.QtCore import QStandardPaths

    data = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericDataLocation)
    if data:
        os.makedirs(data, exist_ok=True)


#: Whether the platform's trash is the freedesktop.org one, which simscan's own ``trash_file`` (the
#: command line's) writes: it then takes the files whose names Qt cannot give byte for byte.
FREEDESKTOP_TRASH = sys.platform not in ("darwin", "win32", "cygwin")

#: Why a file whose name Qt cannot represent exactly is left in place (where the trash is not freedesktop's).
UNNAMEABLE = (
    "its name is not valid text in this system's encoding, so it cannot be handed to the trash byte for byte "
    "(another file with a similar name could be moved instead); rename it, then scan again"
)


def qt_file_name(path: str) -> str | None:
    """The name to give QFile so that it opens exactly the bytes ``os.fsencode(path)``, or None.

    Paths are str with undecodable bytes surrogate-escaped (os.fsdecode).  Qt decodes file names
    with the locale codec and maps an undecodable byte to U+FFFD, so ``bad\\xff.txt`` would
    name ``bad\\ufffd.txt`` — ANOTHER file.  Only a name that Qt encodes back to the same bytes
    is safe; anything else is refused by the caller.
    """
    from PySide6.QtCore import QFile

    raw = os.fsencode(path)
    name = QFile.decodeName(raw)
    if bytes(QFile.encodeName(name).data()) != raw:
        return None
    return name


def move_to_trash(path: str) -> tuple[bool, str]:
    """(moved, reason) using Qt's QFile.moveToTrash — the platform trash, never a delete.

    A name Qt cannot represent byte for byte (see :func:`qt_file_name`: not valid text in the file
    system's encoding, e.g. a Latin-1 name from an old archive) goes to the same freedesktop.org trash
    through ``cleanup.trash_file``, by its bytes, as ``simscan apply`` moves it; elsewhere it is refused."""
    from PySide6.QtCore import QFile

    name = qt_file_name(path)
    if name is None:
        if not FREEDESKTOP_TRASH:
            return False, UNNAMEABLE
        try:
            trash_file(os.fsencode(path))
        except OSError as e:
            return False, e.strerror or str(e)
        return True, ""
    f = QFile(name)
    if f.moveToTrash():
        return True, ""
    return False, f.errorString()


def trash(
    targets: Sequence[TrashTarget],
    index_path: Path,
    threshold: float,
    reference_roots: Sequence[str],
    preferred: Sequence[int],
    progress: Sink,
    cancel: CancelToken,
    code_view: bool = True,
    previous: PairSet | None = None,
    *,
    ignore: Sequence[str] = (),
    keep: KeepRules = DEFAULT_KEEP,
    scope: Scope = ALL,
    min_passage: int = DEFAULT_MIN_PASSAGE,
    common_cutoff: int = DEFAULT_COMMON_CUTOFF,
) -> TrashOutcome:
    """Check each target (:func:`refusal`), move the rest to the trash, forget them (and those
    already gone) in the index, reload.

    Every target is checked before anything moves, and the texts to ignore are read (one that
    cannot be read stops the trash before it moves anything).  Not cancellable half-way on
    purpose: the index must learn about every file that moved.
    """
    params = similarity_params(code_view, ignore, min_passage, common_cutoff)
    trashed: list[str] = []
    missing: list[str] = []
    failed: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    todo: list[str] = []
    states: dict[int, tuple[tuple[KeptFile, ...], KeptState]] = {}  # by id of a group's shared kept tuple
    for t in targets:
        if not os.path.lexists(t.path):
            missing.append(t.path)
            continue
        key = id(t.kept)
        if key not in states:
            states[key] = (t.kept, kept_state(t.kept, t.same_content))
        why = refusal(t, states[key][1]) or (
            UNNAMEABLE if not FREEDESKTOP_TRASH and qt_file_name(t.path) is None else "")
        if why:
            refused.append((t.path, why))
        else:
            todo.append(t.path)
    trash_dir_ready()
    for i, p in enumerate(todo):
        progress(Progress("trash", files_done=i, files_total=len(todo), current=p))
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
                # The exact bytes of each path (surrogate escapes undone), as moved.
                idx.remove_paths([os.fsencode(p) for p in gone])
        # When every moved file leaves a copy of its content behind, the pairs are derived from the
        # last ones (``previous``); otherwise they are searched again.
        results = load(index_path, threshold, reference_roots, preferred, progress, CancelToken(), code_view,
                       previous, ignore=ignore, params=params, keep=keep, scope=scope, min_passage=min_passage,
                       common_cutoff=common_cutoff)
    except SimscanError as e:
        # The files are in the trash either way; say so rather than fail the whole action.
        index_error = str(e)
    return TrashOutcome(trashed, missing, failed, results, index_error, refused)


def rebuild(index_path: Path) -> tuple[Path | None, int]:
    """Move the damaged index at ``index_path`` aside and start a new one in its place with every entry
    of it that passes its checksums (``index.rebuild``): (where the old one went, None when it was empty;
    how many files were kept)."""
    fresh, moved = rebuild_index(index_path)
    try:
        return moved, fresh.salvaged[0]
    finally:
        fresh.close()


def problems(index_path: Path, progress: Sink, cancel: CancelToken) -> list[tuple[str, str, bool]]:
    """(path, reason, indexed) of the files the last scan could not read, or not as text: ``indexed``
    when the index holds the file all the same (compared by its bytes, or by its checksum alone)."""
    with Index.open(index_path, readonly=True) as idx:
        rows = idx.problems(last_run_only=True)
        held = idx.ids_for_paths([os.fsencode(p) for p, _ in rows]) if rows else {}
    return [(p, why, os.fsencode(p) in held) for p, why in rows]


@dataclass(frozen=True)
class PreviewRequest:
    ref_path: str
    sel_path: str
    ref_info: Any
    sel_info: Any
    pair: Any = None  # the selected row's Pair (reference, selected) as listed, or None
    similarity: float | None = None  # the percentage the selected row shows
    code_view: bool = True  # SimilarityParams.code_view of the listed results
    ignore: tuple[str, ...] = ()  # the texts the listed results ignore
    closest: bool = False  # the reference row is selected; ``sel_path`` is its group's closest file
    pair_mode: bool = False  # a pair of the review list: ``ref_path`` is its file A, ``sel_path`` its file B


def compare_files(req: PreviewRequest, progress: Sink, cancel: CancelToken) -> tuple[PreviewRequest, Any]:
    return req, compare(req.ref_path, req.sel_path, code_view=req.code_view, ignore=req.ignore)
