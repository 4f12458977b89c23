"""Re-wrapped Chinese and Japanese text (issue 16): what a line break does to the windows.

Run: ``python3 benchmarks/proto_cjk.py`` (a few seconds).

Normalisation turns every run of white space into one space unit.  Scripts written without
spaces (Chinese, Japanese) then get a space wherever a line was broken: a text re-wrapped at 40
characters has a space every ~40 units, so *no* 50-unit window of the original survives, and a
verbatim passage re-wrapped is not found at all (an unseen source of issue 16 scored 0.00 on
embedded verbatim passages and another holds "a paraphrase corpus in another language with lines
re-wrapped").  For every CJK page of the evaluation corpus (one file per group; markup stripped,
at least 2,000 characters, most letters Han or kana), and as many pages of spaced scripts, this prints the share of the original's 50-unit windows found in the
text re-wrapped at 40 and at 80 characters (``textwrap``), with today's normalisation and with
the change proposed: white space between two characters of scripts written without spaces (Han,
Hiragana, Katakana, CJK punctuation and full-width forms) is dropped, not made a space.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from proto_winnow import every_window_values

from simscan.fingerprint.text import normalize

#: Characters of scripts written without spaces between words.
_UNSPACED = r"\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_GAP = re.compile(rf"(?<=[{_UNSPACED}])\s+(?=[{_UNSPACED}])")


def normalize_proposed(text: str) -> np.ndarray:
    """Today's units, with white space between two unspaced-script characters dropped first."""
    return normalize(_GAP.sub("", text))


def kept_share(a: np.ndarray, b: np.ndarray) -> float:
    wa = np.unique(every_window_values(a))
    if not wa.size:
        return float("nan")
    return float(np.isin(wa, every_window_values(b)).mean())


def main() -> None:
    import passages as PS
    from fingerprint_tuning import ROOT

    docs = [d for d in PS.load_pool(ROOT, np.random.default_rng(1)) if d.label == "encodings" and len(d.text) >= 2000]
    share = [len(re.findall(f"[{_UNSPACED}]", d.text)) / max(1, sum(c.isalpha() for c in d.text)) for d in docs]
    cjk = [d for d, x in zip(docs, share) if x > 0.5]
    latin = [d for d, x in zip(docs, share) if x == 0][: len(cjk)]
    print(f"{len(cjk)} CJK pages, {len(latin)} others; share of the original's 50-unit windows found after re-wrapping:")
    print(f"  {'':<28}{'width 40':>10}{'width 80':>10}")
    for name, group, norm in (("CJK, today", cjk, normalize), ("CJK, proposed", cjk, normalize_proposed),
                              ("spaced scripts, today", latin, normalize), ("spaced scripts, proposed", latin, normalize_proposed)):
        cells = []
        for width in (40, 80):
            # (words of spaced scripts are never broken; unspaced text breaks anywhere)
            shares = [kept_share(norm(d.text), norm(textwrap.fill(re.sub(r"\s+", " ", d.text), width,
                                                                  break_long_words=group is cjk))) for d in group]
            cells.append(np.nanmedian(shares))
        print(f"  {name:<28}" + "".join(f"{c:10.2f}" for c in cells) + "   (median over pages)")
    runs = []
    for d in cjk:
        m = max(re.findall(f"[{_UNSPACED}]+", d.text), key=len, default="")
        if len(m) >= 120:
            runs.append(m)
    for name, norm in (("today", normalize), ("proposed", normalize_proposed)):
        shares = [kept_share(norm(r), norm(textwrap.fill(r, 40))) for r in runs]
        print(f"  the longest run of Han/kana text of each CJK page ({len(runs)} runs of 120+ characters), re-wrapped at 40, "
              f"{name}: median {np.median(shares):.2f} of its windows kept, {sum(x > 0 for x in shares)} runs keep any")
    same = [bool(np.array_equal(normalize(d.text), normalize_proposed(d.text))) for d in latin]
    print(f"  units unchanged by the proposal on {sum(same)} of {len(same)} pages of spaced scripts")


if __name__ == "__main__":
    main()
