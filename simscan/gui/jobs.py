"""The work the window hands to workers: plain functions over the core API.

Each takes its inputs by value, a progress sink and a cancel token, and returns a frozen
result; none touches a widget (they run on pool threads, see ``workers``).  Each opens its own
:class:`~simscan.index.Index` (one connection per thread; WAL lets a load read while a scan
writes).
"""

from __future__ import annotations

import gc
import os
import stat
import threading
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from simscan.errors import SimscanError
from simscan.fingerprint import decode_file, open_unseen
from simscan.gui.models import Snapshot
from simscan.index import FileTable, Index
from simscan.progress import Cancelled, CancelToken, Progress
from simscan.scanner import ScanRequest, ScanResult, run_scan
from simscan.similarity import DEFAULT_MIN_SIMILARITY, compare
from simscan.similarity.core import PairArrays, SimilarityParams, sorted_rounded
from simscan.similarity.engine import PairSet, find_pair_set, ignore_texts
from simscan.similarity.grouping import group_pair_arrays

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
    pairs: PairArrays | None = field(repr=False)  # rows of ``files``, in find_pairs' order and rounding
    best: np.ndarray = field(repr=False)  # each pair's best score (percent), for the histogram
    snapshot: Snapshot = field(repr=False)
    n_files: int = 0
    cached: bool = False  # the pairs came from the index's results cache
    pair_set: PairSet | None = field(default=None, repr=False)  # unrounded, for the next load after a trash
    code_view: bool = True  # SimilarityParams.code_view the pairs were found with
    ignore: tuple[str, ...] = ()  # the texts ignored (View > Ignore Text of Files…)
    preferred: tuple[int, ...] = ()  # the ids preferred as references in the groups (with ``remembered``)


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


def group(
    files: FileTable | None,
    pairs: PairArrays | None,
    threshold: float,
    reference_roots: Sequence[str],
    preferred: Sequence[int] = (),
) -> Snapshot:
    """Groups at ``threshold`` (percent) as a Snapshot; ``preferred`` file ids become their
    group's reference ("make reference").  Columnar from end to end (``group_pair_arrays``,
    ``Snapshot.from_group_arrays``): no object per pair or member."""
    if files is None or len(files) == 0 or pairs is None:
        return Snapshot.empty(threshold)
    with gc_paused():
        ga = group_pair_arrays(pairs, files, min_similarity=threshold, reference_roots=tuple(reference_roots))
        snap = Snapshot.from_group_arrays(ga, files, pairs, threshold, preferred)
        _ = snap.folders  # computed here, off the GUI thread
        return snap


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
) -> Results:
    """Read the index: files, pairs above :data:`PAIR_FLOOR`, groups at ``threshold``.
    ``code_view``: ``SimilarityParams.code_view`` (program sources also compared by structure).
    ``previous``: the pairs of the last load, from which those after a trash can be derived
    (``find_pair_set``).  ``ignore``: files whose text counts nowhere (``engine.ignore_texts``).
    ``params``: :func:`similarity_params` of those two, when the caller read them already.
    ``remembered``: paths made references in an earlier session, preferred when none is
    (``preferred`` empty) and they are indexed -- resolved here, so the groups are made once."""
    if not index_path.exists():
        return Results(index_path, False, None, None, np.zeros(0), Snapshot.empty(threshold))
    if params is None:
        params = similarity_params(code_view, ignore)
    progress(Progress("load", message=str(index_path)))
    with gc_paused():
        with Index.open(index_path, readonly=True) as idx:
            # Read from the index's results cache when the files did not change since the pairs
            # were last computed; else computed, then cached for the next load (best-effort).
            ps = find_pair_set(idx, min_similarity=min(PAIR_FLOOR, threshold), progress=progress, cancel=cancel,
                               params=params, previous=previous)
        _check(cancel)
        files = ps.files
        if remembered and not preferred:
            id_of = dict(zip(files.paths, np.asarray(files.ids).tolist()))
            preferred = [id_of[p] for p in remembered if p in id_of]
        pairs = sorted_rounded(ps.pairs)
        progress(Progress("groups", files_done=0, files_total=int(pairs.a.size)))
        snap = group(files, pairs, threshold, reference_roots, preferred)
        _check(cancel)
    return Results(index_path, True, files, pairs, pairs.best, snap, len(files), ps.cached or ps.derived, ps,
                   code_view, tuple(ignore), tuple(preferred))


def similarity_params(code_view: bool, ignore: Sequence[str]) -> SimilarityParams:
    """The pair search's settings from the window's: a text to ignore that cannot be read (moved,
    deleted) is an error saying how to stop ignoring it, not a silent change of the results."""
    try:
        ignored = ignore_texts(ignore)
    except OSError as e:
        name = e.filename if isinstance(e.filename, str) else "a text to ignore"
        raise SimscanError(
            f"cannot read {name}, a text to ignore: {e.strerror or e}",
            "Choose the texts again (View > Ignore Text of Files…), or View > Stop Ignoring Texts.",
        ) from e
    return SimilarityParams(code_view=code_view, ignore_values=ignored)


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
) -> ScanOutcome:
    """Scan, then read the results (unless cancelled: the window then reloads what was kept).  A text
    to ignore that cannot be read stops it before the scan, not after."""
    params = similarity_params(code_view, ignore)
    result = run_scan(request, progress=progress, cancel=cancel)
    if result.cancelled or cancel.cancelled:
        return ScanOutcome(result, None)
    assert request.index_path is not None
    return ScanOutcome(
        result, load(request.index_path, threshold, reference_roots, preferred, progress, cancel, code_view,
                     ignore=ignore, params=params, remembered=remembered)
    )


@dataclass(frozen=True)
class KeptFile:
    """An unmarked member of a marked file's group, as the scan saw it (bytes, ns)."""

    path: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class TrashTarget:
    """A marked file as the scan saw it, with the members of its group that stay.

    ``same_content``: the file is a true copy of its group's reference (its kind is exact or
    content), and ``kept`` then lists only the unmarked files holding that same content (the
    reference and its other copies), each counting as the remaining copy only while its size
    and modification time are what the scan saw.  Otherwise ``kept`` is every unmarked member.
    """

    path: str
    size: int
    mtime_ns: int
    kept: tuple[KeptFile, ...]
    same_content: bool


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


#: Why a file whose name Qt cannot represent exactly is left in place.
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

    Refuses a name Qt cannot represent byte for byte (see :func:`qt_file_name`)."""
    from PySide6.QtCore import QFile

    name = qt_file_name(path)
    if name is None:
        return False, UNNAMEABLE
    f = QFile(name)
    if f.moveToTrash():
        return True, ""
    return False, f.errorString()


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


@dataclass(frozen=True)
class _KeptState:
    """The kept members of one group as they are on disk now."""

    identities: dict[tuple[int, int], str]  # (device, inode) -> path, of every kept member that exists
    intact: frozenset[tuple[int, int]]  # those that still count as the kept copy (regular; copies: as scanned)
    digests: dict[tuple[str, bool], bytes | None] = field(default_factory=dict, compare=False)  # (path, text)


#: A "content" copy (same text, other bytes) larger than this is not decoded to be checked before it is
#: trashed (memory: the text and its decoded form), so it is refused; exact copies are checked at any size.
MAX_TEXT_CHECK_BYTES = 64 << 20


def content_digest(path: str, text: bool) -> bytes | None:
    """What a true copy must share with the copy kept, read now (None: unreadable, or not text):
    the bytes (``text`` False), or the decoded text with only what makes a "content" copy set
    aside -- the encoding, the line endings, a byte-order mark, Unicode composition -- so that
    files differing in indentation, spacing or wrapping (two different Python programs or YAML
    files) are never each other's copy, though their light forms match.  XXH3-128."""
    try:
        if not text:
            h = xxhash.xxh3_128()
            with open_unseen(path) as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            return h.digest()
        if os.path.getsize(path) > MAX_TEXT_CHECK_BYTES:
            return None
        dt = decode_file(path)
    except OSError:
        return None
    if dt.text is None or "+replace" in (dt.encoding or ""):
        # Bytes the decoder could not read became U+FFFD: two texts that differ there would read
        # alike (a Latin-1 "café" and "cafè" after 64 KiB of ASCII).  Only the same bytes prove it.
        return None
    decoded = dt.text
    strict = unicodedata.normalize("NFC", decoded.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n"))
    return xxhash.xxh3_128_digest(strict.encode("utf-8", "surrogatepass"))


def _kept_state(kept: tuple[KeptFile, ...], same_content: bool) -> _KeptState:
    identities: dict[tuple[int, int], str] = {}
    intact: set[tuple[int, int]] = set()
    for k in kept:
        try:
            kst = os.stat(k.path)
        except OSError:
            continue
        ident = _identity(kst)
        identities.setdefault(ident, k.path)
        changed = kst.st_size != k.size or kst.st_mtime_ns != k.mtime_ns
        if stat.S_ISREG(kst.st_mode) and not (same_content and changed):
            intact.add(ident)
    return _KeptState(identities, frozenset(intact))


#: Why a marked file whose group keeps nothing is left in place: the person marked every file (or, for a
#: copy, the reference and every copy of it).  Nothing changed on disk, so no "scan again" here: the
#: remedy is to unmark the file to keep, as the confirmation dialog says before the move.
ALL_MARKED = (
    "every file of its group is marked, so no copy would be kept; unmark the file to keep in that group (e.g. its "
    "reference), then move the others"
)
ALL_COPIES_MARKED = (
    "every file with its content (the reference and its copies) is marked, so no copy would be kept; unmark the "
    "one to keep (e.g. the reference), then move the others"
)


#: The end of a refusal that a new scan resolves (the file or its kept copy changed on disk).
RESCAN = "; scan again to update the results"


def refusal(target: TrashTarget, kept: _KeptState | None = None) -> str:
    """Why ``target`` must not be moved now ("" when it may).

    The last line of defence before a file leaves: a file must not be marked with every other
    file of its group (:data:`ALL_MARKED`; a copy: with every file holding its content,
    :data:`ALL_COPIES_MARKED`), and the file must still be the regular file the
    scan saw (size and mtime in ns unchanged), must not be the very same file (device, inode) as
    a member that is kept (a hard link, or the same file reached through a symlinked folder), and
    at least one kept member must still exist as a separate file — for a true copy, a kept file
    with the same content, with the size and modification time the scan saw.  ``kept``: the group's :func:`_kept_state`, shared by its marked members (stat
    each kept file once, not once per marked file).
    """
    rescan = RESCAN
    if not target.kept:  # marked with the rest of its group (or of its copies): the marks say so, not the disk
        return ALL_COPIES_MARKED if target.same_content else ALL_MARKED
    try:
        st = os.lstat(target.path)
    except OSError as e:
        return f"cannot be checked ({e.strerror or e})"
    if stat.S_ISDIR(st.st_mode):
        return "it is now a folder" + rescan
    if not stat.S_ISREG(st.st_mode):
        return "it is no longer a regular file" + rescan
    if st.st_size != target.size or st.st_mtime_ns != target.mtime_ns:
        return "it changed since the scan" + rescan
    if kept is None:
        kept = _kept_state(target.kept, target.same_content)
    me = _identity(st)
    if me in kept.identities:
        return (
            f"it is the same file as the kept {kept.identities[me]} (a hard link or a path through a linked "
            "folder): trashing it would lose the only copy" + rescan
        )
    if not kept.intact:
        return "no other file of its group is left unchanged on disk, so no copy would be kept" + rescan
    if target.same_content and not _has_copy(target.path, kept):
        return (
            "no kept file holds its content now: either they differ in more than encoding and line endings "
            "(indentation, spacing, wrapping: not true copies, so it stays; move it by hand if you mean to), or "
            "one of them was rewritten since the scan with its size and time kept (scan again)"
        )
    return ""


def true_copies(pairs: Sequence[tuple[str, str]], progress: Sink, cancel: CancelToken) -> list[bool]:
    """For each (copy, reference) the scan called "content" copies (other bytes): whether the copy
    holds the reference's text now (:func:`_same_content`, its text reading only: their bytes
    differ).  Each reference is read once."""
    seen: dict[tuple[str, bool], bytes | None] = {}
    out = []
    for i, (copy, ref) in enumerate(pairs):
        _check(cancel)
        progress(Progress("verify", files_done=i, files_total=len(pairs), current=copy))
        out.append(_same_content(copy, [ref], seen, kinds=(True,)))
    return out


def _has_copy(path: str, kept: _KeptState) -> bool:
    """Whether a kept, intact file holds ``path``'s content now (:func:`_same_content`)."""
    return _same_content(path, [kept.identities[i] for i in kept.intact], kept.digests)


def _same_content(
    path: str, others: Sequence[str], seen: dict[tuple[str, bool], bytes | None], kinds: Sequence[bool] = (False, True)
) -> bool:
    """Whether one of ``others`` holds ``path``'s content, read from both files at this moment: the
    same bytes, or the same text (:func:`content_digest`) -- a size and time unchanged since the scan
    do not prove the bytes are (``cp -p``, ``touch -r``, coarse file-system clocks).  ``seen``: the
    digests of ``others`` read so far (each is read once per kind); ``kinds``: the readings to try
    (False: bytes, True: text).  Bytes are compared only with files of the same size (a text copy
    in another encoding would otherwise read every kept file whole twice)."""
    size = _size(path) if False in kinds else None
    for text in kinds:
        candidates = others if text else [o for o in others if size is not None and _size(o) == size]
        if not candidates:
            continue
        mine = content_digest(path, text)
        if mine is None:
            continue
        for other in candidates:
            if (other, text) not in seen:
                seen[(other, text)] = content_digest(other, text)
            if seen[(other, text)] == mine:
                return True
    return False


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


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
) -> TrashOutcome:
    """Check each target (:func:`refusal`), move the rest to the trash, forget them (and those
    already gone) in the index, reload.

    Every target is checked before anything moves, and the texts to ignore are read (one that
    cannot be read stops the trash before it moves anything).  Not cancellable half-way on
    purpose: the index must learn about every file that moved.
    """
    params = similarity_params(code_view, ignore)
    trashed: list[str] = []
    missing: list[str] = []
    failed: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    todo: list[str] = []
    states: dict[int, tuple[tuple[KeptFile, ...], _KeptState]] = {}  # by id of a group's shared kept tuple
    for t in targets:
        if not os.path.lexists(t.path):
            missing.append(t.path)
            continue
        key = id(t.kept)
        if key not in states:
            states[key] = (t.kept, _kept_state(t.kept, t.same_content))
        why = refusal(t, states[key][1]) or (UNNAMEABLE if qt_file_name(t.path) is None else "")
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
                       previous, ignore=ignore, params=params)
    except SimscanError as e:
        # The files are in the trash either way; say so rather than fail the whole action.
        index_error = str(e)
    return TrashOutcome(trashed, missing, failed, results, index_error, refused)


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
    pair: Any = None  # the selected row's Pair (reference, selected) as listed, or None
    similarity: float | None = None  # the percentage the selected row shows
    code_view: bool = True  # SimilarityParams.code_view of the listed results
    ignore: tuple[str, ...] = ()  # the texts the listed results ignore
    closest: bool = False  # the reference row is selected; ``sel_path`` is its group's closest file


def compare_files(req: PreviewRequest, progress: Sink, cancel: CancelToken) -> tuple[PreviewRequest, Any]:
    return req, compare(req.ref_path, req.sel_path, code_view=req.code_view, ignore=req.ignore)
