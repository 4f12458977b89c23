"""Scale of the similarity layer on synthetic, seeded data written through the index writer API.

Usage: python3 benchmarks/similarity_scale.py [--files 100000] [--query-files 1000000] [--keep]
       [--search-only | --query-only | --clusters-only]

Prints:
1. pairs and groups over an index of ``--files`` files (target: <= 10 s for 100k), computed
   (``cache=False``), and ``group_pairs`` alone (the GUI slider; target <= 1 s); then the results
   cache: storing the pairs in the index, reading them back, and the columnar grouping the window
   uses (``group_pair_arrays``); then the pair search's memory (``similarity.slices``): the same search,
   each in a fresh process, on the whole CSR in memory (unsliced, as before slices), in slices with the
   default budget and with a small one (64 MB: its partitions wait in files): time, CPU time and peak RSS
   (``--search-only``: that alone);
2. the simhash k = 3 self-join over 1M values (target <= 30 s);
3. queries against an index of ``--query-files`` files (target <= 50 ms): a file, an indexed file's
   fingerprints, 550-character paragraphs of a real book indexed among them (the issue's short file,
   found by the inverted index, then again with the index dropped from the page cache before each), a tiny
   and a very short file (``--query-only``: that alone);
4. peak RSS of the process (target <= 1 GB);
5. the cluster case, ``benchmarks/groups_clusters.py`` (20,000 near-copies of 400 paragraphs, scanned;
   ``simscan pairs`` and ``groups`` each in its own process; target: groups <= 2 s, <= 300 MB;
   ``--clusters-only``: that alone).

The synthetic collection (seeded): text-like files of 20-80 fingerprints; 15% are edited
versions of another file (10-40% of their fingerprints replaced), 5% exact copies, 2%
re-encodings (same content hash, other bytes), 1% empty files; 3% carry a 12-fingerprint
"licence header" (a common block above the cut-off).  As ALGORITHM_VERSION 12 stores them:
text values (view bit clear), each with its span (at least its file's winnowing window) and place
(a unit offset in the file, its characters), the values an edited version keeps keeping theirs.  Indexes are written under /tmp and
reused by later runs (``--keep``) since writing 1M files takes a while.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simscan.fingerprint import DEFAULT_PARAMS, fingerprint_bytes
from simscan.fingerprint.simhash import simhash
from simscan.index import FileRecord, Index
from simscan.model import ALGORITHM_VERSION, FingerprintMeta
from simscan.similarity import find_pairs, group_pairs, query
from simscan.similarity.core import DEFAULT_MIN_SIMILARITY, expand_copy_pairs
from simscan.similarity.evidence import window_of_level
from simscan.similarity.simhash_tables import simhash_pairs

# Text values carry the view bit of the text view (``simscan.fingerprint.views``): bit 62 clear in
# rolling values, the pre-image bit in anchored ones, as every text file without a code view.
LOW = np.uint64((1 << 62) - 1)
#: A real book that the short-file queries quote (synthetic words when the corpus is absent).
BOOK = Path(__file__).resolve().parents[2] / "shared" / "evalcorpus" / "corpus" / "gutenberg" / "pride_and_prejudice"
BOOK = min(BOOK.glob("*.txt")) if BOOK.is_dir() and any(BOOK.glob("*.txt")) else BOOK / "absent.txt"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _meta(rng: np.random.Generator, n: int, units: int) -> tuple[np.ndarray, ...]:
    """Spans and places of ``n`` new values of a file of ``units`` units: spans from the file's window
    up, as random hashes give them (a window's span is at least k with probability ~2 / (k + 1), so
    given that it reaches the window w: (w + 1) / (k + 1)), places spread over the file."""
    w = int(window_of_level(DEFAULT_PARAMS.text_level(units)))
    d = np.minimum((w + 1) / rng.uniform(1e-9, 1.0, n) - 1, 128).astype(np.uint8)
    unit = np.sort(rng.integers(0, max(1, units - 50), n)).astype(np.uint32)
    chars = rng.integers(50, 70, n).astype(np.uint16)
    return d, unit, (unit * 1.1).astype(np.uint32), chars


def synth_records(n: int, seed: int, start: int = 0, fast_simhash: bool = False, scale: int = 1):
    """Yield batches of FileRecord for files start..start+n (deterministic); ``scale``: new files hold
    ``scale`` times as many values (20-80 each by default)."""
    rng = np.random.default_rng(seed)
    licence = rng.integers(0, 1 << 62, 12, dtype=np.uint64)
    licence_meta = _meta(rng, 12, 800)
    batch: list[FileRecord] = []
    made: list[tuple[np.ndarray, bytes, bytes, bytes, int, int]] = []  # recent files to copy from
    for i in range(start, start + n):
        r = rng.random()
        if made and r < 0.05:  # exact copy
            fps, meta, ck, ch, size, sh = made[int(rng.integers(len(made)))]
        elif made and r < 0.07:  # re-encoded: same content hash and fingerprints, other bytes
            fps, meta, _, ch, size, sh = made[int(rng.integers(len(made)))]
            ck = rng.bytes(16)
            size += 2
        elif r < 0.08:  # empty
            fps, meta, ck, ch, size, sh = np.zeros(0, np.uint64), b"", b"\0" * 16, b"\1" * 16, 0, 0
        else:
            if made and r < 0.23:  # edited version
                base, base_meta = made[int(rng.integers(len(made)))][:2]
                keep = rng.random(base.size) >= rng.uniform(0.1, 0.4)
                bm = FingerprintMeta.from_blob(base_meta, base.size)
                kept = [base[keep]] + [np.asarray(getattr(bm, c))[keep] for c in ("d", "unit", "char", "chars")]
                extra = rng.integers(0, 1 << 62, int((~keep).sum()), dtype=np.uint64)
                size = int(max(base.size, 20) * 66)
                parts = [kept, [extra, *_meta(rng, extra.size, size)]]
            else:
                k = int(rng.integers(20, 80)) * scale  # (version 11: 15-60 rolling values and a third as many anchored)
                size = k * 66
                parts = [[rng.integers(0, 1 << 62, k, dtype=np.uint64), *_meta(rng, k, size)]]
            if rng.random() < 0.03:
                parts.append([licence, *licence_meta])
            vals = np.concatenate([p[0] for p in parts]) & LOW
            order = np.argsort(vals, kind="stable")
            vals = vals[order]
            first = np.ones(vals.size, bool)
            first[1:] = vals[1:] != vals[:-1]
            fps = vals[first]
            cols = [np.concatenate([p[c] for p in parts])[order][first] for c in range(1, 5)]
            meta = FingerprintMeta(*cols).blob()
            ck, ch = rng.bytes(16), rng.bytes(16)
            sh = int(rng.integers(0, 1 << 63)) * 2 if fast_simhash else simhash(fps)
        if len(made) < 5000:
            made.append((fps, meta, ck, ch, size, sh))
        else:
            made[int(rng.integers(5000))] = (fps, meta, ck, ch, size, sh)
        path = f"/synthetic/d{i % 997:03d}/file{i:07d}.txt".encode()
        batch.append(FileRecord(path=path, device=1, inode=i + 1, size=size, mtime_ns=1_600_000_000_000_000_000 + i,
                                is_text=True, encoding="utf-8", checksum=ck, partial=int(i % 1000),
                                content_hash=ch, simhash=sh, units=size, fps=fps, n_rolling=int(fps.size),
                                meta=meta))
        if len(batch) == 20_000:
            yield batch
            batch = []
    if batch:
        yield batch


def planted_simhashes(rng: np.random.Generator, n: int) -> np.ndarray:
    """n random 64-bit values, 1% of them replaced by near neighbours (1-3 bits flipped) of others, so
    that a simhash search has something to find."""
    vals = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    src = rng.integers(0, n, n // 100)
    flips = np.zeros(src.size, np.uint64)
    for _ in range(3):
        flips |= np.uint64(1) << rng.integers(0, 64, src.size).astype(np.uint64)
    vals[rng.integers(0, n, src.size)] = vals[src] ^ flips
    return vals


def build(path: Path, n: int, seed: int, fast_simhash: bool = False, scale: int = 1) -> float:
    t = time.perf_counter()
    with Index.open(path) as ix:
        for batch in synth_records(n, seed, fast_simhash=fast_simhash, scale=scale):
            # partial is a sort key only here; exact copies carry their base's checksum
            ix.write_files(batch)
    return time.perf_counter() - t


def hwm_mb() -> float:
    """Peak RSS of this process since it started its program (Linux's VmHWM: ``ru_maxrss`` keeps the
    peak of the process that started it when that was higher); ``rss_mb`` elsewhere."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration, ValueError):
        return rss_mb()


def measure_search(path: Path, mode: str, memory_mb: float) -> None:
    """One pair search on the index ``path`` (cache off, default threshold) in this process, as
    ``mode``: ``memory`` (every stored set in one CSR, their places read at once: the search before
    slices) or ``sliced`` (``find_pair_set`` with a budget of ``memory_mb`` MB), then the groups of its
    pairs (``group_pair_arrays``, as ``simscan groups`` and the window make them).  Prints one JSON
    line: seconds and CPU seconds of the search and of pairs plus groups, peak RSS (MB) before and
    after, pairs, groups, partitions, spill flushes."""
    import json

    from simscan.heap import one_arena
    from simscan.similarity import engine
    from simscan.similarity.compare import SCORE_KIND

    one_arena()  # (as the command line and the window do at start)
    from simscan.similarity.views import compute_pair_arrays_by_view

    seen: list = []
    real = engine.spilled

    def watched(*a, **k):  # (to print how the values were partitioned)
        cm = real(*a, **k)
        entered = _Entered(cm, cm.__enter__())
        seen.append(entered)
        return entered

    engine.spilled = watched
    with Index.open(path, readonly=True) as ix:
        ix.files()  # (the file table's pages warm, as in section 1)
        before = hwm_mb()
        t, c = time.perf_counter(), time.process_time()
        if mode == "memory":
            files = ix.files()
            got: list[np.ndarray] = []
            ids, offsets, values = ix.fingerprints(None, kind=SCORE_KIND, spans=got)
            pa = compute_pair_arrays_by_view(
                files, ids, offsets, values, consume=True, min_similarity=DEFAULT_MIN_SIMILARITY,
                identity=engine._identity(ix, files), spans=got[0],
                places=engine._places_loader(ix, files, ids, ix.generation()),
            )
            del ids, offsets, values, got
            pa = engine._filter(pa, DEFAULT_MIN_SIMILARITY, engine.DEFAULT_SIM_PARAMS.min_passage)
        else:
            ps = engine.find_pair_set(ix, min_similarity=DEFAULT_MIN_SIMILARITY, cache=False,
                                      memory=int(memory_mb * (1 << 20)))
            pa, files = ps.pairs, ps.files
            del ps
        t, c = time.perf_counter() - t, time.process_time() - c
    from simscan.similarity.grouping import group_pair_arrays

    tg, cg = time.perf_counter(), time.process_time()
    groups = group_pair_arrays(pa, files, min_similarity=DEFAULT_MIN_SIMILARITY).n_groups
    tg, cg = t + time.perf_counter() - tg, c + time.process_time() - cg
    # A digest of every column of the pairs in one order (the same pairs and scores give the same).
    import hashlib

    from simscan.similarity.core import PairArrays

    order = np.lexsort((pa.view, pa.b, pa.a))
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(getattr(pa, f)[order]).tobytes()
                                     for f in PairArrays.__slots__)).hexdigest()[:16]
    print(json.dumps({"seconds": t, "cpu": c, "rss_before": before, "peak": hwm_mb(), "pairs": int(pa.a.size),
                      "digest": digest, "with_groups": tg, "cpu_with_groups": cg, "groups": int(groups),
                      "parts": seen[0].value.parts if seen else 0, "flushes": seen[0].flushes if seen else 0}))


class _Entered:
    """A context manager already entered (``measure_search``'s watch of the spill)."""

    def __init__(self, cm, value) -> None:
        self.cm, self.value, self.flushes = cm, value, 0

    def __enter__(self):
        return self.value

    def __exit__(self, *exc):
        self.flushes = len(self.value._flushes)  # (before closing forgets them)
        return self.cm.__exit__(*exc)


def compare_searches(path: Path, n_files: int, budgets: list[float], unsliced: bool = True) -> None:
    """Section 1c: the pair search unsliced (unless not ``unsliced``) and in slices, each in a fresh
    process (peak RSS is per process), one after the other; the sliced ones' digests against the first
    search's."""
    import json
    import subprocess

    from simscan.similarity.slices import DEFAULT_MEMORY

    default = DEFAULT_MEMORY / (1 << 20)
    rows = [("unsliced (whole CSR in memory)", "memory", 0.0)] if unsliced else []
    rows += [(f"sliced, {'default ' if mb == default else ''}budget {mb:g} MB", "sliced", mb) for mb in budgets]
    first = None
    for k, (label, mode, mb) in enumerate(rows):
        out = subprocess.run([sys.executable, __file__, "--measure-search", str(path), mode, str(mb)],
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        first = first or r["digest"]
        spill = f"; {r['parts']} partitions, {r['flushes']} spill flushes" if mode == "sliced" else ""
        base = "unsliced" if unsliced else "the first"
        same = "" if k == 0 else f"; pairs and scores {'==' if r['digest'] == first else '!='} {base}"
        print(f"[budget] {n_files:,} files, {label}: find_pair_set {r['seconds']:.2f} s ({r['cpu']:.2f} s CPU), "
              f"{r['pairs']:,} pairs; with groups {r['with_groups']:.2f} s ({r['cpu_with_groups']:.2f} s CPU, "
              f"{r['groups']:,} groups; 1M target <= 60 s); peak RSS {r['peak']:.0f} MB (1M target <= 1024 MB; file "
              f"table read: {r['rss_before']:.0f} MB){spill}{same}", flush=True)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--measure-search":
        measure_search(Path(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--query-files", type=int, default=1_000_000)
    ap.add_argument("--simhash", type=int, default=1_000_000)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--keep", action="store_true", help="keep the generated indexes for the next run")
    ap.add_argument("--budgets", default="default,64", metavar="MB,...",
                    help="the sliced searches' budgets of section 1c (MB; 'default': slices.DEFAULT_MEMORY)")
    ap.add_argument("--scale", type=int, default=1, metavar="K",
                    help="section 1's files hold K times as many fingerprints (K = 4: ~200 a file, the scan "
                    "benchmark's mix)")
    ap.add_argument("--query-only", action="store_true", help="only the queries (section 3)")
    ap.add_argument("--search-only", action="store_true",
                    help="only the pair search's memory (section 1c)")
    ap.add_argument("--no-unsliced", action="store_true",
                    help="section 1c without the search on the whole CSR in memory (~5 GB at --scale 4)")
    ap.add_argument("--clusters-only", action="store_true", help="only the cluster case (section 5)")
    args = ap.parse_args()
    d = Path(args.dir)
    from simscan.similarity.slices import DEFAULT_MEMORY

    if args.clusters_only:
        run_clusters(args, d)
        return

    if args.query_only:
        pq = run_queries(args, d)
        print(f"peak RSS {rss_mb():.0f} MB")
        if not args.keep:
            _remove(pq)
        return
    budgets = [DEFAULT_MEMORY / (1 << 20) if b.strip() == "default" else float(b) for b in args.budgets.split(",")]

    # 1. pairs and groups
    p100 = d / f"simscan-scale-v{ALGORITHM_VERSION}-{args.files}{'' if args.scale == 1 else f'x{args.scale}'}.sqlite3"
    if not p100.exists():
        print(f"writing {args.files:,} synthetic files ... ", end="", flush=True)
        print(f"{build(p100, args.files, 1, scale=args.scale):.1f} s")
    if args.search_only:  # section 1c alone
        compare_searches(p100, args.files, budgets, unsliced=not args.no_unsliced)
        if not args.keep:
            _remove(p100)
        return
    with Index.open(p100, readonly=True) as ix:
        t0 = time.perf_counter()
        files = ix.files()
        t1 = time.perf_counter()
        pairs = find_pairs(ix, min_similarity=DEFAULT_MIN_SIMILARITY, cache=False)
        t2 = time.perf_counter()
        groups = group_pairs(pairs, files, min_similarity=DEFAULT_MIN_SIMILARITY)
        t3 = time.perf_counter()
        groups50 = group_pairs(pairs, files, min_similarity=50)
        t4 = time.perf_counter()
        # The GUI slider: pairs found once at a low threshold, grouped at each slider position.
        low = find_pairs(ix, min_similarity=1, cache=False)
        t5 = time.perf_counter()
        slider = group_pairs(low, files, min_similarity=DEFAULT_MIN_SIMILARITY)
        t6 = time.perf_counter()
        moves = []
        for thr in (30.0, 60.0, 90.0):  # later slider moves reuse the columns of the same list
            tm = time.perf_counter()
            group_pairs(low, files, min_similarity=thr)
            moves.append(time.perf_counter() - tm)
        te = time.perf_counter()
        expanded, left_out = expand_copy_pairs(pairs)  # what `simscan pairs` prints
        te = time.perf_counter() - te
    print(f"[pairs+groups] {len(files):,} files: read table {t1 - t0:.2f} s; find_pairs {t2 - t1:.2f} s "
          f"({len(pairs):,} pairs); group_pairs {t3 - t2:.2f} s ({len(groups):,} groups), at 50%: {t4 - t3:.2f} s "
          f"({len(groups50):,} groups); pairs+groups total {t3 - t0:.2f} s (target <= 10 s; slider <= 1 s); "
          f"peak RSS {rss_mb():.0f} MB")
    print(f"[slider] find_pairs at 1%: {t5 - t4:.2f} s ({len(low):,} pairs); group_pairs of those at "
          f"{DEFAULT_MIN_SIMILARITY:g}%: {t6 - t5:.2f} s ({len(slider):,} groups), next moves to 30/60/90%: "
          f"{', '.join(f'{x:.2f}' for x in moves)} s (target <= 1 s)")
    print(f"[pairs CLI] copies inherit their representative's pairs: {len(pairs):,} -> {len(expanded):,} pairs "
          f"({left_out:,} left out) in {te:.2f} s")
    del pairs, groups, groups50, files, low, slider, expanded

    # 1a. the results cache (what the window and `simscan pairs|groups` read when nothing changed)
    from simscan.similarity.core import sorted_rounded
    from simscan.similarity.engine import find_pair_set
    from simscan.similarity.grouping import group_pair_arrays

    with Index.open(p100) as ix, ix.atomic() as c:  # (a writable open also upgrades an older index)
        c.execute("DELETE FROM results")
    with Index.open(p100, readonly=True) as ix:
        t0 = time.perf_counter()
        cold = find_pair_set(ix, min_similarity=DEFAULT_MIN_SIMILARITY)
        t1 = time.perf_counter()
        warm = find_pair_set(ix, min_similarity=DEFAULT_MIN_SIMILARITY)
        t2 = time.perf_counter()
        size = ix.connection.execute("SELECT coalesce(sum(length(data)), 0) FROM results").fetchone()[0]
    table = sorted_rounded(warm.pairs)
    t3 = time.perf_counter()
    ga = group_pair_arrays(table, warm.files, min_similarity=DEFAULT_MIN_SIMILARITY)
    t4 = time.perf_counter()
    ga60 = group_pair_arrays(table, warm.files, min_similarity=60)
    t5 = time.perf_counter()
    print(f"[cache] compute + store {t1 - t0:.2f} s (stored: {cold.stored}, {size / 1e6:.1f} MB); read back "
          f"{t2 - t1:.2f} s (hit: {warm.cached}); columnar groups {t4 - t3:.2f} s ({ga.n_groups:,} groups), "
          f"at 60%: {t5 - t4:.2f} s ({ga60.n_groups:,})")
    del cold, warm, table, ga, ga60

    # 1c. the pair search's memory: unsliced against sliced (each in a process of its own)
    compare_searches(p100, args.files, budgets, unsliced=not args.no_unsliced)

    # 1b. adversarial: many mid-frequency fingerprints (code idioms shared by ~50 files each)
    from simscan.similarity.core import SimilarityParams, compute_pair_arrays
    from simscan.similarity.memory import MemoryFileTable

    n_adv = 50_000
    rng_a = np.random.default_rng(3)
    sets = [np.unique(np.concatenate((rng_a.integers(1 << 40, 1 << 62, 20, dtype=np.uint64),
                                      rng_a.integers(0, 21_000, 20).astype(np.uint64)))) for _ in range(n_adv)]
    offs = np.zeros(n_adv + 1, np.int64)
    offs[1:] = np.cumsum([x.size for x in sets])
    allv = np.concatenate(sets)
    del sets
    paths = [f"/adv/{i}" for i in range(n_adv)]
    digests = [i.to_bytes(16, "little") for i in range(n_adv)]
    table = MemoryFileTable(
        ids=np.arange(1, n_adv + 1), paths=paths, raw_paths=[p.encode() for p in paths], size=np.arange(n_adv),
        mtime_ns=np.zeros(n_adv, np.int64), is_text=np.ones(n_adv, bool), encoding=["utf-8"] * n_adv,
        checksum=digests, partial=np.zeros(n_adv, np.int64), content_hash=digests,
        simhash=rng_a.integers(0, 1 << 63, n_adv).astype(np.uint64), fp_count=np.full(n_adv, 40),
        units=np.full(n_adv, 2000))
    r_before = rss_mb()
    t = time.perf_counter()
    adv = compute_pair_arrays(table, table.ids, offs, allv, min_similarity=DEFAULT_MIN_SIMILARITY,
                              params=SimilarityParams())
    print(f"[adversarial] {n_adv:,} files sharing ~1M mid-frequency fingerprints (~10M pair incidences "
          f"under the cut-off, budget {SimilarityParams().pair_budget:,}): {time.perf_counter() - t:.2f} s, "
          f"{adv.a.size:,} pairs; peak RSS {rss_mb():.0f} MB (was {r_before:.0f})")
    del table, allv, offs, adv

    # 2. simhash self-join
    rng = np.random.default_rng(7)
    n = args.simhash
    vals = planted_simhashes(rng, n)
    t = time.perf_counter()
    i, _, _ = simhash_pairs(vals, 3)
    print(f"[simhash] k=3 self-join over {n:,} values: {time.perf_counter() - t:.2f} s, {i.size:,} pairs "
          f"(target <= 30 s); peak RSS {rss_mb():.0f} MB")
    del vals, i

    # 3. query against a large index
    pq = run_queries(args, d)
    print(f"peak RSS {rss_mb():.0f} MB (target <= 1024 MB)")
    if not args.keep:
        _remove(p100)
        _remove(pq)

    # 5. the cluster case
    run_clusters(args, d)


def run_clusters(args: argparse.Namespace, d: Path) -> None:
    """Section 5: ``groups_clusters.py`` in a process of its own (it runs each command in one too); its
    tree and index kept under ``d`` with ``--keep``."""
    import subprocess

    cmd = [sys.executable, str(Path(__file__).with_name("groups_clusters.py"))]
    if args.keep:
        cmd += ["--keep", str(d / f"simscan-clusters-v{ALGORITHM_VERSION}")]
    print("[clusters] ", end="", flush=True)
    subprocess.run(cmd, check=True)


def run_queries(args: argparse.Namespace, d: Path) -> Path:
    """Section 3: queries against an index of ``--query-files`` files (written once); returns its path."""
    rng = np.random.default_rng(7)
    # (a name of its own: with --files equal to --query-files, section 1's index was taken for it, without the book)
    pq = d / f"simscan-scale-query-v{ALGORITHM_VERSION}-{args.query_files}.sqlite3"
    if not pq.exists():
        print(f"writing {args.query_files:,} synthetic files (once; kept with --keep) ... ", end="", flush=True)
        print(f"{build(pq, args.query_files, 2, fast_simhash=True):.1f} s")
    t = time.perf_counter()
    with Index.open(pq) as ix:
        # A writable open upgrades an index kept by an older simscan (as a scan would): postings of
        # another rule are written again.  Then one real book, which short files quote.
        upgrade = time.perf_counter() - t
        book_text = BOOK.read_text(encoding="utf-8") if BOOK.exists() else " ".join(
            f"w{int(x) % 100000}" for x in np.random.default_rng(5).integers(0, 1 << 40, 60000))
        book_path = b"/synthetic/real/book.txt"
        if book_path not in ix.ids_for_paths([book_path]):
            ix.write_files([FileRecord.from_fingerprints(book_path, 1, 0, 0, fingerprint_bytes(book_text.encode()))])
    print(f"[query] writable open of the {args.query_files:,}-file index (postings written again when an older "
          f"simscan's rule made them): {upgrade:.1f} s")
    with Index.open(pq, readonly=True) as ix:
        # query(file): a real file fingerprinted at query time (included in the timing).
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            words = [f"w{int(x) % 100000}" for x in rng.integers(0, 1 << 40, 600)]
            f.write(" ".join(words))
            qpath = f.name
        times = []
        for _ in range(5):
            t = time.perf_counter()
            res = query(ix, qpath, min_similarity=DEFAULT_MIN_SIMILARITY)
            times.append(time.perf_counter() - t)
        # The lookup path with values that exist in the index (candidates found and scored).
        from simscan.model import Fingerprints
        from simscan.similarity.engine import query_fingerprints

        ltimes = []
        nq = args.query_files
        for fid in (nq // 7, nq // 2, nq - 1000):
            _ids, _offsets, values, meta = ix.stored_sets([fid])
            fp = Fingerprints(size=1, checksum=b"q" * 16, partial=0, is_text=True, encoding="utf-8",
                              content_hash=b"q" * 16, rolling=values, anchored=values[:0],
                              simhash=0, units=int(ix.files_by_ids([fid]).units[0]), meta=meta)
            t = time.perf_counter()
            res2 = query_fingerprints(ix, fp, "/query/file.txt", min_similarity=DEFAULT_MIN_SIMILARITY)
            ltimes.append(time.perf_counter() - t)
        os.unlink(qpath)
        # Paragraphs of the book (~550 characters: the short file), each found in it by the index.
        para_ms, para_found = [], 0
        for at in range(20_000, 20_000 + 7 * 9_000, 9_000):
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write(book_text[at : at + 550])
                spath = f.name
            t = time.perf_counter()
            got = query(ix, spath, min_similarity=DEFAULT_MIN_SIMILARITY)
            para_ms.append(1000 * (time.perf_counter() - t))
            para_found += any(p.b_path.endswith("/real/book.txt") for p in got)
            os.unlink(spath)
        # A tiny file (no fingerprints) looks for copies by content hash (an index seek); a short
        # one of ~190 characters (too few posted fingerprints) scans every stored set.
        short_ms = []
        for text in ("A short note of a few words.\n", " ".join(words[:30])):
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write(text)
                spath = f.name
            t = time.perf_counter()
            query(ix, spath, min_similarity=DEFAULT_MIN_SIMILARITY)
            short_ms.append(1000 * (time.perf_counter() - t))
            os.unlink(spath)
    print(f"[query] {args.query_files:,}-file index: query(file) median {1000 * sorted(times)[2]:.1f} ms "
          f"({len(res)} results); lookup+score of an indexed file's fingerprints "
          f"{', '.join(f'{1000 * x:.1f}' for x in ltimes)} ms ({len(res2)} results) (target <= 50 ms); "
          f"query of a tiny file (copies by content hash) {short_ms[0]:.1f} ms, of a very short file "
          f"(~{len(' '.join(words[:30]))} characters: full scan of the stored sets) {short_ms[1]:.0f} ms")
    para_ms.sort()
    print(f"[query] short files: 550-character paragraphs of a book indexed among them, found in it by the "
          f"inverted index {para_found}/{len(para_ms)}: median {para_ms[len(para_ms) // 2]:.1f} ms, "
          f"max {para_ms[-1]:.1f} ms (target <= 50 ms)")
    cold_queries(pq, book_text)
    return pq


def cold_queries(pq: Path, book_text: str) -> None:
    """The paragraph queries again, each the first thing a new process does: the index's pages dropped from
    the page cache first (``posix_fadvise(DONTNEED)``: this machine's cache only, not a virtual machine's
    host's), then opened and queried as ``simscan query`` does."""
    if not hasattr(os, "posix_fadvise"):
        print("[query] cold: not measured here (no posix_fadvise)")
        return
    ms, open_ms = [], []
    for at in range(20_000, 20_000 + 7 * 9_000, 9_000):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(book_text[at : at + 550])
            spath = f.name
        _evict(pq)
        t = time.perf_counter()
        with Index.open(pq, readonly=True) as ix:
            t1 = time.perf_counter()
            query(ix, spath, min_similarity=DEFAULT_MIN_SIMILARITY)
            ms.append(1000 * (time.perf_counter() - t1))
        open_ms.append(1000 * (t1 - t))
        os.unlink(spath)
    ms.sort()
    print(f"[query] the same paragraphs with the index out of the page cache (each: dropped, opened, queried): "
          f"median {ms[len(ms) // 2]:.1f} ms, max {ms[-1]:.1f} ms, opening {sorted(open_ms)[len(ms) // 2]:.1f} ms "
          f"more (target <= 50 ms)")


def _evict(p: Path) -> None:
    """Drops an index's files (and its companions) from the page cache."""
    for s in ("", "-wal", "-shm"):
        try:
            fd = os.open(f"{p}{s}", os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _remove(p: Path) -> None:
    """An index and its companion files."""
    for s in ("", "-wal", "-shm", ".lock"):
        try:
            os.unlink(f"{p}{s}")
        except OSError:
            pass


if __name__ == "__main__":
    main()
