"""Qt item models over immutable snapshots.  ``data()`` never touches SQLite or the disk.

* :class:`Snapshot` — the groups of one grouping run, flattened into per-member columns
  (numpy for vector work: sorting, filtering, totals; Python lists for the per-cell reads of
  ``data()``, which are faster than numpy scalar indexing).  Built in a worker.
* :class:`ResultsModel` — tree of groups → member files over a Snapshot.  Group rows carry
  ``internalId`` 0; a member row carries ``1 + its group's snapshot index``, which stays valid
  when the groups are re-sorted, so only group rows move on a sort.
* :class:`ResultsProxy` — filtering (kind, path search) through precomputed masks and sorting
  delegated to the source model (one numpy argsort instead of ~n·log n Python ``lessThan``
  calls: 100,000 groups sort in milliseconds instead of seconds).
* :class:`FolderModel` — the folders to scan, each optionally a reference folder; accepts
  dropped folders (``text/uri-list``).
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractListModel,
    QDateTime,
    QLocale,
    QMimeData,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    QUrl,
    Signal,
)
from PySide6.QtGui import QFont

from simscan.similarity.types import KIND_CODE, KINDS, Pair, member_kind, shown_pct

ModelIndex = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()  # the invalid index, a default argument (never mutated)

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
KIND_FILTERS: dict[str, frozenset[int]] = {
    "all": frozenset(range(len(KINDS))),
    "exact": frozenset({KIND_CODE["exact"], KIND_CODE["content"]}),
    "similar": frozenset({KIND_CODE["near"]}),
    "contained": frozenset({KIND_CODE["contained"]}),
}

SortRole = Qt.ItemDataRole.UserRole + 1  # raw number / string used for sorting
PathRole = Qt.ItemDataRole.UserRole + 2  # member path (group rows: the reference's path)
FileIdRole = Qt.ItemDataRole.UserRole + 3  # index file id (group rows: the reference's)
IsGroupRole = Qt.ItemDataRole.UserRole + 4
SimilarityRole = Qt.ItemDataRole.UserRole + 5  # float percent 0..100, or None
MemberRole = Qt.ItemDataRole.UserRole + 6  # flattened member index (group rows: the reference's)

COL_PATH, COL_SIMILARITY, COL_KIND, COL_SIZE, COL_MODIFIED, COL_ENCODING = range(6)
_N_COLUMNS = 6

#: Top-level rows handed to the view at a time (fetchMore).  A QTreeView lays out every
#: top-level row it knows (index + flags + rowCount per row, each a Python call here, ~5 µs),
#: so 100,000 groups at once cost ~2 s; 1,000 rows cost ~25 ms, and scrolling to the end
#: fetches the next batch.
FETCH_BATCH = 1000

_F_ITEM = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
_F_GROUP0 = _F_ITEM | Qt.ItemFlag.ItemIsUserCheckable
_F_MEMBER = _F_ITEM | Qt.ItemFlag.ItemNeverHasChildren
_F_MEMBER0 = _F_MEMBER | Qt.ItemFlag.ItemIsUserCheckable
_NO_FLAGS = Qt.ItemFlag.NoItemFlags


_Py_IncRef = ctypes.pythonapi.Py_IncRef
_Py_IncRef.argtypes = [ctypes.py_object]
_Py_IncRef.restype = None


def no_data() -> None:
    """``None`` for a ``data()`` / ``headerData()`` override ("no value for this role").

    PySide6 6.12.0 drops one reference to ``None`` each time C++ converts a ``None`` returned
    by a Python ``data()`` override into an invalid QVariant (measured: ``sys.getrefcount(None)``
    falls by exactly one per call through a proxy or ``QModelIndex.data``).  A view calls
    data() millions of times, so the interpreter eventually aborts with "deallocating None".
    Taking one extra reference per return compensates; an extra reference to None is harmless
    if a later PySide6 fixes the bug (see tests/gui/test_models.py).
    """
    _Py_IncRef(None)


def _tr(text: str) -> str:
    from PySide6.QtCore import QCoreApplication

    return QCoreApplication.translate("ResultsModel", text)


def percent_text(v: float) -> str:
    """A score as the list shows it ("" when there is none): cut to one decimal, as everywhere
    (``shown_pct``), so the slider's threshold keeps every row shown at or above it."""
    return "" if math.isnan(v) else f"{shown_pct(v):.1f} %"


def format_size(n: int) -> str:
    """Bytes as a short localised size ("1.2 MB"; decimal units like most file managers)."""
    return QLocale().formattedDataSize(int(n), 1, QLocale.DataSizeFormat.DataSizeSIFormat)


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
    g_reclaim: np.ndarray  # int64[n]: bytes of all members but the reference
    g_mtime: np.ndarray  # int64[n]: newest member mtime
    m_group: np.ndarray  # int64[m]
    m_file_id: np.ndarray  # int64[m]
    m_size: np.ndarray  # int64[m]
    m_mtime: np.ndarray  # int64[m]
    m_sim: np.ndarray  # float64[m]
    m_kind: np.ndarray  # int8[m]
    m_is_ref: np.ndarray  # bool[m]
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
    # Per member: the similarity layer's Pair (reference, member) with the detailed scores, or
    # None (the reference itself; a member re-expressed against a user-chosen reference).
    pairs: list[Any] = field(default_factory=list, repr=False)
    # Per member, its folder as a code into ``folder_names`` (sorted), when known (computed once
    # per file table: the folder chart of a regroup then costs a bincount, not 200,000 dirnames).
    folder_codes: np.ndarray | None = field(default=None, repr=False)
    folder_names: list[str] = field(default_factory=list, repr=False)

    def member_view(self, m: int) -> str:
        """The view that scored member ``m`` against its reference ("text" or "code"), "" when the
        member has no such pair (the reference; a member re-expressed against a chosen one)."""
        if m >= len(self.pairs):
            return ""
        if isinstance(self.pairs, MemberPairs):
            return self.pairs.view_of(m)
        pair = self.pairs[m]
        return "" if pair is None else getattr(pair, "view", "text")

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
        return text

    @property
    def n_groups(self) -> int:
        return len(self.l_start) - 1

    @cached_property
    def folders(self) -> list[tuple[str, int, int]]:
        """:meth:`folder_space` computed once (workers touch it, so the GUI thread need not)."""
        return self.folder_space()

    def folder_space(self, top: int = 8) -> list[tuple[str, int, int]]:
        """The folders holding the most reclaimable bytes: (folder, bytes, files), largest
        first (ties by folder name).  Reclaimable = files that are not their group's reference."""
        copies = np.flatnonzero(~self.m_is_ref)
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
                                p.exact, p.kind, p.view)
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
        snap = Snapshot._build(
            threshold, g_start, np.asarray(ga.g_kind, dtype=np.int8), m_group, ids[rows],
            np.asarray(files.size, dtype=np.int64)[rows], np.asarray(files.mtime_ns, dtype=np.int64)[rows], sim,
            kinds[order], is_ref, [fpaths[r] for r in rows_l], [fenc[r] for r in rows_l],
            text.tolist(),
        )
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
    ) -> Snapshot:
        return Snapshot._build(
            threshold, np.asarray(start, dtype=np.int64), np.asarray(kind, dtype=np.int8),
            np.asarray(group, dtype=np.int64), np.asarray(fid, dtype=np.int64), np.asarray(size, dtype=np.int64),
            np.asarray(mtime, dtype=np.int64), np.asarray(sim, dtype=np.float64), np.asarray(mkind, dtype=np.int8),
            np.asarray(is_ref, dtype=bool), paths, enc, text if text is not None else [True] * len(paths),
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
    ) -> Snapshot:
        n = g_start.size - 1
        if n > 0:
            heads = g_start[:-1]
            reclaim = np.add.reduceat(np.where(m_is_ref, 0, m_size), heads)
            newest = np.maximum.reduceat(m_mtime, heads)
            # The reference's 100 % would hide the interesting number: the weakest member.
            sim_wo_ref = np.where(m_is_ref, np.inf, np.nan_to_num(m_sim, nan=np.inf))
            min_sim = np.minimum.reduceat(sim_wo_ref, heads)
            min_sim = np.where(np.isinf(min_sim), np.nan, min_sim)
        else:
            reclaim = np.zeros(0, np.int64)
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
        )


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
                    KINDS[int(t.kind[k])],
                    VIEWS[int(t.view[k])])


@dataclass(frozen=True)
class GroupShown:
    """Per snapshot group, of the files a filter shows: how many (the reference included), and
    the bytes of those that are not the reference."""

    files: list[int]
    bytes: list[int]


class ResultsModel(QAbstractItemModel):
    """Groups → member files.  Check state (column 0) = marked for the trash; the group row's
    check box shows whether none, some or all of its members are marked."""

    marksChanged = Signal()

    HEADERS = ("Path", "Similarity", "Kind", "Size", "Modified", "Encoding")

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._snap = Snapshot.empty()
        self._sorted: list[int] = []  # every group, in sort order
        self._order: list[int] = []  # row → snapshot group index (sorted, filtered)
        self._pos: list[int] = []  # snapshot group index → row, -1 when filtered out
        self._loaded = 0  # rows exposed to views so far (fetchMore)
        self._group_filter: list[bool] | None = None  # per snapshot group; None shows all
        # Per snapshot group, of the files the filter shows: how many, and the bytes of those that are not
        # the reference (None: every file is shown).
        self._g_shown: list[int] | None = None
        self._g_shown_bytes: list[int] | None = None
        self._marked: set[int] = set()  # file ids
        self._protected_roots: tuple[str, ...] = ()
        self._protected_prefixes: tuple[str, ...] = ()
        self._bold = QFont()
        self._bold.setBold(True)
        self._sort: tuple[int, Qt.SortOrder] | None = None
        self._locale = QLocale()

    # -- snapshot ---------------------------------------------------------------------------
    @property
    def snapshot(self) -> Snapshot:
        return self._snap

    def set_snapshot(
        self, snap: Snapshot, group_filter: list[bool] | None = None, shown: GroupShown | None = None
    ) -> None:
        """Swap in new results (a model reset), showing groups ``g`` with ``group_filter[g]``
        (None: all) and counting in each group header only the files ``shown`` counts (None: all).
        Marks of files still present are kept.  Views normally go through
        :meth:`ResultsProxy.set_snapshot`, which computes the filter."""
        self.beginResetModel()
        self._snap = snap
        self._group_filter = group_filter
        self._set_shown(shown)
        self._sorted = self._sorted_order(*self._sort) if self._sort is not None else list(range(snap.n_groups))
        self._apply_filter()
        if self._marked:
            self._marked &= set(snap.l_file_id)
        self.endResetModel()
        self.marksChanged.emit()

    def set_group_filter(self, visible: list[bool] | None, shown: GroupShown | None = None) -> None:
        """Show only groups ``g`` with ``visible[g]`` (None: all), their headers counting the files
        ``shown`` counts (None: all).  A model reset."""
        self.beginResetModel()
        self._group_filter = visible
        self._set_shown(shown)
        if self._sort is not None and self._sort[0] == COL_SIZE:
            self._sorted = self._sorted_order(*self._sort)  # (a group's size counts its shown files)
        self._apply_filter()
        self.endResetModel()

    def _set_shown(self, shown: GroupShown | None) -> None:
        self._g_shown = None if shown is None else shown.files
        self._g_shown_bytes = None if shown is None else shown.bytes

    def group_bytes(self, g: int) -> int:
        """Bytes of group ``g``'s shown files but its reference: what removing them would free."""
        return self._snap.l_g_reclaim[g] if self._g_shown_bytes is None else self._g_shown_bytes[g]

    def _apply_filter(self) -> None:
        vis = self._group_filter
        self._order = self._sorted if vis is None else [g for g in self._sorted if vis[g]]
        pos = np.full(self._snap.n_groups, -1, dtype=np.int64)
        pos[np.asarray(self._order, dtype=np.int64)] = np.arange(len(self._order), dtype=np.int64)
        self._pos = pos.tolist()
        self._loaded = min(FETCH_BATCH, len(self._order))

    def shown_order(self) -> list[int]:
        """Snapshot indexes of the groups the filter shows, in the shown order (fetched or not)."""
        return list(self._order)

    @property
    def shown_groups(self) -> int:
        """Groups passing the group filter (loaded into views or not)."""
        return len(self._order)

    def canFetchMore(self, parent: ModelIndex) -> bool:
        return not parent.isValid() and self._loaded < len(self._order)

    def fetchMore(self, parent: ModelIndex) -> None:
        if parent.isValid():
            return
        self.ensure_loaded(self._loaded + FETCH_BATCH - 1)

    def ensure_loaded(self, row: int) -> None:
        """Expose top-level rows up to ``row`` (e.g. to select a group further down)."""
        new = min(len(self._order), row + 1)
        if new > self._loaded:
            self.beginInsertRows(QModelIndex(), self._loaded, new - 1)
            self._loaded = new
            self.endInsertRows()

    def group_at_row(self, row: int) -> int:
        return self._order[row]

    def row_of_group(self, g: int) -> int:
        """Row of group ``g``, -1 when the filter hides it."""
        return self._pos[g]

    def member_of(self, index: ModelIndex) -> int:
        """Flattened member index of a file row; of the reference for a group row; -1 if invalid."""
        if not index.isValid():
            return -1
        iid = index.internalId()
        if iid == 0:
            return self._snap.l_start[self._order[index.row()]]
        return self._snap.l_start[iid - 1] + index.row()

    def group_of(self, index: ModelIndex) -> int:
        if not index.isValid():
            return -1
        iid = index.internalId()
        return self._order[index.row()] if iid == 0 else iid - 1

    def group_index(self, g: int, column: int = 0, load: bool = False) -> QModelIndex:
        """Index of group ``g`` (invalid when filtered out or, unless ``load``, not fetched yet)."""
        row = self._pos[g]
        if row < 0:
            return QModelIndex()
        if row >= self._loaded:
            if not load:
                return QModelIndex()
            self.ensure_loaded(row)
        return self.createIndex(row, column, 0)

    def member_index(self, m: int, column: int = 0, load: bool = False) -> QModelIndex:
        g = self._snap.l_group[m]
        if not self.group_index(g, load=load).isValid():
            return QModelIndex()
        return self.createIndex(m - self._snap.l_start[g], column, g + 1)

    # -- structure --------------------------------------------------------------------------
    def index(self, row: int, column: int, parent: ModelIndex = _ROOT) -> QModelIndex:
        # Bounds checked here rather than with hasIndex(), which would call rowCount and
        # columnCount back through Python: index() runs for every laid-out row.
        if row < 0 or not 0 <= column < _N_COLUMNS:
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column, 0) if row < self._loaded else QModelIndex()
        if parent.internalId() != 0 or parent.column() != 0:
            return QModelIndex()
        g = self._order[parent.row()]
        if row >= self._snap.l_start[g + 1] - self._snap.l_start[g]:
            return QModelIndex()
        return self.createIndex(row, column, g + 1)

    def parent(self, child: ModelIndex | None = None) -> Any:  # type: ignore[override]
        if child is None:  # QObject.parent()
            return super().parent()
        if not child.isValid():
            return QModelIndex()
        iid = child.internalId()
        if iid == 0:
            return QModelIndex()
        return self.createIndex(self._pos[iid - 1], 0, 0)

    def rowCount(self, parent: ModelIndex = _ROOT) -> int:
        if not parent.isValid():
            return self._loaded
        if parent.column() != 0 or parent.internalId() != 0:
            return 0
        return self._snap.group_size(self._order[parent.row()])

    def columnCount(self, parent: ModelIndex = _ROOT) -> int:
        return len(self.HEADERS)

    def hasChildren(self, parent: ModelIndex = _ROOT) -> bool:
        return self.rowCount(parent) > 0

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(self.HEADERS):
            if role == Qt.ItemDataRole.DisplayRole:
                return _tr(self.HEADERS[section])
            if role == Qt.ItemDataRole.ToolTipRole and section == COL_SIZE:
                return _tr("File size; for a group, the space freed by removing all but the reference")
        return no_data()

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        # Called for every laid-out row: precomputed constants, no enum arithmetic here.
        if not index.isValid():
            return _NO_FLAGS
        if index.internalId() == 0:
            return _F_GROUP0 if index.column() == 0 else _F_ITEM
        return _F_MEMBER0 if index.column() == 0 else _F_MEMBER

    # -- data -------------------------------------------------------------------------------
    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return no_data()
        s = self._snap
        iid = index.internalId()
        col = index.column()
        if iid == 0:
            return self._group_data(self._order[index.row()], col, role)
        m = s.l_start[iid - 1] + index.row()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == COL_PATH:
                return s.paths[m]
            if col == COL_SIMILARITY:
                v = s.l_sim[m]
                return percent_text(v)
            if col == COL_KIND:
                if s.l_is_ref[m]:
                    return _tr("reference")
                if s.member_view(m) == "code":
                    return _tr("{0} (code)").format(_tr(s.kind_name(m)))
                return _tr(s.kind_name(m))
            if col == COL_SIZE:
                return format_size(s.l_size[m])
            if col == COL_MODIFIED:
                return self._locale.toString(
                    QDateTime.fromMSecsSinceEpoch(s.l_mtime[m] // 1_000_000), QLocale.FormatType.ShortFormat
                )
            if col == COL_ENCODING:
                return s.encodings[m] or (_tr("binary") if not s.is_text[m] else "")
            return no_data()
        if role == SortRole:
            return (s.paths[m], s.l_sim[m], s.l_kind[m], s.l_size[m], s.l_mtime[m], s.encodings[m] or "")[col]
        if role == Qt.ItemDataRole.CheckStateRole and col == 0:
            return Qt.CheckState.Checked if s.l_file_id[m] in self._marked else Qt.CheckState.Unchecked
        if role == SimilarityRole:
            v = s.l_sim[m]
            return no_data() if math.isnan(v) else v
        if role == PathRole:
            return s.paths[m]
        if role == FileIdRole:
            return s.l_file_id[m]
        if role == MemberRole:
            return m
        if role == IsGroupRole:
            return False
        if role == Qt.ItemDataRole.ToolTipRole:
            if s.l_is_ref[m]:
                return _tr("Reference (kept): {0}").format(s.paths[m])
            if col == COL_SIMILARITY:
                return s.scores_text(m) or s.paths[m]
            return s.paths[m]
        if role == Qt.ItemDataRole.FontRole and s.l_is_ref[m]:
            return self._bold
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_SIMILARITY, COL_SIZE):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return no_data()

    def _group_data(self, g: int, col: int, role: int) -> Any:
        s = self._snap
        ref = s.l_start[g]
        count = s.l_start[g + 1] - ref
        if role == Qt.ItemDataRole.DisplayRole:
            if col == COL_PATH:
                name = os.path.basename(s.paths[ref]) or s.paths[ref]
                shown = count if self._g_shown is None else self._g_shown[g]
                if shown < count:  # the Show filter or the search hides some
                    return _tr("{0}  ({1} of {2} files shown)").format(name, shown, count)
                return _tr("{0}  ({1} files)").format(name, count)
            if col == COL_SIMILARITY:
                v = s.l_g_min_sim[g]
                return percent_text(v)
            if col == COL_KIND:
                return _tr(KINDS[s.l_g_kind[g]])
            if col == COL_SIZE:
                return format_size(self.group_bytes(g))
            return ""
        if role == SortRole:
            v = s.l_g_min_sim[g]
            return (s.paths[ref], v, s.l_g_kind[g], self.group_bytes(g), int(s.g_mtime[g]), "")[col]
        if role == Qt.ItemDataRole.CheckStateRole and col == 0:
            marked = sum(1 for f in s.l_file_id[ref : ref + count] if f in self._marked)
            if marked == 0:
                return Qt.CheckState.Unchecked
            return Qt.CheckState.Checked if marked == count else Qt.CheckState.PartiallyChecked
        if role == SimilarityRole:
            v = s.l_g_min_sim[g]
            return no_data() if math.isnan(v) else v
        if role == PathRole:
            return s.paths[ref]
        if role == FileIdRole:
            return s.l_file_id[ref]
        if role == MemberRole:
            return ref
        if role == IsGroupRole:
            return True
        if role == Qt.ItemDataRole.FontRole and col == COL_PATH:
            return self._bold
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == COL_SIZE:
                if self._g_shown is not None and self._g_shown[g] < count:
                    return _tr("{0} can be freed by removing the shown files but the reference ({1} with every file "
                               "of the group)").format(format_size(self.group_bytes(g)), format_size(s.l_g_reclaim[g]))
                return _tr("{0} can be freed by removing all but the reference").format(format_size(s.l_g_reclaim[g]))
            return _tr("Reference: {0}").format(s.paths[ref])
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_SIMILARITY, COL_SIZE):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return no_data()

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.CheckStateRole or index.column() != 0:
            return False
        state = Qt.CheckState(value) if not isinstance(value, Qt.CheckState) else value
        s = self._snap
        if index.internalId() == 0:
            g = self._order[index.row()]
            lo, hi = s.l_start[g], s.l_start[g + 1]
            if state == Qt.CheckState.Unchecked:
                self.set_marked(s.l_file_id[lo:hi], False)
            else:
                # Checking a group marks its copies, never its reference nor a file in a reference
                # folder: the safe choice.
                self.set_marked([s.l_file_id[m] for m in range(lo + 1, hi) if not self.is_protected(m)], True)
            return True
        m = s.l_start[index.internalId() - 1] + index.row()
        self.set_marked([s.l_file_id[m]], state == Qt.CheckState.Checked)
        return True

    # -- marks ------------------------------------------------------------------------------
    @property
    def marked(self) -> frozenset[int]:
        return frozenset(self._marked)

    def is_marked(self, file_id: int) -> bool:
        return file_id in self._marked

    def set_marked(self, file_ids: Iterable[int], on: bool) -> None:
        ids = set(file_ids)
        if on:
            self._marked |= ids
        else:
            self._marked -= ids
        self._emit_marks(ids)

    def toggle_marked(self, file_ids: Iterable[int]) -> None:
        """Space on a selection: if any is unmarked mark them all, else unmark them all."""
        ids = set(file_ids)
        self.set_marked(ids, not ids <= self._marked)

    def clear_marks(self) -> None:
        ids = set(self._marked)
        self._marked.clear()
        self._emit_marks(ids)

    def is_protected(self, m: int) -> bool:
        """Whether member ``m`` lies in a reference folder (:attr:`protected_roots`): such files
        are what the user keeps, so no automatic marking ever proposes them."""
        return bool(self._protected_prefixes) and self._snap.paths[m].startswith(self._protected_prefixes)

    @property
    def protected_roots(self) -> tuple[str, ...]:
        return self._protected_roots

    @protected_roots.setter
    def protected_roots(self, roots: Iterable[str]) -> None:
        self._protected_roots = tuple(roots)
        prefixes: set[str] = set()
        for r in self._protected_roots:
            # The folder as listed and as resolved: indexed paths may use either spelling.
            for form in (os.path.abspath(r), os.path.realpath(r)):
                prefixes.add(form.rstrip(os.sep) + os.sep)
        self._protected_prefixes = tuple(sorted(prefixes))

    def copies_to_mark(self, groups: Iterable[int] | None = None) -> list[int]:
        """The members (flattened indexes) Ctrl+M marks (``MainWindow.mark_all_but_reference``,
        which reads "content" copies first): the copies (kind exact or content) of ``groups`` (all
        when None), never a group's reference, a file in a reference folder, or an empty file (0
        bytes: every empty file is a "copy" of every other, and trashing them frees nothing).
        Edited versions and excerpts (near / contained) hold text the reference lacks: they are
        marked by hand only."""
        s = self._snap
        if s.n_members == 0:
            return []
        want = ~s.m_is_ref & (s.m_kind <= KIND_CODE["content"]) & (s.m_size > 0)
        if groups is not None:
            shown = np.zeros(s.n_groups, dtype=bool)
            shown[np.fromiter(groups, dtype=np.int64)] = True
            want &= shown[s.m_group]
        ms = np.flatnonzero(want).tolist()
        if self._protected_prefixes:
            ms = [m for m in ms if not self.is_protected(m)]
        return ms

    def _emit_marks(self, ids: set[int]) -> None:
        if not ids:
            return
        s = self._snap
        roles = [Qt.ItemDataRole.CheckStateRole]
        if len(ids) > 200:
            # Many rows: one signal per loaded group is cheaper than one per file.
            if self._loaded:
                self.dataChanged.emit(self.index(0, 0), self.index(self._loaded - 1, 0), roles)
                for row in range(self._loaded):
                    g = self._order[row]
                    parent = self.createIndex(row, 0, 0)
                    self.dataChanged.emit(self.index(0, 0, parent), self.index(s.group_size(g) - 1, 0, parent), roles)
        else:
            groups: set[int] = set()
            for m in np.flatnonzero(np.isin(s.m_file_id, np.fromiter(ids, np.int64, len(ids)))).tolist():
                idx = self.member_index(m)
                if idx.isValid():
                    self.dataChanged.emit(idx, idx, roles)
                groups.add(s.l_group[m])
            for g in groups:
                idx = self.group_index(g)
                if idx.isValid():
                    self.dataChanged.emit(idx, idx, roles)
        self.marksChanged.emit()

    def marked_members(self) -> list[int]:
        """Flattened member indexes of marked files (each file once)."""
        if not self._marked:
            return []
        s = self._snap
        hit = np.flatnonzero(np.isin(s.m_file_id, np.fromiter(self._marked, np.int64, len(self._marked))))
        _, first = np.unique(s.m_file_id[hit], return_index=True)
        return hit[np.sort(first)].tolist()

    def fully_marked_groups(self) -> list[int]:
        """Groups all of whose files are marked: trashing them would keep no copy."""
        s = self._snap
        if not self._marked or s.n_groups == 0:
            return []
        marked = np.isin(s.m_file_id, np.fromiter(self._marked, np.int64, len(self._marked)))
        return np.flatnonzero(np.logical_and.reduceat(marked, s.g_start[:-1])).tolist()

    # -- sorting ----------------------------------------------------------------------------
    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Re-order the groups (members stay reference first).  Vectorised: one argsort."""
        self._sort = (column, order)
        self.layoutAboutToBeChanged.emit()
        old_order = self._order
        loaded = self._loaded
        self._sorted = self._sorted_order(column, order)
        self._apply_filter()
        self._loaded = max(self._loaded, min(loaded, len(self._order)))
        changed_from = []
        changed_to = []
        for pidx in self.persistentIndexList():
            if not pidx.isValid():
                continue
            iid = pidx.internalId()
            g = old_order[pidx.row()] if iid == 0 else iid - 1
            row = self._pos[g]
            changed_from.append(pidx)
            if row < 0 or row >= self._loaded:
                changed_to.append(QModelIndex())  # scrolled out of the fetched rows
            elif iid == 0:
                changed_to.append(self.createIndex(row, pidx.column(), 0))
            else:
                changed_to.append(self.createIndex(pidx.row(), pidx.column(), iid))
        self.changePersistentIndexList(changed_from, changed_to)
        self.layoutChanged.emit()

    def _sorted_order(self, column: int, order: Qt.SortOrder) -> list[int]:
        s = self._snap
        n = s.n_groups
        if n == 0:
            return []
        heads = s.g_start[:-1]
        key: np.ndarray
        if column == COL_PATH:
            names = [s.folded[i] for i in s.l_start[:-1]]
            idx = sorted(range(n), key=names.__getitem__)
            key = np.empty(n, np.int64)
            key[np.asarray(idx, dtype=np.int64)] = np.arange(n)
        elif column == COL_SIMILARITY:
            key = np.nan_to_num(s.g_min_sim, nan=-1.0)
        elif column == COL_KIND:
            key = s.g_kind.astype(np.int64)
        elif column == COL_SIZE:
            key = s.g_reclaim if self._g_shown_bytes is None else np.asarray(self._g_shown_bytes, dtype=np.int64)
        elif column == COL_MODIFIED:
            key = s.g_mtime
        else:
            encs = [s.encodings[i] or "" for i in s.l_start[:-1]]
            idx = sorted(range(n), key=encs.__getitem__)
            key = np.empty(n, np.int64)
            key[np.asarray(idx, dtype=np.int64)] = np.arange(n)
        del heads
        # Stable both ways: descending sorts the negated key, so ties keep snapshot order.
        perm = np.argsort(-key if order == Qt.SortOrder.DescendingOrder else key, kind="stable")
        return perm.tolist()


class ResultsProxy(QSortFilterProxyModel):
    """Filters by member kind and a path search; sorting is done by the source model.

    Masks are computed once per filter change (numpy, plus one pass over the casefolded
    paths).  A group is shown when at least one of its non-reference members is of a chosen
    kind and, with a search text, when any of its files' paths contains the text
    (case-insensitive); of a shown group, the reference and the members of the chosen kinds are
    shown.  The group-level decision is handed to the source model (which then exposes only
    shown groups, in batches): a proxy only sees the rows fetched so far, so filtering groups
    here would find matches only among those.  Members are filtered here, by a list lookup.
    """

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setRecursiveFilteringEnabled(True)
        self.setDynamicSortFilter(False)
        self.setSortRole(SortRole)
        self._kinds = KIND_FILTERS["all"]
        self._search = ""
        self._g_vis: np.ndarray | None = None  # None: everything passes
        self._m_vis: list[bool] | None = None
        self._m_hit: np.ndarray | None = None  # shown files whose path holds the search text (None: no search)
        self._m_shown: np.ndarray | None = None  # bool per member: shown (None: everything passes)
        self._shown: GroupShown | None = None  # per group, what the filter shows (None: everything)

    def setSourceModel(self, model: QAbstractItemModel) -> None:  # type: ignore[override]
        assert isinstance(model, ResultsModel)
        super().setSourceModel(model)

    @property
    def results(self) -> ResultsModel:
        m = self.sourceModel()
        assert isinstance(m, ResultsModel)
        return m

    @property
    def active(self) -> bool:
        return self._kinds != KIND_FILTERS["all"] or bool(self._search)

    def set_snapshot(self, snap: Snapshot) -> None:
        """New results, filtered as before (one model reset)."""
        self._compute(snap)
        self.results.set_snapshot(snap, self._group_list(), self._shown)

    def set_filters(self, kinds: frozenset[int] | None = None, search: str | None = None) -> None:
        if kinds is not None:
            self._kinds = kinds
        if search is not None:
            self._search = search.strip().casefold()
        self._compute(self.results.snapshot)
        # The source resets (group filter), which also makes this proxy re-filter its members.
        self.results.set_group_filter(self._group_list(), self._shown)

    def _group_list(self) -> list[bool] | None:
        return None if self._g_vis is None else self._g_vis.tolist()

    def _compute(self, s: Snapshot) -> None:
        self._m_hit = None
        if not self.active or s.n_groups == 0:
            self._g_vis = None
            self._m_vis = None
            self._m_shown = None
            self._shown = None
            return
        heads = s.g_start[:-1]
        m_kind_ok = np.isin(s.m_kind, np.fromiter(self._kinds, dtype=np.int8))
        m_shown = m_kind_ok | s.m_is_ref
        g_ok = np.logical_or.reduceat(m_kind_ok & ~s.m_is_ref, heads)
        if self._search:
            q = self._search
            # Only a file the kind filter shows counts as a match: a group must never be listed
            # for a match it then hides.
            m_match = np.fromiter((q in p for p in s.folded), dtype=bool, count=s.n_members) & m_shown
            g_ok &= np.logical_or.reduceat(m_match, heads)
            self._m_hit = m_match & g_ok[s.m_group]
        self._g_vis = g_ok
        m_vis = m_shown & g_ok[s.m_group]
        self._m_shown = m_vis
        self._m_vis = m_vis.tolist()
        self._shown = GroupShown(
            np.add.reduceat(m_vis.astype(np.int64), heads).tolist(),
            np.add.reduceat(np.where(m_vis & ~s.m_is_ref, s.m_size, 0), heads).tolist(),
        )

    def filterAcceptsRow(self, source_row: int, source_parent: ModelIndex) -> bool:
        m_vis = self._m_vis
        if m_vis is None or not source_parent.isValid():
            return True  # groups are filtered by the source model
        src = self.results
        return m_vis[src.snapshot.l_start[src.group_at_row(source_parent.row())] + source_row]

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.results.sort(column, order)

    def search_matches(self, max_groups: int) -> list[int]:
        """The shown files whose path holds the search text (flattened member indexes), in the
        shown order, from the first ``max_groups`` shown groups (each holds one); [] without a
        search."""
        hit = self._m_hit
        if hit is None:
            return []
        src = self.results
        s = src.snapshot
        out: list[int] = []
        for row in range(min(max_groups, src.shown_groups)):
            g = src.group_at_row(row)
            lo = s.l_start[g]
            out.extend((lo + np.flatnonzero(hit[lo : s.l_start[g + 1]])).tolist())
        return out

    def visible_groups(self) -> np.ndarray:
        """Snapshot indexes of the groups that pass the filter (int64)."""
        s = self.results.snapshot
        if self._g_vis is None or len(self._g_vis) != s.n_groups:
            return np.arange(s.n_groups, dtype=np.int64)
        return np.flatnonzero(self._g_vis)

    def shown_members(self) -> np.ndarray:
        """bool per member of the snapshot: its row is shown (its group passes and the Show
        filter keeps it)."""
        s = self.results.snapshot
        if self._m_shown is None or self._m_shown.size != s.n_members:
            return np.ones(s.n_members, dtype=bool)
        return self._m_shown

    def totals(self) -> tuple[int, int, int]:
        """(groups, files, bytes of the files but the references) of what the filter shows: the
        rows, not the whole groups they belong to."""
        s = self.results.snapshot
        if s.n_members == 0:
            return 0, 0, 0
        shown = self.shown_members()
        return (int(self.visible_groups().size), int(shown.sum()),
                int(s.m_size[shown & ~s.m_is_ref].sum()))

    def copy_bytes(self) -> int:
        """Bytes of the shown exact copies (same bytes or same text) of their reference:
        space freed without losing any content."""
        s = self.results.snapshot
        if s.n_members == 0:
            return 0
        copy = ~s.m_is_ref & (s.m_kind <= KIND_CODE["content"]) & self.shown_members()
        return int(s.m_size[copy].sum())


@dataclass(frozen=True)
class Folder:
    path: str
    reference: bool = False


class FolderModel(QAbstractListModel):
    """Folders to scan.  Check state = reference folder (its files are the originals).
    Folders can be dropped on it from a file manager (``text/uri-list``)."""

    foldersChanged = Signal()

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._folders: list[Folder] = []

    @property
    def folders(self) -> list[Folder]:
        return list(self._folders)

    def set_folders(self, folders: Iterable[Folder]) -> None:
        self.beginResetModel()
        self._folders = []
        seen: set[str] = set()
        for f in folders:
            if f.path not in seen:
                seen.add(f.path)
                self._folders.append(f)
        self.endResetModel()
        self.foldersChanged.emit()

    def add(self, paths: Iterable[str], reference: bool = False) -> int:
        """Add folders not yet listed (normalised absolute paths); returns how many were added."""
        have = {f.path for f in self._folders}
        new = []
        for p in paths:
            p = os.path.abspath(os.path.expanduser(p))
            if p not in have:
                have.add(p)
                new.append(Folder(p, reference))
        if new:
            self.beginInsertRows(QModelIndex(), len(self._folders), len(self._folders) + len(new) - 1)
            self._folders.extend(new)
            self.endInsertRows()
            self.foldersChanged.emit()
        return len(new)

    def remove_rows(self, rows: Iterable[int]) -> None:
        for row in sorted(set(rows), reverse=True):
            if 0 <= row < len(self._folders):
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._folders[row]
                self.endRemoveRows()
        self.foldersChanged.emit()

    def set_reference(self, row: int, on: bool) -> None:
        self.setData(
            self.index(row, 0), Qt.CheckState.Checked if on else Qt.CheckState.Unchecked, Qt.ItemDataRole.CheckStateRole
        )

    def rowCount(self, parent: ModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._folders)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._folders):
            return no_data()
        f = self._folders[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return f.path
        if role == Qt.ItemDataRole.CheckStateRole:
            return Qt.CheckState.Checked if f.reference else Qt.CheckState.Unchecked
        if role == Qt.ItemDataRole.ToolTipRole:
            exists = os.path.isdir(f.path)
            tip = _tr("Reference folder: its files are kept as the originals") if f.reference else _tr(
                "Tick to make this a reference folder (its files are kept as the originals)"
            )
            return f"{f.path}\n{tip}" + ("" if exists else "\n" + _tr("This folder does not exist."))
        return no_data()

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.ItemIsDropEnabled
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable

    def setData(self, index: ModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.CheckStateRole:
            return False
        state = Qt.CheckState(value) if not isinstance(value, Qt.CheckState) else value
        row = index.row()
        self._folders[row] = Folder(self._folders[row].path, state == Qt.CheckState.Checked)
        self.dataChanged.emit(index, index, [Qt.ItemDataRole.CheckStateRole])
        self.foldersChanged.emit()
        return True

    # -- drag and drop ----------------------------------------------------------------------
    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.CopyAction | Qt.DropAction.LinkAction

    def mimeTypes(self) -> list[str]:
        return ["text/uri-list"]

    @staticmethod
    def folders_in(mime: QMimeData) -> list[str]:
        """Local folders among dropped URLs (a dropped file adds its folder)."""
        out = []
        for url in mime.urls() if mime.hasUrls() else []:
            if not isinstance(url, QUrl) or not url.isLocalFile():
                continue
            p = url.toLocalFile()
            if os.path.isdir(p):
                out.append(p)
            elif os.path.isfile(p):
                out.append(os.path.dirname(p))
        return out

    def canDropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: ModelIndex) -> bool:
        return bool(self.folders_in(data))

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: ModelIndex) -> bool:
        paths = self.folders_in(data)
        if not paths:
            return False
        self.add(paths)
        return True
