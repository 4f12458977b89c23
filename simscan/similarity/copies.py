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


def ranges(lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(n) for each n of ``lengths``."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)


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
    ``labels``: :func:`copy_classes` of these copy pairs, when at hand."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    copy = np.asarray(copy, bool)
    lab = copy_classes(n, a[copy], b[copy]) if labels is None else labels
    size = np.bincount(lab, minlength=n)
    if not (size > 1).any():
        return a, b, np.arange(a.size, dtype=np.int64), 0
    members = np.argsort(lab, kind="stable")  # rows by class: class c is members[start[c]:start[c] + size[c]]
    start = np.zeros(n + 1, np.int64)
    np.cumsum(size, out=start[1:])
    place = np.empty(n, np.int64)  # each row's place in its class
    place[members] = np.arange(n, dtype=np.int64) - start[lab[members]]
    na, nb = size[lab[a]], size[lab[b]]
    block = np.where(copy, 1, na * nb)
    extra = block - 1
    room = np.cumsum(extra) <= limit
    # Blocks past the limit are left out whole (their own pair stays, as listed).
    fits = room | (extra == 0)
    left_out = int(extra[~fits].sum())
    block = np.where(fits, block, 1)
    src = np.repeat(np.arange(a.size, dtype=np.int64), block)
    t = ranges(block)
    expanded = block[src] > 1
    # The listed pair first (its place in the block's row order: own), then the others in that order.
    own = (place[a] * nb + place[b])[src]
    t = np.where(t == 0, own, t - 1 + (t - 1 >= own))
    width = nb[src]
    x, y = a[src], b[src]
    x = np.where(expanded, members[start[lab[x]] + t // width], x)
    y = np.where(expanded, members[start[lab[y]] + t % width], y)
    return x, y, src, left_out
