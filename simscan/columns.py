"""Columns of the file table held without a Python object per row.

A million files' checksums and content hashes as lists of ``bytes`` cost ~50 bytes of object each
(and a pointer), their raw paths as a second list beside the decoded ones ~70 bytes a row: ~0.17 GB
that the pair search carries from start to end.  :class:`ByteColumn` holds such a column as one
buffer and offsets (16 bytes of digest and 8 of offset a row), :class:`EncodedPaths` gives the raw
paths from the decoded ones when asked (``os.fsencode`` undoes ``os.fsdecode`` exactly).  Both read as
the sequences they replace (indexing, iteration, ``len``, equality with a list), so the table's
readers do not change; ``ByteColumn.fixed`` gives the digests as one array to vectorised code.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np


class ByteColumn(Sequence[Any]):
    """``n`` byte strings (or None) in one buffer: item ``i`` is ``data[offsets[i]:offsets[i + 1]]``, or
    None where ``none[i]``."""

    __slots__ = ("_data", "_none", "_off")
    __hash__ = None  # type: ignore[assignment]  (compared by value, like the list it replaces)

    def __init__(self, data: bytes, offsets: np.ndarray, none: np.ndarray | None = None) -> None:
        self._data = data
        self._off = np.asarray(offsets, np.int64)
        self._none = none if none is not None and none.any() else None

    @classmethod
    def of(cls, items: Iterable[bytes | None]) -> ByteColumn:
        """The column of ``items``."""
        items = items if isinstance(items, list) else list(items)
        n = len(items)
        none = np.fromiter((x is None for x in items), bool, n)
        lens = np.fromiter((0 if x is None else len(x) for x in items), np.int64, n)
        off = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        data = b"".join(x for x in items if x is not None) if none.any() else b"".join(items)  # type: ignore[arg-type]
        return cls(data, off, none)

    @classmethod
    def concat(cls, parts: Sequence[ByteColumn]) -> ByteColumn:
        """The columns of ``parts`` one after the other."""
        if len(parts) == 1:
            return parts[0]
        base = np.cumsum([0] + [len(p._data) for p in parts[:-1]])
        off = np.concatenate([np.zeros(1, np.int64)] + [p._off[1:] + b for p, b in zip(parts, base)])
        nones = [p._none if p._none is not None else np.zeros(len(p), bool) for p in parts]
        none = np.concatenate(nones) if any(p._none is not None for p in parts) else None
        return cls(b"".join(p._data for p in parts), off, none)

    def __len__(self) -> int:
        return int(self._off.size - 1)

    @overload
    def __getitem__(self, i: int) -> bytes | None: ...
    @overload
    def __getitem__(self, i: slice) -> ByteColumn: ...
    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.take(np.arange(len(self))[i])
        n = len(self)
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("ByteColumn index out of range")
        if self._none is not None and self._none[i]:
            return None
        return self._data[self._off[i] : self._off[i + 1]]

    def __iter__(self) -> Iterator[bytes | None]:
        data, off = self._data, self._off.tolist()
        if self._none is None:
            return (data[a:b] for a, b in itertools.pairwise(off))
        return (None if z else data[a:b] for (a, b), z in zip(itertools.pairwise(off), self._none.tolist()))

    def __contains__(self, x: object) -> bool:
        if x is None:
            return self._none is not None
        return any(y == x for y in self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __repr__(self) -> str:
        return f"ByteColumn({list(self)!r})" if len(self) <= 8 else f"ByteColumn(<{len(self)} items>)"

    def fixed(self, width: int) -> np.ndarray | None:
        """The items as an (n, ``width``) uint8 array (read-only, no copy) when every one is ``width``
        bytes long (no None), else None."""
        n = len(self)
        if self._none is not None or len(self._data) != n * width or (n and not (np.diff(self._off) == width).all()):
            return None
        return np.frombuffer(self._data, np.uint8).reshape(n, width)

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """(each item's length, -1 for None; the items' bytes joined as uint8)."""
        lens = np.diff(self._off)
        if self._none is not None:
            lens[self._none] = -1
        return lens, np.frombuffer(self._data, np.uint8)

    def take(self, rows: np.ndarray | Sequence[int]) -> ByteColumn:
        """The column of ``rows`` (in their order)."""
        rows = np.asarray(rows, np.int64)
        lens = np.diff(self._off)
        if lens.size and (lens == lens[0]).all() and self._none is None:  # fixed width: one gather
            w = int(lens[0])
            data = np.frombuffer(self._data, np.uint8).reshape(-1, w)[rows].tobytes() if w else b""
            return ByteColumn(data, np.arange(rows.size + 1, dtype=np.int64) * w)
        return ByteColumn.of([self[r] for r in rows.tolist()])


class EncodedPaths(Sequence[bytes]):
    """The raw (bytes) paths of a list of decoded paths, each encoded when read (``os.fsencode`` of
    ``os.fsdecode``'s result gives the bytes back: undecodable bytes are kept as surrogates)."""

    __slots__ = ("paths",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [os.fsencode(p) for p in self.paths[i]]
        return os.fsencode(self.paths[int(i)])

    def __iter__(self) -> Iterator[bytes]:
        return map(os.fsencode, self.paths)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __repr__(self) -> str:
        return f"EncodedPaths(<{len(self)} paths>)"
