"""The pairs' evidence on clusters of near-copies (issue 19's cluster case, small): read in chunks
that follow the pairs' components, so a cluster spread over the rows is read once rather than once a
chunk, with the same pairs and groups at every budget as the search on the whole CSR in memory and
as the object-based reference of the grouping rules; the index's page cache is small while the
search runs and its own after."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from similarity_support import index_tree, words
from test_slices import _in_memory, _rows

from simscan.index import Index
from simscan.similarity import SimilarityParams, engine, find_groups, find_pairs, slices
from simscan.similarity.engine import _small_page_cache, find_pair_set
from tests.grouping_reference import reference_group_pairs

SOURCES, COPIES = 6, 9


def _clusters(root: Path) -> None:
    """``SOURCES`` texts and ``COPIES`` near-copies of each (8 % of the words replaced, seeded), two of
    every three carrying one licence text; named so that the copies of one source are spread over the
    rows (the file table is in path order)."""
    root.mkdir()
    rng = random.Random(19)
    licence = words(900, 260)
    vocabulary = words(901, 400).split()
    for s in range(SOURCES):
        base = words(300 + s, 180 + 40 * s).split()
        for c in range(COPIES):
            text = " ".join(rng.choice(vocabulary) if rng.random() < 0.08 else w for w in base)
            if (s + c) % 3:
                text = licence + "\n\n" + text if c % 2 else text + "\n\n" + licence
            (root / f"c{c}s{s}.txt").write_text(text + "\n")


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("clusters")
    _clusters(base / "t")
    index_tree(base / "i.sqlite3", base / "t")
    return base / "i.sqlite3"


def _shape(groups) -> list[tuple]:
    return [(g.kind, g.reference, [(m, m.pair) for m in g.members]) for g in groups]


#: The licence held by 36 of the 54 files is common text at a cut-off of 4, not at the default.
PARAMS = [SimilarityParams(), SimilarityParams(common_min_df=4), SimilarityParams(common_min_df=4, min_passage=0)]


def test_clusters_give_the_pairs_and_groups_of_the_search_in_memory(index_path: Path) -> None:
    with Index.open(index_path, readonly=True) as ix:
        for params in PARAMS:
            for at in (0.0, 15.0, 40.0, 75.0):
                want = _rows(_in_memory(ix, params, at))
                for memory in (1 << 30, 1 << 20, slices.MIN_MEMORY):
                    assert _rows(find_pair_set(ix, min_similarity=at, params=params, cache=False,
                                               memory=memory).pairs) == want, (params, at, memory)
                pairs = find_pairs(ix, min_similarity=at, params=params, cache=False, memory=slices.MIN_MEMORY)
                groups = find_groups(ix, min_similarity=at, params=params, cache=False, memory=slices.MIN_MEMORY)
                assert _shape(groups) == _shape(reference_group_pairs(pairs, ix.files(), min_similarity=at))
                assert (want or at >= 75) and (at > 15 or len(groups) >= SOURCES)


def test_a_cluster_is_read_in_one_chunk(index_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the licence common, the pairs' graph is one component a source: chunks that hold a few
    clusters each read every file about once, though each cluster's copies are spread over the rows
    (chunks in row order read most files in most chunks)."""
    loads: list[int] = []
    real = engine._places_loader

    def counting(*args, **kwargs):
        load = real(*args, **kwargs)

        def counted(rows: np.ndarray):
            loads.append(int(rows.size))
            return load(rows)

        return counted

    monkeypatch.setattr(engine, "_places_loader", counting)
    with Index.open(index_path, readonly=True) as ix:
        files = len(ix.files().paths)
        cluster = int(np.asarray(ix.files().fp_count).max()) * COPIES
        memory = 2 * 64 * 2 * cluster  # (half the budget for the evidence, 64 bytes a value): ~2 clusters a chunk
        find_pair_set(ix, min_similarity=15.0, params=PARAMS[1], cache=False, memory=memory)
    assert len(loads) >= 3, loads
    assert sum(loads) <= files + (len(loads) - 1) * COPIES, loads


def test_the_page_cache_is_small_during_the_search_and_restored(index_path: Path) -> None:
    with Index.open(index_path, readonly=True) as ix:
        before = ix.connection.execute("PRAGMA cache_size").fetchone()[0]
        with _small_page_cache(ix):
            assert ix.connection.execute("PRAGMA cache_size").fetchone()[0] == -2048 != before
        assert ix.connection.execute("PRAGMA cache_size").fetchone()[0] == before
