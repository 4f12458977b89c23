"""An in-memory file table built from fingerprints (no index): for tests, for ad-hoc
comparisons of a handful of files, and as the reference shape of the arrays the core reads."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from simscan.extract.document import fingerprint_path
from simscan.index import FileTable
from simscan.model import Fingerprints
from simscan.similarity.compare import SCORE_KIND, fingerprint_set
from simscan.similarity.evidence import StoredSets

#: The index's own columnar file table: the in-memory one has exactly the same shape.
MemoryFileTable = FileTable


#: Whether the index's FileTable carries (device, inode) (added for files reached by several paths).
_HAS_IDENTITY = {"device", "inode"} <= {f.name for f in dataclasses.fields(FileTable)}


@dataclasses.dataclass(frozen=True)
class MemoryCsr:
    """The arrays a pair search reads, built in memory: unpacks as ``(table, csr_ids, offsets,
    values)``; ``spans`` (aligned with ``values``, None for a kind other than "all") and the
    fingerprints themselves give :meth:`evidence`."""

    table: MemoryFileTable
    ids: np.ndarray
    offsets: np.ndarray
    values: np.ndarray
    spans: np.ndarray | None
    fps: Sequence[Fingerprints]

    def __iter__(self) -> Iterator[Any]:
        return iter((self.table, self.ids, self.offsets, self.values))

    def evidence(self) -> dict[str, Any]:
        """``compute_pair_arrays``' ``spans`` and ``places`` for these files (as an index gives them)."""
        sets = StoredSets.of(list(self.fps))

        def places(rows: np.ndarray) -> tuple[StoredSets, np.ndarray]:
            return sets, np.asarray(rows, np.int64)  # CSR row r is file r here

        return {"spans": self.spans, "places": places}


def table_from_fingerprints(
    paths: Sequence[str],
    fps: Sequence[Fingerprints],
    mtimes: Sequence[int] | None = None,
    kind: str = SCORE_KIND,
    identity: tuple[Sequence[int], Sequence[int]] | None = None,
) -> MemoryCsr:
    """(table, csr_ids, offsets, values) for files with ids 1..n in the given order (a
    :class:`MemoryCsr`, which also carries their spans and evidence).

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
    spans = None
    if kind == "all" and all(f.meta is not None for f in fps):
        spans = np.concatenate([f.meta.d for f in fps]).astype(np.uint8) if fps else np.empty(0, np.uint8)  # type: ignore[union-attr]
    return MemoryCsr(table, ids, offsets, values.astype(np.uint64), spans, list(fps))


def table_from_paths(paths: Sequence[str | os.PathLike[str]], kind: str = SCORE_KIND) -> MemoryCsr:
    """Fingerprint files now and build the table (mtimes, devices and inodes from the files)."""
    ps = [os.path.abspath(os.fspath(p)) for p in paths]
    fps = [fingerprint_path(p) for p in ps]
    st = [os.stat(p) for p in ps]
    ident = ([s.st_dev for s in st], [s.st_ino for s in st])
    return table_from_fingerprints(ps, fps, [s.st_mtime_ns for s in st], kind, ident)
