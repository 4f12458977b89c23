"""Sorted simhash tables kept for look-ups, raw or compressed (issue 19; measured by
``benchmarks/sketches.py``, not used by the pair search).

The pair search finds near-identical files with a self-join of the simhashes
(``simhash_tables.simhash_pairs``): k + 1 sorts made and dropped on the way.  An index that
answers *queries* (the files within Hamming distance k of one new simhash) keeps the k + 1 tables
instead (Manku, Jain, Das Sarma, WWW 2007; DESIGN.md §3): table t holds every value rotated so
that block t of the same blocks as ``simhash_tables`` leads, sorted; a look-up reads, in each
table, the range of entries that share the query's leading block and checks their distance.
Each stored entry within distance k is reported once (by the first table whose block it shares).

Each table has a directory (the first entry of each value of its top D bits, D = log2(n / 16) up
to 16: 4 bytes a prefix), so a look-up goes to its range without a binary search.  Kept raw, a
table costs 8 bytes a value.  **Compressed** (``block`` > 0), each block of ``block`` entries keeps
its first entry whole and every following entry as the Huffman-coded position of its first bit
differing from the previous entry, then the bits after that one: about 64 - log2(n) + 2 bits an
entry for n random values, so the saving grows with the table.  A look-up decodes from the start
of the block holding its range's first entry: ``block`` trades bytes (a head and an offset: 16
bytes a block) against decoding time.  Encoding and look-ups run in the native core
(``native/core/src/simtables.rs``).
"""

from __future__ import annotations

import numpy as np

from simscan import _native
from simscan.similarity.simhash_tables import DEFAULT_K

#: Entries per compressed block: at 10 M values 64 entries cost 0.25 bytes a value of heads and
#: offsets and a look-up decodes ~32 entries more per table than it must (``benchmarks/sketches.py``).
DEFAULT_BLOCK = 64


class SimhashTables:
    """The k + 1 tables of ``values`` (uint64 simhashes, any order; a value stored twice is found
    twice).  ``block``: entries per compressed block, 0 for raw tables.  Raises ValueError unless
    0 <= k <= 63."""

    def __init__(self, values: np.ndarray, k: int = DEFAULT_K, block: int = DEFAULT_BLOCK) -> None:
        if block < 0:
            raise ValueError("block must be >= 0 (0: raw tables)")
        self._t = _native.SimhashTables(np.ascontiguousarray(values, dtype=np.uint64), k, block)
        self.k = k
        self.block = block

    def __len__(self) -> int:
        return len(self._t)

    @property
    def nbytes(self) -> int:
        """Bytes the tables hold (streams, block heads and offsets, codes)."""
        return int(self._t.nbytes)

    def lookup(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, values): for query i, ``values[offsets[i]:offsets[i + 1]]`` are the stored values
        within Hamming distance k of it, ascending."""
        return self._t.lookup(np.ascontiguousarray(np.atleast_1d(queries), dtype=np.uint64))

    def table(self, t: int) -> np.ndarray:
        """Table ``t`` decoded: the values rotated so that block t leads, ascending."""
        return self._t.table(t)
