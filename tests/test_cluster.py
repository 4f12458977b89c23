"""simscan on a Dask cluster: a real ``LocalCluster`` of 2 worker processes, real trees, a real store.

The local commands are the reference: every result of ``simscan cluster ...`` is compared with
what ``simscan pairs|groups|query`` print for the same files, byte for byte.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed", reason="the cluster extra (dask[distributed]) is not installed")
pytest.importorskip("pyarrow", reason="the cluster extra (pyarrow) is not installed")

import pyarrow.parquet as pq
from helpers_tree import bump_mtime, make_tree, words

from simscan.cli import main
from simscan.cluster.connect import connect
from simscan.cluster.scan import ClusterScanRequest, run_cluster_scan
from simscan.cluster.search import find_pair_set
from simscan.cluster.store import MANIFEST, Store
from simscan.progress import CancelToken, Progress
from simscan.similarity.core import to_pairs

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "evalcorpus" / "corpus"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the evaluation corpus is not at {CORPUS}")
#: A part of the corpus that keeps the suite fast and has every kind of pair: plagiarised answers
#: (clough), Java sources and their renamed copies (irplag: the code view), revisions (peps), and
#: the same pages in UTF-8 and UTF-16 (content copies).
SUBSET = ("clough", "irplag", "peps", "encodings/cjk_transcoded")


@pytest.fixture(scope="module")
def client():
    with connect(None, workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def address(client) -> str:
    return client.scheduler.address


def plain(ps) -> list[tuple]:
    """The pairs of a pair set, ids left out (a store numbers files otherwise than an index)."""
    return [(p.a_path, p.b_path, p.resemblance, p.containment_a, p.containment_b, p.simhash_distance, p.exact, p.kind,
             p.view, p.longest_passage, p.shared_chars) for p in to_pairs(ps.pairs, ps.files)]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def scan_both(capsys, roots: list[Path], idx: Path, store: Path, address: str, *more: str) -> None:
    assert run(capsys, "scan", *map(str, roots), "--index", str(idx), "--quiet")[0] == 0
    assert run(capsys, "cluster", "scan", *map(str, roots), "--store", str(store), "--scheduler", address,
               "--quiet", *more)[0] == 0


def same_output(capsys, idx: Path, store: Path, address: str, *args: str, ordered: bool | None = None) -> str:
    """The output of ``simscan ARGS`` on the index and of ``simscan cluster ARGS`` on the store,
    checked equal: byte for byte when ``ordered``, else as sorted lines (default: ordered for groups).
    Pairs of equal scores are listed in the order of the files' ids, which two scans can number
    differently (the local scan numbers documents when their reading process is done with them,
    a rescan numbers new and changed files last); groups do not depend on it."""
    if ordered is None:
        ordered = args[0] == "groups"
    rc_l, local, err_l = run(capsys, *args, "--index", str(idx))
    rc_c, cluster, err_c = run(capsys, "cluster", *args, "--store", str(store), "--scheduler", address)
    assert (rc_c, err_c) == (rc_l, err_l)
    if ordered:
        assert cluster == local
    else:
        assert sorted(cluster.splitlines()) == sorted(local.splitlines())
    return local


@needs_corpus
def test_cluster_equals_local_on_the_corpus(tmp_path, capsys, address):
    roots = [CORPUS / s for s in SUBSET]
    idx, store = tmp_path / "i.sqlite3", tmp_path / "store"
    scan_both(capsys, roots, idx, store, address, "--partitions", "16")  # (the whole corpus test: the default)
    for fmt in ("text", "json", "csv"):
        out = same_output(capsys, idx, store, address, "pairs", "--format", fmt)
        same_output(capsys, idx, store, address, "groups", "--format", fmt)
    assert len(out.splitlines()) > 1000  # (csv: a header and a row a pair)
    assert ",code" in out  # the code view scored some pairs
    same_output(capsys, idx, store, address, "pairs", "-m", "60", "--representatives-only", "--format", "json")
    same_output(capsys, idx, store, address, "pairs", "--no-code-view", "--format", "json")
    same_output(capsys, idx, store, address, "groups", "-m", "40", "--reference", str(CORPUS / "peps"))
    question = CORPUS / "clough" / "orig_taska.txt"
    same_output(capsys, idx, store, address, "pairs", "--ignore-text", str(question), "--format", "json")
    excerpt = tmp_path / "excerpt.txt"  # (a short file: every holder of its values is looked up)
    excerpt.write_bytes((CORPUS / "clough" / "orig_taskb.txt").read_bytes()[:400])
    queried = [str(CORPUS / "clough" / "g0pA_taska.txt"), str(CORPUS / "irplag" / "case-01" / "original" / "T1.java"),
               str(next((CORPUS / "peps").glob("*/rev0_*"))), str(Path(__file__)), str(excerpt)]
    out = same_output(capsys, idx, store, address, "query", *queried, "--format", "json")
    assert out.count("\n") > 10


@needs_corpus
@pytest.mark.parametrize(("min_df", "work"), [(20, 1 << 28), (20, 300), (2, 300)])
def test_same_pairs_when_the_budget_lowers_the_common_cutoff(tmp_path, capsys, client, min_df, work):
    """The cut-off lowered by the bound on distinct pairs or by the one on the work (incidences; the
    second pass) is the local one; at the least cut-off, 2, the pairs are kept whatever the bounds
    (its runs of two files make more incidences than the work)."""
    from simscan.index import Index
    from simscan.similarity import SimilarityParams
    from simscan.similarity import find_pair_set as local_pair_set

    roots = [CORPUS / "clough", CORPUS / "peps"]
    idx, store = tmp_path / "i.sqlite3", tmp_path / "store"
    assert run(capsys, "scan", *map(str, roots), "--index", str(idx), "--quiet")[0] == 0
    run_cluster_scan(client, ClusterScanRequest(roots, store, partitions=8))
    params = SimilarityParams(common_min_df=min_df, pair_budget=300, pair_work=work)
    with Index.open(idx, readonly=True) as index:
        want = local_pair_set(index, cache=False, params=params, min_similarity=5)
        full = local_pair_set(index, cache=False, min_similarity=5)
    got = find_pair_set(client, Store.open(store), params=params, min_similarity=5)
    assert plain(got) == plain(want)
    assert len(plain(want)) < len(plain(full))  # the budget bit (or the cut-off of 2)
    assert got.cutoff == want.cutoff and (want.cutoff is not None) == (min_df > 2) and full.cutoff is None


@pytest.mark.slow
@needs_corpus
def test_cluster_equals_local_on_the_whole_corpus(tmp_path, capsys, address):
    idx, store = tmp_path / "i.sqlite3", tmp_path / "store"
    scan_both(capsys, [CORPUS], idx, store, address)
    out = same_output(capsys, idx, store, address, "pairs", "--format", "json")
    assert len(out.splitlines()) > 4000
    same_output(capsys, idx, store, address, "groups")


def edit_tree(root: Path) -> dict[str, Path]:
    """A tree of similar texts (a base, edits, copies, excerpts) in several folders."""
    rng = np.random.default_rng(7)
    out = {}
    for d in range(4):
        for i in range(12):
            base = words(rng, 3000 + 200 * i)
            p = root / f"d{d}" / f"doc{i:02d}.txt"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(base)
            out[f"{d}/{i}"] = p
            if i % 3 == 0:
                (root / f"d{d}" / f"doc{i:02d}-edit.txt").write_bytes(base[:1500] + words(rng, 200) + base[1500:])
            if i % 4 == 0:
                (root / f"d{d}" / f"doc{i:02d}-copy.txt").write_bytes(base)
                (root / f"d{d}" / f"doc{i:02d}-part.txt").write_bytes(base[700:2200])
    return out


def store_paths_of_last_segment(store: Path) -> list[str]:
    s = Store.open(store)
    paths = [bytes(p) for f in s.row_files(s.manifest.segments[-1])
             for p in pq.read_table(f).column("path").to_pylist()]
    return sorted(map(os.fsdecode, paths))


@needs_corpus
def test_stored_sets_and_their_evidence_are_the_index_ones(tmp_path, client):
    """The store keeps every file's values with their spans and places as the local index does, and
    ``StoreSets.intersect`` (the simhash neighbours' full sets) counts what ``CsrSets.intersect`` counts
    at every level, on both views, the texts to ignore left out."""
    from simscan.cluster.search import StoreSets, sets_loader
    from simscan.index import Index
    from simscan.scanner import ScanRequest, run_scan
    from simscan.similarity.core import CsrSets
    from simscan.similarity.views import drop_values_with, split_csr

    root = tmp_path / "tree"
    edit_tree(root)
    shutil.copytree(CORPUS / "irplag" / "case-02", root / "java")  # (programs: a code view)
    idx, store_dir = tmp_path / "i.sqlite3", tmp_path / "store"
    run_scan(ScanRequest([root], index_path=idx))
    run_cluster_scan(client, ClusterScanRequest([root], store_dir, partitions=4))
    store = Store.open(store_dir)
    sfiles = store.file_table()
    with Index.open(idx, readonly=True) as index:
        files = index.files()
        ids, offsets, values, meta = index.stored_sets(files.ids)
    # The same files (matched by path): sid[k] is the store's id of the index's set k.
    sid_of = dict(zip(sfiles.paths, sfiles.ids.tolist()))
    path_of = dict(zip(files.ids.tolist(), files.paths))
    sid = np.array([sid_of[path_of[f]] for f in ids.tolist()], np.int64)
    got_ids, got_off, got_val, got_meta = store.stored_sets(sid)
    row = np.searchsorted(got_ids, sid)
    assert np.array_equal(got_ids[row], sid)
    for k in range(ids.size):
        a, b = slice(offsets[k], offsets[k + 1]), slice(got_off[row[k]], got_off[row[k] + 1])
        assert np.array_equal(values[a], got_val[b])
        for col in ("d", "unit", "char", "chars"):
            assert np.array_equal(getattr(meta, col)[a], getattr(got_meta, col)[b]), col
    assert int(offsets[-1]) > 10_000 and (meta.d < 128).any() and (meta.char > 0).any()

    ignored = np.sort(values[offsets[3] : offsets[4]])  # (a file's text to ignore)
    rng = np.random.default_rng(5)
    ra, rb = np.triu_indices(ids.size, 1)  # every pair
    level = rng.integers(0, 8, ra.size)
    text_of = dict(zip(files.ids.tolist(), files.is_text.tolist()))
    text = np.array([text_of[f] for f in ids.tolist()], bool)
    off, val, spans = drop_values_with(offsets, values.copy(), meta.d, ignored)
    for view, local in enumerate(split_csr(files, ids, off, val, spans=spans)):
        assert local is not None  # both views hold values
        want = CsrSets(ids, *local).intersect(ra, rb, text[ra], text[rb], level, view, ignored)
        got = StoreSets(client, store, view, ignored, sets_loader(store, sfiles)).intersect(
            sid[ra], sid[rb], text[ra], text[rb], level, view, ignored)
        assert np.array_equal(got, want)
        assert (want > 0).sum() > 1000 and len(set(want.tolist())) > 30  # (pairs of all kinds)


def test_a_partitions_pairs_merge_as_they_come_and_stop_at_the_key_limit(tmp_path, client, monkeypatch):
    """Families of versions: in every partition of a store their posting lists make many more
    incidences than distinct pairs.  A pair search task merges its pairs' batches as they come (at
    most about twice its distinct pairs wait for a merge, not every incidence), gives the pairs it
    gives without a limit under a limit equal to them, and ``over`` under one pair fewer."""
    from simscan.cluster import tasks
    from simscan.fingerprint.views import TEXT
    from simscan.similarity import SimilarityParams, arrays, core

    root = tmp_path / "fam"
    root.mkdir()
    rng = np.random.default_rng(8)
    for f in range(6):
        base = words(rng, 2400).split()
        for v in range(12):
            text = list(base)
            text[(37 * v + 11) % len(text)] = b"edited%d" % v
            (root / f"f{f}v{v:02d}.txt").write_bytes(b" ".join(text))
    store_dir = tmp_path / "store"
    run_cluster_scan(client, ClusterScanRequest([root], store_dir, partitions=4))
    store = Store.open(store_dir)
    files = store.file_table()
    ids = np.asarray(files.ids, np.int64)
    cut = SimilarityParams().common_cutoff(ids.size)
    chunk, fold = 64, 16  # (small batches of pairs, merged early: as a large partition's are)
    pairs_in_runs = arrays.pairs_in_runs
    monkeypatch.setattr(arrays, "pairs_in_runs", lambda starts, lengths: pairs_in_runs(starts, lengths, chunk))
    monkeypatch.setattr(core, "FOLD_KEYS", fold)
    merge, waited = tasks.merge_counts, []

    def merging(keys, counts):
        waited.append(sum(k.size for k in keys))
        return merge(keys, counts)

    monkeypatch.setattr(tasks, "merge_counts", merging)
    for p in range(store.manifest.partitions):
        args = ([str(f) for f in store.part_files(p)], ids, np.asarray(files.is_text, bool), None, TEXT,
                np.zeros(0, np.uint64))
        kw = {"cutoff": cut, "cut": cut, "budget": None, "full": True}
        waited.clear()
        whole = tasks.partition_counts(*args, **kw)
        distinct = whole.keys.size
        lengths = np.arange(whole.hist.size)[: cut + 1]
        incidences = int((whole.hist[: cut + 1] * lengths * (lengths - 1) // 2).sum())
        assert distinct > 10 * fold and incidences > 10 * distinct
        longest = int(lengths[whole.hist[: cut + 1] > 0].max())
        batch = max(chunk, longest * (longest - 1) // 2)  # (a batch of pairs never splits a run)
        assert max(waited) <= 2 * distinct + batch
        at = tasks.partition_counts(*args, **kw, key_limit=distinct)
        assert not at.over and np.array_equal(at.keys, whole.keys) and np.array_equal(at.counts, whole.counts)
        under = tasks.partition_counts(*args, **kw, key_limit=distinct - 1)
        assert under.over and under.keys is None and under.kept is None


def test_incremental_rescan_reads_only_changed_files(tmp_path, capsys, client, address):
    root = tmp_path / "tree"
    docs = edit_tree(root)
    idx, store = tmp_path / "i.sqlite3", tmp_path / "store"
    scan_both(capsys, [root], idx, store, address)
    first = run_cluster_scan(client, ClusterScanRequest([root], store))  # nothing changed
    assert (first.files_read, first.files_unchanged) == (0, first.files_seen)
    assert len(Store.open(store).manifest.segments) == 1  # no segment for no change

    edited, grown = docs["1/5"], docs["2/7"]
    edited.write_bytes(edited.read_bytes()[:2000] + b" something else entirely " + edited.read_bytes()[2000:])
    bump_mtime(edited)
    grown.write_bytes(grown.read_bytes() + b" appended words " * 40)
    new = root / "d3" / "new.txt"
    new.write_bytes(docs["3/1"].read_bytes()[:2500])
    docs["0/2"].unlink()
    assert run(capsys, "scan", str(root), "--index", str(idx), "--quiet")[0] == 0
    res = run_cluster_scan(client, ClusterScanRequest([root], store))
    assert (res.files_read, res.files_removed, res.files_unchanged) == (3, 1, first.files_seen - 3)
    assert store_paths_of_last_segment(store) == sorted(map(str, (edited, grown, new)))
    for args in (("pairs", "--format", "json"), ("groups",), ("groups", "--format", "csv", "-m", "50")):
        same_output(capsys, idx, store, address, *args)
    # ... and what a first scan of the tree as it is now gives.
    fresh = tmp_path / "fresh.sqlite3"
    assert run(capsys, "scan", str(root), "--index", str(fresh), "--quiet")[0] == 0
    same_output(capsys, fresh, store, address, "pairs", "--format", "json")


def test_segments_are_compacted_and_retired_rows_dropped(tmp_path, capsys, client, address, monkeypatch):
    import simscan.cluster.scan as cscan

    monkeypatch.setattr(cscan, "MAX_SEGMENTS", 2)
    root = tmp_path / "tree"
    docs = edit_tree(root)
    store, idx = tmp_path / "store", tmp_path / "i.sqlite3"
    for k in range(3):
        p = docs[f"{k}/4"]
        p.write_bytes(p.read_bytes() + f" round {k} ".encode() * 30)
        res = run_cluster_scan(client, ClusterScanRequest([root], store))
    assert res.compacted and len(Store.open(store).manifest.segments) == 1
    s = Store.open(store)
    assert s.removed_ids().size == 0
    assert sum(pq.read_table(f).num_rows for f in s.row_files(s.manifest.segments[0])) == res.files_seen
    assert not (store / "staging").exists()
    assert run(capsys, "scan", str(root), "--index", str(idx), "--quiet")[0] == 0
    same_output(capsys, idx, store, address, "pairs", "--format", "json")


def worker_pids(client) -> dict[str, int]:
    return client.run(os.getpid)


def kill_busiest_worker(client) -> int:
    """SIGKILL the worker process that has the most tasks running or queued (found by its PID)."""
    pids = worker_pids(client)
    busy = client.processing()
    addr = max(pids, key=lambda a: len(busy.get(a, ())))
    os.kill(pids[addr], signal.SIGKILL)
    return pids[addr]


def wait_for_workers(client, n: int = 2) -> None:
    client.wait_for_workers(n, timeout=60)
    deadline = time.monotonic() + 60
    while len(worker_pids(client)) < n and time.monotonic() < deadline:
        time.sleep(0.2)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # (a zombie until its nanny reaps it)
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] == "Z"


def test_a_worker_killed_mid_scan_costs_time_not_results(tmp_path, capsys, client, address):
    root = tmp_path / "tree"
    make_tree(root, 600, seed=3, min_size=2000, max_size=30000, per_dir=40)
    edit_tree(root / "similar")
    killed: list[int] = []

    def progress(p: Progress) -> None:
        if p.phase == "read" and not killed:  # every batch is sent: the workers are reading
            killed.append(kill_busiest_worker(client))

    store = tmp_path / "store"
    res = run_cluster_scan(client, ClusterScanRequest([root], store, batch_files=8), progress=progress)
    assert killed and gone(killed[0])
    assert not res.cancelled and res.files_read == res.files_seen
    wait_for_workers(client)
    assert killed[0] not in worker_pids(client).values()
    idx = tmp_path / "i.sqlite3"
    assert run(capsys, "scan", str(root), "--index", str(idx), "--quiet")[0] == 0
    same_output(capsys, idx, store, address, "pairs", "--format", "json")
    same_output(capsys, idx, store, address, "groups")
    _check_store_files(store)


def test_a_worker_killed_mid_pair_search_costs_time_not_results(tmp_path, capsys, client):
    root = tmp_path / "tree"
    edit_tree(root)
    store = tmp_path / "store"
    run_cluster_scan(client, ClusterScanRequest([root], store))
    clean = find_pair_set(client, Store.open(store))
    wait_for_workers(client)
    killed: list[int] = []

    def progress(p: Progress) -> None:
        # After the first partition's counts: the loaded partitions sit in the workers' memory.
        if p.phase == "pairs" and p.files_done >= 1 and not killed:
            killed.append(kill_busiest_worker(client))

    got = find_pair_set(client, Store.open(store), progress=progress)
    assert killed and gone(killed[0])
    assert plain(got) == plain(clean)
    assert len(clean.pairs.a) > 30
    wait_for_workers(client)


def test_an_interrupted_scan_is_completed_by_the_next_one(tmp_path, capsys, client, address):
    root = tmp_path / "tree"
    make_tree(root, 300, seed=5, min_size=1000, max_size=8000, per_dir=30)
    edit_tree(root / "similar")
    store = tmp_path / "store"
    cancel = CancelToken()

    def progress(p: Progress) -> None:
        if p.phase == "read" and p.files_done > 0:
            cancel.cancel()

    res = run_cluster_scan(client, ClusterScanRequest([root], store, batch_files=16), progress=progress, cancel=cancel)
    assert res.cancelled
    assert Store.open(store).manifest.segments == ()  # nothing committed
    assert list((store / "staging").glob("scan-*/batch-*.fp.parquet"))  # what was read is staged
    again = run_cluster_scan(client, ClusterScanRequest([root], store, batch_files=16))
    assert not again.cancelled and again.files_reused > 0
    assert again.files_read + again.files_reused == again.files_seen
    assert not (store / "staging").exists()
    idx = tmp_path / "i.sqlite3"
    assert run(capsys, "scan", str(root), "--index", str(idx), "--quiet")[0] == 0
    same_output(capsys, idx, store, address, "pairs", "--format", "json")
    same_output(capsys, idx, store, address, "groups")


def _check_store_files(store: Path) -> None:
    """Every file the manifest names is whole (a Parquet footer), and no temporary file is left."""
    s = Store.open(store)
    for seg in s.manifest.segments:
        for f in s.segment_dir(seg).rglob("*.parquet"):
            pq.read_metadata(f)
    assert not list(store.rglob(".*.tmp-*"))


def test_leftovers_of_a_killed_scan_are_never_read(tmp_path, capsys, client, address):
    root = tmp_path / "tree"
    edit_tree(root)
    store = tmp_path / "store"
    run_cluster_scan(client, ClusterScanRequest([root], store))
    s = Store.open(store)
    seg = s.manifest.segments[0]
    # What a scan killed mid-write leaves: half a partition under a temporary name, a segment no
    # manifest names, a damaged staged batch.
    (s.segment_dir(seg) / "fp" / ".part-00001.parquet.tmp-dead").write_bytes(b"PAR1 half")
    orphan = store / "segments" / "seg-999999-orphan"
    (orphan / "fp").mkdir(parents=True)
    (orphan / "files.parquet").write_bytes(b"PAR1 garbage")
    staged = store / "staging" / "scan-000099"
    staged.mkdir(parents=True)
    (staged / "batch-000000.parquet").write_bytes(b"PAR1 garbage")
    (staged / "batch-000000.fp.parquet").write_bytes(b"PAR1 garbage")
    idx = tmp_path / "i.sqlite3"
    assert run(capsys, "scan", str(root), "--index", str(idx), "--quiet")[0] == 0
    same_output(capsys, idx, store, address, "pairs", "--format", "json")
    shutil.copy(root / "d0" / "doc01.txt", root / "d1" / "added.txt")
    assert run_cluster_scan(client, ClusterScanRequest([root], store)).files_read == 1
    assert not orphan.exists() and not (store / "staging").exists()
    _check_store_files(store)


def test_store_and_problem_commands(tmp_path, capsys, address):
    root = tmp_path / "tree"
    edit_tree(root)
    (root / "locked.txt").write_text("secret " * 100)
    os.chmod(root / "locked.txt", 0)
    store = tmp_path / "store"
    rc, _, err = run(capsys, "cluster", "scan", str(root), "--store", str(store), "--scheduler", address,
                     "--exclude", "*-copy.txt")
    os.chmod(root / "locked.txt", 0o644)
    assert rc == 0 and "files in" in err
    paths = store_paths_of_last_segment(store)
    assert paths == sorted(str(p) for p in root.rglob("*.txt") if not p.name.endswith("-copy.txt"))
    rc, out, _ = run(capsys, "cluster", "stats", "--store", str(store))
    assert rc == 0 and "64 partitions, 1 segments" in out
    rc, out, _ = run(capsys, "cluster", "problems", "--store", str(store))
    if os.geteuid() != 0:  # (root reads everything)
        assert "locked.txt" in out and "Permission denied" in out
    assert MANIFEST in os.listdir(store)
    rc, _, err = run(capsys, "cluster", "pairs", "--store", str(tmp_path / "nothing"), "--scheduler", address)
    assert rc == 3 and "is not a simscan store" in err
    rc, _, err = run(capsys, "cluster", "scan", str(root), "--store", str(root), "--scheduler", address)
    assert rc == 3 and "not an empty folder" in err


def test_a_store_of_the_previous_format_is_refused_as_it_is(tmp_path, capsys):
    """A format-1 store (no spans, no places) is refused by every command, and left as it is."""
    import json

    store = tmp_path / "store"
    Store.open(store, create=True)
    manifest = store / MANIFEST
    data = json.loads(manifest.read_bytes())
    data.update(format=1, algorithm=11)
    manifest.write_text(json.dumps(data))
    before = manifest.read_bytes()
    for args in (("stats",), ("pairs", "--workers", "1"), ("scan", str(tmp_path), "--workers", "1")):
        rc, _, err = run(capsys, "cluster", *args, "--store", str(store))
        assert rc == 3 and "a store of another simscan version (format 1; this one reads 2)" in err
        assert "Scan into a new store" in err
    assert manifest.read_bytes() == before and sorted(os.listdir(store)) == [MANIFEST]


def test_a_scan_killed_outright_leaves_a_store_the_next_scan_completes(tmp_path, capsys, client, address):
    """SIGKILL of the scanning process itself (found by its PID) once its workers have staged
    something: the store still reads as before, and the next scan ends as a clean one."""
    import subprocess
    import sys

    root = tmp_path / "tree"
    make_tree(root, 400, seed=9, min_size=2000, max_size=12000, per_dir=40)
    edit_tree(root / "similar")
    store = tmp_path / "store"
    run_cluster_scan(client, ClusterScanRequest([root / "similar"], store))  # something committed already
    before = store_paths_of_last_segment(store)
    code = ("import sys; import simscan.cluster.scan as s; s.BATCH_FILES = 4; "
            "from simscan.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen([sys.executable, "-c", code, "cluster", "scan", str(root), "--store", str(store),
                             "--scheduler", address, "--quiet"])
    try:
        deadline = time.monotonic() + 60
        while not list(store.glob("staging/scan-*/batch-*.fp.parquet")) and time.monotonic() < deadline:
            assert proc.poll() is None, "the scan ended before it could be killed"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    s = Store.open(store)
    assert len(s.manifest.segments) == 1 and store_paths_of_last_segment(store) == before
    again = run_cluster_scan(client, ClusterScanRequest([root], store))
    assert not again.cancelled and again.files_read + again.files_reused + again.files_unchanged == again.files_seen
    idx = tmp_path / "i.sqlite3"
    assert run(capsys, "scan", str(root), "--index", str(idx), "--quiet")[0] == 0
    same_output(capsys, idx, store, address, "pairs", "--format", "json")
    _check_store_files(store)


def test_documents_are_read_as_locally(tmp_path, capsys, address):
    """Office files, PDFs, EPUB, RTF and HTML: their text, read in the workers by the extraction
    pool (processes under limits, as the local scan), gives the local pairs and groups."""
    root = tmp_path / "docs"
    shutil.copytree(Path(__file__).parent / "data" / "documents", root, ignore=shutil.ignore_patterns("*.py"))
    idx, store = tmp_path / "i.sqlite3", tmp_path / "store"
    scan_both(capsys, [root], idx, store, address)
    out = same_output(capsys, idx, store, address, "pairs", "--format", "json")
    assert '"content"' in out and "essay.pdf" in out  # the same text in another format is found
    same_output(capsys, idx, store, address, "groups", "--format", "csv")
    _, local, _ = run(capsys, "problems", "--index", str(idx), "--format", "json")
    _, cluster, _ = run(capsys, "cluster", "problems", "--store", str(store), "--format", "json")
    assert sorted(cluster.splitlines()) == sorted(local.splitlines()) and "encrypted" in local


def test_groups_options_and_plan_as_locally(tmp_path, capsys, address):
    """groups --kind/--sort/--keep as the local command, and --plan writes the same files to move
    (a cluster plan names no index)."""
    from simscan.cleanup import read_plan

    root = tmp_path / "tree"
    edit_tree(root)
    (root / "empty-1.txt").write_bytes(b"")
    (root / "empty-2.txt").write_bytes(b"")
    idx, store = tmp_path / "i.sqlite3", tmp_path / "store"
    scan_both(capsys, [root], idx, store, address)
    same_output(capsys, idx, store, address, "groups", "--kind", "copies", "--sort", "reclaimable",
                "--keep", "newest,shortest-path")
    same_output(capsys, idx, store, address, "groups", "--kind", "empty", "--format", "json")
    local_plan, cluster_plan = tmp_path / "local.json", tmp_path / "cluster.json"
    assert run(capsys, "groups", "--index", str(idx), "--plan", str(local_plan))[0] == 0
    assert run(capsys, "cluster", "groups", "--store", str(store), "--scheduler", address, "--plan",
               str(cluster_plan))[0] == 0
    want, got = read_plan(local_plan), read_plan(cluster_plan)
    assert got.entries == want.entries and len(want.entries) >= 8
    assert got.index == "" and want.index == str(idx)
