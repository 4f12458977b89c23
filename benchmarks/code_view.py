"""Source-code normalisation (the code view, issue 4): what each variant buys, on the evaluation corpus.

For every file of ``$SIMSCAN_EVALCORPUS`` (default ../shared/evalcorpus beside the repository)
this fingerprints, in memory, the text view (``fingerprint_bytes``, the product's own) and, for
files recognised as program source, several candidate *code views*: token streams built by a
plain tokenizer here (comments, literals, numbers, identifiers, operators each kept, dropped or
replaced as the variant says), hashed with the product's ``ManberHasher`` (50-unit windows,
rolling at 1/32 with the no-overlap rule, nested anchors at the file's level).  Labelled pairs
are scored as ``find_pairs`` does (exact set arithmetic at the coarser level of the two files,
values held by more than 50 distinct contents dropped, equal content hash = 100) either

* ``replace``: source files use the code view instead of the text view, or
* ``max``: each view is scored apart and the pair keeps the better one (the product's rule,
  ``simscan.similarity.views``).

As in the product, a code view leaves out the windows its file's text view already has
(``views.code_only``), and under ``max`` it scores a pair only with ``CODE_MIN_SHARED`` shared
values (``replace`` applies no such minimum: it would apply to every pair of source files).

Printed per variant: the false-positive rate on ``unrelated`` pairs and the recall of every
label at the default threshold, the recall at the best threshold with <= 1% false positives, ROC
AUC for the plagiarism labels, and code-view fingerprints per source file.  Then the sampling
noise of the product's variant (the same variant with its units shifted, which reshuffles which
windows the hash selects), and the cost of the code view (files/s of ``fingerprint_many`` on the
corpus' source files, fingerprints per file).

Run: ``python3 benchmarks/code_view.py [--quick]`` (about 30 s).  Nothing is special-cased per
file or path: source files are recognised by content (``code.looks_like_code``).
"""

from __future__ import annotations

import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fingerprint_tuning import load

from simscan.fingerprint import DEFAULT_PARAMS, decode_bytes, fingerprint_bytes, fingerprint_many
from simscan.fingerprint import code as C
from simscan.fingerprint import text as T
from simscan.fingerprint import views as V
from simscan.fingerprint.rolling import ManberHasher, anchored_levels
from simscan.similarity import DEFAULT_MIN_SIMILARITY
from simscan.similarity.views import CODE_MIN_SHARED

LABELS = ["exact", "near_duplicate", "similar", "plagiarism_light", "plagiarism_heavy"]
THR = DEFAULT_MIN_SIMILARITY / 100
COMMON_DF = 50
PH = 0x10FFF0  # one placeholder unit (any unit outside the text's alphabet)

_TOKEN = re.compile(
    r"(?P<lc>//[^\n]*)|(?P<bc>/\*.*?(?:\*/|\Z))|(?P<str>\"(?:\\.|[^\"\\\n])*\"?)|(?P<chr>'(?:\\.|[^'\\\n])*'?)"
    r"|(?P<id>[^\W\d]\w*)|(?P<num>\d[\w.]*)|(?P<sp>\s+)|(?P<op>.)",
    re.DOTALL,
)


def token_units(text: str, v: dict) -> np.ndarray:
    """A candidate code view of ``text`` as units.  ``v``: comments keep|drop; str keep|ph (the
    literal's words, or one placeholder); num keep|ph; ops keep|drop; sep: a space where the
    source has white space; id: keep | one (one placeholder; ``plen`` units long) | init (its
    first letter) | len (its length) | cap (capitalised or not) | baker (distance in
    identifiers to its previous use, Baker's parameterised matching; ``cap`` the farthest) |
    first (numbered by first occurrence in the file, JPlag/MOSS-like)."""
    out: list[int] = []
    last: dict[str, int] = {}
    first: dict[str, int] = {}
    nid = 0
    for m in _TOKEN.finditer(text):
        kind, tok = m.lastgroup, m.group()
        if kind in ("lc", "bc"):
            if v.get("comments", "keep") == "keep":
                out.extend(T.normalize(tok).tolist())
                out.append(32)
        elif kind == "sp":
            if v.get("sep", True) and out and out[-1] != 32:
                out.append(32)
        elif kind in ("str", "chr"):
            out.append(34)
            if v.get("str", "keep") == "keep":
                out.extend(T.normalize(tok[1:-1]).tolist())
                out.append(34)
        elif kind == "num":
            out.extend(ord(c) for c in tok.casefold()) if v.get("num", "keep") == "keep" else out.append(48)
        elif kind == "id":
            idm = v.get("id", "one")
            if idm == "keep" or tok in C.KEYWORDS:
                out.extend(ord(c) for c in tok.casefold())
            elif idm == "one":
                out.extend([PH] * v.get("plen", 1))
            elif idm == "init":
                out.append(PH - 0x10000 + ord(tok[0].casefold()[0]))
            elif idm == "len":
                out.append(PH - 100 + min(len(tok), 12))
            elif idm == "cap":
                out.append(PH - int(tok[0].isupper()))
            elif idm == "baker":
                d = nid - last[tok] if tok in last else 0
                last[tok] = nid
                nid += 1
                out.append(PH - 0x1000 + (d if d < v.get("cap", 64) else 0))
            elif idm == "first":
                first.setdefault(tok, len(first))
                out.append(PH - 0x8000 + first[tok])
        elif v.get("ops", "drop") == "keep":
            out.append(ord(tok))
    return np.array(out, dtype=np.uint32)


def hashed(units: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
    h = ManberHasher(DEFAULT_PARAMS.manber(True, level))
    h.feed(units.astype(np.uint32))
    return h.finish()


class Scorer:
    """Labelled pairs scored like ``find_pairs`` on given (rolling, anchored) sets per file."""

    def __init__(self, names: list[str], base: list, pairs: list[tuple[str, str, str]]) -> None:
        self.idx = {n: i for i, n in enumerate(names)}
        self.pairs = pairs
        self.content = [fp.content_hash for fp in base]
        self.is_text = [fp.is_text for fp in base]
        self.level = [DEFAULT_PARAMS.text_level(fp.units) if fp.is_text else 0 for fp in base]

    def score(self, sets: list[tuple[np.ndarray, np.ndarray]], min_shared: int = 1) -> dict[str, np.ndarray]:
        full = [np.union1d(r, a) for r, a in sets]
        seen: dict[bytes, np.ndarray] = {}
        for s, c in zip(full, self.content):
            seen.setdefault(c, s)
        v, cnt = np.unique(np.concatenate(list(seen.values())), return_counts=True)
        common = v[cnt > COMMON_DF]
        kept = [np.setdiff1d(s, common, assume_unique=True) for s in full]
        klev = []
        for s, t in zip(kept, self.is_text):
            lv = np.full(s.size, 32)
            an = (s >> np.uint64(63)) == 1
            if t and an.any():
                lv[an] = anchored_levels(s[an])
            klev.append(lv)
        out: dict[str, list[float]] = defaultdict(list)
        for a, b, lab in self.pairs:
            i, j = self.idx[a], self.idx[b]
            if self.content[i] == self.content[j]:
                out[lab].append(1.0)
                continue
            lv = max(self.level[i], self.level[j])
            inter = np.intersect1d(kept[i], kept[j], assume_unique=True).size
            na, nb = int((klev[i] >= lv).sum()), int((klev[j] >= lv).sum())
            ok = inter >= max(1, min_shared)
            out[lab].append(max(inter / (na + nb - inter), inter / na, inter / nb) if ok else 0.0)
        return {k: np.array(x) for k, x in out.items()}


def summary(sc: dict[str, np.ndarray]) -> dict[str, float]:
    neg = sc["unrelated"]
    thr1 = np.sort(neg)[::-1][int(np.floor(0.01 * neg.size))]
    out = {"fp": float(np.mean(neg >= THR))}
    for lab in LABELS:
        pos = sc[lab]
        out[lab] = float(np.mean(pos >= THR))
        out[lab + "@1%"] = float(np.mean(pos > thr1))
        out[lab + "_auc"] = float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
    return out


def row(name: str, s: dict[str, float], extra: str = "") -> None:
    rec = " ".join(f"{s[lab]:.3f}" for lab in LABELS)
    print(f"{name:34s} {100 * s['fp']:5.2f}%  {rec}   {s['plagiarism_light@1%']:.3f} {s['plagiarism_heavy@1%']:.3f}"
          f"   {s['plagiarism_light_auc']:.3f} {s['plagiarism_heavy_auc']:.3f}  {extra}", flush=True)


def main() -> None:
    quick = "--quick" in sys.argv
    t0 = time.perf_counter()
    names, data, pairs = load()
    base = [fingerprint_bytes(data[n]) for n in names]
    texts = [decode_bytes(data[n]).text for n in names]
    code_file = [t is not None and C.looks_like_code(t) for t in texts]
    sc = Scorer(names, base, pairs)

    def text_view(fp):
        if not fp.is_text:
            return fp.rolling, fp.anchored
        return (fp.rolling[V.value_views(fp.rolling, True) == V.TEXT],
                fp.anchored[V.value_views(fp.anchored, True) == V.TEXT])

    tv = [text_view(fp) for fp in base]
    empty = np.empty(0, np.uint64)
    text_scores = sc.score(tv)
    kinds = defaultdict(int)
    for n, c in zip(names, code_file):
        kinds[n.split("/")[0]] += c
    print(f"{len(names)} files, {len(pairs)} labelled pairs; recognised as source code: {dict(kinds)} "
          f"({time.perf_counter() - t0:.0f} s)")
    print(f"threshold {100 * THR:g}% (DEFAULT_MIN_SIMILARITY); recall at <=1% FP uses the best threshold\n")
    print(f"{'variant':34s} {'FP':>6s}  exact near  simil light heavy   @<=1%FP light heavy   AUC light heavy")

    def code_sets(units_of) -> list[tuple[np.ndarray, np.ndarray]]:
        """Code-view sets as the product stores them: tagged, less the text view's own windows."""
        out = []
        for fp, (tr, ta), t, is_code in zip(base, tv, texts, code_file):
            if is_code:
                cr, ca = hashed(units_of(t), DEFAULT_PARAMS.text_level(fp.units))
                out.append((V.code_only(cr, tr, "rolling"), V.code_only(ca, ta, "anchored")))
            else:
                out.append((empty, empty))
        return out

    def both(name: str, units_of, only_max: bool = False) -> None:
        cs = code_sets(units_of)
        nfp = np.mean([r.size + a.size for (r, a), c in zip(cs, code_file) if c])
        if not only_max:
            rep = sc.score([c if is_code else t for c, t, is_code in zip(cs, tv, code_file)])
            row(f"replace: {name}", summary(rep), f"{nfp:.0f} fp/source file")
        cv = sc.score(cs, CODE_MIN_SHARED)
        row(f"max:     {name}", summary({k: np.maximum(text_scores[k], cv[k]) for k in text_scores}))

    row("text view only (ALGORITHM_VERSION 8)", summary(text_scores))
    product = (lambda t: C.code_units(t))
    both("PRODUCT (code.code_form)", product)
    variants: list[tuple[str, dict]] = [
        ("comments dropped, names kept", {"comments": "drop", "id": "keep"}),
        ("names kept (comments kept)", {"id": "keep"}),
        ("names -> one unit, comments dropped", {"comments": "drop"}),
        ("names -> one unit", {}),
        ("names -> one unit, operators kept", {"ops": "keep"}),
        ("names -> one unit, no spaces", {"sep": False}),
        ("names -> 3 units", {"plen": 3}),
        ("names -> 8 units", {"plen": 8}),
        ("names -> first letter", {"id": "init"}),
        ("names -> length", {"id": "len"}),
        ("names -> capitalised or not", {"id": "cap"}),
        ("names -> Baker distance (64)", {"id": "baker"}),
        ("names -> Baker distance (8)", {"id": "baker", "cap": 8}),
        ("names -> first-occurrence number", {"id": "first"}),
        ("names -> one unit, literals -> one", {"str": "ph"}),
        ("names -> one unit, numbers -> one", {"num": "ph"}),
    ]
    for name, v in variants[: 4 if quick else None]:
        both(name, lambda t, v=v: token_units(t, v))

    print("\nsampling noise of the product's variant (units shifted by k * 0x1000; max rule):")
    rows = []
    for k in range(1 if quick else 6):
        cs = code_sets(lambda t, k=k: C.code_units(t) + np.uint32(k * 0x1000))
        cv = sc.score(cs, CODE_MIN_SHARED)
        s = summary({key: np.maximum(text_scores[key], cv[key]) for key in text_scores})
        rows.append([s["fp"], s["plagiarism_light"], s["plagiarism_heavy"], s["plagiarism_light@1%"],
                     s["plagiarism_heavy@1%"]])
    a = np.array(rows)
    for label, col in zip(("FP", "light", "heavy", "light@1%FP", "heavy@1%FP"), a.T):
        print(f"  {label:11s} mean {col.mean():.3f}  min {col.min():.3f}  max {col.max():.3f}")

    print("\ncost on the corpus' source files (fingerprint_many, one call, best of 5, CPU):")
    src = [data[n] for n, c in zip(names, code_file) if c]
    mb = sum(map(len, src)) / 1e6
    for label, detect in (("without code view", lambda t: False), ("with code view", C.looks_like_code)):
        C_looks = C.looks_like_code
        C.looks_like_code = detect
        try:
            best = float("inf")
            for _ in range(5):
                c0 = time.process_time()
                fps = fingerprint_many(src)
                best = min(best, time.process_time() - c0)
        finally:
            C.looks_like_code = C_looks
        n_fp = np.mean([fp.fingerprint_count for fp in fps])
        print(f"  {label:18s} {len(src) / best:8.0f} files/s ({mb / best:5.1f} MB/s), {n_fp:.0f} fingerprints per file")
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
