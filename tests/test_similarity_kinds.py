"""Pair kinds: "contained" only when one file lies largely inside the other, else "near"."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from similarity_support import words

from simscan.similarity import compare
from simscan.similarity.compare import classify
from simscan.similarity.core import compute_pair_arrays, to_pairs
from simscan.similarity.memory import table_from_paths


def test_classify_rule() -> None:
    # Symmetric partial overlaps are "near" at any level (the former rule made them contained).
    for c in (10, 30, 40, 50, 70, 95):
        assert classify(100 * c / (200 - c), c, c) == "near"
    assert classify(10, 100, 10) == "contained" and classify(10, 10, 100) == "contained"  # excerpt
    assert classify(40, 80, 45) == "contained"  # more than half of one, clearly less of the other
    assert classify(40, 60, 45) == "near"  # not clearly larger
    assert classify(20, 40, 15) == "near"  # less than half of either file is shared


def _pairs(paths: list[Path]) -> dict[tuple[str, str], object]:
    m = table_from_paths(paths)
    pairs = to_pairs(compute_pair_arrays(*m, min_similarity=0, **m.evidence()), m.table)
    return {tuple(sorted((Path(p.a_path).name, Path(p.b_path).name))): p for p in pairs}


def test_kinds_on_real_files(tmp_path: Path) -> None:
    shared = words(1, 160)
    # Two same-length essays sharing 40% of their text.
    e1 = tmp_path / "essay1.txt"
    e2 = tmp_path / "essay2.txt"
    e1.write_text(shared + " " + words(2, 240))
    e2.write_text(words(3, 240) + " " + shared)
    # A 1 KB excerpt of a 10 KB file.
    big = tmp_path / "big.txt"
    text = words(4, 1700)
    big.write_text(text)
    excerpt = tmp_path / "excerpt.txt"
    excerpt.write_text(text[4000:5000])
    assert 9_000 < big.stat().st_size < 12_000 and excerpt.stat().st_size == 1000
    got = _pairs([e1, e2, big, excerpt])
    essays = got[("essay1.txt", "essay2.txt")]
    assert 25 < essays.containment_a < 55 and 25 < essays.containment_b < 55  # type: ignore[attr-defined]
    assert essays.kind == "near"  # type: ignore[attr-defined]
    ex = got[("big.txt", "excerpt.txt")]
    assert ex.kind == "contained" and ex.best > 90  # type: ignore[attr-defined]
    # compare() (two files alone) classifies by the same rule.
    assert compare(e1, e2).pair.kind == "near"
    assert compare(big, excerpt).pair.kind == "contained"
    assert compare(excerpt, big).pair.kind == "contained"


def test_group_member_kind_says_which_file_is_the_excerpt(tmp_path: Path) -> None:
    """In a group, "contained" reads from the member's side: a member that lies in the reference is
    "contained"; a member that holds the reference (the excerpt leads: it is under a reference folder)
    "contains".  Without a reference folder the source leads, older or not: the file the other is
    contained in."""
    from similarity_support import index_tree

    from simscan.cli import main

    text = words(5, 1700)
    for name, older, lead in (("excerpt", "excerpt.txt", "source.txt"), ("source", "source.txt", "source.txt"),
                              ("ref", "source.txt", "excerpt.txt")):
        root = tmp_path / name
        (root / "ref").mkdir(parents=True)
        (root / "source.txt").write_text(text)
        excerpt = root / ("ref" if name == "ref" else "") / "excerpt.txt"
        excerpt.write_text(text[4000:5500])
        for f in (root / "source.txt", excerpt):
            t = 1_500_000_000 if f.name == older else 1_600_000_000
            os.utime(f, (t, t))
        idx = tmp_path / f"{name}.sqlite3"
        index_tree(idx, root)
        out = tmp_path / f"{name}.json"
        with out.open("w") as fh, contextlib.redirect_stdout(fh):
            assert main(["groups", "--index", str(idx), "--format", "json", "--reference", str(root / "ref")]) == 0
        (group,) = [json.loads(line) for line in out.read_text().splitlines()]
        ref, member = group["members"]
        assert Path(ref["path"]).name == lead and group["kind"] == "contained"
        # containment_reference: the share of the reference found in the member.
        if lead == "excerpt.txt":
            assert member["containment_reference"] > 90 > member["containment_member"]
            assert member["kind"] == "contains"
        else:
            assert member["containment_member"] > 90 > member["containment_reference"]
            assert member["kind"] == "contained"
