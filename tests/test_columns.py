"""The file table's packed columns (``simscan.columns``) read as the lists they replace."""

from __future__ import annotations

import os
import random

import numpy as np

from simscan.columns import ByteColumn, EncodedPaths


def _items(rng: random.Random, n: int, fixed: bool, nones: bool) -> list[bytes | None]:
    out: list[bytes | None] = []
    for _ in range(n):
        if nones and rng.random() < 0.2:
            out.append(None)
        else:
            out.append(rng.randbytes(16 if fixed else rng.randrange(0, 20)))
    return out


def test_byte_column_reads_as_its_list() -> None:
    rng = random.Random(3)
    for trial in range(24):
        items = _items(rng, rng.randrange(0, 30), fixed=trial % 2 == 0, nones=trial % 3 == 0)
        col = ByteColumn.of(items)
        assert len(col) == len(items) and list(col) == items and col == items and items == col
        assert [col[i] for i in range(-len(items), len(items))] == items + items if items else True
        assert (None in col) == (None in items)
        assert list(col[2:7]) == items[2:7]
        rows = np.array([rng.randrange(len(items)) for _ in range(10)] if items else [], np.int64)
        assert list(col.take(rows)) == [items[r] for r in rows.tolist()]
        fixed = col.fixed(16)
        if items and all(x is not None and len(x) == 16 for x in items):
            assert fixed is not None and [bytes(r) for r in fixed] == items
        else:
            assert fixed is None or not items
        other = _items(rng, rng.randrange(0, 5), fixed=True, nones=trial % 4 == 0)
        assert list(ByteColumn.concat([col, ByteColumn.of(other)])) == items + other
        lens, data = col.packed()
        assert lens.tolist() == [-1 if x is None else len(x) for x in items]
        assert data.tobytes() == b"".join(x for x in items if x is not None)
    try:
        ByteColumn.of([b"a"])[1]
    except IndexError:
        pass
    else:
        raise AssertionError("an index past the end must fail")


def test_encoded_paths_give_the_raw_bytes_back() -> None:
    raw = [b"/a/b.txt", "/d/\u00e9t\u00e9.txt".encode(), b"/x/\xff\xfe-not-utf8", b"/"]
    paths = [os.fsdecode(r) for r in raw]
    enc = EncodedPaths(paths)
    assert list(enc) == raw and enc == raw and [enc[i] for i in range(len(raw))] == raw
    assert enc[1:3] == raw[1:3] and len(enc) == len(raw)
