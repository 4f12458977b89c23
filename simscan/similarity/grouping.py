"""Groups from pairs: star clustering around reference files (pure, in memory, fast).

Rules (documented for users):

* Files joined by "exact" or "content" pairs are one *unit* (identity is transitive).
* A unit's reference candidate is its preferred file: under a user-marked reference folder
  first, then the oldest modification time, then the shortest path, then the lowest id.
* Units are visited in that order of preference.  A unit not yet in a group becomes the
  centre of a new group with every *not yet grouped* unit joined to it by a pair whose best
  score is >= the threshold.  Every member is therefore similar to the reference itself:
  no chaining (a~b, b~c with a not similar to c never puts c in a's group through b).  A file
  left out of a group because its partner was taken by an earlier reference can still
  centre its own group with its other partners.  The pairs themselves stay available.
* Each member's percentage is the best score (max of resemblance and both containments)
  of the pair (reference, member); members that are copies of each other share it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simscan.similarity.core import under_roots
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


def group_pairs(
    pairs: Sequence[Pair],
    files: FileTableLike,
    *,
    min_similarity: float,
    reference_roots: Sequence[str] = (),
) -> list[Group]:
    """Groups of the pairs whose best score is >= ``min_similarity`` (percent).

    pairs: as from ``find_pairs`` (pairs naming files absent from ``files`` are ignored).
    files: the file table (for paths, sizes, times, encodings).  reference_roots: folders
    whose files are preferred as references.  Pure: reads nothing but its arguments.
    """
    n = len(files.paths)
    ids = np.asarray(files.ids, dtype=np.int64)
    row_of = dict(zip(ids.tolist(), range(n)))
    m = len(pairs)
    pa = np.fromiter((row_of.get(p.a_id, -1) for p in pairs), dtype=np.int64, count=m)
    pb = np.fromiter((row_of.get(p.b_id, -1) for p in pairs), dtype=np.int64, count=m)
    best = np.fromiter((p.best for p in pairs), dtype=np.float64, count=m)
    kind = np.fromiter((_KIND_CODE.get(p.kind, 2) for p in pairs), dtype=np.int8, count=m)
    ok = (pa >= 0) & (pb >= 0) & (pa != pb) & ((best >= min_similarity) | (kind <= 1))
    idx = np.flatnonzero(ok)
    pa, pb, best, kind = pa[idx], pb[idx], best[idx], kind[idx]

    same = kind <= 1
    unit = _components(n, pa[same], pb[same])

    pref = under_roots(list(files.paths), tuple(reference_roots))
    pathlen = np.fromiter((len(p) for p in files.paths), dtype=np.int64, count=n)
    order = np.lexsort((ids, pathlen, np.asarray(files.mtime_ns, dtype=np.int64), ~pref))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)

    # Unit members in preference order; the first is the unit's reference candidate.
    in_unit = np.zeros(n, dtype=bool)
    in_unit[pa[same]] = True
    in_unit[pb[same]] = True

    # Edges between different units; keep the best pair per unit pair.
    e = ~same
    ua, ub = unit[pa[e]], unit[pb[e]]
    eb, ep = best[e], idx[e]
    diff = ua != ub
    ua, ub, eb, ep = ua[diff], ub[diff], eb[diff], ep[diff]
    src = np.concatenate((ua, ub))
    dst = np.concatenate((ub, ua))
    wb = np.concatenate((eb, eb))
    wp = np.concatenate((ep, ep))
    # Sort by source, then by descending score: neighbours come best first.
    o = np.lexsort((-wb, src))
    src, dst, wb, wp = src[o], dst[o], wb[o], wp[o]
    # Deduplicate (src, dst), keeping the best (first after the sort).
    if src.size:
        dup_o = np.lexsort((-wb, dst, src))
        keepmask = np.ones(src.size, dtype=bool)
        s2, d2 = src[dup_o], dst[dup_o]
        keepmask[dup_o[1:]] = (s2[1:] != s2[:-1]) | (d2[1:] != d2[:-1])
        src, dst, wb, wp = src[keepmask], dst[keepmask], wb[keepmask], wp[keepmask]

    # Participating units, in preference order of their best row.
    part_rows = np.flatnonzero(in_unit)
    members_of: dict[int, list[int]] = {}
    if part_rows.size:
        pr = part_rows[np.argsort(rank[part_rows], kind="stable")]
        for r, u in zip(pr.tolist(), unit[pr].tolist()):
            members_of.setdefault(u, []).append(r)
    units_with_edges = np.unique(src)
    # Unit rank = rank of its best row.
    cand = set(members_of) | set(units_with_edges.tolist())
    unit_best: dict[int, int] = {u: (members_of[u][0] if u in members_of else u) for u in cand}
    visit = sorted(cand, key=lambda u: rank[unit_best[u]])
    starts = np.searchsorted(src, np.asarray(visit, dtype=np.int64)) if src.size else np.zeros(len(visit), np.int64)
    ends = np.searchsorted(src, np.asarray(visit, dtype=np.int64), side="right") if src.size else starts
    dst_l, wp_l = dst.tolist(), wp.tolist()

    assigned: set[int] = set()
    paths = files.paths
    size = np.asarray(files.size).tolist()
    mtime = np.asarray(files.mtime_ns).tolist()
    is_text = np.asarray(files.is_text, dtype=bool).tolist()
    enc = files.encoding
    checksum = files.checksum
    id_l = ids.tolist()
    groups: list[Group] = []
    for u, s, t in zip(visit, starts.tolist(), ends.tolist()):
        if u in assigned:
            continue
        neigh = [(dst_l[k], wp_l[k]) for k in range(s, t) if dst_l[k] not in assigned]
        own = members_of.get(u, [u])
        if len(own) < 2 and not neigh:
            continue
        assigned.add(u)
        ref = own[0]
        ref_m = Member(id_l[ref], paths[ref], size[ref], mtime[ref], enc[ref], is_text[ref], 100.0, "exact", True)
        mem = [ref_m]
        kinds = set()
        for r in own[1:]:
            k = "exact" if checksum[r] == checksum[ref] else "content"
            kinds.add(k)
            p = Pair(id_l[ref], id_l[r], paths[ref], paths[r], 100.0, 100.0, 100.0, 0, k == "exact", k)
            mem.append(Member(id_l[r], paths[r], size[r], mtime[r], enc[r], is_text[r], 100.0, k, False, p))
        for v, pi in neigh:
            assigned.add(v)
            src_pair = pairs[int(pi)]
            # Orient the pair as (reference, member): the unit of pair.a is u or v.
            forward = unit[row_of[src_pair.a_id]] == u
            for r in members_of.get(v, [v]):
                if forward:
                    ca, cb = src_pair.containment_a, src_pair.containment_b
                else:
                    ca, cb = src_pair.containment_b, src_pair.containment_a
                p = Pair(
                    id_l[ref], id_l[r], paths[ref], paths[r], src_pair.resemblance, ca, cb,
                    src_pair.simhash_distance, False, src_pair.kind,
                )
                kinds.add(p.kind)
                mem.append(Member(id_l[r], paths[r], size[r], mtime[r], enc[r], is_text[r], p.best, p.kind, False, p))
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
