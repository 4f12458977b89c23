"""The pair search in slices: its memory is set by a budget, not by the size of the index.

The pair search (``core``) needs, for every value of the value space, the files that hold it: the
runs of a sort of every fingerprint.  An index of a million files holds ~200 M of them (1.6 GB of
values; the sort's temporaries several times that), so they are never held at once:

1. **One read pass** (:class:`Spill`) takes the current files' stored sets from the index a few
   thousand files at a time (the snapshot the file table was read in) and deals each value, with its
   file's row and its span and view in one byte, into a *partition* of the value space (hash bits
   40..: every run of one value lies in one partition).  The partitions are held in memory up to
   half the budget; past it, what is held is appended to temporary files beside the index (or in the
   system's temporary folder when that folder cannot be written) and memory is freed (when they
   cannot be written at all, a full disk, they stay in memory past the budget).
2. **Each partition then**, alone (:class:`SlicedSets`, the ``core.FingerprintSets`` the pair search
   reads), is read back, restricted to the files taking part, the view searched and the values not
   ignored, and counted natively (``core.count_runs``): document frequencies, set sizes per level,
   the shared counts of the pairs.  Partitions are sized so that one's work fits the other half of the
   budget (~64 bytes a value at the peak of its sort; the next partition is read meanwhile, ~30 bytes
   a value).  Once the read pass has spilled, what it still holds in memory is written too, so the
   counting has that half of the budget.
3. The pairs' **evidence** (stored sets with places) is read in chunks of files that fit the budget
   too (``core.compute_pair_arrays``' ``memory``).

What does not shrink with the budget: the file table (~0.3 KB a file), two tables of set sizes
per level (2 x 32 bytes a file taking part), and the candidate pairs, which the pair budget bounds
(``SimilarityParams.pair_budget``: at most ~33 M distinct pairs; their counts from each partition are merged as
they come, ``core.FOLD_KEYS``).  The results are
those of the search on the whole CSR in memory, bit for bit (``tests/test_slices.py``): the budget
changes where the values wait, never what is counted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Self

import numpy as np

from simscan.fingerprint import views as _fv
from simscan.progress import CancelToken
from simscan.similarity.core import SimilarityParams, _check, count_runs
from simscan.similarity.evidence import LEVEL_OF_SPAN, pair_evidence, sets_of_rows, window_of_level
from simscan.similarity.types import FileTableLike

#: Default memory budget of the pair search (bytes): the partitions waiting in memory, one
#: partition's work, one chunk of the evidence's stored sets.  ``--memory`` and ``SIMSCAN_MEMORY``
#: (MB) change it; the results never depend on it.  Measured by ``benchmarks/similarity_scale.py`` on
#: 1,000,000 synthetic files (50 M fingerprints; the file table alone peaks at ~620 MB): peak RSS
#: 877-888 MB at 128 MB, 1,049 MB at 256, 1,297 MB at 512, 1,729 MB unsliced, in about the same
#: time (19-23 s);
#: below ~128 MB what the budget does not bound (~260 MB there: candidate pairs, per-file tables)
#: dominates and the search only slows down.  (Since the file table holds no object per row: 1,000,000
#: files of the scan benchmark's mix, 196 M fingerprints, peak at 812 MB at 128 MB.)
DEFAULT_MEMORY = 128 << 20

#: Smallest budget taken (tests force many partitions and chunks with it).
MIN_MEMORY = 64 << 10

#: Bytes a value costs while its partition is counted: the partition read back (13), what takes part
#: (13 + 1 level), the native sort's entries (16) and runs (16), and margins.
WORK_BYTES = 64

#: Bytes a value costs while it waits in a partition (value 8, file row 4, span and view 1).
SPILL_BYTES = 13

#: Most partitions (their ids are 16-bit; a partition file is read in one piece per flush).
MAX_PARTITIONS = 1 << 12

#: The spilled byte of a value: its span (1..127: spans are capped at 128, which counts like 127) and
#: its view in the top bit.
_CODE_BIT = np.uint8(0x80)

#: Files of the index read at once by the read pass.
_READ_ROWS = 4096


def memory_from_env() -> int | None:
    """``SIMSCAN_MEMORY`` (MB) in bytes; None when it is unset or blank.  Raises ValueError when it is
    not a positive number (the command line says so, then uses the default)."""
    env = os.environ.get("SIMSCAN_MEMORY", "").strip()
    if not env:
        return None
    mb = float(env)  # (ValueError for "64M", "abc")
    if not 0 < mb < float("inf"):
        raise ValueError(f"not a positive number of MB: {env}")
    return int(mb * (1 << 20))


def memory_budget(memory: int | None = None) -> int:
    """The budget in bytes: ``memory``, else ``SIMSCAN_MEMORY`` (MB) when set and valid, else
    :data:`DEFAULT_MEMORY`; at least :data:`MIN_MEMORY`."""
    if memory is None:
        try:
            memory = memory_from_env()
        except ValueError:
            memory = None
    return max(MIN_MEMORY, int(DEFAULT_MEMORY if memory is None else memory))


def partitions_for(values: int, memory: int) -> int:
    """How many partitions (a power of two, at most :data:`MAX_PARTITIONS`) so that one partition
    of ``values`` spread evenly costs at most half of ``memory`` to count."""
    per = max(1, (memory // 2) // WORK_BYTES)
    parts = 1
    while parts < MAX_PARTITIONS and values > parts * per:
        parts *= 2
    return parts


def _partition_ids(values: np.ndarray, parts: int) -> np.ndarray:
    """Partition (uint16) of each value: hash bits 40.. (uniform: the top bits carry kind and view),
    as ``core._partition_ids``."""
    return ((values >> np.uint64(40)) & np.uint64(parts - 1)).astype(np.uint16)


class Spill:
    """The stored sets of every current file of an index, dealt into partitions of the value space
    (module docstring, step 1): per partition, each value with its file's row in ``files`` and one
    byte (its span, its view in the top bit).  Read in the caller's read snapshot, with ``files`` read
    in it.  ``has_set``: the rows that have a stored set (maybe empty); ``has_code``: some text file
    has code-view values.  Close it (or use it as a context manager) to remove its files."""

    def __init__(
        self, index: Any, files: FileTableLike, memory: int, *, cancel: CancelToken | None = None,
        report: Callable[[str, int, int], None] | None = None, spill_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.files = files
        self.memory = memory
        n = len(files.paths)
        self._ids = np.asarray(files.ids, np.int64)
        total = int(np.asarray(files.fp_count, np.int64).sum()) if n else 0
        self.parts = partitions_for(total, memory)
        self.has_set = np.zeros(n, dtype=bool)
        self.has_code = False
        self.values = 0
        self._held: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in range(self.parts)]
        self._held_bytes = 0
        self._flushes: list[tuple[Path, np.ndarray]] = []  # (file stem, offsets of each partition in it)
        #: Why the partitions could not be written (a full disk, ...): they then stay in memory, past the
        #: budget (the results are the same); None while they can.
        self.unwritable: OSError | None = None
        self._dir: str | None = None
        self._spill_dir = spill_dir
        try:
            self._read(index, cancel, report, total)
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------- the read pass
    def _read(self, index: Any, cancel: CancelToken | None, report: Callable[[str, int, int], None] | None,
              total: int) -> None:
        is_text = np.asarray(self.files.is_text, dtype=bool)
        n = self._ids.size
        for ids, offsets, values, spans in index.iter_fingerprints("all", rows=_READ_ROWS, spans=True):
            _check(cancel)
            rows = np.minimum(np.searchsorted(self._ids, ids), max(n - 1, 0))
            known = (self._ids[rows] == ids) if n else np.zeros(ids.size, bool)
            counts = np.diff(offsets)
            if not known.all():  # (a row the file table does not hold: not a current file)
                keep = np.repeat(known, counts)
                values, spans = values[keep], spans[keep]
                rows, counts = rows[known], counts[known]
            self.has_set[rows] = True
            own = np.repeat(rows.astype(np.int32), counts)
            text = np.repeat(is_text[rows], counts)
            code = _fv.value_views(values, text) == _fv.CODE
            packed = np.minimum(spans, 127).astype(np.uint8)
            if code.any():
                self.has_code = True
                packed[code] |= _CODE_BIT
            self._deal(values.astype(np.uint64, copy=False), own, packed)
            self.values += int(values.size)
            if report:
                report("load", min(self.values, total), total)
            if self._held_bytes > self.memory // 2 and self.unwritable is None:
                self._flush()
        if self._flushes and self._held_bytes and self.unwritable is None:
            # Past the budget already: what waits in memory goes to the files too, so that the counting,
            # the merge of its pairs and the evidence, which come next, have that memory (up to half the
            # budget) for themselves.
            self._flush()

    def _deal(self, values: np.ndarray, own: np.ndarray, packed: np.ndarray) -> None:
        """Hold one batch's values in their partitions."""
        if values.size == 0:
            return
        self._held_bytes += values.size * SPILL_BYTES
        if self.parts == 1:
            self._held[0].append((values, own, packed))
            return
        pid = _partition_ids(values, self.parts)
        order = np.argsort(pid, kind="stable")
        bounds = np.zeros(self.parts + 1, np.int64)
        np.cumsum(np.bincount(pid, minlength=self.parts), out=bounds[1:])
        v, o, b = values[order], own[order], packed[order]
        for p in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
            lo, hi = bounds[p], bounds[p + 1]
            self._held[p].append((v[lo:hi], o[lo:hi], b[lo:hi]))

    def _folder(self) -> str:
        """The folder of this spill's files, made at the first flush: beside the index when it can be
        written there (the index's disk, never a memory file system), else the system's temporary one.
        Its name carries this process's id; the folders there of processes that ended without removing
        theirs (killed) are removed first (:func:`remove_stale`)."""
        if self._dir is None:
            for where in (self._spill_dir, None):
                try:
                    folder = where if where is not None else tempfile.gettempdir()
                    remove_stale(folder)
                    self._dir = tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-", dir=folder)
                    break
                except OSError:
                    if where is None:
                        raise
        return self._dir

    def _flush(self) -> None:
        """Append what every partition holds to files (one per array and flush, partitions one after
        the other) and forget it.  When they cannot be written (a full disk, no folder that can be
        written), what was written of this flush is removed and every value stays in memory from then
        on (:attr:`unwritable`): slower to fail than to exceed the budget."""
        stem: Path | None = None
        try:
            stem = Path(self._folder()) / f"flush{len(self._flushes)}"
            offsets = np.zeros(self.parts + 1, np.int64)
            with open(f"{stem}.v", "wb") as fv, open(f"{stem}.r", "wb") as fr, open(f"{stem}.s", "wb") as fs:
                for p in range(self.parts):
                    held = self._held[p]
                    for v, o, b in held:  # (Python's writes: ndarray.tofile may lose a write's error)
                        fv.write(np.ascontiguousarray(v).data)
                        fr.write(np.ascontiguousarray(o).data)
                        fs.write(np.ascontiguousarray(b).data)
                    offsets[p + 1] = offsets[p] + sum(v.size for v, _, _ in held)
        except OSError as e:
            self.unwritable = e
            for ext in (".v", ".r", ".s"):
                if stem is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(f"{stem}{ext}")
            return
        self._held = [[] for _ in range(self.parts)]
        self._flushes.append((stem, offsets))
        self._held_bytes = 0

    # ----------------------------------------------------------------- reading partitions back
    def partition(self, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(values uint64, file rows int32, span-and-view bytes uint8) of partition ``p``."""
        cols: list[list[np.ndarray]] = [[], [], []]
        for stem, offsets in self._flushes:
            lo, count = int(offsets[p]), int(offsets[p + 1] - offsets[p])
            if count:
                for col, (ext, dt) in zip(cols, ((".v", np.uint64), (".r", np.int32), (".s", np.uint8))):
                    got = np.fromfile(f"{stem}{ext}", dtype=dt, count=count, offset=lo * np.dtype(dt).itemsize)
                    if got.size != count:  # (a file changed under the search)
                        raise OSError(f"the pair search's temporary file {stem}{ext} was cut short")
                    col.append(got)
        for v, o, b in self._held[p]:
            cols[0].append(v)
            cols[1].append(o)
            cols[2].append(b)
        if not cols[0]:
            return np.empty(0, np.uint64), np.empty(0, np.int32), np.empty(0, np.uint8)
        return tuple(c[0] if len(c) == 1 else np.concatenate(c) for c in cols)  # type: ignore[return-value]

    @property
    def spilled(self) -> bool:
        """Whether some values went to files (the budget was smaller than the index's values)."""
        return bool(self._flushes)

    def close(self) -> None:
        """Remove the files and forget the partitions."""
        self._held = [[] for _ in range(self.parts)]
        self._flushes = []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SlicedSets:
    """One view's sets of a :class:`Spill`, as the pair search reads them (``core.FingerprintSets``):
    handles are rows of the spill's file table; ``ignored`` (sorted) values count nowhere, as if they
    had been dropped from every set.  ``index``: where :meth:`intersect` reads a few files' whole sets
    (the same read snapshot as the spill)."""

    spans = True  # every value carries its span (ALGORITHM_VERSION 12's rule applies)

    def __init__(self, spill: Spill, index: Any, view: int, ignored: np.ndarray) -> None:
        self.spill = spill
        self.index = index
        self.view = view
        self.ignored = np.asarray(ignored, np.uint64)

    def rows(self, files: FileTableLike) -> np.ndarray:
        ids = self.spill._ids
        want = np.asarray(files.ids, np.int64)
        if ids.size == 0:
            return np.full(want.size, -1, np.int64)
        pos = np.minimum(np.searchsorted(ids, want), ids.size - 1)
        hit = (ids[pos] == want) & self.spill.has_set[pos]
        return np.where(hit, pos, -1).astype(np.int64)

    def _taking_part(self, v: np.ndarray, packed: np.ndarray) -> np.ndarray:
        """Mask of the partition's values of this view and not ignored."""
        keep = (packed >= _CODE_BIT) if self.view == _fv.CODE else (packed < _CODE_BIT)
        if self.ignored.size:
            at = np.minimum(np.searchsorted(self.ignored, v), self.ignored.size - 1)
            keep &= self.ignored[at] != v
        return keep

    def shared_counts(
        self, csr_row: np.ndarray, row_text: np.ndarray, params: SimilarityParams,
        cancel: CancelToken | None, report: Callable[[str, int, int], None] | None,
        row_level: np.ndarray | None = None, rare: list[np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        nr = csr_row.size
        pos_of_row = np.full(len(self.spill.files.paths), -1, np.int32)
        pos_of_row[csr_row] = np.arange(nr, dtype=np.int32)

        def partition(p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            v, r, b = self.spill.partition(p)
            pos = pos_of_row[r]
            keep = self._taking_part(v, b)
            keep &= pos >= 0
            del r
            span = b[keep] & np.uint8(0x7F)
            return v[keep], pos[keep].astype(np.uint32), LEVEL_OF_SPAN[span].view(np.uint8)

        return count_runs(partition, self.spill.parts, nr, params, cancel, report, row_level, rare)

    def intersect(
        self, rows_a: np.ndarray, rows_b: np.ndarray, text_a: np.ndarray, text_b: np.ndarray, level: np.ndarray,
        view: int, ignored: np.ndarray,
    ) -> np.ndarray:
        handles, inv = np.unique(np.concatenate((rows_a, rows_b)), return_inverse=True)
        text = np.zeros(handles.size, bool)
        text[inv] = np.concatenate((text_a, text_b))
        offsets, values, spans = self._sets(handles)
        sets = sets_of_rows(offsets, values, spans, np.arange(handles.size), text)
        ev = pair_evidence(sets, inv[: rows_a.size], inv[rows_a.size :], window_of_level(level), view, ignored)
        return ev.inter.astype(np.int64)

    def _sets(self, handles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, values, spans) of the whole sets (this view, less the ignored values) of a few
        handles, in their order, read from the index."""
        want = self.spill._ids[handles]
        got: list[np.ndarray] = []
        ids, offsets, values = self.index.fingerprints(want, kind="all", spans=got)
        spans = got[0]
        is_text = np.asarray(self.spill.files.is_text, dtype=bool)
        row = np.searchsorted(ids, want)
        counts = np.diff(offsets)
        own = np.repeat(np.arange(ids.size), counts)
        text = is_text[np.searchsorted(self.spill._ids, ids)][own] if ids.size else np.zeros(0, bool)
        views = _fv.value_views(values, text)
        keep = views == self.view
        if self.ignored.size:
            at = np.minimum(np.searchsorted(self.ignored, values), self.ignored.size - 1)
            keep &= self.ignored[at] != values
        kept_counts = np.bincount(own[keep], minlength=ids.size)
        kept_offsets = np.concatenate(([0], np.cumsum(kept_counts))).astype(np.int64)
        v, s = values[keep], spans[keep]
        # Back in the handles' order (ids ascend, handles ascend: the same order).
        assert np.array_equal(ids[row], want), "a file's stored set was not read"
        return kept_offsets, v, s


#: Start of a spill folder's name; then the id of the process that made it, "-", and a random part.
SPILL_PREFIX = ".simscan-spill-"


def remove_stale(folder: str | os.PathLike[str]) -> None:
    """Removes the spill folders in ``folder`` whose process no longer runs (a search killed before it
    could remove its files); those of running processes (maybe another search of the same index) stay."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        if not e.name.startswith(SPILL_PREFIX) or not e.is_dir(follow_symlinks=False):
            continue
        pid = e.name[len(SPILL_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(e.path, ignore_errors=True)


def _running(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


@contextlib.contextmanager
def spilled(index: Any, files: FileTableLike, memory: int, **kwargs: Any) -> Iterator[Spill]:
    """A :class:`Spill` of ``index`` for ``files``, removed on leaving."""
    spill = Spill(index, files, memory, **kwargs)
    try:
        yield spill
    finally:
        spill.close()


def pair_chunks(ra: np.ndarray, rb: np.ndarray, size: np.ndarray, limit: int) -> list[np.ndarray]:
    """Pairs (rows ``ra``, ``rb`` of files with ``size`` values each) in chunks whose files hold at
    most ``limit`` values together (a pair whose two files alone hold more is a chunk of its own):
    each chunk the indexes of its pairs, sorted by ``ra`` then ``rb`` so that the pairs of one file
    go together, each as long as the limit allows.  The files of a chunk are read at once for the
    pairs' evidence, so the chunks bound its memory; a file in several chunks is read once for each.

    The pairs' files in order (a, b, a, b, ...) are *slots*; a slot counts its file's size in a chunk
    starting at slot ``s`` when the file's previous slot lies before ``s`` (its first in the chunk), so
    one cumulative sum per chunk finds where it ends."""
    m = ra.size
    order = np.lexsort((rb, ra))
    if m == 0:
        return []
    slot = np.empty(2 * m, np.int64)
    slot[0::2], slot[1::2] = ra[order], rb[order]
    by_file = np.argsort(slot, kind="stable")
    prev = np.full(2 * m, -1, np.int64)  # each slot's previous slot of the same file
    same = slot[by_file[1:]] == slot[by_file[:-1]]
    prev[by_file[1:][same]] = by_file[:-1][same]
    del by_file, same
    weight = np.asarray(size, np.int64)[slot]
    out: list[np.ndarray] = []
    s, w = 0, 1024
    while s < m:
        while True:  # a window of pairs from ``s``, doubled until the chunk ends inside it
            e = min(m, s + w)
            first = prev[2 * s : 2 * e] < 2 * s
            got = np.cumsum((weight[2 * s : 2 * e] * first).reshape(-1, 2).sum(axis=1))
            take = int(np.searchsorted(got, limit, side="right"))
            if take < e - s or e == m:
                break
            w *= 2
        take = max(1, take)  # (a pair is always taken)
        out.append(order[s : s + take])
        s += take
        w = max(1024, 2 * take)
    return out
