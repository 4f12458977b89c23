"""Embedded passages (issue 16): does simscan find a shared paragraph between two long documents?

Usage::

    python3 benchmarks/passages.py [--corpus ../shared/evalcorpus] [--seed 16] [--out DIR]
                                   [--threshold P] [--min-passage CHARS]

1. **Builds** (seeded, from the dev texts of the evaluation corpus) a corpus of long documents
   holding passages of other documents:

   * documents: the latest revision of each PEP, one file per page of ``encodings`` (markup
     stripped; pages of at least 3,000 characters), excerpts of 10-40 KB from the middle of the
     Gutenberg books (the licence left out), and the five Wikipedia articles of ``clough``
     (sources only: they are 2-3 KB).  One file per ``group`` of ``files.csv``, so no two
     documents are versions of one another.  IR-Plag programs (under 1.7 KB) hold no passage of
     200 characters and are left out.
   * each label's documents are split into *sources* and *hosts*; a source gives 1-6 passages
     from disjoint regions, each 200-2,000 characters (log-uniform, cut at word borders,
     starting at a sentence), embedded at a sentence or paragraph border of a host from any
     label (a host takes up to 5 passages, each from another source);
   * each passage is embedded ``verbatim``, or edited: ``rewrap`` (white space collapsed, lines
     wrapped again at 40-100 characters), ``reorder`` (two neighbouring sentences swapped),
     ``words`` (words replaced by words of the host at 2, 5, 10 or 20 per 1,000 characters), or
     ``light`` (all three, words at 5 per 1,000 characters, at least one);
   * 15 % of the passages are copied into 2-8 hosts (each copy edited on its own): the hosts'
     pairs share the passage too (edit ``copies``), and its fingerprints are held by up to 9
     files (what a rule that leaves out values held by many files loses);
   * hosts are written as UTF-8 (70 %), UTF-8 with CR LF (15 %) or UTF-16 with a BOM (15 %);
     ``truth.jsonl`` records each passage's character range in its source and its host.

2. **Measures** the product -- ``simscan scan`` of the corpus into a temporary index, then
   ``simscan pairs --format json`` at the default settings (or ``--threshold`` /
   ``--min-passage``), and once more at ``--min-similarity 0`` -- for the planted (source, host)
   pairs: recall by edit and by passage length bucket (source characters: 200-249, 250-399,
   400-699, 700-1199, 1200-2000), and the false-positive rate over every other pair of the corpus
   (which share no planted text; "unrelated"); what share of each planted passage the reported
   longest passage covers; and the leave-one-source-out table of (threshold, L) for the rule
   "best >= T or longest passage >= L" (``accuracy.loso``).

Nothing here is fitted to a file: the corpus is drawn by the seed, and the same code serves
every scheme.
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import math
import os
import re
import sys
import tempfile
import textwrap
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy import run_cli

EDITS = ("verbatim", "light", "rewrap", "reorder", "words")
ROWS = (*EDITS, "copies")  # "copies": two hosts holding (each edited) copies of one passage
EDIT_WEIGHTS = (0.3, 0.3, 0.13, 0.13, 0.14)
WORD_RATES = (2, 5, 10, 20)  # words replaced per 1,000 characters ("words" edit)
LIGHT_RATE = 5
BUCKETS = ((200, 250), (250, 400), (400, 700), (700, 1200), (1200, 2001))
MAX_PER_HOST = 5
SPREAD = 0.15  # share of passages copied into several hosts (a paragraph many essays quote)
SPREAD_HOSTS = (2, 8)  # how many hosts then (uniform)


def bucket_name(b: tuple[int, int]) -> str:
    return f"{b[0]}-{b[1] - 1}"


def bucket_of(n: int) -> str:
    for b in BUCKETS:
        if b[0] <= n < b[1]:
            return bucket_name(b)
    return "other"


# ----------------------------------------------------------------------------------------------
# The document pool


@dataclass
class Doc:
    label: str  # the evaluation corpus' source
    name: str  # where it comes from (a path of the corpus, with an excerpt number)
    text: str


_TAG = re.compile(r"<[^>]{0,2000}>")


def clean_markup(text: str) -> str:
    """Markup left out (two rounds: feeds carry escaped HTML), white space runs kept short."""
    for _ in range(2):
        text = _TAG.sub(" ", html.unescape(text))
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    return re.sub(r"\n\s*\n\s*", "\n\n", text).strip()


def load_pool(corpus: Path, rng: np.random.Generator) -> list[Doc]:
    from simscan.fingerprint import decode_bytes

    with open(corpus / "files.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["split"] == "dev"]
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["source"], r["group"])].append(r)
    pool: list[Doc] = []
    for (source, group), rs in sorted(groups.items()):
        if source == "peps":
            def rev(r: dict) -> int:
                m = re.match(r"rev (\d+)/", r["role"])
                return int(m.group(1)) if m else 0
            r = max(rs, key=rev)
            pool.append(Doc(source, r["path"], _decode(corpus, r["path"], decode_bytes)))
        elif source == "encodings":
            utf8 = [r for r in rs if r["encoding"].lower() in ("utf-8", "ascii")]
            r = min(utf8 or rs, key=lambda r: r["path"])
            text = clean_markup(_decode(corpus, r["path"], decode_bytes))
            if len(text) >= 3000:
                pool.append(Doc(source, r["path"], text))
        elif source == "gutenberg":
            heads = sorted((r for r in rs if r["role"] == "head"), key=lambda r: r["path"]) or sorted(rs, key=lambda r: r["path"])
            text = _decode(corpus, heads[0]["path"], decode_bytes).replace("\r\n", "\n")
            lo, hi = int(0.15 * len(text)), int(0.9 * len(text))
            pos, k = lo, 0
            while pos < hi - 10_000:
                size = int(rng.integers(10_000, 40_000))
                end = text.find("\n\n", pos + size)
                end = hi if end < 0 or end > hi else end
                start = text.find("\n\n", pos)
                if start < 0 or end - start < 5_000:
                    break
                pool.append(Doc(source, f"{heads[0]['path']}#{k}", text[start:end].strip()))
                pos, k = end, k + 1
        elif source == "clough":
            for r in rs:
                if r["role"] == "orig":
                    pool.append(Doc(source, r["path"], _decode(corpus, r["path"], decode_bytes)))
    return distinct_docs(pool)


def distinct_docs(pool: list[Doc], shared_max: int = 100, rare: int = 3) -> list[Doc]:
    """``pool`` less documents that are versions of an earlier one: a pair sharing more than
    ``shared_max`` exact 50-unit windows held by at most ``rare`` documents (pages of one site
    in two feeds, one text filed under two groups).  Boilerplate held by more documents stays:
    it is what the false-positive count should meet."""
    from simscan.fingerprint.rolling import window_values
    from simscan.fingerprint.text import normalize

    vals, owner = [], []
    for i, d in enumerate(pool):
        u = normalize(d.text)
        v = np.unique(window_values(u, np.arange(max(0, u.size - 49)), 50))
        vals.append(v)
        owner.append(np.full(v.size, i))
    v, o = np.concatenate(vals), np.concatenate(owner)
    order = np.argsort(v, kind="stable")
    v, o = v[order], o[order]
    start = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    length = np.diff(np.r_[start, v.size])
    pairs: dict[tuple[int, int], int] = defaultdict(int)
    for s, n in zip(start[(length >= 2) & (length <= rare)].tolist(), length[(length >= 2) & (length <= rare)].tolist()):
        own = sorted(set(o[s : s + n].tolist()))
        for x in range(len(own)):
            for y in range(x + 1, len(own)):
                pairs[(own[x], own[y])] += 1
    drop = set()
    for (x, y), c in sorted(pairs.items()):
        if c > shared_max and x not in drop:
            drop.add(y)
    return [d for i, d in enumerate(pool) if i not in drop]


def _decode(corpus: Path, rel: str, decode_bytes) -> str:
    d = decode_bytes((corpus / "corpus" / rel).read_bytes())
    return d.text or ""


# ----------------------------------------------------------------------------------------------
# Edits

_WORD = re.compile(r"\w{3,}")
_SENT = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s*")


def is_unspaced(text: str) -> bool:
    """Text of a script written without spaces (Chinese, Japanese): few spaces per character."""
    return text.count(" ") + text.count("\n") < len(text) / 25


def replace_words(p: str, rate: float, vocab: list[str], rng: np.random.Generator) -> str:
    n = max(1, round(rate * len(p) / 1000))
    if is_unspaced(p):
        chars = [c for c in p if c.isalnum()]
        out = list(p)
        for i in rng.choice(len(p) - 1, size=min(n, len(p) - 1), replace=False).tolist():
            if out[i].isalnum():
                out[i] = chars[int(rng.integers(len(chars)))]
                out[i + 1] = chars[int(rng.integers(len(chars)))]
        return "".join(out)
    spans = [m.span() for m in _WORD.finditer(p)]
    if not spans:
        return p
    pick = sorted(rng.choice(len(spans), size=min(n, len(spans)), replace=False).tolist(), reverse=True)
    for k in pick:
        s, e = spans[k]
        old = p[s:e]
        new = old
        while new.casefold() == old.casefold():
            new = vocab[int(rng.integers(len(vocab)))]
        p = p[:s] + new + p[e:]
    return p


def swap_sentences(p: str, rng: np.random.Generator) -> str:
    parts = [s for s in _SENT.split(p) if s.strip()]
    if len(parts) < 2:
        return p
    k = int(rng.integers(len(parts) - 1))
    parts[k], parts[k + 1] = parts[k + 1], parts[k]
    sep = "" if is_unspaced(p) else " "
    return sep.join(x.strip() for x in parts)


def rewrap(p: str, rng: np.random.Generator) -> str:
    flat = re.sub(r"\s+", " ", p).strip()
    return textwrap.fill(flat, width=int(rng.integers(40, 101)))


def edit(p: str, kind: str, rate: float, vocab: list[str], rng: np.random.Generator) -> str:
    if kind in ("words", "light"):
        p = replace_words(p, rate, vocab, rng)
    if kind in ("reorder", "light"):
        p = swap_sentences(p, rng)
    if kind in ("rewrap", "light"):
        p = rewrap(p, rng)
    return p


# ----------------------------------------------------------------------------------------------
# Building the corpus


def choose_passage(text: str, lo: int, hi: int, length: int, rng: np.random.Generator) -> tuple[int, int] | None:
    """[s, e) in text[lo:hi] of about ``length`` characters, starting after a sentence end (or at a
    word border), ending at a word border."""
    if hi - lo < 200:
        return None
    length = min(length, hi - lo)
    s0 = lo + int(rng.integers(0, max(1, hi - lo - length + 1)))
    m = _SENT.search(text, s0, min(hi, s0 + 300))
    s = m.end() if m and m.end() < hi - 200 else s0
    while s < hi and s > lo and text[s - 1].isalnum() and text[s].isalnum():
        s += 1
    e = min(hi, s + length)
    while e < hi and text[e - 1].isalnum() and text[e].isalnum():
        e += 1
    if e - s < 200:
        return None
    return s, e


def insertion_points(text: str, k: int, rng: np.random.Generator) -> list[tuple[int, bool]]:
    """k distinct (offset, as paragraph) between 10 % and 90 % of ``text``, at a paragraph or sentence end."""
    n = len(text)
    cands = [m.end() for m in re.finditer(r"\n\n", text)] + [m.end() for m in _SENT.finditer(text) if m.end() > m.start()]
    cands = sorted({c for c in cands if 0.1 * n <= c <= 0.9 * n})
    if len(cands) < k:
        cands = sorted({int(x) for x in rng.integers(int(0.1 * n), int(0.9 * n) + 1, size=4 * k)})
    pick = sorted(rng.choice(len(cands), size=k, replace=False).tolist())
    return [(cands[i], bool(rng.random() < 0.5)) for i in pick]


def build(corpus: Path, out: Path, seed: int) -> list[dict]:
    """Write the corpus under ``out`` (src/, host/) and return the truth records (also written
    to ``out/truth.jsonl``)."""
    rng = np.random.default_rng(seed)
    pool = load_pool(corpus, rng)
    by_label: dict[str, list[Doc]] = defaultdict(list)
    for d in pool:
        by_label[d.label].append(d)
    sources: list[Doc] = []
    hosts: list[Doc] = []
    for label, docs in sorted(by_label.items()):
        order = rng.permutation(len(docs)).tolist()
        if label == "clough":
            sources += [docs[i] for i in order]
            continue
        half = len(order) // 2
        sources += [docs[i] for i in order[:half]]
        hosts += [docs[i] for i in order[half:]]
    vocab_all = sorted({w for d in hosts for w in _WORD.findall(d.text) if w.isalpha() and len(w) <= 12})
    planned: list[dict] = []
    for si, src in enumerate(sources):
        k = min(6, len(src.text) // 2000 + 1)
        bounds = np.linspace(0, len(src.text), k + 1).astype(int)
        for r in range(k):
            length = round(math.exp(rng.uniform(math.log(200), math.log(2000))))
            span = choose_passage(src.text, int(bounds[r]), int(bounds[r + 1]), length, rng)
            if span is None:
                continue
            copies = int(rng.integers(SPREAD_HOSTS[0], SPREAD_HOSTS[1] + 1)) if rng.random() < SPREAD else 1
            for c in range(copies):
                kind = str(rng.choice(EDITS, p=EDIT_WEIGHTS))
                rate = float(rng.choice(WORD_RATES)) if kind == "words" else (LIGHT_RATE if kind == "light" else 0.0)
                planned.append({"src": si, "span": span, "edit": kind, "rate": rate, "group": len(planned) - c,
                                "copies": copies})
    # Hosts: the least loaded first (random among equals), never more than MAX_PER_HOST, never two
    # passages of one source in a host.
    load = np.zeros(len(hosts), int)
    per_host: dict[int, list[dict]] = defaultdict(list)
    for p in [planned[i] for i in rng.permutation(len(planned)).tolist()]:
        ok = [h for h in range(len(hosts)) if load[h] < MAX_PER_HOST and all(q["src"] != p["src"] for q in per_host[h])]
        if not ok:
            continue
        low = min(load[h] for h in ok)
        h = int(rng.choice([h for h in ok if load[h] == low]))
        load[h] += 1
        per_host[h].append(p)
    out.mkdir(parents=True, exist_ok=True)
    src_names = []
    for si, src in enumerate(sources):
        rel = f"src/{src.label}/s{si:03d}.txt"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(src.text.encode("utf-8"))
        src_names.append(rel)
    truth: list[dict] = []
    for h, host in enumerate(hosts):
        items = per_host.get(h, [])
        style = rng.choice(["utf-8", "crlf", "utf-16"], p=[0.7, 0.15, 0.15])
        points = insertion_points(host.text, len(items), rng) if items else []
        vocab = sorted({w for w in _WORD.findall(host.text) if w.isalpha() and len(w) <= 12}) or vocab_all
        pieces, cursor, recs = [], 0, []
        pos = 0
        for (at, para), p in zip(points, items):
            src = sources[p["src"]]
            s, e = p["span"]
            passage = edit(src.text[s:e], p["edit"], p["rate"], vocab, rng)
            before = host.text[cursor:at]
            pieces.append(before)
            pos += len(before)
            lead = "\n\n" if para else " "
            pieces.append(lead)
            pos += len(lead)
            recs.append((p, (pos, pos + len(passage))))
            pieces.append(passage)
            pos += len(passage)
            tail = "\n\n" if para else " "
            pieces.append(tail)
            pos += len(tail)
            cursor = at
        pieces.append(host.text[cursor:])
        text = "".join(pieces)
        if style == "crlf":
            # offsets move by the LFs before them
            nl = np.cumsum(np.frombuffer(text.encode("utf-32-le"), dtype="<u4") == 10)
            recs = [(p, (s + int(nl[s - 1]) if s else s, e + int(nl[e - 1]))) for p, (s, e) in recs]
            text = text.replace("\n", "\r\n")
            data = text.encode("utf-8")
        elif style == "utf-16":
            data = "\ufeff".encode("utf-16-le") + text.encode("utf-16-le", "surrogatepass")
        else:
            data = text.encode("utf-8")
        rel = f"host/{host.label}/h{h:03d}.txt"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
        for p, (s, e) in recs:
            src = sources[p["src"]]
            a, b = p["span"]
            truth.append({
                "src": src_names[p["src"]], "host": rel, "label": src.label, "host_label": host.label,
                "edit": p["edit"], "rate": p["rate"], "length": b - a, "src_range": [a, b], "host_range": [s, e],
                "host_style": str(style), "unspaced": is_unspaced(src.text[a:b]),
                "src_origin": src.name, "host_origin": host.name, "group": p["group"], "copies": p["copies"],
            })
    # Hosts holding copies of one passage share it too ("copies": both sides edited on their own).
    groups: dict[int, list[dict]] = defaultdict(list)
    for t in truth:
        if t["copies"] > 1:
            groups[t["group"]].append(t)
    for g in groups.values():
        for x in range(len(g)):
            for y in range(x + 1, len(g)):
                a, b = g[x], g[y]
                truth.append({
                    "src": a["host"], "host": b["host"], "label": a["label"], "host_label": b["host_label"],
                    "edit": "copies", "rate": 0.0, "length": a["length"], "src_range": a["host_range"],
                    "host_range": b["host_range"], "host_style": b["host_style"], "unspaced": a["unspaced"],
                    "src_origin": a["host_origin"], "host_origin": b["host_origin"], "group": a["group"],
                    "copies": a["copies"], "edits": [a["edit"], b["edit"]],
                })
    with open(out / "truth.jsonl", "w") as f:
        for t in truth:
            f.write(json.dumps(t) + "\n")
    return truth


def read_truth(out: Path) -> list[dict]:
    with open(out / "truth.jsonl") as f:
        return [json.loads(x) for x in f]


def corpus_files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*.txt"))


def labels_of(out: Path) -> dict[str, str]:
    """Label (evaluation corpus source) of every file of the built corpus, from its folder."""
    return {f: f.split("/")[1] for f in corpus_files(out)}


# ----------------------------------------------------------------------------------------------
# Measuring


@dataclass
class PairResult:
    best: float
    longest: int | None = None  # characters
    shared: int | None = None
    view: str = "text"


def product_pairs(out: Path, extra: list[str]) -> tuple[dict, dict, float]:
    """(pairs reported with the given options, pairs at --min-similarity 0; both keyed by the
    sorted relative paths, seconds of the pair searches)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        index = os.path.join(tmp, "passages.sqlite3")
        run_cli(["scan", str(out), "--index", index, "--quiet"])
        t0 = time.perf_counter()
        reported = run_cli(["pairs", "--index", index, "--format", "json", "--no-cache", *extra])
        t1 = time.perf_counter()
        every = run_cli(["pairs", "--index", index, "--format", "json", "--no-cache", "--min-similarity", "0"])

    def parse(s: str) -> dict:
        d = {}
        for line in s.splitlines():
            if not line.strip():
                continue
            p = json.loads(line)
            a, b = sorted((os.path.relpath(p["a"], out), os.path.relpath(p["b"], out)))
            d[(a, b)] = PairResult(float(p["best"]), p.get("longest_passage"), p.get("shared_chars"), p.get("view", "text"))
        return d

    return parse(reported), parse(every), t1 - t0


def report(truth: list[dict], files: list[str], found: dict, label_of: dict[str, str], title: str) -> dict:
    """Recall per edit and length bucket, FP over all unplanted pairs; returns the figures."""
    planted = {tuple(sorted((t["src"], t["host"]))) for t in truth}
    n = len(files)
    total_pairs = n * (n - 1) // 2
    neg_total = total_pairs - len(planted)
    fps = [k for k in found if k not in planted]
    print(f"\n== {title}")
    print(f"corpus: {n} files, {len(truth)} planted passages, {neg_total} unplanted pairs")
    print(f"false positives: {len(fps)} of {neg_total} unplanted pairs ({100 * len(fps) / max(1, neg_total):.3f} %)")
    by_lab = defaultdict(lambda: [0, 0])
    for a, b in fps:
        for lab in {label_of[a], label_of[b]}:
            by_lab[lab][0] += 1
    for (a, b) in fps[:8]:
        print(f"   FP {a} ~ {b}  best {found[(a, b)].best:.1f}  longest {found[(a, b)].longest}")
    rec = defaultdict(lambda: [0, 0])
    for t in truth:
        key = tuple(sorted((t["src"], t["host"])))
        hit = key in found
        for k in ((t["edit"], bucket_of(t["length"])), (t["edit"], "all"), ("all", bucket_of(t["length"])),
                  (t["edit"] + (" CJK" if t["unspaced"] else ""), ">=250" if t["length"] >= 250 else "<250")):
            rec[k][0] += hit
            rec[k][1] += 1
        if t["edit"] == "words":
            rec[(f"words {t['rate']:g}/1000", ">=250" if t["length"] >= 250 else "<250")][0] += hit
            rec[(f"words {t['rate']:g}/1000", ">=250" if t["length"] >= 250 else "<250")][1] += 1
    cols = [bucket_name(b) for b in BUCKETS] + ["all"]
    print("recall by edit and passage length (found / planted):")
    print(f"  {'edit':<10}" + "".join(f"{c:>13}" for c in cols))
    out = {"fp": len(fps) / max(1, neg_total)}
    for e in ROWS:
        cells = []
        for c in cols:
            h, t = rec[(e, c)]
            cells.append(f"{h / t:6.2f} ({h:>3}/{t:<3})" if t else f"{'-':>13}")
        print(f"  {e:<10}" + "".join(f"{x:>13}" for x in cells))
    print("  passages >= 250 characters:  " + ",  ".join(
        f"{e} {rec[(e, '>=250')][0] / max(1, rec[(e, '>=250')][1]):.3f} ({rec[(e, '>=250')][1]})"
        for e in sorted({k[0] for k in rec if k[1] == '>=250'})))
    for e in EDITS:
        h, t = rec[(e, ">=250")]
        out[e] = h / t if t else float("nan")
    return out


def loso_table(truth: list[dict], files: list[str], every: dict, label_of: dict[str, str]) -> None:
    """Leave-one-source-out choice of (threshold T, shortest passage L) for the rule "best >= T or
    longest passage >= L" (``accuracy.loso``), from the pairs the product reports at
    ``--min-similarity 0``: per source label held out, the most macro recall over the edits with
    <= 1 % false positives on the other labels' pairs, measured on the pairs touching that label."""
    from accuracy import INF, MIN_PASSAGES, THRESHOLDS, loso, print_loso

    rows: list[tuple[set[str], str, float, int]] = []
    planted = set()
    for t in truth:
        key = tuple(sorted((t["src"], t["host"])))
        planted.add(key)
        p = every.get(key)
        rows.append(({label_of[t["src"]], label_of[t["host"]]}, t["edit"], p.best if p else 0.0,
                     (p.longest or 0) if p else 0))
    for i, a in enumerate(files):
        for b in files[i + 1 :]:
            key = (a, b) if a < b else (b, a)
            if key in planted:
                continue
            p = every.get(key)
            rows.append(({label_of[a], label_of[b]}, "unrelated", p.best if p else 0.0, (p.longest or 0) if p else 0))
    score = np.array([r[2] for r in rows])
    longest = np.array([r[3] for r in rows])
    grid = [{"T": t, "L": ll} for ll in MIN_PASSAGES for t in THRESHOLDS]

    def decide(p: dict) -> np.ndarray:
        return (score >= p["T"] - 1e-9) | (longest >= p["L"])

    table = loso(rows, grid, decide, EDITS, ("unrelated",))
    print("\nleave-one-source-out, rule best >= T or longest passage >= L (most macro recall over the edits "
          "with <= 1 % false positives on unplanted pairs):")
    print_loso(table, EDITS, ("unrelated",), fmt=lambda p: f"T={p['T']:g}" + (f" L={p['L']}" if p["L"] < INF else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "evalcorpus"))
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--out", default=None, help="build the corpus here (kept); default: a temporary folder")
    ap.add_argument("--threshold", type=float, default=None, help="minimum best score (default: the product's)")
    ap.add_argument("--min-passage", type=int, default=None, help="shortest passage reported (default: the product's)")
    args = ap.parse_args()
    corpus = Path(args.corpus).resolve()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "corpus"
        t0 = time.perf_counter()
        if (out / "truth.jsonl").exists():
            truth = read_truth(out)
        else:
            truth = build(corpus, out, args.seed)
        files = corpus_files(out)
        label_of = labels_of(out)
        mb = sum((out / f).stat().st_size for f in files) / 1e6
        print(f"built {len(files)} files ({mb:.1f} MB), {len(truth)} passages, seed {args.seed} "
              f"({time.perf_counter() - t0:.1f} s)")
        counts = defaultdict(int)
        for t in truth:
            counts[(t["label"], t["edit"])] += 1
        print("planted passages by source label and edit: " + ", ".join(
            f"{lab} " + "/".join(str(counts[(lab, e)]) for e in EDITS) for lab in sorted({t['label'] for t in truth}))
            + f"  ({'/'.join(EDITS)})")
        extra = [] if args.threshold is None else ["--min-similarity", str(args.threshold)]
        extra += [] if args.min_passage is None else ["--min-passage", str(args.min_passage)]
        reported, every, secs = product_pairs(out, extra)
        print(f"pairs: {secs:.1f} s")
        report(truth, files, reported, label_of, f"product: simscan pairs {' '.join(extra) or '(defaults)'}")
        scores = [every.get(tuple(sorted((t["src"], t["host"])))) for t in truth]
        best = np.array([s.best if s else 0.0 for s in scores])
        print(f"best scores of planted pairs at -m 0: median {np.median(best):.1f} %, "
              f"quartiles {np.percentile(best, 25):.1f} / {np.percentile(best, 75):.1f}; "
              f"not candidates at all: {int((best == 0).sum())} of {best.size}")
        cover = [min(1.0, (s.longest or 0) / t["length"]) for s, t in zip(scores, truth) if s is not None]
        print(f"longest passage found / planted length, planted pairs found at all: median {np.median(cover):.2f}, "
              f"quartiles {np.percentile(cover, 25):.2f} / {np.percentile(cover, 75):.2f}")
        loso_table(truth, files, every, label_of)


if __name__ == "__main__":
    main()
