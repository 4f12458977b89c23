"""More near-copies of one text than the common cut-off: the pair search counts their shared text nowhere
(as a licence's), says so, and `--common-cutoff` counts it (real files, a real index, the real CLI)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from similarity_support import words

from simscan.cli import main
from simscan.similarity import core


def _family(root: Path, copies: int) -> None:
    """``copies`` versions of one 500-word text, each with 1 % of its words replaced (seeded: letters from
    one template, a name and a date changed), and a few unrelated texts."""
    root.mkdir()
    base = words(90, 500).split()
    rng = random.Random(5)
    for k in range(copies):
        text = [rng.choice(base[:200]) + "x" if rng.random() < 0.01 else w for w in base]
        (root / f"v{k:03d}.txt").write_text(" ".join(text))
    for k in range(4):
        (root / f"other{k}.txt").write_text(words(200 + k, 500))


def _groups(capsys, idx: Path, *args: str) -> tuple[list[dict], str]:
    capsys.readouterr()
    assert main(["groups", "--index", str(idx), "--format", "json", *args]) == 0
    out = capsys.readouterr()
    return [json.loads(line) for line in out.out.splitlines()], out.err


def test_a_family_larger_than_the_cut_off_is_told_and_counted_with_a_higher_one(tmp_path: Path, capsys) -> None:
    root, idx = tmp_path / "t", tmp_path / "i.sqlite3"
    _family(root, 60)  # (the cut-off is 50 files)
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    for cached in (False, True):  # (computed and stored, then read from the results cache: told both times)
        got, err = _groups(capsys, idx)
        assert "files are mostly text that more than 50 indexed files hold" in err and "--common-cutoff" in err
        grouped = {m["path"] for g in got for m in g["members"]}
        assert len({p for p in grouped if "/v" in p}) < 60, cached  # the versions are paired only by their edits
    got, err = _groups(capsys, idx, "--common-cutoff", "100")
    assert "mostly text" not in err
    assert [sorted(Path(m["path"]).name for m in g["members"]) for g in got] == [[f"v{k:03d}.txt" for k in range(60)]]
    capsys.readouterr()
    assert main(["pairs", "--index", str(idx), "--format", "json", "--common-cutoff", "100", "--no-cache"]) == 0
    pairs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(pairs) == 60 * 59 // 2  # every two versions
    with pytest.raises(SystemExit):
        main(["pairs", "--index", str(idx), "--common-cutoff", "1"])
    assert "--common-cutoff: must be 2 or more" in capsys.readouterr().err
    # A huge number is refused with a message (it was a traceback: the search sizes a histogram by it, 7.45 GiB
    # at 1,000,000,000), as the window's dialog bounds it.
    for huge in ("1000001", "1000000000", "10000000000000000000"):
        with pytest.raises(SystemExit):
            main(["pairs", "--index", str(idx), "--common-cutoff", huge])
        assert "--common-cutoff: must be 1,000,000 or less" in capsys.readouterr().err


def test_a_family_under_the_cut_off_is_not_told(tmp_path: Path, capsys) -> None:
    root, idx = tmp_path / "t", tmp_path / "i.sqlite3"
    _family(root, 30)
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    got, err = _groups(capsys, idx)
    assert "mostly text" not in err
    assert [len(g["members"]) for g in got] == [30]


def test_mostly_common_counts_files_with_more_than_half_their_values_common() -> None:
    full = np.array([10, 10, 9, 100, 100, 0])
    kept = np.array([4, 5, 0, 49, 50, 0])
    # A plain reading of the rule: at least 10 values, fewer than half of them kept.
    want = sum(1 for f, k in zip(full, kept) if f >= core.CROWDED_MIN_VALUES and k < f / 2)
    assert core.mostly_common(full, kept) == want == 2


@pytest.mark.parametrize("args", [["compare"], ["query"]])
def test_compare_and_query_take_the_option(tmp_path: Path, capsys, args: list[str]) -> None:
    """The same cut-off everywhere: `compare` and `query` of two versions count their shared text with it."""
    root, idx = tmp_path / "t", tmp_path / "i.sqlite3"
    _family(root, 60)
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    files = [str(root / "v000.txt")] + ([str(root / "v001.txt")] if args == ["compare"] else [])
    scores = []
    for extra in ([], ["--common-cutoff", "100"]):
        capsys.readouterr()
        assert main([*args, *files, "--index", str(idx), "--format", "json", *extra]) == 0
        out = capsys.readouterr().out
        recs = [json.loads(line) for line in out.splitlines()] if args == ["query"] else [json.loads(out)]
        scores.append(recs)
    if args == ["query"]:
        assert len(scores[1]) == 59 and len(scores[0]) < 59  # every other version with the higher cut-off
    else:
        assert scores[0][0]["left_out"]["common_cutoff"] == 50 and scores[1][0]["left_out"]["common_cutoff"] == 100


def test_no_such_note_when_the_pair_budget_lowered_the_cut_off(tmp_path: Path, capsys, monkeypatch) -> None:
    """Under a cut-off the pair budget lowered (to 2 files here), most files are mostly "common" text and a
    higher --common-cutoff would not count it: only the budget's note is given, not advice to raise the option
    (it said "443 files are mostly text that more than 2 indexed files hold" on the evaluation corpus)."""
    from dataclasses import replace

    from simscan.cli import similarity_cmds

    root, idx = tmp_path / "t", tmp_path / "i.sqlite3"
    _family(root, 60)
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    real = similarity_cmds.params_from_args
    monkeypatch.setattr(similarity_cmds, "params_from_args", lambda args: replace(real(args), pair_budget=40))
    _, err = _groups(capsys, idx, "--no-cache")
    assert "too many shared passages for the pair search's budget: text held by more than 2 files" in err
    assert "mostly text" not in err
