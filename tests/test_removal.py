"""Pairs after files left the index: derived from the previous pairs (``similarity.removal``)
exactly as a new search finds them, or searched again when they cannot be derived."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from similarity_support import index_tree, words
from test_code_view import _NAMES, _RENAMED, _rename, java_program

from simscan.index import Index
from simscan.similarity import SimilarityParams
from simscan.similarity.core import PairArrays
from simscan.similarity.engine import PairSet, find_pair_set


def _tree(root: Path, seed: int) -> None:
    """Documents with copies (same bytes; same text in UTF-16 or with CRLF), edited versions,
    excerpts, unrelated texts and program sources with renamed copies; random mtimes so the
    preferred copy varies."""
    rng = random.Random(seed)
    root.mkdir()
    for d in range(6):
        base = words(1000 * seed + d, rng.randrange(150, 600))
        variants = {f"doc{d}.txt": base.encode()}
        for k in range(rng.randrange(1 if d == 0 else 0, 4)):  # doc0 has a copy (see the test)
            variants[f"doc{d}_copy{k}.txt"] = base.encode()
        if rng.random() < 0.6:
            variants[f"doc{d}_u16.txt"] = base.encode("utf-16")
        if rng.random() < 0.6:
            variants[f"doc{d}_crlf.txt"] = base.replace(" ", "\r\n", 40).encode()
        if rng.random() < 0.7:
            cut = base.split()
            variants[f"doc{d}_edit.txt"] = " ".join(cut[:60] + [words(d + 77, 20)] + cut[60:]).encode()
        if rng.random() < 0.5:
            variants[f"doc{d}_excerpt.txt"] = " ".join(base.split()[: len(base.split()) // 3]).encode()
        for name, data in variants.items():
            p = root / name
            p.write_bytes(data)
            t = 1_000_000_000 + rng.randrange(10**6)
            os.utime(p, (t, t))
    for j in range(2):
        prog = java_program(20 + j, _NAMES)
        (root / f"P{j}.java").write_text(prog)
        (root / f"P{j}_copy.java").write_text(prog)
        (root / f"P{j}_renamed.java").write_text(_rename(prog, _NAMES, _RENAMED))


def _canon(files, pa: PairArrays) -> list[tuple]:
    """The pairs as sorted tuples of (path a, path b, every score column)."""
    cols = [getattr(pa, f) for f in PairArrays.__slots__[2:]]
    return sorted(
        (files.paths[a], files.paths[b], *(c[k].item() for c in cols))
        for k, (a, b) in enumerate(zip(pa.a.tolist(), pa.b.tolist()))
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("code_view", [True, False])
def test_pairs_after_removal_equal_a_new_search(tmp_path: Path, seed: int, code_view: bool) -> None:
    root = tmp_path / "t"
    _tree(root, seed)
    idx = tmp_path / "i.sqlite3"
    paths = index_tree(idx, root)
    params = SimilarityParams(code_view=code_view)
    rng = random.Random(seed)
    derived_seen = 0
    with Index.open(idx) as ix:
        prev = find_pair_set(ix, min_similarity=5, params=params)
        assert not prev.derived
        alive = [str(p) for p in paths]
        for step in range(4):
            # Remove a few files: copies only (derivable) on even steps, anything on odd ones.
            names = {os.path.basename(p): p for p in alive}
            copies = [p for n, p in names.items() if "_copy" in n or "_u16" in n or "_crlf" in n]
            pool = copies if step % 2 == 0 and copies else alive
            if step == 0:
                # A representative removed with its copies kept (the class gets a new representative),
                # and copies of other documents.
                pool = [p for p in copies if not os.path.basename(p).startswith("doc0_")]
                klass = [p for n, p in names.items() if n == "doc0.txt" or n.startswith(("doc0_copy", "doc0_u16",
                                                                                           "doc0_crlf"))]
                rep = min(klass, key=lambda p: (os.stat(p).st_mtime_ns, len(p)))  # the preferred copy
                gone = [rep, *rng.sample(pool, min(len(pool), 2))]
            else:
                gone = rng.sample(pool, min(len(pool), rng.randrange(1, 4)))
            ix.remove_paths(gone)
            alive = [p for p in alive if p not in gone]
            got = find_pair_set(ix, min_similarity=5, params=params, previous=prev)
            want = find_pair_set(ix, min_similarity=5, params=params, cache=False)
            assert got.files.paths == want.files.paths
            assert _canon(got.files, got.pairs) == _canon(want.files, want.pairs), (step, gone)
            derived_seen += got.derived
            # What was derived (and cached) is what the next request at its floor reads (a request at
            # another floor searches: ``results.read``).
            again = find_pair_set(ix, min_similarity=5, params=params)
            assert again.cached == got.stored
            assert _canon(again.files, again.pairs) == _canon(want.files, want.pairs)
            assert not find_pair_set(ix, min_similarity=15, params=params).cached
            prev = got
    assert derived_seen >= 1  # step 0 removes copies and a representative whose copies stay


def test_removal_of_a_unique_content_searches_again(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    base = words(5, 400)
    (root / "a.txt").write_text(base)
    (root / "b.txt").write_text(base)
    (root / "edit.txt").write_text(base.replace(base.split()[10], "changed", 1) + " " + words(6, 30))
    (root / "other.txt").write_text(words(7, 300) + " " + " ".join(base.split()[:80]))
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    with Index.open(idx) as ix:
        prev = find_pair_set(ix, min_similarity=0)
        ix.remove_paths([str(root / "edit.txt")])  # its content is gone: frequencies change
        got = find_pair_set(ix, min_similarity=0, previous=prev)
        assert not got.derived
        ix.remove_paths([str(root / "b.txt")])  # a copy: a.txt keeps the content
        got2 = find_pair_set(ix, min_similarity=0, previous=got)
        assert got2.derived
        want = find_pair_set(ix, min_similarity=0, cache=False)
    assert _canon(got2.files, got2.pairs) == _canon(want.files, want.pairs)
    # A previous set found with other parameters, or down to a higher floor, is not used.
    assert isinstance(got2, PairSet) and got2.key
    with Index.open(idx) as ix:
        ix.remove_paths([str(root / "a.txt")])
        other = find_pair_set(ix, min_similarity=0, previous=PairSet(got2.files, got2.pairs, key="x", floor=0))
        higher = find_pair_set(ix, min_similarity=0, previous=PairSet(got2.files, got2.pairs, key=got2.key, floor=50))
    assert not other.derived and not higher.derived


@pytest.mark.parametrize("twin_differs", [False, True])
@pytest.mark.parametrize("byte_copy_stays", [False, True])
def test_derivation_checks_the_new_representatives_fingerprints(
    tmp_path: Path, twin_differs: bool, byte_copy_stays: bool
) -> None:
    """The representative a.txt goes; the new one is u16.txt, the same text in UTF-16.  Its stored
    set is compared with that of a byte copy of a.txt that stays (there is none: searched again);
    a different set (an index written by hand) is searched again too."""
    from dataclasses import replace

    from simscan.fingerprint import fingerprint_file
    from simscan.index import FileRecord
    from simscan.model import FingerprintMeta

    root = tmp_path / "t"
    root.mkdir()
    base = words(8, 400)
    names = {"a.txt": base.encode(), "u16.txt": base.encode("utf-16"), "half.txt": base[: len(base) // 2].encode()}
    if byte_copy_stays:
        names["copy.txt"] = base.encode()
    for age, (name, data) in enumerate(names.items()):
        (root / name).write_bytes(data)
        os.utime(root / name, (1_000_000_000 + age, 1_000_000_000 + age))  # a, u16, half, copy
    recs = []
    for name in names:
        p = root / name
        st = os.stat(p)
        fp = fingerprint_file(p)
        if name == "u16.txt" and twin_differs:
            half = fp.rolling.size // 2
            fp = replace(fp, rolling=fp.rolling[:half], meta=FingerprintMeta(
                *(getattr(fp.meta, c)[:half] for c in ("d", "unit", "char", "chars"))))
        recs.append(FileRecord.from_fingerprints(os.fsencode(p), st.st_dev, st.st_ino, st.st_mtime_ns, fp))
    idx = tmp_path / "i.sqlite3"
    with Index.open(idx) as ix:
        ix.write_files(recs)
        prev = find_pair_set(ix, min_similarity=0)
        ix.remove_paths([str(root / "a.txt")])
        got = find_pair_set(ix, min_similarity=0, previous=prev)
        want = find_pair_set(ix, min_similarity=0, cache=False)
    assert got.derived == (byte_copy_stays and not twin_differs)
    assert _canon(got.files, got.pairs) == _canon(want.files, want.pairs)


def test_new_representative_can_turn_a_pair_round(tmp_path: Path) -> None:
    """The oldest copy goes; the copy left is newer than its partner, which becomes the pair's
    ``a``: the two containments change places with their files."""
    root = tmp_path / "t"
    root.mkdir()
    base = words(9, 600)
    files = {"old.txt": (base, 1), "new_copy.txt": (base, 3), "excerpt.txt": (" ".join(base.split()[:200]), 2)}
    for name, (text, age) in files.items():
        (root / name).write_text(text)
        os.utime(root / name, (1_000_000_000 + age, 1_000_000_000 + age))
    got = _removed(tmp_path, root, ["old.txt"])
    assert got.derived
    (pair,) = [k for k in range(got.pairs.a.size) if got.pairs.kind[k] >= 2]
    assert Path(got.files.paths[got.pairs.a[pair]]).name == "excerpt.txt"
    assert got.pairs.containment_a[pair] > 95 > got.pairs.containment_b[pair]  # the excerpt lies inside


def test_hard_links_are_searched_again(tmp_path: Path) -> None:
    """Two paths of one file: the search keeps one of them before forming classes, so the
    derivation does not apply (it would see both paths as a class)."""
    root = tmp_path / "t"
    root.mkdir()
    base = words(12, 500)
    (root / "a.txt").write_text(base)
    os.link(root / "a.txt", root / "a_link.txt")
    (root / "b.txt").write_text(base)
    (root / "part.txt").write_text(" ".join(base.split()[:150]))
    for age, name in enumerate(("a.txt", "b.txt", "part.txt")):
        os.utime(root / name, (1_000_000_000 + age, 1_000_000_000 + age))
    assert not _removed(tmp_path, root, ["b.txt"]).derived


def _removed(tmp_path: Path, root: Path, names: list[str]) -> PairSet:
    """Index ``root``, find its pairs, remove ``names`` from the index, find them again from the
    previous set: checked equal to a new search, and returned."""
    idx = tmp_path / "i.sqlite3"
    index_tree(idx, root)
    with Index.open(idx) as ix:
        prev = find_pair_set(ix, min_similarity=0)
        ix.remove_paths([str(root / n) for n in names])
        got = find_pair_set(ix, min_similarity=0, previous=prev)
        want = find_pair_set(ix, min_similarity=0, cache=False)
    assert _canon(got.files, got.pairs) == _canon(want.files, want.pairs)
    return got
