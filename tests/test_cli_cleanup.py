"""Cleaning up from the command line: `groups` with copy sets, kinds, sorting and keep rules; a plan
written, changed on disk and applied (`simscan apply`: the changed file refused, the rest in a
temporary trash, nothing deleted); `simscan forget`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from similarity_support import words

from simscan.cleanup import Plan, read_plan, trash_file, write_plan
from simscan.cli import main
from simscan.index import Index

T0 = 1_600_000_000_000_000_000


@pytest.fixture()
def trash_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary trash: $XDG_DATA_HOME in tmp_path (never the real one)."""
    data = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    return data / "Trash"


@pytest.fixture()
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """small.txt (the oldest); big*.txt: three byte copies of a text that holds small.txt's words and
    much more (a copy set nested as one member of small's group); notes*.txt: an edited version and
    its UTF-16 twin; two empty files."""
    root = tmp_path / "tree"
    root.mkdir()
    small = words(1, 400)
    big = words(2, 300) + " " + small + " " + words(3, 3000)
    files = {"small.txt": small.encode(), "big1.txt": big.encode(), "big2.txt": big.encode(),
             "sub/big3.txt": big.encode(), "notes.txt": (words(4, 900)).encode(),
             "notes-utf16.txt": words(4, 900).encode("utf-16"), "e1": b"", "e2": b""}
    for k, (name, data) in enumerate(files.items()):
        p = root / name
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(data)
        os.utime(p, ns=(T0 + k * 10**9,) * 2)
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    return root, idx


def _groups(capsys, idx: Path, *args: str) -> list[dict]:
    capsys.readouterr()
    assert main(["groups", "--index", str(idx), "--format", "json", *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_groups_show_nested_copy_sets_and_reclaimable(tree, capsys) -> None:
    root, idx = tree
    got = _groups(capsys, idx)
    by_ref = {Path(g["reference"]).name: g for g in got}
    g = by_ref["big1.txt"]  # the file small.txt lies in leads (the source), its copies in its set
    assert [(Path(m["path"]).name, m.get("copy_set"), m.get("kept")) for m in g["members"]] == [
        ("big1.txt", 1, True), ("big2.txt", 1, False), ("big3.txt", 1, False), ("small.txt", None, None)]
    size = (root / "big1.txt").stat().st_size
    assert g["reclaimable"] == 2 * size
    n = by_ref["notes.txt"]  # UTF-8 kept before UTF-16 (keep rule "encoding"), although newer
    assert n["reclaimable"] == (root / "notes-utf16.txt").stat().st_size
    # Empty files are not a group; --kind empty lists them apart.
    assert all(Path(m["path"]).name not in ("e1", "e2") for x in got for m in x["members"])
    empty = _groups(capsys, idx, "--kind", "empty")
    assert [sorted(Path(p).name for p in empty[-1]["files"])] == [["e1", "e2"]] and empty[-1]["kind"] == "empty"


def test_groups_kind_sort_and_keep_rules(tree, capsys) -> None:
    _root, idx = tree
    similar = _groups(capsys, idx, "--kind", "contained")
    assert [[Path(m["path"]).name for m in g["members"]] for g in similar] == [["big1.txt", "small.txt"]]
    ordered = _groups(capsys, idx, "--sort", "reclaimable")
    assert [g["reclaimable"] for g in ordered] == sorted((g["reclaimable"] for g in ordered), reverse=True)
    assert [g["id"] for g in ordered] == list(range(1, len(ordered) + 1))
    by_path = _groups(capsys, idx, "--sort", "path")
    assert [g["reference"] for g in by_path] == sorted(g["reference"] for g in by_path)
    # Keep the newest: big3 (the newest copy) is kept and leads; the longest path too.
    # A pattern alone is a rule asked for: it decides first (it was ignored without 'pattern' in --keep).
    for rules in (["--keep", "newest"], ["--keep", "longest-path"], ["--keep", "pattern", "--keep-pattern", "*/sub/*"],
                  ["--keep-pattern", "*/sub/*"]):
        g = next(g for g in _groups(capsys, idx, *rules) if "big" in g["reference"])
        assert Path(g["reference"]).name == "big3.txt", rules
    assert main(["groups", "--index", str(idx), "--keep", "biggest"]) == 1
    capsys.readouterr()
    assert main(["groups", "--index", str(idx), "--keep", "pattern,oldest"]) == 1  # a pattern rule, no pattern
    assert "--keep-pattern" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".json", ".sh"])
def test_plan_round_trip_refuses_the_changed_file(tree, trash_home, capsys, suffix) -> None:
    """Export the plan, change one file, apply: that file is refused, the rest go to the (temporary)
    trash, the index forgets them; nothing is deleted."""
    root, idx = tree
    plan_path = root.parent / f"plan{suffix}"
    capsys.readouterr()
    assert main(["groups", "--index", str(idx), "--plan", str(plan_path)]) == 0
    plan = read_plan(plan_path)
    assert sorted(Path(e.target.path).name for e in plan.entries) == ["big2.txt", "big3.txt", "notes-utf16.txt"]
    assert all(e.checksum for e in plan.entries)
    if suffix == ".sh":
        text = plan_path.read_text()
        assert text.startswith("#!/bin/sh") and 'exec simscan apply "$0"' in text and os.access(plan_path, os.X_OK)
    # big3 changes after the scan, its size and time kept (as cp -p would): only its bytes tell.
    big3 = root / "sub" / "big3.txt"
    st = big3.stat()
    data = bytearray(big3.read_bytes())
    data[100] ^= 1
    big3.write_bytes(bytes(data))
    os.utime(big3, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert main(["apply", str(plan_path), "--dry-run"]) == 1
    assert (root / "big2.txt").exists()
    assert main(["apply", str(plan_path)]) == 1
    err = capsys.readouterr().err
    assert "refused" in err and "big3.txt" in err and "changed since the scan" in err
    assert big3.exists() and not (root / "big2.txt").exists() and not (root / "notes-utf16.txt").exists()
    assert (root / "big1.txt").exists() and (root / "notes.txt").exists()
    trashed = sorted(p.name for p in (trash_home / "files").iterdir())
    assert trashed == ["big2.txt", "notes-utf16.txt"]
    info = (trash_home / "info" / "big2.txt.trashinfo").read_text()
    assert f"Path={root}/big2.txt" in info
    with Index.open(idx, readonly=True) as ix:
        left = {Path(p).name for p in ix.files().paths}
    assert "big2.txt" not in left and "big3.txt" in left


def test_a_plan_is_refused_when_the_kept_file_changed(tree, trash_home) -> None:
    root, idx = tree
    plan_path = root.parent / "plan.json"
    assert main(["groups", "--index", str(idx), "--plan", str(plan_path), "--kind", "copies"]) == 0
    (root / "big1.txt").write_text("rewritten")  # the kept copy is gone: its copies must stay
    assert main(["apply", str(plan_path)]) == 1
    assert (root / "big2.txt").exists() and (root / "sub" / "big3.txt").exists()


def test_plan_files_read_back_and_bad_plans_are_explained(tmp_path, capsys) -> None:
    p = tmp_path / "x.json"
    write_plan(Plan(()), p)
    assert read_plan(p).entries == ()
    p.write_text('{"format": "other"}')
    assert main(["apply", str(p)]) == 1
    assert "not a simscan plan" in capsys.readouterr().err
    assert main(["apply", str(tmp_path / "missing.json")]) == 1


def test_trash_keeps_both_files_of_one_name(tmp_path, trash_home) -> None:
    for k in range(2):
        d = tmp_path / f"d{k}"
        d.mkdir()
        (d / "same.txt").write_text(str(k))
        trash_file(str(d / "same.txt"))
        assert not (d / "same.txt").exists()
    assert sorted(p.name for p in (trash_home / "files").iterdir()) == ["same.txt", "same.txt.2"]
    assert (trash_home / "files" / "same.txt.2").read_text() == "1"


def test_forget_a_folder(tree, capsys) -> None:
    root, idx = tree
    assert main(["forget", str(root / "sub"), "--index", str(idx)]) == 0
    assert "forgot 1 indexed file under" in capsys.readouterr().out
    with Index.open(idx, readonly=True) as ix:
        assert not any("/sub/" in p for p in ix.files().paths)
    assert (root / "sub" / "big3.txt").exists()


def test_a_plan_script_names_odd_files_on_one_line_as_the_command_line_does(tmp_path: Path, capsys) -> None:
    """Copies named with a byte that is not UTF-8 and with a newline: the shell plan's comments show
    them as `groups` does (\\xff, \\n), each on one line (a newline would end the comment and make the
    rest of the name a command), and the plan still applies to exactly those files."""
    root = tmp_path / "t"
    root.mkdir()
    text = words(7, 500).encode()
    (root / "a.txt").write_bytes(text)
    os.utime(root / "a.txt", ns=(T0, T0))
    odd = [os.fsencode(root) + b"/caf\xff.txt", os.fsencode(root) + b"/two\nlines.txt"]
    for p in odd:
        with open(p, "wb") as f:
            f.write(text)
    idx, plan = tmp_path / "i.db", tmp_path / "plan.sh"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    assert main(["groups", "--index", str(idx), "--plan", str(plan)]) == 0
    script = plan.read_text(encoding="utf-8")
    comments = [line for line in script.splitlines() if line.startswith("# trash ")]
    assert sorted(comments) == sorted(f'# trash "{root}/{n}"' for n in ("caf\\xff.txt", "two\\nlines.txt"))
    assert sorted(os.fsencode(e.target.path) for e in read_plan(plan).entries) == sorted(odd)


def test_nothing_found_advises_what_can_help_for_each_kind(tmp_path: Path, capsys) -> None:
    """`groups --kind copies` with no copy advised lowering --min-similarity, which cannot find one:
    copies are alike at any threshold.  Each --kind is told what can help, and `--kind empty` without
    an empty file says so (it printed nothing)."""
    root = tmp_path / "tree"
    root.mkdir()
    base = words(41, 600)
    (root / "a.txt").write_text(base)
    (root / "a_edit.txt").write_text(base[:1800] + " " + words(42, 60) + " " + base[1800:])
    (root / "other.txt").write_text(words(43, 500))
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0

    def told(*args: str, listed: bool = False) -> str:
        capsys.readouterr()
        assert main(["groups", "--index", str(idx), *args]) == 0
        out, err = capsys.readouterr()
        assert bool(out) == listed, (args, out)
        return err

    for m in ([], ["-m", "0"], ["-m", "90"]):
        err = told("--kind", "copies", *m)
        assert "no copies" in err and "--min-similarity does not change that" in err and "lower it" not in err, m
    assert told("--kind", "similar", listed=True) == ""  # (an edited version is there)
    err = told("--kind", "similar", "-m", "99.9", "--min-passage", "0")
    assert "no groups with edited versions at 99.9% or more (lower it with --min-similarity" in err
    err = told("--kind", "copies", "--kind", "contained", "-m", "50")
    assert "no groups with copies or excerpts at 50% or more (lower it with --min-similarity" in err
    assert "no groups at 99.9% or more (lower it" in told("-m", "99.9", "--min-passage", "0")
    assert told("--kind", "empty") == "simscan: no empty files in the index.\n"
    assert told("--kind", "copies", "--format", "json") == ""  # (machine formats stay empty)


def test_a_plan_leaves_out_a_web_page_differing_only_inside_a_tag(tmp_path: Path, trash_home, capsys) -> None:
    """Two web pages differing only inside a tag read as the same text, so the scan calls them copies; their
    files are no copies (apply's check reads them and refuses).  `groups --plan` reads them too and leaves such
    a page out, saying so, while a copy in another encoding (a true copy) stays in the plan and is moved."""
    root = tmp_path / "t"
    root.mkdir()
    body = "".join(f"<p>{words(60 + k, 120)}</p>\n" for k in range(4))
    (root / "page.html").write_text(f'<html><body class="a">\n{body}</body></html>\n')
    (root / "page-copy.html").write_text(f'<html><body class="b" id="x">\n{body}</body></html>\n')
    text = words(70, 700)
    (root / "notes.txt").write_text(text)
    (root / "notes-utf16.txt").write_bytes(text.encode("utf-16"))
    for k, p in enumerate(sorted(root.iterdir())):
        os.utime(p, ns=(T0 + k * 10**9,) * 2)
    idx, plan_path = tmp_path / "i.sqlite3", tmp_path / "plan.json"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    pages = next(g for g in _groups(capsys, idx) if g["reference"].endswith(".html"))
    assert sorted(m.get("copy_set") for m in pages["members"]) == [1, 1]  # the scan calls them copies
    capsys.readouterr()
    assert main(["groups", "--index", str(idx), "--plan", str(plan_path)]) == 0
    err = capsys.readouterr().err
    assert "left 1 file with the same words as their kept copy out of the plan" in err and "page" in err
    assert [Path(e.target.path).name for e in read_plan(plan_path).entries] == ["notes-utf16.txt"]
    # The reading is reported (a terminal shows it): each content copy read beside its kept file.
    from simscan.cleanup import true_copies_only

    seen: list = []
    again, left = true_copies_only(read_plan(plan_path), lambda p: "", seen.append)
    assert [e.target.path for e in again.entries] == [e.target.path for e in read_plan(plan_path).entries]
    assert not left and seen and {r.phase for r in seen} == {"verify"}
    assert main(["apply", str(plan_path)]) == 0
    assert sorted(p.name for p in root.iterdir()) == ["notes.txt", "page-copy.html", "page.html"]
    assert [p.name for p in (trash_home / "files").iterdir()] == ["notes-utf16.txt"]


def test_a_plan_leaves_out_the_copies_apply_would_refuse(tmp_path: Path, trash_home, capsys) -> None:
    """A document beside its text, or a text indented otherwise, has the same words as its kept copy and
    sits in its copy set, but it is not a true copy: the window's Ctrl+M does not mark it and `apply`
    refuses it.  `groups --plan` put it in the plan all the same (acceptance test: 22 of 835 entries, the
    DOCX/PDF/ODT exports of texts, refused by `apply` with a reason about indentation).  Now the plan holds
    what `apply` moves, and says what it left out."""
    from tests.helpers_documents import docx_of_paragraphs

    root = tmp_path / "docs"
    root.mkdir()
    w = words(5, 1200).split()
    lines = [" ".join(w[i:i + 12]) for i in range(0, len(w), 12)]
    text = "\n".join(lines) + "\n"
    files = {"report.txt": text.encode(), "report copy.txt": text.encode(), "report-utf16.txt": text.encode("utf-16"),
             "report indented.txt": "".join(f"    {line}\n" for line in lines).encode(),
             "report.docx": docx_of_paragraphs(lines)}
    for k, (name, data) in enumerate(files.items()):
        (root / name).write_bytes(data)
        os.utime(root / name, ns=(T0 + k * 10**9,) * 2)
    idx = tmp_path / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    (group,) = _groups(capsys, idx)
    assert {Path(m["path"]).name for m in group["members"] if m.get("copy_set")} == set(files)  # one copy set

    plan_path = tmp_path / "plan.json"
    assert main(["groups", "--index", str(idx), "--plan", str(plan_path)]) == 0
    err = capsys.readouterr().err
    assert "left 2 files with the same words as their kept copy out of the plan" in err, err
    assert sorted(Path(e.target.path).name for e in read_plan(plan_path).entries) == ["report copy.txt",
                                                                                      "report-utf16.txt"]
    assert main(["apply", str(plan_path)]) == 0  # nothing refused
    assert "0 refused" in capsys.readouterr().out
    assert sorted(p.name for p in root.iterdir()) == ["report indented.txt", "report.docx", "report.txt"]


def test_a_shell_plan_runs_with_simscan_off_the_path(tree, trash_home, capsys) -> None:
    """`sh plan.sh` ran `exec simscan apply`, and failed with "simscan: not found" (exit 127) for anyone who
    installed simscan as the README's first command does, in a venv not activated (acceptance test).  The
    script now runs the simscan that wrote it while it is there."""
    import subprocess
    import sys

    root, idx = tree
    plan_path = root.parent / "plan.sh"
    assert main(["groups", "--index", str(idx), "--plan", str(plan_path)]) == 0
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PATH"] = "/usr/bin:/bin"  # no simscan there
    assert subprocess.run(["sh", "-c", "command -v simscan"], env=env, check=False).returncode != 0
    done = subprocess.run(["sh", str(plan_path)], env=env, capture_output=True, text=True, check=False,
                          cwd=root.parent)
    assert done.returncode == 0, done.stderr
    assert "moved 3 of 3 files" in done.stdout
    assert sorted(p.name for p in (trash_home / "files").iterdir()) == ["big2.txt", "big3.txt", "notes-utf16.txt"]
    assert sys.executable in plan_path.read_text()


def test_a_plan_keeps_a_copy_gone_since_the_scan_and_does_not_call_it_different(tmp_path: Path, trash_home,
                                                                                capsys) -> None:
    """A "content" copy deleted since the scan cannot be read: it is not one that differs from the kept file
    (the plan said so), and `apply` reports it as already gone and forgets it, as it did before the plan read
    the copies.  One that is still there and differs is left out and named."""
    root = tmp_path / "t"
    root.mkdir()
    text = words(70, 700)
    (root / "notes.txt").write_text(text)
    (root / "notes-utf16.txt").write_bytes(text.encode("utf-16"))
    body = "".join(f"<p>{words(60 + k, 120)}</p>\n" for k in range(4))
    (root / "page.html").write_text(f'<html><body class="a">\n{body}</body></html>\n')
    (root / "page-copy.html").write_text(f'<html><body class="b" id="x">\n{body}</body></html>\n')
    for k, p in enumerate(sorted(root.iterdir())):
        os.utime(p, ns=(T0 + k * 10**9,) * 2)
    idx, plan_path = tmp_path / "i.sqlite3", tmp_path / "plan.json"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == 0
    (root / "notes-utf16.txt").unlink()
    capsys.readouterr()
    assert main(["groups", "--index", str(idx), "--plan", str(plan_path)]) == 0
    err = capsys.readouterr().err
    assert "left 1 file with the same words as their kept copy out of the plan" in err and "page" in err
    assert "notes-utf16" not in err
    assert [Path(e.target.path).name for e in read_plan(plan_path).entries] == ["notes-utf16.txt"]
    assert main(["apply", str(plan_path)]) == 0
    assert "already gone" in capsys.readouterr().err
