"""Pairs after files left the index, derived from the pairs found before: no new pair search.

Moving files to the trash from the window removes them from the index, which invalidates the
cached results (``simscan.index.results``): the next load would search every pair again, seconds
on a large index, for a change that most often is "the extra copies are gone".  When the
removal is of that kind, the new pairs follow from the old ones exactly:

* Every removed file leaves at least one file of its *content class* (same bytes, or same
  normalised text) behind.  Then the set of distinct contents is unchanged, so is every
  fingerprint's document frequency over distinct contents, the common cut-off and the pair
  budget (``core.compute_pair_arrays``): the posting lists differ only by which copy stands
  for a content.
* A class whose representative changed (the old one was removed: the preference order of the
  files that stay does not change) gets a new representative whose stored fingerprints are
  those of the old one: a byte copy of it, or a file whose stored set equals that of a byte
  copy of it that stays (compared, not assumed: the same text in another encoding or layout
  can differ in its code view).  Then every pair between representatives has
  the same scores, only between other rows and perhaps the other way round (``a`` is the
  preferred file of a pair: containments swap with the ends).
* No two rows of either table are one file on disk (same device and inode), so the rows taking
  part are the rows of the table.

Anything else (a content gone entirely, hard links, rows that changed besides leaving) returns
None and the caller searches the pairs again.  ``tests/test_removal.py`` checks the result
against a full search on random removals.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from simscan.similarity.arrays import popcount64
from simscan.similarity.core import (
    PairArrays,
    concat_pairs,
    distinct_file_rows,
    exact_classes,
    file_identity,
    star_pairs,
)

#: Per-row columns of a file table that must be unchanged for a row kept across the removal.
_ARRAY_COLUMNS = ("size", "mtime_ns", "is_text", "partial", "simhash", "units", "device", "inode")
_LIST_COLUMNS = ("paths", "checksum", "content_hash")


def _kept_rows(old: Any, new: Any) -> np.ndarray | None:
    """For each row of ``new``, its row in ``old`` (same id and the same file), or None when some
    row of ``new`` is not an unchanged row of ``old``."""
    old_ids = np.asarray(old.ids, dtype=np.int64)
    new_ids = np.asarray(new.ids, dtype=np.int64)
    if new_ids.size > old_ids.size:
        return None
    order = np.argsort(old_ids, kind="stable")
    pos = np.minimum(np.searchsorted(old_ids[order], new_ids), max(old_ids.size - 1, 0))
    if old_ids.size == 0:
        return None if new_ids.size else np.empty(0, np.int64)
    rows = order[pos]
    if not np.array_equal(old_ids[rows], new_ids) or np.unique(rows).size != rows.size:
        return None
    for name in _ARRAY_COLUMNS:
        a, b = getattr(old, name, None), getattr(new, name, None)
        if a is None or b is None or not np.array_equal(np.asarray(a)[rows], np.asarray(b)):
            return None
    if rows.size == 0:
        return rows
    pick = operator.itemgetter(*rows.tolist())
    for name in _LIST_COLUMNS:
        a, b = getattr(old, name), getattr(new, name)
        got = pick(a)
        if (tuple(got) if rows.size > 1 else (got,)) != tuple(b):
            return None
    return rows


def _same_sets(
    old: Any, new: Any, cls_old: Any, kept: np.ndarray, moved: np.ndarray, new_rep: np.ndarray,
    same_fingerprints: Callable[[np.ndarray, np.ndarray], bool],
) -> bool:
    """Whether the new representative of each ``moved`` class stores the fingerprints its old
    representative (removed) stored.  A byte copy of the old one does (fingerprints are a function
    of the bytes); another member of the class (the same text in another encoding or layout) is
    compared with a byte copy of the old representative that stays in the index, and without
    one the answer is no."""
    old_rep = cls_old.rep[moved]
    n_rows = new_rep[moved]
    for col in ("units", "simhash"):
        if not np.array_equal(np.asarray(getattr(old, col))[old_rep], np.asarray(getattr(new, col))[n_rows]):
            return False
    exact_kept = cls_old.exact[kept]  # exact class of each row of ``new``
    first_kept = {}
    for row, e in enumerate(exact_kept.tolist()):
        first_kept.setdefault(e, row)
    a: list[int] = []
    b: list[int] = []
    new_ids = np.asarray(new.ids, dtype=np.int64)
    for r, n in zip(old_rep.tolist(), n_rows.tolist()):
        e = int(cls_old.exact[r])
        if int(exact_kept[n]) == e:
            continue  # a byte copy
        twin = first_kept.get(e)
        if twin is None:
            return False
        a.append(int(new_ids[twin]))
        b.append(int(new_ids[n]))
    return not a or same_fingerprints(np.array(a, np.int64), np.array(b, np.int64))


def pairs_after_removal(
    old_files: Any,
    old_pairs: PairArrays,
    new_files: Any,
    same_fingerprints: Callable[[np.ndarray, np.ndarray], bool],
) -> PairArrays | None:
    """The pairs ``core.compute_pair_arrays`` (by view) finds on ``new_files``, derived from
    ``old_pairs`` (every pair it found on ``old_files`` down to some floor, rows of ``old_files``)
    when ``new_files`` is ``old_files`` less some rows and the conditions of the module docstring
    hold; None otherwise.  The result holds every pair down to the same floor, rows of
    ``new_files``, unordered.

    same_fingerprints(a_ids, b_ids): whether each indexed file ``a_ids[k]`` stores the same
    fingerprints as ``b_ids[k]``, for all k (asked of the few classes whose representative left
    and whose new one is not a byte copy of it).
    """
    if file_identity(old_files) is None or file_identity(new_files) is None:
        return None
    if distinct_file_rows(old_files) is not None or distinct_file_rows(new_files) is not None:
        return None  # several paths of one file: which one takes part may change
    kept = _kept_rows(old_files, new_files)
    if kept is None:
        return None
    cls_old = exact_classes(old_files)
    n_cls = cls_old.rep.size
    alive = np.zeros(n_cls, dtype=bool)
    alive[cls_old.content[kept]] = True
    if not alive.all():
        return None  # a content left the index: document frequencies may have changed
    cls_new = exact_classes(new_files)
    # Content classes of the two tables, matched through the rows they keep (a class is a
    # content hash, so the matching is one to one).
    to_new = np.empty(n_cls, np.int64)
    to_new[cls_old.content[kept]] = cls_new.content
    new_rep = cls_new.rep[to_new]  # per old class: its representative row in ``new_files``
    old_ids = np.asarray(old_files.ids, dtype=np.int64)
    new_ids = np.asarray(new_files.ids, dtype=np.int64)
    moved = np.flatnonzero(old_ids[cls_old.rep] != new_ids[new_rep])
    if moved.size and not _same_sets(old_files, new_files, cls_old, kept, moved, new_rep, same_fingerprints):
        return None
    near = old_pairs.kind >= 2  # pairs between representatives (the rest are copies: redone)
    a = new_rep[cls_old.content[old_pairs.a[near]]]
    b = new_rep[cls_old.content[old_pairs.b[near]]]
    # ``a`` is the preferred file of a pair: the containments follow their files.
    swap = cls_new.priority[a] > cls_new.priority[b]
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    ca, cb = old_pairs.containment_a[near], old_pairs.containment_b[near]
    sim = np.asarray(new_files.simhash, dtype=np.uint64)
    between = PairArrays(
        a,
        b,
        old_pairs.resemblance[near],
        np.where(swap, cb, ca),
        np.where(swap, ca, cb),
        popcount64(sim[a] ^ sim[b]),
        old_pairs.exact[near],
        old_pairs.kind[near],
        old_pairs.view[near],
        old_pairs.longest[near],
        old_pairs.shared[near],
    )
    star = star_pairs(cls_new, sim)
    return concat_pairs(star, between)
