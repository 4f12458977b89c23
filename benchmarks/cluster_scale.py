"""simscan on a Dask cluster against the local scan and pair search, on this machine, in one run:
files/s of a first scan, a no-change rescan, and the time of the pair search, with a
``LocalCluster`` of 1 and of 2 worker processes, the local figures beside them.

    python3 benchmarks/cluster_scale.py                  # 20,000 files of 1-16 KB
    python3 benchmarks/cluster_scale.py --files 5000 --partitions 16

The tree (generated once under /tmp, reused): word-like texts of 1-16 KB, 1,000 per folder, every
fifth one an edited copy of an earlier one (so that the pair search has pairs to score).  The tree
is read once before timing (warm page cache).  Each configuration scans into a fresh index or
store, rescans with nothing changed, and searches pairs at the default threshold (no results
cache).  The cluster's start (its processes importing simscan) is timed apart, not in the figures.
The runs go one after another (never two at once); on a shared 2-core machine the ratios to the
local run of the same moment are the figures to read, not the absolute times.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Self

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simscan.cluster.connect import connect
from simscan.cluster.scan import ClusterScanRequest, run_cluster_scan
from simscan.cluster.search import find_pair_set as cluster_pair_set
from simscan.cluster.store import Store
from simscan.index import Index
from simscan.scanner import ScanRequest, run_scan
from simscan.similarity import find_pair_set

BASE = Path("/tmp/simscan-bench-cluster")


def build_tree(n: int, seed: int = 11) -> Path:
    root = BASE / f"tree-{n}-{seed}"
    done = root.with_name(root.name + ".complete")
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(seed)
    vocab = [bytes(rng.integers(97, 123, size=int(rng.integers(2, 11))).astype(np.uint8)) for _ in range(5000)]
    texts: list[bytes] = []
    for i in range(n):
        d = root / f"d{i // 1000:04d}"
        if i % 1000 == 0:
            d.mkdir(parents=True)
        if i % 5 == 4 and texts:
            src = texts[int(rng.integers(0, len(texts)))]
            cut = int(rng.integers(0, len(src)))
            data = src[:cut] + b" " + b" ".join(vocab[k] for k in rng.integers(0, 5000, 40)) + src[cut:]
        else:
            size = int(rng.integers(1024, 16 * 1024 + 1))
            data = b" ".join(vocab[k] for k in rng.integers(0, 5000, size // 5 + 8))[:size]
            texts.append(data)
        (d / f"f{i:06d}.txt").write_bytes(data)
    done.touch()
    return root


def warm(root: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                total += len(f.read())
    return total


def _cpu_self() -> float:
    """CPU seconds of this process (every thread: the local scan's readers, the cluster's scheduler)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_worker() -> float:
    import psutil

    t = psutil.Process().cpu_times()
    return t.user + t.system


class Clock:
    """Wall and CPU seconds of a step (CPU: this process plus the workers')."""

    def __init__(self, client: object | None = None) -> None:
        self.client = client

    def cpu(self) -> float:
        if self.client is None:
            return _cpu_self()
        return _cpu_self() + sum(self.client.run(_cpu_worker).values())  # type: ignore[attr-defined]

    def __enter__(self) -> Self:
        self.c0, self.t0 = self.cpu(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        self.cpu_s = self.cpu() - self.c0


def local_run(root: Path, work: Path) -> dict[str, float]:
    idx = work / "local.sqlite3"
    with Clock() as scan:
        r = run_scan(ScanRequest([root], index_path=idx))
    with Clock() as rescan:
        run_scan(ScanRequest([root], index_path=idx))
    with Index.open(idx, readonly=True) as index, Clock() as pairs:
        ps = find_pair_set(index, cache=False)
    return {"files": r.files_read, "scan": scan.wall, "scan_cpu": scan.cpu_s, "rescan": rescan.wall,
            "pairs": pairs.wall, "pairs_cpu": pairs.cpu_s, "n_pairs": ps.pairs.a.size,
            "passages": int((ps.pairs.longest >= 0).sum())}


def cluster_run(root: Path, work: Path, workers: int, partitions: int) -> dict[str, float]:
    store = work / f"store-{workers}"
    t = time.perf_counter()
    with connect(None, workers) as client:
        start = time.perf_counter() - t
        with Clock(client) as scan:
            r = run_cluster_scan(client, ClusterScanRequest([root], store, partitions=partitions))
        with Clock(client) as rescan:
            run_cluster_scan(client, ClusterScanRequest([root], store))
        with Clock(client) as pairs:
            ps = cluster_pair_set(client, Store.open(store))
    fps = Store.open(store).stats()["fingerprints"]
    part_bytes = sum(f.stat().st_size for f in store.glob("segments/*/fp/*.parquet"))
    row_files = list(store.glob("segments/*/files/*.parquet"))
    return {"files": r.files_read, "scan": scan.wall, "scan_cpu": scan.cpu_s, "rescan": rescan.wall,
            "pairs": pairs.wall, "pairs_cpu": pairs.cpu_s, "n_pairs": ps.pairs.a.size, "start": start,
            "fps": fps, "part_bytes": part_bytes, "row_bytes": sum(f.stat().st_size for f in row_files),
            "meta_bytes": sum(_column_bytes(f, "meta") for f in row_files),
            "passages": int((ps.pairs.longest >= 0).sum())}


def _column_bytes(path: Path, column: str) -> int:
    """Bytes of one column of a Parquet file, as stored (compressed)."""
    import pyarrow.parquet as pq

    md = pq.read_metadata(path)
    k = md.schema.names.index(column)
    return sum(md.row_group(g).column(k).total_compressed_size for g in range(md.num_row_groups))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=64, help="partitions of the stores (default 64)")
    args = ap.parse_args()
    root = build_tree(args.files)
    nbytes = warm(root)
    print(f"tree: {args.files:,} files, {nbytes / 1e6:.1f} MB ({root}); {os.cpu_count()} CPUs; "
          f"{args.partitions} partitions")
    work = Path(tempfile.mkdtemp(prefix="simscan-cluster-bench-"))
    try:
        rows = [("local (2 reading threads)", local_run(root, work))]
        for w in (1, 2):
            rows.append((f"cluster, {w} worker{'s' if w > 1 else ''}", cluster_run(root, work, w, args.partitions)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = rows[0][1]
    print(f"{'':27} {'files/s':>8} {'MB/s':>6} {'scan s':>7} {'CPU s':>6} {'rescan s':>8} {'pairs s':>8} "
          f"{'CPU s':>6} {'pairs':>6} {'start s':>7}   speed vs local: scan, pairs")
    for name, r in rows:
        fps = r["files"] / r["scan"]
        print(f"{name:27} {fps:8,.0f} {nbytes / 1e6 / r['scan']:6.1f} {r['scan']:7.2f} {r['scan_cpu']:6.2f} "
              f"{r['rescan']:8.2f} {r['pairs']:8.2f} {r['pairs_cpu']:6.2f} {r['n_pairs']:6,} {r.get('start', 0):7.2f}"
              f"   x{base['scan'] / r['scan']:.2f}, x{base['pairs'] / r['pairs']:.2f}")
    r = rows[-1][1]
    print(f"store: {r['fps']:,} fingerprints ({r['fps'] / args.files:.0f} a file); partitions (value, file, span) "
          f"{r['part_bytes'] / r['fps']:.1f} bytes a fingerprint, file rows (with the sets and their meta) "
          f"{r['row_bytes'] / r['fps']:.1f}, of which the meta {r['meta_bytes'] / r['fps']:.1f}; "
          f"CPU per file: local scan {base['scan_cpu'] / args.files * 1e6:.0f} us, cluster scan (2 workers) "
          f"{r['scan_cpu'] / args.files * 1e6:.0f} us; pair search CPU per fingerprint: local "
          f"{base['pairs_cpu'] / r['fps'] * 1e6:.2f} us, cluster {r['pairs_cpu'] / r['fps'] * 1e6:.2f} us")
    print("CPU s: this process (reading threads; the cluster's client and scheduler) plus the workers. "
          f"Load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.")
    print(f"pairs weighed for passages: {base['passages']:,} of {base['n_pairs']:,}")
    if len({(r["n_pairs"], r["passages"]) for _, r in rows}) != 1:
        print("!! the configurations found different numbers of pairs")


if __name__ == "__main__":
    main()
