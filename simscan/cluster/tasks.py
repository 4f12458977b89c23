"""What runs on the workers: plain functions of paths and arrays, whose inputs and outputs are
small (the bulk stays in the store).  Each is safe to run again after a worker died: it writes
only under names derived from its arguments, atomically (``store.write_table``), so a retry
replaces what a first attempt may have written, and a reader never sees half of it.

Scan: :func:`read_batch` (the map side: fingerprints of a batch of files, staged with one row
group per partition) and :func:`write_partition` (the reduce side: one partition of a new
segment; :func:`write_rows` for file rows a segment takes only some of, and compactions).  Pair
search: :func:`partition_counts` (one partition's share of the shared-fingerprint counts).
Query: :func:`lookup`.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simscan.cluster.store import (
    PART_ROW_GROUP,
    file_schema,
    fp_schema,
    partition_of,
    write_atomic,
    write_file_rows,
    write_table,
)
from simscan.fingerprint import views as fviews
from simscan.model import FingerprintMeta
from simscan.similarity.arrays import argsort_hashes

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:  # (workers always have the extra; the client checks before it submits)
    pa = pq = None  # type: ignore[assignment]

#: Key of a staged fingerprint file's metadata: partition -> row group.
_PARTS_KEY = b"simscan.parts"


# ------------------------------------------------------------------ scan: the map side
@dataclass(frozen=True, slots=True)
class BatchResult:
    """What :func:`read_batch` reports: files read (``ok``) and failed, bytes read, and problem
    lines ``(path, reason)``."""

    ok: int
    failed: int
    bytes_read: int
    problems: list[tuple[bytes, str]]


def batch_paths(staging: Path, k: int) -> tuple[Path, Path]:
    """(file rows, fingerprints) of staged batch ``k``."""
    return staging / f"batch-{k:06d}.parquet", staging / f"batch-{k:06d}.fp.parquet"


def read_batch(
    staging: str, k: int, follow: bool, items: list[tuple[int, bytes, int, int, int, int]], partitions: int
) -> BatchResult:
    """Read and fingerprint a batch of files with the local scan's code (``simscan.scanner.read_task``:
    the native core, which opens files without touching their access time), and stage the rows:
    ``items`` are ``(file id, path, size, mtime_ns, device, inode)`` as the walk saw them.  A file
    that fails gets a row with its error (read again by the next scan), as in the local index; one
    that vanished gets none.  The fingerprint file is written first and the rows last, so a batch
    whose rows exist is whole."""
    from simscan.extract import PLAIN_VERSION
    from simscan.scanner import DOCUMENT, read_task

    task = (follow, [(slot, path, size) for slot, (_, path, size, _, _, _) in enumerate(items)])
    try:
        outcomes = read_task(task)
    except Exception as e:  # noqa: BLE001 - one bad batch costs its files, not the scan
        outcomes = [(slot, None, f"could not be fingerprinted: {type(e).__name__}: {e}") for slot, _, _ in task[1]]
    docs = [(slot, items[slot][1], payload[1], items[slot][2]) for slot, key, payload in outcomes
            if key is not None and payload[0] == DOCUMENT]
    if docs:
        outcomes = [o for o in outcomes if o[1] is None or o[2][0] != DOCUMENT] + _read_documents(docs, follow)
    cols: dict[str, list[Any]] = {name: [] for name in file_schema().names}
    problems: list[tuple[bytes, str]] = []
    blobs: list[bytes] = []
    spans: list[bytes] = []
    ok_text: list[bool] = []
    failed = nbytes = 0
    for slot, key, payload in sorted(outcomes, key=lambda o: o[0]):
        fid, path, size, mtime, dev, ino = items[slot]
        if key is None:
            failed += 1
            if payload.startswith("vanished"):
                # (this machine's walk saw it: gone since, or not where the worker looks)
                why = (f"not found by the worker on {socket.gethostname()}: gone since the walk, or the workers "
                       "do not see this path (they must see the files under the same paths as the machine that scans)")
                problems.append((path, why))
                continue
            problems.append((path, payload))
            row = {"id": fid, "path": path, "device": dev, "inode": ino, "size": size, "mtime_ns": mtime,
                   "error": payload}
        else:
            is_text, enc, checksum, partial, chash, simh, units, fps, n_roll, nread, note, meta, *doc = payload
            fmt, extractor, version = doc[0] if doc else (None, None, PLAIN_VERSION)
            meta = bytes(meta) if fps else b""  # (as the local index keeps it)
            if len(meta) != FingerprintMeta.BYTES * (len(fps) // 8):
                raise ValueError(f"{os.fsdecode(path)}: a meta of {len(meta)} bytes for {len(fps) // 8} values")
            if note:
                problems.append((path, note))
            # Size and mtime as read (the walk's may be older); device and inode as the walk saw them:
            # one machine's view for every file (another machine's st_dev of a share can differ).
            row = {
                "id": fid, "path": path, "device": dev, "inode": ino, "size": key[2], "mtime_ns": key[3],
                "is_text": bool(is_text), "encoding": enc, "checksum": checksum, "partial": partial,
                "content_hash": chash, "simhash": simh, "units": units, "fp_count": len(fps) // 8,
                "n_rolling": n_roll, "format": fmt, "extractor": extractor, "extractor_version": version,
                "fps": fps, "meta": meta,
            }
            nbytes += nread
            blobs.append(fps)
            spans.append(meta[: len(fps) // 8])
            ok_text.append(bool(is_text))
        for name, col in cols.items():
            col.append(row.get(name))
    counts = np.fromiter((len(b) // 8 for b in blobs), np.int64, len(blobs))
    values = np.frombuffer(b"".join(blobs), "<u8").astype(np.uint64)
    owner = np.repeat(np.arange(len(blobs)), counts)
    code = fviews.value_views(values, np.repeat(np.array(ok_text, bool), counts)) == fviews.CODE
    n_code = iter(np.bincount(owner[code], minlength=len(blobs)).tolist())
    cols["n_code"] = [None if e is not None else next(n_code) for e in cols["error"]]
    ok_ids = np.array([f for f, e in zip(cols["id"], cols["error"]) if e is None], np.int64)
    rows_path, fp_path = batch_paths(Path(staging), k)
    _write_staged_fingerprints(fp_path, values, ok_ids[owner], np.frombuffer(b"".join(spans), np.uint8), partitions)
    write_file_rows(rows_path, pa.Table.from_pydict(cols, schema=file_schema()))
    return BatchResult(len(blobs), failed, nbytes, problems)


def _read_documents(docs: list[tuple[int, bytes, str, int]], follow: bool) -> list[Any]:
    """The outcomes of the documents of a batch (``(slot, path, format, size)``), read as the local
    scan reads them: by the extraction pool, a process a document under limits of time and memory
    (``simscan.extract.pool``).  A worker that may not start processes (a daemonic Dask worker: see
    ``connect``) reads them in its own process, with the same answers but no limits."""
    from simscan.extract.document import read_or_reason
    from simscan.extract.pool import ExtractionPool
    from simscan.scanner import document_outcomes

    pool = ExtractionPool(1, follow)
    try:
        for slot, path, fmt, size in docs:
            pool.submit(slot, path, fmt, size)
        done = []
        while pool.pending:
            done += pool.collect(1.0)
    except AssertionError:  # "daemonic processes are not allowed to have children"
        done = []
        for slot, path, fmt, _ in docs:
            got = read_or_reason(path, fmt, follow)
            done.append((slot, None, got) if isinstance(got, str) else (slot, got, None))
    finally:
        pool.close()
    return document_outcomes(done)


def _write_staged_fingerprints(
    path: Path, values: np.ndarray, owners: np.ndarray, spans: np.ndarray, partitions: int
) -> None:
    """(value, file_id, d) rows grouped by partition, each partition one row group (named in the
    file's metadata), so that each reducer reads its own part of every batch and nothing else."""
    part = partition_of(values, partitions).astype(np.uint16)
    order = np.argsort(part, kind="stable")  # (a radix sort of 16-bit keys)
    values, owners, spans, part = values[order], owners[order], spans[order], part[order]
    bounds = np.flatnonzero(np.diff(part)) + 1
    starts = np.concatenate(([0], bounds)) if values.size else np.zeros(0, np.int64)
    ends = np.concatenate((bounds, [values.size])) if values.size else np.zeros(0, np.int64)
    index = {str(int(part[s])): i for i, s in enumerate(starts.tolist())}
    schema = fp_schema().with_metadata({_PARTS_KEY: json.dumps(index).encode()})

    def write(f: Any) -> None:
        with pq.ParquetWriter(f, schema) as w:
            for s, e in zip(starts.tolist(), ends.tolist()):
                w.write_table(pa.table({"value": values[s:e], "file_id": owners[s:e], "d": spans[s:e]},
                                       schema=schema), row_group_size=e - s)

    write_atomic(path, write)


def _staged_part(path: Path, p: int) -> Any:
    """The rows (:func:`fp_schema`) of partition ``p`` in a staged fingerprint file."""
    f = pq.ParquetFile(path)
    index = json.loads((f.schema_arrow.metadata or {}).get(_PARTS_KEY, b"{}"))
    rg = index.get(str(p))
    return fp_schema().empty_table() if rg is None else f.read_row_group(rg).cast(fp_schema())


# ------------------------------------------------------------------ scan: the reduce side
#: A source of rows: (a file, the ids of the rows to take from it, or None for all).
Source = tuple[str, "np.ndarray | None"]


def write_partition(out: str, p: int | None, sources: list[Source], dead: np.ndarray | None = None) -> int:
    """Write the partition file ``out`` from the rows of ``sources``, less those of the retired ids
    ``dead`` (sorted), sorted by value; returns its rows (none: no file).  ``p``: the
    sources are staged fingerprint files, of which partition ``p`` is read (the shuffle of a scan);
    None: they are partition files, read whole (a compaction)."""
    tables = []
    for path, ids in sources:
        t = pq.read_table(path, schema=fp_schema()) if p is None else _staged_part(Path(path), p)
        f = t.column("file_id").to_numpy()
        keep = np.isin(f, ids) if ids is not None else np.ones(f.size, bool)
        if dead is not None and dead.size:
            keep &= ~np.isin(f, dead)
        tables.append(t.filter(pa.array(keep)))
    t = pa.concat_tables(tables) if tables else fp_schema().empty_table()
    if t.num_rows == 0:
        return 0
    # (sorted by value: a look-up skips the row groups without its values)
    t = t.take(argsort_hashes(t.column("value").to_numpy()))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_table(Path(out), t, PART_ROW_GROUP)
    return int(t.num_rows)


def write_rows(out: str, sources: list[Source], dead: np.ndarray | None = None) -> int:
    """Write the file rows ``out`` (of a segment) from the rows of ``sources`` (staged batches or
    a segment's row files), less those of the retired ids ``dead``, sorted by id; returns its rows."""
    import pyarrow.compute as pc

    tables = []
    for path, ids in sources:
        t = pq.read_table(path, schema=file_schema())
        if ids is not None:
            t = t.filter(pc.is_in(t.column("id"), value_set=pa.array(ids, pa.int64())))
        if dead is not None and dead.size:
            t = t.filter(pc.invert(pc.is_in(t.column("id"), value_set=pa.array(dead, pa.int64()))))
        tables.append(t)
    t = pa.concat_tables(tables) if tables else file_schema().empty_table()
    t = t.take(pc.sort_indices(t, sort_keys=[("id", "ascending")]))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_file_rows(Path(out), t)
    return int(t.num_rows)


# ------------------------------------------------------------------ pair search
@dataclass(slots=True)
class Partition:
    """One partition of one view, as the pair search needs it: the values of the files taking
    part, sorted (``values``), each one's owner (its position among those files, ``owner``) and
    level (``levels``: from its span, ``evidence.LEVEL_OF_SPAN``), and the runs of equal values
    (``starts``, ``lengths``: posting lists)."""

    values: np.ndarray
    owner: np.ndarray
    levels: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray


@dataclass(frozen=True, slots=True)
class PartCounts:
    """What one partition adds to ``core.shared_counts``: the run-length histogram clipped above the
    cut-off (``hist``), the owners present and their full set sizes per level (``full``: None when
    not asked), their sizes without the common values (``kept``), the pairs sharing values there
    (``keys`` ``lo * n + hi`` of positions, sorted; ``counts``), and its values held by more files
    than the cut (``common``) or than ``evidence.frequent_cutoff`` of it (``frequent``), sorted.
    ``kept``, ``keys`` and ``counts`` are None when the partition was not paired (its posting lists
    alone made more incidences than the work allowed, or more distinct pairs than the bound:
    ``over``; the cut-off will be lowered)."""

    hist: np.ndarray
    owners: np.ndarray
    full: np.ndarray | None
    kept: np.ndarray | None
    keys: np.ndarray | None
    counts: np.ndarray | None
    common: np.ndarray
    frequent: np.ndarray
    over: bool = False


def positions(ids: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mask, position): which of ``wanted`` (file ids) are in ``ids`` (any order), and where."""
    if ids.size == 0:
        return np.zeros(wanted.size, bool), np.zeros(wanted.size, np.int64)
    order = np.argsort(ids, kind="stable")
    at = np.minimum(np.searchsorted(ids[order], wanted), ids.size - 1)
    hit = ids[order][at] == wanted
    return hit, order[at]


def load_partition(
    files: list[str], ids: np.ndarray, row_text: np.ndarray, view: int, ignored: np.ndarray
) -> Partition:
    """Partition of ``files`` (its file in each live segment) restricted to the files ``ids`` (the
    pair search's, in its order; ``row_text``: which are text files) and to one ``view``, less the
    values of texts to ignore (sorted ``ignored``): what the local search's CSR holds of it."""
    from simscan.similarity.arrays import run_bounds
    from simscan.similarity.evidence import LEVEL_OF_SPAN

    t = pa.concat_tables([pq.read_table(path, schema=fp_schema()) for path in files] or [fp_schema().empty_table()])
    v, f, d = (t.column(c).to_numpy() for c in ("value", "file_id", "d"))
    hit, pos = positions(ids, f)  # rows of retired, failed or other files drop out here
    v, pos, d = v[hit], pos[hit], d[hit]
    keep = fviews.value_views(v, row_text[pos]) == view
    if ignored.size:
        at = np.minimum(np.searchsorted(ignored, v), ignored.size - 1)
        keep &= ignored[at] != v
    v, pos, d = v[keep], pos[keep], d[keep]
    order = argsort_hashes(v)
    v, pos, d = v[order], pos[order], d[order]
    starts, lengths = run_bounds(v)
    return Partition(v, pos, LEVEL_OF_SPAN[d], starts, lengths)


def partition_counts(
    files: list[str], ids: np.ndarray, row_text: np.ndarray, row_level: np.ndarray | None, view: int,
    ignored: np.ndarray, *, cutoff: int, cut: int, budget: int | None, full: bool, key_limit: int | None = None,
) -> PartCounts:
    """One partition's share of ``core.shared_counts`` (:func:`load_partition`'s arguments, and
    ``row_level``: each file's level, or None): values held by more than ``cut`` files are common;
    every pair of files in a shorter posting list shares one value, where its level reaches the
    pair's (the higher of the two files' levels) in both files.  ``budget``: leave the pairs out
    when this partition alone would make more incidences (the search then lowers the cut-off and asks
    again, ``full`` False); ``key_limit``: leave them out, ``over``, when they are more distinct pairs
    (``core.count_runs``'s rule)."""
    from simscan.similarity.arrays import pairs_in_runs
    from simscan.similarity.core import FOLD_KEYS
    from simscan.similarity.evidence import frequent_cutoff
    from simscan.similarity.levels import level_counts

    part = load_partition(files, ids, row_text, view, ignored)
    n = ids.size
    hist = np.bincount(np.minimum(part.lengths, cutoff + 1), minlength=cutoff + 2)
    owners, local = np.unique(part.owner, return_inverse=True)
    local = local.reshape(-1)
    sizes = level_counts(part.levels, local, owners.size) if full else None
    common = part.lengths > cut
    frequent = ~common & (part.lengths > frequent_cutoff(cut))
    rare = part.values[part.starts[common]], part.values[part.starts[frequent]]
    usable = ~common & (part.lengths >= 2)
    ul = part.lengths[usable].astype(np.int64)
    if budget is not None and int((ul * (ul - 1) // 2).sum()) > budget:
        return PartCounts(hist, owners, sizes, None, None, None, *rare)
    kept = level_counts(part.levels, local, owners.size, keep=np.repeat(~common, part.lengths))
    over = PartCounts(hist, owners, sizes, None, None, None, *rare, over=True)
    keys, counts = [], []
    waiting = 0  # keys of the batches made since they were last merged
    for pi, pj in pairs_in_runs(part.starts[usable], ul):
        oa, ob = part.owner[pi].astype(np.int64), part.owner[pj].astype(np.int64)
        if row_level is not None:
            ok = np.minimum(part.levels[pi], part.levels[pj]) >= np.maximum(row_level[oa], row_level[ob])
            oa, ob = oa[ok], ob[ok]
        k, c = np.unique(np.minimum(oa, ob) * n + np.maximum(oa, ob), return_counts=True)
        keys.append(k)
        counts.append(c.astype(np.int32))
        waiting += k.size
        # Merged as they come (a pair shares values in many runs: the work's incidences can be many
        # times its distinct pairs), so that at most about twice the distinct pairs wait, and a
        # partition with more than ``key_limit`` stops there (as ``core.count_runs``'s batches).
        if waiting > max(FOLD_KEYS, keys[0].size):
            del k, c
            merged = merge_counts(keys, counts)
            keys[:], counts[:] = [merged[0]], [merged[1]]
            del merged
            waiting = 0
            if key_limit is not None and keys[0].size > key_limit:
                return over
    key, cnt = merge_counts(keys, counts)
    if key_limit is not None and key.size > key_limit:
        return over
    return PartCounts(hist, owners, sizes, kept, key, cnt, *rare)


def merge_counts(keys: list[np.ndarray], counts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys with the summed counts of each (int64 keys, int32 counts), of batches of
    sorted distinct keys (``core.merge_counts`` on copies of the lists: the callers keep theirs)."""
    from simscan.similarity.core import merge_counts as merged

    return merged(list(keys), list(counts))


# ------------------------------------------------------------------ query
def lookup(files: list[str], values: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, file ids, spans) of the rows of one partition (``files``) whose value is in ``values``
    (sorted) and whose file is in ``live`` (sorted ids)."""
    import pyarrow.compute as pc

    want = pc.field("value").isin(pa.array(values, pa.uint64()))  # (row groups without them are not read)
    vs, fs, ds = [], [], []
    for path in files:
        t = pq.read_table(path, columns=["value", "file_id", "d"], filters=want)
        t = t.filter(pc.is_in(t.column("file_id"), value_set=pa.array(live, pa.int64())))
        vs.append(t.column("value").to_numpy())
        fs.append(t.column("file_id").to_numpy())
        ds.append(t.column("d").to_numpy())
    if not vs:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.uint8)
    return np.concatenate(vs), np.concatenate(fs), np.concatenate(ds)
