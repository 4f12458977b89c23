"""Size-dependent, nested anchored fingerprints: measure level schedules on the evaluation corpus.

For every file of ``$SIMSCAN_EVALCORPUS`` (default ../shared/evalcorpus beside the repository) this computes, in
memory and independently of the fingerprinter's own code paths, the rolling fingerprints
(``fingerprint_many``, unchanged) and the anchored fingerprints of several candidate rules:

* anchors: the ``k``-unit strings whose mixed selection hash lies in a range of width
  ``2^32 / a`` (every occurrence; no no-overlap rule);
* the anchored window: the ``W`` units that follow the anchor;
* its level ``lvl``: leading zero bits of the window's mixed selection hash (a function of the
  window's content alone, so of the stored value); a text of ``u`` normalised units keeps the
  anchored windows with ``lvl >= t(u)`` (a schedule: unit counts at which the level steps up);
* a pair (A, B) is scored at ``t = max(t(a), t(b))``: shared = |A ∩ B| (rolling + anchored),
  set sizes = rolling sizes + the anchored values with ``lvl >= t``.

The first row is ALGORITHM_VERSION 7 (sparse text anchors), computed by the fingerprinter with
its old parameters.  Common values (held by more than ``COMMON_DF`` = 50 distinct contents) are
dropped as ``find_pairs`` does; ``MIN_SHARED`` (default 1) mirrors ``SimilarityParams.min_shared``;
``ONLY=<text>`` runs the schedules whose name contains it.  Printed per schedule: recall per label
at the best threshold with <= 1% false positives on ``unrelated`` / ROC AUC, the FP rate and the
light / heavy / similar recall at fixed thresholds, fingerprints per file on the corpus, and
fingerprints per file on scan-like English text files of 1-16 KB.

Run: ``python3 benchmarks/fingerprint_levels.py`` (about 15 s).
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fingerprint_tuning import load  # same corpus loading (benchmarks/ is on sys.path when run)

from simscan.fingerprint import FingerprintParams, decode_bytes, fingerprint_many
from simscan.fingerprint import text as T
from simscan.fingerprint.rolling import window_values

LABELS = ["exact", "near_duplicate", "similar", "plagiarism_light", "plagiarism_heavy"]
MAX_FP = 0.01
#: Common-value cut-off (distinct contents holding a value), as SimilarityParams.common_min_df.
COMMON_DF = int(os.environ.get("COMMON_DF", "50"))
#: Fewest shared fingerprints for a pair to score (SimilarityParams.min_shared).
MIN_SHARED = int(os.environ.get("MIN_SHARED", "1"))
W = 50
P32 = 0x01000193
C32 = 0x9E3779B1
TOP = np.uint64(1 << 63)


def sel_hash(u: np.ndarray, k: int) -> np.ndarray:
    """Mixed selection hash (H * C mod 2^32) of every k-unit string of ``u`` (slow but plain)."""
    n = u.size - k + 1
    if n <= 0:
        return np.empty(0, np.uint32)
    h = np.zeros(n, np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for j in range(k):
            h = (h * np.uint64(P32) + u[j : j + n].astype(np.uint64)) & mask
        return ((h * np.uint64(C32)) & mask).astype(np.uint32)


def clz32(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of 32-bit values (frexp is exact on integers below 2^53)."""
    return 32 - np.frexp(x.astype(np.float64))[1].astype(np.int64)


def anchored_candidates(u: np.ndarray, k: int, a: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, levels) of every anchored window (anchor = k-unit string with mixed hash < 2^32/a)."""
    if u.size < k + W:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    hk = sel_hash(u, k)
    anchors = np.flatnonzero(hk.astype(np.uint64) < np.uint64((1 << 32) // a))
    starts = anchors + k
    starts = starts[starts + W <= u.size]
    if starts.size == 0:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    g = sel_hash(u, W)[starts]
    v = window_values(u, starts, W) | TOP
    lv = clz32(g)
    # distinct values (a value always has the same level)
    v, idx = np.unique(v, return_index=True)
    return v, lv[idx]


def geometric(s0: int, tmax: int) -> list[tuple[int, int]]:
    """Level t for sizes in [s0 2^(t-1), s0 2^t): each doubling of the size one level coarser."""
    return [(s0 << t, t) for t in range(tmax)] + [(1 << 62, tmax)]


def limits(lims: tuple[int, ...]) -> list[tuple[int, int]]:
    """Level = how many of the ascending unit counts ``lims`` a text reaches."""
    return [(lim, t) for t, lim in enumerate(lims)] + [(1 << 62, len(lims))]


def level_of(size: int, schedule: list[tuple[int, int]]) -> int:
    """schedule: [(size limit in bytes, level), ...] ascending, last limit = inf."""
    for lim, t in schedule:
        if size < lim:
            return t
    return schedule[-1][1]


def evaluate(scores: dict[str, np.ndarray]) -> tuple[dict[str, tuple[float, float]], float]:
    neg = np.sort(scores["unrelated"])[::-1]
    allowed = int(np.floor(MAX_FP * neg.size))
    thr = neg[allowed] if allowed < neg.size else -np.inf
    out = {}
    for lab in LABELS:
        pos = scores[lab]
        rec = float(np.mean(pos > thr))
        gt = (pos[:, None] > neg[None, :]).mean()
        eq = (pos[:, None] == neg[None, :]).mean()
        out[lab] = (rec, float(gt + 0.5 * eq))
    return out, float(thr)


def main() -> None:
    t0 = time.perf_counter()
    names, data, pairs = load()
    idx = {n: i for i, n in enumerate(names)}
    sizes = np.array([len(data[n]) for n in names])
    fps = fingerprint_many([data[n] for n in names], FingerprintParams(chunk_size=1 << 26))
    rolling = [fp.rolling for fp in fps]
    # ALGORITHM_VERSION 7: sparse anchors for text too (W-unit anchors, no-overlap rule, 1/256).
    v7 = FingerprintParams(chunk_size=1 << 26, text_anchor_density=256, text_anchor_length=0)
    old_anch = [fp.anchored for fp in fingerprint_many([data[n] for n in names], v7)]
    content = [fp.content_hash for fp in fps]
    units = []
    for n, fp in zip(names, fps):
        dec = decode_bytes(data[n])
        units.append(T.normalize(dec.text) if dec.text is not None else None)
    nunits = np.array([fp.units for fp in fps])
    print(f"{len(names)} files, {len(pairs)} pairs, loaded in {time.perf_counter() - t0:.0f} s")

    variants: list[tuple[str, int, int, list[tuple[int, int]]]] = []
    chosen = (512, 1024, 2048, 4096, 4096, 8192, 16384)  # FingerprintParams.level_units
    variants.append(("k8 a2 chosen", 8, 2, limits(chosen)))
    for s0 in (256, 512):
        variants.append((f"k8 a2 doubling from {s0}", 8, 2, geometric(s0, 7)))
    variants.append(("k8 a2 4k,4k,16k,64k", 8, 2, limits((512, 1024, 2048, 4096, 4096, 16384, 65536))))
    variants.append(("k8 a2 1/256 from 4k", 8, 2, limits((512, 1024, 2048, 4096, 4096, 4096, 4096))))
    for k in (2, 3, 4):
        variants.append((f"k{k} a2 chosen", k, 2, limits(chosen)))
    variants.append(("k50 a1 chosen", 50, 1, limits(chosen)))
    only = os.environ.get("ONLY")
    cand_cache: dict[tuple[int, int], list] = {}
    scan_cache: dict[tuple[int, int, int], tuple] = {}

    def cand_scan(u: np.ndarray, k: int, a: int) -> tuple:
        key = (id(u), k, a)
        if key not in scan_cache:
            scan_cache[key] = anchored_candidates(u, k, a)
        return scan_cache[key]

    def score_all(sets_fn) -> dict[str, np.ndarray]:
        sc: dict[str, list[float]] = defaultdict(list)
        for a_, b_, lab in pairs:
            i, j = idx[a_], idx[b_]
            if content[i] == content[j]:
                sc[lab].append(1.0)
                continue
            inter, na, nb = sets_fn(i, j)
            if na == 0 or nb == 0 or inter < MIN_SHARED:
                sc[lab].append(0.0)
                continue
            sc[lab].append(max(inter / (na + nb - inter), inter / na, inter / nb))
        return {k_: np.array(v) for k_, v in sc.items()}

    def common_of(allsets: list[np.ndarray]) -> np.ndarray:
        seen = {}
        for s, c in zip(allsets, content):
            seen.setdefault(c, s)
        v, cnt = np.unique(np.concatenate(list(seen.values())), return_counts=True)
        return v[cnt > COMMON_DF]

    def report(name: str, sc: dict[str, np.ndarray], counts: str) -> None:
        res, thr = evaluate(sc)
        cells = " ".join(f"{res[lab][0]:.3f}/{res[lab][1]:.3f}" for lab in LABELS)
        neg = sc["unrelated"]
        fixed = " ".join(
            f"@{p}:{np.mean(neg >= p / 100):.4f}|{np.mean(sc['plagiarism_light'] >= p / 100):.2f}|"
            f"{np.mean(sc['plagiarism_heavy'] >= p / 100):.2f}|{np.mean(sc['similar'] >= p / 100):.2f}"
            for p in (10, 15, 20, 25)
        )
        print(f"{name:22s} {cells}  thr={thr:.3f}  {counts}\n{'':22s} FP|light|heavy|similar {fixed}", flush=True)

    # Cost on a scan-like collection: English-like text files of 1-16 KB (uniform sizes).
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fingerprint_throughput import _small_files

    rng = np.random.default_rng(5)
    scan_files = [f for size in rng.integers(1024, 16384, 200).tolist() for f in _small_files(1, int(size))]
    scan_fps = fingerprint_many(scan_files)
    scan_units = [T.normalize(f.decode()) for f in scan_files]
    scan_roll = np.mean([f.rolling.size for f in scan_fps])
    v7_scan = np.mean([f.anchored.size for f in fingerprint_many(scan_files, v7)])
    print(f"scan-like 1-16 KB texts: rolling {scan_roll:.0f} + version 7 anchored {v7_scan:.0f} per file")
    print(f"{'variant':22s} " + " ".join(f"{lab[:11]:>11s}" for lab in LABELS) + "  (recall@<=1%FP / AUC)")
    # baseline: rolling + old anchored
    base = [np.union1d(r, a_) for r, a_ in zip(rolling, old_anch)]
    com = common_of(base)
    bsets = [s[~np.isin(s, com)] for s in base]

    def base_fn(i, j):
        return np.intersect1d(bsets[i], bsets[j], assume_unique=True).size, bsets[i].size, bsets[j].size

    sm = (sizes >= 1000) & (sizes < 3000)
    mid = (sizes >= 6000) & (sizes < 12000)
    report(
        "today (v7)",
        score_all(base_fn),
        f"fps 1-3KB med {np.median([base[i].size for i in np.flatnonzero(sm)]):.0f} "
        f"6-12KB per KB {np.mean([base[i].size / sizes[i] * 1000 for i in np.flatnonzero(mid)]):.1f}",
    )
    for name, k, a, sched in variants:
        if only and only not in name:
            continue
        key = (k, a)
        if key not in cand_cache:
            cand_cache[key] = [anchored_candidates(u, k, a) if u is not None else (np.empty(0, np.uint64),
                                                                                  np.empty(0, np.int64))
                               for u in units]
        cands = cand_cache[key]
        lvl = np.array([level_of(int(n), sched) for n in nunits])
        stored = [v[lv >= t] for (v, lv), t in zip(cands, lvl)]
        stored_lv = [lv[lv >= t] for (v, lv), t in zip(cands, lvl)]
        allsets = [np.union1d(r, s) for r, s in zip(rolling, stored)]
        com = common_of(allsets)
        rs = [r[~np.isin(r, com)] for r in rolling]
        keep = [~np.isin(s, com) for s in stored]
        av = [s[m] for s, m in zip(stored, keep)]
        al = [lv_[m] for lv_, m in zip(stored_lv, keep)]

        def fn(i, j, rs=rs, av=av, al=al, lvl=lvl):
            t = max(lvl[i], lvl[j])
            inter = np.intersect1d(rs[i], rs[j], assume_unique=True).size
            inter += np.intersect1d(av[i], av[j], assume_unique=True).size
            na = rs[i].size + int(np.count_nonzero(al[i] >= t))
            nb = rs[j].size + int(np.count_nonzero(al[j] >= t))
            return inter, na, nb

        tot = [r.size + s.size for r, s in zip(rolling, stored)]
        sc_anch = np.mean([np.count_nonzero(lv_ >= level_of(u.size, sched))
                           for u in scan_units for v_, lv_ in [cand_scan(u, k, a)]])
        big = sizes >= 500_000
        counts = (
            f"fps 1-3KB med {np.median([tot[i] for i in np.flatnonzero(sm)]):.0f} "
            f"6-12KB per KB {np.mean([tot[i] / sizes[i] * 1000 for i in np.flatnonzero(mid)]):.1f} "
            f">=500KB per KB {np.mean([tot[i] / sizes[i] * 1000 for i in np.flatnonzero(big)]):.2f} "
            f"scan-like per file {scan_roll + sc_anch:.0f}"
        )
        report(name, score_all(fn), counts)
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
