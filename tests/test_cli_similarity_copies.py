"""`simscan pairs` lists every pair at or above the threshold, copies included (issue 4)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from similarity_support import words

from simscan.cli import main
from simscan.index import Index
from simscan.similarity import find_pairs
from simscan.similarity.core import expand_copy_pairs


@pytest.fixture()
def scanned(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "tree"
    root.mkdir()
    base = words(31, 600)
    (root / "A.txt").write_text(base)
    (root / "A_copy.txt").write_text(base)
    (root / "A_utf16.txt").write_text(base, encoding="utf-16")
    (root / "B.txt").write_text(base[:2000] + " " + words(32, 60) + " " + base[2000:])
    (root / "C.txt").write_text(words(33, 200) + " " + (root / "B.txt").read_text()[3000:])
    (root / "C2.txt").write_text((root / "C.txt").read_text())
    (root / "other.txt").write_text(words(34, 500))
    for k, name in enumerate(("A.txt", "A_copy.txt", "A_utf16.txt", "B.txt", "C.txt", "C2.txt", "other.txt")):
        os.utime(root / name, ns=(1_600_000_000_000_000_000 + k * 10**9,) * 2)  # A is the oldest copy
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    return root, idx


def _pairs(capsys: pytest.CaptureFixture[str], *args: str) -> dict[frozenset[str], dict]:
    capsys.readouterr()
    assert main(["pairs", "--format", "json", *args]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    out = {frozenset((Path(r["a"]).name, Path(r["b"]).name)): r for r in recs}
    assert len(out) == len(recs)  # no pair twice
    return out


def test_every_copy_inherits_the_pairs(scanned: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, idx = scanned
    got = _pairs(capsys, "--index", str(idx))
    ab = got[frozenset(("A.txt", "B.txt"))]
    for copy in ("A_copy.txt", "A_utf16.txt"):
        r = got[frozenset((copy, "B.txt"))]
        assert {k: r[k] for k in ("best", "resemblance", "kind", "simhash_distance")} == {
            k: ab[k] for k in ("best", "resemblance", "kind", "simhash_distance")}
        # a keeps its side: the copy takes the place of A.
        assert (Path(r["a"]).name == copy) == (Path(ab["a"]).name == "A.txt")
        assert (r["containment_a"], r["containment_b"]) == (ab["containment_a"], ab["containment_b"])
    assert got[frozenset(("A.txt", "A_copy.txt"))]["kind"] == "exact"
    assert got[frozenset(("A.txt", "A_utf16.txt"))]["kind"] == "content"
    # Both sides copies: C and C2 are copies, each paired with A, A_copy, A_utf16 and B.
    for x, y in itertools.product(("A.txt", "A_copy.txt", "A_utf16.txt", "B.txt"), ("C.txt", "C2.txt")):
        assert frozenset((x, y)) in got, (x, y)
    # Copy classes stay stars: copies are not paired among themselves beyond the representative.
    assert frozenset(("A_copy.txt", "A_utf16.txt")) not in got
    assert not any("other.txt" in k for k in got)
    assert len(got) == 3 + 3 + 4 * 2  # copy pairs (A: 2, C: 1), {A copies}-B, {A copies, B}-{C, C2}
    # Representatives only: the former, smaller output.
    small = _pairs(capsys, "--index", str(idx), "--representatives-only")
    assert frozenset(("A_copy.txt", "B.txt")) not in small and frozenset(("A.txt", "B.txt")) in small
    assert len(small) == 3 + 1 + 2


def test_copy_pairs_are_bounded(scanned: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, idx = scanned
    assert main(["pairs", "--index", str(idx), "--format", "json", "--max-copy-pairs", "2"]) == 0
    out, err = capsys.readouterr()
    assert "were left out" in err and "--max-copy-pairs" in err
    n = len(out.splitlines())
    assert 6 <= n <= 6 + 2


def test_expand_equals_brute_force(scanned: tuple[Path, Path]) -> None:
    """Against a slow reference: a pair of files is listed iff their copy classes are paired."""
    _, idx = scanned
    with Index.open(idx, readonly=True) as ix:
        base = find_pairs(ix, min_similarity=0)
        assert find_pairs(ix, min_similarity=0, expand_copies=True) == expand_copy_pairs(base)[0]
    expanded, left = expand_copy_pairs(base)
    assert left == 0
    cls: dict[int, int] = {}
    for p in base:
        if p.kind in ("exact", "content"):
            cls[p.b_id] = p.a_id
    ids = {i for p in base for i in (p.a_id, p.b_id)}
    rep_pairs = {frozenset((p.a_id, p.b_id)): p for p in base if p.kind not in ("exact", "content")}
    want = set()
    for x, y in itertools.combinations(sorted(ids), 2):
        cx, cy = cls.get(x, x), cls.get(y, y)
        if cx == cy:
            if x == cx or y == cy:
                want.add(frozenset((x, y)))
        elif frozenset((cx, cy)) in rep_pairs:
            want.add(frozenset((x, y)))
    assert {frozenset((p.a_id, p.b_id)) for p in expanded} == want
    assert len(expanded) == len(want)
    bests = [p.best for p in expanded]
    assert bests == sorted(bests, reverse=True)
