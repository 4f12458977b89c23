"""The fault campaign's tools, shared by ``tests/test_faults_*.py`` and ``benchmarks/faults.py``.

Real trees of similar files, the CLI run in this process, the outputs of every read command in a
form that compares across indexes (sorted lines, ids and index paths left out), and damage written
into the pages of one table of a real index file (SQLite's ``dbstat`` says which pages are whose).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import sqlite3
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tests.helpers_tree import words

REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------------------- trees
def make_family_tree(root: Path, n_bases: int = 12, seed: int = 0) -> list[Path]:
    """Files with every kind of relation the results show: per base text (2-6 KB of words), an exact
    copy in another folder, an edited version (1 word in 8 changed), an excerpt (its middle 40 %), and
    for every third base the text again in UTF-16; plus a few unrelated texts, tiny files (no
    fingerprint), a binary file and its copy, and a FIFO (a problem line).  Returns the regular files."""
    rng = np.random.default_rng(seed)
    out: list[Path] = []

    def put(rel: str, data: bytes) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        out.append(p)

    for i in range(n_bases):
        text = words(rng, int(rng.integers(2000, 6000)))
        put(f"originals/b{i:03d}.txt", text)
        put(f"copies/c{i:03d}/b{i:03d}.txt", text)
        toks = text.split(b" ")
        for k in range(0, len(toks), 8):
            toks[k] = b"edited"
        put(f"edits/b{i:03d}_v2.txt", b" ".join(toks))
        n = len(text)
        put(f"excerpts/b{i:03d}_part.txt", text[int(n * 0.3) : int(n * 0.7)])
        if i % 3 == 0:
            put(f"encodings/b{i:03d}_utf16.txt", text.decode("ascii").encode("utf-16"))
    for i in range(n_bases // 2):
        put(f"other/u{i:03d}.txt", words(rng, int(rng.integers(500, 3000))))
    for i in range(3):
        put(f"tiny/t{i}.txt", b"short note %d\n" % (i % 2))
    blob = rng.integers(0, 256, 6000, dtype=np.uint8).tobytes()
    put("bin/data.bin", blob)
    put("bin/data_copy.bin", blob)
    os.mkfifo(root / "other" / "pipe")
    return out


# ----------------------------------------------------------------------------------------- the CLI
def cli(args: Sequence[str]) -> tuple[Any, str, str]:
    """(exit code, stdout, stderr) of ``simscan ARGS`` run in this process; an exception that escapes
    ``main`` (a traceback for a user) is returned as its text in place of the code."""
    from simscan.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: Any = main(list(args))
        except SystemExit as e:
            code = e.code
        except BaseException as e:  # noqa: BLE001 - reported to the test as a failure
            code = f"{type(e).__name__}: {e}"
    return code, out.getvalue(), err.getvalue()


def _json_lines(text: str, drop: Sequence[str] = ()) -> str:
    rows = []
    for line in text.splitlines():
        rec = json.loads(line)
        for k in drop:
            rec.pop(k, None)
        if "members" in rec:
            rec["members"] = sorted(rec["members"], key=lambda m: m["path"])
        rows.append(json.dumps(rec, sort_keys=True))
    return "\n".join(sorted(rows))


#: What differs between two indexes of the same files and is left out of the comparison.
_STATS_DROP = ("index", "index_bytes", "results_cache_bytes", "last_scan", "files_waiting_for_postings")


def outputs(index: Path, queries: Sequence[Path] = (), *, problems: bool = True) -> dict[str, tuple[Any, str]]:
    """The exit code and output of every read command on ``index``, comparable across indexes."""
    runs: dict[str, list[str]] = {
        "pairs": ["pairs", "--format", "json"],
        "pairs --no-cache": ["pairs", "--format", "json", "--no-cache", "--min-similarity", "5"],
        "groups": ["groups", "--format", "json"],
        "stats": ["stats", "--format", "json"],
    }
    if problems:
        runs["problems"] = ["problems", "--format", "json"]
    for q in queries:
        runs[f"query {q.name}"] = ["query", str(q), "--format", "json"]
    res: dict[str, tuple[Any, str]] = {}
    for name, args in runs.items():
        code, out, err = cli([*args, "--index", str(index)])
        if code == 0:
            if name == "stats":
                d = json.loads(out)
                for k in _STATS_DROP:
                    d.pop(k, None)
                out = json.dumps(d, sort_keys=True)
            else:
                out = _json_lines(out, drop=("id",))
        else:
            out = err
        res[name] = (code, out)
    return res


def scan(root: Path, index: Path, *extra: str) -> tuple[Any, str]:
    code, _, err = cli(["scan", str(root), "--index", str(index), "--jobs", "1", *extra])
    return code, err


def integrity(index: Path) -> str:
    """SQLite's own ``integrity_check`` of the file, first line ("ok" when intact)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as c:
            return str(c.execute("PRAGMA integrity_check").fetchone()[0])
    except (sqlite3.Error, UnicodeDecodeError) as e:  # (SQLite's message may quote damaged text)
        return f"error: {e}"


def checkpoint(index: Path) -> None:
    """Move everything into the main file (so that its pages are the whole index)."""
    with contextlib.closing(sqlite3.connect(index)) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def copy_index(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".lock"):
        p = Path(f"{dst}{suffix}")
        if p.exists():
            p.unlink()
    shutil.copy(src, dst)


# ----------------------------------------------------------------------------------------- damage
def pages_by_table(index: Path) -> dict[str, list[tuple[int, str]]]:
    """Table or index name -> its (page number, page type) pages, from SQLite's ``dbstat``."""
    with contextlib.closing(sqlite3.connect(index)) as c:
        rows = c.execute("SELECT name, pageno, pagetype FROM dbstat").fetchall()
    out: dict[str, list[tuple[int, str]]] = {}
    for name, page, kind in rows:
        out.setdefault(name, []).append((page, kind))
    return out


def has_dbstat() -> bool:
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as c:
            c.execute("SELECT count(*) FROM dbstat").fetchone()
        return True
    except sqlite3.Error:
        return False


def damage_page(index: Path, page: int, kind: str, rng: random.Random) -> tuple[int, int]:
    """Write random bytes (1, 8 or 64) at a random offset of page ``page`` where it holds something (its
    header and cell pointers, or its cell content; anywhere in an overflow page): damage in free space
    would prove nothing.  Returns (offset in the page, bytes written)."""
    with contextlib.closing(sqlite3.connect(index)) as c:
        size = c.execute("PRAGMA page_size").fetchone()[0]
    with open(index, "r+b") as f:
        f.seek((page - 1) * size)
        data = f.read(size)
        if kind == "overflow":
            off = rng.randrange(4, size - 8)
        else:
            h = 100 if page == 1 else 0
            cells = struct.unpack(">H", data[h + 3 : h + 5])[0]
            start = struct.unpack(">H", data[h + 5 : h + 7])[0] or 65536
            head = (12 if data[h] in (2, 5) else 8) + 2 * cells
            if rng.random() < 0.15 or start >= size - 8:
                off = rng.randrange(h, h + head)
            else:
                off = rng.randrange(start, size - 8)
        n = rng.choice((1, 8, 64))
        n = min(n, size - off)
        f.seek((page - 1) * size + off)
        f.write(bytes(rng.randrange(256) for _ in range(n)))
    return off, n


def damage_header(index: Path, rng: random.Random) -> tuple[int, int]:
    """Random bytes over one field of the 100-byte database header (after the magic string)."""
    with open(index, "r+b") as f:
        off = rng.randrange(16, 100)
        n = rng.choice((1, 4))
        f.seek(off)
        f.write(bytes(rng.randrange(256) for _ in range(n)))
    return off, n


def damage_cycle(base: Path, work: Path, root: Path, expected: dict[str, tuple[Any, str]], queries: Sequence[Path],
                 where: tuple[str, int, str] | None, rng: random.Random) -> dict[str, Any]:
    """One trial of the damage campaign: a copy of the intact index ``base`` (whose outputs are
    ``expected``) damaged at ``where`` ((table, page, page type); None: the header), then

    1. every read command either exits 3 saying so, or prints what the intact index printed;
    2. ``simscan check`` finds the damage whenever a command did or SQLite's integrity check does;
    3. the remedy the messages name -- a scan (again, if the check just found more), or the
       ``--rebuild`` it names -- leaves an intact index whose outputs are those of the intact one.

    Raises AssertionError on any breach; returns what happened (for ``benchmarks/faults.py``)."""
    db = work / "damaged.db"
    copy_index(base, db)
    if where is None:
        off, n = damage_header(db, rng)
        what = f"header +{off} ({n} B)"
    else:
        table, page, kind = where
        off, n = damage_page(db, page, kind, rng)
        what = f"{table} page {page} ({kind}) +{off} ({n} B)"
    got = outputs(db, queries)
    found_by: list[str] = []
    for name, (code, out) in got.items():
        if code == 3:
            assert "damaged" in out or "cannot be used" in out or "no index" in out, (what, name, out)
            assert "Traceback" not in out, (what, name, out)
            found_by.append(name)
        else:
            assert (code, out) == expected[name], f"{what}: `{name}` printed other results (exit {code}): {out[:300]}"
    sound = integrity(db) == "ok"
    code, _, err = cli(["check", "--index", str(db)])
    if found_by or not sound:
        assert code == 3, f"{what}: check exit {code} after {found_by or 'integrity ' + integrity(db)}: {err}"
    assert code in (0, 3), (what, code, err)
    checked = code == 3
    remedy = []
    reread = 0
    for _ in range(3):
        code, err = scan(root, db)
        if code == 3:
            assert "--rebuild" in err, (what, err)
            code, err = scan(root, db, "--rebuild")
            assert code == 0, (what, err)
            remedy.append("rebuild")
            m = re.search(r": ([\d,]+) read \(", err)
            reread += int(m.group(1).replace(",", "")) if m else 0
        else:
            assert code == 0, (what, code, err)
            remedy.append("scan" + (" (repaired)" if "repaired the index" in err else ""))
            m = re.search(r"([\d,]+) files? with damaged entries", err)
            reread += int(m.group(1).replace(",", "")) if m else 0
        code, _, err = cli(["check", "--index", str(db)])
        if code == 0:
            break
        assert code == 3, (what, err)
    assert code == 0 and integrity(db) == "ok", f"{what}: not repaired after {remedy}: {err}"
    after = outputs(db, queries, problems=False)
    for name, want in expected.items():
        if name != "problems":
            assert after[name] == want, f"{what}: after {remedy}, `{name}` differs from the intact index's"
    return {"what": what, "found_by_reads": found_by, "found_by_check": checked, "sound": sound, "remedy": remedy,
            "reread": reread}
