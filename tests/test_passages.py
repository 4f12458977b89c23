"""Shared passages (issue 16): the guarantee winnowing gives, on random texts, and passages mapped to
the characters of the original texts across encodings, re-wraps, chunk borders and documents.

The guarantee (``fingerprint.rolling``, native ``winnow.rs``): two texts compared at winnowing window
``w`` (the coarser of their levels' windows: 4 for texts under 512 normalised units, 64 from 4,096
units) that share a run of ``w + 49`` normalised units both keep one of its windows, with the same
value: the pair is a candidate and the passage is found.  One unit shorter is not guaranteed.
"""

from __future__ import annotations

import os
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from helpers_documents import docx_of_paragraphs
from similarity_support import words

from simscan.fingerprint import DEFAULT_PARAMS, fingerprint_bytes
from simscan.fingerprint.text import normalize
from simscan.index import Index
from simscan.similarity import compare, find_pairs
from simscan.similarity.evidence import DEFAULT_MIN_PASSAGE, StoredSets, pair_evidence, window_of_level

W = DEFAULT_PARAMS.window
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def random_text(rng: random.Random, n: int) -> str:
    """``n`` characters of lower-case words and single spaces: exactly ``n`` normalised units."""
    out = []
    while len(out) < n:
        out.extend(rng.choice(LETTERS) for _ in range(rng.randint(2, 9)))
        out.append(" ")
    text = "".join(out[:n])
    return text[:-1] + "x" if text.endswith(" ") else text


def planted(rng: random.Random, size: int, shared: int) -> tuple[str, str, tuple[int, int], tuple[int, int]]:
    """Two random texts of about ``size`` characters sharing exactly ``shared`` units (the units on
    either side of the shared run differ), and the run's character range in each."""
    p = random_text(rng, shared)
    a0, b0 = rng.randint(0, size - shared), rng.randint(0, size - shared)
    a = random_text(rng, a0) + p + random_text(rng, size - shared - a0)
    b = random_text(rng, b0) + p + random_text(rng, size - shared - b0)
    assert len(normalize(a)) == len(a) and len(normalize(b)) == len(b)
    # The run is exactly ``shared`` units long: it cannot extend on either side.
    if a0 and b0 and a[a0 - 1] == b[b0 - 1]:
        b = b[: b0 - 1] + ("q" if a[a0 - 1] != "q" else "z") + b[b0:]
    e_a, e_b = a0 + shared, b0 + shared
    if e_a < len(a) and e_b < len(b) and a[e_a] == b[e_b]:
        b = b[:e_b] + ("q" if a[e_a] != "q" else "z") + b[e_b + 1 :]
    return a, b, (a0, e_a), (b0, e_b)


def evidence_of(a: bytes, b: bytes, params=DEFAULT_PARAMS):
    fa, fb = fingerprint_bytes(a, params), fingerprint_bytes(b, params)
    level = max(DEFAULT_PARAMS.text_level(fa.units), DEFAULT_PARAMS.text_level(fb.units))
    w = int(window_of_level(level))
    ev = pair_evidence(StoredSets.of([fa, fb]), [0], [1], np.array([w], np.uint8), passages=True)
    return w, ev


@pytest.mark.parametrize("size", [400, 9000])  # levels 0 (window 4) and 6 (window 64)
def test_a_run_of_w_plus_49_units_is_always_found(size: int) -> None:
    rng = random.Random(size)
    w = int(window_of_level(DEFAULT_PARAMS.text_level(size)))
    for _ in range(60 if size < 1000 else 12):
        a, b, (a0, a1), (b0, b1) = planted(rng, size, w + W - 1)
        got_w, ev = evidence_of(a.encode(), b.encode())
        assert got_w == w
        assert ev.inter[0] >= 1
        # Every passage lies inside the shared run, in both texts.
        for pa0, pa1, pb0, pb1 in ev.passages_of(0):
            assert a0 <= pa0 < pa1 <= a1 and b0 <= pb0 < pb1 <= b1
        assert ev.longest[0] >= W


def test_one_unit_shorter_is_not_guaranteed() -> None:
    rng = random.Random(7)
    w = int(window_of_level(0))
    found = [evidence_of(*(t.encode() for t in planted(rng, 400, w + W - 2)[:2]))[1].inter[0] > 0 for _ in range(300)]
    assert 0 < sum(found) < len(found)  # most are found, some are not: the bound is tight


def test_a_passage_across_a_chunk_border_and_a_rewrap() -> None:
    """Streamed in small chunks (the passage straddles several borders) the values are the same; in a
    copy whose lines are wrapped again, the passage is found whole."""
    rng = random.Random(3)
    a, b, (a0, a1), (b0, b1) = planted(rng, 9000, 900)
    chunked = replace(DEFAULT_PARAMS, chunk_size=257)
    fa, fc = fingerprint_bytes(a.encode()), fingerprint_bytes(a.encode(), chunked)
    assert fa.rolling.tolist() == fc.rolling.tolist() and fa.meta.blob() == fc.meta.blob()
    # b's lines wrapped at ~40 characters (spaces become line breaks): the same units, other characters.
    wrapped = "".join("\n" if ch == " " and k % 40 < 8 else ch for k, ch in enumerate(b))
    _w, ev = evidence_of(a.encode(), wrapped.encode(), chunked)
    assert ev.longest[0] >= 900 - 2 * 64 - W
    assert any(a0 <= pa0 and pa1 <= a1 and b0 <= pb0 and pb1 <= b1 for pa0, pa1, pb0, pb1 in ev.passages_of(0))


def test_passages_are_characters_of_the_original_texts_in_any_encoding() -> None:
    """a in UTF-8 with accents, b in UTF-16 with a BOM and CR LF: the passage's ranges are character
    offsets of each decoded text, and select the shared paragraph in both."""
    rng = random.Random(11)
    para = "Le théâtre naïf d'été, où l'élève répète: " + words(5, 60)
    a = words(1, 1500) + "\n\n" + para + "\n\n" + words(2, 1500)
    b = words(3, 1200) + "\r\n\r\n" + para.replace(" ", "\r\n", 3) + "\r\n\r\n" + words(4, 900)
    _w, ev = evidence_of(a.encode(), b.encode("utf-16"))
    (pa0, pa1, pb0, pb1), = [p for p in ev.passages_of(0) if p[1] - p[0] > 100]
    text_b = b.encode("utf-16").decode("utf-16")
    assert para[5:-5] in a[pa0 - 60 : pa1 + 60] and a[pa0:pa1] in para
    assert normalize(text_b[pb0:pb1]).tolist() == normalize(a[pa0:pa1]).tolist()
    assert ev.longest[0] == min(pa1 - pa0, pb1 - pb0) > len(para) - 2 * 64 - W
    assert rng  # (seeded text)


def test_an_essay_holding_a_paragraph_of_a_long_document_is_listed(tmp_path: Path) -> None:
    """A 400-character paragraph shared by two long documents, a DOCX and a plain text file: 3 % of
    each, far under the threshold, and listed for its passage; compare highlights it in both."""
    para = words(77, 70)
    assert 380 <= len(para) <= 520
    root = tmp_path / "docs"
    root.mkdir()
    essay = [words(k, 120) for k in range(20, 40)]
    essay.insert(11, para)
    (root / "essay.docx").write_bytes(docx_of_paragraphs(essay))
    (root / "source.txt").write_text("\n\n".join([words(k, 120) for k in range(50, 62)] + [para]
                                                 + [words(k, 120) for k in range(62, 70)]))
    (root / "other.txt").write_text(words(99, 2500))
    idx = tmp_path / "i.db"
    from simscan.scanner import ScanRequest, run_scan

    run_scan(ScanRequest([root], idx))
    with Index.open(idx, readonly=True) as ix:
        pairs = find_pairs(ix)
    (p,) = pairs
    assert {Path(p.a_path).name, Path(p.b_path).name} == {"essay.docx", "source.txt"}
    assert p.best < 15 and p.longest_passage >= DEFAULT_MIN_PASSAGE and p.longest_passage >= len(para) - 2 * 64 - W
    assert p.shared_chars >= p.longest_passage
    c = compare(p.a_path, p.b_path)
    assert c.pair.longest_passage == p.longest_passage  # one number, wherever it is shown
    texts = {Path(p.a_path).name: (c.text_a, c.ranges_a), Path(p.b_path).name: (c.text_b, c.ranges_b)}
    for name in ("essay.docx", "source.txt"):
        text, ranges = texts[name]
        assert any(normalize(para).tolist() == normalize(text[s:e]).tolist() for s, e in ranges), name
    # Without the passage rule the pair is not listed.
    from simscan.similarity import SimilarityParams

    with Index.open(idx, readonly=True) as ix:
        assert find_pairs(ix, params=SimilarityParams(min_passage=0), cache=False) == []


def test_a_licence_many_files_hold_makes_no_pair(tmp_path: Path) -> None:
    """A licence block in 70 files (above the common cut-off of 50), long and short alike, and a file
    that is the licence alone: no pair among them (the licence is common text everywhere), while two of
    them that share a paragraph of their own are still found."""
    licence = "Permission is hereby granted, free of charge: " + words(4242, 140)
    root = tmp_path / "t"
    root.mkdir()
    for k in range(70):
        body = words(1000 + k, 40 if k % 2 else 1600)  # short and long carriers
        (root / f"f{k:02d}.txt").write_text(licence + "\n\n" + body)
    (root / "licence.txt").write_text(licence)
    shared = words(5000, 90)
    (root / "f00.txt").write_text(licence + "\n\n" + words(3000, 800) + "\n\n" + shared + "\n\n" + words(3001, 800))
    (root / "f02.txt").write_text(licence + "\n\n" + words(3002, 700) + "\n\n" + shared + "\n\n" + words(3003, 700))
    idx = tmp_path / "i.db"
    from simscan.scanner import ScanRequest, run_scan

    run_scan(ScanRequest([root], idx))
    with Index.open(idx, readonly=True) as ix:
        pairs = find_pairs(ix)
    names = {frozenset((Path(p.a_path).name, Path(p.b_path).name)) for p in pairs}
    assert names == {frozenset(("f00.txt", "f02.txt"))}, sorted(tuple(sorted(n)) for n in names)[:10]


def _licence_tree(tmp_path: Path) -> tuple[Path, str, str]:
    """A folder of 60 files holding one licence (common in the index: over the cut-off of 50), the
    licence and a paragraph of nobody's (for two files to share)."""
    licence = "Permission is hereby granted, free of charge: " + words(4242, 140)
    root = tmp_path / "d"
    root.mkdir()
    for k in range(60):
        (root / f"f{k:02d}.txt").write_text(licence + "\n\n" + words(1000 + k, 300))
    return root, licence, words(5000, 90)


def test_compare_with_an_index_reports_the_number_pairs_reports(tmp_path: Path, capsys) -> None:
    """Two files sharing a licence many indexed files hold and a paragraph of their own: `compare`
    with the index gives the scores and passage `pairs` gives, says what the index left out, and shows
    the two files alone beside it; with --no-index only the two files alone."""
    import json

    from simscan.cli import main

    root, licence, shared = _licence_tree(tmp_path)
    (root / "x.txt").write_text(licence + "\n\n" + words(3000, 500) + "\n\n" + shared + "\n\n" + words(3001, 500))
    (root / "y.txt").write_text(licence + "\n\n" + words(3002, 400) + "\n\n" + shared + "\n\n" + words(3003, 400))
    idx = tmp_path / "i.db"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    assert main(["pairs", "--index", str(idx), "--format", "json"]) == 0
    (listed,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {Path(listed["a"]).name, Path(listed["b"]).name} == {"x.txt", "y.txt"} and listed["best"] < 15
    x, y = str(root / "x.txt"), str(root / "y.txt")
    assert main(["compare", x, y, "--index", str(idx), "--format", "json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert (c["best"], c["longest_passage"], c["shared_chars"]) == (listed["best"], listed["longest_passage"],
                                                                   listed["shared_chars"])
    assert c["left_out"]["fingerprints_a"] > 0 and c["left_out"]["common_cutoff"] == 50
    assert c["alone"]["best"] > 2 * c["best"] and c["alone"]["longest_passage"] > len(licence) - 2 * 64 - W
    assert main(["compare", x, y, "--index", str(idx)]) == 0
    text = capsys.readouterr().out
    assert "as `pairs` scores it: best" in text and "the index leaves out" in text and "the two files alone" in text
    assert main(["compare", x, y, "--index", str(idx), "--no-index", "--format", "json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert "left_out" not in alone and alone["best"] == c["alone"]["best"]


def test_compare_gives_one_number_whichever_file_comes_first(tmp_path: Path, capsys) -> None:
    """y holds a licence 60 indexed files hold, x does not: the licence is common for y whichever
    file is named first (its holders are not among the files x's fingerprints find, so counting the
    document frequency among those left it in for `compare x y`: resemblance 8.0 % against 9.2 %),
    and both orders give what `pairs` gives."""
    import json

    from simscan.cli import main

    root, licence, shared = _licence_tree(tmp_path)
    (root / "x.txt").write_text(words(3000, 200) + "\n\n" + shared + "\n\n" + words(3001, 200))
    (root / "y.txt").write_text(licence + "\n\n" + words(3002, 300) + "\n\n" + shared + "\n\n" + words(3003, 300))
    idx = tmp_path / "i.db"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    assert main(["pairs", "--index", str(idx), "--format", "json", "-m", "0"]) == 0
    listed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (p,) = [r for r in listed if {Path(r["a"]).name, Path(r["b"]).name} == {"x.txt", "y.txt"}]
    x, y = str(root / "x.txt"), str(root / "y.txt")
    for a, b in ((x, y), (y, x)):
        assert main(["compare", a, b, "--index", str(idx), "--format", "json"]) == 0
        c = json.loads(capsys.readouterr().out)
        assert (c["best"], c["resemblance"], c["longest_passage"], c["shared_chars"]) == (
            p["best"], p["resemblance"], p["longest_passage"], p["shared_chars"]), (a, b)
        assert sorted((c["containment_a"], c["containment_b"])) == sorted((p["containment_a"], p["containment_b"]))
        assert c["changed_since_scan"] == []
    # x edited after the scan: compare scores it as it is now and says pairs still shows the scan's x.
    with open(x, "a") as f:
        f.write(words(3004, 50))
    assert main(["compare", x, y, "--index", str(idx), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed_since_scan"] == [x]
    assert main(["compare", y, x, "--index", str(idx)]) == 0
    assert "changed since the last scan" in capsys.readouterr().out
    # y's row written by an older simscan (left out of the results, unchanged on disk): not "changed".
    from tests.helpers_index import edit_files

    edit_files(idx, "UPDATE files SET algorithm_version = 0 WHERE path = ?", (os.fsencode(y),))
    assert main(["compare", x, y, "--index", str(idx), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed_since_scan"] == [x]
