"""Copies' inherited pairs, as columns: one expansion for the command line, the API and the window.

The pair search pairs one file of each set of copies (its representative) with other files, and each
copy only with it: a set of n copies is a star of n - 1 pairs, never n².  A copy has the same
fingerprints, hence the same scores, so each pair (x, y) of two files that are not copies stands for
every file of x's set with every file of y's.  ``simscan pairs``, ``find_pairs(expand_copies=True)``
and the window's pairs list show them so, through :func:`expand_copies`.
"""

from __future__ import annotations

import numpy as np

#: Most pairs :func:`expand_copies` adds by default (a class of n copies paired with a class of m
#: copies becomes n·m pairs; 10^6 lines of output is ~200 MB of JSON).
MAX_COPY_PAIRS = 1_000_000


def copy_classes(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Label (the smallest row) of each of ``n`` rows' class of copies, the copy pairs (``a[k]``,
    ``b[k]``) joining rows: connected components by label propagation with pointer jumping (the pair
    search gives stars, one round; any graph converges)."""
    lab = np.arange(n, dtype=np.int64)
    if a.size == 0:
        return lab
    while True:
        low = np.minimum(lab[a], lab[b])
        new = lab.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        new = new[new]
        if np.array_equal(new, lab):
            return lab
        lab = new


class CopyBlocks:
    """The pairs of :func:`expand_copies`, made a range at a time (:meth:`take`): the blocks' sizes are
    known from the listed pairs alone, so a writer holds one part of the output, never all of it
    (two sets of 2,000 copies, ``--max-copy-pairs 5000000``: 4·10^6 pairs, ``simscan pairs`` peaked at
    309 MB holding them at once, 58 MB a part at a time).  ``size``: pairs in all;
    ``left_out``: pairs not added (``limit``).  Arguments as :func:`expand_copies`'s."""

    def __init__(
        self, a: np.ndarray, b: np.ndarray, copy: np.ndarray, n: int, limit: int = MAX_COPY_PAIRS,
        labels: np.ndarray | None = None,
    ) -> None:
        self.a, self.b = a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        copy = np.asarray(copy, bool)
        lab = copy_classes(n, a[copy], b[copy]) if labels is None else np.asarray(labels, np.int64)
        size = np.bincount(lab, minlength=n)
        self.left_out = 0
        self.size = int(a.size)
        self.block: np.ndarray | None = None
        if not (size > 1).any():
            return
        self.lab = lab
        self.members = np.argsort(lab, kind="stable")  # rows by class: class c is members[start[c]:start[c] + size[c]]
        self.start = np.zeros(n + 1, np.int64)
        np.cumsum(size, out=self.start[1:])
        place = np.empty(n, np.int64)  # each row's place in its class
        place[self.members] = np.arange(n, dtype=np.int64) - self.start[lab[self.members]]
        self.nb = size[lab[b]]
        block = np.where(copy, 1, size[lab[a]] * self.nb)
        extra = block - 1
        # Blocks past the limit are left out whole (their own pair stays, as listed).
        fits = np.cumsum(extra) <= limit
        self.left_out = int(extra[~fits].sum())
        self.block = np.where(fits, block, 1)
        self.end = np.cumsum(self.block)  # output pairs up to the end of each block
        self.size = int(self.end[-1]) if self.end.size else 0
        # The listed pair's place in its block's row order: it comes first, then the others in that order.
        self.own = place[a] * self.nb + place[b]

    def take(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Output pairs ``lo`` to ``hi`` (at most :attr:`size`): ``(a, b, source)``."""
        hi = min(hi, self.size)
        if self.block is None:
            return self.a[lo:hi], self.b[lo:hi], np.arange(lo, hi, dtype=np.int64)
        k = np.arange(lo, hi, dtype=np.int64)
        src = np.searchsorted(self.end, k, side="right")
        t = k - (self.end[src] - self.block[src])  # place in the block
        expanded = self.block[src] > 1
        own = self.own[src]
        t = np.where(t == 0, own, t - 1 + (t - 1 >= own))
        width = self.nb[src]
        x, y = self.a[src], self.b[src]
        x = np.where(expanded, self.members[self.start[self.lab[x]] + t // width], x)
        y = np.where(expanded, self.members[self.start[self.lab[y]] + t % width], y)
        return x, y, src


def expand_copies(
    a: np.ndarray, b: np.ndarray, copy: np.ndarray, n: int, limit: int = MAX_COPY_PAIRS,
    labels: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Every pair of files, copies included: ``(a, b, source, left_out)``.

    ``a`` / ``b``: the listed pairs' rows (of ``n``), in their order; ``copy``: bool per pair, a copy
    pair (exact / content).  Each pair that is not a copy pair becomes a *block*: the pair itself,
    then the pairs its files' copies inherit (every file of a's set with every file of b's, a keeping
    its side, in row order), so the order of the list is kept.  Copy pairs stay as they are (a star).
    ``source[k]``: the index of the listed pair that output pair ``k`` comes from (its scores).
    At most ``limit`` pairs are added, in the pairs' order: once a block would pass it, that block and
    every later one keep their own pair only; ``left_out`` counts the pairs not added.
    ``labels``: :func:`copy_classes` of these copy pairs, when at hand.  (:class:`CopyBlocks`: a range
    of them at a time.)"""
    blocks = CopyBlocks(a, b, copy, n, limit, labels)
    return (*blocks.take(0, blocks.size), blocks.left_out)
