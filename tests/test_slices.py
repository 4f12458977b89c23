"""The pair search in slices (``similarity.slices``): whatever its memory budget -- one partition held
in memory, or a budget so small that the values go through many partitions and files and the
evidence through many chunks -- it gives the pairs, scores and groups of the search on the whole CSR
in memory (the search before slices), bit for bit, on real files in a real index."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from similarity_support import index_tree, words
from test_code_view import _NAMES, _RENAMED, _rename, java_program

from simscan.index import Index
from simscan.similarity import SimilarityParams, slices
from simscan.similarity.compare import SCORE_KIND
from simscan.similarity.core import PairArrays
from simscan.similarity.engine import (
    _identity,
    _places_loader,
    find_pair_set,
    groups_of_pair_set,
    ignore_texts,
)
from simscan.similarity.views import compute_pair_arrays_by_view, drop_values_with


def _tree(root: Path) -> None:
    """Texts sharing passages (edited versions, excerpts, a passage quoted in many), a header most
    files carry, near-copies holding it (scored on their whole sets when the header is common), copies (the same bytes; the same text in UTF-16), renamed Java programs (code view),
    binary files, an empty file and one file under two names (a hard link)."""
    root.mkdir()
    header = words(70, 220)
    passages = [words(100 + i, 140) for i in range(8)]
    for k in range(36):
        body = " ".join(passages[(k * 3 + j) % 8] for j in range(1 + k % 4)) + " " + words(k, 60 + 25 * (k % 7))
        if k % 5 == 0:  # long enough for the coarsest winnowing window
            body += " " + words(1000 + k, 900)
        (root / f"t{k:02d}.txt").write_text((header + "\n" if k % 3 else "") + body)
    for k in range(3):  # near-copies holding the header, edited in their own text (close simhashes)
        own = words(2000 + k, 90).split()
        (root / f"v{k}a.txt").write_text(header + "\n" + " ".join(own))
        own[45] = "changed"
        (root / f"v{k}b.txt").write_text(header + "\n" + " ".join(own))
    (root / "copy.txt").write_bytes((root / "t07.txt").read_bytes())
    (root / "utf16.txt").write_text((root / "t11.txt").read_text(), encoding="utf-16")
    (root / "excerpt.txt").write_text(passages[2][:400])
    for k in range(4):
        (root / f"P{k}.java").write_text(java_program(10 + k % 2, _NAMES, f"P{k}"))
        (root / f"R{k}.java").write_text(_rename(java_program(10 + k % 2, _NAMES, f"P{k}"), _NAMES, _RENAMED))
    rng = np.random.default_rng(5)
    blob = rng.integers(0, 256, 200_000, dtype=np.uint8).tobytes()
    (root / "a.bin").write_bytes(blob)
    (root / "b.bin").write_bytes(blob[:150_000] + rng.integers(0, 256, 30_000, dtype=np.uint8).tobytes())
    (root / "empty.txt").write_text("")
    os.link(root / "t05.txt", root / "t05-link.txt")


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("slices")
    _tree(base / "t")
    idx = base / "i.sqlite3"
    index_tree(idx, base / "t")
    return idx


def _in_memory(ix: Index, params: SimilarityParams, min_similarity: float, roots=()) -> PairArrays:
    """The search before slices: every stored set (with spans) in one CSR, its places read for the
    evidence at once."""
    files = ix.files()
    got: list[np.ndarray] = []
    ids, offsets, values = ix.fingerprints(None, kind=SCORE_KIND, spans=got)
    spans = got[0]
    if params.ignore_values:
        offsets, values, spans = drop_values_with(offsets, values, spans, params.ignored())
    return compute_pair_arrays_by_view(
        files, ids, offsets, values, min_similarity=min_similarity, params=params, identity=_identity(ix, files),
        reference_roots=roots, spans=spans, places=_places_loader(ix, files, ids, ix.generation()),
    )


def _rows(pa: PairArrays) -> list[tuple]:
    return sorted(zip(*(getattr(pa, f).tolist() for f in PairArrays.__slots__), strict=True))


def _params(root: Path) -> list[SimilarityParams]:
    return [
        SimilarityParams(),
        SimilarityParams(common_min_df=4),  # the header and the quoted passages are common
        SimilarityParams(pair_budget=40),  # the cut-off lowered: a second pass
        SimilarityParams(code_view=False, min_passage=0),
        SimilarityParams(ignore_values=ignore_texts([root / "t01.txt"])),
    ]


def test_sliced_equals_the_search_in_memory(index_path: Path) -> None:
    """Pairs (every column: scores, kinds, views, passages) and groups, at several settings, with a
    budget that holds everything and with the smallest one."""
    with Index.open(index_path, readonly=True) as ix:
        files = ix.files()
        root = Path(files.paths[0]).parent
        seen_kinds: set[int] = set()
        for params in _params(root):
            for at in (0.0, 15.0):
                want = _in_memory(ix, params, at)
                seen_kinds |= set(want.kind.tolist())
                groups = None
                for memory in (1 << 30, slices.MIN_MEMORY):
                    ps = find_pair_set(ix, min_similarity=at, params=params, cache=False, memory=memory)
                    assert _rows(ps.pairs) == _rows(want), (params, at, memory)
                    got = [(g.reference.path, [(m.path, m.similarity, m.kind) for m in g.members])
                           for g in groups_of_pair_set(ps, min_similarity=max(at, 15.0))]
                    assert groups is None or got == groups
                    groups = got
                assert want.a.size >= 5
        assert seen_kinds == {0, 1, 2, 3}  # exact, content, near, contained
        # Reference folders choose which path of the hard-linked file takes part.
        roots = [str(root)]
        ps = find_pair_set(ix, min_similarity=0, cache=False, memory=slices.MIN_MEMORY, reference_roots=roots)
        assert _rows(ps.pairs) == _rows(_in_memory(ix, SimilarityParams(), 0, roots))


def test_the_smallest_budget_spills_in_many_partitions(index_path: Path, tmp_path: Path) -> None:
    """With the smallest budget the values go to files in many partitions, each (value, file, span,
    view) exactly once, and the files are gone after; with a large one nothing is written."""
    with Index.open(index_path, readonly=True) as ix:
        files = ix.files()
        ids, offsets, values = ix.fingerprints(None, kind="all")
        spans = ix.spans(ids, offsets)
        row = np.searchsorted(np.asarray(files.ids), ids)
        want = sorted(zip(values.tolist(), np.repeat(row, np.diff(offsets)).tolist(), spans.tolist(), strict=True))
        for memory, spills in ((slices.MIN_MEMORY, True), (1 << 30, False)):
            with slices.spilled(ix, files, memory, spill_dir=tmp_path) as spill:
                assert spill.spilled == spills and (spill.parts > 8) == spills
                assert spill.has_code and spill.values == values.size
                got = []
                for p in range(spill.parts):
                    v, r, b = spill.partition(p)
                    assert (slices._partition_ids(v, spill.parts) == p).all()
                    got += zip(v.tolist(), r.tolist(), (b & 0x7F).tolist(), strict=True)
                assert sorted(got) == [(v, r, min(s, 127)) for v, r, s in want]
                assert len(list(tmp_path.iterdir())) == (1 if spills else 0)
            assert list(tmp_path.iterdir()) == []


def test_a_cancelled_read_leaves_no_files(index_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from simscan.progress import Cancelled, CancelToken

    monkeypatch.setattr(slices, "_READ_ROWS", 4)
    token = CancelToken()
    written = []

    def report(phase: str, done: int, total: int) -> None:
        written.append(any(tmp_path.iterdir()))
        if any(written):
            token.cancel()  # once the spill has written files

    with Index.open(index_path, readonly=True) as ix:
        files = ix.files()
        with pytest.raises(Cancelled):
            slices.Spill(ix, files, slices.MIN_MEMORY, cancel=token, report=report, spill_dir=tmp_path)
    assert any(written) and list(tmp_path.iterdir()) == []


def test_pair_chunks_cover_every_pair_within_the_limit() -> None:
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(1, 40))
        # (some long enough that a chunk outgrows the first windows the search looks at)
        m = int(rng.integers(0, 200)) if trial % 10 else int(rng.integers(1500, 5000))
        ra, rb = rng.integers(0, n, m), rng.integers(0, n, m)
        size = rng.integers(0, 10, n)
        limit = int(rng.integers(0, 60)) if trial % 20 else int(size.sum())
        chunks = slices.pair_chunks(ra, rb, size, limit)
        got = np.sort(np.concatenate(chunks)) if chunks else np.empty(0, np.int64)
        assert got.tolist() == list(range(m))
        for k, c in enumerate(chunks):
            held = int(size[np.union1d(ra[c], rb[c])].sum())
            assert c.size == 1 or held <= limit
            if k + 1 < len(chunks):  # a chunk stops only where the next pair would not fit
                nxt = np.concatenate((c, chunks[k + 1][:1]))
                assert int(size[np.union1d(ra[nxt], rb[nxt])].sum()) > limit


def test_memory_budget_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIMSCAN_MEMORY", raising=False)
    assert slices.memory_budget() == slices.DEFAULT_MEMORY
    assert slices.memory_budget(1 << 30) == 1 << 30
    assert slices.memory_budget(5) == slices.MIN_MEMORY
    monkeypatch.setenv("SIMSCAN_MEMORY", "256")
    assert slices.memory_budget() == 256 << 20
    for bad in ("lots", "64M", "0", "-1", "nan", "inf"):  # (the command line says so: below)
        monkeypatch.setenv("SIMSCAN_MEMORY", bad)
        assert slices.memory_budget() == slices.DEFAULT_MEMORY
        with pytest.raises(ValueError):
            slices.memory_from_env()
    assert [slices.partitions_for(v, 1 << 20) for v in (0, 8192, 8193, 10**12)] == [1, 1, 2, slices.MAX_PARTITIONS]


def test_sets_read_again_equal_the_partitions(index_path: Path) -> None:
    """``SlicedSets`` reads a few files' whole sets again (the simhash pairs scored on full sets):
    per view, less the ignored values, as the CSR split by view gives them."""
    from simscan.fingerprint.views import CODE, TEXT
    from simscan.similarity.views import split_csr

    with Index.open(index_path, readonly=True) as ix:
        files = ix.files()
        got: list[np.ndarray] = []
        ids, offsets, values = ix.fingerprints(None, kind="all", spans=got)
        ignored = np.unique(values[::7])
        offsets_d, values_d, spans_d = drop_values_with(offsets, values, got[0], ignored)
        by_view = split_csr(files, ids, offsets_d, values_d, spans=spans_d)
        with slices.spilled(ix, files, slices.MIN_MEMORY) as spill:
            for view, (off, val, spn) in ((TEXT, by_view[0]), (CODE, by_view[1])):
                sets = slices.SlicedSets(spill, ix, view, ignored)
                handles = sets.rows(files)
                assert (handles >= 0).sum() == ids.size
                pick = np.flatnonzero(handles >= 0)[::3]
                o, v, s = sets._sets(handles[pick])
                for k, h in enumerate(handles[pick].tolist()):
                    r = int(np.searchsorted(ids, files.ids[h]))
                    assert v[o[k] : o[k + 1]].tolist() == val[off[r] : off[r + 1]].tolist()
                    assert s[o[k] : o[k + 1]].tolist() == spn[off[r] : off[r + 1]].tolist()


def test_texts_to_ignore_leave_the_sliced_search_alike(index_path: Path) -> None:
    """A file all of whose text is ignored has nothing left to pair, sliced or not."""
    with Index.open(index_path, readonly=True) as ix:
        files = ix.files()
        target = next(p for p in files.paths if p.endswith("excerpt.txt"))
        params = replace(SimilarityParams(), ignore_values=ignore_texts([target]))
        ps = find_pair_set(ix, min_similarity=0, params=params, cache=False, memory=slices.MIN_MEMORY)
        row = files.paths.index(target)
        near = (ps.pairs.kind >= 2) & ((ps.pairs.a == row) | (ps.pairs.b == row))
        assert not near.any()
        assert _rows(ps.pairs) == _rows(_in_memory(ix, params, 0))


@pytest.mark.parametrize("how", ["cancel", "error"])
def test_a_search_stopped_midway_leaves_no_files(index_path: Path, how: str) -> None:
    """Cancelled, or failing (here its progress sink raises), once the partitions wait in files beside
    the index and the pairs are being counted: the files are removed, the error or cancel goes on."""
    from simscan.progress import Cancelled, CancelToken

    folder = index_path.parent
    token = CancelToken()
    seen: list[tuple[str, bool]] = []

    def progress(p) -> None:
        spilled = any(any(d.iterdir()) for d in folder.glob(".simscan-spill-*"))
        seen.append((p.phase, spilled))
        if p.phase in ("pairs", "passages") and spilled:
            if how == "cancel":
                token.cancel()
            else:
                raise RuntimeError("stopped midway")

    with Index.open(index_path, readonly=True) as ix, pytest.raises(Cancelled if how == "cancel" else RuntimeError):
        find_pair_set(ix, min_similarity=0, cache=False, memory=slices.MIN_MEMORY, progress=progress, cancel=token)
    assert ("pairs", True) in seen
    assert list(folder.glob(".simscan-spill-*")) == []


def test_the_cli_budget_gives_the_same_output(index_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``pairs`` / ``groups`` with ``--memory`` or ``SIMSCAN_MEMORY``: the search gets that budget and the
    output does not change."""
    from simscan.cli import main
    from simscan.similarity import engine

    budgets: list[int] = []
    real = engine.spilled

    def watched(index, files, memory, **kwargs):
        budgets.append(memory)
        return real(index, files, memory, **kwargs)

    monkeypatch.setattr(engine, "spilled", watched)
    monkeypatch.delenv("SIMSCAN_MEMORY", raising=False)
    for command in ("pairs", "groups"):
        outputs = []
        for option, env in (([], None), (["--memory", "1"], None), ([], "0.05")):
            if env is not None:
                monkeypatch.setenv("SIMSCAN_MEMORY", env)
            args = [command, "--index", str(index_path), "--no-cache", "--format", "json", "-m", "0", *option]
            assert main(args) == 0
            outputs.append(capsys.readouterr().out)
            monkeypatch.delenv("SIMSCAN_MEMORY", raising=False)
        assert outputs[0].strip() and outputs[1] == outputs[0] and outputs[2] == outputs[0]
    assert budgets == [slices.DEFAULT_MEMORY, 1 << 20, slices.MIN_MEMORY] * 2
    with pytest.raises(SystemExit):
        main(["pairs", "--index", str(index_path), "--memory", "0"])
    # A variable that is not a budget is named, and the default used.
    monkeypatch.setenv("SIMSCAN_MEMORY", "64M")
    assert main(["groups", "--index", str(index_path), "--no-cache", "--format", "json", "-m", "0"]) == 0
    out, err = capsys.readouterr()
    assert out == outputs[0] and "SIMSCAN_MEMORY='64M' is not a number of MB" in err
    assert budgets[-1] == slices.DEFAULT_MEMORY


@pytest.mark.parametrize("checked", [True, False])
def test_the_file_table_read_in_batches_equals_one_read(index_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        checked: bool) -> None:
    """``Index.files`` builds the table a few rows at a time (its peak of memory is the table and one
    batch of rows): every column equals the table built from all the rows at once."""
    import dataclasses

    from simscan.index import store

    with Index.open(index_path, readonly=True) as ix:
        ix.checked = checked  # (without checks: the query of an index older than schema 7)
        whole = ix.files()
        if checked:
            with ix._reading():
                rows, _ = ix._verified_rows(ix.connection.execute(f"SELECT {store._CHECKED_COLS} FROM files ORDER BY id"))
            want = store._table(rows, store._CHECKED_POS)
        else:
            want = store._table(ix.connection.execute(
                f"SELECT {ix._FILE_COLS} FROM files WHERE error IS NULL AND algorithm_version = ? ORDER BY id",
                (store.ALGORITHM_VERSION,)).fetchall())
        monkeypatch.setattr(store, "_TABLE_ROWS", 3)
        for got in (whole, ix.files()):
            for f in dataclasses.fields(store.FileTable):
                a, b = getattr(got, f.name), getattr(want, f.name)
                if isinstance(b, np.ndarray):
                    assert a.dtype == b.dtype and a.tolist() == b.tolist(), f.name
                else:
                    assert a == b, f.name
        assert len(want) > 3 * 10


def test_the_spill_folders_of_ended_processes_are_removed(index_path: Path, tmp_path: Path) -> None:
    """A search killed before removing its files leaves a folder named with its process id: the next
    search that spills there removes it; a folder of a running process (another search) stays, and so
    does everything else."""
    import subprocess
    import sys

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                           text=True, check=True)
    dead = tmp_path / f"{slices.SPILL_PREFIX}{int(ended.stdout)}-abc"
    alive = tmp_path / f"{slices.SPILL_PREFIX}{os.getppid()}-def"
    other = tmp_path / ".simscan-spill-notes"
    for d in (dead, alive, other):
        d.mkdir()
        (d / "flush0.v").write_bytes(b"x" * 8)
    with Index.open(index_path, readonly=True) as ix, slices.spilled(ix, ix.files(), slices.MIN_MEMORY,
                                                                     spill_dir=tmp_path) as spill:
        assert spill.spilled
        mine = [d for d in tmp_path.iterdir() if d.name.startswith(f"{slices.SPILL_PREFIX}{os.getpid()}-")]
        assert len(mine) == 1
    assert sorted(d.name for d in tmp_path.iterdir()) == sorted([alive.name, other.name])


def test_a_full_disk_keeps_the_partitions_in_memory(index_path: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """When the spill's files cannot be written (here: they lead to /dev/full, which answers every
    write with ENOSPC), what was written is removed, the values stay in memory past the budget and the
    pairs are the same."""
    import errno
    import tempfile

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    full = tmp_path / "spill"
    full.mkdir()
    for n in range(4):
        for ext in ("v", "r", "s"):
            (full / f"flush{n}.{ext}").symlink_to("/dev/full")
    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: str(full))
    with Index.open(index_path, readonly=True) as ix:
        want = _rows(find_pair_set(ix, min_similarity=0, cache=False, memory=1 << 30).pairs)
        with slices.spilled(ix, ix.files(), slices.MIN_MEMORY, spill_dir=tmp_path) as spill:
            assert not spill.spilled and spill.unwritable is not None and spill.unwritable.errno == errno.ENOSPC
            assert not any(os.path.lexists(full / f"flush0.{ext}") for ext in "vrs")  # (the failed flush's)
            assert sum(v.size for p in range(spill.parts) for v in spill.partition(p)[:1]) == spill.values
        assert not full.exists()
        got = find_pair_set(ix, min_similarity=0, cache=False, memory=slices.MIN_MEMORY)
        assert _rows(got.pairs) == want


def test_whole_set_intersections_read_in_chunks_equal_one_read(index_path: Path) -> None:
    """The simhash-close pairs' whole-set intersections are read in chunks under the budget (a million
    files' close pairs read at once took ~180 MB above the search's peak): the counts of every pair
    equal those of one read, with a budget that cuts them into many chunks."""
    from simscan.similarity.core import CsrSets, _intersect_in_chunks, _set_chunks

    with Index.open(index_path, readonly=True) as ix:
        got: list[np.ndarray] = []
        ids, offsets, values = ix.fingerprints(None, kind=SCORE_KIND, spans=got)
        sets = CsrSets(ids, offsets, values, got[0])
        rows = np.arange(ids.size)
        text = np.ones(ids.size, dtype=bool)
        size = np.diff(offsets)
        rng = np.random.default_rng(3)
        ra = rng.integers(0, ids.size, 300)
        rb = rng.integers(0, ids.size, 300)
        lv = rng.integers(0, 3, 300)
        for view in (0, 1):
            want = sets.intersect(ra, rb, text[ra], text[rb], lv, view, np.empty(0, np.uint64))
            assert want.sum() > 0
            # 256 values: every pair a chunk of its own (most files alone hold more); 2,048: chunks of
            # several pairs sharing files
            for memory in (None, 1 << 30, 2048 * 64 * 4, 256 * 64 * 4):
                chunks = _set_chunks(ra, rb, size, memory)
                assert (chunks is None) == (memory in (None, 1 << 30))
                assert chunks is None or len(chunks) > 5
                if memory == 2048 * 64 * 4:
                    assert max(c.size for c in chunks) > 1
                if chunks is not None:
                    assert sorted(np.concatenate(chunks).tolist()) == list(range(ra.size))  # each pair once
                got_counts = _intersect_in_chunks(sets, rows, ra, rb, text, lv, view, np.empty(0, np.uint64), size,
                                                  memory)
                assert got_counts.tolist() == want.tolist()


def test_a_cut_off_lowered_by_the_pair_budget_is_told_and_cached(index_path: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """When the posting lists under the common cut-off would make more pairs than the budget allows, the
    search lowers the cut-off (text held by more files counts nowhere): the pair set says so
    (``PairSet.cutoff``), from the results cache too, and ``pairs`` / ``groups`` say it on stderr."""
    import shutil

    from simscan.cli import main, similarity_cmds

    idx = tmp_path / "i.sqlite3"
    shutil.copy(index_path, idx)
    low = SimilarityParams(pair_budget=40)
    with Index.open(idx, readonly=True) as ix:
        assert find_pair_set(ix, cache=False).cutoff is None
        for memory in (1 << 30, slices.MIN_MEMORY):
            fresh = find_pair_set(ix, params=low, cache=False, memory=memory)
            assert fresh.cutoff is not None and fresh.cutoff[0] < fresh.cutoff[1] == low.common_cutoff(len(fresh.files))
        stored = find_pair_set(ix, params=low)
        cached = find_pair_set(ix, params=low)
    assert stored.stored and cached.cached and cached.cutoff == stored.cutoff == fresh.cutoff
    real = similarity_cmds.params_from_args
    for budget, told in ((None, False), (40, True)):
        if budget is not None:
            monkeypatch.setattr(similarity_cmds, "params_from_args",
                                lambda a, b=budget: replace(real(a), pair_budget=b))
        for cmd in (["pairs"], ["groups"], ["groups", "--format", "json"], ["pairs", "--no-cache"]):
            assert main([*cmd, "--index", str(idx)]) == 0
            err = capsys.readouterr().err
            assert ("counted nowhere" in err) == told, (cmd, err)
            if told:
                assert f"more than {fresh.cutoff[0]:,} files (usually {fresh.cutoff[1]:,})" in err


def test_families_of_versions_keep_the_cut_off_while_their_distinct_pairs_fit(tmp_path: Path) -> None:
    """Families of versions: each value is held by most of its family, so the posting lists make many
    more (file, file) incidences than distinct pairs.  A bound on the distinct pairs between the two
    leaves the cut-off where it is (the pairs of the unbounded search, sliced too); the same number
    as the bound on the work (incidences), or a bound under the distinct pairs, lowers it, and the
    pair set says so."""
    from collections import defaultdict

    root = tmp_path / "fam"
    root.mkdir()
    for f in range(8):
        base = words(3000 + f, 400).split()
        for v in range(12):
            text = list(base)
            text[(37 * v + 11) % len(text)] = f"edited{v}"
            (root / f"f{f}v{v:02d}.txt").write_text(" ".join(text))
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    with Index.open(idx, readonly=True) as ix:
        free = find_pair_set(ix, cache=False)
        # Plainly: the incidences and distinct pairs of the values under the cut-off.
        ids, offsets, values = ix.fingerprints(None, kind="all")
        holders: dict[int, list[int]] = defaultdict(list)
        for k, i in enumerate(ids.tolist()):
            for v in values[offsets[k] : offsets[k + 1]].tolist():
                holders[v].append(i)
        under = [h for h in holders.values() if len(h) <= SimilarityParams().common_cutoff(ids.size)]
        incidences = sum(len(h) * (len(h) - 1) // 2 for h in under)
        distinct = len({(a, b) for h in under for i, a in enumerate(h) for b in h[i + 1 :]})
        assert distinct == 8 * 66 and incidences > 20 * distinct
        budget = 2 * distinct
        assert free.cutoff is None and len(free.pairs.a) == 8 * 66
        for memory in (1 << 30, slices.MIN_MEMORY):
            kept = find_pair_set(ix, params=SimilarityParams(pair_budget=budget), cache=False, memory=memory)
            assert kept.cutoff is None and _rows(kept.pairs) == _rows(free.pairs), memory
            for low in (SimilarityParams(pair_budget=budget, pair_work=budget),  # the work bound
                        SimilarityParams(pair_budget=distinct // 2)):  # too many distinct pairs
                lowered = find_pair_set(ix, params=low, cache=False, memory=memory)
                assert lowered.cutoff is not None and lowered.cutoff[0] < lowered.cutoff[1], (low, memory)
                assert len(lowered.pairs.a) < len(free.pairs.a)
