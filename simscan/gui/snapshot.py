"""The results of one grouping as an immutable snapshot, built in a worker: per-member columns (numpy
for sorting, filtering and totals; Python lists for the per-cell reads of ``data()``), the copy sets
nested in each group, and the detailed scores made on demand (:class:`MemberPairs`).  No widget here;
``data()`` of :mod:`simscan.gui.results_model` reads only this."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from simscan.similarity.types import KIND_CODE, KINDS, Pair, member_kind, shown_pct

_COPIES = ("exact", "content")


def rereferenced_kind(is_old_ref: bool, kind: str, new_kind: str, copy: str | None, paired: str | None) -> str:
    """A member's kind once the user made another member of its group the reference ("make
    reference"): kinds say how a member relates to *its reference*, and "Mark Copies but
    Reference" marks the exact/content ones for the trash, so they must be re-expressed, never
    kept from the old reference.  ``kind``: the member's kind against the old reference;
    ``new_kind``: the new reference's kind against the old one; ``copy``: "exact"/"content"
    when the member is known to be a copy of the new reference (same bytes / same text), else
    None; ``paired``: the kind of the pair (new reference, member) when there is one."""
    if copy is not None:
        return copy
    if new_kind in _COPIES:  # the new reference is a copy of the old one: relations carry over
        if is_old_ref:
            return new_kind
        if kind in _COPIES:
            return "exact" if kind == new_kind == "exact" else "content"
        return kind
    if is_old_ref or kind in _COPIES:  # the old reference and its copies: as the new one relates to them
        return new_kind
    if paired is not None:
        return paired
    return "near"  # never paired with the new reference: not a copy of it
#: Filter choices of the "Show" box: name → member kind codes shown.

def _tr(text: str) -> str:
    from PySide6.QtCore import QCoreApplication

    return QCoreApplication.translate("ResultsModel", text)


@dataclass(frozen=True)
class Snapshot:
    """Groups flattened: group ``g`` owns members ``g_start[g]:g_start[g+1]``, its reference first.

    Sizes in bytes, mtimes in ns since the epoch, similarities in percent (0..100; NaN when
    unknown, e.g. after "make reference" for a member never paired with the new reference).
    ``threshold`` is the minimum similarity (percent) the groups were formed with.
    """

    threshold: float
    g_start: np.ndarray  # int64[n+1]
    g_kind: np.ndarray  # int8[n]: group kind code
    g_min_sim: np.ndarray  # float64[n]: lowest member similarity (reference excluded)
    g_reclaim: np.ndarray  # int64[n]: bytes of the extra copies (every file of a copy set but its keeper)
    g_mtime: np.ndarray  # int64[n]: newest member mtime
    m_group: np.ndarray  # int64[m]
    m_file_id: np.ndarray  # int64[m]
    m_size: np.ndarray  # int64[m]
    m_mtime: np.ndarray  # int64[m]
    m_sim: np.ndarray  # float64[m]
    m_kind: np.ndarray  # int8[m]
    m_is_ref: np.ndarray  # bool[m]
    # Copy sets (files with the same bytes, or the same text in another encoding or line ending),
    # nested in their group wherever they sit: the set of each member (an id, the same at every
    # threshold), the set's keeper (the file kept: its first file in the group, the reference for
    # its own set), the keeper's member index, the set's size, and how the member is a copy of its
    # keeper (KIND_CODE exact / content; -1 for a keeper).
    m_set: np.ndarray  # int64[m]
    m_keeper: np.ndarray  # bool[m]
    m_keeper_of: np.ndarray  # int64[m]
    m_set_size: np.ndarray  # int64[m]
    m_copy_kind: np.ndarray  # int8[m]
    g_extra: np.ndarray  # int64[n]: extra copies in the group
    paths: list[str] = field(repr=False)
    folded: list[str] = field(repr=False)  # casefolded paths, for the search box
    encodings: list[str | None] = field(repr=False)
    is_text: list[bool] = field(repr=False)
    # Python-list copies of the numeric columns for data() (list indexing beats numpy scalars).
    l_start: list[int] = field(repr=False)
    l_group: list[int] = field(repr=False)
    l_file_id: list[int] = field(repr=False)
    l_size: list[int] = field(repr=False)
    l_mtime: list[int] = field(repr=False)
    l_sim: list[float] = field(repr=False)
    l_kind: list[int] = field(repr=False)
    l_is_ref: list[bool] = field(repr=False)
    l_g_kind: list[int] = field(repr=False)
    l_g_min_sim: list[float] = field(repr=False)
    l_g_reclaim: list[int] = field(repr=False)
    l_keeper: list[bool] = field(repr=False)
    l_keeper_of: list[int] = field(repr=False)
    l_set_size: list[int] = field(repr=False)
    l_copy_kind: list[int] = field(repr=False)
    l_g_extra: list[int] = field(repr=False)
    # Per member: the similarity layer's Pair (reference, member) with the detailed scores, or
    # None (the reference itself; a member re-expressed against a user-chosen reference).
    pairs: list[Any] = field(default_factory=list, repr=False)
    # Per member, its folder as a code into ``folder_names`` (sorted), when known (computed once
    # per file table: the folder chart of a regroup then costs a bincount, not 200,000 dirnames).
    folder_codes: np.ndarray | None = field(default=None, repr=False)
    folder_names: list[str] = field(default_factory=list, repr=False)
    # The empty files of the scope, which groups leave out (every empty file is alike): listed apart.
    empty_files: list[str] = field(default_factory=list, repr=False)

    def member_view(self, m: int) -> str:
        """The view that scored member ``m`` against its reference ("text" or "code"), "" when the
        member has no such pair (the reference; a member re-expressed against a chosen one)."""
        if m >= len(self.pairs):
            return ""
        if isinstance(self.pairs, MemberPairs):
            return self.pairs.view_of(m)
        pair = self.pairs[m]
        return "" if pair is None else getattr(pair, "view", "text")

    def member_evidence(self, m: int) -> tuple[int | None, int | None]:
        """(longest passage, shared characters) of member ``m`` with its reference (None: the
        reference, a copy, a pair not weighed)."""
        if m >= len(self.pairs):
            return None, None
        if isinstance(self.pairs, MemberPairs):
            return self.pairs.evidence_of(m)
        pair = self.pairs[m]
        return (None, None) if pair is None else (pair.longest_passage, pair.shared_chars)

    def kind_name(self, m: int) -> str:
        """Member ``m``'s kind as shown, read from the member's side (``types.member_kind``): a
        "contained" member is "contains" when its reference lies in it."""
        kind = KINDS[self.l_kind[m]]
        if kind == "contained" and m < len(self.pairs):
            pair = self.pairs[m]
            if pair is not None:
                return member_kind(pair)
        return kind

    def scores_text(self, m: int) -> str:
        """The detailed scores behind member ``m``'s percentage, for a tooltip."""
        pair = self.pairs[m] if m < len(self.pairs) else None
        if pair is None:
            return ""
        text = _tr(
            "Resemblance {0:.1f} % · {1:.1f} % of this file is in the reference · {2:.1f} % of the reference is "
            "in this file · simhash distance {3}"
        ).format(
            shown_pct(pair.resemblance), shown_pct(pair.containment_b), shown_pct(pair.containment_a),
            pair.simhash_distance,
        )
        if getattr(pair, "view", "text") == "code":
            text += " · " + _tr("compared as program code (names and literals ignored)")
        if pair.longest_passage is not None:
            text += " · " + _tr("longest shared passage {0:,} characters, {1:,} shared").format(
                pair.longest_passage, pair.shared_chars or 0)
        return text

    @cached_property
    def names(self) -> list[str]:
        """Each member's file name (the Name column)."""
        return [p.rpartition(os.sep)[2] for p in self.paths]

    def folder_of(self, m: int) -> str:
        """Member ``m``'s folder (the Folder column)."""
        p = self.paths[m]
        head = p.rpartition(os.sep)[0]
        return head if head else os.path.dirname(p)

    @property
    def n_groups(self) -> int:
        return len(self.l_start) - 1

    @cached_property
    def folders(self) -> list[tuple[str, int, int]]:
        """:meth:`folder_space` computed once (workers touch it, so the GUI thread need not)."""
        return self.folder_space()

    def folder_space(self, top: int = 8) -> list[tuple[str, int, int]]:
        """The folders holding the most reclaimable bytes: (folder, bytes, files), largest
        first (ties by folder name).  Reclaimable = the extra copies (every file of a copy set but
        the one kept), as everywhere."""
        copies = np.flatnonzero(~self.m_keeper)
        if copies.size == 0:
            return []
        if self.folder_codes is not None:
            # Folder of every member as a code into the sorted folder names (see from_group_arrays).
            inv = self.folder_codes[copies]
            names = self.folder_names
            size = np.bincount(inv, weights=self.m_size[copies].astype(np.float64), minlength=len(names))
            count = np.bincount(inv, minlength=len(names))
        else:
            dirs = [os.path.dirname(self.paths[i]) for i in copies.tolist()]
            uniq, inv = np.unique(np.asarray(dirs, dtype=object), return_inverse=True)
            names = uniq.tolist()
            size = np.bincount(inv, weights=self.m_size[copies].astype(np.float64), minlength=len(names))
            count = np.bincount(inv, minlength=len(names))
        used = np.flatnonzero(count)
        order = used[np.argsort(-size[used], kind="stable")][:top]
        return [(str(names[i]), int(size[i]), int(count[i])) for i in order.tolist()]

    @property
    def n_members(self) -> int:
        return len(self.paths)

    def group_size(self, g: int) -> int:
        return self.l_start[g + 1] - self.l_start[g]

    @staticmethod
    def empty(threshold: float = 0.0) -> Snapshot:
        return Snapshot.from_columns(threshold, [0], [], [], [], [], [], [], [], [], [], [])

    @staticmethod
    def from_groups(
        groups: Sequence[Any],
        threshold: float,
        preferred_refs: Iterable[int] = (),
        pair_best: Callable[[int, int], float | None] | None = None,
        pair_kind: Callable[[int, int], str | None] | None = None,
        copy_kind: Callable[[int, int], str | None] | None = None,
        pair_of: Callable[[int, int], Any] | None = None,
    ) -> Snapshot:
        """Flatten ``simscan.similarity.Group`` objects, keeping their member order (reference
        first, then best first).  A file id in ``preferred_refs`` (oldest choice first) that is
        a member of a group becomes that group's reference (the user's "make reference"); its
        members' similarities are then re-expressed against it: 100 for a copy of it
        (``copy_kind`` of (new reference id, member id) not None), unchanged when it is a copy of
        the old reference, else the old reference's score for the old reference and its copies,
        else ``pair_best(new_ref_id, member_id)`` (NaN when the two were never paired); their kinds
        by :func:`rereferenced_kind` (``pair_kind`` and ``copy_kind``, when given); their detailed
        scores (``pairs``) by the same rules from the pairs as listed, ``pair_of(id, id)`` (a
        ``Pair`` of the two files in either orientation, or None).

        One pass of list comprehensions per column (not per-member appends): 200,000
        members flatten in ~0.2 s, in a worker."""
        # Later choices win: the user's most recent "make reference" in a group.
        preferred = {fid: rank for rank, fid in enumerate(preferred_refs)}
        flat: list[Any] = []
        start = [0]
        overrides: dict[int, float] = {}  # flattened member index -> similarity to the new reference
        kinds: dict[int, str] = {}  # flattened member index -> kind against the new reference
        paired: dict[int, tuple[str, Any]] = {}  # flattened member index -> how its Pair is made, from what
        for grp in groups:
            ms = grp.members
            ref = grp.reference
            if not ms or ms[0].file_id != ref.file_id:
                ms = [ref, *[m for m in ms if m.file_id != ref.file_id]]
            if preferred:
                ms = Snapshot._rereference(ms, preferred, pair_best, len(flat), overrides, kinds, pair_kind, copy_kind,
                                           paired, pair_of)
            flat.extend(ms)
            start.append(len(flat))
        n = len(start) - 1
        counts = np.diff(np.asarray(start, dtype=np.int64))
        group = np.repeat(np.arange(n, dtype=np.int64), counts).tolist()
        is_ref_a = np.zeros(len(flat), dtype=bool)
        is_ref_a[np.asarray(start[:-1], dtype=np.int64)] = True
        near = KIND_CODE["near"]
        sim = [m.similarity for m in flat]
        for i in start[:-1]:
            sim[i] = 100.0
        for i, v in overrides.items():
            sim[i] = v
        pairs = [getattr(m, "pair", None) for m in flat]
        for i in start[:-1]:
            pairs[i] = None
        set_ids: dict[tuple[int, int], int] = {}
        m_set = [set_ids.setdefault((g, m.copy_set), len(set_ids)) if getattr(m, "copy_set", 0)
                 else -1 - i for i, (g, m) in enumerate(zip(group, flat))]
        final_kind = [kinds.get(i, m.kind) for i, m in enumerate(flat)]
        for i, (how, p) in paired.items():
            # Oriented (new reference, member), as MemberPairs makes them from the pair columns.
            ref, m = flat[start[group[i]]], flat[i]
            if how == "copy":
                kd = final_kind[i]
                pairs[i] = Pair(ref.file_id, m.file_id, ref.path, m.path, 100.0, 100.0, 100.0, 0, kd == "exact", kd)
            elif p is None:
                pairs[i] = None
            else:
                ca, cb = p.containment_a, p.containment_b
                if how == "reverse" or (how == "pair" and p.a_id != ref.file_id):
                    ca, cb = cb, ca
                pairs[i] = Pair(ref.file_id, m.file_id, ref.path, m.path, p.resemblance, ca, cb, p.simhash_distance,
                                p.exact, p.kind, p.view, p.longest_passage, p.shared_chars)
        snap = Snapshot.from_columns(
            threshold,
            start,
            [KIND_CODE.get(g.kind, near) for g in groups],
            group,
            [m.file_id for m in flat],
            [m.size for m in flat],
            [m.mtime_ns for m in flat],
            [float(v) for v in sim],
            [KIND_CODE.get(k, near) for k in final_kind],
            is_ref_a.tolist(),
            [m.path for m in flat],
            [m.encoding for m in flat],
            [bool(m.is_text) for m in flat],
            m_set,
            (lambda ii, kk: np.array([copy_kind(flat[k].file_id, flat[i].file_id) == "exact"
                                      for i, k in zip(ii.tolist(), kk.tolist())], dtype=bool))
            if copy_kind is not None else None,
        )
        snap.pairs.extend(pairs)
        return snap

    @staticmethod
    def _rereference(
        ms: list[Any],
        preferred: dict[int, int],
        pair_best: Callable[[int, int], float | None] | None,
        base: int,
        overrides: dict[int, float],
        kinds: dict[int, str],
        pair_kind: Callable[[int, int], str | None] | None = None,
        copy_kind: Callable[[int, int], str | None] | None = None,
        paired: dict[int, tuple[str, Any]] | None = None,
        pair_of: Callable[[int, int], Any] | None = None,
    ) -> list[Any]:
        chosen = [m for m in ms if m.file_id in preferred]
        new = max(chosen, key=lambda m: preferred[m.file_id]) if chosen else None
        if new is None or new is ms[0]:
            return ms
        old = ms[0]
        same_content = new.kind in _COPIES
        how: tuple[str, Any]
        placed: list[tuple[Any, float, tuple[str, Any], str]] = []  # (member, score, how its Pair is made, kind)
        for m in ms:
            if m is new:
                continue
            copy = copy_kind(new.file_id, m.file_id) if copy_kind is not None else None
            if copy is not None:
                v: float | None = 100.0  # a copy of the new reference
                how = ("copy", None)
            elif same_content:
                # The new reference holds the old one's content: every score carries over.
                v = 100.0 if m is old else m.similarity
                how = ("copy", None) if m is old or m.kind in _COPIES else ("keep", m.pair)
            elif m is old or m.kind in _COPIES:
                v = new.similarity  # a copy of the old reference scores as the old reference did
                how = ("reverse", new.pair)  # that pair, read from the new reference's side
            else:
                v = pair_best(new.file_id, m.file_id) if pair_best is not None else None
                how = ("pair", pair_of(new.file_id, m.file_id) if pair_of is not None else None)
            kind = rereferenced_kind(
                m is old,
                m.kind,
                new.kind,
                copy,
                pair_kind(new.file_id, m.file_id) if pair_kind is not None else None,
            )
            placed.append((m, math.nan if v is None else float(v), how, kind))
        # Best first, as every group lists its members (copies before equal scores); a file never paired
        # with the new reference last.
        placed.sort(key=lambda t: (-t[1] if t[1] == t[1] else math.inf, KIND_CODE.get(t[3], 9)))
        for i, (_m, v, how, kind) in enumerate(placed, 1):
            overrides[base + i] = v
            if paired is not None:
                paired[base + i] = how
            kinds[base + i] = kind
        return [new, *(t[0] for t in placed)]

    @staticmethod
    def from_group_arrays(
        ga: Any,
        files: Any,
        pairs: Any,
        threshold: float,
        preferred_refs: Iterable[int] = (),
    ) -> Snapshot:
        """The snapshot of a columnar grouping (``simscan.similarity.grouping.GroupArrays`` over
        the rows of ``files``, from ``pairs``: the ``PairArrays`` grouped, ordered and rounded as
        ``find_pairs`` lists them).  Same result as :meth:`from_groups` on the ``Group`` objects
        of that grouping, without building one: numpy columns, one list comprehension per text
        column, and the per-member pairs made only when asked for (:class:`MemberPairs`).
        ``preferred_refs`` as in :meth:`from_groups` (a loop over the groups concerned only)."""
        ids = np.asarray(files.ids, dtype=np.int64)
        g_start = np.asarray(ga.g_start, dtype=np.int64)
        n, m = g_start.size - 1, int(ga.m_row.size)
        m_group = np.repeat(np.arange(n, dtype=np.int64), np.diff(g_start))
        order = np.arange(m, dtype=np.int64)
        kinds = np.asarray(ga.m_kind, dtype=np.int8).copy()  # against each member's (new) reference
        sim = np.asarray(ga.m_sim, dtype=np.float64).copy()
        # Per final position, the pair the member's scores come from (see MemberPairs): an index
        # into the pair columns, -1 for a copy of the reference (100 %), -2 for none.
        pair_k = np.asarray(ga.m_pair, dtype=np.int64).copy()
        swap = np.asarray(ga.m_swap, dtype=bool).copy()
        new_k: dict[int, tuple[int, bool]] = {}  # final position -> (pair, swap), members of re-referenced groups
        preferred = {int(fid): rank for rank, fid in enumerate(preferred_refs)}
        if preferred and m:
            m_ids = ids[ga.m_row]
            want = np.fromiter(preferred, np.int64, len(preferred))
            touched = np.unique(m_group[np.isin(m_ids, want)])
            rows_of = np.asarray(ga.m_row, dtype=np.int64).tolist()
            in_touched = np.isin(m_group, touched)
            pair_at = _pair_lookup(pairs, files, np.asarray(ga.m_row, dtype=np.int64)[in_touched])
            copy_of = _copy_kind(files)
            ids_l, kind_l, sim0 = m_ids.tolist(), ga.m_kind.tolist(), ga.m_sim.tolist()
            pk0, sw0 = ga.m_pair.tolist(), ga.m_swap.tolist()
            p_best, p_kind = pairs.best, pairs.kind
            start_l = g_start.tolist()
            for g in touched.tolist():
                s, e = start_l[g], start_l[g + 1]
                chosen = [j for j in range(s, e) if ids_l[j] in preferred]
                new = max(chosen, key=lambda j: preferred[ids_l[j]])
                if new == s:
                    continue
                same_content = KINDS[kind_l[new]] in ("exact", "content")
                placed: list[tuple[int, float, int, bool]] = []  # (member, score, pair, swap)
                for j in range(s, e):
                    if j == new:
                        continue
                    copy = copy_of(rows_of[new], rows_of[j])
                    v: float | None
                    kk, ksw = pair_at(rows_of[new], rows_of[j])
                    pk = int(p_kind[kk]) if kk >= 0 else None
                    if copy is not None:
                        v, k, sw = 100.0, -1, False  # a copy of the new reference
                    elif same_content:
                        # The new reference holds the old one's content: every score carries over
                        # (the old reference scores as a copy: pair -1).
                        v, k, sw = (100.0 if j == s else sim0[j]), pk0[j], sw0[j]
                    elif j == s or KINDS[kind_l[j]] in ("exact", "content"):
                        # The old reference and its copies score as the old reference did with the new
                        # one: that pair, read from the new reference's side.
                        v, k, sw = sim0[new], pk0[new], not sw0[new]
                    else:
                        k, sw = (kk, ksw) if kk >= 0 else (-2, False)  # -2: never paired, no score
                        v = float(p_best[k]) if k >= 0 else None
                    kinds[j] = KIND_CODE[
                        rereferenced_kind(
                            j == s,
                            KINDS[kind_l[j]],
                            KINDS[kind_l[new]],
                            copy,
                            None if pk is None else KINDS[pk],
                        )
                    ]
                    placed.append((j, math.nan if v is None else float(v), k, sw))
                # Best first, as every group lists its members (copies before equal scores); a file
                # never paired with the new reference (no score) last.
                placed.sort(key=lambda t: (-t[1] if t[1] == t[1] else math.inf, int(kinds[t[0]])))
                out = [new, *(t[0] for t in placed)]
                for i, (_j, v, k, sw) in enumerate(placed, 1):
                    sim[s + i] = v
                    new_k[s + i] = (k, sw)
                order[s:e] = out
                sim[s] = sim0[new]  # set to 100 below, as every reference
        rows = np.asarray(ga.m_row, dtype=np.int64)[order]
        is_ref = np.zeros(m, dtype=bool)
        is_ref[g_start[:-1]] = True
        sim[is_ref] = 100.0
        pair_k, swap = pair_k[order], swap[order]
        for pos, (k, sw) in new_k.items():
            pair_k[pos], swap[pos] = k, sw
        rows_l = rows.tolist()
        fpaths, fenc = files.paths, files.encoding
        text = np.asarray(files.is_text, dtype=bool)[rows]
        digests, fsize = digest_columns(files), np.asarray(files.size, dtype=np.int64)

        def same_bytes(ii: np.ndarray, kk: np.ndarray) -> np.ndarray:
            a, b = rows[ii], rows[kk]
            return (digests[a] == digests[b]).all(axis=1) & (fsize[a] == fsize[b])

        snap = Snapshot._build(
            threshold, g_start, np.asarray(ga.g_kind, dtype=np.int8), m_group, ids[rows],
            np.asarray(files.size, dtype=np.int64)[rows], np.asarray(files.mtime_ns, dtype=np.int64)[rows], sim,
            kinds[order], is_ref, [fpaths[r] for r in rows_l], [fenc[r] for r in rows_l],
            text.tolist(), np.asarray(ga.m_set, dtype=np.int64)[order], same_bytes,
        )
        names = names_of(files)
        snap.__dict__["names"] = [names[r] for r in rows_l]  # (the cached property, from the table's)
        member_pairs = MemberPairs(
            files, pairs, rows, rows[g_start[:-1]][m_group], np.where(is_ref, -2, pair_k), swap, snap.m_kind,
        )
        codes, names = folders_of(files)
        return dataclasses.replace(snap, pairs=member_pairs, folder_codes=codes[rows], folder_names=names)

    @staticmethod
    def from_columns(
        threshold: float,
        start: list[int],
        kind: list[int],
        group: list[int],
        fid: list[int],
        size: list[int],
        mtime: list[int],
        sim: list[float],
        mkind: list[int],
        is_ref: list[bool],
        paths: list[str],
        enc: list[str | None],
        text: list[bool] | None = None,
        sets: list[int] | None = None,
        same_bytes: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    ) -> Snapshot:
        """``sets``: each member's copy set (None: the reference with its exact / content members,
        every other member alone); ``same_bytes(members, keepers)``: whether each copy has its keeper's
        bytes (None: exact when the member's kind is)."""
        mk = np.asarray(mkind, dtype=np.int8)
        ref_a = np.asarray(is_ref, dtype=bool)
        if sets is None:
            grp = np.asarray(group, dtype=np.int64)
            copy = ~ref_a & (mk <= KIND_CODE["content"])
            sets_a = np.where(ref_a | copy, grp, -1 - np.arange(mk.size))
        else:
            sets_a = np.asarray(sets, dtype=np.int64)
        return Snapshot._build(
            threshold, np.asarray(start, dtype=np.int64), np.asarray(kind, dtype=np.int8),
            np.asarray(group, dtype=np.int64), np.asarray(fid, dtype=np.int64), np.asarray(size, dtype=np.int64),
            np.asarray(mtime, dtype=np.int64), np.asarray(sim, dtype=np.float64), mk,
            ref_a, paths, enc, text if text is not None else [True] * len(paths), sets_a,
            same_bytes if same_bytes is not None else (lambda i, k: mk[i] == KIND_CODE["exact"]),
        )

    @staticmethod
    def _build(
        threshold: float,
        g_start: np.ndarray,
        g_kind: np.ndarray,
        m_group: np.ndarray,
        m_file_id: np.ndarray,
        m_size: np.ndarray,
        m_mtime: np.ndarray,
        m_sim: np.ndarray,
        m_kind: np.ndarray,
        m_is_ref: np.ndarray,
        paths: list[str],
        enc: list[str | None],
        text: list[bool],
        m_set: np.ndarray,
        same_bytes: Callable[[np.ndarray, np.ndarray], np.ndarray],
    ) -> Snapshot:
        n = g_start.size - 1
        m = int(m_group.size)
        keeper, keeper_of, set_size = copy_sets(m_group, m_set)
        copy_kind = np.full(m, -1, np.int8)
        extras = np.flatnonzero(~keeper)
        copy_kind[extras] = np.where(same_bytes(extras, keeper_of[extras]), KIND_CODE["exact"], KIND_CODE["content"])
        ko = keeper_of.tolist()
        if n > 0:
            heads = g_start[:-1]
            reclaim = np.add.reduceat(np.where(keeper, 0, m_size), heads)
            extra = np.add.reduceat((~keeper).astype(np.int64), heads)
            newest = np.maximum.reduceat(m_mtime, heads)
            # The reference's 100 % would hide the interesting number: the weakest member.
            sim_wo_ref = np.where(m_is_ref, np.inf, np.nan_to_num(m_sim, nan=np.inf))
            min_sim = np.minimum.reduceat(sim_wo_ref, heads)
            min_sim = np.where(np.isinf(min_sim), np.nan, min_sim)
        else:
            reclaim = np.zeros(0, np.int64)
            extra = np.zeros(0, np.int64)
            newest = np.zeros(0, np.int64)
            min_sim = np.zeros(0, np.float64)
        return Snapshot(
            threshold=float(threshold),
            g_start=g_start,
            g_kind=g_kind,
            g_min_sim=min_sim,
            g_reclaim=reclaim.astype(np.int64),
            g_mtime=newest.astype(np.int64),
            m_group=m_group,
            m_file_id=m_file_id,
            m_size=m_size,
            m_mtime=m_mtime,
            m_sim=m_sim,
            m_kind=m_kind,
            m_is_ref=m_is_ref,
            m_set=m_set,
            m_keeper=keeper,
            m_keeper_of=keeper_of,
            m_set_size=set_size,
            m_copy_kind=copy_kind,
            g_extra=extra.astype(np.int64),
            paths=paths,
            folded=[p.casefold() for p in paths],
            encodings=enc,
            is_text=text,
            l_start=g_start.tolist(),
            l_group=m_group.tolist(),
            l_file_id=m_file_id.tolist(),
            l_size=m_size.tolist(),
            l_mtime=m_mtime.tolist(),
            l_sim=m_sim.tolist(),
            l_kind=m_kind.tolist(),
            l_is_ref=m_is_ref.tolist(),
            l_g_kind=g_kind.tolist(),
            l_g_min_sim=min_sim.tolist(),
            l_g_reclaim=reclaim.tolist(),
            l_keeper=keeper.tolist(),
            l_keeper_of=ko,
            l_set_size=set_size.tolist(),
            l_copy_kind=copy_kind.tolist(),
            l_g_extra=extra.tolist(),
        )


def copy_sets(m_group: np.ndarray, m_set: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keeper, keeper_of, set_size) per member: a set's keeper is its first member in its group
    (the reference for the reference's own set), ``keeper_of`` the keeper's member index, and
    ``set_size`` how many members the set has there."""
    m = int(m_group.size)
    if m == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, np.int64), np.zeros(0, np.int64)
    o = np.lexsort((np.arange(m), m_set, m_group))
    g, st = m_group[o], m_set[o]
    first = np.ones(m, dtype=bool)
    first[1:] = (g[1:] != g[:-1]) | (st[1:] != st[:-1])
    run = np.cumsum(first) - 1
    heads = o[first]
    sizes = np.bincount(run)
    keeper = np.zeros(m, dtype=bool)
    keeper[heads] = True
    keeper_of = np.empty(m, np.int64)
    keeper_of[o] = heads[run]
    set_size = np.empty(m, np.int64)
    set_size[o] = sizes[run]
    return keeper, keeper_of, set_size


_NAMES: list[tuple[Any, list[str]]] = []
_DIGESTS: list[tuple[Any, np.ndarray]] = []


def names_of(files: Any) -> list[str]:
    """Each row's file name, remembered for the last table seen (as :func:`folders_of`)."""
    entry = _NAMES[0] if _NAMES else None
    if entry is not None and entry[0] is files:
        return entry[1]
    names = [p.rpartition(os.sep)[2] for p in files.paths]
    _NAMES[:] = [(files, names)]
    return names


def digest_columns(files: Any) -> np.ndarray:
    """Each row's checksum as two uint64 columns (an absent one as zeros), remembered for the last
    table seen: copies are told from "content" copies by comparing them, 100,000 at once."""
    entry = _DIGESTS[0] if _DIGESTS else None
    if entry is not None and entry[0] is files:
        return entry[1]
    raw = b"".join((c or b"")[:16].ljust(16, b"\0") for c in files.checksum)
    cols = np.frombuffer(raw, dtype="<u8").reshape(-1, 2) if raw else np.zeros((0, 2), np.uint64)
    _DIGESTS[:] = [(files, cols)]
    return cols


_FOLDERS: list[tuple[Any, np.ndarray, list[str]]] = []


def folders_of(files: Any) -> tuple[np.ndarray, list[str]]:
    """(code of each row's folder, sorted folder names) of a file table, remembered for the last
    table seen (a regroup reuses the table of its load; tables are never edited in place)."""
    entry = _FOLDERS[0] if _FOLDERS else None  # one read: workers of two loads may race here
    if entry is not None and entry[0] is files:
        return entry[1], entry[2]
    sep = os.sep
    dirs = []
    for p in files.paths:
        head = p.rpartition(sep)[0]
        # rpartition equals os.path.dirname unless the head is empty or ends with a separator.
        dirs.append(head if head and head[-1] != sep else os.path.dirname(p))
    names = sorted(set(dirs))
    code = {d: i for i, d in enumerate(names)}
    codes = np.fromiter(map(code.__getitem__, dirs), np.int64, len(dirs))
    _FOLDERS[:] = [(files, codes, names)]
    return codes, names


def _copy_key(files: Any) -> Callable[[int, int], Any]:
    """key(row, _) of a file table: equal for two rows that :func:`_copy_kind` calls copies (the
    same text, or for files without a text hash the same bytes)."""
    size, ck, ch, text = files.size, files.checksum, files.content_hash, files.is_text

    def key(r: int, _unused: int = 0) -> Any:
        return ("c", ch[r], bool(text[r])) if ch[r] is not None else ("x", ck[r], int(size[r]))

    return key


def _pair_lookup(pairs: Any, files: Any, rows: np.ndarray) -> Callable[[int, int], tuple[int, bool]]:
    """pair(ra, rb) -> (index in the pair columns, swapped) of the scored pair of two rows of
    ``files`` among ``rows`` (either orientation, a later listed pair of the same two winning;
    swapped: listed as (rb, ra)), or (-1, False) when none.  When the two were never paired
    themselves, the pair of a copy of ``ra`` with a copy of ``rb`` stands for theirs: the pair
    search scores one file of each set of copies (its *representative*) and lists the others
    only against it, and copies have the same fingerprints, hence the same scores.  Without
    this, a copy made the reference (Ctrl+E) showed no score for most of its group."""
    key = _copy_key(files)
    ch, ck = files.content_hash, files.checksum
    rows_l = np.unique(np.asarray(rows, dtype=np.int64)).tolist()
    want = {key(r) for r in rows_l}
    hashes = {k[1] for k in want}
    # Every row that is a copy of one of ``rows`` (a pass over the table's hash lists, no key built
    # for rows whose hashes are not wanted).
    mates = [r for r, (h, c) in enumerate(zip(ch, ck)) if (h in hashes or c in hashes) and key(r) in want]
    mates_a = np.asarray(sorted(set(mates) | set(rows_l)), dtype=np.int64)
    a, b = np.asarray(pairs.a, dtype=np.int64), np.asarray(pairs.b, dtype=np.int64)
    sel = np.flatnonzero(np.isin(a, mates_a) | np.isin(b, mates_a))
    direct: dict[tuple[int, int], tuple[int, bool]] = {}
    by_copy: dict[tuple[Any, Any], tuple[int, Any]] = {}
    for x, y, i in zip(a[sel].tolist(), b[sel].tolist(), sel.tolist()):
        direct[(x, y)], direct[(y, x)] = (i, False), (i, True)
        kx, ky = key(x), key(y)
        by_copy[(kx, ky)] = by_copy[(ky, kx)] = (i, kx)

    def pair(ra: int, rb: int) -> tuple[int, bool]:
        found = direct.get((ra, rb))
        if found is not None:
            return found
        ka = key(ra)
        i, kx = by_copy.get((ka, key(rb)), (-1, None))
        return (i, i >= 0 and kx != ka)

    return pair


def _copy_kind(files: Any) -> Callable[[int, int], str | None]:
    """copy(row_a, row_b) of a file table: "exact" for the same bytes (size and checksum),
    "content" for the same text (content hash), else None."""
    size, ck, ch, text = files.size, files.checksum, files.content_hash, files.is_text

    def copy(ra: int, rb: int) -> str | None:
        if ck[ra] is not None and ck[ra] == ck[rb] and int(size[ra]) == int(size[rb]):
            return "exact"
        if ch[ra] is not None and ch[ra] == ch[rb] and bool(text[ra]) == bool(text[rb]):
            return "content"
        return None

    return copy


class MemberPairs(Sequence[Any]):
    """Per member of a snapshot, the similarity layer's ``Pair`` (reference, member) with the
    detailed scores, or None (a reference; a member re-expressed against a user-chosen
    reference).  Made on demand from the pair columns: a tooltip or the preview asks for one,
    and building 200,000 of them up front cost ~0.3 s per load or regroup."""

    def __init__(self, files: Any, pairs: Any, rows: np.ndarray, ref_rows: np.ndarray, pair_k: np.ndarray,
                 swap: np.ndarray, kind: np.ndarray) -> None:
        self._files, self._pairs = files, pairs
        self._rows, self._ref_rows, self._k, self._swap, self._kind = rows, ref_rows, pair_k, swap, kind

    def __len__(self) -> int:
        return int(self._rows.size)

    def view_of(self, m: int) -> str:
        """The view of member ``m``'s pair ("text" or "code"; "" without one: see ``__getitem__``),
        without building the ``Pair``."""
        k = int(self._k[m])
        if k < 0:
            return "" if k == -2 else "text"  # -2: no pair; -1: a copy of the reference
        return "code" if int(self._pairs.view[k]) == 1 else "text"

    def evidence_of(self, m: int) -> tuple[int | None, int | None]:
        """(longest passage, shared characters) of member ``m``'s pair (None: a copy, or not weighed),
        without building the ``Pair``."""
        k = int(self._k[m])
        if k < 0:
            return None, None
        longest, shared = int(self._pairs.longest[k]), int(self._pairs.shared[k])
        return (None if longest < 0 else longest), (None if shared < 0 else shared)

    def __getitem__(self, m: Any) -> Any:
        if isinstance(m, slice):
            return [self[i] for i in range(*m.indices(len(self)))]
        m = int(m)
        if m < 0:
            m += len(self)
        if not 0 <= m < len(self):
            raise IndexError(m)
        k = int(self._k[m])
        if k == -2:
            return None
        from simscan.similarity.types import VIEWS

        f = self._files
        ref, r = int(self._ref_rows[m]), int(self._rows[m])
        ra, rb = int(f.ids[ref]), int(f.ids[r])
        pa, pb = f.paths[ref], f.paths[r]
        if k < 0:
            kd = KINDS[int(self._kind[m])]
            return Pair(ra, rb, pa, pb, 100.0, 100.0, 100.0, 0, kd == "exact", kd)
        t = self._pairs
        ca, cb = float(t.containment_a[k]), float(t.containment_b[k])
        if self._swap[m]:
            ca, cb = cb, ca
        return Pair(ra, rb, pa, pb, float(t.resemblance[k]), ca, cb, int(t.distance[k]), bool(t.exact[k]),
                    KINDS[int(t.kind[k])], VIEWS[int(t.view[k])], *self.evidence_of(m))
