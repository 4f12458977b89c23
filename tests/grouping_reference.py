"""A plain, object-based implementation of the grouping rules (simscan 0.1's loop over
Python objects, with the members' assignment done by brute force over the pairs), kept as the
slow reference of the tests: the columnar grouping must give the same groups, references,
members, order and percentages.

Rules (documented for users, see ``simscan.similarity.grouping``):

* Files joined by "exact" or "content" pairs are one *unit* (identity is transitive).
* A unit's reference candidate is its preferred file: under a user-marked reference folder
  first, then the oldest modification time, then the shortest path, then path order.
* References: units are visited in that order; a unit not yet covered becomes a reference
  when it has copies, uncovered partners (paired at >= the threshold; it covers them), or a
  covered partner more similar to it than to every reference so far.
* Members: every covered unit joins the reference with which its best pair scores highest
  (equal scores: the reference visited first; then the lower pair index), listed best score
  first, equal scores in visit order.  Then, in visit order, a single-file reference left
  without members takes back its best partner (score, then visit order, then pair index)
  whose reference keeps another member and may lose it (below).  Then, in visit order, a unit
  still in no group joins its best partner leading a group, else takes its best partner among
  the members whose reference is under no reference folder and either keeps a group without them
  while they keep at least half their percentage (they move), or has no other member (they lead
  both); else it stays in no group.  A reference left
  without members or copies is no group.
* Paths of one file on disk (same device and inode) are one file: never paired with each
  other, and only the preferred of them joins a group.
* Each member's percentage is the best score of the pair (reference, member); members that
  are copies of each other share it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import random
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from simscan.index import FileTable
from simscan.similarity.core import PairArrays, file_identity, under_roots
from simscan.similarity.keep import DEFAULT_KEEP, KeepRules, encoding_rank
from simscan.similarity.types import KINDS, FileTableLike, Group, Member, Pair

_KIND_CODE = {k: i for i, k in enumerate(KINDS)}


def _components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Connected-component label (smallest row) of each of n rows given edges a-b."""
    lab = np.arange(n, dtype=np.int64)
    if a.size == 0:
        return lab
    while True:
        before = lab.copy()
        m = np.minimum(lab[a], lab[b])
        np.minimum.at(lab, a, m)
        np.minimum.at(lab, b, m)
        lab = lab[lab]  # pointer jumping
        if np.array_equal(lab, before):
            return lab


@dataclass(frozen=True, slots=True)
class _Columns:
    """The columns of a pair list that grouping needs (ids, best score, kind code)."""

    a_id: np.ndarray
    b_id: np.ndarray
    best: np.ndarray
    kind: np.ndarray
    ca: np.ndarray
    cb: np.ndarray


_CACHE: list[tuple[Sequence[Pair], int, _Columns]] = []


def _columns(pairs: Sequence[Pair]) -> _Columns:
    """Columns of ``pairs``, remembered for the last list seen: the GUI regroups the same list
    on every move of its threshold slider, and reading a million attributes costs more than
    the grouping itself.  Keyed by the list object and its length (pair lists are not edited
    in place)."""
    if _CACHE and _CACHE[0][0] is pairs and _CACHE[0][1] == len(pairs):
        return _CACHE[0][2]
    m = len(pairs)
    a_id = np.fromiter(map(attrgetter("a_id"), pairs), dtype=np.int64, count=m)
    b_id = np.fromiter(map(attrgetter("b_id"), pairs), dtype=np.int64, count=m)
    r = np.fromiter(map(attrgetter("resemblance"), pairs), dtype=np.float64, count=m)
    ca = np.fromiter(map(attrgetter("containment_a"), pairs), dtype=np.float64, count=m)
    cb = np.fromiter(map(attrgetter("containment_b"), pairs), dtype=np.float64, count=m)
    names, inv = np.unique(np.array([p.kind for p in pairs], dtype=object).astype(str), return_inverse=True)
    codes = np.array([_KIND_CODE.get(k, 2) for k in names.tolist()], dtype=np.int8)
    cols = _Columns(a_id, b_id, np.maximum(r, np.maximum(ca, cb)), codes[inv] if m else np.empty(0, np.int8), ca, cb)
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
    rows = np.unique(np.concatenate((sa[ok & keep], sb[ok & keep])))
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


def reference_group_pairs(
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
    whose files are preferred as references.  keep: the keep rules ordering the files (a plain
    sort on a key tuple per file here).  Empty files are never grouped.  Pure: reads nothing but
    its arguments (the columns of the last pair list are cached, see ``_columns``).
    """
    n = len(files.paths)
    ids = np.asarray(files.ids, dtype=np.int64)
    cols = _columns(pairs)
    pa_all = _rows(ids, cols.a_id)
    pa = pa_all
    pb = _rows(ids, cols.b_id)
    best, kind = cols.best, cols.kind
    ok = (pa >= 0) & (pb >= 0) & (pa != pb) & ((best >= min_similarity) | (kind <= 1))
    size_l = np.asarray(files.size).tolist()
    ok &= np.array([a < 0 or b < 0 or (size_l[a] > 0 and size_l[b] > 0) for a, b in zip(pa.tolist(), pb.tolist())],
                   dtype=bool)

    pref = under_roots(list(files.paths), tuple(reference_roots))

    def sort_key(r: int) -> tuple:
        key: list = [not pref[r]]
        for c in keep.effective():
            if c == "encoding":
                key.append(encoding_rank(files.encoding[r]))
            elif c == "oldest":
                key.append(int(files.mtime_ns[r]))
            elif c == "newest":
                key.append(-int(files.mtime_ns[r]))
            elif c == "shortest-path":
                key.append(len(files.paths[r]))
            elif c == "longest-path":
                key.append(-len(files.paths[r]))
            elif c == "pattern":
                key.append(not fnmatch.fnmatchcase(files.paths[r] if "/" in keep.pattern
                                                   else files.paths[r].rpartition("/")[2], keep.pattern))
        return (*key, files.paths[r])

    rank = np.empty(n, np.int64)
    rank[sorted(range(n), key=sort_key)] = np.arange(n)
    ok &= _one_path_per_file(files, pa, pb, ok, rank)

    idx = np.flatnonzero(ok)
    pa, pb, best, kind = pa[idx], pb[idx], best[idx], kind[idx]

    same = kind <= 1
    unit = _components(n, pa[same], pb[same])

    # Unit members in preference order; the first is the unit's reference candidate.
    in_unit = np.zeros(n, dtype=bool)
    in_unit[pa[same]] = True
    in_unit[pb[same]] = True

    # Edges between different units, both directions, best first per source; one per unit pair.
    e = ~same
    ua, ub = unit[pa[e]], unit[pb[e]]
    eb, ep = best[e], idx[e]
    diff = ua != ub
    ua, ub, eb, ep = ua[diff], ub[diff], eb[diff], ep[diff]
    src = np.concatenate((ua, ub))
    dst = np.concatenate((ub, ua))
    wb = np.concatenate((eb, eb))
    wp = np.concatenate((ep, ep))
    if src.size:
        # Grouped by source unit; duplicates (several pairs between two units) are skipped in
        # the loop below, and members are ordered by score per group, so one integer sort is
        # all the ordering needed.
        o = np.argsort(src)
        src, dst, wb, wp = src[o], dst[o], wb[o], wp[o]

    # Participating units in preference order of their best row.
    part = np.union1d(np.flatnonzero(in_unit), np.unique(src))
    part = part[np.argsort(rank[part], kind="stable")]
    members_of: dict[int, list[int]] = {}
    for r, u in zip(part.tolist(), unit[part].tolist()):
        members_of.setdefault(u, []).append(r)
    # Tiers: a unit holding a partner ("contained" pair) and lying in none first, one lying in a
    # partner and holding none last; a unit under a reference folder before all.
    holds: set[int] = set()
    inside: set[int] = set()
    for x, y, k, ca, cb in zip(pa.tolist(), pb.tolist(), kind.tolist(), cols.ca[idx].tolist(), cols.cb[idx].tolist()):
        ux, uy = int(unit[x]), int(unit[y])
        if k != _KIND_CODE["contained"] or ux == uy or ca == cb:
            continue
        small, large = (ux, uy) if ca > cb else (uy, ux)
        inside.add(small)
        holds.add(large)

    def tier(u: int) -> int:
        return 0 if u in holds and u not in inside else 2 if u in inside and u not in holds else 1

    visit = list(members_of)  # insertion order = order of each unit's best row
    visit.sort(key=lambda u: (not pref[members_of[u][0]], tier(u)))  # (stable: best row order within)
    vis = np.asarray(visit, dtype=np.int64)
    starts = np.searchsorted(src, vis).tolist() if src.size else [0] * len(visit)
    ends = np.searchsorted(src, vis, side="right").tolist() if src.size else [0] * len(visit)
    dst_l, wp_l = dst.tolist(), wp.tolist()
    best_of = cols.best  # by original pair index
    unit_l = unit.tolist()
    a_rows = pa_all.tolist()  # by original pair index
    b_rows = _rows(ids, cols.b_id).tolist()

    assigned: set[int] = set()
    paths = files.paths
    size = np.asarray(files.size).tolist()
    mtime = np.asarray(files.mtime_ns).tolist()
    is_text = np.asarray(files.is_text, dtype=bool).tolist()
    enc = files.encoding
    checksum = files.checksum
    id_l = ids.tolist()
    groups: list[Group] = []
    # Phase 1: the references, greedily in preference order.
    refs: list[int] = []
    near_ref: dict[int, float] = {}  # covered unit -> best score with a reference so far
    for u, s, t in zip(visit, starts, ends):
        if u in assigned:
            continue
        partners = [(dst_l[k], best_of[wp_l[k]]) for k in range(s, t)]
        wanted = [v for v, b in partners if v not in assigned or b > near_ref.get(v, 0.0)]
        if len(members_of[u]) < 2 and not wanted:
            continue
        refs.append(u)
        assigned.add(u)
        for v, b in partners:
            assigned.add(v)
            near_ref[v] = max(near_ref.get(v, 0.0), b)
    # Phase 2, by brute force over the pairs: each covered unit's best reference (highest best
    # score; equal scores: the reference visited first), through its best pair with it.
    order_of = {u: i for i, u in enumerate(visit)}
    ref_index = {u: i for i, u in enumerate(refs)}
    choice: dict[int, tuple[float, int, int]] = {}  # member unit -> (score, -ref index, -pair index)
    for pi in idx.tolist():
        if best_of[pi] < min_similarity or cols.kind[pi] <= 1:
            continue
        for x, y in ((unit_l[a_rows[pi]], unit_l[b_rows[pi]]), (unit_l[b_rows[pi]], unit_l[a_rows[pi]])):
            if x == y or y not in ref_index or x in ref_index or x not in assigned:
                continue
            cand = (best_of[pi], -ref_index[y], -pi)
            old = choice.get(x)
            if old is None or cand > old:
                choice[x] = cand
    members_by_ref: dict[int, list[tuple[int, int]]] = {u: [] for u in refs}
    for v, (_, neg_ref, neg_pi) in choice.items():
        members_by_ref[refs[-neg_ref]].append((v, -neg_pi))

    def score_in_group(x: int) -> float:
        """x's percentage against its reference: the pair that put it in the group."""
        return next(best_of[q] for w, q in members_by_ref[ref_of[x]] if w == x)

    # Units with a file under a reference folder: their members never move, they never follow.
    marked_units = {unit_l[r] for r in np.flatnonzero(pref).tolist()}

    def may_move(x: int, score: float) -> bool:
        return ref_of[x] not in marked_units and score >= 0.5 * score_in_group(x)

    # An emptied single-file reference takes back its best partner whose reference keeps another.
    ref_of = {v: refs[-c[1]] for v, c in choice.items()}
    for u in refs:
        if members_by_ref[u] or len(members_of[u]) >= 2:
            continue
        best = None
        for pi in idx.tolist():
            if best_of[pi] < min_similarity or cols.kind[pi] <= 1:
                continue
            ua_, ub_ = unit_l[a_rows[pi]], unit_l[b_rows[pi]]
            if u not in (ua_, ub_) or ua_ == ub_:
                continue
            x = ub_ if ua_ == u else ua_
            if x not in ref_of or len(members_by_ref[ref_of[x]]) < 2 or not may_move(x, best_of[pi]):
                continue
            cand = (best_of[pi], -order_of[x], -pi, x)
            if best is None or cand[:3] > best[:3]:
                best = cand
        if best is not None:
            x, pi = best[3], -best[2]
            old_ref = ref_of[x]
            members_by_ref[old_ref] = [e for e in members_by_ref[old_ref] if e[0] != x]
            members_by_ref[u].append((x, pi))
            ref_of[x] = u
    # Every unit with a partner ends in a group: in visit order, a unit left out joins its best
    # partner that leads a group, else takes its best partner from that partner's reference when the
    # reference keeps a group without it, else that partner leads both.
    qualifying = [pi for pi in idx.tolist() if best_of[pi] >= min_similarity and cols.kind[pi] > 1]

    def placed(u: int) -> bool:
        return u in ref_of or (u in refs and (bool(members_by_ref.get(u)) or len(members_of[u]) >= 2))

    def best_partner(u: int, ok) -> tuple[int, int] | None:
        best = None
        for pi in qualifying:
            ua_, ub_ = unit_l[a_rows[pi]], unit_l[b_rows[pi]]
            if u not in (ua_, ub_) or ua_ == ub_:
                continue
            x = ub_ if ua_ == u else ua_
            if ok(x, pi) and (best is None or (best_of[pi], -order_of[x], -pi) > best[0]):
                best = ((best_of[pi], -order_of[x], -pi), x, pi)
        return None if best is None else (best[1], best[2])

    for u in visit:
        if placed(u) or best_partner(u, lambda x, pi: True) is None:
            continue
        lead = best_partner(u, lambda x, pi: x in refs and placed(x))
        if lead is not None:
            x, pi = lead
            members_by_ref[x].append((u, pi))
            ref_of[u] = x
            if u in refs:
                refs.remove(u)
            continue
        def loses_nothing(x: int, pi: int) -> bool:
            if x not in ref_of:
                return False
            r = ref_of[x]
            keeps = len(members_of[r]) >= 2 or any(w != x for w, _ in members_by_ref[r])
            return may_move(x, best_of[pi]) if keeps else r not in marked_units

        led = best_partner(u, loses_nothing)
        if led is None:
            continue
        v, pi = led
        r = ref_of[v]
        pi_rv = next(q for w, q in members_by_ref[r] if w == v)
        members_by_ref[r] = [e for e in members_by_ref[r] if e[0] != v]
        if members_by_ref[r] or len(members_of[r]) >= 2:
            if u not in refs:
                refs.append(u)
            members_by_ref[u] = [(v, pi)]
            ref_of[v] = u
        else:
            refs.remove(r)
            if u in refs:
                refs.remove(u)
            refs.append(v)
            del ref_of[v]
            members_by_ref[v] = [(r, pi_rv), (u, pi)]
            ref_of[r] = ref_of[u] = v
    refs.sort(key=order_of.__getitem__)
    for u in refs:
        own = members_of[u]
        mine = sorted(members_by_ref[u], key=lambda x: (-best_of[x[1]], order_of[x[0]]))
        if len(own) < 2 and not mine:
            continue
        ref = own[0]
        # Copy sets: the units of two files or more, numbered in the group's order.
        sets = 0
        if len(own) >= 2:
            sets += 1
        ref_m = Member(id_l[ref], paths[ref], size[ref], mtime[ref], enc[ref], is_text[ref], 100.0, "exact", True,
                       None, sets, True)
        mem = [ref_m]
        kinds = set()
        for r in own[1:]:
            k = "exact" if checksum[r] == checksum[ref] else "content"
            kinds.add(k)
            p = Pair(id_l[ref], id_l[r], paths[ref], paths[r], 100.0, 100.0, 100.0, 0, k == "exact", k)
            mem.append(Member(id_l[r], paths[r], size[r], mtime[r], enc[r], is_text[r], 100.0, k, False, p, sets,
                              False))
        for v, pi in mine:
            src_pair = pairs[pi]
            # Orient the pair as (reference, member): the unit of pair.a is u or v.
            forward = unit_l[a_rows[pi]] == u
            if forward:
                ca, cb = src_pair.containment_a, src_pair.containment_b
            else:
                ca, cb = src_pair.containment_b, src_pair.containment_a
            rows_v = members_of.get(v, [v])
            if len(rows_v) >= 2:
                sets += 1
            for i_r, r in enumerate(rows_v):
                p = Pair(
                    id_l[ref], id_l[r], paths[ref], paths[r], src_pair.resemblance, ca, cb,
                    src_pair.simhash_distance, False, src_pair.kind, src_pair.view, src_pair.longest_passage,
                    src_pair.shared_chars,
                )
                kinds.add(p.kind)
                # Seen from the member: "contains" when the reference lies in it.
                kind = "contains" if p.kind == "contained" and ca > cb else p.kind
                mem.append(Member(id_l[r], paths[r], size[r], mtime[r], enc[r], is_text[r], p.best, kind, False, p,
                                  sets if len(rows_v) >= 2 else 0, i_r == 0))
        if kinds <= {"exact"}:
            gk = "exact"
        elif kinds <= {"exact", "content"}:
            gk = "content"
        elif "near" in kinds:
            gk = "near"
        else:
            gk = "contained"
        groups.append(Group(len(groups), gk, ref_m, mem))
    return groups


# ------------------------------------------------------------------ random inputs for the comparisons
def random_table(rng: random.Random, n: int) -> FileTable:
    """n files in a few folders; some share a checksum (copies), some a (device, inode)."""
    ids = np.array(sorted(rng.sample(range(1, 10 * n), n)), np.int64)
    folders = ["/data/a", "/data/b", "/ref", "/ref/deep", "/x"]
    paths = [f"{rng.choice(folders)}/{'f' * rng.randint(1, 4)}{k}.txt" for k in range(n)]
    checks = [bytes([rng.randrange(6)]) * 16 for _ in range(n)]
    inode = np.array([rng.randrange(1, n + 1) if rng.random() < 0.15 else 10_000 + k for k in range(n)], np.int64)
    inode[rng.randrange(n)] = 0  # unknown: never merged
    size = np.array([rng.randrange(1, 5000) if rng.random() > 0.05 else 0 for _ in range(n)], np.int64)
    return FileTable(
        ids=ids,
        paths=paths,
        raw_paths=[p.encode() for p in paths],
        size=size,
        mtime_ns=np.array([rng.randrange(1, 6) for _ in range(n)], np.int64),  # many ties
        is_text=np.array([rng.random() < 0.8 for _ in range(n)], dtype=bool),
        encoding=[rng.choice(["utf-8", "cp1252", None, "utf-16-le", "gb18030+replace"]) for _ in range(n)],
        checksum=checks,
        partial=np.zeros(n, np.int64),
        content_hash=list(checks),
        simhash=np.zeros(n, np.uint64),
        fp_count=np.zeros(n, np.int64),
        units=np.array([0 if size[k] == 0 or rng.random() < 0.05 else int(size[k]) for k in range(n)], np.int64),
        device=np.full(n, 7, np.int64),
        inode=inode,
    )


def random_pairs(rng: random.Random, t: FileTable, m: int) -> list[Pair]:
    n = len(t.paths)
    ids = t.ids.tolist()
    scores = [12.5, 20.0, 33.333, 50.0, 66.667, 70.0, 90.0, 99.999]  # few values: ties of score
    out: list[Pair] = []
    for _ in range(m):
        i, j = rng.randrange(n), rng.randrange(n)
        a = ids[i] if rng.random() > 0.02 else 999_999  # now and then a file absent from the table
        kind = rng.choice(["exact", "content", "near", "near", "contained", "near"])
        if kind in ("exact", "content"):
            out.append(Pair(a, ids[j], t.paths[i], t.paths[j], 100.0, 100.0, 100.0, rng.randrange(3),
                            kind == "exact", kind))
        else:
            r, ca, cb = rng.choice(scores), rng.choice(scores), rng.choice(scores)
            out.append(Pair(a, ids[j], t.paths[i], t.paths[j], r, ca, cb, rng.randrange(10), False, kind))
    return out


def random_pair_arrays(rng: random.Random, t: FileTable, m: int) -> PairArrays:
    """Unrounded scored pairs as compute_pair_arrays makes them (rows of t)."""
    n = len(t.paths)
    a = np.array([rng.randrange(n) for _ in range(m)], np.int64)
    b = np.array([rng.randrange(n) for _ in range(m)], np.int64)
    kind = np.array([rng.choice([0, 1, 2, 2, 3]) for _ in range(m)], np.int8)
    sc = np.array([[rng.choice([10.0, 100 / 3, 50.0, 200 / 3]) + rng.random() * 1e-4 for _ in range(3)]
                   for _ in range(m)]).reshape(m, 3)
    star = kind <= 1
    sc[star] = 100.0
    return PairArrays(a, b, sc[:, 0], sc[:, 1], sc[:, 2], np.array([rng.randrange(8) for _ in range(m)], np.int64),
                      kind == 0, kind, np.where(star, 0, np.array([rng.randrange(2) for _ in range(m)])).astype(np.int8),
                      np.where(star, -1, np.array([rng.randrange(300) for _ in range(m)])).astype(np.int32),
                      np.where(star, -1, np.array([rng.randrange(900) for _ in range(m)])).astype(np.int32))


def reference_expand_copies(pairs: Sequence[Pair], limit: int) -> tuple[list[Pair], int]:
    """Copies' inherited pairs, one ``Pair`` at a time (the slow reference of ``copies.expand_copies``):
    the copy pairs join files into classes (members in id order); each other pair (a, b) is followed by
    every (x, y) of a's class × b's class but itself, in that order; once the pairs added so far and a
    block's would pass ``limit``, that block and every later one are left out and counted."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    path_of: dict[int, str] = {}
    for p in pairs:
        path_of.setdefault(p.a_id, p.a_path)
        path_of.setdefault(p.b_id, p.b_path)
        if p.kind in ("exact", "content"):
            ra, rb = root(p.a_id), root(p.b_id)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[int]] = {}
    for fid in sorted(path_of):
        members.setdefault(root(fid), []).append(fid)
    out: list[Pair] = []
    wanted = left_out = 0
    for p in pairs:
        out.append(p)
        if p.kind in ("exact", "content"):
            continue
        block = [(x, y) for x in members[root(p.a_id)] for y in members[root(p.b_id)] if (x, y) != (p.a_id, p.b_id)]
        wanted += len(block)
        if wanted > limit:
            left_out += len(block)
            continue
        out += [dataclasses.replace(p, a_id=x, b_id=y, a_path=path_of[x], b_path=path_of[y]) for x, y in block]
    return out, left_out
