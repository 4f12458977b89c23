"""An in-memory file table built from fingerprints (no index): for tests, for ad-hoc
comparisons of a handful of files, and as the reference shape of the arrays the core reads."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from simscan.extract.document import fingerprint_path
from simscan.index import FileTable
from simscan.model import Fingerprints
from simscan.similarity.compare import SCORE_KIND, fingerprint_set

#: The index's own columnar file table: the in-memory one has exactly the same shape.
MemoryFileTable = FileTable


#: Whether the index's FileTable carries (device, inode) (added for files reached by several paths).
_HAS_IDENTITY = {"device", "inode"} <= {f.name for f in dataclasses.fields(FileTable)}


def table_from_fingerprints(
    paths: Sequence[str],
    fps: Sequence[Fingerprints],
    mtimes: Sequence[int] | None = None,
    kind: str = SCORE_KIND,
    identity: tuple[Sequence[int], Sequence[int]] | None = None,
) -> tuple[MemoryFileTable, np.ndarray, np.ndarray, np.ndarray]:
    """(table, csr_ids, offsets, values) for files with ids 1..n in the given order.

    identity: (devices, inodes) of the files; default: unique values (device 0, inode = id), so
    that every path counts as a file of its own."""
    n = len(paths)
    ids = np.arange(1, n + 1, dtype=np.int64)
    sets = [fingerprint_set(f, kind) for f in fps]
    offsets = np.zeros(n + 1, np.int64)
    offsets[1:] = np.cumsum([s.size for s in sets])
    values = np.concatenate(sets) if sets else np.empty(0, np.uint64)
    dev, ino = identity if identity is not None else (np.zeros(n, np.int64), ids)
    extra = {"device": np.asarray(dev, np.int64), "inode": np.asarray(ino, np.int64)} if _HAS_IDENTITY else {}
    table = MemoryFileTable(
        ids=ids,
        paths=list(paths),
        raw_paths=[os.fsencode(p) for p in paths],
        size=np.array([f.size for f in fps], np.int64),
        mtime_ns=np.array(mtimes if mtimes is not None else [0] * n, np.int64),
        is_text=np.array([f.is_text for f in fps], bool),
        encoding=[f.encoding for f in fps],
        checksum=[f.checksum for f in fps],
        partial=np.array([f.partial for f in fps], np.int64),
        content_hash=[f.content_hash for f in fps],
        simhash=np.array([f.simhash for f in fps], np.uint64),
        fp_count=np.array([f.fingerprint_count for f in fps], np.int64),
        units=np.array([f.units for f in fps], np.int64),
        **extra,
    )
    return table, ids, offsets, values.astype(np.uint64)


def table_from_paths(
    paths: Sequence[str | os.PathLike[str]], kind: str = SCORE_KIND
) -> tuple[MemoryFileTable, np.ndarray, np.ndarray, np.ndarray]:
    """Fingerprint files now and build the table (mtimes, devices and inodes from the files)."""
    ps = [os.path.abspath(os.fspath(p)) for p in paths]
    fps = [fingerprint_path(p) for p in ps]
    st = [os.stat(p) for p in ps]
    ident = ([s.st_dev for s in st], [s.st_ino for s in st])
    return table_from_fingerprints(ps, fps, [s.st_mtime_ns for s in st], kind, ident)
