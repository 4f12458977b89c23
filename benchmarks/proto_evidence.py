"""Which windows to keep, and passage evidence: prototypes measured on the evaluation corpus and
the embedded-passage corpus (issue 16).

Run: ``python3 benchmarks/proto_evidence.py [--quick | --schemes NAME,...] [--code-view today|idf]
[--common-text] [--hashes N] [--seed 16]`` (about 20 s a scheme on one core; ``--quick``: three).

For every scheme of ``SCHEMES`` (``proto_winnow``: today's selection, winnowing with a window
that grows with the file's length, winnowing beside today's anchors), on the same 50-unit
windows and values as the product:

1. **cost**: stored fingerprints per KB of the corpus (per source) and the selection's time in this
   numpy prototype (not the native one's);
2. **the guarantee**, measured on the embedded-passage corpus (``passages.build``, seed
   ``--seed``): of the planted verbatim passages of at least ``w_pair + 49`` units, how many
   share a counted fingerprint (must be all);
3. **what an edit does**: the share of each planted passage (>= 250 characters) that the pair's
   passages cover, and the longest passage found against the planted length, per edit;
4. **pairs**: every labelled pair of ``truth.csv`` and every pair of the embedded corpus is
   scored as the pair search would (exact set arithmetic at the pair's level, values held by
   more than 50 distinct contents dropped -- or, ``--common-text``, every fingerprint inside
   common text, ``proto_winnow.common_text`` --, the code view counted with 5 shared values and
   the better view kept; ``--code-view idf``: code-view values weighted by rarity) and gets its
   *passages*: shared fingerprints (first occurrences) chained on one diagonal while at most a gap
   apart (or, "chain", across small edits), made only of values held by at most k distinct
   contents, mapped to character ranges of the decoded texts.  Printed: recall per label and false
   positives (per source) of ``FIXED_RULES``, then the leave-one-source-out table of the rule "best
   >= T or longest passage >= L" (``accuracy.loso``: T, L, k and the chaining fitted on the
   other sources -- the most macro recall with <= 1 % false positives --, measured on the source
   left out);
5. ``--hashes N``: the scores alone over N equivalent hashes (every unit shifted), since one pair
   moves a figure by about a point.

Figures are printed, not asserted; the product stays untouched.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import proto_winnow as PW
from accuracy import loso, print_loso
from proto_winnow import FP, TODAY, Scheme, Stream

from simscan.fingerprint import DEFAULT_PARAMS, decode_bytes, fingerprint_bytes
from simscan.fingerprint import code as C
from simscan.similarity.views import CODE_MIN_SHARED

W = PW.W
INF = 1 << 30  # "no passage rule"
LEVELS = "t(u) 0..7: <512, 512, 1024, 2048, -, 4096, 8192, >=16384 units"

SCHEMES: dict[str, Scheme] = {
    "today": TODAY,
    "w100+anchors": Scheme("winnow w=100 + today's anchors", "winnow+anchors", (100,)),
    "w150+anchors": Scheme("winnow w=150 + today's anchors", "winnow+anchors", (150,)),
    "w100": Scheme("winnow w=100 (fixed)", "winnow", (100,) * 8),
    "wL-150": Scheme("winnow, w by level 4,6,12,24,-,48,96,150", "winnow", (4, 6, 12, 24, 48, 48, 96, 150)),
    "wL-200": Scheme("winnow, w by level 4,6,12,24,-,48,96,200", "winnow", (4, 6, 12, 24, 48, 48, 96, 200)),
    "wL-100": Scheme("winnow, w by level 4,6,12,24,-,48,64,100", "winnow", (4, 6, 12, 24, 48, 48, 64, 100)),
    "wL-match": Scheme("winnow, w by level 4,6,14,26,-,64,96,100", "winnow", (4, 6, 14, 26, 64, 64, 96, 100)),
    "wL-64": Scheme("winnow, w by level 4,6,12,24,-,48,64,64", "winnow", (4, 6, 12, 24, 48, 48, 64, 64)),
    "wL-dense": Scheme("winnow, w by level 3,4,8,16,-,32,64,100", "winnow", (3, 4, 8, 16, 32, 32, 64, 100)),
    "wL-sparse": Scheme("winnow, w by level 8,12,24,48,-,96,150,200", "winnow", (8, 12, 24, 48, 96, 96, 150, 200)),
}
QUICK = ("today", "wL-150", "wL-100")
#: Rules printed for every scheme besides the leave-one-source-out fit (T, L, k, chaining).
FIXED_RULES = (
    {"T": 15, "L": INF, "k": 50, "chain": "strict"},
    {"T": 15, "L": 150, "k": 50, "chain": "strict"},
    {"T": 15, "L": 100, "k": 10, "chain": "strict"},
    {"T": 15, "L": 150, "k": 10, "chain": "strict"},
    {"T": 15, "L": 150, "k": 10, "chain": "chain"},
    {"T": 15, "L": 100, "k": 10, "chain": "chain"},
    {"T": 15, "L": 100, "k": 5, "chain": "chain"},
    {"T": 20, "L": 100, "k": 10, "chain": "chain"},
)


# ----------------------------------------------------------------------------------------------
# Preparing files


@dataclass
class Prepared:
    names: list[str]
    fp: list  # product Fingerprints
    text: list  # decoded text or None
    ts: list  # text Stream or None
    cs: list  # code Stream or None
    dom: dict  # (file, view) -> dominance spans (computed once, shared by all winnow schemes)
    kb: np.ndarray


def prepare(names: list[str], data: dict[str, bytes]) -> Prepared:
    fps, texts, ts, cs = [], [], [], []
    for n in names:
        b = data[n]
        fps.append(fingerprint_bytes(b))
        t = decode_bytes(b).text
        texts.append(t)
        ts.append(PW.text_stream(t) if t is not None else None)
        cs.append(PW.code_stream(t) if t is not None and C.looks_like_code(t) else None)
    kb = np.array([len(data[n]) / 1024 for n in names])
    return Prepared(names, fps, texts, ts, cs, {}, kb)


def select(prep: Prepared, scheme: Scheme) -> list[tuple[FP | None, FP | None]]:
    """Per file: (text view, code view less its text twins), as the scheme stores them."""
    out = []
    for i, (st, cst) in enumerate(zip(prep.ts, prep.cs)):
        if st is None:
            out.append((None, None))
            continue
        t = _select(prep, scheme, st, (i, 0))
        c = None
        if cst is not None:
            # the code view uses the text's level (as the product: one level per file)
            c = PW.code_only(_select(prep, scheme, cst, (i, 1), units=st.units), t)
        out.append((t, c))
    return out


def _select(prep: Prepared, scheme: Scheme, st: Stream, key: tuple, units: int | None = None) -> FP:
    if units is not None and units != st.units:
        st = Stream(units, st.x, st.g, st.anchored, st.c0, st.c1, st.view)
    if scheme.kind == "today":
        return scheme.select(st)
    if key not in prep.dom:  # the spans serve every winnowing scheme
        prep.dom[key] = PW.dominance(PW.order_key(st))
    return scheme.select(st, prep.dom[key])


# ----------------------------------------------------------------------------------------------
# Pairs


@dataclass
class Features:
    copy: bool = False
    best: float = 0.0  # the better view's best score (percent)
    view: str = "text"
    best_text: float = 0.0
    best_code: float = 0.0
    inter_code: int = 0
    longest_text: int = 0  # characters (chaining "strict", every value)
    longest_code: int = 0
    shared_text: int = 0
    passages_text: list | None = None
    #: longest text passage per (chaining variant, k): made of values held by at most k distinct
    #: contents (``PASSAGE_DF``), chained as ``CHAINS[variant]`` says
    longest_by: dict | None = None


class Evaluator:
    """Pairs of one scheme's sets scored as the pair search would (see the module docstring)."""

    def __init__(self, prep: Prepared, scheme: Scheme, sets: list, min_df: int = 50, fraction: float = 0.001,
                 common_extra: np.ndarray | None = None, code_rule: str = "today", spread: bool = False) -> None:
        self.prep, self.scheme, self.sets, self.code_rule = prep, scheme, sets, code_rule
        rep: dict[bytes, int] = {}
        self.rep_of = [rep.setdefault(fp.content_hash, i) for i, fp in enumerate(prep.fp)]
        self.reps = sorted(set(self.rep_of))
        self.cutoff = max(min_df, math.ceil(fraction * len(self.reps)))
        allv = [s.val for r in self.reps for s in sets[r] if s is not None]
        v, c = np.unique(np.concatenate(allv), return_counts=True) if allv else (np.empty(0, np.uint64), np.empty(0, int))
        self.common = v[c > self.cutoff]
        self.values, self.df = v, c  # document frequency (distinct contents) of every value
        if spread:  # common *text*: every fingerprint inside a stretch of common ones (proto_winnow.common_text)
            span, coarse = self.spread_span()
            for pair in sets:
                for fp in pair:
                    if fp is not None:
                        fp.extra["common"] = PW.common_text(fp, self.common, span, coarse)
        self.n_code = sum(1 for r in self.reps if sets[r][1] is not None and sets[r][1].size)
        if common_extra is not None:
            self.common = np.union1d(self.common, common_extra)

    def spread_span(self) -> tuple[int, int]:
        """(longest gap between a file's coarsest fingerprints inside one stretch of text, the level
        key of a coarsest fingerprint): winnowing, the window of the coarsest level (its guarantee);
        today, 4 x 256 units around anchors of level 7 and rolling values (no guarantee)."""
        if self.scheme.kind == "winnow":
            return self.scheme.schedule[-1], self.scheme.schedule[-1]
        return 1024, DEFAULT_PARAMS.max_level

    def gap(self, level: int) -> int:
        """Units between neighbouring fingerprints of one passage: winnowing keeps a window in
        every w consecutive ones, so w; today's rolling picks are >= 50 apart (82 on average)."""
        if self.scheme.kind == "winnow":
            return max(W, level)
        if self.scheme.kind == "winnow+anchors":
            return max(W, self.scheme.schedule[0])
        return 2 * W

    def features(self, i: int, j: int, drift: int = 0, passages: bool = True) -> Features:
        f = Features()
        pf = self.prep.fp
        if pf[i].content_hash == pf[j].content_hash and pf[i].is_text == pf[j].is_text:
            f.copy, f.best = True, 100.0
            return f
        (ta, ca), (tb, cb) = self.sets[i], self.sets[j]
        if ta is None or tb is None:
            return f
        level = self.scheme.pair_level(ta.units, tb.units)
        gap = self.gap(level)
        et = PW.evidence(ta, tb, level, self.common, gap, drift, passages)
        f.best_text, f.longest_text, f.shared_text, f.passages_text = et.best, et.longest, et.shared, et.passages
        f.best = f.best_text
        if passages and et.inter:
            f.longest_by = {}
            if et.best >= SURE:  # reported by its score whatever the passages: spared the chaining
                f.longest_by = {(c, k): INF for c in CHAINS for k in PASSAGE_DF}
            else:
                ka, kb = et.matched
                df = self.df[np.searchsorted(self.values, ta.val[ka])]
                for c, (mult, dr) in CHAINS.items():
                    for k in PASSAGE_DF:
                        rare = df <= k
                        if c == "strict" and rare.all():
                            f.longest_by[(c, k)] = f.longest_text
                        else:
                            f.longest_by[(c, k)] = PW.passages(ta, tb, ka[rare], kb[rare], gap * mult, dr)[1]
        if ca is not None and cb is not None:
            ec = PW.evidence(ca, cb, level, self.common, gap, drift, passages)
            if ec.inter >= CODE_MIN_SHARED:
                f.best_code, f.inter_code, f.longest_code = ec.best, ec.inter, ec.longest
                if self.code_rule == "idf":
                    f.best_code = self.idf_best(ca, cb, level, ec)
                if f.best_code > f.best:
                    f.best, f.view = f.best_code, "code"
        return f

    def idf_best(self, a: FP, b: FP, level: int, ec: PW.Evidence) -> float:
        """The code view's best score with every value weighted by log(N / df): N files with a code
        view, df of them holding the value (``proto_codeview``'s "idf")."""
        def w(vals: np.ndarray) -> float:
            df = self.df[np.searchsorted(self.values, vals)]
            return float(np.log(self.n_code / df).sum())

        ma, mb = PW.counted(a, self.common, level), PW.counted(b, self.common, level)
        wi, wa, wb = w(a.val[ec.matched[0]]), w(a.val[ma]), w(b.val[mb])
        if wi <= 0 or wa <= 0 or wb <= 0:
            return 0.0
        return 100.0 * max(wi / (wa + wb - wi), wi / wa, wi / wb)

    def candidates(self) -> set[tuple[int, int]]:
        """Representative pairs sharing at least one value that is not common (either view)."""
        vals, own = [], []
        for r in self.reps:
            for s in self.sets[r]:
                if s is not None and s.size:
                    vals.append(s.val)
                    own.append(np.full(s.size, r))
        v, o = np.concatenate(vals), np.concatenate(own)
        keep = ~np.isin(v, self.common)
        v, o = v[keep], o[keep]
        order = np.lexsort((o, v))
        v, o = v[order], o[order]
        start = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
        length = np.diff(np.r_[start, v.size])
        out: set[tuple[int, int]] = set()
        for s, n in zip(start[length >= 2].tolist(), length[length >= 2].tolist()):
            own_ = sorted(set(o[s : s + n].tolist()))
            for x in range(len(own_)):
                for y in range(x + 1, len(own_)):
                    out.add((own_[x], own_[y]))
        return out


#: Passage evidence may be restricted to values held by at most k distinct contents (the common
#: cut-off, 50, applies anyway): boilerplate shared by fewer files than the cut-off (a licence in
#: 24 books, a feed template) is otherwise a passage.
PASSAGE_DF = (5, 10, 20, 50)
#: How matched fingerprints are chained into passages: (gap as a multiple of the scheme's gap,
#: drift of the diagonal allowed between neighbours, in units).  "strict": one diagonal, neighbours
#: within the gap (a verbatim run); "chain": across small edits (a replaced word moves the diagonal
#: by a few units).
CHAINS = {"strict": (1, 0), "chain": (2, 12)}
#: A pair scoring this much is reported by any rule of the grid: its passages are not chained.
SURE = 40.0


def rule_grid(ks: tuple[int, ...] = (50,), chains: tuple[str, ...] = ("strict",)) -> list[dict]:
    """From permissive to strict (``loso`` prefers the later of equals)."""
    return [{"T": t, "L": l, "k": k, "chain": c}
            for c in chains
            for k in sorted(ks, reverse=True)
            for t in (10, 12, 13, 14, 15, 17, 20, 25, 30)
            for l in (100, 125, 150, 175, 200, 250, 300, 400, 600, INF)]


class Decider:
    """The report rule over many pairs at once: a copy, or best >= T, or the longest text passage
    (chained as ``chain`` says, of values held by at most ``k`` distinct contents) >= L."""

    def __init__(self, feats: list[Features]) -> None:
        self.copy = np.array([f.copy for f in feats])
        self.best = np.array([f.best for f in feats])
        self.longest = {key: np.array([(f.longest_by or {}).get(key, 0) for f in feats])
                        for key in [(c, k) for c in CHAINS for k in PASSAGE_DF]}

    def __call__(self, p: dict) -> np.ndarray:
        return self.copy | (self.best >= p["T"] - 1e-9) | (self.longest[(p.get("chain", "strict"), p.get("k", 50))] >= p["L"])


# ----------------------------------------------------------------------------------------------
# Corpora


def eval_rows(ev: Evaluator, names: list[str], pairs: list[tuple[str, str, str]], sources: dict[str, str]) -> list:
    """(sources, label, Features) of the labelled pairs of the evaluation corpus."""
    idx = {n: i for i, n in enumerate(names)}
    rows = []
    for a, b, lab in pairs:
        rows.append(({sources[a]}, lab, ev.features(idx[a], idx[b])))
    return rows


def embedded_rows(ev: Evaluator, files: list[str], truth: list[dict], label_of: dict[str, str],
                  drift: int = 0) -> tuple[list, list]:
    """(rows, per-planted details): planted pairs labelled ``emb_<edit>`` (``emb_short`` below 250
    characters) and every other pair of the corpus ``unrelated_emb`` (only candidates can be
    reported; the rest are counted as negatives that no rule reports)."""
    idx = {n: i for i, n in enumerate(files)}
    planted = {}
    for t in truth:
        planted.setdefault(tuple(sorted((idx[t["src"]], idx[t["host"]]))), []).append(t)
    cands = ev.candidates()
    rows, details = [], []
    for key, ts in planted.items():
        f = ev.features(*key, drift=drift)
        for t in ts:
            lab = "emb_copies" if t["edit"] == "copies" else "emb_short" if t["length"] < 250 else f"emb_{t['edit']}"
            rows.append(({label_of[t["src"]], label_of[t["host"]]}, lab, f))
            details.append((t, f, key))
    zero = Features()
    n = len(files)
    for i in range(n):
        for j in range(i + 1, n):
            if (i, j) in planted:
                continue
            f = ev.features(i, j, drift=drift) if (i, j) in cands else zero
            rows.append(({label_of[files[i]], label_of[files[j]]}, "unrelated_emb", f))
    return rows, details


NEGATIVE = ("unrelated", "unrelated_emb")
POSITIVE_OBJECTIVE = ("exact", "near_duplicate", "similar", "plagiarism_light", "plagiarism_heavy",
                      "emb_verbatim", "emb_light")
REPORT_LABELS = POSITIVE_OBJECTIVE + ("emb_rewrap", "emb_reorder", "emb_words", "emb_copies", "emb_short")


# ----------------------------------------------------------------------------------------------
# What an edit does


def coverage(details: list) -> None:
    """Per edit: share of the planted passage (host side) covered by the pair's text passages,
    and the longest passage found / planted length (medians), for passages >= 250 characters."""
    by = defaultdict(lambda: ([], [], []))
    for t, f, key in details:
        if t["length"] < 250 or t["edit"] == "copies":
            continue
        s, e = t["host_range"]
        host_is_a = t["host"] < t["src"]  # pairs are keyed by sorted file index = sorted name
        cov = 0
        best_run = 0
        for a0, a1, b0, b1 in f.passages_text or []:
            h0, h1 = (a0, a1) if host_is_a else (b0, b1)
            o = max(0, min(h1, e) - max(h0, s))
            cov += o
            best_run = max(best_run, o)
        by[t["edit"]][0].append(min(1.0, cov / max(1, e - s)))
        by[t["edit"]][1].append(best_run / max(1, e - s))
        by[t["edit"]][2].append(1.0 if cov else 0.0)
    print("  what an edit does (planted passages >= 250 chars; host side): median share covered by passages, "
          "median longest passage / planted length, share with any passage")
    for e, (c, r, a) in sorted(by.items()):
        print(f"    {e:<9} n={len(c):<4} covered {np.median(c):.2f}  longest/planted {np.median(r):.2f}  any {np.mean(a):.2f}")


def guarantee(ev: Evaluator, details: list) -> None:
    """Planted verbatim passages long enough for the guarantee (``w_pair + 49`` units on both sides,
    estimated from the host's units) that share no counted fingerprint: must be none."""
    if ev.scheme.kind != "winnow":
        return
    miss = tot = 0
    for t, f, (i, j) in details:
        if t["edit"] not in ("verbatim", "rewrap") or t.get("unspaced") or t.get("copies", 1) > 1:
            continue
        ta, tb = ev.sets[i][0], ev.sets[j][0]
        level = ev.scheme.pair_level(ta.units, tb.units)
        st = ev.prep.ts[i if ev.prep.names[i] == t["host"] else j]
        s, e = t["host_range"]
        units = int(np.count_nonzero((st.c0 >= s) & (st.c1 <= e))) + W - 1
        if units < level + W - 1:
            continue
        tot += 1
        if not (f.best_text > 0):
            miss += 1
    print(f"  guarantee: {tot - miss} of {tot} verbatim/re-wrapped passages of >= w_pair + 49 units share a fingerprint")


def cost(prep: Prepared, sets: list, scheme: Scheme) -> str:
    by = defaultdict(lambda: [0, 0.0])
    for n, (t, c), kb in zip(prep.names, sets, prep.kb):
        k = (t.size if t else 0) + (c.size if c else 0)
        by[n.split("/")[0]][0] += k
        by[n.split("/")[0]][1] += kb
    tot = sum(v[0] for v in by.values()) / sum(v[1] for v in by.values())
    return f"{tot:5.1f} fp/KB (" + ", ".join(f"{s} {v[0] / v[1]:.1f}" for s, v in sorted(by.items())) + ")"


def selection_time(prep: Prepared, scheme: Scheme, limit: int = 200) -> float:
    """Seconds per MB of text of this prototype's selection (dominance included), on ``limit`` files."""
    t0 = time.perf_counter()
    units = 0
    for st in [s for s in prep.ts if s is not None][:limit]:
        units += st.units
        if scheme.kind == "today":
            PW.today_positions(st, DEFAULT_PARAMS.text_level(st.units))
        else:
            d = PW.dominance(PW.order_key(st))
            np.flatnonzero(d >= scheme.file_level(st.units))
    return (time.perf_counter() - t0) / max(1e-9, units / 1e6)


# ----------------------------------------------------------------------------------------------


def run(schemes: list[str], seed: int, code_rule: str = "today", spread: bool = False) -> dict:
    import passages as PS
    from fingerprint_tuning import ROOT, load

    t0 = time.perf_counter()
    names, data, pairs = load()
    sources = {n: n.split("/")[0] for n in names}
    prep = prepare(names, data)
    tmp = Path(f"/tmp/simscan-passages-{seed}")
    if not (tmp / "truth.jsonl").exists():
        PS.build(ROOT, tmp, seed)
    truth = PS.read_truth(tmp)
    files = PS.corpus_files(tmp)
    label_of = PS.labels_of(tmp)
    emb = prepare(files, {f: (tmp / f).read_bytes() for f in files})
    print(f"prepared {len(names)} corpus files and {len(files)} embedded-corpus files ({len(truth)} passages) "
          f"in {time.perf_counter() - t0:.0f} s", flush=True)
    results = {}
    for name in schemes:
        scheme = SCHEMES[name]
        t1 = time.perf_counter()
        sets = select(prep, scheme)
        esets = select(emb, scheme)
        ev = Evaluator(prep, scheme, sets, code_rule=code_rule, spread=spread)
        eev = Evaluator(emb, scheme, esets, code_rule=code_rule, spread=spread)
        rows = eval_rows(ev, names, pairs, sources)
        erows, details = embedded_rows(eev, files, truth, label_of)
        print(f"\n=== {name}: {scheme.name}; code view: {code_rule}; common {'text' if spread else 'values'}")
        print(f"  cost: {cost(prep, sets, scheme)}; embedded corpus {cost(emb, esets, scheme)}; "
              f"selection {selection_time(prep, scheme):.2f} s/MB (numpy prototype)")
        guarantee(eev, details)
        coverage(details)
        allrows = rows + erows
        decide = Decider([r[2] for r in allrows])
        fixed(allrows, decide)
        table = loso(allrows, rule_grid(PASSAGE_DF, tuple(CHAINS)), decide, POSITIVE_OBJECTIVE, NEGATIVE)
        print(f"  leave-one-source-out, rule: best >= T or longest passage >= L (values held by <= k contents; "
              f"k in {PASSAGE_DF}, chaining {tuple(CHAINS)}):")
        print_loso(table, REPORT_LABELS, NEGATIVE, fmt=_fmt)
        results[name] = (table, rows, erows, details)
        print(f"  ({time.perf_counter() - t1:.0f} s)", flush=True)
    return results


def fixed(rows: list, decide: Decider) -> None:
    """Recall per label and false positives of ``FIXED_RULES`` on every row."""
    labs = np.array([r[1] for r in rows])
    first = np.array([min(r[0]) if len(r[0]) == 1 else "mixed" for r in rows])
    names = [lab.replace("plagiarism_", "").replace("near_duplicate", "near") for lab in REPORT_LABELS]
    print(f"  {'rule':<26}" + "".join(f"{n[:10]:>11}" for n in names) + f"{'FP unrel':>16}{'FP unrel_emb':>18}"
          + "   FP unrel by source")
    for p in FIXED_RULES:
        d = decide(p)
        cells = "".join(f"{d[labs == lab].mean():>11.3f}" if (labs == lab).any() else f"{'-':>11}" for lab in REPORT_LABELS)
        fp = [f"{100 * d[labs == n].mean():.2f}% ({int(d[labs == n].sum())})" for n in NEGATIVE]
        neg = labs == "unrelated"
        by = " ".join(f"{s[:4]} {int(d[neg & (first == s)].sum())}/{int((neg & (first == s)).sum())}"
                      for s in sorted(set(first[neg])))
        print(f"  {_fmt(p):<26}" + cells + f"{fp[0]:>16}{fp[1]:>18}   {by}")


def hash_spread(schemes: list[str], k_max: int, code_rule: str, spread: bool) -> None:
    """Scores alone (no passages) of the labelled pairs over ``k_max`` equivalent hashes (every unit
    shifted by k * 0x1000, ``proto_codeview.shifted_prep``): 1 pair moves a figure by ~1 point."""
    import proto_codeview as PC
    from fingerprint_tuning import load

    names, data, pairs = load()
    prep0 = prepare(names, data)
    idx = {n: i for i, n in enumerate(names)}
    res: dict[str, list] = defaultdict(list)
    for k in range(k_max):
        prep = prep0 if k == 0 else PC.shifted_prep(prep0, k)
        for name in schemes:
            scheme = SCHEMES[name]
            ev = Evaluator(prep, scheme, select(prep, scheme), code_rule=code_rule, spread=spread)
            best: dict[str, list] = defaultdict(list)
            for a, b, lab in pairs:
                f = ev.features(idx[a], idx[b], passages=False)
                best[lab].append(100.0 if f.copy else f.best)
            neg = np.array(best["unrelated"])
            thr = np.sort(neg)[::-1][int(0.01 * neg.size)]
            res[name].append([(neg >= 15).mean()] + [np.mean(np.array(best[lab]) >= 15) for lab in
                             ("plagiarism_light", "plagiarism_heavy", "similar")]
                             + [np.mean(np.array(best[lab]) > thr) for lab in ("plagiarism_light", "plagiarism_heavy")])
    print(f"\nscores alone over {k_max} equivalent hashes (mean; FP min-max), code view {code_rule}, "
          f"common {'text' if spread else 'values'}:")
    print(f"  {'scheme':<14} {'FP at 15':>20} {'light':>7} {'heavy':>7} {'similar':>8}   at <= 1 % FP: light heavy")
    for name, v in res.items():
        a = np.array(v)
        print(f"  {name:<14} {100 * a[:, 0].mean():6.2f}% ({100 * a[:, 0].min():.2f}-{100 * a[:, 0].max():.2f}) "
              f"{a[:, 1].mean():7.3f} {a[:, 2].mean():7.3f} {a[:, 3].mean():8.3f}   {a[:, 4].mean():.3f} {a[:, 5].mean():.3f}")


def _l(x: int) -> str:
    return "inf" if x >= INF else str(x)


def _fmt(p: dict) -> str:
    return (f"T={p['T']:g} L={_l(p['L'])}" + (f" k={p['k']}" if p.get("k", 50) != 50 else "")
            + (" chain" if p.get("chain", "strict") != "strict" else ""))


def passages_main(out, truth, files, label_of, schemes, threshold, min_passage, k_passage=50, chain="strict",
                  code_rule="today", spread=False) -> None:
    """``passages.py --proto``: one scheme on the built corpus, with a fixed rule."""
    import passages as PS

    emb = prepare(files, {f: (out / f).read_bytes() for f in files})
    for name in schemes:
        scheme = SCHEMES[name]
        esets = select(emb, scheme)
        eev = Evaluator(emb, scheme, esets, code_rule=code_rule, spread=spread)
        p = {"T": threshold, "L": min_passage if min_passage is not None else INF, "k": k_passage, "chain": chain}
        found = {}
        for i, j in eev.candidates() | {tuple(sorted((files.index(t["src"]), files.index(t["host"])))) for t in truth}:
            f = eev.features(i, j)
            if Decider([f])(p)[0]:
                found[(files[i], files[j])] = PS.PairResult(f.best, f.longest_text, f.shared_text, f.view)
        PS.report(truth, files, found, label_of, f"prototype {name} ({scheme.name}), {_fmt(p)}, code view {code_rule}, "
                                                 f"common {'text' if spread else 'values'}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--schemes", default=None)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--code-view", default="today", choices=("today", "idf"),
                    help="code-view scores as today, or weighted by rarity (proto_codeview's idf)")
    ap.add_argument("--common-text", action="store_true", help="common text (proto_winnow.common_text), not values")
    ap.add_argument("--hashes", type=int, default=0, help="also the scores over this many equivalent hashes")
    args = ap.parse_args()
    names = args.schemes.split(",") if args.schemes else list(QUICK if args.quick else SCHEMES)
    run(names, args.seed, args.code_view, args.common_text)
    if args.hashes:
        hash_spread(names, args.hashes, args.code_view, args.common_text)


if __name__ == "__main__":
    main()
