"""Build real file trees for tests from a seeded generator (deterministic)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

_WORDS = None


def words(rng: np.random.Generator, n: int) -> bytes:
    """``n`` bytes of word-like ASCII text (so files are detected as text and fingerprint densely)."""
    global _WORDS
    if _WORDS is None:
        wr = np.random.default_rng(12345)
        _WORDS = [bytes(wr.integers(97, 123, size=int(wr.integers(2, 10))).astype(np.uint8)) for _ in range(3000)]
    out: list[bytes] = []
    total = 0
    while total < n:
        w = _WORDS[int(rng.integers(0, len(_WORDS)))]
        out.append(w)
        total += len(w) + 1
    return b" ".join(out)[:n]


def make_tree(
    root: Path,
    n_files: int,
    *,
    seed: int = 0,
    min_size: int = 200,
    max_size: int = 4000,
    per_dir: int = 50,
    binary_every: int = 0,
) -> list[Path]:
    """Write ``n_files`` files under ``root`` (``per_dir`` per folder); returns their paths in order."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n_files):
        d = root / f"d{i // per_dir:03d}"
        d.mkdir(parents=True, exist_ok=True)
        size = int(rng.integers(min_size, max_size + 1))
        if binary_every and i % binary_every == 0:
            data = rng.integers(0, 256, size=size, dtype=np.uint8).tobytes()
            p = d / f"f{i:05d}.bin"
        else:
            data = words(rng, size)
            p = d / f"f{i:05d}.txt"
        p.write_bytes(data)
        paths.append(p)
    return paths


def bump_mtime(path: Path | bytes, delta_ns: int = 1_000_000_000) -> None:
    """Move a file's mtime forward (so a same-size edit is visible whatever the clock granularity)."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + delta_ns))


def make_deep(root: Path, depth: int, name: str = "d") -> Path:
    """Create ``depth`` nested folders under ``root`` without recursion; returns the deepest.

    Each level is made relative to an open descriptor of its parent: resolving a 1,000-deep
    path for every mkdir made this quadratic (seconds)."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)
    return root.joinpath(*([name] * depth))


def remove_deep(top: Path) -> None:
    """Remove a tree of any depth without recursion (shutil.rmtree recurses once per level): every
    folder is first moved up into one flat holding folder, so no path is ever deep."""
    holding = top.parent / f".remove-{os.getpid()}-{top.name}"
    holding.mkdir()
    os.rename(top, holding / "0")
    queue = [holding / "0"]
    k = 1
    while queue:
        d = queue.pop()
        with os.scandir(d) as it:
            entries = list(it)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                new = holding / str(k)
                k += 1
                os.rename(e.path, new)
                queue.append(new)
            else:
                os.unlink(e.path)
        os.rmdir(d)
    os.rmdir(holding)
