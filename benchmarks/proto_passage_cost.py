"""What passage evidence and winnowing cost (issue 16): fingerprints, bytes, pair-search time.

Run: ``python3 benchmarks/proto_passage_cost.py [--files 100000] [--texts 300]`` (about a minute).

1. **Fingerprints per file** on scan-like text files (``--texts`` excerpts of 1-16 KB of the
   evaluation corpus' prose, log-uniform; the scan and scale benchmarks' size range) and on long
   documents (100-400 KB), for each scheme of ``proto_evidence.SCHEMES``: the pair search's time
   and memory grow with the number of fingerprints.
2. **Bytes per fingerprint** of what the passage evidence needs besides the value (8 bytes):
   the level key ``D`` (1 byte, saturated), the first occurrence's unit offset, its window's
   first character and its character length.  Plain (uint8 + 3 x uint32 / uint16: 11 bytes) and
   compact (per file, the fingerprints in position order as LEB128 deltas of unit and character
   offsets, the window's character length less 50, D; plus each value's rank in position order as
   uint16 when a file holds under 65,536 fingerprints), measured on the same files.
3. **Pair-search time** on a synthetic collection shaped like ``similarity_scale.py``'s (100,000
   files of 20-80 fingerprints; 15 % edited versions that keep their base's positions for the
   values they keep, 5 % copies, 3 % with a 12-fingerprint licence block): the product's own
   pair search (``compute_pair_arrays_by_view``, the peer, same run) against the work passage
   evidence adds to it -- both positions of every (pair, shared value) incidence, sorted by
   (pair, diagonal, position) rather than by pair, runs cut where the gap exceeds w, the longest
   run per pair.  (The incidences themselves are what the pair search makes anyway to count
   shared values; timed apart.)  Both are numpy here; the ratio is the estimate.
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import proto_evidence as PE
import proto_winnow as PW

SCHEMES = ("today", "wL-150", "wL-match", "wL-100", "wL-64", "w100+anchors")


def excerpts(rng: np.random.Generator, n: int, lo: int, hi: int) -> list[str]:
    """Prose excerpts (PEPs, pages, books of the corpus) of lo..hi characters, log-uniform."""
    import passages as PS
    from fingerprint_tuning import ROOT

    pool = [d.text for d in PS.load_pool(ROOT, np.random.default_rng(1)) if d.label != "clough"]
    big = "\n\n".join(pool)
    out = []
    for _ in range(n):
        size = int(math.exp(rng.uniform(math.log(lo), math.log(hi))))
        start = int(rng.integers(0, len(big) - size))
        out.append(big[start : start + size])
    return out


def varint_bytes(x: np.ndarray) -> int:
    """Bytes of the non-negative integers ``x`` as LEB128."""
    x = np.asarray(x, dtype=np.int64)
    n = np.ones(x.size, np.int64)
    for k in range(1, 10):
        n += x >= (1 << (7 * k))
    return int(n.sum())


def layout_bytes(fp: PW.FP) -> tuple[int, int]:
    """(plain, compact) bytes of the per-fingerprint data besides the value."""
    k = fp.size
    if not k:
        return 0, 0
    plain = k * (1 + 4 + 4 + 2)
    order = np.argsort(fp.pos, kind="stable")
    pos, c0, c1 = fp.pos[order], fp.c0[order], fp.c1[order]
    compact = varint_bytes(np.diff(pos, prepend=0)) + varint_bytes(np.diff(c0, prepend=0))
    compact += varint_bytes(np.maximum(c1 - c0 - PW.W, 0)) + k  # D
    compact += k * (2 if k < 65536 else 4)  # rank of each value in position order
    return plain, compact


def fingerprint_table(rng: np.random.Generator, n_texts: int) -> None:
    short = excerpts(rng, n_texts, 1_000, 16_000)
    long = excerpts(rng, max(10, n_texts // 10), 100_000, 400_000)
    streams = {"short": [PW.text_stream(t) for t in short], "long": [PW.text_stream(t) for t in long]}
    kb = {k: sum(len(t) for t in v) / 1024 for k, v in (("short", short), ("long", long))}
    print(f"fingerprints per file ({len(short)} texts of 1-16 KB, {len(long)} of 100-400 KB), per KB, "
          f"and bytes of the passage data per fingerprint (plain / compact):")
    base = None
    for name in SCHEMES:
        scheme = PE.SCHEMES[name]
        row = []
        for k in ("short", "long"):
            fps = [scheme.select(st) for st in streams[k]]
            total = sum(f.size for f in fps)
            row.append((total / len(fps), total / kb[k]))
            if k == "short":
                plain = sum(layout_bytes(f)[0] for f in fps) / max(1, total)
                compact = sum(layout_bytes(f)[1] for f in fps) / max(1, total)
        if base is None:
            base = row
        print(f"  {name:<14} 1-16 KB: {row[0][0]:6.0f} per file {row[0][1]:5.1f}/KB ({row[0][1] / base[0][1]:.2f}x)   "
              f"100-400 KB: {row[1][1]:5.1f}/KB ({row[1][1] / base[1][1]:.2f}x)   passage data {plain:.1f} / {compact:.1f} B")


def synthetic(n: int, seed: int) -> tuple[SimpleNamespace, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(file table, ids, CSR offsets, values, positions) shaped like similarity_scale.py's files."""
    rng = np.random.default_rng(seed)
    licence = rng.integers(0, 1 << 62, 12, dtype=np.uint64)
    lic_pos = np.arange(12, dtype=np.int64) * 60
    made: list[tuple] = []
    vals, poss, counts = [], [], []
    ck, ch, sims, units = [], [], [], []
    for i in range(n):
        r = rng.random()
        if made and r < 0.05:
            v, p, c, h, s, u = made[int(rng.integers(len(made)))]
        else:
            if made and r < 0.20:
                bv, bp = made[int(rng.integers(len(made)))][:2]
                keep = rng.random(bv.size) >= rng.uniform(0.1, 0.4)
                extra = int((~keep).sum())
                v = np.concatenate((bv[keep], rng.integers(0, 1 << 62, extra, dtype=np.uint64)))
                p = np.concatenate((bp[keep], rng.integers(0, int(bp.max(initial=1000)) + 1, extra)))
            else:
                m = int(rng.integers(20, 80))
                v = rng.integers(0, 1 << 62, m, dtype=np.uint64)
                p = np.sort(rng.choice(m * 60, m, replace=False)).astype(np.int64)
            if rng.random() < 0.03:
                v = np.concatenate((v, licence))
                p = np.concatenate((p, lic_pos + int(p.max(initial=0)) + 60))
            v, first = np.unique(v, return_index=True)
            p = p[first]
            c, h = rng.bytes(16), rng.bytes(16)
            s = int(rng.integers(0, 1 << 63))
            u = int(p.max(initial=0)) + 50
        if len(made) < 5000:
            made.append((v, p, c, h, s, u))
        else:
            made[int(rng.integers(5000))] = (v, p, c, h, s, u)
        vals.append(v)
        poss.append(p)
        counts.append(v.size)
        ck.append(c)
        ch.append(h)
        sims.append(s)
        units.append(u)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    values = np.concatenate(vals).astype(np.uint64)
    positions = np.concatenate(poss).astype(np.int64)
    ids = np.arange(1, n + 1, dtype=np.int64)
    files = SimpleNamespace(
        ids=ids, paths=[f"/s/f{i:07d}" for i in range(n)], size=np.array(units, np.int64) * 66,
        mtime_ns=np.arange(n, dtype=np.int64), is_text=np.ones(n, bool), encoding=["utf-8"] * n, checksum=ck,
        partial=np.zeros(n, np.int64), content_hash=ch, simhash=np.array(sims, np.uint64),
        units=np.array(units, np.int64), device=np.ones(n, np.int64), inode=ids.copy(),
    )
    return files, ids, offsets, values, positions


def passage_pass(offsets: np.ndarray, values: np.ndarray, positions: np.ndarray, cutoff: int,
                 gap: int) -> tuple[int, int, float, float]:
    """The pair incidences and passage runs.  Returns (incidences, pairs with a run of 2+
    fingerprints, seconds of what counting shared values needs anyway -- posting lists, every
    (pair, value) incidence, their pair keys sorted --, seconds added by passages -- both positions
    carried along, one sort of (pair rank, diagonal, position) packed in an int64, the runs)."""
    t0 = time.perf_counter()
    owner = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    order = np.lexsort((owner, values))
    v, o = values[order], owner[order]
    start = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    length = np.diff(np.r_[start, v.size])
    ok = (length >= 2) & (length <= cutoff)
    s, ln = start[ok], length[ok]
    # every (i < j) inside each posting list, vectorised by list length
    ia, ib = [], []
    for L in np.unique(ln).tolist():
        base = s[ln == L]
        x, y = np.triu_indices(L, 1)
        ia.append((base[:, None] + x[None, :]).ravel())
        ib.append((base[:, None] + y[None, :]).ravel())
    ia, ib = np.concatenate(ia), np.concatenate(ib)
    fa, fb = o[ia], o[ib]
    swap = fa > fb
    fa, fb = np.where(swap, fb, fa), np.where(swap, fa, fb)
    key = fa.astype(np.int64) * (offsets.size - 1) + fb
    _, pair, _ = np.unique(key, return_inverse=True, return_counts=True)  # what the pair search counts today
    t1 = time.perf_counter()
    p = positions[order]
    pa, pb = np.where(swap, p[ib], p[ia]), np.where(swap, p[ia], p[ib])
    # One int64 sort key: pair rank (24 bits), diagonal (+2^19, 20 bits), position (20 bits).
    diag = pb - pa
    packed = (pair.astype(np.int64) << 40) | ((diag + (1 << 19)) << 20) | pa
    packed.sort()
    key, diag, pa = packed >> 40, (packed >> 20) & ((1 << 20) - 1), packed & ((1 << 20) - 1)
    brk = np.r_[True, (key[1:] != key[:-1]) | (diag[1:] != diag[:-1]) | (pa[1:] - pa[:-1] > gap)]
    starts = np.flatnonzero(brk)
    span = np.maximum.reduceat(pa, starts) - pa[brk] + PW.W
    run_key = key[brk]
    best = np.maximum.reduceat(span, np.flatnonzero(np.r_[True, run_key[1:] != run_key[:-1]]))
    t2 = time.perf_counter()
    return int(key.size), int((best > PW.W).sum()), t1 - t0, t2 - t1


def timing(n: int) -> None:
    from simscan.similarity.core import DEFAULT_MIN_SIMILARITY
    from simscan.similarity.views import compute_pair_arrays_by_view

    t0 = time.perf_counter()
    files, ids, offsets, values, positions = synthetic(n, 1)
    print(f"\nsynthetic collection: {n:,} files, {values.size:,} fingerprints ({time.perf_counter() - t0:.1f} s to make)")
    best_product, best_count, best_passages = math.inf, math.inf, math.inf
    for _ in range(3):
        t1 = time.perf_counter()
        pa = compute_pair_arrays_by_view(files, ids, offsets, values.copy(), consume=True,
                                         min_similarity=DEFAULT_MIN_SIMILARITY)
        t2 = time.perf_counter()
        inc, runs, t_count, t_pass = passage_pass(offsets, values, positions, cutoff=50, gap=100)
        best_product = min(best_product, t2 - t1)
        best_count, best_passages = min(best_count, t_count), min(best_passages, t_pass)
    print(f"  product pair search (peer): {best_product:.2f} s, {pa.a.size:,} pairs at {DEFAULT_MIN_SIMILARITY:g} %")
    print(f"  this prototype's incidences and their count (what the pair search does anyway): {best_count:.2f} s")
    print(f"  added by passage evidence: {best_passages:.2f} s ({best_passages / best_product:.2f}x the pair search): "
          f"{inc:,} (pair, value) incidences, {runs:,} pairs with a run of 2+ fingerprints")
    print(f"  peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (positions: "
          f"{positions.size * 4 / 1e6:.0f} MB as uint32 beside {values.nbytes / 1e6:.0f} MB of values)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--texts", type=int, default=300)
    args = ap.parse_args()
    fingerprint_table(np.random.default_rng(4), args.texts)
    timing(args.files)


if __name__ == "__main__":
    main()
