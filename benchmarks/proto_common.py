"""Common text counts everywhere or nowhere (issue 16): a licence header in many files, measured
with the product and with the rule proposed.

Run: ``python3 benchmarks/proto_common.py [--carriers 104]`` (about 30 s).

Builds (seeded, from texts of the evaluation corpus) a folder of ``--carriers`` files that start
with one licence block (the Project Gutenberg licence paragraphs of a book of the corpus, ~1.7 KB)
followed by a body of their own (another document's text, 0.1-20 KB, log-uniform), one file
that is the licence block alone, and 60 files without it.  Then:

1. **today** (``simscan scan`` + ``simscan pairs --min-similarity 0``): printed, how many
   carriers the licence-only file scores above 0 with and at what score, by the carriers' body
   length; how many carrier pairs are reported at 15 %; and what ``compare`` says for two pairs.
2. the same index and pair search with no pair rescored on its full set (simhash candidates
   scored like every other pair): nothing changes, so that path is not the cause.  The cause is
   the levels: a file stores its fine-level fingerprints only when it is short, so the document
   frequency of a fine value counts only the short files holding that text (30 of the 104).
3. the prototypes (``proto_evidence``), today's fingerprints and winnowing by level, with common
   *values* (today's rule) and common *text* (``proto_winnow.common_text``: every fingerprint
   between two common ones at most a coarse window apart, or between a file edge and a common
   one that close, is common too): the licence counts nowhere.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def licence_block(corpus: Path) -> str:
    """The licence paragraphs of the first Gutenberg book of the corpus that has them."""
    from simscan.fingerprint import decode_bytes

    for p in sorted((corpus / "corpus" / "gutenberg").rglob("*.txt")):
        text = (decode_bytes(p.read_bytes()).text or "").replace("\r\n", "\n")
        m = re.search(r"\n\s*\*{0,3}\s*START: FULL LICENSE", text) or re.search(r"THE FULL PROJECT GUTENBERG LICENSE", text)
        if m:
            return text[m.start() : m.start() + 1700].strip()
    raise SystemExit("no Gutenberg licence found in the corpus")


def bodies(corpus: Path, n: int, rng: np.random.Generator) -> list[str]:
    """n texts of other documents (PEPs and pages), cut to 0.1-20 KB (log-uniform)."""
    import passages as PS

    pool = [d for d in PS.load_pool(corpus, rng) if d.label in ("peps", "encodings")]
    out = []
    for k in range(n):
        d = pool[k % len(pool)]
        size = int(math.exp(rng.uniform(math.log(100), math.log(20_000))))
        start = int(rng.integers(0, max(1, len(d.text) - size)))
        out.append(d.text[start : start + size])
    return out


def build(corpus: Path, out: Path, carriers: int, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    lic = licence_block(corpus)
    body = bodies(corpus, carriers + 60, rng)
    out.mkdir(parents=True, exist_ok=True)
    sizes = {}
    (out / "licence-only.txt").write_text(lic + "\n")
    for i in range(carriers):
        (out / f"c{i:03d}.txt").write_text(lic + "\n\n" + body[i] + "\n")
        sizes[f"c{i:03d}.txt"] = len(body[i])
    for i in range(60):
        (out / f"u{i:03d}.txt").write_text(body[carriers + i] + "\n")
    return sizes


def summarise(title: str, pairs: list, sizes: dict[str, int]) -> None:
    lo = [(p["b"] if p["a"] == "licence-only.txt" else p["a"], p["best"]) for p in pairs
          if "licence-only.txt" in (p["a"], p["b"]) and p["best"] > 0]
    carrier_pairs = [p for p in pairs if p["a"].startswith("c") and p["b"].startswith("c")]
    print(f"\n{title}")
    print(f"  licence-only file scores above 0 with {len(lo)} of {len(sizes)} carriers"
          + (f"; scores: median {np.median([b for _, b in lo]):.1f} %, {sum(b >= 99.99 for _, b in lo)} at 100 %" if lo else ""))
    buckets = ((0, 500), (500, 2000), (2000, 8000), (8000, 10**9))
    by = defaultdict(lambda: [0, 0])
    paired = {f for f, _ in lo}
    for f, n in sizes.items():
        for b in buckets:
            if b[0] <= n < b[1]:
                by[b][1] += 1
                by[b][0] += f in paired
    print("  by the carrier's body length: " + ", ".join(f"{b[0]}-{b[1] if b[1] < 10**9 else ''} chars {h}/{t}"
                                                        for b, (h, t) in sorted(by.items())))
    print(f"  carrier-carrier pairs reported at 15 %: {sum(p['best'] >= 15 for p in carrier_pairs)} "
          f"(of {len(sizes) * (len(sizes) - 1) // 2})")


def prototypes(out: Path, sizes: dict[str, int]) -> None:
    """The same folder through the prototypes: common *values* (today's rule, a value's document
    frequency counting the files that store it) against common *text* (``proto_winnow.common_text``)."""
    import proto_evidence as PE

    files = sorted(p.name for p in out.iterdir())
    prep = PE.prepare(files, {f: (out / f).read_bytes() for f in files})
    for name in ("today", "wL-match"):
        for spread in (False, True):
            scheme = PE.SCHEMES[name]
            ev = PE.Evaluator(prep, scheme, PE.select(prep, scheme), spread=spread)
            pairs = []
            for i, j in ev.candidates():
                f = ev.features(i, j, passages=False)
                pairs.append({"a": files[i], "b": files[j], "best": round(f.best, 2)})
            rule = "common text (proposed)" if spread else "common values (today's rule)"
            summarise(f"prototype {name}, {rule}", pairs, sizes)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "evalcorpus"))
    ap.add_argument("--carriers", type=int, default=104)
    ap.add_argument("--seed", type=int, default=6)
    args = ap.parse_args()
    from accuracy import run_cli

    from simscan.index import Index
    from simscan.similarity import core, find_pairs
    from simscan.similarity.core import SimilarityParams

    t0 = time.perf_counter()
    corpus = Path(args.corpus).resolve()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        out = Path(tmp) / "licences"
        sizes = build(corpus, out, args.carriers, args.seed)
        index = os.path.join(tmp, "i.sqlite3")
        run_cli(["scan", str(out), "--index", index, "--quiet"])
        raw = run_cli(["pairs", "--index", index, "--format", "json", "--min-similarity", "0", "--no-cache"])
        pairs = []
        for line in raw.splitlines():
            p = json.loads(line)
            pairs.append({"a": os.path.basename(p["a"]), "b": os.path.basename(p["b"]), "best": p["best"]})
        summarise("today (simscan pairs -m 0)", pairs, sizes)
        some = sorted((p for p in pairs if "licence-only.txt" in (p["a"], p["b"])), key=lambda p: -p["best"])
        carrier = (some[0]["b"] if some[0]["a"] == "licence-only.txt" else some[0]["a"]) if some else "c000.txt"
        far = max((f for f in sizes if f not in {p["a"] for p in some} | {p["b"] for p in some}), key=lambda f: sizes[f],
                  default=None)
        for f in [carrier, far]:
            if f is None:
                continue
            c = json.loads(run_cli(["compare", str(out / "licence-only.txt"), str(out / f), "--format", "json"]))
            inpairs = next((p["best"] for p in pairs if {"licence-only.txt", f} == {p["a"], p["b"]}), 0.0)
            print(f"  compare licence-only.txt {f} (body {sizes[f]} chars): best {c['best']} % -- pairs says {inpairs} %")

        # The rule proposed: no rescoring with common values (simhash candidates scored like the rest).
        real = core.simhash_pairs
        core.simhash_pairs = lambda sim, k: (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))
        try:
            with Index.open(index) as ix:
                got = find_pairs(ix, min_similarity=0.0, params=SimilarityParams(simhash_k=-1), cache=False)
        finally:
            core.simhash_pairs = real
        pairs2 = [{"a": os.path.basename(p.a_path), "b": os.path.basename(p.b_path), "best": p.best} for p in got]
        summarise("no rescoring with common values (simhash pairs scored like the others): unchanged, so it is not the cause",
                  pairs2, sizes)
        prototypes(out, sizes)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
