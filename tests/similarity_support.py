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


def bounded_cutoff(lengths, cutoff: int, params, distinct) -> int:
    """The cut-off of ``core.count_runs``, plainly: the highest whose posting lists (``lengths``) make
    at most ``params.pair_work`` incidences, unless ``distinct(cut)`` (the distinct pairs they make)
    is more than half ``params.pair_budget``: then the highest whose lists make at most the budget's
    incidences (the rule before ``pair_work``)."""
    cut = lengths_cutoff(lengths, cutoff, max(params.pair_work, params.pair_budget))
    if distinct(cut) > params.pair_budget // 2:
        cut = lengths_cutoff(lengths, cutoff, params.pair_budget)
    return cut


def span_sets(ix: Index, file_ids=None) -> dict[int, dict[int, int]]:
    """file id -> {value: dominance span} of the stored sets (ALGORITHM_VERSION 12)."""
    ids, offsets, values = ix.fingerprints(file_ids, kind="all")
    spans = ix.spans(ids, offsets)
    return {int(i): dict(zip(values[offsets[k] : offsets[k + 1]].tolist(), spans[offsets[k] : offsets[k + 1]].tolist(),
                             strict=True))
            for k, i in enumerate(ids.tolist())}


def fp_spans(fp) -> dict[int, int]:
    """{value: dominance span} of a fingerprinted file's stored set."""
    values = np.concatenate((fp.rolling, fp.anchored)).tolist()
    return dict(zip(values, fp.meta.d.tolist(), strict=True))


def at_window(values: dict[int, int], level: int) -> set[int]:
    """The values that count at a pair of ``level``: those whose span reaches that level's winnowing
    window (the reference rule of ``simscan.similarity.evidence``)."""
    from simscan.fingerprint import DEFAULT_PARAMS

    w = DEFAULT_PARAMS.winnow[level]
    return {v for v, d in values.items() if d >= w}
