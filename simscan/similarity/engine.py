"""The similarity layer on an :class:`simscan.index.Index`: thin adapters that read the
arrays and call the pure functions of ``core`` and ``grouping``."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from simscan.extract.document import fingerprint_path_noted
from simscan.fingerprint import DEFAULT_PARAMS
from simscan.fingerprint.views import CODE, TEXT
from simscan.model import Fingerprints
from simscan.progress import Cancelled, CancelToken, Progress, ProgressSink, Throttle
from simscan.similarity.arrays import popcount64
from simscan.similarity.compare import SCORE_KIND, classify, fingerprint_level, template_values
from simscan.similarity.core import (
    DEFAULT_MIN_SIMILARITY,
    DEFAULT_SIM_PARAMS,
    PairArrays,
    SimilarityParams,
    expand_copy_pairs,
    ignore_values,
    sorted_rounded,
    take_pairs,
    to_pairs,
)
from simscan.similarity.evidence import PlacesLoader, StoredSets, frequent_cutoff, pair_evidence, window_of_level
from simscan.similarity.grouping import (
    MemberRows,
    empty_rows,
    group_pair_arrays,
    groups_of_rows,
    member_rows,
    pair_scores,
)
from simscan.similarity.keep import DEFAULT_KEEP, KeepRules
from simscan.similarity.removal import pairs_after_removal
from simscan.similarity.slices import SlicedSets, memory_budget, spilled
from simscan.similarity.types import KIND_CODE, SCORE_DECIMALS, Group, Pair, passes
from simscan.similarity.views import (
    CODE_MIN_SHARED,
    compute_pair_arrays_by_view,
    drop_values_with,
    has_code_view,
    pair_arrays_by_view,
    view_fingerprints,
)


@contextmanager
def _snapshot(index: Any) -> Iterator[None]:
    """One read transaction around several reads, so that the file table and the fingerprints
    come from the same state of the index even while a scan commits (WAL readers see the
    snapshot taken at their first read)."""
    conn = getattr(index, "connection", None)
    if conn is None or conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")  # nothing was written; ends the read snapshot


#: SQLite page cache (KiB) of the index's connection while the pair search reads the stored sets: it
#: reads each once in order (and again for the evidence), so the index's 64 MiB cache holds nothing it
#: reads twice soon, but adds its 64 MB to the peak memory (the cluster case: 436 -> 371 MB, the same
#: time, 4.4-4.9 s either way).
_SEARCH_PAGE_CACHE_KIB = 2048


@contextmanager
def _small_page_cache(index: Any) -> Iterator[None]:
    """The index's connection with a page cache of :data:`_SEARCH_PAGE_CACHE_KIB` while in the block,
    its own after (an index without a connection, or that refuses, is left as it is)."""
    conn = getattr(index, "connection", None)
    try:
        before = conn.execute("PRAGMA cache_size").fetchone()[0] if conn is not None else None
        if before is not None:
            conn.execute(f"PRAGMA cache_size = {-_SEARCH_PAGE_CACHE_KIB}")
    except sqlite3.Error:
        before = None
    try:
        yield
    finally:
        if before is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.execute(f"PRAGMA cache_size = {int(before)}")


def progress_reporter(progress: ProgressSink | None) -> Callable[[str, int, int], None] | None:
    """The ``report(phase, done, total)`` of the pair search, as throttled reports to ``progress``."""
    if progress is None:
        return None
    throttle = Throttle(progress)

    def report(phase: str, done: int, total: int) -> None:
        throttle.report(Progress(phase, files_done=done, files_total=total), force=done in (0, total))

    return report


def _identity(index: Any, files: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """(device, inode) of the rows of ``files``: the table's columns when it has them, else read
    from the index's ``files`` table (indexes whose FileTable predates those columns); None when
    unknown."""
    n = len(files.paths)
    dev, ino = getattr(files, "device", None), getattr(files, "inode", None)
    if dev is not None and ino is not None and len(dev) == n and len(ino) == n:
        return None  # the core reads the columns itself
    try:
        rows = index.connection.execute("SELECT id, device, inode FROM files").fetchall()
    except (AttributeError, sqlite3.Error):
        return None
    if not rows:
        return None
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    ids = np.asarray(files.ids, dtype=np.int64)
    order = np.argsort(arr[:, 0])
    pos = np.minimum(np.searchsorted(arr[order, 0], ids), arr.shape[0] - 1)
    hit = arr[order[pos], 0] == ids
    dev = np.where(hit, arr[order[pos], 1], 0)
    ino = np.where(hit, arr[order[pos], 2], 0)  # inode 0: unknown, never merged
    return dev, ino


#: Version of what the similarity layer caches (bump when the pair arrays' meaning changes).
# 2: passages (``longest`` / ``shared`` columns, pairs kept by a passage); 3: a pair both views find keeps the
# longer passage of the two; 4: every pair sharing two values weighed whatever the threshold; 5: the pair budget
# bounds distinct pairs, ``pair_work`` the incidences (the common cut-off no longer lowered where they collapse)
_CACHE_VERSION = 5


def cache_key(params: SimilarityParams, reference_roots: Sequence[str] = ()) -> str:
    """The results-cache key of pairs found with ``params`` and ``reference_roots`` (which path of
    a file reached by several paths takes part): everything they depend on besides the files."""
    from simscan.index.results import CACHE_FORMAT
    from simscan.index.schema import SCHEMA_VERSION
    from simscan.model import ALGORITHM_VERSION

    roots = sorted({os.path.abspath(os.fsdecode(r)) for r in reference_roots})
    settings = dataclasses.asdict(params)
    ignored = settings.pop("ignore_values")
    if ignored:  # (absent when empty: the keys of results cached before it existed stay valid)
        settings["ignore_values"] = f"{len(ignored) // 8} values, xxh3 {xxhash.xxh3_64_hexdigest(ignored)}"
    return json.dumps(
        {
            "what": "pairs", "format": CACHE_FORMAT, "similarity": _CACHE_VERSION, "schema": SCHEMA_VERSION,
            "algorithm": ALGORITHM_VERSION, "params": settings, "roots": roots,
            "score_kind": SCORE_KIND, "code": _code_digest(),
        },
        sort_keys=True,
    )


#: Modules whose code decides the pairs (and the file table) the cache holds.
_CODE_MODULES = (
    "simscan.fingerprint", "simscan.fingerprint.rolling", "simscan.fingerprint.views", "simscan.index.results",
    "simscan.index.store", "simscan.similarity.arrays", "simscan.similarity.core", "simscan.similarity.engine",
    "simscan.similarity.levels", "simscan.similarity.removal", "simscan.similarity.simhash_tables",
    "simscan.similarity.views", "simscan.similarity.evidence", "simscan.similarity.slices", "simscan.columns",
    "simscan._native",  # (the compiled core: its counting and evidence decide the pairs too)
)


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """XXH3 of the source of :data:`_CODE_MODULES`: results cached by another version of that
    code (an upgrade that forgot ``_CACHE_VERSION``, a developer's edit) are never read.  Falls
    back to the module names when a source file cannot be read (a frozen build)."""
    import importlib

    import xxhash

    h = xxhash.xxh3_64()
    for name in _CODE_MODULES:
        h.update(name.encode())
        path = getattr(importlib.import_module(name), "__file__", None)
        try:
            with open(path, "rb") as f:  # type: ignore[arg-type]
                h.update(f.read())
        except (OSError, TypeError):
            pass
    return h.hexdigest()


@dataclass(frozen=True)
class PairSet:
    """Scored pairs as columns with the file table their rows refer to.

    pairs: ``PairArrays`` (unrounded, unordered: see ``core.sorted_rounded``), every pair with
    best score >= ``floor`` (the requested similarity).  cached: read from the index's results
    cache rather than computed.  stored: computed and written to that cache now.  derived: not
    searched but derived from an earlier set after files left the index (``removal``).  key: the
    results-cache key of the parameters and reference folders it was found with.
    """

    files: Any
    pairs: PairArrays
    cached: bool = False
    stored: bool = False
    derived: bool = False
    key: str = ""
    floor: float = DEFAULT_MIN_SIMILARITY
    #: (the common cut-off the search used, the one it would have used) when the pair budget lowered it:
    #: text held by more files than the first counted nowhere (None: not lowered).
    cutoff: tuple[int, int] | None = None
    #: (how many files are mostly common text, the cut-off) when they are more than the cut-off
    #: (``core.mostly_common``): near-copies of a text held by more files than it may be in no pair
    #: (None: not so, or not known).
    crowded: tuple[int, int] | None = None


def _filter(pa: PairArrays, min_similarity: float, min_passage: int) -> PairArrays:
    """The pairs ``compute_pair_arrays`` keeps at ``min_similarity`` from a set computed at a lower
    floor: copies always, other pairs by their best score (``passes``) or their longest passage."""
    keep = passes(pa.best, min_similarity) | (pa.kind <= 1)
    if min_passage > 0:
        keep |= pa.longest >= min_passage
    if keep.all():
        return pa
    return take_pairs(pa, keep)


def _pack_pairs(
    files: Any, pa: PairArrays, cutoff: tuple[int, int] | None = None, crowded: tuple[int, int] | None = None,
) -> dict[str, np.ndarray]:
    from simscan.index.results import pack_file_table

    out: dict[str, np.ndarray] = {}
    pack_file_table(files, out)
    for f in PairArrays.__slots__:
        out["pairs." + f] = getattr(pa, f)
    if cutoff is not None:
        out["search.cutoff"] = np.array(cutoff, np.int64)
    if crowded is not None:
        out["search.crowded"] = np.array(crowded, np.int64)
    return out


def _unpack_pairs(d: dict[str, np.ndarray]) -> tuple[Any, PairArrays] | None:
    from simscan.index import FileTable
    from simscan.index.results import unpack_file_table

    try:
        files = unpack_file_table(d, FileTable)
        pa = PairArrays(*(np.array(d["pairs." + f]) for f in PairArrays.__slots__))
    except (KeyError, ValueError, TypeError, IndexError, UnicodeDecodeError):
        return None
    n, m = len(files.paths), pa.a.size
    cols = [getattr(pa, f) for f in PairArrays.__slots__]
    if any(c.shape != (m,) for c in cols) or (m and (min(pa.a.min(), pa.b.min()) < 0 or max(pa.a.max(), pa.b.max()) >= n)):
        return None
    return files, pa


def ignore_texts(paths: Sequence[str | os.PathLike[str]]) -> bytes:
    """``SimilarityParams.ignore_values`` for files whose text should count nowhere: the question or
    template every answer repeats, a licence text (a teacher's "base file", as in MOSS).  Their
    fingerprints are left out of every set, so a passage of them in two files is not shared, and a
    file that is all template has nothing left.  Raises OSError when a file cannot be read."""
    return ignore_values([template_values(p) for p in paths])


def find_pair_set(
    index: Any,
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    progress: ProgressSink | None = None,
    cancel: CancelToken | None = None,
    params: SimilarityParams = DEFAULT_SIM_PARAMS,
    reference_roots: Sequence[str] = (),
    cache: bool = True,
    previous: PairSet | None = None,
    memory: int | None = None,
) -> PairSet:
    """Every pair of indexed files whose best score is >= ``min_similarity`` (percent), as
    columns, with the file table read in the same snapshot.

    ``memory``: the budget (bytes) of the search's slices (``slices``; None: ``slices.memory_budget``'s
    default); the pairs do not depend on it.

    ``previous``: the set this returned earlier on the same index, if at hand.  When it is not
    in the cache and the only change since is files that left the index while a copy of their
    content stayed (the window's "move copies to the trash"), the pairs are derived from it
    exactly instead of searched again (``removal``; e.g. 0.3 s instead of 3 s for 200,000 files).

    The pairs are always computed down to the *floor* min(``min_similarity``,
    ``DEFAULT_MIN_SIMILARITY``) and filtered at ``min_similarity``: a pair kept for a passage is
    scored by the better of the views that keep it, and a view keeps more pairs at a lower floor,
    so the set depends on the floor, and one floor serves every request at the default threshold
    and above.  With ``cache`` (and an index that has a results cache, see
    ``simscan.index.results``): when the index holds pairs computed from the very same files (same
    generation) with the same parameters at that floor, they are read (milliseconds) instead of
    computed; otherwise they are computed and written to the cache best-effort.  The result is
    the same either way (tested).  Raises :class:`Cancelled` when cancelled.
    """
    key = cache_key(params, reference_roots)
    can_cache = cache and hasattr(index, "generation") and hasattr(index, "cached_results")
    floor = min(min_similarity, DEFAULT_MIN_SIMILARITY)
    gen = None
    with _snapshot(index):
        if can_cache:
            gen = index.generation()
            hit = index.cached_results(key, gen, floor)
            got = _unpack_pairs(hit) if hit is not None else None
            if got is not None:
                return PairSet(got[0], _filter(got[1], min_similarity, params.min_passage), cached=True, key=key,
                               floor=min_similarity, cutoff=stored_cutoff(hit.get("search.cutoff")),
                               crowded=stored_cutoff(hit.get("search.crowded")))
        files = index.files()
        # (a set filtered at its own floor only: then it holds every pair that floor's search finds)
        if previous is not None and previous.key == key and previous.floor == floor:
            derived = pairs_after_removal(previous.files, previous.pairs, files,
                                          lambda a, b: _same_fingerprints(index, a, b))
            if derived is not None:  # (the same distinct contents: the same cut-off)
                stored = bool(can_cache and gen is not None and _store(index, key, gen, previous.floor, files, derived,
                                                                       previous.cutoff, previous.crowded))
                return PairSet(files, _filter(derived, min_similarity, params.min_passage), stored=stored, derived=True, key=key,
                               floor=min_similarity, cutoff=previous.cutoff, crowded=previous.crowded)
        identity = _identity(index, files)
        if gen is None and hasattr(index, "generation"):
            gen = index.generation()
        report, lowered, crowded = _noting_cutoff(progress_reporter(progress))
        if hasattr(index, "stored_sets") and hasattr(index, "iter_fingerprints"):
            # In slices (``slices``), in this read snapshot: the values wait in partitions, in memory
            # up to the budget and in files past it, and a few files' sets are read again later.
            budget = memory_budget(memory)
            with _small_page_cache(index), spilled(index, files, budget, cancel=cancel, report=report,
                                                   spill_dir=_spill_dir(index)) as spill:
                ignored = params.ignored()
                text = SlicedSets(spill, index, TEXT, ignored)
                code = SlicedSets(spill, index, CODE, ignored) if spill.has_code and params.code_view else None
                pa = pair_arrays_by_view(
                    files, text, code, min_similarity=floor, params=params, cancel=cancel, report=report,
                    identity=identity, reference_roots=reference_roots,
                    places=_places_loader(index, files, files.ids, gen), memory=budget,
                )
        else:  # another index implementation: every set in memory
            got: list[np.ndarray] = []
            with_spans = hasattr(index, "stored_sets")
            ids, offsets, values = index.fingerprints(None, kind=SCORE_KIND, **({"spans": got} if with_spans else {}))
            spans = got[0] if with_spans else None
            if params.ignore_values:  # texts to ignore: their fingerprints count nowhere
                offsets, values, spans = drop_values_with(offsets, values, spans, params.ignored(), consume=True)
            places = _places_loader(index, files, ids, gen) if spans is not None else None
            pa = compute_pair_arrays_by_view(
                files, ids, offsets, values, consume=True, min_similarity=floor, params=params,
                cancel=cancel, report=report, identity=identity, reference_roots=reference_roots,
                spans=spans, places=places,
            )
            del ids, offsets, values, spans
    cutoff = tuple(lowered) if lowered else None
    many = tuple(crowded) if crowded else None
    stored = bool(can_cache and gen is not None and _store(index, key, gen, floor, files, pa, cutoff, many))
    return PairSet(files, _filter(pa, min_similarity, params.min_passage), stored=stored, key=key, floor=min_similarity,
                   cutoff=cutoff, crowded=many)


def stored_cutoff(a: np.ndarray | None) -> tuple[int, int] | None:
    """A cached ``search.cutoff`` (``search.crowded``) as :attr:`PairSet.cutoff` (``crowded``; None:
    absent or not two numbers)."""
    if a is None or np.asarray(a).shape != (2,):
        return None
    return int(a[0]), int(a[1])


def _noting_cutoff(
    report: Callable[[str, int, int], None] | None,
) -> tuple[Callable[[str, int, int], None], list[int], list[int]]:
    """``report`` (None: nothing) that also keeps, in the lists it returns, (the common cut-off used,
    the one before the pair budget) when a view's search lowered it (its ``cutoff`` report), and (the
    most files a view found mostly common, that view's cut-off) when they were more than it (its
    ``crowded`` report: ``core.mostly_common``)."""
    lowered: list[int] = []
    crowded: list[int] = []

    def noting(phase: str, done: int, total: int) -> None:
        what = phase.rpartition(":")[2]
        if what == "cutoff":
            if not lowered or done < lowered[0]:
                lowered[:] = [done, total]
        elif what == "crowded":
            if not crowded or done > crowded[0]:
                crowded[:] = [done, total]
        elif report is not None:
            report(phase, done, total)

    return noting, lowered, crowded


def _spill_dir(index: Any) -> str | None:
    """Where the pair search's partitions wait when they do not fit its budget: beside the index (its
    disk, never a memory file system; ``slices.Spill`` falls back to the system's temporary folder)."""
    path = getattr(index, "path", None)
    return os.fspath(Path(path).parent) if path is not None else None


def _places_loader(index: Any, files: Any, ids: np.ndarray, gen: int | None) -> PlacesLoader:
    """Reads the stored sets with their places of some CSR rows (``ids``: the CSR's file ids) for
    their pairs' passages, in a read snapshot of its own: when the files changed since the CSR was
    read (another generation), none are given and those pairs carry no passage evidence."""
    file_ids = np.asarray(files.ids, np.int64)
    is_text = np.asarray(files.is_text, dtype=bool)

    def load(rows: np.ndarray) -> tuple[StoredSets, np.ndarray]:
        want = np.asarray(ids, np.int64)[rows]
        with _snapshot(index):
            if gen is not None and index.generation() != gen:
                return StoredSets.of([]), np.full(rows.size, -1, np.int64)
            got, offsets, values, meta = index.stored_sets(want)
        pos = np.minimum(np.searchsorted(file_ids, got), max(file_ids.size - 1, 0))
        sets = StoredSets(offsets, values, meta.d, meta.unit, meta.char, meta.chars, is_text[pos] if got.size else
                          np.zeros(0, bool))
        row = np.minimum(np.searchsorted(got, want), max(got.size - 1, 0))
        row = np.where((got.size > 0) & (got[row] == want), row, -1) if got.size else np.full(want.size, -1)
        return sets, row.astype(np.int64)

    return load


def _store(index: Any, key: str, gen: int, floor: float, files: Any, pa: PairArrays,
           cutoff: tuple[int, int] | None = None, crowded: tuple[int, int] | None = None) -> bool:
    """Write a pair set to the results cache, best-effort: False when it was not stored."""
    try:
        return bool(index.store_results(key, gen, floor, _pack_pairs(files, pa, cutoff, crowded)))
    except (ValueError, TypeError, MemoryError):
        return False


def _same_fingerprints(index: Any, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether file ``a[k]`` stores the same fingerprints as file ``b[k]`` for every k (both
    indexed).  A few files: those whose content class changed representative."""
    ids, offsets, values = index.fingerprints(np.union1d(a, b), kind=SCORE_KIND)
    row = {int(f): k for k, f in enumerate(np.asarray(ids).tolist())}
    for x, y in zip(a.tolist(), b.tolist()):
        if x not in row or y not in row:
            return False
        i, j = row[x], row[y]
        if not np.array_equal(values[offsets[i] : offsets[i + 1]], values[offsets[j] : offsets[j + 1]]):
            return False
    return True


def cache_results(
    index: Any,
    *,
    progress: ProgressSink | None = None,
    cancel: CancelToken | None = None,
) -> bool:
    """Make sure the index holds the results the window and ``simscan pairs|groups`` read first
    (pairs down to ``DEFAULT_MIN_SIMILARITY``, no reference folders): computed and stored unless
    they are already there for the current files.  For the end of a scan that changed files, so
    that the next opening of the window is a cache hit (cost: one pair search and a write, e.g.
    2-3 s for 200,000 files of 100,000 distinct contents).  True when the results are cached now;
    False when they could not be stored (read-only or busy index, older schema) or on cancel."""
    if hasattr(index, "has_results") and hasattr(index, "generation"):
        with _snapshot(index):
            if index.has_results(cache_key(DEFAULT_SIM_PARAMS), index.generation(), DEFAULT_MIN_SIMILARITY):
                return True  # (a damaged row is found and replaced by the next load)
    try:
        ps = find_pair_set(index, min_similarity=DEFAULT_MIN_SIMILARITY, progress=progress, cancel=cancel)
    except Cancelled:
        return False
    return ps.cached or ps.stored


def find_pairs(
    index: Any,
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    progress: ProgressSink | None = None,
    cancel: CancelToken | None = None,
    params: SimilarityParams = DEFAULT_SIM_PARAMS,
    expand_copies: bool = False,
    cache: bool = True,
    memory: int | None = None,
) -> list[Pair]:
    """Every pair of indexed files whose best score is >= ``min_similarity`` (percent).

    Identical files (same bytes, or same normalised text) appear as one pair per copy against
    the copy chosen as representative, and only that representative is paired with other
    files (see ``core``).  Paths of one file on disk (same device and inode: hard links, a
    folder indexed through a symbolic link too) count as one file: only the preferred path
    appears.  ``expand_copies``: every copy also inherits its representative's pairs with other
    files (``core.expand_copy_pairs``, at most ``copies.MAX_COPY_PAIRS`` added; ``group_pairs``
    wants the unexpanded list, which is smaller).  Sorted by best score, descending.  Returns
    [] when cancelled.  ``cache``: read and write the index's results cache (see
    :func:`find_pair_set`; the pairs are the same without it); ``memory``: the search's budget (bytes,
    ``slices``; the pairs do not depend on it).
    """
    try:
        ps = find_pair_set(index, min_similarity=min_similarity, progress=progress, cancel=cancel, params=params,
                           cache=cache, memory=memory)
    except Cancelled:
        return []
    pairs = to_pairs(ps.pairs, ps.files)
    return expand_copy_pairs(pairs)[0] if expand_copies else pairs


def find_groups(
    index: Any,
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    reference_roots: Sequence[str] = (),
    progress: ProgressSink | None = None,
    cancel: CancelToken | None = None,
    cache: bool = True,
    params: SimilarityParams = DEFAULT_SIM_PARAMS,
    keep: KeepRules = DEFAULT_KEEP,
    empty: list[str] | None = None,
    memory: int | None = None,
) -> list[Group]:
    """Groups of similar files (see ``grouping`` for the rules).  Returns [] when cancelled.
    ``cache``, ``params`` and ``memory`` as for :func:`find_pairs`; ``keep``: the keep rules (which file of
    each copy set is kept, the order references are chosen in).  ``empty``: a list that receives
    the paths of the indexed empty files, which groups leave out (``grouping.empty_rows``)."""
    try:
        ps = find_pair_set(index, min_similarity=min_similarity, progress=progress, cancel=cancel,
                           reference_roots=reference_roots, cache=cache, params=params, memory=memory)
    except Cancelled:
        return []
    return groups_of_pair_set(ps, min_similarity=min_similarity, reference_roots=reference_roots, keep=keep,
                              empty=empty)


def groups_of_pair_set(
    ps: PairSet, *, min_similarity: float, reference_roots: Sequence[str] = (), keep: KeepRules = DEFAULT_KEEP,
    empty: list[str] | None = None,
) -> list[Group]:
    """The groups of :func:`find_groups` (same ``keep`` and ``empty``) from a pair set found with
    the same ``reference_roots`` (here or elsewhere: ``simscan.cluster`` finds it on a cluster)."""
    return groups_of_rows(group_rows_of_pair_set(ps, min_similarity=min_similarity, reference_roots=reference_roots,
                                                 keep=keep, empty=empty))


def group_rows_of_pair_set(
    ps: PairSet, *, min_similarity: float, reference_roots: Sequence[str] = (), keep: KeepRules = DEFAULT_KEEP,
    empty: list[str] | None = None,
) -> MemberRows:
    """:func:`groups_of_pair_set` as :class:`~simscan.similarity.grouping.MemberRows`: the groups' members
    column by column, for writers that need no ``Group`` object (``simscan groups --format json|csv``)."""
    table = sorted_rounded(ps.pairs)
    ga = group_pair_arrays(table, ps.files, min_similarity=min_similarity, reference_roots=reference_roots,
                           keep=keep)
    if empty is not None:
        empty.extend(ps.files.paths[r] for r in empty_rows(ps.files).tolist())
    return member_rows(ga, ps.files, lambda ks: pair_scores(table, ks))


_FILE_COLS = "id, path, size, is_text, checksum, content_hash, simhash, units, device, inode"


def _file_rows(index: Any, ids: np.ndarray) -> dict[int, tuple]:
    """id -> (raw path, size, is_text, checksum, content_hash, simhash unsigned, units, device, inode)
    for a few ids (device and inode 0 when unknown)."""
    getter = getattr(index, "files_by_ids", None)
    out: dict[int, tuple] = {}
    if getter is not None:
        t = getter(ids)
        n = len(t.ids)
        dev, ino = getattr(t, "device", None), getattr(t, "inode", None)
        if dev is None or ino is None or len(dev) != n or len(ino) != n:
            dev = ino = np.zeros(n, np.int64)
        for k in range(n):
            out[int(t.ids[k])] = (t.raw_paths[k], int(t.size[k]), bool(t.is_text[k]), t.checksum[k],
                                  t.content_hash[k], int(t.simhash[k]), int(t.units[k]), int(dev[k]), int(ino[k]))
        return out
    conn = index.connection  # read-only use, as the index documents
    want = [int(x) for x in ids]
    for s in range(0, len(want), 900):
        chunk = want[s : s + 900]
        q = f"SELECT {_FILE_COLS} FROM files WHERE error IS NULL AND id IN ({','.join('?' * len(chunk))})"
        for fid, path, size, is_text, ck, ch, sh, units, dev, ino in conn.execute(q, chunk):
            out[int(fid)] = (bytes(path), int(size), bool(is_text), ck, ch, int(sh) & ((1 << 64) - 1), int(units),
                             int(dev or 0), int(ino or 0))
    return out


def query(
    index: Any,
    path: str | os.PathLike[str],
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    params: SimilarityParams = DEFAULT_SIM_PARAMS,
    progress: ProgressSink | None = None,
    notes: list[str] | None = None,
) -> list[Pair]:
    """Indexed files similar to the file at ``path`` (which need not be indexed).

    The file is fingerprinted now (a document by its text, as the scan does), then
    :func:`query_fingerprints`.  ``notes``: gets the line ``simscan problems`` would give the file
    (a document whose text cannot be read is compared by its bytes).  Raises OSError when the file
    cannot be read.
    """
    qpath = os.path.abspath(os.fspath(path))
    fp, note = fingerprint_path_noted(qpath)
    if note and notes is not None:
        notes.append(note)
    return query_fingerprints(index, fp, qpath, min_similarity=min_similarity, params=params, progress=progress)


#: A query file with fewer posted fingerprints (among ``coarse_values``) than this is looked up
#: by a full scan of the stored sets and by checksum: texts of less than ~300 normalised units,
#: whose values of span 128 the index posts (``index.postings``; with the 1-in-8 sample alone, as an
#: index of an older simscan read as it is: ~2,000 units), and binary files of less than ~8 KB.
MIN_POSTED_FOR_LOOKUP = 4


#: A text query with at most this many values looks every one of them up (a seek each: a 550-character
#: paragraph's ~200 took 4-24 ms on a 1,000,000-file index with its pages in memory, against ~6 ms for
#: the rule's values alone, and ~170 ms with none of them there; a text of ~2,000 units has a few
#: hundred): files shorter than the posting
#: rule's 177-unit guarantee that lie wholly in it are found too.  Longer queries look up the values
#: the rule posts.
LOOKUP_ALL = 4096


def coarse_values(fp: Fingerprints, qset: np.ndarray) -> np.ndarray:
    """The values of ``qset`` (``fp``'s set, its meta aligned) that every indexed file could share
    with it: those whose span reaches the coarsest winnowing window (a long file keeps only those,
    see ``evidence``; all of a binary file's).  Their posted count decides whether the inverted
    index can find long files that contain the query."""
    if fp.meta is None:
        return qset
    return qset[fp.meta.d >= DEFAULT_PARAMS.winnow[-1]]


#: Files whose stored fingerprints are read at once by the full scan of a short query.
_SCAN_CHUNK = 4096


#: The phase of :func:`_scan_holders`' reports (files: the stored sets read).
SETS_PHASE = "sets"


def _scan_holders(index: Any, qset: np.ndarray, progress: ProgressSink | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(values, file_ids) of every stored (value, file) with value in ``qset``, by reading all
    stored fingerprint sets in one streamed pass (exact, unlike the sampled inverted index; about
    2.5-4 s per million files, paid only by queries of short texts and ``compare``, so it reports
    :data:`SETS_PHASE` to ``progress``)."""
    if qset.size == 0:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    holders = getattr(index, "holders", None)
    if holders is not None:  # an index that finds every holder of a value at once (``simscan.cluster``)
        return holders(qset)
    batches = getattr(index, "iter_fingerprints", None)
    if batches is None:  # pragma: no cover - another index implementation
        return index.files_with_fingerprints(qset)
    qs = np.unique(np.asarray(qset, dtype=np.uint64))
    report = Throttle(progress) if progress is not None else None
    total = index.file_count() if report is not None and hasattr(index, "file_count") else None
    done = 0
    # Membership by the values' low 16 bits first (a 64 KB table: one gather a value), then exactly
    # for the few that pass: cheaper than a binary search or np.isin over every stored value.
    table = np.zeros(1 << 16, dtype=bool)
    table[(qs & np.uint64(0xFFFF)).astype(np.intp)] = True
    out_v: list[np.ndarray] = []
    out_f: list[np.ndarray] = []
    for ids, offsets, values in batches(SCORE_KIND, rows=_SCAN_CHUNK):
        if report is not None:
            report.report(Progress(SETS_PHASE, done, total))
            done += ids.size
        # Each value's low 16 bits: the first two bytes of its little-endian form (no copy here).
        maybe = np.flatnonzero(table[values.astype("<u8", copy=False).view("<u2")[::4]])
        hit = maybe[np.isin(values[maybe], qs)] if maybe.size else maybe
        if hit.size:
            out_v.append(values[hit])
            out_f.append(ids[np.searchsorted(offsets, hit, side="right") - 1])
    if report is not None:
        report.report(Progress(SETS_PHASE, done, done), force=True)  # (the total counted files without sets too)
    if not out_v:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    return np.concatenate(out_v), np.concatenate(out_f)


def _candidates(
    index: Any, fp: Fingerprints, qset: np.ndarray, progress: ProgressSink | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(ids of files holding values of ``qset``, ids of copies too short for a fingerprint) that a
    query of ``fp`` (``qset``: its values, its meta aligned) looks at: by the inverted index, or by a
    pass over every stored set when the file holds too few posted values."""
    # A text's spans post too (``index.postings``): the lookup takes the query's values of span 128.
    qspans = fp.meta.d if fp.is_text and fp.meta is not None else None
    coarse = coarse_values(fp, qset)
    if hasattr(index, "posted_mask"):
        posted = int(np.count_nonzero(index.posted_mask(coarse, None if qspans is None else coarse_values(fp, qspans))))
    else:  # pragma: no cover - another index implementation
        posted = coarse.size
    if posted >= MIN_POSTED_FOR_LOOKUP:
        if qspans is not None and qset.size <= LOOKUP_ALL:
            # Every value looked up: a short stored file posts its rightmost minimum with span 128 (its
            # whole text is the stretch), which inside a longer query has a smaller span.
            qspans = np.full(qset.size, 255, np.uint8)
        return index.files_with_fingerprints(qset, qspans)[1], np.empty(0, np.int64)
    # A short file has few or no posted values, so the inverted index would miss most files sharing
    # its few fingerprints: scan every stored set instead, and look up copies too short to have
    # fingerprints by their content hash.
    return _scan_holders(index, np.unique(qset), progress)[1], _copies(index, fp)


def _own_ids(index: Any, path: str) -> list[int]:
    """The ids of the indexed file at ``path`` (none when it is not indexed)."""
    try:
        return list(index.ids_for_paths([os.fsencode(path)]).values())
    except (AttributeError, sqlite3.Error):  # pragma: no cover - another index implementation
        return []


def _holders_once(
    index: Any, values: np.ndarray, memo: dict[str, Any], progress: ProgressSink | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_scan_holders` of the sorted distinct ``values``, from the pass kept in ``memo`` when it
    looked for all of them (the second view's call: the files scored are the same, and the first
    pass took every value of the query's, see ``query_fingerprints``), else by a new pass kept there."""
    have = memo.get("values")
    if have is not None and bool(np.isin(values, have).all()):
        keep = np.isin(memo["hv"], values)
        return memo["hv"][keep], memo["hf"][keep]
    hv, hf = _scan_holders(index, values, progress)
    memo.update(values=values, hv=hv, hf=hf)
    return hv, hf


def _copies(index: Any, fp: Fingerprints) -> np.ndarray:
    """Ids of files with no fingerprints and the same bytes or the same normalised text as ``fp``:
    copies of a file too short for a window, which no fingerprint lookup can find.  (A copy of a
    file with fingerprints holds all of them and is found by them.)  Same bytes give the same
    content hash, so one key serves both (``Index.bare_copies``: an index seek)."""
    try:
        return index.bare_copies(fp.content_hash, fp.is_text)
    except (AttributeError, sqlite3.Error):  # pragma: no cover - another index implementation
        return np.empty(0, np.int64)


def _file_count_bound(index: Any) -> int:
    """An upper bound of the number of indexed files, in O(log n): the largest file id."""
    try:
        row = index.connection.execute("SELECT max(id) FROM files").fetchone()
        return int(row[0] or 0)
    except (AttributeError, sqlite3.Error):  # pragma: no cover - another index implementation
        return int(index.stats().get("files", 0))


def _aliases(meta: dict[int, tuple], qpath: str) -> set[int]:
    """Candidate ids to leave out of a query's result: those that are the queried file itself
    under another path (same device and inode), and all but one path (the shortest, then the
    path order) of each indexed file reached by several paths.  Inode 0 means unknown."""
    ident = {fid: (m[7], m[8]) for fid, m in meta.items()}
    try:
        st = os.stat(qpath)
        qkey = (int(st.st_dev), int(st.st_ino))
    except OSError:
        qkey = (0, 0)
    out = {fid for fid, key in ident.items() if key[1] != 0 and key == qkey}
    seen: set[tuple[int, int]] = set()
    for fid in sorted((f for f in ident if f not in out), key=lambda f: (len(meta[f][0]), meta[f][0])):
        key = ident[fid]
        if key[1] == 0:
            continue
        if key in seen:
            out.add(fid)
        seen.add(key)
    return out


def query_fingerprints(
    index: Any,
    fp: Fingerprints,
    qpath: str,
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    params: SimilarityParams = DEFAULT_SIM_PARAMS,
    explain: dict[tuple[int, int], LeftOut] | None = None,
    exact_df: bool = False,
    only: Sequence[int] | None = None,
    progress: ProgressSink | None = None,
) -> list[Pair]:
    """Indexed files similar to a fingerprinted file (``qpath``: its absolute path, for display
    and to leave the file itself out).  ``explain``: receives, per (file id, view), what the
    index left out of the pair's sets (:class:`LeftOut`).

    The fingerprints are looked up in the inverted index (which holds a consistent sample of
    every file's fingerprints, see simscan.index.postings), and every file found is scored
    by exact set arithmetic on its full stored fingerprints.  Common fingerprints (posted
    values held by more distinct contents than the cut-off of ``find_pairs``, the file count
    bounded by the largest id) are dropped from both sets, as in ``find_pairs``.  Identical
    copies are found in the same lookup (they share every fingerprint) and reported as
    "exact"/"content"; files too short to have fingerprints cannot be found.  Pairs have a =
    the queried file (a_id -1 unless it is indexed).  The document frequencies are counted on the
    files found (a lower bound: a value can be common in the index and not among them);
    ``exact_df`` counts every holder instead, by a pass over every stored set (``compare``: the
    number ``pairs`` gives while both use the same common cut-off, see ARCHITECTURE; ~2.5-3.5 s a
    million files; one pass serves both views).  ``only``: score these indexed files alone, found
    or not by the postings, without looking anything up (``compare``: its other file).  ``progress``:
    receives the pass over every stored set, when there is one (:data:`SETS_PHASE`).
    """
    # As the pair search: each view down to the default threshold at most, merged, then filtered.
    floor = min(min_similarity, DEFAULT_MIN_SIMILARITY)
    with _snapshot(index):
        # Each view is scored apart and a file keeps its better pair (``views``).
        extra = None if only is None else np.asarray(only, np.int64)
        # One pass serves both views: the first looks for every value of the query's, both views' too.
        df_pass = {"prime": np.unique(np.concatenate((fp.rolling, fp.anchored)))} if exact_df else None
        found = _query(index, view_fingerprints(fp, TEXT), qpath, floor, params, TEXT, explain, df_pass, extra,
                       progress)
        if params.code_view and has_code_view(fp):
            # The higher unrounded best score wins, and the longer passage of the two stays, as in the
            # pair search (``views.merge_best``).
            best = {p.b_id: (p, raw) for p, raw in found}
            for p, raw in _query(index, view_fingerprints(fp, CODE), qpath, floor, params, CODE, explain,
                                 df_pass, extra, progress):
                have = best.get(p.b_id)
                if have is None:
                    best[p.b_id] = (p, raw)
                    continue
                (win, w_raw), (other, _) = ((p, raw), have) if raw > have[1] else (have, (p, raw))
                if win.longest_passage is not None and other.longest_passage is not None:
                    win = dataclasses.replace(win, longest_passage=max(win.longest_passage, other.longest_passage),
                                              shared_chars=max(win.shared_chars or 0, other.shared_chars or 0))
                best[p.b_id] = (win, w_raw)
            found = list(best.values())
        found = [(p, raw) for p, raw in found if (passes(raw, min_similarity) and raw > 0)
                 or (p.kind in ("near", "contained") and 0 < params.min_passage <= (p.longest_passage or 0))]
        if fp.is_text and fp.units == 0 and fp.size > 0:  # (no text that counts: its byte copies alone, as groups)
            found = [(p, raw) for p, raw in found if p.kind == "exact"]
        # As ``pairs`` lists them: best score first, then exact, content, near, contained, then path.
        return sorted((p for p, _ in found), key=lambda p: (-p.best, KIND_CODE.get(p.kind, 9), p.b_path))


@dataclass(frozen=True)
class LeftOut:
    """What the index leaves out of a pair's two sets (at the pair's window, one view): how many of
    each file's fingerprints count in it alone and how many once the values held by more than
    ``cutoff`` indexed contents, and the text they share, are left out."""

    alone_a: int
    alone_b: int
    counted_a: int
    counted_b: int
    cutoff: int


def pair_in_index(
    index: Any, fp: Fingerprints, path: str, other_id: int, params: SimilarityParams = DEFAULT_SIM_PARAMS,
    progress: ProgressSink | None = None,
) -> tuple[Pair | None, LeftOut | None]:
    """The pair of a fingerprinted file (``path``) with the indexed file ``other_id`` as the pair
    search and ``query`` score it (values common in the index and common text left out), and what
    the index left out of their sets (None when the index holds nothing of them it counts); the pair
    is None when they share nothing the index counts."""
    explain: dict[tuple[int, int], LeftOut] = {}
    got = [p for p in query_fingerprints(index, fp, path, min_similarity=0, params=params, explain=explain,
                                         exact_df=True, only=_own_ids(index, path) + [other_id], progress=progress)
           if p.b_id == other_id]
    if not got:
        return None, explain.get((other_id, TEXT))
    view = CODE if got[0].view == "code" else TEXT
    return got[0], explain.get((other_id, view))


def _contents(meta: dict[int, tuple], ids: np.ndarray) -> np.ndarray:
    """A number per file of ``ids`` that is the same for files of the same content (``_file_rows``'
    content hash; a file without a row: its id)."""
    return np.array([hash(meta[f][4]) if f in meta else f for f in ids.tolist()], np.int64)


def _doc_freq(values: np.ndarray, contents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, how many distinct contents hold each) of (value, content) incidences."""
    order = np.lexsort((contents, values))
    v, c = values[order], contents[order]
    first = np.ones(v.size, dtype=bool)  # the first (value, content) of each run
    first[1:] = (v[1:] != v[:-1]) | (c[1:] != c[:-1])
    return np.unique(v[first], return_counts=True)


def _query(
    index: Any, fp: Fingerprints, qpath: str, min_similarity: float, params: SimilarityParams, view: int = TEXT,
    explain: dict[tuple[int, int], LeftOut] | None = None, df_pass: dict[str, np.ndarray] | None = None,
    only: np.ndarray | None = None,
    progress: ProgressSink | None = None,
) -> list[tuple[Pair, float]]:
    """Files similar to ``fp`` (the values of one ``view``, its meta aligned), scored on that view of
    theirs by their evidence (``evidence``: exact counts at each pair's window, and passages): (pair,
    its unrounded best score).  ``df_pass``: count document frequencies over every stored set
    (``query_fingerprints``' ``exact_df``), keeping the pass in it for the other view's call.
    ``only``: the files to score (``query_fingerprints``), instead of those the lookup finds."""
    qset = np.concatenate((fp.rolling, fp.anchored))
    if only is not None:  # the files the caller names (compare), whatever the postings would find
        fids, copies = np.asarray(only, np.int64), np.empty(0, np.int64)
    else:
        fids, copies = _candidates(index, fp, qset, progress)
    if fids.size == 0 and copies.size == 0:
        return []
    qraw = os.fsencode(qpath)
    cand = np.union1d(np.unique(fids), copies)
    meta = _file_rows(index, cand)
    self_ids = {fid for fid, m in meta.items() if m[0] == qraw}
    a_id = min(self_ids) if self_ids else -1
    # Other paths of the queried file itself (hard links, a symlinked folder) are not similar
    # files, and several paths of one indexed file are reported once (the shortest path).
    self_ids |= _aliases(meta, qpath)
    # Every file found (the queried file's own rows too: they count in the document frequency, as
    # in find_pairs) with its whole stored set.
    ids, offsets, values, places = index.stored_sets(cand)
    cutoff = params.common_cutoff(_file_count_bound(index))
    # Document frequency over distinct contents (copies of one file count once), of the query's
    # values, from these sets: every file holding a posted value is found, so a posted value's
    # count is exact; any other value's is a lower bound, and a passage that many files share
    # (boilerplate) has posted values too, which bring in the files that hold the rest of it.
    # (Counting only the looked-up values left 7 of every 8 values of a boilerplate passage in.)
    # Every value of the sets found is counted, not only the query's: a found file's own values
    # (its licence header, say) must be common for it as they are in the pair search, whichever of
    # the two files is queried (counting the query's alone made compare A B and compare B A differ).
    # ``exact_df``: every holder of those values instead, found by a pass over every stored set (as
    # the pair search counts them: compare then gives the pair the number pairs gives it).
    if df_pass is not None:
        hv, hf = _holders_once(index, np.union1d(values, df_pass["prime"]), df_pass, progress)
        holders, at = np.unique(hf, return_inverse=True)  # contents looked up once a file, not once a value
        uv, dfc = _doc_freq(hv, _contents(_file_rows(index, holders), holders)[at])
        del hv, hf, at
    else:
        uv, dfc = _doc_freq(values, _contents(meta, ids)[np.repeat(np.arange(ids.size), np.diff(offsets))])
    common = uv[dfc > cutoff]
    frequent = uv[(dfc > frequent_cutoff(cutoff)) & (dfc <= cutoff)]
    if params.ignore_values:  # texts to ignore count nowhere, as common values
        common = np.union1d(common, params.ignored())
    cand = np.array(sorted(set(cand.tolist()) - self_ids), np.int64)
    if cand.size == 0:
        return []
    q_level = fingerprint_level(fp)
    csr_row = {fid: k for k, fid in enumerate(ids.tolist())}
    # Row 0: the query; row k + 1: stored set k; one empty row last (a copy too short to have any).
    q = StoredSets.of([fp])
    row_text = np.array([bool(meta[f][2]) if f in meta else False for f in ids.tolist()], dtype=bool)
    sets = StoredSets(
        np.concatenate((q.offsets, q.offsets[-1] + offsets[1:], [q.offsets[-1] + offsets[-1]])),
        np.concatenate((q.values, values)), np.concatenate((q.d, places.d)), np.concatenate((q.unit, places.unit)),
        np.concatenate((q.char, places.char)), np.concatenate((q.chars, places.chars)),
        np.concatenate((q.is_text, row_text, [False])),
    )
    empty = ids.size + 1
    found = [fid for fid in cand.tolist() if fid in meta]
    rows_b = np.array([csr_row[f] + 1 if f in csr_row else empty for f in found], np.int64)
    levels = [max(q_level, DEFAULT_PARAMS.text_level(meta[f][6]) if meta[f][2] else 0) for f in found]
    windows = window_of_level(np.array(levels, np.int64))
    ev = pair_evidence(sets, np.zeros(len(found), np.int64), rows_b, windows, view, common, frequent, common_text=True)
    if explain is not None:
        alone = pair_evidence(sets, np.zeros(len(found), np.int64), rows_b, windows, view)
        for k, fid in enumerate(found):
            explain[(fid, view)] = LeftOut(int(alone.na[k]), int(alone.nb[k]), int(ev.na[k]), int(ev.nb[k]), cutoff)
    out: list[tuple[Pair, float]] = []
    for k, fid in enumerate(found):
        raw, size, is_text, ck, ch, sh = meta[fid][:6]
        inter, na, nb = int(ev.inter[k]), int(ev.na[k]), int(ev.nb[k])
        exact = size == fp.size and ck == fp.checksum
        copy = exact or (is_text == fp.is_text and ch == fp.content_hash)
        # As the pair search: too few shared fingerprints make no pair (structure alone: too little
        # shared code, ``views.CODE_MIN_SHARED``).
        if not copy and inter < (max(CODE_MIN_SHARED, params.min_shared) if view == CODE else params.min_shared):
            continue
        union = na + nb - inter
        r = 100.0 * inter / union if union else 0.0
        ca = 100.0 * inter / na if na else 0.0
        cb = 100.0 * inter / nb if nb else 0.0
        longest, shared = int(ev.longest[k]), int(ev.shared[k])
        if copy:
            r = ca = cb = 100.0
            kind = "exact" if exact else "content"
            lp, sc = None, None
        else:
            kind = classify(r, ca, cb, params.contained_ratio, params.contained_min)
            lp, sc = longest, shared
        best = max(r, ca, cb)
        by_passage = kind in ("near", "contained") and params.min_passage > 0 and longest >= params.min_passage
        if not ((passes(best, min_similarity) and best > 0) or by_passage):
            continue
        dist = int(popcount64(np.array([sh ^ fp.simhash], np.uint64))[0])
        r, ca, cb = (round(x, SCORE_DECIMALS) for x in (r, ca, cb))
        out.append((Pair(a_id, fid, qpath, os.fsdecode(raw), r, ca, cb, dist, exact,
                         kind, "code" if view == CODE and not (exact or kind == "content") else "text", lp, sc), best))
    return out
