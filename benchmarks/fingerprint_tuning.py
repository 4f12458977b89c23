"""Choose fingerprint defaults from the labelled evaluation corpus (issue 2 / issue 4).

For every file of ``$SIMSCAN_EVALCORPUS`` (default ../shared/evalcorpus beside the repository) the rolling
fingerprint set is computed in memory for several normalisations and text densities; for
each labelled pair ``best = max(Jaccard, containment a in b, b in a)``.  Printed per label:
the recall at the threshold that keeps false positives on ``unrelated`` at or below 1%,
and ROC AUC (label vs unrelated).  Then simhash Hamming distances per label for several
feature choices.  Nothing here is special-cased per file: the corpus is data to measure.

Run: ``python3 benchmarks/fingerprint_tuning.py [--quick]`` (about a minute).
"""

from __future__ import annotations

import csv
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simscan.fingerprint import FingerprintParams, decode_bytes, fingerprint_many
from simscan.fingerprint import text as T
from simscan.fingerprint.rolling import ManberHasher, ManberParams, window_values

ROOT = Path(os.environ.get("SIMSCAN_EVALCORPUS", Path(__file__).resolve().parents[2] / "shared" / "evalcorpus"))
LABELS = ["exact", "near_duplicate", "similar", "plagiarism_light", "plagiarism_heavy"]
TARGET = {"exact": 0.99, "near_duplicate": 0.97, "similar": 0.95, "plagiarism_light": 0.85, "plagiarism_heavy": 0.5}
MAX_FP = 0.01

_JAVA_KEYWORDS = {
    "abstract",
    "assert",
    "boolean",
    "break",
    "byte",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extends",
    "final",
    "finally",
    "float",
    "for",
    "goto",
    "if",
    "implements",
    "import",
    "instanceof",
    "int",
    "interface",
    "long",
    "native",
    "new",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "short",
    "static",
    "strictfp",
    "super",
    "switch",
    "synchronized",
    "this",
    "throw",
    "throws",
    "transient",
    "try",
    "void",
    "volatile",
    "while",
    "true",
    "false",
    "null",
    "var",
    "record",
    "String",
    "System",
    "out",
    "println",
    "print",
    "Scanner",
    "main",
    "args",
    "length",
}
_CODE_TOKEN = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|[A-Za-z_]\w*|\d[\w.]*|\S", re.DOTALL
)


def code_units(text: str) -> np.ndarray:
    """A source-code normal form: comments dropped, identifiers that are not keywords (or
    very common library names) become ``v``, numbers ``0``, literals kept; tokens joined by
    one space.  Measured as a candidate normalisation for source files (IR-Plag)."""
    out = []
    for tok in _CODE_TOKEN.findall(text):
        if tok.startswith(("//", "/*")):
            continue
        if tok[0].isalpha() or tok[0] == "_":
            out.append(tok if tok in _JAVA_KEYWORDS else "v")
        elif tok[0].isdigit():
            out.append("0")
        else:
            out.append(tok)
    return np.frombuffer(" ".join(out).encode("utf-32-le", "surrogatepass"), dtype="<u4")


def load() -> tuple[list[str], dict[str, bytes], list[tuple[str, str, str]]]:
    pairs = []
    with open(ROOT / "truth.csv", newline="") as f:
        for row in csv.DictReader(f):
            pairs.append((row["file_a"], row["file_b"], row["label"]))
    names = sorted({p[0] for p in pairs} | {p[1] for p in pairs})
    data = {n: (ROOT / "corpus" / n).read_bytes() for n in names}
    return names, data, pairs


def units_for(names: list[str], data: dict[str, bytes], norm: str) -> list[np.ndarray]:
    out = []
    for n in names:
        dec = decode_bytes(data[n])
        if dec.text is None:
            out.append(np.frombuffer(data[n], dtype=np.uint8).astype(np.uint32))
        elif norm == "code" and n.endswith(".java"):
            out.append(code_units(dec.text))
        elif norm == "nospace":
            u = T.normalize(dec.text)
            out.append(u[u != 32])
        else:
            out.append(T.normalize(dec.text, heavy=norm != "light"))
    return out


def rolling_sets(units: list[np.ndarray], density: int, window: int = 50) -> list[np.ndarray]:
    """Per file, sorted distinct rolling values (one vectorised hasher over all files)."""
    ends = np.cumsum([u.size for u in units])
    h = ManberHasher(ManberParams(window=window, density=density, anchor_density=64), ends=ends)
    h.feed(np.concatenate(units).astype(np.uint32))
    rv, ro, _, _ = h.finish_segments()
    return [np.unique(rv[ro == i]) for i in range(len(units))] if len(units) < 64 else _split(rv, ro, len(units))


def _split(values: np.ndarray, owner: np.ndarray, k: int) -> list[np.ndarray]:
    order = np.argsort(owner, kind="stable")
    v, o = values[order], owner[order]
    b = np.searchsorted(o, np.arange(k + 1))
    return [np.unique(v[b[i] : b[i + 1]]) for i in range(k)]


def best_score(a: np.ndarray, b: np.ndarray) -> float:
    if a.size == 0 or b.size == 0:
        return 0.0
    inter = np.intersect1d(a, b, assume_unique=True).size
    return max(inter / (a.size + b.size - inter), inter / a.size, inter / b.size)


def evaluate(scores: dict[str, np.ndarray], higher_is_similar: bool = True) -> dict[str, tuple[float, float]]:
    """Per label (recall at <=1% FP on unrelated, ROC AUC vs unrelated)."""
    sign = 1.0 if higher_is_similar else -1.0
    neg = np.sort(sign * scores["unrelated"])[::-1]
    allowed = int(np.floor(MAX_FP * neg.size))
    thr = neg[allowed] if allowed < neg.size else -np.inf  # must be strictly above this
    out = {}
    for lab in LABELS:
        pos = sign * scores.get(lab, np.zeros(0))
        if pos.size == 0:
            continue
        recall = float(np.mean(pos > thr))
        # AUC = P(pos > neg) + 0.5 P(pos == neg)
        gt = (pos[:, None] > neg[None, :]).mean()
        eq = (pos[:, None] == neg[None, :]).mean()
        out[lab] = (recall, float(gt + 0.5 * eq))
    return out


def table(title: str, rows: list[tuple[str, dict[str, tuple[float, float]], str]]) -> None:
    print(f"\n{title}")
    head = "".join(f"{lab[:14]:>16s}" for lab in LABELS)
    print(f"{'variant':28s}{head}   (recall@<=1%FP / AUC)  extra")
    for name, res, extra in rows:
        cells = "".join(f"{res[lab][0]:>8.3f}/{res[lab][1]:.3f}" if lab in res else f"{'-':>16s}" for lab in LABELS)
        print(f"{name:28s}{cells}   {extra}")
    print(f"{'target recall':28s}" + "".join(f"{TARGET[lab]:>8.2f}{'':8s}" for lab in LABELS))


def weighted_simhash(hashes: np.ndarray, weights: np.ndarray) -> int:
    if hashes.size == 0:
        return 0
    bits = np.unpackbits(hashes.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    v = (weights[:, None] * (2.0 * bits - 1.0)).sum(axis=0)
    return int.from_bytes(np.packbits(v > 0, bitorder="little").tobytes(), "little")


def _h64(tokens: list[str]) -> np.ndarray:
    import xxhash

    return np.array([xxhash.xxh3_64_intdigest(t.encode("utf-8", "surrogatepass")) for t in tokens], dtype=np.uint64)


def main() -> None:
    quick = "--quick" in sys.argv
    t0 = time.perf_counter()
    names, data, pairs = load()
    index = {n: i for i, n in enumerate(names)}
    print(f"{len(names)} files, {sum(map(len, data.values())) / 1e6:.1f} MB, {len(pairs)} labelled pairs")
    by_label: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for a, b, lab in pairs:
        by_label[lab].append((index[a], index[b]))
    # Reference: the corpus' own exact 50-window set arithmetic after decoding + white space.
    ref: dict[str, list[float]] = defaultdict(list)
    with open(ROOT / "truth.csv", newline="") as f:
        for row in csv.DictReader(f):
            ref[row["label"]].append(max(float(row["j50_norm"]), float(row["ca50_norm"]), float(row["cb50_norm"])))
    rows = [("reference j50_norm (exact)", evaluate({k: np.array(v) for k, v in ref.items()}), "")]
    densities = [4, 16, 256] if quick else [1, 4, 8, 16, 32, 256]
    norms = ["heavy", "code"] if quick else ["light", "heavy", "nospace", "code"]
    sets_cache = {}
    for norm in norms:
        units = units_for(names, data, norm)
        n_units = sum(u.size for u in units)
        for d in densities:
            sets = rolling_sets(units, d)
            sets_cache[(norm, d)] = sets
            scores = {lab: np.array([best_score(sets[i], sets[j]) for i, j in prs]) for lab, prs in by_label.items()}
            fps = sum(s.size for s in sets)
            small = [s.size for n, s in zip(names, sets) if n.startswith("clough/")]
            rows.append(
                (
                    f"{norm} 1/{d}",
                    evaluate(scores),
                    f"{fps / max(n_units, 1) * 1000:.1f} fp/1000 units; clough median {int(np.median(small))} fps",
                )
            )
    table("Rolling fingerprints, best of Jaccard and containments:", rows)
    # Java pairs only, to see what the code normal form costs on unrelated Java.
    java = {lab: [(i, j) for i, j in prs if names[i].endswith(".java")] for lab, prs in by_label.items()}
    rows = []
    for norm in norms:
        for d in densities:
            sets = sets_cache[(norm, d)]
            sc = {lab: np.array([best_score(sets[i], sets[j]) for i, j in prs]) for lab, prs in java.items() if prs}
            neg = sc.get("unrelated", np.zeros(0))
            rows.append(
                (f"{norm} 1/{d} (java)", evaluate(sc), f"unrelated java >0.3: {int((neg > 0.3).sum())}/{neg.size}")
            )
    table("Java (IR-Plag) pairs only:", rows)

    # Simhash: Hamming distance per label for several feature choices.
    print("\nSimhash (64 bit): median Hamming distance per label, and recall at <=1% FP (distance <= t)")
    heavy = units_for(names, data, "heavy")
    feats: dict[str, list[int]] = {}
    defaults = fingerprint_many([data[n] for n in names], FingerprintParams(chunk_size=1 << 26))
    feats["default: rolling+anchored, w=1"] = [fp.simhash for fp in defaults]
    feats["every 50-window, w=1"] = []
    feats["word tf"] = []
    feats["word 3-gram, w=1"] = []
    for u in heavy:
        allw = window_values(u, np.arange(max(u.size - 49, 0)), 50) if u.size >= 50 else np.zeros(0, np.uint64)
        allw = np.unique(allw)
        feats["every 50-window, w=1"].append(weighted_simhash(allw, np.ones(allw.size)))
        words = u.tobytes().decode("utf-32-le", "surrogatepass").split(" ") if u.size else []
        uniq, cnt = np.unique(np.array(words, dtype=object), return_counts=True) if words else ([], np.zeros(0))
        feats["word tf"].append(weighted_simhash(_h64(list(uniq)), cnt.astype(float)))
        grams = sorted({" ".join(words[i : i + 3]) for i in range(max(len(words) - 2, 0))})
        feats["word 3-gram, w=1"].append(weighted_simhash(_h64(grams), np.ones(len(grams))))
    rows = []
    for name, sims in feats.items():
        dist = {
            lab: np.array([(sims[i] ^ sims[j]).bit_count() for i, j in prs], dtype=float)
            for lab, prs in by_label.items()
        }
        med = " ".join(f"{lab[:5]}={int(np.median(v))}" for lab, v in dist.items())
        rows.append((name, evaluate(dist, higher_is_similar=False), med))
    table("Simhash features (recall at <=1% FP on unrelated, by Hamming distance):", rows)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
