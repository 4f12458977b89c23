"""The pairs / groups / query / compare commands: formats other tools parse."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from similarity_support import words, write_index

from simscan.cli import main
from simscan.cli.similarity_cmds import csv_cell

PAIR_KEYS = {
    "a": str, "b": str, "best": float, "resemblance": float, "containment_a": float, "containment_b": float,
    "simhash_distance": int, "exact": bool, "kind": str,
}


@pytest.fixture()
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "docs"
    root.mkdir()
    base = words(1, 400)
    (root / "orig.txt").write_text(base)
    (root / "edit.txt").write_text(base[:1500] + " " + words(2, 30) + " " + base[1500:])
    (root / "=SUM(A1).txt").write_text(base)  # an exact copy with a formula-like name
    (root / "-minus.txt").write_text(words(3, 200) + " " + base[:900])
    odd = os.fsencode(str(root)) + b"/bad\xff\xfename.txt"
    with open(odd, "wb") as f:
        f.write(base.encode("utf-16"))
    (root / "other.txt").write_text(words(4, 300))
    files = [root / n for n in ("orig.txt", "edit.txt", "=SUM(A1).txt", "-minus.txt", "other.txt")]
    files.append(Path(os.fsdecode(odd)))
    idx = tmp_path / "i.sqlite3"
    write_index(idx, files)
    return root, idx


def test_pairs_json_lines_schema(tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _root, idx = tree
    assert main(["pairs", "--index", str(idx), "--format", "json", "--min-similarity", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    recs = [json.loads(line) for line in lines]
    assert recs
    for r in recs:
        for k, t in PAIR_KEYS.items():
            assert isinstance(r[k], t), (k, r)
        assert os.path.isabs(r["a"]) and os.path.isabs(r["b"])
        assert r["kind"] in ("exact", "content", "near", "contained")
        assert 0 <= r["resemblance"] <= 100 and r["best"] == max(r["resemblance"], r["containment_a"],
                                                                   r["containment_b"])
    names = {(Path(r["a"]).name, Path(r["b"]).name): r for r in recs}
    # 3 copies of one text (2 byte copies + 1 UTF-16 with an undecodable name) = 2 pairs.
    copies = [r for r in recs if r["kind"] in ("exact", "content")]
    assert len(copies) == 2
    odd = [r for r in recs if "a_raw" in r or "b_raw" in r]
    assert odd and all("\\xff" in (r["a"] + r["b"]) for r in odd)
    import base64

    raw = [base64.b64decode(r.get("b_raw") or r["a_raw"]) for r in odd]
    assert all(x.endswith(b"/bad\xff\xfename.txt") for x in raw)
    assert any(r["kind"] == "near" for r in names.values())


def test_pairs_threshold_and_text(tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, idx = tree
    assert main(["pairs", "--index", str(idx), "--format", "json", "-m", "90", "--min-passage", "0"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert recs and all(r["best"] >= 90 for r in recs)
    # By default a pair under the threshold is listed too when it shares a passage of 100 characters.
    assert main(["pairs", "--index", str(idx), "--format", "json", "-m", "90"]) == 0
    more = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(more) > len(recs)
    assert all(r["best"] >= 90 or r["longest_passage"] >= 100 for r in more)
    assert all(r["longest_passage"] is None and r["shared_chars"] is None for r in more if r["kind"] in ("exact", "content"))
    assert all(0 < r["longest_passage"] <= r["shared_chars"] for r in more if r["kind"] in ("near", "contained"))
    assert main(["pairs", "--index", str(idx)]) == 0
    out = capsys.readouterr().out
    assert "<->" in out and "%" in out
    with pytest.raises(SystemExit) as e:
        main(["pairs", "--index", str(idx), "-m", "150"])
    assert e.value.code == 2


def test_csv_is_spreadsheet_safe(tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert csv_cell("=1+1") == "'=1+1" and csv_cell("+x") == "'+x" and csv_cell("-x") == "'-x"
    assert csv_cell("@x") == "'@x" and csv_cell("\tx") == "'\tx" and csv_cell("\rx") == "'\rx"
    assert csv_cell("/a/=b") == "/a/=b" and csv_cell(3.5) == 3.5
    _, idx = tree
    assert main(["pairs", "--index", str(idx), "--format", "csv", "-m", "0"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0][:3] == ["a", "b", "best"]
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert main(["groups", "--index", str(idx), "--format", "csv", "-m", "0"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0][0] == "group" and len(rows) > 2
    for row in rows[1:]:
        assert not any(c.startswith(("=", "+", "-", "@")) for c in row)


def test_groups_json_and_reference(tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _root, idx = tree
    assert main(["groups", "--index", str(idx), "--format", "json", "-m", "10"]) == 0
    groups = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(groups) == 1
    g = groups[0]
    assert sum(m["is_reference"] for m in g["members"]) == 1
    assert g["members"][0]["is_reference"] and g["members"][0]["similarity"] == 100
    assert {Path(m["path"]).name for m in g["members"]} >= {"orig.txt", "edit.txt", "=SUM(A1).txt"}
    # A member's pair carries its passages, as `pairs` lists that pair (they were always null here).
    edit = next(m for m in g["members"] if Path(m["path"]).name == "edit.txt")
    assert main(["pairs", "--index", str(idx), "--format", "json", "-m", "10"]) == 0
    listed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    pair = next(p for p in listed if {Path(p["a"]).name, Path(p["b"]).name} == {"orig.txt", "edit.txt"})
    assert edit["longest_passage"] == pair["longest_passage"] and edit["longest_passage"] >= 1000
    assert edit["shared_chars"] == pair["shared_chars"]
    assert main(["groups", "--index", str(idx), "-m", "10"]) == 0
    assert "ref" in capsys.readouterr().out


def test_query_and_compare(tree: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, idx = tree
    q = tmp_path / "q.txt"
    q.write_text(words(9, 100) + " " + (root / "orig.txt").read_text()[:1200])
    assert main(["query", str(q), "--index", str(idx), "--format", "json", "-m", "10"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert recs and all(r["a"] == str(q) for r in recs)
    assert "orig.txt" in {Path(r["b"]).name for r in recs}
    assert main(["compare", str(q), str(root / "orig.txt"), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["ranges_a"] and len(rec["ranges_a"]) == len(rec["ranges_b"])
    text = q.read_text()
    a0, a1 = rec["ranges_a"][0]
    assert text[a0:a1].strip() and a1 - a0 > 50
    assert main(["compare", str(q), str(root / "orig.txt")]) == 0
    out = capsys.readouterr().out
    assert "1 matching passage (every shared window)\n" in out and "resemblance" in out
    # Missing files: a clear message and exit code 1, no traceback.
    assert main(["compare", str(q), str(tmp_path / "nope")]) == 1
    assert "nope" in capsys.readouterr().err
    assert main(["query", str(tmp_path / "nope"), "--index", str(idx)]) == 1
    capsys.readouterr()
    # One bad file among several: named, and the others are still answered (exit 1).
    assert main(["query", str(q), str(tmp_path / "nope"), str(root), "--index", str(idx), "--format", "json",
                 "-m", "10"]) == 1
    out, err = capsys.readouterr()
    assert {json.loads(x)["a"] for x in out.splitlines()} == {str(q)}
    assert "nope: no such file" in err and "not a regular file" in err
    # A --reference that is a file, not a folder, is called that.
    assert main(["groups", "--index", str(idx), "--reference", str(q)]) == 0
    assert "is not a folder" in capsys.readouterr().err


def test_scan_then_pairs_and_groups(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end through the scanner: copies, a re-encoding, an edit and an excerpt."""
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    base = words(21, 600)
    (root / "a.txt").write_text(base)
    (root / "sub" / "a_copy.txt").write_text(base)
    (root / "a_utf16.txt").write_text(base, encoding="utf-16")
    (root / "a_edit.txt").write_text(base[:2000] + " " + words(22, 40) + " " + base[2000:])
    (root / "excerpt.txt").write_text(base[500:1800])
    (root / "unrelated.txt").write_text(words(23, 500))
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["pairs", "--index", str(idx), "--format", "json"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    kinds = {(Path(r["a"]).name, Path(r["b"]).name): r["kind"] for r in recs}
    assert sorted(kinds.values()).count("exact") == 1 and sorted(kinds.values()).count("content") == 1
    assert any(k == "near" and "a_edit.txt" in names for names, k in kinds.items())
    assert any(k == "contained" and "excerpt.txt" in names for names, k in kinds.items())
    assert not any("unrelated.txt" in names for names in kinds)
    assert main(["groups", "--index", str(idx), "--format", "json", "--reference", str(root / "sub")]) == 0
    (g,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert Path(g["reference"]).name == "a_copy.txt"
    assert {Path(m["path"]).name for m in g["members"]} == {
        "a.txt", "a_copy.txt", "a_utf16.txt", "a_edit.txt", "excerpt.txt"}


def test_stale_fingerprints_are_reported(tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers_index import edit_files

    _, idx = tree
    # as if an older simscan had fingerprinted two files
    edit_files(idx, "UPDATE files SET algorithm_version = 0 WHERE id IN (SELECT id FROM files LIMIT 2)")
    assert main(["pairs", "--index", str(idx), "--format", "json"]) == 0
    err = capsys.readouterr().err
    assert "2 indexed files were fingerprinted by an older version" in err


def test_results_during_a_scan_say_they_are_partial(tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from simscan.index import Index

    _, idx = tree
    for cmd in (["pairs"], ["groups"], ["query", str(tree[0] / "orig.txt")]):
        capsys.readouterr()
        assert main([*cmd, "--index", str(idx), "--format", "json"]) == 0
        assert "a scan is writing" not in capsys.readouterr().err
        with Index.open(idx) as holder:
            holder.scan_lock()  # as a running scan does
            assert main([*cmd, "--index", str(idx), "--format", "json"]) == 0
            err = capsys.readouterr().err
        assert "a scan is writing to this index now" in err and "again when the scan ends" in err


def test_csv_writers_neutralise_formula_cells() -> None:
    """Cells that really start with = + - @ (paths as a consumer may hand them in, e.g. relative
    ones) are written with a leading ' and read back as text; other cells are unchanged."""
    from simscan.cli.similarity_cmds import write_groups, write_pairs
    from simscan.similarity import Group, Member, Pair

    names = ["=cmd|' /C calc'!A0.txt", "+1+1.txt", "-2.txt", "@SUM(A1).txt", "cr\rname.txt", "nl\nname.txt"]
    pairs = [Pair(1, 2, a, b, 50.0, 60.0, 55.0, 3, False, "near") for a, b in zip(names, names[1:] + names[:1])]
    buf = io.StringIO()
    assert write_pairs(pairs, "csv", buf) == 6
    rows = list(csv.reader(io.StringIO(buf.getvalue(), newline="")))  # as a file opened with newline=""
    quoted = [n if n[0] in "cn" else "'" + n for n in names]  # a carriage return inside a name kept the row whole
    assert [r[:2] for r in rows[1:]] == [[a, b] for a, b in zip(quoted, quoted[1:] + quoted[:1])]
    assert all(r[2] == "60.0" and r[8] == "near" for r in rows[1:])
    members = [Member(k, n, 10, 0, "utf-8", True, 100.0 if k == 0 else 70.0, "near", k == 0)
               for k, n in enumerate(names)]
    buf = io.StringIO()
    write_groups([Group(0, "near", members[0], members)], "csv", buf)
    rows = list(csv.reader(io.StringIO(buf.getvalue(), newline="")))
    assert [r[5] for r in rows[1:]] == quoted
    assert [r[4] for r in rows[1:]] == ["reference"] + ["near"] * 5 and rows[1][0] == "1"


def test_names_with_control_characters_stay_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Text output escapes a newline or a terminal escape in a name; JSON and CSV keep the name."""
    root = tmp_path / "docs"
    root.mkdir()
    base = words(5, 300)
    odd = "two\nlines\x1b[31m.txt"
    (root / odd).write_text(base)
    (root / "plain.txt").write_text(base)
    idx = tmp_path / "i.db"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["groups", "--index", str(idx)]) == 0
    text = capsys.readouterr().out
    assert "two\\nlines\\x1b[31m.txt" in text and "\x1b" not in text
    member_lines = [line for line in text.splitlines() if "%" in line]
    assert len(member_lines) == 2 and all(line.rstrip().endswith(".txt") for line in member_lines)
    assert main(["pairs", "--index", str(idx), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out.splitlines()[0])
    assert str(root / odd) in (rec["a"], rec["b"])
    assert main(["pairs", "--index", str(idx), "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert str(root / odd) in rows[1][:2]


def test_missing_and_non_regular_files_are_told_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "f.txt"
    f.write_text(words(6, 100))
    assert main(["compare", str(tmp_path / "nope.txt"), str(f)]) == 1
    assert "nope.txt: no such file" in capsys.readouterr().err
    assert main(["compare", str(tmp_path), str(f)]) == 1
    assert "not a regular file" in capsys.readouterr().err


def test_compare_and_problems_escape_control_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """File content shown by `compare` and reasons shown by `problems` (which name link targets)
    reach the terminal escaped."""
    text = "x \x1b[2J\x1b]0;pwned\x07 " + words(7, 300)
    (tmp_path / "a.log").write_text(text)
    (tmp_path / "b.log").write_text(text)
    assert main(["compare", str(tmp_path / "a.log"), str(tmp_path / "b.log")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J" in out
    root = tmp_path / "tree"
    root.mkdir()
    os.symlink("nowhere\x1b[2J\nfake.txt: everything fine", root / "badlink")
    idx = tmp_path / "i.db"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    assert main(["problems", "--index", str(idx)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and len(out.strip().splitlines()) == 1 and "broken symbolic link" in out


def test_a_reference_folder_that_does_not_exist_is_noted(tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, idx = tree
    assert main(["groups", "--index", str(idx), "-r", "/no/such/folder"]) == 0
    assert "reference folder /no/such/folder does not exist" in capsys.readouterr().err
    assert main(["groups", "--index", str(idx), "-r", str(idx.parent)]) == 0
    assert "does not exist" not in capsys.readouterr().err


def test_ignore_text_leaves_the_shared_question_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A class of 30 answers that each repeat the question: fewer than the 50 files that make text
    # common, so every pair of answers shared the question and scored as similar.  The teacher gives
    # the question: it counts nowhere, and only the answer that copied another's text is paired.
    from similarity_support import words

    root = tmp_path / "answers"
    root.mkdir()
    question = "Question 1: " + words(900, 60) + "\n\nAnswer: "
    (tmp_path / "question.txt").write_text(question)
    for i in range(30):
        (root / f"student{i:02d}.txt").write_text(question + words(1000 + i, 120))
    (root / "student99.txt").write_text(question + words(1007, 120))  # copied student07
    idx = tmp_path / "i.db"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0

    def pairs(*extra: str) -> list[tuple[str, str]]:
        assert main(["pairs", "--index", str(idx), "--format", "json", *extra]) == 0
        recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        return sorted(tuple(sorted((Path(r["a"]).name, Path(r["b"]).name))) for r in recs)

    assert len(pairs()) > 100  # the question alone makes them "similar"
    only = [("student07.txt", "student99.txt")]
    assert pairs("--ignore-text", str(tmp_path / "question.txt")) == only
    assert pairs("--ignore-text", str(tmp_path / "question.txt"), "--no-cache") == only
    assert main(["query", str(root / "student99.txt"), "--index", str(idx), "--format", "json",
                 "--ignore-text", str(tmp_path / "question.txt")]) == 0
    found = [Path(json.loads(x)["b"]).name for x in capsys.readouterr().out.splitlines()]
    assert found == ["student07.txt"]
    # compare: the question counts nowhere either, in the scores and in the passages.
    q = str(tmp_path / "question.txt")
    assert main(["compare", str(root / "student00.txt"), str(root / "student01.txt"), "--format", "json",
                 "--ignore-text", q]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["best"] == 0
    # With the index, what it leaves out is said to include the text given.
    assert main(["compare", str(root / "student00.txt"), str(root / "student01.txt"), "--index", str(idx),
                 "--ignore-text", q]) == 0
    assert "in the text given with --ignore-text" in capsys.readouterr().out
    assert main(["compare", str(root / "student07.txt"), str(root / "student99.txt"), "--format", "json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["compare", str(root / "student07.txt"), str(root / "student99.txt"), "--format", "json",
                 "--ignore-text", q]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert whole["best"] == rec["best"] == 100.0  # (the same file: a content copy either way)
    starts = [r[0] for r in rec["ranges_a"]]
    assert min(r[0] for r in whole["ranges_a"]) == 0 and starts and min(starts) > len(question) - 60
    assert len(pairs()) > 100  # the cached results without it are still right
    assert main(["pairs", "--index", str(idx), "--ignore-text", str(tmp_path / "nope.txt")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_a_pair_shown_at_x_percent_is_kept_by_a_threshold_of_x(
    tree: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Displayed scores are cut, not rounded: a pair listed at X % (JSON's 2 decimals, the text's 1)
    is listed again by ``--min-similarity X``, and groups agree (99.857 once showed as 99.9 and
    vanished at -m 99.9)."""
    from simscan.similarity.types import shown_pct

    _, idx = tree
    assert main(["pairs", "--index", str(idx), "--format", "json", "-m", "0"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    partial = [r for r in recs if 0 < r["best"] < 100]
    assert partial, "the tree has edited versions"
    for r in partial:
        key = (r["a"], r["b"])
        # Scores with more decimals than shown are cut: the shown value is never above the score.
        assert r["best"] * 100 == int(r["best"] * 100 + 1e-6) or r["best"] == shown_pct(r["best"], 2)
        for m in (r["best"], shown_pct(r["best"])):
            assert main(["pairs", "--index", str(idx), "--format", "json", "-m", str(m)]) == 0
            kept = {(x["a"], x["b"]) for x in map(json.loads, capsys.readouterr().out.splitlines())}
            assert key in kept, (m, r)
    assert main(["groups", "--index", str(idx), "--format", "json", "-m", "0"]) == 0
    members = [m for g in map(json.loads, capsys.readouterr().out.splitlines()) for m in g["members"]]
    partial = [m for m in members if 0 < m["similarity"] < 100]
    assert partial
    for mem in partial:
        for m in (mem["similarity"], shown_pct(mem["similarity"])):
            assert main(["groups", "--index", str(idx), "--format", "json", "-m", str(m)]) == 0
            kept = [x for g in map(json.loads, capsys.readouterr().out.splitlines()) for x in g["members"]]
            assert mem["path"] in {x["path"] for x in kept}, (m, mem)


def test_shown_percentages_are_cut_and_thresholds_compare_the_carried_score() -> None:
    from simscan.similarity.types import passes, shown_pct

    assert shown_pct(99.857) == 99.8 and shown_pct(99.857, 2) == 99.85
    assert shown_pct(14.3) == 14.3 and shown_pct(100.0) == 100.0 and shown_pct(0.0) == 0.0
    assert shown_pct(99.96) == 99.9  # never "100 %" for less than all of it
    assert shown_pct(200 / 3, 2) == 66.66
    assert passes(99.8996, 99.9) and not passes(99.8994, 99.9)  # as the pairs carry it: 3 decimals
    assert list(passes(__import__("numpy").array([14.9994, 14.9996, 15.2]), 15.0)) == [False, True, True]


def test_groups_are_numbered_alike_in_text_json_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = []
    for k in range(3):  # three families of two edited versions each
        base = words(10 + k, 300)
        for v in range(2):
            f = tmp_path / f"f{k}{v}.txt"
            f.write_text(base[: 1000 + 200 * v] + " " + words(20 + 2 * k + v, 40) + " " + base[1000 + 200 * v :])
            files.append(f)
    idx = tmp_path / "i.sqlite3"
    write_index(idx, files)
    assert main(["groups", "--index", str(idx), "-m", "0"]) == 0
    text = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("group ")]
    assert main(["groups", "--index", str(idx), "-m", "0", "--format", "json"]) == 0
    js = [str(json.loads(x)["id"]) for x in capsys.readouterr().out.splitlines()]
    assert main(["groups", "--index", str(idx), "-m", "0", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    by_csv = list(dict.fromkeys(r["group"] for r in rows))
    assert len(text) >= 2 and text == js == by_csv and text[0] == "1"


def test_a_backslash_in_a_name_is_told_from_an_escaped_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file really named caf\\xe9.txt and a Latin-1 café.txt printed alike in text and CSV; a name's
    backslash is now doubled there (JSON keeps the name, and the bytes of the other apart)."""
    root = tmp_path / "docs"
    root.mkdir()
    base = words(6, 300)
    (root / "caf\\xe9.txt").write_text(base)
    with open(os.fsencode(root) + b"/caf\xe9.txt", "w") as f:
        f.write(base)
    idx = tmp_path / "i.db"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["groups", "--index", str(idx)]) == 0
    out = capsys.readouterr().out
    assert out.count(f"{root}/caf\\\\xe9.txt") == 1 and out.count(f"{root}/caf\\xe9.txt") == 1
    assert main(["groups", "--index", str(idx), "--format", "csv"]) == 0
    paths = sorted(r[5] for r in csv.reader(io.StringIO(capsys.readouterr().out, newline="")) if r[0] != "group")
    assert paths == [f"{root}/caf\\\\xe9.txt", f"{root}/caf\\xe9.txt"]
    assert main(["pairs", "--index", str(idx), "--format", "json"]) == 0
    (rec,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert sorted((rec["a"], rec["b"])) == [f"{root}/caf\\xe9.txt"] * 2 and ("a_raw" in rec) != ("b_raw" in rec)


def test_pairs_lines_equal_the_records_in_every_format() -> None:
    """``pairs`` writes its lines column by column (``PairWriter``): for JSON the same text as
    ``json.dumps(pair_record(p), ensure_ascii=False)``, for CSV as ``csv`` writes the records, for text
    the line of each pair, for names with quotes, backslashes, control characters, other scripts and
    bytes that are not UTF-8, scores of any float, and passages unknown."""
    import random

    from simscan.cli.similarity_cmds import pair_record, write_pairs
    from simscan.similarity import Pair

    rng = random.Random(5)
    names = ["/a/plain.txt", '/a/"quoted".txt', "/a/back\\slash.txt", "/a/tab\tnl\nbell\x07.txt", "/a/café ü 日本.txt",
             os.fsdecode(b"/a/latin-\xe9.txt"), "/a/emoji \U0001f600.txt", "/a/\u2028sep.txt"]
    pairs = []
    for _ in range(300):
        a, b = rng.sample(names, 2)
        # (as the search rounds them, SCORE_DECIMALS: 0.29 * 100 is 28.999999999999996, shown as 0.29)
        scores = [rng.choice([0.0, 100.0, 14.999999, 33.333333333, 0.29, 0.57, 1.15, 2.01, rng.uniform(0, 100),
                              round(rng.uniform(0, 100), 3)]) for _ in range(3)]
        passage = rng.choice([None, 0, 150, 12345])
        pairs.append(Pair(rng.randrange(1, 99), rng.randrange(1, 99), a, b, *scores, rng.randrange(0, 65),
                          rng.random() < 0.2, rng.choice(["exact", "content", "near", "contained"]),
                          rng.choice(["text", "code"]), passage, None if passage is None else passage * 2))
    buf = io.StringIO()
    assert write_pairs(pairs, "json", buf) == len(pairs)
    want = "".join(json.dumps(pair_record(p), ensure_ascii=False) + "\n" for p in pairs)
    assert buf.getvalue() == want
    assert all(json.loads(line) == pair_record(p) for line, p in zip(buf.getvalue().split("\n"), pairs))
    # CSV: the records' cells (formulas neutralised); text: one line a pair, as people read it.
    import csv as csv_module

    from simscan.cli.similarity_cmds import _PAIR_FIELDS, csv_cell
    from simscan.display import display_path
    from simscan.similarity.types import shown_pct

    buf = io.StringIO()
    assert write_pairs(pairs, "csv", buf) == len(pairs)
    ref = io.StringIO()
    w = csv_module.writer(ref)
    w.writerow(_PAIR_FIELDS)
    for p in pairs:
        rec = pair_record(p, unambiguous=True)
        w.writerow([csv_cell("" if rec[k] is None else rec[k]) for k in _PAIR_FIELDS])
    assert buf.getvalue() == ref.getvalue()
    buf = io.StringIO()
    assert write_pairs(pairs, "text", buf) == len(pairs)

    def line(p: Pair) -> str:
        mark = "  all" if p.kind in ("exact", "content") else "    -" if p.longest_passage is None else f"{p.longest_passage:5d}"
        return (f"{shown_pct(p.best):6.1f}%  {p.kind:<9}  {'code' if p.view == 'code' else '    '}  "
                f"J {shown_pct(p.resemblance):5.1f}  A {shown_pct(p.containment_a):5.1f}  "
                f"B {shown_pct(p.containment_b):5.1f}  d {p.simhash_distance:2d}  L {mark}  "
                f"{display_path(p.a_path, terminal=True)}  <->  {display_path(p.b_path, terminal=True)}\n")

    assert buf.getvalue() == "".join(map(line, pairs))


def test_compare_explains_a_passage_the_index_does_not_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A paragraph that more files hold than a passage may be shared by (``evidence.frequent_cutoff``: 10
    in a small index) makes no passage in ``pairs``; ``compare`` says why beside the passage the two files
    show alone, instead of leaving the line out.  With two such files the passage counts."""
    paragraph = words(999, 100)
    for n, root in ((12, tmp_path / "many"), (2, tmp_path / "two")):
        root.mkdir()
        for k in range(n):
            body = words(k, 1400)
            (root / f"e{k:02d}.txt").write_text(f"{body[:4000]}\n\n{paragraph}\n\n{body[4000:]}")
        idx = tmp_path / f"{root.name}.db"
        assert main(["scan", "--quiet", "--index", str(idx), str(root)]) == 0
        capsys.readouterr()
        assert main(["compare", "--index", str(idx), str(root / "e00.txt"), str(root / "e01.txt")]) == 0
        out = capsys.readouterr().out
        if n == 12:
            assert "no shared passage as `pairs` counts them: text that more than 10 indexed files hold" in out
            assert "longest shared passage" not in out
        else:
            assert "longest shared passage" in out and "no shared passage" not in out


def test_the_reference_row_is_of_kind_reference_not_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A script keeping the rows of kind "exact" from `groups --format json|csv` must get the real copies
    only: the reference of a group of edited versions is no copy (it was listed "exact"), whichever writer
    makes the rows (the columns one, or the groups' objects when --sort/--kind is given)."""
    root = tmp_path / "docs"
    root.mkdir()
    base = words(31, 500)
    (root / "a.txt").write_text(base)
    (root / "a_copy.txt").write_text(base)
    (root / "a_edit.txt").write_text(base[:1500] + " " + words(32, 40) + " " + base[1500:])
    (root / "b.txt").write_text(words(33, 400))
    (root / "b_edit.txt").write_text(words(33, 400)[:1200] + " " + words(34, 40) + " " + words(33, 400)[1200:])
    t0 = 1_600_000_000
    for k, name in enumerate(("a.txt", "a_copy.txt", "a_edit.txt", "b.txt", "b_edit.txt")):
        os.utime(root / name, (t0 + k, t0 + k))  # a.txt and b.txt the oldest: the references
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    capsys.readouterr()
    want = {"a.txt": "reference", "a_copy.txt": "exact", "a_edit.txt": "near", "b.txt": "reference", "b_edit.txt": "near"}
    for extra in ([], ["--sort", "path"]):
        assert main(["groups", "--index", str(idx), "--format", "json", *extra]) == 0
        groups = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        got = {Path(m["path"]).name: m["kind"] for g in groups for m in g["members"]}
        assert got == want, extra
        assert all(m["is_reference"] == (m["kind"] == "reference") for g in groups for m in g["members"])
        assert {g["kind"] for g in groups} == {"near"}  # (the group's kind is unchanged)
        assert main(["groups", "--index", str(idx), "--format", "csv", *extra]) == 0
        rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
        assert {Path(r["path"]).name: r["kind"] for r in rows} == want, extra
        assert [Path(r["path"]).name for r in rows if r["kind"] == "exact"] == ["a_copy.txt"]
    assert main(["groups", "--index", str(idx)]) == 0  # the text output said so already
    lines = capsys.readouterr().out.splitlines()
    assert {line.split()[-1].rsplit("/", 1)[-1]: line.split()[1] for line in lines if line.startswith("  ")} == want


def test_empty_files_are_no_pair_in_pairs_or_query(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two empty submissions are not a 100 % exact pair: ``pairs`` leaves empty files out, as ``groups``
    and the window's Pairs tab do (every empty file is alike), and says so; ``query`` of an empty file
    lists no file and says why.  The essays' own pair is still listed."""
    root = tmp_path / "class"
    root.mkdir()
    essay = words(31, 500)
    (root / "essay.txt").write_text(essay)
    (root / "copied.txt").write_text(words(32, 100) + " " + essay[:1500])
    (root / "blank1.txt").write_bytes(b"")
    (root / "blank2.docx").write_bytes(b"")
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    capsys.readouterr()
    for fmt in ("json", "csv", "text"):
        assert main(["pairs", "--index", str(idx), "--format", fmt]) == 0
        out, err = capsys.readouterr()
        assert "blank" not in out and "copied.txt" in out and "essay.txt" in out
        told = "2 empty files are left out of the pairs" in err
        assert told == (fmt == "text")
    late = tmp_path / "late.txt"
    late.write_bytes(b"")
    assert main(["query", str(late), "--index", str(idx)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "late.txt is empty" in err and "no similar files" not in err


def test_query_of_a_document_compared_by_its_bytes_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A late submission that is a password-protected PDF, or a scan without a text layer, is compared
    by its bytes: ``query`` said only "no similar files at 15 %", as if its text had been read and found
    original.  It now says why, as ``simscan problems`` and ``compare`` do; a readable document says
    nothing more."""
    import shutil

    from tests.helpers_documents import DATA

    root = tmp_path / "class"
    root.mkdir()
    shutil.copyfile(DATA / "student.docx", root / "student.docx")
    (root / "other.txt").write_text(words(41, 400))
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    capsys.readouterr()
    late = tmp_path / "late"
    late.mkdir()
    for name in ("encrypted.pdf", "scanned.pdf", "student.pdf"):
        shutil.copyfile(DATA / name, late / name)
    assert main(["query", "--index", str(idx), str(late / "encrypted.pdf"), str(late / "scanned.pdf"),
                 str(late / "student.pdf")]) == 0
    out, err = capsys.readouterr()
    assert "encrypted.pdf: PDF: password-protected; compared by its bytes" in err
    assert "scanned.pdf: PDF: no text layer" in err
    assert "student.pdf:" not in err and "student.docx" in out  # (the readable PDF: its DOCX is found)


def test_a_text_to_ignore_whose_text_cannot_be_read_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The question every answer repeats, given as a scanned PDF (no text layer) or a password-protected
    one: its text cannot be read, so ignoring it would change nothing -- silently, as if the question had
    been left out.  ``--ignore-text`` refuses it, saying why, as it refuses a file that is not there; a
    readable document is ignored as before."""
    import shutil

    from tests.helpers_documents import DATA

    root = tmp_path / "class"
    root.mkdir()
    (root / "a.txt").write_text(words(51, 400))
    (root / "b.txt").write_text(words(51, 400)[:1500] + " " + words(52, 200))
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    capsys.readouterr()
    for name, why in (("scanned.pdf", "PDF: no text layer"), ("encrypted.pdf", "PDF: password-protected")):
        shutil.copyfile(DATA / name, tmp_path / name)
        assert main(["pairs", "--index", str(idx), "--ignore-text", str(tmp_path / name)]) == 1
        out, err = capsys.readouterr()
        assert out == "" and f"{name}: {why}" in err and "no text to ignore" in err, err
    shutil.copyfile(DATA / "student.pdf", tmp_path / "student.pdf")
    assert main(["pairs", "--index", str(idx), "--ignore-text", str(tmp_path / "student.pdf")]) == 0
    assert "a.txt" in capsys.readouterr().out


def test_texts_without_text_pair_with_their_byte_copies_only(tmp_path: Path, capsys) -> None:
    """A file of nothing but white space, a symbols-only text and a DOCX with no text have the same (no) text as
    every such file: they were 'content' copies of one another, a group with bytes to reclaim (a class's blank
    submissions).  Now they pair only with their byte copies (exact): two one-line dependency_links.txt, two
    copies of one ASCII-art file are still duplicates; a blank DOCX and white space are not.  Empty (0-byte)
    files stay apart."""
    import json

    from tests.helpers_documents import docx_of_paragraphs

    root = tmp_path / "t"
    root.mkdir()
    (root / "blank.docx").write_bytes(docx_of_paragraphs([]))
    (root / "spaces.txt").write_text("   \n\n \t\n")
    (root / "newline.txt").write_text("\n")
    (root / "newline2.txt").write_text("\n")
    art = "".join("+--" * 20 + "+\n|" + "  |" * 20 + "\n" for _ in range(12))  # (symbols: no normalised units)
    (root / "art.txt").write_text(art)
    (root / "art copy.txt").write_text(art)
    (root / "zero.txt").write_bytes(b"")
    (root / "zero2.txt").write_bytes(b"")
    (root / "x.txt").write_text("x")
    (root / "x2.txt").write_text("x")
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["groups", "--index", str(idx), "--format", "json"]) == 0
    groups = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    got = sorted(sorted(Path(m["path"]).name for m in g["members"]) for g in groups)
    assert got == [["art copy.txt", "art.txt"], ["newline.txt", "newline2.txt"], ["x.txt", "x2.txt"]]
    assert all(m["kind"] in ("reference", "exact") for g in groups for m in g["members"])
    assert main(["groups", "--index", str(idx), "--format", "json", "--kind", "empty"]) == 0
    empty = [json.loads(line) for line in capsys.readouterr().out.splitlines()][-1]
    assert sorted(Path(p).name for p in empty["files"]) == ["zero.txt", "zero2.txt"]
    assert main(["pairs", "--index", str(idx), "--format", "json"]) == 0
    pairs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(tuple(sorted((Path(p["a"]).name, Path(p["b"]).name))) for p in pairs) == [
        ("art copy.txt", "art.txt"), ("newline.txt", "newline2.txt"), ("x.txt", "x2.txt")]
    assert main(["query", str(root / "spaces.txt"), "--index", str(idx), "--format", "json", "-m", "0"]) == 0
    assert capsys.readouterr().out == ""  # (no byte copy; the blank DOCX and the newline files are no copies)
    assert main(["query", str(root / "newline.txt"), "--index", str(idx), "--format", "json", "-m", "0"]) == 0
    assert [Path(json.loads(x)["b"]).name for x in capsys.readouterr().out.splitlines()] == ["newline2.txt"]


def test_compare_with_a_file_the_index_holds_by_its_checksum_alone(tmp_path: Path, monkeypatch, capsys) -> None:
    """A text too large for content fingerprints is indexed by its checksum alone (420 MB in the acceptance test).
    `compare` fingerprinted the other file for the index's figures all the same (99 s, 1.8 GB there), to find
    nothing the index counts.  With an indexed file that has no fingerprints the index adds nothing: `compare`
    gives the two files alone, as for files no index holds."""
    from simscan import scanner

    root = tmp_path / "t"
    root.mkdir()
    big = words(3, 3000)
    (root / "big.txt").write_text(big)
    (root / "part.txt").write_text(big[:4000])
    idx = tmp_path / "i.sqlite3"
    monkeypatch.setattr(scanner, "MAX_FINGERPRINTS", 50)  # (the scan's limit, made small: big.txt passes it)
    assert main(["scan", str(root), "--index", str(idx), "--quiet", "--jobs", "1"]) == 0
    assert main(["problems", "--index", str(idx)]) == 0
    assert "too large for content fingerprints" in capsys.readouterr().out
    assert main(["compare", str(root / "part.txt"), str(root / "big.txt"), "--index", str(idx), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert "left_out" not in rec and "alone" not in rec and rec["kind"] == "contained"  # the two alone
    monkeypatch.setattr(scanner, "MAX_FINGERPRINTS", 8 << 20)
    assert main(["scan", str(root), "--index", str(idx), "--quiet", "--rebuild"]) == 0
    assert main(["compare", str(root / "part.txt"), str(root / "big.txt"), "--index", str(idx), "--format", "json"]) == 0
    assert "left_out" in json.loads(capsys.readouterr().out)  # (with fingerprints, the index's figures)
