"""``simscan cluster pairs|groups|query``: the local pair search, with its inverted-index half on
the workers.

The local search (``similarity.core.compute_pair_arrays``) reads the fingerprint sets through
three calls (``core.FingerprintSets``); :class:`StoreSets` answers them from the store's
partitions on the cluster, and everything else -- copies, representatives, the common cut-off,
the simhash candidates, the scores, the views, the groups, the output -- is the local code run
here on the client.

The shuffle on fingerprint values is the store's partitioning: a value lives in one partition,
so each posting list lies in one partition and the partitions are counted apart.
``shared_counts`` runs as the local one does, in two passes over the partitions, each loaded
once into a worker's memory (:func:`tasks.load_partition`, a Dask future the passes depend on:
a worker killed mid-search costs the recomputation of what it held, not a result):

1. every partition's run-length histogram and full set sizes -> the common cut-off, lowered
   until the posting lists under it make at most ``pair_budget`` pairs (``core.budget_cutoff``);
2. every partition's pairs of files in a posting list under the cut-off, counted per pair, and
   the set sizes without the common values; the client adds them up.

The simhash candidates that the scores check on the full sets are intersected partition by
partition (:func:`tasks.partition_intersections`) and added up.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from simscan.cluster import tasks
from simscan.cluster.store import Store, StoreError, partition_of, table_from_rows
from simscan.fingerprint import DEFAULT_PARAMS
from simscan.fingerprint.views import CODE, TEXT
from simscan.index.postings import posted_mask
from simscan.model import ALGORITHM_VERSION
from simscan.progress import Cancelled, CancelToken, ProgressSink
from simscan.similarity import PairSet, SimilarityParams
from simscan.similarity.core import DEFAULT_MIN_SIMILARITY, DEFAULT_SIM_PARAMS, budget_cutoff
from simscan.similarity.engine import progress_reporter
from simscan.similarity.views import pair_arrays_by_view


def check_current(store: Store) -> None:
    """Raise :class:`StoreError` when the store was fingerprinted by another algorithm version."""
    if store.manifest.algorithm != ALGORITHM_VERSION and store.manifest.segments:
        raise StoreError(
            f"the store {store.root} was fingerprinted by another simscan (algorithm {store.manifest.algorithm}, "
            f"this one: {ALGORITHM_VERSION})",
            "Run `simscan cluster scan` on its folders again: every file is read again.",
        )


def _gather(client: Any, futures: list[Any], cancel: CancelToken | None, on_result: Any) -> None:
    """Call ``on_result(result)`` for each future as it completes; on cancel, cancel the rest and
    raise :class:`Cancelled`."""
    from distributed import as_completed

    try:
        for _, result in as_completed(futures, with_results=True):
            if cancel is not None and cancel.cancelled:
                raise Cancelled
            on_result(result)
    except BaseException:
        client.cancel(futures)
        raise


class StoreSets:
    """``core.FingerprintSets`` of one view of a store, counted on a cluster.  A set's handle is
    its file id.  Holds the loaded partitions on the workers from ``shared_counts`` until
    :meth:`release` (``intersect`` reads them too)."""

    def __init__(self, client: Any, store: Store, view: int, ignored: np.ndarray) -> None:
        self.client = client
        self.store = store
        self.view = view
        self.ignored = ignored
        self._ids = np.zeros(0, np.int64)
        self._parts: list[Any] = []

    def rows(self, files: Any) -> np.ndarray:
        return np.asarray(files.ids, dtype=np.int64)  # every file read has a set (maybe empty)

    def shared_counts(
        self, csr_row: np.ndarray, row_text: np.ndarray, params: SimilarityParams,
        cancel: CancelToken | None, report: Any,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        self.release()
        client, parts_n = self.client, self.store.manifest.partitions
        ids = np.asarray(csr_row, np.int64)
        n = ids.size
        self._ids = ids
        tag = uuid.uuid4().hex[:8]
        ids_f, text_f, ign_f = client.scatter([ids, np.asarray(row_text, bool), self.ignored], broadcast=True, hash=False)
        self._parts = [
            client.submit(tasks.load_partition, [str(f) for f in self.store.part_files(p)], ids_f, text_f, self.view,
                          ign_f, key=f"simscan-load-{self.view}-{p}-{tag}")
            for p in range(parts_n)
        ]
        width = DEFAULT_PARAMS.max_level + 1
        cutoff = params.common_cutoff(n)
        steps = 2 * parts_n
        done = 0

        def step() -> None:
            nonlocal done
            done += 1
            if report:
                report("pairs", done, steps)

        full = np.zeros((n, width), np.int64)
        hist = np.zeros(cutoff + 2, np.int64)

        def add_stats(r: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
            h, owners, counts = r
            hist[:] += h
            full[owners] += counts
            step()

        _gather(client, [client.submit(tasks.partition_stats, f, cutoff, key=f"simscan-stats-{self.view}-{p}-{tag}")
                         for p, f in enumerate(self._parts)], cancel, add_stats)
        cut = budget_cutoff(hist, cutoff, params.pair_budget)
        kept = np.zeros((n, width), np.int64)
        keys: list[np.ndarray] = []
        counts: list[np.ndarray] = []

        def add_pairs(r: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
            owners, k_sizes, key, cnt = r
            kept[owners] += k_sizes
            keys.append(key)
            counts.append(cnt)
            step()

        _gather(client, [client.submit(tasks.partition_pairs, f, cut, n, key=f"simscan-pairs-{self.view}-{p}-{tag}")
                         for p, f in enumerate(self._parts)], cancel, add_pairs)
        key, cnt = tasks.merge_counts(keys, counts)
        return full.astype(np.float64), kept.astype(np.float64), key, cnt

    def intersect(self, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
        out = np.zeros(np.asarray(rows_a).size, np.int64)
        if out.size == 0:
            return out
        _, a = tasks.positions(self._ids, np.asarray(rows_a, np.int64))
        _, b = tasks.positions(self._ids, np.asarray(rows_b, np.int64))
        a_f, b_f = self.client.scatter([a, b], broadcast=True, hash=False)

        def add(r: np.ndarray) -> None:
            out[:] += r

        _gather(self.client, [self.client.submit(tasks.partition_intersections, f, a_f, b_f, pure=False)
                              for f in self._parts], None, add)
        return out

    def release(self) -> None:
        """Let the workers drop the loaded partitions."""
        if self._parts:
            self.client.cancel(self._parts)
        self._parts = []


def has_code_view(store: Store) -> bool:
    """Whether a live file has values of the code view (else the code pass has nothing to find)."""
    import pyarrow.compute as pc

    t = store.rows(["n_code", "error"])
    t = t.filter(pc.is_null(t.column("error")))
    return bool(t.num_rows) and int(pc.max(t.column("n_code")).as_py() or 0) > 0


def find_pair_set(
    client: Any,
    store: Store,
    *,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    params: SimilarityParams = DEFAULT_SIM_PARAMS,
    reference_roots: Sequence[str] = (),
    progress: ProgressSink | None = None,
    cancel: CancelToken | None = None,
) -> PairSet:
    """Every pair of the store's files whose best score is >= ``min_similarity``: the
    ``PairSet`` that ``similarity.find_pair_set`` finds for the same files without a cache.
    Raises :class:`Cancelled`, :class:`StoreError`."""
    check_current(store)
    files = store.file_table()
    ignored = params.ignored()
    text = StoreSets(client, store, TEXT, ignored)
    code = StoreSets(client, store, CODE, ignored) if params.code_view and has_code_view(store) else None
    try:
        pa_ = pair_arrays_by_view(
            files, text, code, min_similarity=min_similarity, params=params, cancel=cancel,
            report=progress_reporter(progress), reference_roots=reference_roots,
        )
    finally:
        text.release()
        if code is not None:
            code.release()
    return PairSet(files, pa_, floor=min_similarity)


class StoreIndex:
    """What ``similarity.engine.query_fingerprints`` reads of an index, from a store: the file
    rows (read once, here), the stored sets of the candidates (their blobs), and the holders of
    values (looked up in the partitions on the cluster).  As the local inverted index,
    :meth:`files_with_fingerprints` finds the holders of the posted values only (the same
    sample: ``index.postings``), and :meth:`holders` of every value (a short file's query)."""

    def __init__(self, client: Any, store: Store) -> None:
        import pyarrow.compute as pc

        check_current(store)
        self.client = client
        self.store = store
        rows = store.rows(["path", "size", "mtime_ns", "is_text", "encoding", "checksum", "partial", "content_hash",
                           "simhash", "fp_count", "units", "device", "inode", "error"])
        self._count = rows.num_rows
        ok = rows.filter(pc.is_null(rows.column("error")))
        self._table = table_from_rows(ok)
        self._live = self._table.ids

    def stats(self) -> dict[str, int]:
        return {"files": self._count}

    def posted_mask(self, values: np.ndarray) -> np.ndarray:
        return posted_mask(values)

    def files_with_fingerprints(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = np.unique(np.asarray(values, np.uint64))
        return self.holders(v[posted_mask(v)])

    def holders(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(values, file ids) of every live file holding one of ``values``, sorted by value then id."""
        v = np.unique(np.asarray(values, np.uint64))
        if v.size == 0:
            return v, np.zeros(0, np.int64)
        part = partition_of(v, self.store.manifest.partitions)
        live_f = self.client.scatter(self._live, broadcast=True, hash=False)
        futures = []
        for p in np.unique(part).tolist():
            files = [str(f) for f in self.store.part_files(p)]
            if files:
                futures.append(self.client.submit(tasks.lookup, files, v[part == p], live_f, pure=False))
        got = self.client.gather(futures)
        vals = np.concatenate([g[0] for g in got]) if got else np.zeros(0, np.uint64)
        fids = np.concatenate([g[1] for g in got]) if got else np.zeros(0, np.int64)
        order = np.lexsort((fids, vals))
        return vals[order], fids[order]

    def fingerprints(self, file_ids: np.ndarray, kind: str = "all") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if kind != "all":
            raise ValueError("a store keeps whole sets: kind must be 'all'")
        return self.store.fingerprints(file_ids)

    def files_by_ids(self, ids: np.ndarray) -> Any:
        from simscan.similarity.core import subset_table

        hit, at = tasks.positions(self._table.ids, np.unique(np.asarray(ids, np.int64)))
        return subset_table(self._table, np.sort(at[hit]))

    def bare_copies(self, content_hash: bytes, is_text: bool) -> np.ndarray:
        t = self._table
        rows = [k for k in np.flatnonzero((t.fp_count == 0) & (t.is_text == bool(is_text))).tolist()
                if t.content_hash[k] == content_hash]
        return t.ids[rows]
