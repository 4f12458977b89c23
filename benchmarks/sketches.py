"""The sketches of the sources against what simscan does today (issue 19), side by side.

Usage: python3 benchmarks/sketches.py [--corpus ../shared/evalcorpus] [--index PATH]
           [--scale 100000,1000000] [--tables 1000000,10000000] [--skip corpus,scale,tables]

1. **Evaluation corpus**: the pair search (``views.compute_pair_arrays_by_view``: the inverted index
   over the stored fingerprints, common values left out, plus simhash candidates, exact scores)
   against MinHash (200 permutations, each view apart) + LSH banding, on the representatives of
   the copy classes, as the pair search pairs them.  Per label of ``truth.csv``: recall at the
   default 15 % of (a) the pair search, (b) LSH candidates scored as the pair search scores them
   (found = a candidate that the pair search reports), (c) LSH candidates scored from the sketches
   alone (``minhash.estimated_scores``: J and the set sizes; what a store of sketches without the
   sets could do), and the false-positive rate on ``unrelated`` pairs; candidates, time and
   traced memory (tracemalloc, plus the sketches, which the native core allocates); then the same
   for other LSH thresholds.
2. **Scale**: synthetic sets shaped like ``similarity_scale.py``'s (its ``synth_records``: files
   of 20-80 fingerprints, edited versions, copies, a licence block), each method in a process of
   its own for its peak RSS; LSH recall against the pair search's near pairs.
3. **Simhash tables**: raw against compressed tables (``simhash_compressed``) at 1 M and 10 M
   random values with 1 % planted neighbours: bytes per value, build time, look-up time per query
   (100,000 queries, every answer compared), the self-join through look-ups against
   ``simhash_pairs``, and the block size's trade-off.

Synthetic data is cached under --dir (``simscan-sketches-N.npz``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

from simscan.fingerprint import views as fviews
from simscan.similarity import minhash
from simscan.similarity.arrays import intersect_counts
from simscan.similarity.core import DEFAULT_MIN_SIMILARITY, SimilarityParams, align_csr, exact_classes
from simscan.similarity.views import compute_pair_arrays_by_view, drop_values, row_counts

LABELS = ("exact", "near_duplicate", "similar", "plagiarism_light", "plagiarism_heavy")
THRESHOLD = DEFAULT_MIN_SIMILARITY
#: Resemblance thresholds of the LSH sweep; the default reads the product's threshold as a resemblance.
LSH_THRESHOLDS = (0.05, 0.1, THRESHOLD / 100, 0.3, 0.5)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def traced_peak(fn):
    """(fn(), peak bytes numpy and Python allocated during it, per tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --------------------------------------------------------------------------- sketches of a pair set


def view_sizes(offsets: np.ndarray, values: np.ndarray, row_text: np.ndarray) -> dict[int, np.ndarray]:
    """Per view, each CSR row's number of values of that view."""
    view = fviews.value_views(values[: offsets[-1]], np.repeat(row_text, np.diff(offsets)))
    return {v: row_counts(view == v, offsets) for v in (fviews.TEXT, fviews.CODE)}


def without_common(offsets: np.ndarray, values: np.ndarray, taking: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR without the values held by more than the pair search's common cut-off of the rows
    ``taking`` part (boilerplate: ``SimilarityParams.common_cutoff``; a count over every value, as
    the inverted index makes)."""
    take = np.repeat(taking, np.diff(offsets))
    uniq, counts = np.unique(values[: offsets[-1]][take], return_counts=True)
    common = uniq[counts > SimilarityParams().common_cutoff(int(taking.sum()))]
    return drop_values(offsets, values, common)


def per_file(a: np.ndarray, csr_row: np.ndarray, fill) -> np.ndarray:
    """Rows of ``a`` (per CSR row) per file row; ``fill`` for files without a set."""
    out = np.full((csr_row.size, *a.shape[1:]), fill, a.dtype)
    has = csr_row >= 0
    out[has] = a[csr_row[has]]
    return out


def lsh_by_view(sketches: list[np.ndarray], threshold: float, skip: np.ndarray) -> np.ndarray:
    """Sorted distinct keys lo * n + hi of the pairs that share a band in any view."""
    bands, rows = minhash.optimal_bands(threshold)
    n = sketches[0].shape[0]
    keys = [a * n + b for a, b in (minhash.lsh_candidates(sk, bands, rows, skip) for sk in sketches)]
    return np.unique(np.concatenate(keys))


def estimated_best(sketches: list[np.ndarray], sizes: list[np.ndarray], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The best estimated score (percent) of pairs (a, b) over the views."""
    best = np.zeros(a.size)
    for sk, sz in zip(sketches, sizes):
        j = minhash.estimate_jaccard(sk[a], sk[b])
        best = np.maximum(best, np.max(minhash.estimated_scores(j, sz[a], sz[b]), axis=0))
    return best


# --------------------------------------------------------------------------- 1. the evaluation corpus


def corpus_section(corpus: Path, index: str | None) -> None:
    from accuracy import auc, run_cli

    from simscan.index import Index

    root = corpus / "corpus"
    with tempfile.TemporaryDirectory() as tmp:
        path = index or os.path.join(tmp, "eval.sqlite3")
        if not os.path.exists(path):
            run_cli(["scan", str(root), "--index", path, "--quiet"])
        with Index.open(path, readonly=True) as ix:
            files = ix.files()
            ids, offsets, values = ix.fingerprints(kind="all")
    n = len(files.paths)
    cls = exact_classes(files)
    row_of = {os.path.relpath(p, root): r for r, p in enumerate(files.paths)}

    # The pair search, as `simscan pairs --no-cache` runs it; its candidates from its progress reports.
    cands: dict[str, int] = {}

    def report(phase: str, done: int, total: int) -> None:
        if phase.endswith("score"):
            cands[phase] = total

    t = time.perf_counter()
    pa = compute_pair_arrays_by_view(files, ids, offsets, values, min_similarity=THRESHOLD, report=report)
    t_peer = time.perf_counter() - t
    _, mem_peer = traced_peak(lambda: compute_pair_arrays_by_view(files, ids, offsets, values, min_similarity=THRESHOLD))

    def near_scores(pa) -> dict[int, float]:
        near = pa.kind >= 2
        lo, hi = np.minimum(pa.a, pa.b)[near], np.maximum(pa.a, pa.b)[near]
        return dict(zip((lo * n + hi).tolist(), pa.best[near].tolist()))

    peer = near_scores(pa)
    # Every score, for the ranking (ROC AUC) of the labelled pairs, as benchmarks/accuracy.py reads them.
    peer_all = near_scores(compute_pair_arrays_by_view(files, ids, offsets, values, min_similarity=0))

    # MinHash: sketches of each view, per CSR row, then per file row; on the sets without common
    # values (as the pair search scores them) and, once, on the whole sets.
    csr_row = align_csr(files, ids, offsets)
    row_text = np.zeros(ids.size, bool)
    row_text[csr_row[csr_row >= 0]] = np.asarray(files.is_text, bool)[csr_row >= 0]
    taking = np.zeros(ids.size, bool)
    taking[csr_row[cls.is_rep & (csr_row >= 0)]] = True
    skip = ~cls.is_rep  # copies pair through their representative, as in the pair search

    def sketches(offsets: np.ndarray, values: np.ndarray):
        t = time.perf_counter()
        (text_sk, code_sk), mem = traced_peak(lambda: minhash.sketch_views(offsets, values, row_text))
        dt = time.perf_counter() - t
        sk_bytes = text_sk.nbytes + (code_sk.nbytes if code_sk is not None else 0)
        sks = [per_file(sk, csr_row, minhash.EMPTY) for sk in (text_sk, code_sk) if sk is not None]
        vs = view_sizes(offsets, values, row_text)
        sizes = [per_file(vs[v], csr_row, 0).astype(np.float64) for v in (fviews.TEXT, fviews.CODE)][: len(sks)]
        return sks, sizes, dt, sk_bytes + mem

    whole_sks, _whole_sizes, _t, _m = sketches(offsets, values)
    t = time.perf_counter()
    k_off, k_val = without_common(offsets, values, taking)
    t_common = time.perf_counter() - t
    sks, sizes, t_sketch, mem_sketch = sketches(k_off, k_val)

    truth = []
    with open(corpus / "truth.csv", newline="") as f:
        for row in csv.DictReader(f):
            a, b = row_of[row["file_a"]], row_of[row["file_b"]]
            ra, rb = cls.rep[cls.content[a]], cls.rep[cls.content[b]]
            truth.append((row["label"], cls.content[a] == cls.content[b], min(ra, rb) * n + max(ra, rb)))

    print(f"== evaluation corpus: {n:,} files, {cls.is_rep.sum():,} representatives, {int(offsets[-1]):,} fingerprints; "
          f"threshold {THRESHOLD:g} %")
    print(f"pair search (inverted index + simhash): {t_peer:.2f} s, traced peak {mem_peer / 2**20:.1f} MB, "
          f"{sum(cands.values()):,} candidates scored ({', '.join(f'{k} {v:,}' for k, v in cands.items())}), "
          f"{len(peer):,} near/contained pairs")
    print(f"MinHash sketches ({minhash.NUM_PERM} permutations, text and code view) of the sets without common values "
          f"({int(k_off[-1]):,} fingerprints): counting them {t_common:.2f} s, sketches {t_sketch:.2f} s, "
          f"{mem_sketch / 2**20:.1f} MB (sketches and traced peak)")

    def recall_line(name: str, found) -> str:
        rec = []
        for lab in (*LABELS, "unrelated"):
            rows = [(copy, key) for lab_, copy, key in truth if lab_ == lab]
            rec.append(sum(1 for copy, key in rows if copy or found(key)) / max(1, len(rows)))
        return f"  {name:<34}" + " ".join(f"{x:9.3f}" for x in rec)

    print(f"  {'recall per label (last: FP rate)':<34}" + " ".join(f"{lab[:9]:>9}" for lab in (*LABELS, "unrelated")))
    print(recall_line("pair search", lambda k: peer.get(k, 0.0) >= THRESHOLD))
    bands, rows = minhash.optimal_bands(THRESHOLD / 100)
    cand = set(lsh_by_view(whole_sks, THRESHOLD / 100, skip).tolist())
    print(f" LSH at J >= {THRESHOLD / 100:.2f} (b={bands}, r={rows}) on the whole sets (common values kept): "
          f"{len(cand):,} candidates")
    print(recall_line("  candidates scored exactly", lambda k: k in cand and peer.get(k, 0.0) >= THRESHOLD))
    for thr in LSH_THRESHOLDS:
        bands, rows = minhash.optimal_bands(thr)
        t = time.perf_counter()
        keys, mem_lsh = traced_peak(lambda: lsh_by_view(sks, thr, skip))  # noqa: B023
        t_lsh = time.perf_counter() - t
        cand = set(keys.tolist())
        est = dict(zip(keys.tolist(), estimated_best(sks, sizes, keys // n, keys % n).tolist()))
        print(f" LSH at J >= {thr:.2f} (b={bands}, r={rows}): {keys.size:,} candidates, {t_lsh:.2f} s, "
              f"traced peak {mem_lsh / 2**20:.1f} MB; of the pair search's near pairs "
              f"{sum(k in cand for k in peer) / max(1, len(peer)):.3f} are candidates")
        print(recall_line("  candidates scored exactly", lambda k: k in cand and peer.get(k, 0.0) >= THRESHOLD))  # noqa: B023
        print(recall_line("  candidates, sketch estimates", lambda k: est.get(k, 0.0) >= THRESHOLD))  # noqa: B023
    # How well the estimates alone rank the labelled pairs (every pair, no banding), against the pair search.
    pairs = [(lab, k) for lab, copy, k in truth if not copy]
    keys = np.array([k for _lab, k in pairs], np.int64)
    est_all = dict(zip(keys.tolist(), estimated_best(sks, sizes, keys // n, keys % n).tolist()))
    line = []
    for lab in LABELS[1:]:
        for name, score in (("sketch", est_all.get), ("pairs", lambda k: peer_all.get(k, 0.0))):
            pos = [score(k) for lab_, k in pairs if lab_ == lab]
            neg = [score(k) for lab_, k in pairs if lab_ == "unrelated"]
            line.append(f"{lab} {name} {auc(pos, neg):.3f}")
    print("  ROC AUC against unrelated pairs, sketch estimates of every labelled pair vs the pair search: "
          + ", ".join(line))


# --------------------------------------------------------------------------- 2. scale


def scale_data(n: int, d: Path) -> Path:
    """Synthetic sets of ``similarity_scale.synth_records`` (cached as .npz)."""
    path = d / f"simscan-sketches-{n}.npz"
    if path.exists():
        return path
    from similarity_scale import synth_records

    t = time.perf_counter()
    cols: dict[str, list] = {k: [] for k in ("size", "mtime", "partial", "simhash", "units", "checksum", "content", "fps")}
    for batch in synth_records(n, 1):
        for r in batch:
            cols["size"].append(r.size)
            cols["mtime"].append(r.mtime_ns)
            cols["partial"].append(r.partial)
            cols["simhash"].append(r.simhash)
            cols["units"].append(r.units)
            cols["checksum"].append(r.checksum)
            cols["content"].append(r.content_hash)
            cols["fps"].append(r.fps)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum([x.size for x in cols["fps"]], out=offsets[1:])
    np.savez(path, offsets=offsets, values=np.concatenate(cols["fps"]), size=np.array(cols["size"], np.int64),
             mtime=np.array(cols["mtime"], np.int64), partial=np.array(cols["partial"], np.int64),
             simhash=np.array(cols["simhash"], np.uint64), units=np.array(cols["units"], np.int64),
             checksum=np.frombuffer(b"".join(cols["checksum"]), np.uint8).reshape(n, 16),
             content=np.frombuffer(b"".join(cols["content"]), np.uint8).reshape(n, 16))
    print(f"  (generated {n:,} synthetic files in {time.perf_counter() - t:.0f} s)")
    return path


def load_scale(path: Path):
    from simscan.similarity.memory import MemoryFileTable

    z = np.load(path)
    offsets, values = z["offsets"], z["values"]
    n = offsets.size - 1
    ids = np.arange(1, n + 1, dtype=np.int64)
    paths = [f"/synthetic/d{i % 997:03d}/file{i:07d}.txt" for i in range(n)]
    table = MemoryFileTable(
        ids=ids, paths=paths, raw_paths=[p.encode() for p in paths], size=z["size"], mtime_ns=z["mtime"],
        is_text=np.ones(n, bool), encoding=["utf-8"] * n, checksum=[r.tobytes() for r in z["checksum"]],
        partial=z["partial"], content_hash=[r.tobytes() for r in z["content"]], simhash=z["simhash"],
        fp_count=np.diff(offsets), units=z["units"], device=np.zeros(n, np.int64), inode=ids)
    return table, ids, offsets, values


def child(mode: str, data: Path, out: Path) -> None:
    """One measurement in a process of its own: prints a JSON line; writes its pairs to ``out``."""
    table, ids, offsets, values = load_scale(data)
    n = ids.size
    base = rss_mb()
    res: dict = {}
    if mode == "peer":
        cands: dict[str, int] = {}

        def report(phase: str, done: int, total: int) -> None:
            if phase.endswith("score"):
                cands[phase] = total

        t = time.perf_counter()
        pa = compute_pair_arrays_by_view(table, ids, offsets, values, consume=True, min_similarity=THRESHOLD,
                                         report=report)
        res["seconds"] = time.perf_counter() - t
        near = pa.kind >= 2
        res["candidates"] = sum(cands.values())
        res["near_pairs"] = int(near.sum())
        np.save(out, np.unique(np.minimum(pa.a, pa.b)[near] * n + np.maximum(pa.a, pa.b)[near]))
    else:
        reps = exact_classes(table).is_rep
        if mode == "minhash":  # the sets as the pair search scores them: common values left out
            t = time.perf_counter()
            offsets, values = without_common(offsets, values, reps)
            res["common_seconds"] = time.perf_counter() - t
        t = time.perf_counter()
        text_sk, _code = minhash.sketch_views(offsets, values, np.ones(n, bool))
        res["sketch_seconds"] = time.perf_counter() - t
        res["sketch_bytes"] = text_sk.nbytes
        bands, rows = minhash.optimal_bands(THRESHOLD / 100)
        t = time.perf_counter()
        i, j = minhash.lsh_candidates(text_sk, bands, rows, skip=~reps)
        res["lsh_seconds"] = time.perf_counter() - t
        res["candidates"] = int(i.size)
        if mode == "minhash":
            # The candidates scored exactly on their sets (no levels): how many pass.
            del text_sk
            t = time.perf_counter()
            inter = intersect_counts(offsets, values, i, j).astype(np.float64)
            best = 100 * inter / np.maximum(1, np.minimum(np.diff(offsets)[i], np.diff(offsets)[j]))
            res["score_seconds"] = time.perf_counter() - t
            res["passing"] = int((best >= THRESHOLD).sum())
        np.save(out, i * n + j)
    res["added_peak_rss_mb"] = peak_rss_mb() - base
    res["rss_before_mb"] = base
    print(json.dumps(res))


def scale_section(sizes: list[int], d: Path) -> None:
    print(f"\n== scale: synthetic sets like similarity_scale.py's, threshold {THRESHOLD:g} %")
    for n in sizes:
        data = scale_data(n, d)
        z = np.load(data)
        nv = int(z["offsets"][-1])
        res = {}
        for mode in ("peer", "minhash") + (("whole",) if n <= 200_000 else ()):
            out = d / f"simscan-sketches-{n}-{mode}.npy"
            p = subprocess.run([sys.executable, __file__, "--child", mode, "--data", str(data), "--out", str(out)],
                               capture_output=True, text=True, check=True)
            res[mode] = json.loads(p.stdout.strip().splitlines()[-1])
            res[mode]["pairs"] = np.load(out)
            os.unlink(out)
        pe, mh = res["peer"], res["minhash"]

        def found(pairs: np.ndarray, near: np.ndarray = pe["pairs"]) -> float:
            return float(np.isin(near, pairs).mean()) if near.size else float("nan")

        b, r = minhash.optimal_bands(THRESHOLD / 100)
        print(f"{n:>9,} files, {nv:,} fingerprints:")
        print(f"  pair search: {pe['seconds']:.1f} s, +{pe['added_peak_rss_mb']:.0f} MB peak RSS "
              f"({pe['added_peak_rss_mb'] * 2**20 / nv:.0f} B a fingerprint), {pe['candidates']:,} candidates, "
              f"{pe['near_pairs']:,} near/contained pairs")
        print(f"  MinHash+LSH (b={b}, r={r}) of the sets without common values: counting them "
              f"{mh['common_seconds']:.1f} s, sketches {mh['sketch_seconds']:.1f} s "
              f"({mh['sketch_seconds'] * 1e9 / (nv * minhash.NUM_PERM):.2f} ns a value and permutation, "
              f"{mh['sketch_bytes'] / 2**20:.0f} MB), LSH {mh['lsh_seconds']:.1f} s, "
              f"{mh['candidates']:,} candidates, exact scoring of them {mh['score_seconds']:.1f} s "
              f"({mh['passing']:,} pass); +{mh['added_peak_rss_mb']:.0f} MB peak RSS; "
              f"recall of the pair search's near pairs {found(mh['pairs']):.4f}")
        if "whole" in res:
            wh = res["whole"]
            print(f"  the same on the whole sets (common values kept): {wh['candidates']:,} candidates, LSH "
                  f"{wh['lsh_seconds']:.1f} s, +{wh['added_peak_rss_mb']:.0f} MB peak RSS, recall {found(wh['pairs']):.4f}")


# --------------------------------------------------------------------------- 3. simhash tables


def queries_for(v: np.ndarray, m: int, seed: int) -> np.ndarray:
    """m queries: half stored values with 0-3 bits flipped, half random values."""
    rng = np.random.default_rng(seed)
    q = np.concatenate((v[rng.integers(0, v.size, m // 2)], rng.integers(0, 2**64 - 1, m - m // 2, dtype=np.uint64)))
    for c in range(3):
        bit = np.uint64(1) << rng.integers(0, 64, q.size).astype(np.uint64)
        q ^= np.where(rng.random(q.size) < 0.5, bit, np.uint64(0))
    return q


def tables_section(sizes: list[int]) -> None:
    from similarity_scale import planted_simhashes

    from simscan.similarity.simhash_compressed import DEFAULT_BLOCK, SimhashTables
    from simscan.similarity.simhash_tables import simhash_pairs

    print("\n== simhash tables, k = 3 (4 tables), raw against compressed; 100,000 look-ups, answers compared")
    m = 100_000
    for n in sizes:
        v = planted_simhashes(np.random.default_rng(n), n)
        q = queries_for(v, m, 1)
        row = {}
        for name, block in (("raw", 0), (f"compressed, block {DEFAULT_BLOCK}", DEFAULT_BLOCK)):
            t = time.perf_counter()
            tab = SimhashTables(v, 3, block)
            build = time.perf_counter() - t
            tab.lookup(q[:1000])  # warm
            t = time.perf_counter()
            off, found = tab.lookup(q)
            look = time.perf_counter() - t
            row[name] = (off, found)
            print(f"  {n:>11,} values, {name:<22} {tab.nbytes / n / 4:5.2f} B a value a table "
                  f"({tab.nbytes / 2**20:7.1f} MB), build {build:5.2f} s, look-up {look * 1e6 / m:6.2f} µs "
                  f"({found.size:,} found)")
            del tab
        (o1, f1), (o2, f2) = row.values()
        assert np.array_equal(o1, o2) and np.array_equal(f1, f2), "compressed tables answered otherwise"
        if n <= 1_000_000:
            t = time.perf_counter()
            i, _, _ = simhash_pairs(v, 3)
            t_join = time.perf_counter() - t
            tab = SimhashTables(v, 3)
            t = time.perf_counter()
            off, _found = tab.lookup(v)
            t_look = time.perf_counter() - t
            # Each pair is found from both ends, and every value finds itself.
            print(f"  {n:>11,} values: self-join simhash_pairs {t_join:.2f} s ({i.size:,} pairs) vs a look-up of every "
                  f"value in the compressed tables {t_look:.2f} s ({(int(off[-1]) - n) // 2:,} pairs)")
            del tab
    n = sizes[-1]
    v = planted_simhashes(np.random.default_rng(n), n)
    q = queries_for(v, m, 2)
    print(f"  block size at {n:,} values (bytes a value a table / µs a look-up):")
    for block in (16, 64, 256, 1024):
        tab = SimhashTables(v, 3, block)
        t = time.perf_counter()
        tab.lookup(q)
        print(f"    {block:>5}: {tab.nbytes / n / 4:5.2f} B, {(time.perf_counter() - t) * 1e6 / m:6.2f} µs")
        del tab


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "evalcorpus"))
    ap.add_argument("--index", default=None, help="index of the corpus (scanned there if missing)")
    ap.add_argument("--scale", default="100000,1000000", help="numbers of synthetic files")
    ap.add_argument("--tables", default="1000000,10000000", help="numbers of simhash values")
    ap.add_argument("--skip", default="", help="sections to skip: corpus,scale,tables")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--child", choices=("peer", "minhash", "whole"), help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, Path(args.data), Path(args.out))
        return
    skip = set(args.skip.split(","))
    if "corpus" not in skip:
        corpus_section(Path(args.corpus).resolve(), args.index)
    if "scale" not in skip:
        scale_section([int(x) for x in args.scale.split(",") if x], Path(args.dir))
    if "tables" not in skip:
        tables_section([int(x) for x in args.tables.split(",") if x])
    print(f"\npeak RSS of this process {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
