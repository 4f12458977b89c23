"""`compare` with the index scores a pair as `pairs` does (fingerprints and text common to many
indexed files left out) and says what was left out; without one it scores the two files alone, and says
so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from similarity_support import words

from simscan.cli import main


def test_compare_explains_its_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "letters"
    root.mkdir()
    header = words(41, 150)  # a template held by more files than the common cut-off (50)
    for k in range(56):
        (root / f"letter{k:02d}.txt").write_text(header + "\n\n" + words(100 + k, 300))
    (root / "z_extra.txt").write_text(words(999, 50))
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    a, b = root / "letter00.txt", root / "letter01.txt"
    capsys.readouterr()
    assert main(["pairs", "--index", str(idx), "--format", "json", "-m", "0"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    listed = [r for r in recs if {r["a"], r["b"]} == {str(a), str(b)}]
    in_pairs = listed[0]["best"] if listed else 0.0
    assert main(["compare", str(a), str(b), "--format", "json", "--no-index"]) == 0
    alone = json.loads(capsys.readouterr().out)["best"]
    assert alone > 25 and in_pairs < 5  # the shared template counts only for the two files alone
    assert main(["compare", str(a), str(b), "--no-index"]) == 0
    out = capsys.readouterr().out
    assert "scores of these two files alone" in out and "leave out text common to many indexed files" in out
    # With the index: the number `pairs` gives, what was left out, and the two files alone beside it.
    assert main(["compare", str(a), str(b), "--index", str(idx), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["best"] == in_pairs and rec["alone"]["best"] == alone and rec["left_out"]["fingerprints_a"] > 0
    assert main(["compare", str(a), str(b), "--index", str(idx)]) == 0
    out = capsys.readouterr().out
    assert "the index leaves out" in out and "the two files alone: best" in out
    # Two files that share nothing are not "near" at 0 %, and the note (about partial scores) is left out.
    assert main(["compare", str(a), str(root / "z_extra.txt")]) == 0
    out = capsys.readouterr().out
    assert "nothing shared: best 0.0%" in out and "near" not in out and "files alone" not in out
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    helptext = capsys.readouterr().out
    assert "the two files alone" in helptext and "more than 50" in helptext and "--no-index" in helptext


def test_a_shared_passage_is_never_called_nothing_shared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Scores read a sample of the windows, passages every one: two texts that share one short
    passage can score 0 % and still show it.  Then the line says the kind, not "nothing shared"
    right above the passage (found by a reviewer with --ignore-text)."""
    zero_with_passage = 0
    for seed in range(8):
        shared = words(5000 + seed, 9)[:60]
        a, b = tmp_path / f"a{seed}.txt", tmp_path / f"b{seed}.txt"
        a.write_text(words(2 * seed, 400) + " " + shared + " " + words(2 * seed + 1, 300))
        b.write_text(words(3000 + seed, 300) + " " + shared + " " + words(4000 + seed, 400))
        capsys.readouterr()
        assert main(["compare", str(a), str(b), "--format", "json"]) == 0
        best = json.loads(capsys.readouterr().out)["best"]
        assert main(["compare", str(a), str(b)]) == 0
        out = capsys.readouterr().out
        shown = "\n1 matching passage (every shared window)\n" in out
        assert ("nothing shared" in out) == (best == 0 and not shown)
        zero_with_passage += best == 0 and shown
    assert zero_with_passage  # the case this is about occurs among these texts


def test_ignored_text_leaves_no_passage_at_its_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two answers that repeat the question and then differ share the window over the question's end
    and the separator after it: no passage (it showed as one beside 0 %).  A passage shared after the
    question is shown without the question's part."""
    question = tmp_path / "question.txt"
    q = "Question 3: " + words(77, 40) + ".\n\n"
    question.write_text(q)
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    shared = words(79, 80)
    a.write_text(q + words(80, 250))
    b.write_text(q + words(81, 250))
    c.write_text(q + shared + " " + words(82, 200))
    d = tmp_path / "d.txt"
    d.write_text(q + shared + " " + words(83, 200))

    def ranges(x: Path, y: Path, *ignore: Path) -> list[list[int]]:
        capsys.readouterr()
        args = ["compare", str(x), str(y), "--format", "json"]
        for t in ignore:
            args += ["--ignore-text", str(t)]
        assert main(args) == 0
        return json.loads(capsys.readouterr().out)["ranges_a"]

    ((start, end),) = ranges(a, b)  # without --ignore-text the question (and what follows it) is the passage
    assert start == 0 and len(q) - 3 <= end <= len(q)
    assert ranges(a, b, question) == []
    ((start, end),) = ranges(c, d, question)
    assert len(q) - 3 <= start <= len(q) and len(q) + len(shared) <= end <= len(q) + len(shared) + 1


def test_compare_claims_the_pairs_score_only_when_it_knows_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`compare` said "as `pairs` scores it: 77%" of two versions `pairs` did not list: the pair search had
    lowered its common cut-off (the pair budget), which `compare` does not use.  It now says "as `pairs`
    scores it" only when the search cached for these files used the usual cut-off; when it lowered it,
    the figures are called the usual cut-off's and the pair as that search saw it is told (here: nothing
    it counts, so not listed); with no search cached, it says `pairs` may have lowered it."""
    import random
    from dataclasses import replace

    from simscan.cli import similarity_cmds

    root = tmp_path / "versions"
    root.mkdir()
    base = words(1, 600).split()
    for v in range(12):  # 12 versions of one text, 8 words changed in each
        rng, w = random.Random(v), list(base)
        for _ in range(8):
            w[rng.randrange(len(w))] = f"x{v}y{rng.randrange(1000)}"
        (root / f"v{v:02d}.txt").write_text(" ".join(w))
    for k in range(6):
        (root / f"other{k}.txt").write_text(words(100 + k, 400))
    idx = tmp_path / "i.sqlite3"
    a, b = str(root / "v00.txt"), str(root / "v01.txt")

    def run(*cmd: str) -> tuple[str, str]:
        capsys.readouterr()
        assert main([*cmd, "--index", str(idx)]) == 0
        return capsys.readouterr()

    def listed() -> list[dict]:
        recs = [json.loads(x) for x in run("pairs", "--format", "json")[0].splitlines()]
        return [r for r in recs if {r["a"], r["b"]} == {a, b}]

    assert main(["scan", str(root), "--index", str(idx), "--quiet", "--no-cache"]) == 0
    # No search cached for these files: compare cannot know which cut-off `pairs` uses.
    text = run("compare", a, b)[0]
    assert "as `pairs` scores it" not in text
    assert "near, in the index (text held by more than 50 indexed files left out, as `pairs` does unless it says " \
           "it lowered that cut-off): best 77.1%" in text
    assert json.loads(run("compare", a, b, "--format", "json")[0])["pairs_search"] is None
    # The usual cut-off (the search is cached now): `pairs` lists the pair with compare's figure.
    (pair,) = listed()
    text = run("compare", a, b)[0]
    assert f"near, as `pairs` scores it: best {pair['best']:.1f}%" in text and "lower that cut-off" not in text
    rec = json.loads(run("compare", a, b, "--format", "json")[0])
    assert rec["best"] == pair["best"] and rec["pairs_search"]["lowered"] is False
    # A pair budget so small that the search lowers the cut-off (to 2 files): `pairs` lists no version.
    real = similarity_cmds.params_from_args
    monkeypatch.setattr(similarity_cmds, "params_from_args", lambda args: replace(real(args), pair_budget=40))
    assert listed() == []
    text = run("compare", a, b)[0]
    assert "as `pairs` scores it" not in text
    assert "near, in the index at the usual common cut-off (text held by more than 50 indexed files left out): " \
           f"best {pair['best']:.1f}%" in text
    assert "(the last `pairs` search of these files had to lower that cut-off to 2 files: text held by more " \
           "counted nowhere; there, they share nothing it counts, so `pairs` does not list them)" in text
    rec = json.loads(run("compare", a, b, "--format", "json")[0])
    assert rec["best"] == pair["best"] and rec["pairs_search"]["lowered"] is True
    assert rec["pairs_search"]["common_cutoff"] == 2 and rec["pairs_search"]["usual_cutoff"] == 50
    assert rec["pairs_search"]["at_cutoff"]["best"] == 0.0


def test_compare_reports_each_pass_over_the_stored_sets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`compare` reads every stored set once to score the pair at the usual cut-off and, when the cached search
    lowered it, once more at that cut-off: both passes (seconds each at a million files) reach its progress bar
    (the second was silent)."""
    import random
    from dataclasses import replace

    from simscan.cli import similarity_cmds

    root = tmp_path / "versions"
    root.mkdir()
    base = words(1, 600).split()
    for v in range(12):
        rng, w = random.Random(v), list(base)
        for _ in range(8):
            w[rng.randrange(len(w))] = f"x{v}y{rng.randrange(1000)}"
        (root / f"v{v:02d}.txt").write_text(" ".join(w))
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet", "--no-cache"]) == 0
    real = similarity_cmds.params_from_args
    monkeypatch.setattr(similarity_cmds, "params_from_args", lambda args: replace(real(args), pair_budget=40))
    assert main(["pairs", "--index", str(idx)]) == 0  # (caches a search that lowered the cut-off)
    seen: list = []

    class Bar:
        def __call__(self, p) -> None:
            seen.append(p)

        def finish(self) -> None:
            pass

    monkeypatch.setattr(similarity_cmds, "_progress_bar", Bar)
    capsys.readouterr()
    assert main(["compare", str(root / "v00.txt"), str(root / "v01.txt"), "--index", str(idx)]) == 0
    assert "had to lower that cut-off to 2 files" in capsys.readouterr().out
    starts = [p for p in seen if p.phase == "sets" and p.files_done == 0]
    assert len(starts) == 2 and all(p.files_total == 12 for p in starts)


def test_compare_names_its_pass_over_the_stored_sets_for_what_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """compare of two long texts reads every stored set (the pair as `pairs` counts it), which its bar called
    "reading every stored set (a short text)": the reason a query takes that pass, not compare's."""
    import io

    from simscan.cli import similarity_cmds
    from simscan.cli.common import ProgressBar

    root = tmp_path / "t"
    root.mkdir()
    for k in range(3):
        (root / f"long{k}.txt").write_text(words(1, 3000) + words(10 + k, 300))
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet", "--no-cache"]) == 0
    drawn = io.StringIO()
    monkeypatch.setattr(similarity_cmds, "_progress_bar", lambda: ProgressBar(drawn, enabled=True))
    assert main(["compare", str(root / "long0.txt"), str(root / "long1.txt"), "--index", str(idx)]) == 0
    assert "reading every stored set" in drawn.getvalue() and "short text" not in drawn.getvalue()
