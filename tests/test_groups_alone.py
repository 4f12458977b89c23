"""Groups without weighing every pair (issue 19): ``find_groups`` searches for the groups alone
(``find_pair_set(for_groups=True)``: the evidence weighs only the pairs whose bound can reach the
threshold, nothing is cached) and must give the groups of the plain path -- every pair found, weighed
and grouped -- and of the object-based reference of the grouping rules, on real files in a real
index: clusters of near-copies sharing a licence text (common text), and the varied tree of the
sliced search's tests (copies, UTF-16, excerpts, renamed Java programs, binary files, a hard link)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from similarity_support import index_tree, words
from test_slices import _rows
from test_slices import _tree as varied_tree

from simscan.cli import main
from simscan.index import Index
from simscan.similarity import SimilarityParams, core, find_groups, find_pairs, slices
from simscan.similarity.core import PairArrays
from simscan.similarity.engine import _small_page_cache, find_pair_set, groups_of_pair_set, ignore_texts
from simscan.similarity.types import passes
from tests.grouping_reference import reference_group_pairs

LICENCE = words(900, 260)


def _clusters(root: Path, sources: int = 6, copies: int = 9, edit: float = 0.08) -> None:
    """``sources`` texts and ``copies`` near-copies of each (``edit`` of the words replaced, seeded),
    two of every three carrying one licence text: ~sources * copies^2 / 2 candidate pairs, of which
    those whose edits fall apart score under the higher thresholds."""
    root.mkdir()
    rng = random.Random(19)
    vocabulary = words(901, 400).split()
    for s in range(sources):
        base = words(300 + s, 180 + 40 * s).split()
        for c in range(copies):
            text = " ".join(rng.choice(vocabulary) if rng.random() < edit else w for w in base)
            if (s + c) % 3:
                text = LICENCE + "\n\n" + text if c % 2 else text + "\n\n" + LICENCE
            (root / f"s{s}c{c}.txt").write_text(text + "\n")


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("groups_alone")
    out = {}
    for name, make in (("clusters", _clusters), ("varied", varied_tree)):
        make(base / name)
        out[name] = base / f"{name}.sqlite3"
        index_tree(out[name], base / name)
    return out


def _params(root: Path) -> list[SimilarityParams]:
    return [
        SimilarityParams(),
        SimilarityParams(common_min_df=4),  # the licence (and the varied tree's header) is common text
        SimilarityParams(common_min_df=4, min_passage=0),  # kept by share alone
        SimilarityParams(code_view=False, min_passage=300),
        SimilarityParams(pair_budget=40),  # the cut-off lowered by the pair budget
        SimilarityParams(ignore_values=ignore_texts(sorted(root.glob("*.txt"))[:1])),
    ]


def _shape(groups) -> list[tuple]:
    """Everything a group shows: reference, members with their percentages, kinds, copy sets, pairs."""
    return [(g.kind, g.reference, [(m, m.pair) for m in g.members]) for g in groups]


def test_groups_alone_equal_the_groups_of_every_pair(indexes: dict[str, Path]) -> None:
    """Same groups (members, percentages, kinds, the pairs shown) as grouping every pair the plain
    search keeps, and as the object-based reference of the rules on those pairs, at several settings,
    thresholds and budgets (the smallest: many chunks of evidence)."""
    checked = 0
    for name, path in indexes.items():
        with Index.open(path, readonly=True) as ix:
            root = Path(ix.files().paths[0]).parent
            for params in _params(root):
                for at in (0.0, 15.0, 40.0, 75.0):
                    full = find_pair_set(ix, min_similarity=at, params=params, cache=False)
                    want = groups_of_pair_set(full, min_similarity=at)
                    pairs = find_pairs(ix, min_similarity=at, params=params, cache=False)
                    reference = reference_group_pairs(pairs, full.files, min_similarity=at)
                    assert _shape(want) == _shape(reference), (name, params, at)
                    for memory in (None, slices.MIN_MEMORY):
                        got = find_groups(ix, min_similarity=at, params=params, cache=False, memory=memory)
                        assert _shape(got) == _shape(want), (name, params, at, memory)
                    checked += bool(want)
                    if name == "varied" and params == SimilarityParams() and at == 15.0:
                        roots = [str(root)]  # a reference folder: which path of the hard link is grouped
                        full = find_pair_set(ix, min_similarity=at, cache=False, reference_roots=roots)
                        assert _shape(find_groups(ix, min_similarity=at, cache=False, reference_roots=roots)) == \
                            _shape(groups_of_pair_set(full, min_similarity=at, reference_roots=roots))
    assert checked >= 40


def _at_or_above(pa: PairArrays, at: float) -> list[tuple]:
    """The rows of the pairs groups take: best score at ``at`` or above, and copies."""
    keep = passes(pa.best, at) | (pa.kind <= 1)
    return _rows(PairArrays(*(getattr(pa, f)[keep] for f in PairArrays.__slots__)))


def test_the_pairs_for_groups_are_the_pairs_at_the_threshold(indexes: dict[str, Path]) -> None:
    """Every column of every pair at the threshold or above (the scores the groups show, the view,
    the kind, the passages) as the plain search gives it; it keeps fewer pairs below it; nothing is
    written to the results cache."""
    with Index.open(indexes["clusters"]) as ix:
        for params in (SimilarityParams(), SimilarityParams(common_min_df=4)):
            for at in (15.0, 40.0, 75.0):
                full = find_pair_set(ix, min_similarity=at, params=params, cache=False)
                alone = find_pair_set(ix, min_similarity=at, params=params, cache=True, for_groups=True)
                assert alone.for_groups and not alone.stored and not alone.cached
                assert _at_or_above(alone.pairs, at) == _at_or_above(full.pairs, at)
                assert set(_rows(alone.pairs)) <= set(_rows(full.pairs))
        assert ix.connection.execute("SELECT count(*) FROM results").fetchone()[0] == 0


def test_the_bound_leaves_out_pairs_that_cannot_reach_the_threshold(
    indexes: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In clusters of near-copies most candidate pairs at a high threshold are not weighed (and what
    is left out is under it: the test above); at 0 % every pair sharing a value is."""
    weighed: list[int] = []
    real = core.pair_evidence

    def counting(sets, rows_a, rows_b, *args, **kwargs):
        size = np.diff(sets.offsets)  # (less the count of a file's own values: against an empty set)
        weighed.append(int(np.count_nonzero((size[rows_a] > 0) & (size[rows_b] > 0))))
        return real(sets, rows_a, rows_b, *args, **kwargs)

    monkeypatch.setattr(core, "pair_evidence", counting)
    with Index.open(indexes["clusters"], readonly=True) as ix:
        params = SimilarityParams(common_min_df=4)
        counts = {}
        for at in (0.0, 75.0):
            for alone in (False, True):
                weighed.clear()
                find_pair_set(ix, min_similarity=at, params=params, cache=False, for_groups=alone)
                counts[at, alone] = sum(weighed)
    assert counts[75.0, False] > 100 and counts[75.0, True] < counts[75.0, False] // 2, counts
    assert counts[0.0, True] == counts[0.0, False], counts


def test_cli_pairs_unchanged_and_groups_write_no_cache(indexes: dict[str, Path], tmp_path: Path, capsys) -> None:
    """``simscan pairs`` lists the same pairs whether or not ``groups`` ran before and at any budget;
    ``groups`` gives the same output from the cache the pairs filled as without it."""
    idx = tmp_path / "copy.sqlite3"
    idx.write_bytes(indexes["varied"].read_bytes())

    def run(*args: str) -> str:
        assert main([*args, "--index", str(idx)]) == 0
        return capsys.readouterr().out

    groups_alone = run("groups", "--format", "json")
    with Index.open(idx, readonly=True) as ix:
        assert ix.connection.execute("SELECT count(*) FROM results").fetchone()[0] == 0
    pairs = run("pairs", "--format", "json", "--no-cache")
    assert pairs and pairs == run("pairs", "--format", "json", "--no-cache", "--memory", "1")
    assert pairs == run("pairs", "--format", "json")  # computed and stored
    assert run("groups", "--format", "json") == groups_alone  # from the cache
    assert groups_alone.count("\n") >= 5


def test_the_page_cache_is_small_during_the_search_and_restored(indexes: dict[str, Path]) -> None:
    with Index.open(indexes["varied"], readonly=True) as ix:
        before = ix.connection.execute("PRAGMA cache_size").fetchone()[0]
        with _small_page_cache(ix):
            assert ix.connection.execute("PRAGMA cache_size").fetchone()[0] == -2048 != before
        assert ix.connection.execute("PRAGMA cache_size").fetchone()[0] == before
