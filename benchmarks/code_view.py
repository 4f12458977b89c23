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

Two more sections say how far a figure of the table can be trusted.  *Every window* scores the
same views by exact set arithmetic over every 50-unit window (no sampling: what the sampled scores
estimate, free of the luck of one hash).  *Equivalent hashes* re-runs the product with the units of
both views shifted by k * 0x1000 (another equally good hash: other windows are selected, a code
window still equals the text window with the same units); the spread is the sampling noise of the
table's rows, whose gaps of a few pairs mean nothing.

Measured: version 10's 0.91 % false positives and 0.381 heavy at 15 % were a lucky draw (over 12
equivalent hashes: 1.27 % (0.9-1.5), heavy 0.39; every window: 1.25 %, heavy 0.372, and 0.292 at
<= 1 %).  The tokenizer's "names -> one unit" beat it in the table (0.416 heavy) because it
*drops* operators instead of turning them into spaces: ``a.b(c)`` becomes adjacent units, a
50-unit window covers more code, fewer independent solutions match on structure alone (averaged
over hashes its heavy recall at 15 % is no higher: 0.364 vs 0.375).  Version 11 keeps that
effect without reading the source's white space (``code.glue``: no space between two names) and
reads primitive types as names (``code.TYPE_NAMES``): over 12 equivalent hashes 0.94 % false
positives, heavy 0.395, light 0.843; every window 1.02 %, heavy 0.416 (0.416 at <= 1 %).  No
code view tried (here: numbers, literals, operators, 1-8 units per name; in exploratory runs not
kept here: statement n-grams, denser code-view levels, 25-40-unit windows, keyword classes such as
for/while, the union of both views' matches instead of the better view) reaches 0.50 heavy at
<= 1 % false positives over every window: the corpus' "unrelated" same-task Java solutions score as high as
L4-L6 plagiarism (one is a near copy).

Run: ``python3 benchmarks/code_view.py [--quick]`` (about 80 s; ``--quick``, the table's first rows only, 10 s).  Nothing is
special-cased per file or path: source files are recognised by content (``code.looks_like_code``).
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


#: The tokenizer's keywords: the product's as of ALGORITHM_VERSION 10 (primitive types kept), so its
#: rows stay comparable with the figures quoted in ``simscan.fingerprint.code``.
_TOKEN_KEYWORDS = C.KEYWORDS | C.TYPE_NAMES


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
            if idm == "keep" or tok in _TOKEN_KEYWORDS:
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


def product_form(text: str, ops: str = "space", numbers: str = "keep", glue: bool = True,
                 types: bool = True) -> np.ndarray:
    """Variants of the product's code view; the defaults are the product (``code.code_units``).
    ``ops``: "space" (the product: operators and punctuation outside comments and literals become
    white space) or "drop" (they vanish, as in ``token_units``: ``a.b`` -> two adjacent units);
    ``numbers``: keep | ph (a number outside comments and literals -> one unit of its own);
    ``glue``: no space between two adjacent placeholders (``code.glue``); ``types``: primitive
    type keywords are names (``code.TYPE_NAMES``), else they keep their text as keywords do.
    ``glue=False, types=False`` is the code view of ALGORITHM_VERSION 10."""
    u = np.frombuffer(C.code_form(text).encode("utf-32-le", "surrogatepass"), dtype="<u4").copy()
    src = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    prot = np.zeros(u.size + 1, dtype=np.int64)
    for a, b in (m.span() for m in _PROTECTED.finditer(text)):
        prot[a] += 1
        prot[b] -= 1
    free = np.cumsum(prot[:-1]) == 0
    if not types:
        for m in re.finditer(r"\b(?:" + "|".join(sorted(C.TYPE_NAMES)) + r")\b", text):
            a, b = m.span()
            if free[a] and u[a] == C._PH:
                u[a:b] = src[a:b]
    if ops == "drop":
        cls = np.array([not (chr(c).isalnum() or chr(c).isspace() or c in (C._PH, _FILL, 0x5F)) for c in u.tolist()],
                       dtype=bool) if u.size else np.zeros(0, dtype=bool)
        u[cls & free] = _FILL
    if numbers == "ph":
        form = u.tobytes().decode("utf-32-le", "surrogatepass")
        for m in re.finditer(r"(?<![\w\ue000\u200b])\d\w*(?:\.\d\w*)?", form):
            a, b = m.span()
            if free[a]:
                u[a] = C._PH + 1
                u[a + 1 : b] = _FILL
    out = T.normalize(u[u != _FILL].tobytes().decode("utf-32-le", "surrogatepass"))
    return C.glue(out) if glue else out


_FILL = ord(C.FILLER)
# Comments, literals and include/import lines, leftmost first (the code view's protected spans).
_PROTECTED = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\[^\n]|[^\"\\\n])*(?:\"|\\?$)|'(?:\\[^\n]|[^'\\\n])*(?:'|\\?$)"
    r"|^[ \t]*#[ \t]*include\b[^\n]*|^[ \t]*(?:import|package|using|use)[ \t]+[\w.*: \t]+;",
    re.DOTALL | re.MULTILINE,
)


_P64 = np.uint64(0x100000001B3)
_P64_INV = np.uint64(pow(0x100000001B3, -1, 1 << 64))


def every_window(units: np.ndarray, window: int = 50) -> np.ndarray:
    """Distinct 62-bit hashes of *every* window of ``units`` (no sampling; a text shorter than a
    window is one value): ``sum u[i+j] P^(w-1-j) mod 2^64`` from prefix sums of ``u[m] P^-m``, mixed."""
    u = np.asarray(units, dtype=np.uint64) + np.uint64(1)
    n = u.size
    if n == 0:
        return np.empty(0, np.uint64)
    w = min(window, n)
    with np.errstate(over="ignore"):
        inv = np.cumprod(np.concatenate(([np.uint64(1)], np.full(n - 1, _P64_INV))))
        pre = np.concatenate(([np.uint64(0)], np.cumsum(u * inv, dtype=np.uint64)))
        pw = np.cumprod(np.concatenate(([np.uint64(1)], np.full(n - 1, _P64))))
        h = (pre[w:] - pre[:-w]) * pw[w - 1 :]
        h ^= h >> np.uint64(31)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(29)
    return np.unique(h >> np.uint64(2))


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


def equivalent_hashes(units_of, k_max: int, base: list, texts: list, tunits: list, tv: list, code_file: list,
                      sc: Scorer) -> None:
    """Print the spread of the max rule's figures over ``k_max`` equivalent hashes: the units of
    both views shifted by k * 0x1000 (a code window still equals the text window with the same
    units, so ``views.code_only`` works as in the product), binary files as they are."""
    empty = np.empty(0, np.uint64)
    thresholds = (0.10, 0.12, 0.13, 0.14, 0.15, 0.16, 0.18, 0.20)
    rows = []
    for k in range(k_max):
        shift = np.uint32(k * 0x1000)
        tvk, cvk = [], []
        for fp, t, u, own, is_code in zip(base, texts, tunits, tv, code_file):
            if u is None:
                tvk.append(own)
                cvk.append((empty, empty))
                continue
            level = DEFAULT_PARAMS.text_level(fp.units)
            r, a = hashed(u + shift, level)
            tr, ta = V.tag_rolling(r, V.TEXT), V.tag_anchored(a, V.TEXT)
            tvk.append((tr, ta))
            if is_code:
                cr, ca = hashed(units_of(t) + shift, level)
                cvk.append((V.code_only(cr, tr, "rolling"), V.code_only(ca, ta, "anchored")))
            else:
                cvk.append((empty, empty))
        ts, cv = sc.score(tvk), sc.score(cvk, CODE_MIN_SHARED)
        m = {key: np.maximum(ts[key], cv[key]) for key in ts}
        s = summary(m)
        rows.append([s["fp"], s["plagiarism_light"], s["plagiarism_heavy"], s["plagiarism_light@1%"],
                     s["plagiarism_heavy@1%"]]
                    + [float(np.mean(m[lab] >= t)) for t in thresholds for lab in ("unrelated", *LABELS[3:])])
    a = np.array(rows)
    for label, col in zip(("FP", "light", "heavy", "light@1%FP", "heavy@1%FP"), a.T):
        print(f"  {label:11s} mean {col.mean():.3f}  min {col.min():.3f}  max {col.max():.3f}   (k = 0: {col[0]:.3f})")
    print("  threshold -> mean FP, light, heavy:  " + "  ".join(
        f"{100 * t:.0f}: {100 * a[:, 5 + 3 * i].mean():.2f}% {a[:, 6 + 3 * i].mean():.3f} {a[:, 7 + 3 * i].mean():.3f}"
        for i, t in enumerate(thresholds)))


def cost(names: list, data: dict, code_file: list) -> None:
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
    forms: list[tuple[str, dict]] = [
        ("version 10 (types kept, names spaced)", {"glue": False, "types": False}),
        ("product, names spaced (no glue)", {"glue": False}),
        ("product, primitive types kept", {"types": False}),
        ("product, operators dropped", {"ops": "drop"}),
        ("product, numbers -> one unit", {"numbers": "ph"}),
    ]
    for name, v in forms[: 1 if quick else None]:
        both(name, lambda t, v=v: product_form(t, **v), only_max=True)

    if quick:
        cost(names, data, code_file)
        print(f"\n{time.perf_counter() - t0:.0f} s")
        return
    print("\nevery window (exact set arithmetic over all 50-unit windows, no sampling; max rule):")
    tw = [every_window(T.normalize(t)) if t is not None else every_window(np.frombuffer(data[n], np.uint8))
          for n, t in zip(names, texts)]
    every_text = sc.score([(w, empty) for w in tw])
    row("text view only", summary(every_text))
    code_b = np.uint64(1 << 62)

    def every(name: str, units_of) -> None:
        cs = [((np.setdiff1d(every_window(units_of(t)), w, assume_unique=True) | code_b) if c else empty, empty)
              for t, w, c in zip(texts, tw, code_file)]
        cv = sc.score(cs, CODE_MIN_SHARED)
        m = {k: np.maximum(every_text[k], cv[k]) for k in every_text}
        sweep = " ".join(f"{100 * t:.0f}:{100 * np.mean(m['unrelated'] >= t):.2f}%/{np.mean(m['plagiarism_heavy'] >= t):.3f}"
                         for t in (0.13, 0.15, 0.17, 0.20))
        row(f"max:     {name}", summary(m), f"FP/heavy {sweep}")

    every("PRODUCT (code.code_form)", C.code_units)
    every("names -> one unit", lambda t: token_units(t, {}))
    for name, v in forms[: 1 if quick else None]:
        every(name, lambda t, v=v: product_form(t, **v))
    if not quick:
        every("names -> 3 units", lambda t: token_units(t, {"plen": 3}))
        every("names -> one unit, operators kept", lambda t: token_units(t, {"ops": "keep"}))

    k_max = 2 if quick else 12
    print(f"\nequivalent hashes: both views' units shifted by k * 0x1000, k < {k_max} (k = 0: the product's hash)")
    tunits = [T.normalize(t) if t is not None else None for t in texts]
    for name, units_of in (("PRODUCT", C.code_units),
                           ("version 10", lambda t: product_form(t, glue=False, types=False)))[: 1 if quick else None]:
        print(f" {name}:")
        equivalent_hashes(units_of, k_max, base, texts, tunits, tv, code_file, sc)

    cost(names, data, code_file)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
