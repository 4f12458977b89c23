"""Shared helpers of the similarity tests: real files fingerprinted into a real SQLite index."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np

from simscan.fingerprint import fingerprint_file
from simscan.index import FileRecord, Index
from simscan.similarity.core import budget_cutoff


def write_index(index_path: Path, files: list[Path]) -> None:
    """Fingerprint ``files`` and store them with the index's writer API."""
    recs = []
    for p in files:
        st = os.stat(p)
        recs.append(FileRecord.from_fingerprints(os.fsencode(p), st.st_dev, st.st_ino, st.st_mtime_ns,
                                                 fingerprint_file(p)))
    with Index.open(index_path) as ix:
        ix.write_files(recs)


def index_tree(index_path: Path, root: Path) -> list[Path]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    write_index(index_path, files)
    return files


def words(seed: int, n: int) -> str:
    """n pseudo-random words (deterministic), a text no two seeds share by chance."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return " ".join("".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(n))


def lengths_cutoff(lengths, cutoff: int, budget: int) -> int:
    """``core.budget_cutoff`` of posting lists given by their lengths."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return budget_cutoff(np.bincount(np.clip(lengths, 0, cutoff + 1), minlength=cutoff + 2), cutoff, budget)
