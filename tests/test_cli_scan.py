"""``simscan scan / stats / problems`` through ``main([...])``: output, exit codes, the progress bar."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from simscan.cli import EXIT_INDEX, EXIT_OK, EXIT_USAGE, main
from simscan.cli.common import ProgressBar
from simscan.cli.scan_cmds import parse_size
from simscan.index import Index
from simscan.progress import Progress
from tests.helpers_tree import make_tree


def test_scan_then_stats_and_problems(tmp_path: Path, capsys):
    root = tmp_path / "t"
    make_tree(root, 12)
    os.mkfifo(root / "pipe")
    idx = tmp_path / "i.db"
    assert main(["scan", str(root), "--index", str(idx), "--jobs", "1"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert out == ""  # progress and summary go to stderr
    assert "scanned 12 files" in err and "12 read" in err and ", 1 problem\n" in err
    assert "simscan groups" in err and "simscan problems" in err
    assert "\r" not in err  # stderr is not a terminal here: no progress bar
    # The hints name the index the scan was given, so that they can be run as they are.
    hint = next(line for line in err.splitlines() if "simscan problems" in line)
    command = shlex.split(hint.split("`")[1])
    assert command[-2:] == ["--index", str(idx)]
    assert main(command[1:]) == EXIT_OK and "pipe" in capsys.readouterr().out

    assert main(["scan", str(root), "--index", str(idx)]) == EXIT_OK
    assert "0 read" in capsys.readouterr().err

    assert main(["stats", "--index", str(idx), "--format", "json"]) == EXIT_OK
    st = json.loads(capsys.readouterr().out)
    assert st["files"] == 12 and st["last_scan"]["files_unchanged"] == 12 and st["index"] == str(idx)
    assert main(["stats", "--index", str(idx)]) == EXIT_OK
    assert "files:" in capsys.readouterr().out
    assert st["scan_running"] is False
    with Index.open(idx) as writer:  # as a scan holds it: stats says so (it said "stopped early")
        writer.scan_lock()
        with writer.atomic() as c:
            c.execute("INSERT INTO unposted(file_id) SELECT id FROM files LIMIT 2")
        assert main(["stats", "--index", str(idx)]) == EXIT_OK
        assert "2 files not yet in the inverted index (a scan is running" in capsys.readouterr().out
        writer.release_scan_lock()
    assert main(["stats", "--index", str(idx)]) == EXIT_OK
    assert "(a scan was stopped early" in capsys.readouterr().out

    assert main(["problems", "--index", str(idx)]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.strip() == f"{root / 'pipe'}: named pipe (FIFO); skipped (never opened)"
    assert main(["problems", "--index", str(idx), "--format", "json", "--all"]) == EXIT_OK
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2 and all(x["path"] == str(root / "pipe") for x in lines)
    assert all("path_raw" not in x for x in lines)
    # A name that is not UTF-8: \xNN in "path" and its bytes in "path_raw", as `pairs` writes them (not a
    # lone surrogate, which many JSON readers refuse).
    odd = os.fsencode(str(root)) + b"/fifo\xff"
    os.mkfifo(odd)
    assert main(["scan", str(root), "--index", str(idx), "-q"]) == EXIT_OK
    assert main(["problems", "--index", str(idx), "--format", "json"]) == EXIT_OK
    recs = {x["path"]: x for x in map(json.loads, capsys.readouterr().out.splitlines())}
    import base64

    assert base64.b64decode(recs[f"{root}/fifo\\xff"]["path_raw"]) == odd


def test_quiet_prints_nothing(tmp_path: Path, capsys):
    make_tree(tmp_path / "t", 3)
    assert main(["scan", str(tmp_path / "t"), "--index", str(tmp_path / "i.db"), "--quiet"]) == EXIT_OK
    assert capsys.readouterr() == ("", "")


def test_options_reach_the_scanner(tmp_path: Path, capsys):
    root = tmp_path / "t"
    root.mkdir()
    (root / "a.txt").write_bytes(b"x" * 50)
    (root / "b.md").write_bytes(b"y" * 5000)
    (root / ".c.txt").write_bytes(b"z" * 50)
    idx = tmp_path / "i.db"
    assert main(["scan", str(root), "--index", str(idx), "--include", "*.txt", "--no-hidden", "--quiet"]) == 0
    with Index.open(idx, readonly=True) as ix:
        assert [os.path.basename(p) for p in ix.files().paths] == ["a.txt"]
    assert main(["scan", str(root), "--index", str(idx), "--min-size", "1k", "--exclude", "*.txt", "-q"]) == 0
    with Index.open(idx, readonly=True) as ix:
        assert [os.path.basename(p) for p in ix.files().paths] == ["b.md"]
    # Hidden names are left out by default, as in the window (and the summary says so); --hidden takes them.
    assert main(["scan", str(root), "--index", str(idx)]) == 0
    assert "left out 1 hidden file or folder (names starting with '.'); `--hidden` scans them" in capsys.readouterr().err
    with Index.open(idx, readonly=True) as ix:
        assert sorted(os.path.basename(p) for p in ix.files().paths) == ["a.txt", "b.md"]
    assert main(["scan", str(root), "--index", str(idx), "--hidden", "-q"]) == 0
    with Index.open(idx, readonly=True) as ix:
        assert sorted(os.path.basename(p) for p in ix.files().paths) == [".c.txt", "a.txt", "b.md"]


def test_usage_errors(tmp_path: Path, capsys):
    assert main(["scan", str(tmp_path / "missing"), "--index", str(tmp_path / "i.db")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "no such file or folder" in err and str(tmp_path / "missing") in err
    assert "Give folders that exist" in err and "Nothing was scanned" in err  # says what to do, not only what went wrong
    assert main(["scan", str(tmp_path), "--index", str(tmp_path / "i.db"), "--jobs", "0"]) == EXIT_USAGE
    make_tree(tmp_path / "t", 3)
    assert main(["scan", str(tmp_path / "t"), "--index", str(tmp_path / "i.db"), "--quiet"]) == EXIT_OK
    capsys.readouterr()
    # A minimum above the maximum would scan nothing and forget every indexed file under the root.
    assert main(["scan", str(tmp_path / "t"), "--index", str(tmp_path / "i.db"), "--min-size", "10k",
                 "--max-size", "1k"]) == EXIT_USAGE
    assert "--min-size 10,000 is larger than --max-size 1,000" in capsys.readouterr().err
    with Index.open(tmp_path / "i.db", readonly=True) as ix:
        assert len(ix.files()) == 3
    assert parse_size("10k") == 10_000 and parse_size("2MiB") == 2 << 20 and parse_size("1.5GB") == 1_500_000_000


def test_an_output_that_cannot_be_written_is_a_message_not_a_traceback(tmp_path: Path):
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux)")
    make_tree(tmp_path / "t", 4)
    for name in ("a.txt", "b.txt"):  # a pair, so that every command has something to write
        (tmp_path / "t" / name).write_text("the same words in both files " * 40)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    idx = str(tmp_path / "i.db")
    base = [sys.executable, "-m", "simscan"]
    subprocess.run([*base, "scan", str(tmp_path / "t"), "--index", idx, "--quiet"], check=True, env=env)
    for cmd in (["stats"], ["pairs", "--format", "json", "-m", "0"], ["groups"]):
        with open("/dev/full", "w") as full:  # every write: "No space left on device"
            r = subprocess.run([*base, *cmd, "--index", idx], check=False, stdout=full, stderr=subprocess.PIPE, env=env,
                               text=True)
        assert r.returncode == 1, (cmd, r.stderr)
        assert r.stderr == "simscan: cannot write the output: No space left on device.\n", (cmd, r.stderr)


def test_stats_without_index_exits_3(tmp_path: Path, capsys):
    assert main(["stats", "--index", str(tmp_path / "none.db")]) == EXIT_INDEX
    err = capsys.readouterr().err
    assert "no index" in err and "simscan scan" in err
    assert not (tmp_path / "none.db").exists()


def test_index_from_environment(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("SIMSCAN_INDEX", str(tmp_path / "env.db"))
    make_tree(tmp_path / "t", 2)
    assert main(["scan", str(tmp_path / "t"), "-q"]) == EXIT_OK
    assert (tmp_path / "env.db").exists()


def test_second_scan_refuses_while_one_runs(tmp_path: Path, capsys):
    make_tree(tmp_path / "t", 3)
    idx = tmp_path / "i.db"
    with Index.open(idx) as holder:
        holder.scan_lock()  # as a running scan does
        assert main(["scan", str(tmp_path / "t"), "--index", str(idx)]) == EXIT_INDEX
        err = capsys.readouterr().err
        assert "another scan" in err and str(idx) in err and "Traceback" not in err
    assert main(["scan", str(tmp_path / "t"), "--index", str(idx), "-q"]) == EXIT_OK


def test_corrupt_index_then_rebuild(tmp_path: Path, capsys):
    make_tree(tmp_path / "t", 4)
    idx = tmp_path / "i.db"
    assert main(["scan", str(tmp_path / "t"), "--index", str(idx), "-q"]) == EXIT_OK
    with open(idx, "r+b") as f:  # smash the header and the first pages
        f.write(os.urandom(8192))
    junk = idx.read_bytes()
    assert main(["scan", str(tmp_path / "t"), "--index", str(idx)]) == EXIT_INDEX
    err = capsys.readouterr().err
    assert str(idx) in err and "--rebuild" in err and "Traceback" not in err
    assert main(["stats", "--index", str(idx)]) == EXIT_INDEX
    capsys.readouterr()
    assert main(["scan", str(tmp_path / "t"), "--index", str(idx), "--rebuild"]) == EXIT_OK
    err = capsys.readouterr().err
    assert "moved to" in err and "4 read" in err
    aside = [
        p for p in tmp_path.iterdir() if p.name.startswith("i.db.corrupt-") and not p.name.endswith(("-wal", "-shm"))
    ]
    assert len(aside) == 1 and aside[0].read_bytes() == junk  # kept, never deleted


def test_progress_bar_draws_on_a_terminal():
    buf = io.StringIO()
    bar = ProgressBar(stream=buf, enabled=True)
    bar(Progress("walk", files_done=120, current="/some/folder"))
    bar(Progress("read", 50, 200, 5_000_000, 20_000_000, rate_bytes_s=2_500_000, eta_s=6.0, current="/x/y.txt"))
    bar.finish()
    text = buf.getvalue()
    assert "120 files found" in text
    assert "50/200 files" in text and "5.0 MB/20.0 MB" in text and "2.5 MB/s" in text and "ETA 6s" in text
    assert text.endswith("\r\x1b[K")
    # The pair search counts parts and candidate pairs, not files, and a long step shows its time.
    buf = io.StringIO()
    bar = ProgressBar(stream=buf, enabled=True)
    bar(Progress("score", 0, 3_000_000))
    bar._phase = ("score", bar._phase[1] - 12)  # as if it began 12 s ago
    bar(Progress("score", 1_000_000, 3_000_000))
    text = buf.getvalue()
    assert "scoring pairs:" in text and "1,000,000/3,000,000 candidate pairs" in text and "12s" in text
    assert " files" not in text
    # The search's first step counts the fingerprints it reads (189 M for 1 M files), not files.
    buf = io.StringIO()
    bar = ProgressBar(stream=buf, enabled=True)
    bar(Progress("load", 771_049, 189_307_166))
    text = buf.getvalue()
    assert "reading fingerprints:" in text and "771,049/189,307,166 fingerprints" in text
    assert " files" not in text
    quiet = io.StringIO()
    ProgressBar(stream=quiet)(Progress("read", 1, 2))  # StringIO is not a terminal
    assert quiet.getvalue() == ""


def test_damage_inside_the_index_is_reported_not_a_traceback(tmp_path: Path, capsys):
    make_tree(tmp_path / "t", 200)
    idx = tmp_path / "i.db"
    assert main(["scan", str(tmp_path / "t"), "--index", str(idx), "-q"]) == EXIT_OK
    size = idx.stat().st_size
    assert size > 16 * 4096
    with open(idx, "r+b") as f:  # keep the header, smash every page after the first two
        f.seek(2 * 4096)
        f.write(b"\xa5" * (size - 2 * 4096))
    for cmd in (["stats"], ["problems"], ["scan", str(tmp_path / "t")]):
        code = main([*cmd, "--index", str(idx)])
        err = capsys.readouterr().err
        assert code == EXIT_INDEX, (cmd, err)
        assert str(idx) in err and "Traceback" not in err


def test_an_empty_file_as_index_is_one_with_nothing_in_it_yet(tmp_path: Path, capsys):
    # One rule for every command: an empty file is an index with nothing scanned into it (read commands
    # said "not a simscan index" while `scan` quietly took it over).  Read commands write nothing.
    empty = tmp_path / "empty.txt"
    empty.touch()
    for cmd in ("stats", "problems", "pairs", "groups", "check"):
        assert main([cmd, "--index", str(empty)]) == EXIT_INDEX
        err = capsys.readouterr().err
        assert f"there is no index at {empty} yet (an empty file" in err and "simscan scan --index" in err
        assert "--rebuild" not in err and "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["empty.txt"] and empty.stat().st_size == 0
    make_tree(tmp_path / "t", 3)
    assert main(["scan", str(tmp_path / "t"), "--index", str(empty), "-q"]) == EXIT_OK
    assert main(["stats", "--index", str(empty)]) == EXIT_OK
    assert "files:        3" in capsys.readouterr().out


def test_rebuild_of_a_user_file_or_in_an_impossible_place_exits_3(tmp_path: Path, capsys):
    make_tree(tmp_path / "t", 2)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n" * 100)
    assert main(["scan", str(tmp_path / "t"), "--index", str(notes), "--rebuild"]) == EXIT_INDEX
    err = capsys.readouterr().err
    assert str(notes) in err and "not a SQLite database" in err and "Traceback" not in err
    assert f"mv {notes} {notes}.broken" in err  # the way out when it was simscan's index, damaged past recognition
    assert notes.read_text() == "my notes\n" * 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "t"]
    assert main(["scan", str(tmp_path / "t"), "--index", str(notes / "i.db"), "--rebuild"]) == EXIT_INDEX
    err = capsys.readouterr().err
    assert str(notes) in err and "Traceback" not in err


def test_scan_leaves_the_results_ready(tmp_path: Path, capsys):
    """A scan that changed files works out the default results, so the window and `groups` read
    them; --no-cache leaves that to them; a scan that changed nothing keeps what is there."""
    from simscan.similarity import DEFAULT_MIN_SIMILARITY
    from simscan.similarity.engine import DEFAULT_SIM_PARAMS, cache_key

    root = tmp_path / "t"
    make_tree(root, 12)
    text = " ".join(f"w{i * 7919 % 10007}" for i in range(600)).encode()  # two near copies
    (root / "copy1.txt").write_bytes(text)
    (root / "copy2.txt").write_bytes(text[:1500] + b" an edit " + text[1500:])

    def ready(idx: Path) -> bool:
        with Index.open(idx, readonly=True) as i:
            return i.has_results(cache_key(DEFAULT_SIM_PARAMS), i.generation(), DEFAULT_MIN_SIMILARITY)

    plain = tmp_path / "plain.db"
    assert main(["scan", str(root), "--index", str(plain), "--no-cache"]) == EXIT_OK
    assert not ready(plain)
    cached = tmp_path / "cached.db"
    assert main(["scan", str(root), "--index", str(cached)]) == EXIT_OK
    assert ready(cached)
    capsys.readouterr()
    assert main(["groups", "--index", str(cached), "--format", "json"]) == EXIT_OK
    from_cache = capsys.readouterr().out
    assert main(["groups", "--index", str(plain), "--format", "json", "--no-cache"]) == EXIT_OK
    assert capsys.readouterr().out == from_cache and "copy2.txt" in from_cache
    (root / "copy2.txt").write_bytes(text + b"more")
    assert main(["scan", str(root), "--index", str(cached), "--no-cache"]) == EXIT_OK
    assert not ready(cached)  # the files changed: what was kept no longer applies


def test_progress_bar_and_stats_escape_control_characters(tmp_path: Path, capsys):
    """A name with a newline or a terminal escape is shown escaped on the progress bar and in
    `stats`: it can neither break the line nor drive the terminal."""
    buf = io.StringIO()
    bar = ProgressBar(stream=buf, enabled=True)
    bar(Progress("read", files_done=1, files_total=2, current="/t/evil\x1b[2J\nname\x9b.txt"))
    drawn = buf.getvalue()
    assert "evil\\x1b[2J\\nname\\x9b.txt" in drawn and "\n" not in drawn and "\x1b[2J" not in drawn
    root = tmp_path / "ro\x1b[31mot"
    make_tree(root, 2)
    idx = tmp_path / "i.db"
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == EXIT_OK
    assert main(["stats", "--index", str(idx)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "ro\\x1b[31mot" in out and "\x1b" not in out


def test_an_index_moved_aside_inside_the_scanned_folder_is_not_scanned(tmp_path: Path, capsys):
    """An index kept inside the folder it scans is left out of the scan, and so are the earlier
    indexes that --rebuild moved aside beside it (they were scanned as user files)."""
    root = tmp_path / "t"
    make_tree(root, 3)
    idx = root / "i.sqlite3"
    assert main(["scan", str(root), "--index", str(idx), "-q"]) == EXIT_OK
    assert main(["scan", str(root), "--index", str(idx), "-q", "--rebuild"]) == EXIT_OK
    assert any(p.name.startswith("i.sqlite3.corrupt-") for p in root.iterdir())
    capsys.readouterr()
    assert main(["stats", "--index", str(idx), "--format", "json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["files"] == 3


def test_a_rebuild_keeps_the_problem_lines_of_documents_read_by_their_bytes(tmp_path: Path, capsys):
    """A document compared by its bytes (a truncated DOCX) has a line in `problems` after every scan.  A
    rebuild kept its entry but not the line, and the scans after it found the file unchanged: the line was
    gone for good (acceptance test).  Now such a file is read again by the rebuild's scan, and its line
    is back, then and after."""
    from tests.helpers_documents import DATA

    root = tmp_path / "t"
    make_tree(root, 3)
    (root / "truncated.docx").write_bytes((DATA / "essay.docx").read_bytes()[:3000])
    idx = tmp_path / "i.sqlite3"

    def problems() -> str:
        capsys.readouterr()
        assert main(["problems", "--index", str(idx)]) == EXIT_OK
        return capsys.readouterr().out

    assert main(["scan", str(root), "--index", str(idx), "-q"]) == EXIT_OK
    assert "truncated.docx: DOCX: damaged or truncated zip" in problems()
    assert main(["scan", str(root), "--index", str(idx), "-q", "--rebuild"]) == EXIT_OK
    assert "truncated.docx: DOCX: damaged or truncated zip" in problems()
    assert main(["scan", str(root), "--index", str(idx), "-q"]) == EXIT_OK
    assert "truncated.docx: DOCX: damaged or truncated zip" in problems()
    capsys.readouterr()
    assert main(["stats", "--index", str(idx), "--format", "json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["files"] == 4  # (the text files were kept, the document read)


def test_index_given_before_the_command_is_the_commands_index(tmp_path: Path, capsys):
    """`simscan --index PATH scan ROOT` was refused as "invalid choice: 'PATH'" (acceptance test: the README
    says every command takes --index, and a new user put it first)."""
    root = tmp_path / "t"
    make_tree(root, 3)
    idx = tmp_path / "i.sqlite3"
    assert main(["--index", str(idx), "scan", str(root), "-q"]) == EXIT_OK
    capsys.readouterr()
    assert main(["--index", str(idx), "stats", "--format", "json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["files"] == 3
    assert main(["--index", str(idx), "stats", "--index", str(idx)]) == EXIT_OK  # (the same twice: fine)
    with pytest.raises(SystemExit) as e:
        main(["--index", str(idx), "stats", "--index", str(tmp_path / "other.sqlite3")])
    assert e.value.code == EXIT_USAGE and "two indexes given" in capsys.readouterr().err


def test_results_after_a_scan_that_did_not_finish_say_so(tmp_path: Path, capsys):
    """pairs and groups on an index whose last scan was cancelled list what it stored and say the
    scan did not finish (the tester saw partial results without a word); a finished scan ends it."""
    from simscan.progress import CancelToken
    from simscan.scanner import ScanRequest, run_scan

    root = tmp_path / "t"
    make_tree(root, 12)
    idx = tmp_path / "i.db"
    cancel = CancelToken()
    cancel.cancel()
    assert run_scan(ScanRequest([root], index_path=idx, jobs=1), cancel=cancel).cancelled
    for cmd in ("pairs", "groups"):
        assert main([cmd, "--index", str(idx)]) == EXIT_OK
        assert "the last scan was cancelled before it finished" in capsys.readouterr().err, cmd
    assert main(["scan", str(root), "--index", str(idx), "--quiet"]) == EXIT_OK
    capsys.readouterr()
    assert main(["pairs", "--index", str(idx)]) == EXIT_OK
    assert "before it finished" not in capsys.readouterr().err
