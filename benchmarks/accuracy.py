"""Accuracy of simscan on the labelled evaluation corpus, through the command line.

Usage: python3 benchmarks/accuracy.py [--corpus ../shared/evalcorpus] [--threshold P] [--no-code-view]

Scans ``<corpus>/corpus`` into a temporary index with ``python -m simscan scan``, lists every
pair with ``python -m simscan pairs --min-similarity 0 --format json`` and scores each labelled
pair of ``truth.csv`` with the pair's best score (0 when not reported).  Files joined by
"exact"/"content" pairs are copies of each other, so a consumer reads the output as simscan
documents it: a pair of files is scored by the best reported pair between their copy classes
(simscan lists n copies as n-1 pairs against one of them, and every copy inherits that one's
pairs with other files, with the same scores).

Prints per label: recall at the threshold (default: simscan's DEFAULT_MIN_SIMILARITY), the
false-positive rate on ``unrelated`` pairs at the same threshold, ROC AUC against the
unrelated pairs, and a sweep of thresholds used to choose the default.  Then the false positives
per source, and the *leave-one-source-out* table (``loso``): for every source, the threshold (and
the shortest passage L, once the pairs carry issue 16's ``longest_passage``) fitted on the other
sources -- the most macro recall with <= 1 % false positives -- and the recall per label and
false positives it gets on the source left out; then the fit on all sources.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
LABELS = ("exact", "near_duplicate", "similar", "plagiarism_light", "plagiarism_heavy")
TARGETS = {"exact": 0.99, "near_duplicate": 0.97, "similar": 0.95, "plagiarism_light": 0.85, "plagiarism_heavy": 0.5}


def run_cli(args: list[str]) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    res = subprocess.run([sys.executable, "-m", "simscan", *args], check=False, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        sys.exit(f"simscan {' '.join(args)} failed ({res.returncode}):\n{res.stderr}")
    return res.stdout


def auc(pos: list[float], neg: list[float]) -> float:
    """ROC AUC = P(score(pos) > score(neg)) + P(equal)/2 (Mann-Whitney), by sorting."""
    if not pos or not neg:
        return float("nan")
    allv = sorted([(v, 1) for v in pos] + [(v, 0) for v in neg])
    # average ranks with ties
    ranks = [0.0] * len(allv)
    i = 0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1][0] == allv[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    rpos = sum(r for r, (_, lab) in zip(ranks, allv) if lab == 1)
    n1, n0 = len(pos), len(neg)
    return (rpos - n1 * (n1 + 1) / 2) / (n1 * n0)


def pair_scores(
    pairs: list[dict], root: Path
) -> tuple[dict[tuple[str, str], float], dict[str, str], dict[tuple[str, str], str]]:
    """Best score per (class, class), the copy class of each file (relative paths) and the kind
    of the best pair per (class, class)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    rel = []
    for p in pairs:
        a = os.path.relpath(p["a"], root)
        b = os.path.relpath(p["b"], root)
        rel.append((a, b, p))
        if p["kind"] in ("exact", "content"):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    best: dict[tuple[str, str], float] = defaultdict(float)
    kind: dict[tuple[str, str], str] = {}
    for a, b, p in rel:
        ka, kb = sorted((find(a), find(b)))
        if (ka, kb) not in kind or float(p["best"]) > best[(ka, kb)]:
            kind[(ka, kb)] = p["kind"]
        best[(ka, kb)] = max(best[(ka, kb)], float(p["best"]))
        if "longest_passage" in p:  # issue 16's contract, once the product reports it
            LONGEST[(ka, kb)] = max(LONGEST.get((ka, kb), 0), int(p["longest_passage"] or 0))
    return best, {x: find(x) for x in parent}, kind


#: Longest shared passage (characters) per (class, class), when the pairs carry ``longest_passage``.
LONGEST: dict[tuple[str, str], int] = {}
INF = 1 << 30
#: Grids of the leave-one-source-out fit (from permissive to strict).
THRESHOLDS = (5, 8, 10, 12, 13, 14, 15, 17, 20, 25, 30, 40)
MIN_PASSAGES = (100, 125, 150, 175, 200, 250, 300, 400, 600, INF)


def loso(
    rows: list, grid: list, decide_fn: Callable[[Any], np.ndarray], objective: Sequence[str],
    negatives: Sequence[str], fp_max: float = 0.01,
) -> dict:
    """Leave-one-source-out choice of a rule's parameters.

    ``rows``: (sources: a set of source names, label, ...); ``decide_fn(params)``: a bool array,
    per row, of whether the rule with these parameters reports the pair.  For every source s: the
    parameters of ``grid`` are fitted on the rows that touch no file of s -- the most macro recall
    over the ``objective`` labels present, with the false-positive rate of each ``negatives`` label
    <= ``fp_max`` on those rows (when no entry keeps it, the one that exceeds it least; ties: the
    later grid entry, which the grids order from permissive to strict) -- and measured on the rows
    that touch s.  (A budget per training source cannot be kept by any setting: today's code view
    alone puts 8 of the 84 unrelated IR-Plag pairs above 15 %.)  Also the fit on every source,
    measured on everything.  Returns {"folds": [(source, params, metrics)], "all": (params,
    metrics)}; metrics map each label to (reported, total)."""
    labels = [r[1] for r in rows]
    srcs = [r[0] for r in rows]
    every = sorted(set().union(*srcs))
    decide = np.array([decide_fn(p) for p in grid], dtype=bool).reshape(len(grid), len(rows))
    lab_arr = np.array(labels)
    masks = {lab: lab_arr == lab for lab in set(labels)}

    def metrics(mask: np.ndarray, k: int) -> dict:
        return {lab: (int(decide[k][mask & m].sum()), int((mask & m).sum())) for lab, m in masks.items()}

    def fit(mask: np.ndarray) -> int:
        excess = np.zeros(len(grid))  # how far the false positives exceed the budget (0: within it)
        for neg in negatives:
            m = mask & masks.get(neg, np.zeros(len(rows), bool))
            if m.any():
                excess = np.maximum(excess, decide[:, m].mean(axis=1) - fp_max)
        recs = [decide[:, mask & masks[lab]].mean(axis=1) for lab in objective if lab in masks and (mask & masks[lab]).any()]
        rec = np.mean(recs, axis=0) if recs else np.zeros(len(grid))
        score = np.round(-np.maximum(excess, 0.0), 12), np.round(rec, 12)
        order = np.lexsort((np.arange(len(grid)), score[1], score[0]))
        return int(order[-1])

    folds = []
    for s in every:
        touch = np.array([s in x for x in srcs])
        k = fit(~touch)
        folds.append((s, grid[k], metrics(touch, k)))
    k = fit(np.ones(len(rows), dtype=bool))
    return {"folds": folds, "all": (grid[k], metrics(np.ones(len(rows), dtype=bool), k))}


def print_loso(table: dict, labels: Sequence[str], negatives: Sequence[str], fmt: Callable[[Any], str] = str) -> None:
    """The leave-one-source-out table: per held-out source, the parameters fitted without it and
    recall per label / false positives measured on it; then the fit on all sources."""
    labs = [lab for lab in labels if any(m.get(lab, (0, 0))[1] for _, _, m in table["folds"])]
    short = {lab: lab.replace("plagiarism_", "plag_").replace("near_duplicate", "near").replace("unrelated", "unrel")
             for lab in [*labs, *negatives]}
    print(f"  {'held out':<11} {'fitted on the rest':<18}" + "".join(f"{short[lab]:>11}" for lab in labs)
          + "".join(f"{'FP ' + short[n]:>20}" for n in negatives))

    def cells(m: dict) -> str:
        out = ""
        for lab in labs:
            h, t = m.get(lab, (0, 0))
            out += f"{h / t:>11.3f}" if t else f"{'-':>11}"
        for n in negatives:
            h, t = m.get(n, (0, 0))
            out += f"{f'{100 * h / t:.2f}% ({h}/{t})':>20}" if t else f"{'-':>20}"
        return out

    for s, p, m in table["folds"]:
        print(f"  {s:<11} {fmt(p):<18}" + cells(m))
    p, m = table["all"]
    print(f"  {'ALL (fit)':<11} {fmt(p):<18}" + cells(m))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "evalcorpus"))
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--index", default=None, help="reuse this index (scan skipped if it exists)")
    ap.add_argument("--no-code-view", action="store_true", help="score program source on its text only")
    ap.add_argument("--min-passage", type=int, default=None,
                    help="a pair is reported when it shares a passage this long (default: the product's; 0: off)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from simscan.similarity import DEFAULT_MIN_SIMILARITY
    from simscan.similarity.evidence import DEFAULT_MIN_PASSAGE

    threshold = DEFAULT_MIN_SIMILARITY if args.threshold is None else args.threshold
    min_passage = DEFAULT_MIN_PASSAGE if args.min_passage is None else args.min_passage
    min_passage = min_passage if min_passage > 0 else INF

    def reported_at(s: float, longest: int, t: float) -> bool:
        """The product's rule: best >= t, or a shared passage of ``min_passage`` characters."""
        return s >= t or longest >= min_passage
    corpus = Path(args.corpus).resolve()
    root = corpus / "corpus"
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        index = args.index or os.path.join(tmp, "eval.sqlite3")
        t0 = time.perf_counter()
        if not (args.index and os.path.exists(index)):
            run_cli(["scan", str(root), "--index", index, "--quiet"])
        t1 = time.perf_counter()
        out = run_cli(["pairs", "--index", index, "--min-similarity", "0", "--format", "json"]
                      + (["--no-code-view"] if args.no_code_view else []))
        t2 = time.perf_counter()
    pairs = [json.loads(line) for line in out.splitlines() if line.strip()]
    best, cls, best_kind = pair_scores(pairs, root)
    scores: dict[str, list[float]] = defaultdict(list)
    longests: dict[str, list[int]] = defaultdict(list)
    kinds: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    top_neg: list[tuple[float, str, str]] = []
    rows: list[tuple[set[str], str, float, int]] = []  # for the leave-one-source-out fit
    with open(corpus / "truth.csv", newline="") as f:
        for row in csv.DictReader(f):
            a, b = row["file_a"], row["file_b"]
            ca, cb = cls.get(a, a), cls.get(b, b)
            s = 100.0 if ca == cb else best.get(tuple(sorted((ca, cb))), 0.0)
            longest = INF if ca == cb else LONGEST.get(tuple(sorted((ca, cb))), 0)
            rows.append(({row["source"]}, row["label"], s, longest))
            scores[row["label"]].append(s)
            longests[row["label"]].append(longest)
            if reported_at(s, longest, threshold):
                k = "copy" if ca == cb else best_kind.get(tuple(sorted((ca, cb))), "?")
                kinds[row["label"]][k] += 1
            if row["label"] == "unrelated":
                top_neg.append((s, a, b))
    neg = scores["unrelated"]

    def rate(lab: str, t: float) -> float:
        got = [reported_at(s, ln, t) for s, ln in zip(scores[lab], longests[lab], strict=True)]
        return sum(got) / max(1, len(got))

    fp = rate("unrelated", threshold)
    rule = f"best >= {threshold:g} % or a passage of {min_passage} characters" if min_passage < INF else (
        f"best >= {threshold:g} %")
    print(f"scan {t1 - t0:.1f} s, pairs {t2 - t1:.1f} s, {len(pairs)} pairs reported")
    print(f"reported when {rule}: false-positive rate on unrelated = {fp:.4f} ({len(neg)} pairs)")
    reported = defaultdict(int)
    for p in pairs:
        reported[p["kind"]] += 1
    print("kinds of the reported pairs: " + ", ".join(f"{k} {v}" for k, v in sorted(reported.items())))
    views = defaultdict(int)
    for p in pairs:
        views[p.get("view", "text")] += 1
    print("views that scored them: " + ", ".join(f"{k} {v}" for k, v in sorted(views.items())))
    print(f"{'label':<18} {'n':>5} {'recall':>7} {'target':>7} {'AUC':>6}  kinds of the found pairs")
    for lab in LABELS:
        pos = scores[lab]
        rec = rate(lab, threshold)
        ok = "ok" if rec >= TARGETS[lab] else "SHORT"
        kd = ", ".join(f"{k} {v}" for k, v in sorted(kinds[lab].items()))
        print(f"{lab:<18} {len(pos):>5} {rec:7.3f} {TARGETS[lab]:7.2f} {auc(pos, neg):6.3f}  {ok:<5}  {kd}")
    print(f"\nsweep ({rule.replace(f'{threshold:g}', 'P', 1)}): threshold -> FP on unrelated, recall per label")
    print("  P     FP    " + " ".join(f"{lab[:10]:>10}" for lab in LABELS))
    for t in (2, 5, 8, 10, 12, 13, 14, 15, 20, 25, 30, 40, 50):
        fpr = rate("unrelated", t)
        recs = [rate(lab, t) for lab in LABELS]
        print(f"  {t:<4} {fpr:.4f} " + " ".join(f"{r:10.3f}" for r in recs))
    top = sorted(neg, reverse=True)[:10]
    print("\nhighest scores of unrelated pairs:", ", ".join(f"{s:.1f}" for s in top))
    for s, a, b in sorted(top_neg, reverse=True)[:6]:
        print(f"  {s:5.1f}  {a}  {b}")
    passage_fp = [(ln, a, b) for (s, a, b), ln in zip(top_neg, longests["unrelated"], strict=True)
                  if ln >= min_passage and s < threshold]
    if passage_fp:
        print(f"unrelated pairs reported by a passage alone: {len(passage_fp)}")
        for ln, a, b in sorted(passage_fp, reverse=True)[:6]:
            print(f"  {ln:5d} chars  {a}  {b}")
    print_loso_fit(rows, threshold)


def print_loso_fit(rows: list[tuple[set[str], str, float, int]], threshold: float) -> None:
    """False positives per source at ``threshold``, then the leave-one-source-out table of the
    threshold (and of the shortest passage L, when the pairs carry ``longest_passage``): fitted on
    all sources but one (most macro recall with <= 1 % false positives), measured on that one."""
    score = np.array([r[2] for r in rows])
    longest = np.array([r[3] for r in rows])
    src = np.array([next(iter(r[0])) for r in rows])
    lab = np.array([r[1] for r in rows])
    print(f"\nfalse positives per source at {threshold:g} %: " + ", ".join(
        f"{s} {int((score[(src == s) & (lab == 'unrelated')] >= threshold).sum())}/{int(((src == s) & (lab == 'unrelated')).sum())}"
        for s in sorted(set(src))))
    with_passages = bool((longest[longest < INF] > 0).any())
    grid = [{"T": t, "L": ll} for ll in (MIN_PASSAGES if with_passages else (INF,)) for t in THRESHOLDS]

    def decide(p: dict) -> np.ndarray:
        return (score >= p["T"] - 1e-9) | (longest >= p["L"])

    table = loso(rows, grid, decide, LABELS, ("unrelated",))
    rule = "best >= T or longest passage >= L" if with_passages else "best >= T (the pairs carry no longest_passage)"
    print(f"\nleave-one-source-out, rule {rule}; fitted: most macro recall with <= 1 % false positives:")
    print_loso(table, LABELS, ("unrelated",),
               fmt=lambda p: f"T={p['T']:g}" + (f" L={p['L']}" if p["L"] < INF else ""))


if __name__ == "__main__":
    main()
