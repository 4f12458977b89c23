"""One file reached by several paths (hard links, a folder indexed through a symbolic link) is
one file: never a pair with itself, never twice in a group, reported once by query."""

from __future__ import annotations

import dataclasses
import os
import types
from pathlib import Path

import numpy as np
import pytest
from similarity_support import words, write_index

from simscan.index import FileTable, Index
from simscan.similarity import Pair, find_groups, find_pairs, group_pairs, query
from simscan.similarity.memory import table_from_paths


def _tree(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    base = words(11, 500)
    f = {
        "a": root / "a.txt",
        "edit": root / "sub" / "edited.txt",
        "other": root / "other.txt",
        "copy": root / "sub" / "real_copy.txt",
    }
    f["a"].write_text(base)
    f["edit"].write_text(base[:1500] + " " + words(12, 40) + " " + base[1500:])
    f["other"].write_text(words(13, 400))
    f["copy"].write_text(base)  # a true copy (another inode): must stay an exact pair
    later = f["a"].stat().st_mtime_ns + 10**9
    os.utime(f["copy"], ns=(later, later))  # strictly newer than a.txt: never the preferred copy
    f["link"] = root / "sub" / "hardlink_to_a.txt"
    os.link(f["a"], f["link"])
    os.symlink(root, tmp_path / "via_symlink")
    f["a_via_symlink"] = tmp_path / "via_symlink" / "a.txt"
    return root, f


def _indexed(tmp_path: Path, files: list[Path]) -> Path:
    idx = tmp_path / "i.sqlite3"
    write_index(idx, files)  # the index's writer, device and inode from os.stat
    with Index.open(idx, readonly=True) as ix:
        rows = ix.connection.execute("SELECT path, device, inode FROM files").fetchall()
    ident = {os.fsdecode(p): (d, i) for p, d, i in rows}
    assert len(rows) == len(files) and len(set(ident.values())) < len(files)  # aliases really are rows
    return idx


def test_aliases_are_one_file_in_pairs_and_groups(tmp_path: Path) -> None:
    _, f = _tree(tmp_path)
    idx = _indexed(tmp_path, [f["a"], f["link"], f["a_via_symlink"], f["edit"], f["other"], f["copy"]])
    aliases = {str(f["a"]), str(f["link"]), str(f["a_via_symlink"])}
    with Index.open(idx, readonly=True) as ix:
        pairs = find_pairs(ix, min_similarity=0)
        groups = find_groups(ix, min_similarity=10)
    named = [{p.a_path, p.b_path} for p in pairs]
    assert not any(len(s & aliases) == 2 for s in named), "a file paired with itself"
    # Only the preferred path (same mtime: the shortest) of the file appears at all.
    seen = set().union(*named) & aliases
    assert seen == {str(f["a"])}
    kinds = {frozenset(s): p.kind for s, p in zip(named, pairs)}
    assert kinds[frozenset({str(f["a"]), str(f["copy"])})] == "exact"
    assert kinds[frozenset({str(f["a"]), str(f["edit"])})] == "near"
    (g,) = groups
    paths = [m.path for m in g.members]
    assert len(set(paths) & aliases) == 1 and str(f["copy"]) in paths and str(f["edit"]) in paths
    # With a reference folder holding another path of the file, that path is the one kept.
    with Index.open(idx, readonly=True) as ix:
        (g,) = find_groups(ix, min_similarity=10, reference_roots=[str(f["link"].parent)])
    paths = [m.path for m in g.members]
    assert g.reference.path == str(f["link"]) and len(set(paths) & aliases) == 1


def test_group_pairs_never_groups_two_paths_of_one_file(tmp_path: Path) -> None:
    """group_pairs on a table with device/inode: a pair list that names both paths (as an older
    find_pairs produced) still gives one path per file, the preferred one by the reference rules."""
    _, f = _tree(tmp_path)
    idx = _indexed(tmp_path, [f["a"], f["link"], f["edit"]])
    with Index.open(idx, readonly=True) as ix:
        t = ix.files()
        rows = ix.connection.execute("SELECT id, device, inode FROM files ORDER BY id").fetchall()
    # The table's identity columns (as the index fills them; built here from the stored rows
    # when an index's FileTable does not carry them).
    cols = {fl.name: getattr(t, fl.name) for fl in dataclasses.fields(FileTable)}
    cols["device"] = np.array([r[1] for r in rows], np.int64)
    cols["inode"] = np.array([r[2] for r in rows], np.int64)
    if len(getattr(t, "device", ())) == len(t.paths):
        assert np.array_equal(t.device, cols["device"]) and np.array_equal(t.inode, cols["inode"])
    table = types.SimpleNamespace(**cols)
    pid = {p: int(i) for p, i in zip(t.paths, t.ids)}
    a, link, ed = pid[str(f["a"])], pid[str(f["link"])], pid[str(f["edit"])]
    pairs = [
        Pair(a, link, str(f["a"]), str(f["link"]), 100, 100, 100, 0, True, "exact"),
        Pair(a, ed, str(f["a"]), str(f["edit"]), 90, 95, 94, 2, False, "near"),
        Pair(link, ed, str(f["link"]), str(f["edit"]), 90, 95, 94, 2, False, "near"),
    ]
    for roots, want in (((), str(f["a"])), ((str(f["link"].parent),), str(f["link"]))):
        (g,) = group_pairs(pairs, table, min_similarity=10, reference_roots=roots)
        paths = sorted(m.path for m in g.members)
        assert paths == sorted([want, str(f["edit"])]), roots
        assert g.reference.path == want and g.kind == "near"


def test_query_does_not_find_the_file_itself(tmp_path: Path) -> None:
    _, f = _tree(tmp_path)
    idx = _indexed(tmp_path, [f["a"], f["a_via_symlink"], f["edit"], f["other"]])
    with Index.open(idx, readonly=True) as ix:
        # The hard link is not indexed, but it is a.txt: a.txt is not "an exact copy" of it.
        res = query(ix, f["link"], min_similarity=10)
        assert [p.b_path for p in res] == [str(f["edit"])]
        # A real copy finds the file once (its shortest path), not once per path.
        res = query(ix, f["copy"], min_similarity=10)
        assert [(p.b_path, p.kind) for p in res] == [(str(f["a"]), "exact"), (str(f["edit"]), "near")]


def test_memory_table_identity(tmp_path: Path) -> None:
    if "device" not in {fl.name for fl in dataclasses.fields(FileTable)}:
        pytest.skip("the index's FileTable has no device/inode columns yet")
    _, f = _tree(tmp_path)
    t, *_ = table_from_paths([f["a"], f["link"], f["edit"]])
    st = [os.stat(p) for p in (f["a"], f["link"], f["edit"])]
    assert t.device.tolist() == [s.st_dev for s in st] and t.inode.tolist() == [s.st_ino for s in st]


def test_reference_root_given_through_a_symlink_still_matches(tmp_path):
    from simscan.similarity.core import under_roots

    real = tmp_path / "originals"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    paths = [str(real / "a.txt"), str(tmp_path / "other" / "b.txt")]
    assert under_roots(paths, (str(link),)).tolist() == [True, False]
    assert under_roots(paths, (str(real),)).tolist() == [True, False]


def test_priority_order_is_oldest_then_shortest_then_path_order() -> None:
    """The fast order (paths compared only where mtime and length tie) against the obvious sort."""
    from simscan.similarity.core import priority_order

    rng = np.random.default_rng(5)
    for n, times in ((2000, 3), (500, 10**9), (1, 1), (0, 1)):
        paths = sorted({"/" + "".join(rng.choice(list("abc/"), int(rng.integers(1, 6)))) + f"{k}" for k in range(n)})
        rng.shuffle(paths)
        mtime = rng.integers(0, times, len(paths)).astype(np.int64)
        files = types.SimpleNamespace(paths=paths, mtime_ns=mtime)
        want = sorted(range(len(paths)), key=lambda i: (int(mtime[i]), len(paths[i]), paths[i]))
        assert priority_order(files).tolist() == want
