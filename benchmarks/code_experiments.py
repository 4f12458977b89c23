"""Scratch harness: source-code normalisation variants on the evaluation corpus (in memory).

Fingerprints each corpus file with the real ManberHasher (default parameters, nested levels by
unit count) over a variant unit stream, scores labelled pairs as the engine does (sizes at the
coarser level, common values dropped, equal content_hash = 100), prints recall at the default
threshold, FP, recall at <=1% FP and AUC.
"""

from __future__ import annotations

import os
import re
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fingerprint_tuning import load  # noqa: E402

from simscan.fingerprint import DEFAULT_PARAMS, decode_bytes, fingerprint_bytes  # noqa: E402
from simscan.fingerprint import text as T  # noqa: E402
from simscan.fingerprint.rolling import ManberHasher, anchored_levels  # noqa: E402

LABELS = ["exact", "near_duplicate", "similar", "plagiarism_light", "plagiarism_heavy"]
THR = float(os.environ.get("THR", "13")) / 100

KEYWORDS = set(
    """abstract assert auto bool boolean break byte case catch char class const constexpr continue default
    delete do double else enum explicit export extends extern false final finally float for foreach friend
    func fn function go goto if impl implements import in inline instanceof int interface internal let long
    match mut namespace native new nil null operator override package private protected public readonly
    register return sealed self short signed sizeof static struct super switch synchronized template this
    throw throws trait transient true try typedef typename union unsigned use using var virtual void
    volatile where while yield async await def elif except from lambda pass raise with del global
    nonlocal not and or is none""".split()
)

TOKEN = re.compile(
    r"(?P<lc>//[^\n]*)|(?P<bc>/\*.*?(?:\*/|\Z))|(?P<str>\"(?:\\.|[^\"\\\n])*\"?)|(?P<chr>'(?:\\.|[^'\\\n])*'?)"
    r"|(?P<id>[^\W\d]\w*)|(?P<num>\d[\w.]*)|(?P<sp>\s+)|(?P<op>.)",
    re.DOTALL,
)


def is_code(text: str, mode: str) -> bool:
    if mode == "never":
        return False
    lines = [ln.strip() for ln in text[:65536].splitlines()]
    lines = [ln for ln in lines if ln]
    if len(lines) < 3:
        return False
    ends = sum(1 for ln in lines if ln[-1] in ";{}" or ln.startswith(("//", "/*", "*", "#include", "@")))
    return ends >= 0.5 * len(lines)


def heavy_str(s: str) -> list[int]:
    return T.normalize(s).tolist()


def code_units(text: str, v: dict) -> np.ndarray:
    out: list[int] = []
    last: dict[str, int] = {}
    nid = 0
    first: dict[str, int] = {}
    for m in TOKEN.finditer(text):
        kind = m.lastgroup
        tok = m.group()
        if kind in ("lc", "bc"):
            if v.get("comments") == "keep":
                out.extend(heavy_str(tok))
                out.append(32)
            continue
        if kind == "sp":
            if v.get("sep"):
                if out and out[-1] != 32:
                    out.append(32)
            continue
        if kind in ("str", "chr"):
            s = v.get("str", "keep")
            if s == "keep":
                out.append(34)
                out.extend(heavy_str(tok[1:-1]))
                out.append(34)
            elif s == "noquote":
                if out and out[-1] != 32:
                    out.append(32)
                out.extend(heavy_str(tok[1:-1]))
                out.append(32)
            elif s == "ph":
                out.append(34)
            continue
        if kind == "num":
            if v.get("num", "keep") == "keep":
                out.extend(ord(c) for c in tok.casefold())
            elif v.get("num") == "heavy":
                out.extend(heavy_str(tok))
            else:
                out.append(ord("0"))
            continue
        if kind == "id":
            low = tok.casefold()
            idm = v.get("id", "keep")
            kws = v.get("kw", KEYWORDS)
            if idm == "keep" or (low if v.get("kwfold", True) else tok) in kws:
                if v.get("tok"):
                    out.append(0x110000 + (hash_str(low) & 0xFFFFF))
                else:
                    out.extend(ord(c) for c in low)
                    if v.get("idsep"):
                        out.append(32)
                continue
            if idm == "one":
                out.extend([0x10FFF0] * v.get("plen", 1))
            elif idm == "baker":
                cap = v.get("cap", 64)
                d = nid - last[low] if low in last else 0
                last[low] = nid
                nid += 1
                out.append(0x100000 + (d if d < cap else 0))
            elif idm == "first":
                if low not in first:
                    first[low] = len(first)
                out.append(0x100000 + first[low])
            elif idm == "init":
                out.append(0x100000 + ord(low[0]))
            elif idm == "cap":
                out.append(0x100000 + (1 if tok[0].isupper() else 0))
            elif idm == "kind":
                nxt = text[m.end():m.end() + 40].lstrip()
                out.append(0x100000 + (2 if nxt.startswith("(") else 1 if tok[0].isupper() else 0))
            elif idm == "caplen":
                out.append(0x100000 + (16 if tok[0].isupper() else 0) + min(len(tok), 8))
            elif idm == "len":
                out.append(0x100000 + min(len(low), 12))
            continue
        # operator
        if v.get("ops", "keep") == "keep":
            out.append(ord(tok))
    return np.array(out, dtype=np.uint32)


def hash_str(s: str) -> int:
    import xxhash

    return xxhash.xxh3_64_intdigest(s.encode("utf-8", "surrogatepass"))


def fp_units(units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = ManberHasher(DEFAULT_PARAMS.manber(True))
    h.feed(units.astype(np.uint32))
    return h.finish()


def main() -> None:
    t0 = time.perf_counter()
    names, data, pairs = load()
    idx = {n: i for i, n in enumerate(names)}
    base = [fingerprint_bytes(data[n]) for n in names]
    texts = [decode_bytes(data[n]).text for n in names]
    print(f"loaded {len(names)} files in {time.perf_counter() - t0:.1f}s")

    D = {"ops": "drop", "sep": True}
    C = {**D, "comments": "keep"}
    variants: list[tuple[str, str, dict]] = [
        ("baseline", "never", {}),
        ("hl ids one +comm", "auto", {**C, "id": "one"}),
        ("hl ids one3 +comm", "auto", {**C, "id": "one", "plen": 3}),
        ("hl ids one5 +comm", "auto", {**C, "id": "one", "plen": 5}),
        ("hl ids one8 +comm", "auto", {**C, "id": "one", "plen": 8}),
    ]
    only = os.environ.get("ONLY")
    ncode = None
    for vname, det, v in variants:
        if only and only not in vname:
            continue
        rolls, anchs, units_n = [], [], []
        codeflags = []
        for n, fp, txt in zip(names, base, texts):
            if txt is not None and is_code(txt, det):
                u = code_units(txt, v)
                r, a = fp_units(u)
                if v.get("union"):
                    r = np.union1d(fp.rolling, r)
                    a = np.union1d(fp.anchored, a)
                    u = np.zeros(fp.units + u.size)
                rolls.append(r)
                anchs.append(a)
                units_n.append(u.size)
                codeflags.append(True)
            else:
                rolls.append(fp.rolling)
                anchs.append(fp.anchored)
                units_n.append(fp.units)
                codeflags.append(False)
        if det == "auto" and ncode is None:
            ncode = defaultdict(int)
            for n, c in zip(names, codeflags):
                if c:
                    ncode[n.split("/")[0]] += 1
            print("files detected as code:", dict(ncode))
        scores = score(names, base, rolls, anchs, units_n, pairs, idx)
        report(vname, scores, sum(r.size + a.size for r, a, c in zip(rolls, anchs, codeflags) if c) / max(1, sum(codeflags)))


def score(names, base, rolls, anchs, units_n, pairs, idx):
    is_text = [fp.is_text for fp in base]
    content = [fp.content_hash for fp in base]
    sets = [np.union1d(r, a) for r, a in zip(rolls, anchs)]
    # common values: held by > 50 distinct contents
    seen = {}
    for s, c in zip(sets, content):
        seen.setdefault(c, s)
    v, cnt = np.unique(np.concatenate(list(seen.values())), return_counts=True)
    common = v[cnt > 50]
    lv_file = [DEFAULT_PARAMS.text_level(u) if t else 0 for u, t in zip(units_n, is_text)]
    kept = [np.setdiff1d(s, common, assume_unique=True) if common.size else s for s in sets]
    klev = []
    for s, t in zip(kept, is_text):
        lv = np.full(s.size, 32)
        if t:
            an = (s >> np.uint64(63)) == 1
            lv[an] = anchored_levels(s[an])
        klev.append(lv)
    sc = defaultdict(list)
    for a, b, lab in pairs:
        i, j = idx[a], idx[b]
        if content[i] == content[j]:
            sc[lab].append(1.0)
            continue
        lv = max(lv_file[i], lv_file[j])
        inter = np.intersect1d(kept[i], kept[j], assume_unique=True).size
        na = int((klev[i] >= lv).sum())
        nb = int((klev[j] >= lv).sum())
        if not inter or not na or not nb:
            sc[lab].append(0.0)
            continue
        sc[lab].append(max(inter / (na + nb - inter), inter / na, inter / nb))
    return {k: np.array(v) for k, v in sc.items()}


def report(name, sc, fpc):
    neg = sc["unrelated"]
    fp = float(np.mean(neg >= THR))
    negs = np.sort(neg)[::-1]
    allowed = int(np.floor(0.01 * neg.size))
    thr1 = negs[allowed]
    cells = []
    for lab in LABELS:
        pos = sc[lab]
        r = np.mean(pos >= THR)
        r1 = np.mean(pos > thr1)
        auc = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
        cells.append(f"{r:.3f}/{r1:.3f}/{auc:.3f}")
    print(f"{name:24s} FP@{THR*100:g}={fp:.4f} thr1%={thr1:.3f} " + " ".join(cells) + f"  fp/codefile={fpc:.0f}", flush=True)
    top = negs[:10]
    print(f"{'':24s} top unrelated: " + " ".join(f"{x:.2f}" for x in top))


if __name__ == "__main__":
    main()


def diff(v1: dict, v2: dict, label: str) -> None:
    names, data, pairs = load()
    idx = {n: i for i, n in enumerate(names)}
    base = [fingerprint_bytes(data[n]) for n in names]
    texts = [decode_bytes(data[n]).text for n in names]
    res = []
    for v in (v1, v2):
        rolls, anchs, un = [], [], []
        for fp, txt in zip(base, texts):
            if v is not None and txt is not None and is_code(txt, "auto"):
                u = code_units(txt, v)
                r, a = fp_units(u)
                if v.get("union"):
                    r = np.union1d(fp.rolling, r)
                    a = np.union1d(fp.anchored, a)
                    u = np.zeros(fp.units + u.size)
                rolls.append(r); anchs.append(a); un.append(u.size)
            else:
                rolls.append(fp.rolling); anchs.append(fp.anchored); un.append(fp.units)
        res.append(score(names, base, rolls, anchs, un, pairs, idx)[label])
    sel = [(a, b) for a, b, lab in pairs if lab == label]
    for (a, b), s1, s2 in sorted(zip(sel, res[0], res[1]), key=lambda t: t[2] - t[1]):
        print(f"{s1:.2f} {s2:.2f} {a} {b}")
