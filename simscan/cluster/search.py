"""``simscan cluster pairs|groups|query``: the local pair search, with its inverted-index half on
the workers.

The local search (``similarity.core.compute_pair_arrays``) reads the fingerprint sets through
three calls (``core.FingerprintSets``); :class:`StoreSets` answers them from the store's
partitions on the cluster, and everything else -- copies, representatives, the common cut-off,
the simhash candidates, the scores, the views, the groups, the output -- is the local code run
here on the client.

The shuffle on fingerprint values is the store's partitioning: a value lives in one partition,
so each posting list lies in one partition and the partitions are counted apart, one task each
(:func:`tasks.partition_counts`: read the partition, keep this view's values of the files taking
part, sort, count where each value's span reaches the pair's level in both files, as
``core.shared_counts`` counts), and the client adds the counts up, and gathers the common and
frequent values the passages leave out.  The common cut-off needs the run lengths of every
partition, so the tasks pair at the unlowered cut-off; when the lists under it make more incidences
than ``pair_work`` or more distinct pairs than half ``pair_budget`` (rare: real collections stay far
below them), the cut-off is lowered as ``core.count_runs`` lowers it and the partitions are counted
again (the same settling as there, written again for the tasks' futures).  A worker killed
mid-search costs Dask a retry of its partitions.  The simhash neighbours that the scores check on the full sets,
and the passages of the pairs kept, are weighed here by the native evidence, from the stored sets
of their files (:func:`sets_loader`: the file rows' blobs and meta).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from simscan.cluster import tasks
from simscan.cluster.store import Store, StoreError, partition_of
from simscan.fingerprint import DEFAULT_PARAMS
from simscan.fingerprint.views import CODE, TEXT
from simscan.index.postings import posted_mask
from simscan.model import ALGORITHM_VERSION, FingerprintMeta
from simscan.progress import Cancelled, CancelToken, ProgressSink
from simscan.similarity import PairSet, SimilarityParams
from simscan.similarity.core import DEFAULT_MIN_SIMILARITY, DEFAULT_SIM_PARAMS, budget_cutoff
from simscan.similarity.engine import _filter, _noting_cutoff, progress_reporter
from simscan.similarity.evidence import PlacesLoader, StoredSets, pair_evidence, window_of_level
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
            if isinstance(result, BaseException):  # (a future cancelled: the client lost its scheduler)
                raise result
            on_result(result)
    except BaseException:
        client.cancel(futures)
        raise


def sets_loader(store: Store, files: Any) -> PlacesLoader:
    """Reads the stored sets with their places of some of ``files`` (a file table of the store) from
    their rows: given sorted distinct file ids, ``(sets, row)`` (``evidence.PlacesLoader``)."""
    file_ids = np.asarray(files.ids, np.int64)
    is_text = np.asarray(files.is_text, dtype=bool)

    def load(want: np.ndarray) -> tuple[StoredSets, np.ndarray]:
        want = np.asarray(want, np.int64)
        got, offsets, values, meta = store.stored_sets(want)
        _, at = tasks.positions(file_ids, got)
        sets = StoredSets(offsets, values, meta.d, meta.unit, meta.char, meta.chars, is_text[at])
        hit, row = tasks.positions(got, want)
        return sets, np.where(hit, row, -1)

    return load


class StoreSets:
    """``core.FingerprintSets`` of one view of a store, counted on a cluster.  A set's handle is
    its file id; ``load`` reads the stored sets of some (:func:`sets_loader`)."""

    #: The partitions carry each value's span: a value counts for a pair where it reaches the pair's
    #: window in both files (ALGORITHM_VERSION 12), as in the local search.
    spans = True

    def __init__(self, client: Any, store: Store, view: int, ignored: np.ndarray, load: PlacesLoader) -> None:
        self.client = client
        self.store = store
        self.view = view
        self.ignored = ignored
        self.load = load

    def rows(self, files: Any) -> np.ndarray:
        return np.asarray(files.ids, dtype=np.int64)  # every file read has a set (maybe empty)

    def shared_counts(
        self, csr_row: np.ndarray, row_text: np.ndarray, params: SimilarityParams,
        cancel: CancelToken | None, report: Any, row_level: np.ndarray | None = None,
        rare: list[np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        client, parts_n = self.client, self.store.manifest.partitions
        ids = np.asarray(csr_row, np.int64)
        n = ids.size
        tag = uuid.uuid4().hex[:8]
        ids_f, text_f, ignored_f = client.scatter([ids, np.asarray(row_text, bool), self.ignored], broadcast=True,
                                                  hash=False)
        level_f = None if row_level is None else client.scatter(np.asarray(row_level, np.int8), broadcast=True,
                                                                hash=False)
        files = [[str(f) for f in self.store.part_files(p)] for p in range(parts_n)]
        width = DEFAULT_PARAMS.max_level + 1
        cutoff = params.common_cutoff(n)
        full = np.zeros((n, width), np.int64)
        hist = np.zeros(cutoff + 2, np.int64)
        kept = np.zeros((n, width), np.int64)
        keys: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        common: list[np.ndarray] = []
        frequent: list[np.ndarray] = []

        work, bound = max(params.pair_work, params.pair_budget), params.pair_budget // 2
        state = {"crowded": False}  # (a run's pairs were more distinct pairs than the bound)

        def run(cut: int, first: bool, bounded: bool) -> None:
            """Counts every partition at ``cut``; ``bounded``: checks the distinct pairs against the bound
            (pairs up to the least cut-off, 2, are kept whatever the bounds, as they are at ``safe``)."""
            done = made = 0  # made: (pair, shared value) incidences so far
            state["crowded"] = False
            capped = first and cut > 2  # (the work bounds the first run, but not the pairs up to 2)

            def add(c: tasks.PartCounts) -> None:
                nonlocal done, made
                if first:
                    hist[:] += c.hist
                    full[c.owners] += c.full
                common.append(c.common)
                frequent.append(c.frequent)
                # Once a pass is over the work or the bound another follows: its pairs are not kept.
                if c.over and not state["crowded"]:
                    state["crowded"] = True
                    keys.clear()
                    counts.clear()
                if c.keys is not None and not (capped and made > work) and not state["crowded"]:
                    kept[c.owners] += c.kept
                    keys.append(c.keys)
                    counts.append(c.counts)
                    made += int(c.counts.sum(dtype=np.int64))
                    if bounded and sum(k.size for k in keys) > bound:
                        merged = tasks.merge_counts(keys, counts)
                        keys[:], counts[:] = [merged[0]], [merged[1]]
                        state["crowded"] = merged[0].size > bound
                    if capped and made > work or state["crowded"]:
                        keys.clear()
                        counts.clear()
                done += 1
                if report:
                    report("pairs", done, parts_n)

            futures = [
                client.submit(tasks.partition_counts, files[p], ids_f, text_f, level_f, self.view, ignored_f,
                              cutoff=cutoff, cut=cut, budget=work if capped else None, full=first,
                              key_limit=bound if bounded else None,
                              key=f"simscan-pairs-{self.view}-{p}-{int(first)}-{tag}")
                for p in range(parts_n)
            ]
            _gather(client, futures, cancel, add)

        # One pass pairs every partition at the cut-off.  When the posting lists under it make more
        # incidences than ``pair_work``, or more distinct pairs than half ``pair_budget``, the cut-off is
        # lowered as the local search lowers it (``core.count_runs``) and every partition is paired
        # again at it.
        run(cutoff, True, cutoff > 2)
        cut = budget_cutoff(hist, cutoff, work)
        safe = budget_cutoff(hist, cutoff, params.pair_budget)
        fits = cut == cutoff and not state["crowded"]
        if state["crowded"] and cut == cutoff:
            cut = safe
        state["crowded"] = False  # (at a lower cut-off they may not be too many: a run there tells)
        while True:
            if fits:
                key, cnt = tasks.merge_counts(keys, counts)
                if key.size <= bound or cut == safe:
                    break
                state["crowded"] = True
            if state["crowded"]:
                cut = safe
            for x in (keys, counts, common, frequent):
                x.clear()
            kept[:] = 0
            run(cut, False, cut != safe)
            fits = not state["crowded"]
        if rare is not None:
            rare[:] = [*(np.sort(np.concatenate(x)) if x else np.zeros(0, np.uint64) for x in (common, frequent)),
                       np.array([cut, cutoff], np.int64)]  # (as ``core.count_runs``: the cut-off told)
        return full.astype(np.float64), kept.astype(np.float64), key, cnt

    def intersect(
        self, rows_a: np.ndarray, rows_b: np.ndarray, text_a: np.ndarray, text_b: np.ndarray, level: np.ndarray,
        view: int, ignored: np.ndarray,
    ) -> np.ndarray:
        """Weighed here from the files' stored sets (a few files: simhash neighbours), as
        ``core.CsrSets.intersect`` weighs them (the view and the texts to ignore left out by the
        evidence itself)."""
        a, b = np.asarray(rows_a, np.int64), np.asarray(rows_b, np.int64)
        if a.size == 0:
            return np.zeros(0, np.int64)
        handles, inv = np.unique(np.concatenate((a, b)), return_inverse=True)
        sets, row = self.load(handles)
        ev = pair_evidence(sets, row[inv[: a.size]], row[inv[a.size :]], window_of_level(level), view, ignored)
        return ev.inter.astype(np.int64)


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
    """Every pair of the store's files whose best score is >= ``min_similarity`` or that shares a
    passage of ``params.min_passage`` characters: the ``PairSet`` that ``similarity.find_pair_set``
    finds for the same files with its results cache, i.e. searched down to the default threshold
    (at most) and then cut at ``min_similarity`` (``engine._filter``).  (Searched at a higher
    threshold, a pair whose better view falls under it can be kept by the other view's passage.)
    Raises :class:`Cancelled`, :class:`StoreError`."""
    check_current(store)
    files = store.file_table()
    ignored = params.ignored()
    load = sets_loader(store, files)
    text = StoreSets(client, store, TEXT, ignored, load)
    code = StoreSets(client, store, CODE, ignored, load) if params.code_view and has_code_view(store) else None
    report, lowered, crowded = _noting_cutoff(progress_reporter(progress))
    pa_ = pair_arrays_by_view(files, text, code, min_similarity=min(min_similarity, DEFAULT_MIN_SIMILARITY),
                              params=params, cancel=cancel, report=report,
                              reference_roots=reference_roots, places=load)
    return PairSet(files, _filter(pa_, min_similarity, params.min_passage), floor=min_similarity,
                   cutoff=tuple(lowered) if lowered else None, crowded=tuple(crowded) if crowded else None)


class StoreIndex:
    """What ``similarity.engine.query_fingerprints`` reads of an index, from a store: the file
    rows (read once, here), the stored sets of the candidates (their blobs), and the holders of
    values (looked up in the partitions on the cluster).  As the local inverted index,
    :meth:`files_with_fingerprints` finds the holders that posted the values (``index.postings``:
    the sample, and a text's values of span 128, by each holder's own span), and :meth:`holders`
    every holder of every value (a short file's query)."""

    def __init__(self, client: Any, store: Store) -> None:
        check_current(store)
        self.client = client
        self.store = store
        self._count = store.rows([]).num_rows  # (every live row: failed files too, as the index counts)
        self._table = store.file_table()
        self._live: Any = None  # the ids of the files read, sent to the workers at the first look-up

    def stats(self) -> dict[str, int]:
        return {"files": self._count}

    def posted_mask(self, values: np.ndarray, spans: np.ndarray | None = None) -> np.ndarray:
        return posted_mask(values, spans=spans)

    def files_with_fingerprints(
        self, values: np.ndarray, spans: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        v = np.asarray(values, np.uint64)
        vals, fids, d = self._holders(v[posted_mask(v, spans=spans)])
        # Those a local index would have posted (the posting rule, by each holder's own span), so that
        # a query finds the files it finds locally.
        hit, at = tasks.positions(self._table.ids, fids)
        text = hit & np.asarray(self._table.is_text, bool)[at]
        keep = posted_mask(vals, spans=np.where(text, d, 0).astype(np.uint8))
        return vals[keep], fids[keep]

    def holders(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(values, file ids) of every live file holding one of ``values``, sorted by value then id."""
        vals, fids, _d = self._holders(values)
        return vals, fids

    def _holders(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`holders` with each row's span."""
        v = np.unique(np.asarray(values, np.uint64))
        if v.size == 0:
            return v, np.zeros(0, np.int64), np.zeros(0, np.uint8)
        part = partition_of(v, self.store.manifest.partitions)
        if self._live is None:
            self._live = self.client.scatter(self._table.ids, broadcast=True, hash=False)
        futures = []
        for p in np.unique(part).tolist():
            files = [str(f) for f in self.store.part_files(p)]
            if files:
                futures.append(self.client.submit(tasks.lookup, files, v[part == p], self._live, pure=False))
        got = self.client.gather(futures)
        vals = np.concatenate([g[0] for g in got]) if got else np.zeros(0, np.uint64)
        fids = np.concatenate([g[1] for g in got]) if got else np.zeros(0, np.int64)
        d = np.concatenate([g[2] for g in got]) if got else np.zeros(0, np.uint8)
        order = np.lexsort((fids, vals))
        return vals[order], fids[order], d[order]

    def fingerprints(self, file_ids: np.ndarray, kind: str = "all") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if kind != "all":
            raise ValueError("a store keeps whole sets: kind must be 'all'")
        return self.store.fingerprints(file_ids)

    def stored_sets(self, file_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, FingerprintMeta]:
        return self.store.stored_sets(file_ids)

    def files_by_ids(self, ids: np.ndarray) -> Any:
        from simscan.similarity.core import subset_table

        hit, at = tasks.positions(self._table.ids, np.unique(np.asarray(ids, np.int64)))
        return subset_table(self._table, np.sort(at[hit]))

    def bare_copies(self, content_hash: bytes, is_text: bool) -> np.ndarray:
        t = self._table
        rows = [k for k in np.flatnonzero((t.fp_count == 0) & (t.is_text == bool(is_text))).tolist()
                if t.content_hash[k] == content_hash]
        return t.ids[rows]
