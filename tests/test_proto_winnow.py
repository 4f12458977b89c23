"""The passage guarantee of winnowing (issue 16), on the prototype in ``benchmarks/proto_winnow.py``.

These pin the selection rule recommended for the native implementation: robust winnowing over the
product's 50-unit window values, kept when a window is the rightmost minimum of some ``w``
consecutive windows.  Guarantee: two texts sharing a run of ``w + 49`` units share a kept
window (hence a candidate pair and a passage); one unit shorter is not guaranteed.  Checked on
random texts: a run exactly that long, one shorter, across a chunk border of a streamed text,
across a re-wrap, and the passages mapped to the right characters in two encodings.  The fast
selection is compared with the definition (a slow loop over every w windows).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import proto_winnow as PW

from simscan.fingerprint import decode_bytes
from simscan.fingerprint.text import normalize

W = PW.W


def kept_values(units: np.ndarray, w: int) -> set[int]:
    x = PW.every_window_values(units)
    return set(x[PW.dominance(x) >= w].tolist())


def random_units(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random lower-case words and single spaces, as normalised text is."""
    u = rng.integers(97, 123, n).astype(np.uint32)
    u[rng.random(n) < 0.18] = 32
    u[1:][(u[1:] == 32) & (u[:-1] == 32)] = 101
    return u


@pytest.mark.parametrize("n", [1, 2, 5, 49, 50, 51, 300])
def test_dominance_matches_its_definition(n: int) -> None:
    rng = np.random.default_rng(n)
    for alphabet in (3, 1000):  # many ties (repeated windows), then few
        x = rng.integers(0, alphabet, n).astype(np.uint64)
        assert np.array_equal(PW.dominance(x), PW.dominance_slow(x))
        for w in (1, 2, 3, 8, 40, 400):
            assert np.array_equal(np.flatnonzero(PW.dominance(x) >= w), PW.winnow_slow(x, w))


def test_kept_windows_are_nested_across_window_sizes() -> None:
    """What a coarse w keeps, every finer w keeps too: a pair is compared at the coarser of its two
    files' windows, and the finer file still holds every window the coarser one counts."""
    rng = np.random.default_rng(1)
    x = PW.every_window_values(random_units(rng, 20_000))
    d = PW.dominance(x)
    for fine, coarse in ((4, 6), (6, 26), (26, 100), (14, 96)):
        assert set(np.flatnonzero(d >= coarse)) <= set(np.flatnonzero(d >= fine))
    # density 2 / (w + 1) (Schleimer et al.), within sampling noise
    for w in (6, 26, 100):
        assert abs(np.count_nonzero(d >= w) / x.size - 2 / (w + 1)) < 0.25 * 2 / (w + 1)


@pytest.mark.parametrize("w", [4, 26, 100])
def test_a_shared_run_of_w_plus_49_units_always_shares_a_kept_window(w: int) -> None:
    rng = np.random.default_rng(w)
    for _ in range(150):
        run = random_units(rng, w + W - 1)
        a = np.concatenate((random_units(rng, int(rng.integers(0, 3000))), run, random_units(rng, int(rng.integers(0, 3000)))))
        b = np.concatenate((random_units(rng, int(rng.integers(0, 3000))), run, random_units(rng, int(rng.integers(0, 3000)))))
        assert kept_values(a, w) & kept_values(b, w) & set(PW.every_window_values(run).tolist())


@pytest.mark.parametrize("w", [4, 26])
def test_one_unit_shorter_is_not_guaranteed(w: int) -> None:
    """The bound is tight: with w + 48 units some placements share nothing (the run holds w - 1
    windows, whose minimum may be beaten in each file by windows overlapping the run's edges).  How
    often falls fast with w (about (1/w)^2 per file): seen at small w only."""
    rng = np.random.default_rng(100 + w)
    missed = 0
    for _ in range(300):
        run = random_units(rng, w + W - 2)
        a = np.concatenate((random_units(rng, 2000), run, random_units(rng, 2000)))
        b = np.concatenate((random_units(rng, 2000), run, random_units(rng, 2000)))
        missed += not (kept_values(a, w) & kept_values(b, w) & set(PW.every_window_values(run).tolist()))
    assert missed > 0


def test_streamed_in_chunks_equals_the_whole_text_and_keeps_the_guarantee_at_a_border() -> None:
    rng = np.random.default_rng(7)
    for trial in range(60):
        w = int(rng.choice([1, 4, 26, 100]))
        u = random_units(rng, int(rng.integers(0, 6000)))
        x = PW.every_window_values(u)
        whole = np.flatnonzero(PW.dominance(x) >= w)
        cuts = np.sort(rng.integers(0, u.size + 1, int(rng.integers(0, 10))))
        assert np.array_equal(PW.winnow_stream(np.split(u, cuts), w), whole), trial
    # a shared run cut in two by a chunk border of one file (not of the other)
    for _ in range(40):
        w = 100
        run = random_units(rng, w + W - 1)
        pre = random_units(rng, 1500)
        a = np.concatenate((pre, run, random_units(rng, 1500)))
        border = pre.size + int(rng.integers(1, run.size))
        ka = PW.winnow_stream([a[:border], a[border:]], w)
        va = set(PW.every_window_values(a)[ka].tolist())
        b = np.concatenate((random_units(rng, 700), run, random_units(rng, 900)))
        assert va & kept_values(b, w) & set(PW.every_window_values(run).tolist())


def test_a_rewrapped_passage_keeps_the_guarantee() -> None:
    """Line breaks, indentation and double spaces become one space in the units: a passage
    re-wrapped at another width is the same run."""
    rng = np.random.default_rng(3)
    words = ["".join(chr(c) for c in rng.integers(97, 123, int(rng.integers(2, 9)))) for _ in range(3000)]
    for _ in range(30):
        passage = " ".join(words[int(rng.integers(0, 2900)) :][:40])
        host_a = " ".join(rng.choice(words, 300))
        host_b = " ".join(rng.choice(words, 300))
        a = host_a + ". " + passage + ". " + host_a
        b = host_b + "\n\n" + textwrap.fill(passage, width=int(rng.integers(20, 60))).replace("\n", "\n   ") + "\n" + host_b
        ua, ub = normalize(a), normalize(b)
        run = normalize(passage)
        w = run.size - W + 1  # the longest window the run guarantees
        assert kept_values(ua, w) & kept_values(ub, w) & set(PW.every_window_values(run).tolist())


def test_passages_map_to_the_characters_of_both_files_across_encodings() -> None:
    """A verbatim paragraph in two documents, one UTF-16 with CR LF: the passages found from the
    kept windows lie inside the paragraph in each decoded text, and cover most of it."""
    rng = np.random.default_rng(11)
    words = ["".join(chr(c) for c in rng.integers(97, 123, int(rng.integers(2, 9)))) + rng.choice(["", ",", "."])
             for _ in range(4000)]
    para = " ".join(words[:120])  # ~700 characters
    a_text = " ".join(words[200:1700]) + "\n\n" + para + "\n\n" + " ".join(words[1700:3000])
    b_text = (" ".join(words[3000:3600]) + "\n\n" + textwrap.fill(para, 70) + "\n\n" + " ".join(words[3600:])).replace("\n", "\r\n")
    a_dec = decode_bytes(a_text.encode("utf-8")).text
    b_dec = decode_bytes(b"\xff\xfe" + b_text.encode("utf-16-le")).text
    assert a_dec == a_text and b_dec == b_text
    scheme = PW.Scheme("winnow by level", "winnow", (4, 6, 14, 26, 64, 64, 96, 100))
    fa, fb = scheme.select(PW.text_stream(a_dec)), scheme.select(PW.text_stream(b_dec))
    level = scheme.pair_level(fa.units, fb.units)
    ev = PW.evidence(fa, fb, level, np.empty(0, np.uint64), gap=level)
    a0, b0 = a_dec.index(para), b_dec.index(textwrap.fill(para, 70).replace("\n", "\r\n"))
    a1, b1 = a0 + len(para), b0 + len(textwrap.fill(para, 70).replace("\n", "\r\n"))
    assert ev.passages
    for pa0, pa1, pb0, pb1 in ev.passages:
        assert a0 <= pa0 < pa1 <= a1 and b0 <= pb0 < pb1 <= b1
    assert ev.longest >= len(para) - 2 * level - W  # the kept windows reach within w of each end
    assert ev.shared <= len(para)


def test_the_today_replica_equals_the_product() -> None:
    """The prototype's copy of today's selection gives the product's stored values exactly, so the
    comparisons in benchmarks/ compare selections on the very same windows and values."""
    rng = np.random.default_rng(5)
    words = ["".join(chr(c) for c in rng.integers(97, 123, int(rng.integers(2, 9)))) for _ in range(5000)]
    for n in (80, 900, 3000, 12000):
        text = " ".join(rng.choice(words, n))
        assert PW.check_today(text, text.encode("utf-8"))
