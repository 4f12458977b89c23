"""Scan throughput on seeded trees: prints files/s, MB/s, peak RSS and rescan times.

    python3 benchmarks/scan_speed.py                 # 100,000 small files + 8 large files
    python3 benchmarks/scan_speed.py --small 20000 --large 2 --jobs 2

Trees (generated once, reused; under /tmp, never in the repository):
- many-small: ``--small`` files of 1-16 KB (uniform), 1,000 per folder, word-like text drawn
  from a 5,000-word vocabulary (every file different), one in ten random binary;
- few-large: ``--large`` files of 25-100 MB, alternately word-like text and random binary.
The tree is read once before timing (warm page cache, as the targets assume).  Other programs
on a 2-core machine change the wall-clock figures a lot, so the CPU time of the first scan
(walker+writer and workers) is printed too, with the rate it would allow if every core were the
scan's own and never idle (an upper bound; compare CPU figures across runs, and repeat).  Each tree is
scanned into a fresh index, rescanned with nothing changed, then 1 % of the files get new
content and it is rescanned again.  Targets (2 cores, warm cache): >= 12,000 files/s on
many-small, >= 1,000 MB/s on few-large, a no-change rescan <= 5 % of the first scan.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simscan.scanner import ScanRequest, run_scan

BASE = Path("/tmp/simscan-bench")


def _vocab(seed: int = 7) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [bytes(rng.integers(97, 123, size=int(rng.integers(2, 11))).astype(np.uint8)) for _ in range(5000)]


def _text(rng: np.random.Generator, vocab: list[bytes], n: int) -> bytes:
    idx = rng.integers(0, len(vocab), size=n // 5 + 16).tolist()
    out = b" ".join([vocab[i] for i in idx])
    while len(out) < n:
        out += b" " + _text(rng, vocab, n - len(out))
    return out[:n]


def _complete(root: Path) -> Path:
    """Marker of a finished tree, kept beside it (inside, every scan would have to exclude it)."""
    inner = root / ".complete"
    if inner.exists():  # trees made by an earlier version of this script
        inner.rename(root.with_name(root.name + ".complete"))
    return root.with_name(root.name + ".complete")


def build_small(n: int, seed: int = 1) -> Path:
    root = BASE / f"small-{n}-{seed}"
    if _complete(root).exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(seed)
    vocab = _vocab()
    for i in range(n):
        d = root / f"d{i // 1000:04d}"
        if i % 1000 == 0:
            d.mkdir(parents=True)
        size = int(rng.integers(1024, 16 * 1024 + 1))
        if i % 10 == 9:
            data = rng.integers(0, 256, size=size, dtype=np.uint8).tobytes()
        else:
            data = _text(rng, vocab, size)
        (d / f"f{i:06d}.{'bin' if i % 10 == 9 else 'txt'}").write_bytes(data)
    _complete(root).write_text("ok")
    return root


def build_large(n: int, seed: int = 2) -> Path:
    root = BASE / f"large-{n}-{seed}"
    if _complete(root).exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    vocab = _vocab()
    for i in range(n):
        size = int(rng.integers(25 << 20, (100 << 20) + 1))
        with open(root / f"large{i:02d}.{'txt' if i % 2 == 0 else 'bin'}", "wb") as f:
            left = size
            while left:
                k = min(left, 1 << 20)
                f.write(_text(rng, vocab, k) if i % 2 == 0 else rng.integers(0, 256, size=k, dtype=np.uint8).tobytes())
                left -= k
    _complete(root).write_text("ok")
    return root


def warm(root: Path) -> tuple[int, int]:
    files = total = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                while chunk := f.read(1 << 22):
                    total += len(chunk)
            files += 1
    return files, total


def change_one_percent(root: Path, seed: int = 3) -> int:
    paths = sorted(p for p in root.rglob("*") if p.is_file())
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(paths), size=max(1, len(paths) // 100), replace=False)
    for i in pick:
        p = paths[int(i)]
        data = bytearray(p.read_bytes())
        data[: min(16, len(data))] = rng.integers(97, 123, size=min(16, len(data)), dtype=np.uint8).tobytes()
        p.write_bytes(bytes(data))
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    return len(pick)


class RssMonitor:
    """Polls /proc every 20 ms: the peak of (this process + all its descendants) resident memory, and
    the CPU time (user + system) the descendants (fork server, workers) used, as last seen per
    process: a worker's last <= 20 ms may be missed.  ``main_cpu_s``: this process's CPU time over
    the same interval, less this monitor's own."""

    def __init__(self) -> None:
        self.peak_total = 0
        self.peak_self = 0
        self._cpu: dict[int, float] = {}
        self._own = 0.0
        self._t0 = 0.0
        self.main_cpu_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def children_cpu_s(self) -> float:
        return sum(self._cpu.values())

    @staticmethod
    def _cpu_of(pid: int) -> float | None:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _rss(pid: int) -> int:
        try:
            with open(f"/proc/{pid}/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            return 0

    def _descendants(self) -> list[int]:
        parent: dict[int, int] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat") as f:
                        parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    continue
        out, frontier = [], [os.getpid()]
        while frontier:
            p = frontier.pop()
            kids = [c for c, pp in parent.items() if pp == p]
            out.extend(kids)
            frontier.extend(kids)
        return out

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.02):
            mine = self._rss(me)
            kids = self._descendants()
            total = mine + sum(self._rss(p) for p in kids)
            self.peak_self = max(self.peak_self, mine)
            self.peak_total = max(self.peak_total, total)
            for p in kids:
                c = self._cpu_of(p)
                if c is not None:
                    self._cpu[p] = c
            self._own = time.thread_time()

    def __enter__(self) -> RssMonitor:  # noqa: PYI034
        self._t0 = time.process_time()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.main_cpu_s = time.process_time() - self._t0 - self._own


def bench(name: str, root: Path, jobs: int | None, target: str, index_dir: Path = BASE) -> None:
    files, total = warm(root)
    idx = index_dir / f"{name}.sqlite3"
    for p in (idx, Path(f"{idx}-wal"), Path(f"{idx}-shm")):
        p.unlink(missing_ok=True)
    req = ScanRequest([root], index_path=idx, jobs=jobs)
    with RssMonitor() as rss:
        t = time.perf_counter()
        r1 = run_scan(req)
        first = time.perf_counter() - t
    agains = []
    for _ in range(3):  # the median of three: one walk of 100 k files varies by +-20 % here
        t = time.perf_counter()
        r2 = run_scan(req)
        agains.append(time.perf_counter() - t)
    again = sorted(agains)[1]
    changed = change_one_percent(root)
    t = time.perf_counter()
    r3 = run_scan(req)
    after = time.perf_counter() - t
    print(f"== {name}: {files:,} files, {total / 1e6:,.1f} MB ({target})")
    print(
        f"first scan:        {first:7.2f} s  {r1.files_read / first:10,.0f} files/s  {r1.bytes_read / first / 1e6:8,.1f} MB/s"
        f"  (read {r1.files_read:,}, problems {r1.problems})"
    )
    print(
        f"rescan, no change: {again:7.2f} s  = {100 * again / first:5.1f} % of the first scan  (read {r2.files_read}; "
        f"median of {', '.join(f'{a:.2f}' for a in agains)} s)"
    )
    print(
        f"rescan, 1% changed:{after:7.2f} s  = {100 * after / first:5.1f} %  (changed {changed}, read {r3.files_read})"
    )
    cores = os.cpu_count() or 1
    main_us, work_us = (1e6 * x / max(1, r1.files_read) for x in (rss.main_cpu_s, rss.children_cpu_s))
    cpu_s = rss.main_cpu_s + rss.children_cpu_s
    print(
        f"CPU of the first scan: walker+writer {rss.main_cpu_s:.2f} s ({main_us:,.0f} us/file), workers "
        f"{rss.children_cpu_s:.2f} s ({work_us:,.0f} us/file); {cpu_s / first:.2f} cores busy on average.  "
        f"With all {cores} cores its own: <= {cores * r1.files_read / cpu_s:,.0f} files/s, "
        f"{cores * r1.bytes_read / cpu_s / 1e6:,.1f} MB/s"
    )
    print(
        f"peak RSS during the first scan: {rss.peak_total / 1e6:,.0f} MB in all processes "
        f"({rss.peak_self / 1e6:,.0f} MB walker+writer); index {idx.stat().st_size / 1e6:,.1f} MB"
    )
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=100_000, help="files in the many-small tree (0: skip)")
    ap.add_argument("--large", type=int, default=8, help="files in the few-large tree (0: skip)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPUs)")
    ap.add_argument("--index-dir", type=Path, default=BASE, help=f"where the indexes go (default {BASE})")
    args = ap.parse_args()
    print(f"simscan scan benchmark: {os.cpu_count()} CPUs, jobs={args.jobs or os.cpu_count()}")
    if args.small:
        t = time.perf_counter()
        root = build_small(args.small)
        print(f"(many-small tree ready in {time.perf_counter() - t:.1f} s: {root})")
        bench("many-small", root, args.jobs, "target >= 12,000 files/s; no-change rescan <= 5 %", args.index_dir)
    if args.large:
        t = time.perf_counter()
        root = build_large(args.large)
        print(f"(few-large tree ready in {time.perf_counter() - t:.1f} s: {root})")
        bench("few-large", root, args.jobs, "target >= 1,000 MB/s", args.index_dir)


if __name__ == "__main__":
    main()
