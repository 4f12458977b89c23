"""Groups from pairs: star clustering around reference files (pure, in memory, fast).

Rules (documented for users):

* Files joined by "exact" or "content" pairs are one *unit* (identity is transitive): a *copy
  set*, kept together wherever it sits (the reference's copies, or copies of a member), its files
  in keep-rule order, the first the one kept (``GroupArrays.m_keeper``).  Empty files are never
  grouped (``empty_rows`` lists them apart).
* Files are ordered by the keep rules (``keep.KeepRules``: under a user-marked reference folder
  first, then by default the best encoding, the oldest modification time, the shortest path; then
  path order); a unit's reference candidate is its first file.
* Units are visited under a reference folder first, then by *containment tier* (a unit that holds a
  partner of a "contained" pair and lies in none, e.g. the source article students quote, before
  the rest, and a unit that lies in a partner, the quoting answer, last), then in keep-rule order
  of their first file, so the file the others are contained in leads their group.
* References: units are visited in that order; a unit not yet covered becomes
  a reference when it has copies, or partners (pairs whose best score is >= the threshold)
  not yet covered, which it then covers, or a covered partner more similar to it than to
  every reference so far.  A covered unit never becomes a reference: the oldest of several
  versions stays the reference of all of them.
* Members: every covered unit joins the reference it is *most* similar to (equal scores: the
  preferred reference), not the first one that covered it, so an edited copy sits with its
  original rather than with an unrelated file it shares a header with.  A reference whose
  partners all went to better references takes back its best partner whose reference keeps
  another member, if the partner may move (below).
* A unit still in no group although it has partners (e.g. two excerpts of one document: the
  older excerpt covered the document, the other excerpt is like the document only) joins its
  best partner that leads a group; else it takes its best partner that may move from its
  reference when that reference keeps a group without it; else that partner leads both (its old
  reference and this unit become its members).  A member may move only away from a reference
  that is not under a reference folder (the person chose it), and only when it keeps at least
  half its percentage (``MOVE_KEEPS``; 100 % -> 86 % for the excerpts).  Else the unit stays
  in no group, so that a student's 50 % copy of a text is not moved away to show another's 17 %;
  the pairs themselves stay available.  Every member is similar to its own reference (>= the threshold):
  no chaining (a~b, b~c with a not similar to c never puts c in a's group through b; here b
  leads a and c).  A reference left without members or copies is no group.
* Paths of one file on disk (same device and inode: hard links, a folder indexed through a
  symbolic link too) are one file: never paired with each other, and only the preferred of
  them (by the rules above) joins a group.
* Each member's percentage is the best score (max of resemblance and both containments)
  of the pair (reference, member); members that are copies of each other share it.

Implementation: :func:`group_rows` works on pair columns and returns :class:`GroupArrays`
(no Python object per pair or member; units of copies without other partners are grouped
with array operations, and the units with pairs to other units go through the sequential pass,
native: ``simscan_core::grouping``).  :func:`group_pairs` builds ``Group`` / ``Member`` / ``Pair``
objects from them for the CLI and the API.  The 138,895 groups of a million files: 0.5-0.6 s and
~110 MB above the pairs (1.3-1.6 s and ~300 MB when the pass was Python).
``tests/grouping_reference.py`` keeps a plain object-based implementation of these rules, and
the tests check that both give the same groups.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from simscan import _native
from simscan.similarity.arrays import argsort_rows
from simscan.similarity.arrays import components as _components
from simscan.similarity.core import PairArrays, file_identity, passage_value, under_roots
from simscan.similarity.keep import DEFAULT_KEEP, KeepRules
from simscan.similarity.types import (
    KIND_CODE,
    KINDS,
    VIEWS,
    FileTableLike,
    Group,
    Member,
    Pair,
    member_kind_of,
    passes,
)

#: A member is moved to another reference to give that one a group only when it keeps at least this
#: share of its percentage (two excerpts of one source: 100 % -> 86 % is moved; a 50 % member is not
#: moved to show a 17 % one), and never away from a reference under a user-marked reference folder.
MOVE_KEEPS = 0.5


@dataclass(frozen=True, slots=True)
class _Columns:
    """The columns of a pair list that grouping needs (ids, best score, kind code)."""

    a_id: np.ndarray
    b_id: np.ndarray
    best: np.ndarray
    kind: np.ndarray
    a_in_b: np.ndarray
    b_in_a: np.ndarray


_CACHE: list[tuple[Sequence[Pair], int, _Columns]] = []


def _columns(pairs: Sequence[Pair]) -> _Columns:
    """Columns of ``pairs``, remembered for the last list seen: the GUI regroups the same list
    on every move of its threshold slider, and reading a million attributes costs more than
    the grouping itself.  Keyed by the list object and its length (pair lists are not edited
    in place)."""
    entry = _CACHE[0] if _CACHE else None  # one read: two threads may group at once
    if entry is not None and entry[0] is pairs and entry[1] == len(pairs):
        return entry[2]
    m = len(pairs)
    a_id = np.fromiter(map(attrgetter("a_id"), pairs), dtype=np.int64, count=m)
    b_id = np.fromiter(map(attrgetter("b_id"), pairs), dtype=np.int64, count=m)
    r = np.fromiter(map(attrgetter("resemblance"), pairs), dtype=np.float64, count=m)
    ca = np.fromiter(map(attrgetter("containment_a"), pairs), dtype=np.float64, count=m)
    cb = np.fromiter(map(attrgetter("containment_b"), pairs), dtype=np.float64, count=m)
    names, inv = np.unique(np.array([p.kind for p in pairs], dtype=object).astype(str), return_inverse=True)
    codes = np.array([KIND_CODE.get(k, 2) for k in names.tolist()], dtype=np.int8)
    cols = _Columns(a_id, b_id, np.maximum(r, np.maximum(ca, cb)), codes[inv] if m else np.empty(0, np.int8),
                    ca > cb, cb > ca)
    _CACHE[:] = [(pairs, m, cols)]
    return cols


def _rows(ids: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Row of each id of ``want`` in ``ids`` (-1 if absent)."""
    if ids.size == 0:
        return np.full(want.size, -1, np.int64)
    order = np.argsort(ids, kind="stable")
    pos = np.minimum(np.searchsorted(ids[order], want), ids.size - 1)
    rows = order[pos]
    return np.where(ids[rows] == want, rows, -1)


def _distinct_rows(n: int, *parts: np.ndarray) -> np.ndarray:
    """The distinct values (rows, 0 <= v < n) of ``parts``, ascending: one boolean mask, O(n)
    (``np.unique`` hashes or sorts: 50 ms for 200,000 rows against 1 ms)."""
    mask = np.zeros(n, dtype=bool)
    for p in parts:
        mask[p] = True
    return np.flatnonzero(mask)


def _one_path_per_file(
    files: FileTableLike, pa: np.ndarray, pb: np.ndarray, ok: np.ndarray, rank: np.ndarray
) -> np.ndarray:
    """Mask of the pairs to keep so that one file on disk (same device and inode: hard links, a
    folder indexed through a symbolic link too) is never paired with itself and only its
    preferred path (lowest ``rank`` among the paths the pairs name) joins a group: a group
    holding both paths would offer to delete "the copy", which is the only file."""
    ident = file_identity(files)
    if ident is None or not ok.any():
        return np.ones(pa.size, dtype=bool)
    dev, ino = ident
    sa, sb = np.where(ok, pa, 0), np.where(ok, pb, 0)
    keep = ~((dev[sa] == dev[sb]) & (ino[sa] == ino[sb]) & (ino[sa] != 0))
    rows = _distinct_rows(len(files.paths), sa[ok & keep], sb[ok & keep])
    if rows.size < 2:
        return keep
    o = rows[np.lexsort((rank[rows], ino[rows], dev[rows]))]
    dup = np.zeros(o.size, dtype=bool)
    dup[1:] = (dev[o[1:]] == dev[o[:-1]]) & (ino[o[1:]] == ino[o[:-1]]) & (ino[o[1:]] != 0)
    if dup.any():
        alias = np.zeros(len(files.paths), dtype=bool)
        alias[o[dup]] = True
        keep &= ~(alias[sa] | alias[sb])
    return keep


@dataclass(frozen=True, slots=True)
class GroupArrays:
    """Groups as columns over the rows of a file table (no Python object per member).

    Group ``g`` owns members ``g_start[g]:g_start[g+1]``: its reference first, then the
    reference's copies (same unit), then the other units' files, best score first (a unit's
    copies together).  m_row: file-table row.  m_sim: percent, the best score of the pair
    (reference, member), 100 for the reference and its copies.  m_kind: code into ``KINDS``
    (the reference: "exact"; its copies: exact or content; others: the pair's kind).
    m_pair: index, in the pair columns grouped, of the pair the member's scores come from
    (-1 for the reference and its copies, whose scores are 100).  m_swap: that pair reads
    (member, reference), so its containments swap to read (reference, member).
    g_kind: code of the group's kind (see ``Group``).
    m_set: the member's *copy set* (its unit: the smallest file-table row of the files joined to
    it by exact / content pairs; the same at every threshold), whose files sit together in the
    group, the one to keep first (keep rules); m_keeper: the member is the first of its set in
    the group (the file kept; every file of a set of one is its keeper).  A copy set is nested in
    a group wherever it sits: the reference's own copies, or copies of a member.
    """

    g_start: np.ndarray
    g_kind: np.ndarray
    m_row: np.ndarray
    m_sim: np.ndarray
    m_kind: np.ndarray
    m_pair: np.ndarray
    m_swap: np.ndarray
    m_set: np.ndarray
    m_keeper: np.ndarray

    @property
    def n_groups(self) -> int:
        return int(self.g_start.size) - 1

    @property
    def n_members(self) -> int:
        return int(self.m_row.size)


def _empty_groups() -> GroupArrays:
    e = np.empty(0, np.int64)
    return GroupArrays(np.zeros(1, np.int64), np.empty(0, np.int8), e, np.empty(0), np.empty(0, np.int8), e.copy(),
                       np.empty(0, dtype=bool), e.copy(), np.empty(0, dtype=bool))


def containment_tier(n: int, unit: np.ndarray, pa: np.ndarray, pb: np.ndarray, a_in_b: np.ndarray,
                     b_in_a: np.ndarray) -> np.ndarray:
    """Per row, the tier of its unit as a reference candidate, from the "contained" pairs between
    units (``a_in_b``: file a lies in file b): 0 when the unit holds a partner and lies in none (a
    source that answers quote), 2 when it lies in a partner and holds none (the quoting answer,
    an excerpt), else 1.  References are chosen tier by tier, so the file the others are contained
    in leads their group."""
    holds = np.zeros(n, dtype=bool)
    inside = np.zeros(n, dtype=bool)
    ua, ub = unit[pa], unit[pb]
    x = a_in_b & (ua != ub)
    inside[ua[x]] = True
    holds[ub[x]] = True
    y = b_in_a & (ua != ub)
    inside[ub[y]] = True
    holds[ua[y]] = True
    tier = np.ones(n, np.int64)
    tier[holds & ~inside] = 0
    tier[inside & ~holds] = 2
    return tier


def group_rows(
    a_row: np.ndarray,
    b_row: np.ndarray,
    best: np.ndarray,
    kind: np.ndarray,
    files: FileTableLike,
    *,
    min_similarity: float,
    reference_roots: Sequence[str] = (),
    a_in_b: np.ndarray | None = None,
    b_in_a: np.ndarray | None = None,
    keep: KeepRules = DEFAULT_KEEP,
    scope: np.ndarray | None = None,
) -> GroupArrays:
    """The grouping rules of this module on pair columns: ``a_row`` / ``b_row`` file-table rows
    (-1: a file absent from the table, the pair is ignored), ``best`` percent, ``kind`` codes into
    ``KINDS``; ``a_in_b`` / ``b_in_a``: per pair, file a lies in file b (a "contained" pair whose
    containment_a is the larger) / the converse (None: no direction known, every unit in tier 1);
    ``keep``: the keep rules that order the files (``keep.rank``); ``scope``: bool per row, the
    rows that may be grouped (None: all; the window's listed folders).  Empty files are never
    grouped (every empty file is a copy of every other: :func:`empty_rows` lists them apart).
    Vectorised except the pass over the units that have pairs with other units (the choice of
    references is sequential by nature: native, ``simscan_core::grouping``); units of copies
    alone are grouped with array operations."""
    n = len(files.paths)
    pa_all = np.asarray(a_row, dtype=np.int64)
    pb = np.asarray(b_row, dtype=np.int64)
    best_all = np.asarray(best, dtype=np.float64)
    kind_all = np.asarray(kind, dtype=np.int8)
    pa = pa_all
    ok = (pa >= 0) & (pb >= 0) & (pa != pb) & (passes(best_all, min_similarity) | (kind_all <= 1))
    ok &= pairs_shown(files, np.maximum(pa, 0), np.maximum(pb, 0))
    if scope is not None:
        usable = np.asarray(scope, dtype=bool)
        ok &= usable[np.maximum(pa, 0)] & usable[np.maximum(pb, 0)]
    if not ok.any():
        return _empty_groups()
    # Rows under a reference folder: preferred as references, and their members never move (below).
    preferred = under_roots(list(files.paths), tuple(reference_roots)) if reference_roots else None
    rank = keep.rank(files, preferred)
    ok &= _one_path_per_file(files, pa, pb, ok, rank)

    idx = np.flatnonzero(ok)
    pa, pb, bst, knd = pa[idx], pb[idx], best_all[idx], kind_all[idx]

    same = knd <= 1
    unit = _components(n, pa[same], pb[same])
    if a_in_b is not None and b_in_a is not None:
        cont = knd == KIND_CODE["contained"]
        tier = containment_tier(n, unit, pa[cont], pb[cont], np.asarray(a_in_b, bool)[idx][cont],
                                np.asarray(b_in_a, bool)[idx][cont])
    else:
        tier = np.ones(n, np.int64)
    in_unit = np.zeros(n, dtype=bool)
    in_unit[pa[same]] = True
    in_unit[pb[same]] = True

    # Edges between different units, both directions, grouped by source unit (their order
    # within a source does not matter: ties are broken by preference below).
    e = ~same
    ua, ub = unit[pa[e]], unit[pb[e]]
    eb, ep = bst[e], idx[e]
    diff = ua != ub
    ua, ub, eb, ep = ua[diff], ub[diff], eb[diff], ep[diff]
    # (int32: half the bytes of ~2 edges a pair, and a faster sort; file tables hold < 2^31 rows)
    src = np.concatenate((ua, ub)).astype(np.int32)
    dst = np.concatenate((ub, ua)).astype(np.int32)
    wb = np.concatenate((eb, eb))
    wp = np.concatenate((ep, ep))
    if src.size:
        o = argsort_rows(src)
        src, dst, wb, wp = src[o], dst[o], wb[o], wp[o]

    # Participating rows in preference order; each unit's rows form a block (preference order
    # inside), and units are visited by tier (a unit under a reference folder first, then the
    # file the others are contained in: ``containment_tier``) and then in the order of their best
    # row.
    part = _distinct_rows(n, np.flatnonzero(in_unit), src)
    part = part[np.argsort(rank[part], kind="stable")]
    pu = unit[part]
    units, first = np.unique(pu, return_index=True)  # ascending unit labels
    head = part[first]
    pref_u = preferred[head] if preferred is not None else np.zeros(units.size, dtype=bool)
    visit = units[np.lexsort((first, tier[units], ~pref_u))]
    ob = argsort_rows(pu)
    blk_rows = part[ob]
    blk_start = np.searchsorted(pu[ob], units)
    blk_count = np.diff(np.append(blk_start, part.size))
    count_of = np.zeros(n, np.int64)
    count_of[units] = blk_count

    e_start = np.searchsorted(src, visit)
    e_end = np.searchsorted(src, visit, side="right")
    has_edges = e_end > e_start

    # Units without pairs to other units: a group when they hold copies, unaffected by others.
    lone = np.flatnonzero(~has_edges & (count_of[visit] >= 2))
    g_pos: list[np.ndarray] = [lone]
    b_pos: list[np.ndarray] = [lone]
    b_seq: list[np.ndarray] = [np.zeros(lone.size, np.int64)]
    b_unit: list[np.ndarray] = [visit[lone]]
    b_pair: list[np.ndarray] = [np.full(lone.size, -1, np.int64)]

    # The sequential pass over the units with pairs, native (``simscan_core::grouping``, the rules
    # of this module's docstring).  Phase 1 chooses the references: in preference order, a unit not
    # yet covered becomes one when it has copies, uncovered partners (which it covers) or a covered
    # partner more similar to it than to any reference so far.  Phase 2 puts every covered unit in
    # the group of the reference it is most similar to (ties: the preferred reference), not of the
    # first one that reached it: a file 97 % like its original is not shown at 16 % against a file
    # it shares a header with.  Then references left without members take one back, and units still
    # in no group are placed (``MOVE_KEEPS``).
    ep_pos = np.flatnonzero(has_edges)
    # Units holding a file under a reference folder: the person chose them as references.
    marked = np.zeros(n, np.uint8)
    if preferred is not None:
        marked[unit[np.flatnonzero(preferred)]] = 1
    lp, lbp, lbs, lbu, lbk = _native.place_groups(
        n, ep_pos.astype(np.int64), visit[ep_pos].astype(np.int64), e_start[ep_pos].astype(np.int64),
        e_end[ep_pos].astype(np.int64), dst, wb.astype(np.float64), wp.astype(np.int64), count_of, marked, MOVE_KEEPS,
    )
    g_pos.append(lp)
    b_pos.append(lbp)
    b_seq.append(lbs)
    b_unit.append(lbu)
    b_pair.append(lbk)

    gp = np.sort(np.concatenate(g_pos))
    ng = gp.size
    if ng == 0:
        return _empty_groups()
    bp, bs, bu, bpi = (np.concatenate(x) for x in (b_pos, b_seq, b_unit, b_pair))
    bo = np.lexsort((bs, bp))
    bp, bs, bu, bpi = bp[bo], bs[bo], bu[bo], bpi[bo]
    b_group = np.searchsorted(gp, bp)
    # Members: each block's unit rows, in block order.
    bk = np.searchsorted(units, bu)
    cnt = blk_count[bk]
    m = int(cnt.sum())
    m_block = np.repeat(np.arange(bu.size, dtype=np.int64), cnt)
    first_of_block = np.cumsum(cnt) - cnt
    m_row = blk_rows[np.repeat(blk_start[bk] - first_of_block, cnt) + np.arange(m, dtype=np.int64)]
    m_group = b_group[m_block]
    g_first_block = np.searchsorted(b_group, np.arange(ng))
    g_start = np.append(first_of_block[g_first_block], m).astype(np.int64)

    m_pair = bpi[m_block]
    neighbour = m_pair >= 0
    is_ref = np.zeros(m, dtype=bool)
    is_ref[g_start[:-1]] = True
    ref_row = m_row[g_start[:-1]][m_group]
    m_sim = np.where(neighbour, best_all[np.maximum(m_pair, 0)], 100.0)
    m_kind = np.where(neighbour, kind_all[np.maximum(m_pair, 0)], 0).astype(np.int8)
    copies = np.flatnonzero(~neighbour & ~is_ref)
    if copies.size:
        ck = files.checksum
        differs = [ck[r] != ck[q] for r, q in zip(m_row[copies].tolist(), ref_row[copies].tolist())]
        m_kind[copies[np.asarray(differs, dtype=bool)]] = KIND_CODE["content"]
    # The pair reads (member, reference) when its a-side is not in the reference's unit.
    m_swap = neighbour & (unit[pa_all[np.maximum(m_pair, 0)]] != unit[ref_row])
    # Group kind: exact < content < contained < near; the strongest present wins.
    prio = np.array([0, 1, 3, 2], np.int8)  # by kind code: exact, content, near, contained
    back = np.array([0, 1, 3, 2], np.int8)  # priority -> kind code
    g_kind = back[np.maximum.reduceat(prio[m_kind], g_start[:-1])]
    m_keeper = np.zeros(m, dtype=bool)
    m_keeper[first_of_block] = True
    return GroupArrays(g_start, g_kind, m_row, m_sim, m_kind, m_pair, m_swap, unit[m_row], m_keeper)


def empty_mask(files: FileTableLike) -> np.ndarray:
    """Per row, whether the file is empty (0 bytes): every empty file has the same (no) content."""
    return np.asarray(files.size) == 0


def pairs_shown(files: FileTableLike, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair (rows ``a``, ``b``), whether groups, ``pairs`` and the window list it: never with an empty
    file (:func:`empty_mask`).  (A file with bytes but no text that counts is a copy of its byte copies
    alone: ``core.exact_classes``.)"""
    empty = empty_mask(files)
    return ~empty[np.asarray(a, np.int64)] & ~empty[np.asarray(b, np.int64)]


def empty_rows(files: FileTableLike, scope: np.ndarray | None = None) -> np.ndarray:
    """Rows of the empty files (:func:`empty_mask`), which groups leave out: every empty file has the
    same (no) content, so a group of them would be one "duplicate" group of thousands of unrelated files
    (rmlint and Czkawka list them as their own category too).  ``scope`` as for :func:`group_rows`."""
    empty = empty_mask(files)
    if scope is not None:
        empty &= np.asarray(scope, dtype=bool)
    return np.flatnonzero(empty)


def copy_set_extras(ga: GroupArrays, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(per group, the bytes of the files of its copy sets but each set's keeper: what removing the
    extra copies frees; per group, how many such extra copies).  The copy sets do not depend on the
    threshold, and each lies in one group, so the totals are the same at every threshold."""
    if ga.n_groups == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    heads = ga.g_start[:-1]
    extra = ~ga.m_keeper
    sz = np.asarray(size, dtype=np.int64)[ga.m_row]
    return np.add.reduceat(np.where(extra, sz, 0), heads), np.add.reduceat(extra.astype(np.int64), heads)


def group_pair_arrays(
    pairs: PairArrays,
    files: FileTableLike,
    *,
    min_similarity: float,
    reference_roots: Sequence[str] = (),
    keep: KeepRules = DEFAULT_KEEP,
    scope: np.ndarray | None = None,
) -> GroupArrays:
    """:func:`group_rows` on scored pair columns (rows of ``files``), e.g. from
    ``core.compute_pair_arrays`` after ``core.sorted_rounded`` (the order and 3-decimal rounding
    of ``find_pairs``, which ``group_pairs`` sees, so both give the same groups)."""
    return group_rows(pairs.a, pairs.b, pairs.best, pairs.kind, files, min_similarity=min_similarity,
                      reference_roots=reference_roots, a_in_b=pairs.containment_a > pairs.containment_b,
                      b_in_a=pairs.containment_b > pairs.containment_a, keep=keep, scope=scope)


def group_pairs(
    pairs: Sequence[Pair],
    files: FileTableLike,
    *,
    min_similarity: float,
    reference_roots: Sequence[str] = (),
    keep: KeepRules = DEFAULT_KEEP,
) -> list[Group]:
    """Groups of the pairs whose best score is >= ``min_similarity`` (percent).

    pairs: as from ``find_pairs`` (pairs naming files absent from ``files`` are ignored).
    files: the file table (for paths, sizes, times, encodings).  reference_roots: folders
    whose files are preferred as references.  Pure: reads nothing but its arguments (the
    columns of the last pair list are cached, see ``_columns``).  The objects are built from
    :func:`group_rows`; front ends with many groups use that (or ``group_pair_arrays``) directly.
    """
    ids = np.asarray(files.ids, dtype=np.int64)
    cols = _columns(pairs)
    ga = group_rows(_rows(ids, cols.a_id), _rows(ids, cols.b_id), cols.best, cols.kind, files,
                    min_similarity=min_similarity, reference_roots=reference_roots, a_in_b=cols.a_in_b,
                    b_in_a=cols.b_in_a, keep=keep)
    return groups_from_arrays(ga, files, lambda ks: [pairs[k] for k in ks.tolist()])


class PairScores(NamedTuple):
    """What a member's pair takes from the pair it comes from (a ``Pair`` has these too)."""

    resemblance: float
    containment_a: float
    containment_b: float
    simhash_distance: int
    kind: str
    view: str
    longest_passage: int | None
    shared_chars: int | None


def pair_scores(pa: PairArrays, ks: np.ndarray) -> list[PairScores]:
    """:class:`PairScores` of pairs ``ks`` of the columns ``pa`` (as ``core.pairs_from_rounded`` would
    give them, without a ``Pair`` each: 19,000 members' pairs, ~0.05 s less)."""
    return list(map(PairScores._make, zip(
        pa.resemblance[ks].tolist(), pa.containment_a[ks].tolist(), pa.containment_b[ks].tolist(),
        pa.distance[ks].tolist(), [KINDS[k] for k in pa.kind[ks].tolist()], [VIEWS[v] for v in pa.view[ks].tolist()],
        [passage_value(v) for v in pa.longest[ks].tolist()], [passage_value(v) for v in pa.shared[ks].tolist()],
    )))


@dataclass(frozen=True, slots=True)
class MemberRows:
    """Every member of a :class:`GroupArrays` as the ``Member`` (and ``Pair`` with its reference) it
    stands for, column by column (lists, member order): what writers that need no object read
    (``simscan groups --format json|csv``), and what :func:`groups_from_arrays` builds the objects from.
    ``pair[j]``: the scores of the pair (reference, member), turned to read so (None for the
    reference); ``exact[j]``: that pair is of the same bytes."""

    g_start: list[int]
    g_kind: list[str]
    file_id: list[int]
    path: list[str]
    size: list[int]
    mtime_ns: list[int]
    encoding: list[str | None]
    is_text: list[bool]
    similarity: list[float]
    kind: list[str]
    copy_set: list[int]
    keeper: list[bool]
    pair: list[PairScores | None]
    exact: list[bool]


def member_rows(
    ga: GroupArrays, files: FileTableLike, pairs_at: Callable[[np.ndarray], Sequence[Pair | PairScores]]
) -> MemberRows:
    """:class:`MemberRows` of ``ga``; ``pairs_at(ks)`` gives pairs ``ks`` of the columns grouped (their
    scores: ``Pair`` or :class:`PairScores`), in that order (in any orientation: each is turned to read
    (reference, member)); one call for every member's pair, so that columns are read as columns."""
    rows = ga.m_row
    row_l = rows.tolist()
    start = ga.g_start.tolist()
    pk, sw, mk = ga.m_pair.tolist(), ga.m_swap.tolist(), ga.m_kind.tolist()
    with_pair = np.flatnonzero(ga.m_pair >= 0)
    their = dict(zip(with_pair.tolist(), pairs_at(ga.m_pair[with_pair]))) if with_pair.size else {}
    is_first = np.zeros(rows.size, dtype=bool)
    is_first[ga.g_start[:-1]] = True
    first_l = is_first.tolist()
    similarity: list[float] = []
    kind: list[str] = []
    pair: list[PairScores | None] = []
    exact: list[bool] = []
    for j in range(len(row_l)):
        if first_l[j]:
            similarity.append(100.0)
            kind.append("exact")
            pair.append(None)
            exact.append(False)
        elif pk[j] < 0:  # a copy of the reference (its unit)
            kd = KINDS[mk[j]]
            similarity.append(100.0)
            kind.append(kd)
            pair.append(PairScores(100.0, 100.0, 100.0, 0, kd, "text", None, None))
            exact.append(kd == "exact")
        else:
            sp = their[j]
            ca, cb = (sp.containment_b, sp.containment_a) if sw[j] else (sp.containment_a, sp.containment_b)
            similarity.append(max(sp.resemblance, ca, cb))
            kind.append(member_kind_of(sp.kind, ca, cb))
            pair.append(PairScores(sp.resemblance, ca, cb, sp.simhash_distance, sp.kind, sp.view, sp.longest_passage,
                                   sp.shared_chars))
            exact.append(False)
    ids = np.asarray(files.ids, dtype=np.int64)[rows].tolist()
    return MemberRows(
        start, [KINDS[k] for k in ga.g_kind.tolist()], ids, [files.paths[r] for r in row_l],
        np.asarray(files.size)[rows].tolist(), np.asarray(files.mtime_ns)[rows].tolist(),
        [files.encoding[r] for r in row_l], np.asarray(files.is_text, dtype=bool)[rows].tolist(), similarity, kind,
        copy_set_numbers(ga).tolist(), ga.m_keeper.tolist(), pair, exact,
    )


def groups_from_arrays(
    ga: GroupArrays, files: FileTableLike, pairs_at: Callable[[np.ndarray], Sequence[Pair | PairScores]]
) -> list[Group]:
    """``Group`` / ``Member`` / ``Pair`` objects of ``ga`` (:func:`member_rows`, whose ``pairs_at`` this
    takes)."""
    return groups_of_rows(member_rows(ga, files, pairs_at))


def groups_of_rows(mr: MemberRows) -> list[Group]:
    """The ``Group`` / ``Member`` / ``Pair`` objects of :class:`MemberRows`."""
    groups: list[Group] = []
    for g, gk in enumerate(mr.g_kind):
        s, t = mr.g_start[g], mr.g_start[g + 1]
        ref_m = Member(mr.file_id[s], mr.path[s], mr.size[s], mr.mtime_ns[s], mr.encoding[s], mr.is_text[s], 100.0,
                       "exact", True, None, mr.copy_set[s], True)
        mem = [ref_m]
        for j in range(s + 1, t):
            sp = mr.pair[j]
            assert sp is not None  # (every member but the reference has its pair)
            p = Pair(mr.file_id[s], mr.file_id[j], mr.path[s], mr.path[j], sp.resemblance, sp.containment_a,
                     sp.containment_b, sp.simhash_distance, mr.exact[j], sp.kind, sp.view, sp.longest_passage,
                     sp.shared_chars)
            mem.append(Member(mr.file_id[j], mr.path[j], mr.size[j], mr.mtime_ns[j], mr.encoding[j], mr.is_text[j],
                              mr.similarity[j], mr.kind[j], False, p, mr.copy_set[j], mr.keeper[j]))
        groups.append(Group(g, gk, ref_m, mem))
    return groups


def copy_set_numbers(ga: GroupArrays) -> np.ndarray:
    """Per member, its copy set's number in its group (1, 2, … in the group's order), 0 for a file
    alone in its set."""
    m = ga.n_members
    if m == 0:
        return np.zeros(0, np.int64)
    heads = ga.g_start[:-1]
    m_group = np.repeat(np.arange(ga.n_groups), np.diff(ga.g_start))
    # Sets are consecutive blocks: a block starts at each keeper; its size from the next start.
    starts = np.flatnonzero(ga.m_keeper)
    sizes = np.diff(np.append(starts, m))
    block = np.cumsum(ga.m_keeper) - 1
    multi = sizes[block] >= 2
    # Number the multi-file blocks within each group.
    first_multi = np.where(ga.m_keeper & multi, 1, 0)
    running = np.cumsum(first_multi)
    before_group = running[heads] - first_multi[heads]
    return np.where(multi, running - before_group[m_group], 0)
