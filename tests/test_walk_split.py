"""A large rescan walks in two processes (walk shares, ``ForkedShare``): same index, same counts and
same problems as a walk in one process, whatever the child does."""

from __future__ import annotations

import os
import threading
import zlib
from pathlib import Path

import pytest

from simscan import scanner
from simscan import walk as walk_mod
from simscan.scanner import CHILD_SHARE, OWN_SHARE, ScanRequest, run_scan
from simscan.walk import (
    SHARES,
    ForkedShare,
    WalkOptions,
    WalkResult,
    admit_linked,
    can_fork,
    is_unchanged,
    walk,
    walk_order,
)
from tests.helpers_tree import bump_mtime, make_tree
from tests.test_scan import indexed


def in_share(share: tuple[int, int], stem: str, ext: str = ".txt") -> str:
    """A file name ``stem<n><ext>`` that belongs to ``share``."""
    for n in range(1000):
        name = f"{stem}{n}{ext}"
        if share[0] <= zlib.crc32(name.encode()) % SHARES < share[1]:
            return name
    raise AssertionError("no name found")


def build(root: Path) -> None:
    """A tree with something of every kind the walk treats specially."""
    make_tree(root, 120, per_dir=30, binary_every=9)
    (root / ".hidden.txt").write_bytes(b"a hidden file " * 20)
    (root / ".hdir").mkdir()
    (root / ".hdir" / "inside.txt").write_bytes(b"inside a hidden folder " * 20)
    (root / "skip.tmp").write_bytes(b"excluded by a glob " * 20)
    (root / "empty").write_bytes(b"")
    os.mkfifo(root / "fifo")
    os.symlink(root / "nowhere", root / "broken")
    os.symlink(root / "d000", root / "dirlink")
    # Hard links: one pair whose names fall in different shares, one pair within the child's share.
    src = root / "d001" / in_share(OWN_SHARE, "own")
    src.write_bytes(b"one file, two names in two shares " * 30)
    os.link(src, root / "d002" / in_share(CHILD_SHARE, "child"))
    src2 = root / "d003" / in_share(CHILD_SHARE, "c1-")
    src2.write_bytes(b"one file, two names in one share " * 30)
    os.link(src2, root / "d003" / in_share(CHILD_SHARE, "c2-"))
    # The child's name first in walk order (d000 < d001), and a third name in the parent's share.
    src3 = root / "d000" / in_share(CHILD_SHARE, "first")
    src3.write_bytes(b"one file, three names, the child's first " * 30)
    os.link(src3, root / "d001" / in_share(OWN_SHARE, "second"))
    os.link(src3, root / "d002" / in_share(CHILD_SHARE, "third"))


def test_shares_partition_what_one_walk_finds(tmp_path: Path):
    root = tmp_path / "t"
    build(root)
    roots = [os.fsencode(root)]
    opts = WalkOptions(exclude=("*.tmp",), hidden=False)
    whole = walk(roots, opts)
    own, child = walk(roots, opts, share=OWN_SHARE), walk(roots, opts, share=CHILD_SHARE)
    listed = [e[0] for e in own.files + child.files]
    assert len(listed) == len(set(listed))  # no file in two shares
    # Files with several names are held back by both shares and decided in walk order, as one walk does.
    assert len(own.linked) + len(child.linked) == 7
    linked = admit_linked(own.linked + child.linked, roots, opts)
    assert sorted(listed + [e[0] for e in linked.files]) == sorted(e[0] for e in whole.files)
    assert sorted(own.problems + child.problems + linked.problems) == sorted(whole.problems)
    first = os.fsencode(root / "d000" / in_share(CHILD_SHARE, "first"))
    assert first in {e[0] for e in linked.files}  # the child's name, first in walk order
    assert own.skipped + child.skipped == whole.skipped == 3  # .hidden.txt, .hdir, skip.tmp
    assert own.links_skipped + child.links_skipped == whole.links_skipped == 1
    with pytest.raises(ValueError):
        walk(roots, WalkOptions(follow_links=True), share=OWN_SHARE)


def test_walk_order_is_the_order_a_walk_meets_files(tmp_path: Path):
    root = tmp_path / "t"
    for rel in ("b.txt", "a/z.txt", "a/b/c.txt", "a/a.txt", "c/x.txt", "a.txt", "ab/y.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    solo, other = tmp_path / "solo.txt", tmp_path / "other.txt"
    solo.write_text("a root that is a file")
    other.write_text("another")
    roots = [os.fsencode(root), os.fsencode(solo), os.fsencode(other)]
    met = [e[0] for e in walk(roots, WalkOptions()).files]
    assert met == sorted(met, key=lambda p: walk_order(p, roots))
    assert met[:2] == [os.fsencode(solo), os.fsencode(other)]  # roots that are files first, in the order given
    # Two file roots that are one file: the first given is indexed, split walk or not.
    other.unlink()
    os.link(solo, other)
    whole = walk(roots, WalkOptions())
    assert os.fsencode(solo) in {e[0] for e in whole.files} and os.fsencode(other) not in {e[0] for e in whole.files}
    st = solo.stat()
    decided = admit_linked([(os.fsencode(other), st), (os.fsencode(solo), st)], roots, WalkOptions())
    assert [e[0] for e in decided.files] == [os.fsencode(solo)]


def test_known_files_are_counted_not_listed(tmp_path: Path):
    root = tmp_path / "t"
    paths = make_tree(root, 20)
    rows = {}
    for i, p in enumerate(paths):
        st = p.stat()
        rows[os.fsencode(p)] = (os.fsencode(p), i + 1, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, 1, st.st_ctime_ns)
    bump_mtime(paths[0])
    stale = os.fsencode(paths[1])
    rows[stale] = rows[stale][:6] + (0, rows[stale][7])  # fingerprints of another algorithm version: read again
    moved = os.fsencode(paths[2])
    rows[moved] = rows[moved][:7] + (rows[moved][7] - 1,)  # another ctime: its content may have changed
    # Another device, another inode, another size: each another file, or the same one changed.
    other = [os.fsencode(p) for p in paths[3:6]]
    for f, col in zip(other, (2, 3, 4)):
        rows[f] = rows[f][:col] + (rows[f][col] + 1,) + rows[f][col + 1 :]
    known = dict(rows)
    res = walk([os.fsencode(root)], WalkOptions(), known=known)
    assert res.unchanged == 14 and res.found == 6
    assert {e[0] for e in res.files} == set(known) == {os.fsencode(paths[0]), stale, moved, *other}
    # The scanner's test for the files the walk lists anyway (is_unchanged) agrees with the walk's own.
    listed = walk([os.fsencode(root)], WalkOptions()).files
    assert {e[0] for e in listed if not is_unchanged(rows[e[0]], e)} == set(known)


def _scenario(root: Path, idx: Path) -> list[tuple]:
    """Scan, change the tree in every way a rescan must notice, rescan; the counts of each scan."""
    build(root)
    req = ScanRequest([root], index_path=idx, exclude=["*.tmp"], jobs=2)
    out = [run_scan(req)]
    d = root / "d000"
    names = sorted(os.listdir(d))
    edited = d / names[0]
    edited.write_bytes(edited.read_bytes()[::-1])
    bump_mtime(edited)
    (d / names[1]).unlink()
    # Renames across the shares, both ways.
    os.rename(d / names[2], d / in_share(OWN_SHARE, "to-own"))
    os.rename(d / names[3], d / in_share(CHILD_SHARE, "to-child"))
    (root / "d002" / in_share(OWN_SHARE, "new")).write_bytes(b"a new file " * 40)
    (root / "d002" / in_share(CHILD_SHARE, "new")).write_bytes(b"another new file " * 40)
    out.append(run_scan(req))
    out.append(run_scan(req))  # nothing changed
    keys = ("files_seen", "files_read", "files_unchanged", "files_removed", "files_renamed", "problems")
    return [tuple(getattr(r, k) for k in keys) for r in out]


def _relative(rows: dict[bytes, dict], root: Path) -> dict[bytes, tuple]:
    base = os.fsencode(root)
    return {p[len(base) :]: (r["size"], r["checksum"], r["fps"].tobytes()) for p, r in rows.items()}


@pytest.fixture
def forks(monkeypatch) -> list[ForkedShare]:
    """Every rescan splits its walk (the tests' trees are small); the children made."""
    made: list[ForkedShare] = []

    class Recorded(ForkedShare):
        def __init__(self, *a, **k) -> None:
            super().__init__(*a, **k)
            self.walked: WalkResult | None = None  # what the child sent (None: failed, walked again here)
            made.append(self)

        def result(self) -> WalkResult | None:
            self.walked = super().result()
            return self.walked

    monkeypatch.setattr(scanner, "ForkedShare", Recorded)
    monkeypatch.setattr(scanner, "SPLIT_WALK_MIN_FILES", 1)
    monkeypatch.setattr(scanner, "can_fork", lambda: True)
    monkeypatch.setattr(scanner, "spare_cpu", lambda: True)  # whatever else runs on the machine
    return made


def _one_process_ref(tmp_path: Path) -> tuple[list[tuple], dict]:
    """The same scenario with the walk in this process only."""
    saved = scanner.SPLIT_WALK_MIN_FILES
    scanner.SPLIT_WALK_MIN_FILES = 1 << 62
    try:
        root, idx = tmp_path / "one" / "t", tmp_path / "one.db"
        counts = _scenario(root, idx)
        return counts, _relative(indexed(idx), root)
    finally:
        scanner.SPLIT_WALK_MIN_FILES = saved


def test_split_rescan_equals_one_process(tmp_path: Path, forks: list[ForkedShare]):
    root, idx = tmp_path / "split" / "t", tmp_path / "split.db"
    counts = _scenario(root, idx)
    assert len(forks) == 2 and all(f.pid is None for f in forks)  # two rescans split, children reaped
    assert all(f.walked is not None for f in forks)  # the children walked their shares (no fallback)
    ref_counts, ref_rows = _one_process_ref(tmp_path)
    assert counts == ref_counts
    assert counts[1][4] == 2 and counts[2][1:3] == (0, counts[2][0])  # renames kept; then nothing read
    assert _relative(indexed(idx), root) == ref_rows


def test_a_failed_child_is_walked_again_here(tmp_path: Path, forks: list[ForkedShare], monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("the child's walk fails")

    monkeypatch.setattr(walk_mod, "walk", broken)  # what the child calls; the scanner keeps its own
    root, idx = tmp_path / "split" / "t", tmp_path / "split.db"
    counts = _scenario(root, idx)
    assert len(forks) == 2 and all(f.walked is None for f in forks)
    ref_counts, ref_rows = _one_process_ref(tmp_path)
    assert counts == ref_counts and _relative(indexed(idx), root) == ref_rows


def test_cancelled_split_rescan_reaps_its_child(tmp_path: Path, forks: list[ForkedShare]):
    from simscan.progress import CancelToken

    root, idx = tmp_path / "t", tmp_path / "i.db"
    make_tree(root, 200, per_dir=10)
    run_scan(ScanRequest([root], index_path=idx, jobs=2))
    cancel = CancelToken()
    r = run_scan(ScanRequest([root], index_path=idx, jobs=2), progress=lambda p: cancel.cancel(), cancel=cancel)
    assert r.cancelled and len(forks) == 1 and forks[0].pid is None  # killed and reaped


def test_only_the_main_thread_of_a_threadless_process_forks():
    seen = []
    t = threading.Thread(target=lambda: seen.append(can_fork()))
    t.start()
    t.join()
    assert seen == [False]  # the GUI scans in a worker thread: never split there


def test_an_interrupted_wait_stops_the_child_at_once(tmp_path: Path, monkeypatch):
    # SIGTERM (or SIGINT sent to this process alone) while waiting for the child: the wait reaped the child
    # first, i.e. waited for its whole walk (found by this session's code review).
    import signal
    import time

    make_tree(tmp_path / "t", 5)

    def slow(*a, **k):
        time.sleep(60)

    monkeypatch.setattr(walk_mod, "walk", slow)  # what the child runs
    child = ForkedShare([os.fsencode(tmp_path / "t")], WalkOptions(), CHILD_SHARE)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    t = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            child.result()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - t < 10 and child.pid is None  # killed and reaped, not waited for


def test_walk_progress_never_goes_back(tmp_path: Path, forks: list[ForkedShare], monkeypatch):
    # A child that fails has its share walked here; the files found then were counted from 0 again, so the
    # "files found" of the walk went down (found by this session's code review).
    from simscan.progress import Progress

    monkeypatch.setattr(scanner, "PROGRESS_RATE", 0)
    root, idx = tmp_path / "t", tmp_path / "i.db"
    make_tree(root, 200, per_dir=10)
    run_scan(ScanRequest([root], index_path=idx, jobs=2))

    def broken(*a, **k):
        raise RuntimeError("the child's walk fails")

    monkeypatch.setattr(walk_mod, "walk", broken)
    seen: list[int] = []
    run_scan(ScanRequest([root], index_path=idx, jobs=2),
             progress=lambda p: seen.append(p.files_done) if isinstance(p, Progress) and p.phase == "walk" else None)
    assert len(forks) == 1 and seen and seen == sorted(seen) and seen[-1] == 200
