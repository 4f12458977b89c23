"""The pairs review view (issue 16): every listed pair of files ranked by its evidence -- the longest
passage the two share, then the characters their shared passages cover, then the best share --, as
plagiarism tools (MOSS, JPlag, Dolos) present their results.  Groups are for cleaning up; this list is
for reading pairs one by one.

* :class:`ReviewRows` -- the pairs at one threshold as immutable columns, built in a worker by
  :func:`review_rows` from the pair set the groups come from (``jobs.Results.pairs``: no second
  search).  Copies inherit their representative's pairs, as ``simscan pairs`` lists them
  (``copies.expand_copies``).
* :class:`PairsModel` -- a flat Qt model over them: sorting and filtering are numpy passes over the
  columns (no ``QSortFilterProxyModel``, whose per-row Python calls would take seconds for 100,000
  pairs); rows are handed to the view :data:`~simscan.gui.results_model.FETCH_BATCH` at a time.

``data()`` never touches SQLite or the disk.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from simscan.display import display_path
from simscan.gui.results_model import (
    FETCH_BATCH,
    KIND_FILTERS,
    BatchedRows,
    SimilarityRole,
    no_data,
    percent_text,
)
from simscan.similarity.arrays import popcount64
from simscan.similarity.copies import MAX_COPY_PAIRS, copy_classes, expand_copies
from simscan.similarity.core import PairArrays, concat_pairs, priority_order
from simscan.similarity.grouping import pairs_shown
from simscan.similarity.types import KINDS, VIEWS, Pair, passes, shown_pct

ModelIndex = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()

COL_A, COL_B, COL_LONGEST, COL_SHARED, COL_SIMILARITY, COL_KIND, COL_VIEW = range(7)
HEADERS = ("File A", "File B", "Longest (chars)", "Shared (chars)", "Similarity", "Kind", "View")
_HEADER_TIPS = {
    COL_A: "The first file of the pair (the older one); paths below the folder the summary names",
    COL_LONGEST: "Characters of the longest passage the two files share (of the shorter side). A copy shares "
                 "its whole text",
    COL_SHARED: "Characters of the files that their shared passages cover (the smaller of the two sides)",
    COL_SIMILARITY: "The pair's best share: its resemblance, or how much of one file is found in the other",
    COL_VIEW: "text: the two texts were compared; code: program sources compared by structure (names and "
              "literals ignored)",
}
_F_ITEM = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren
_NO_FLAGS = Qt.ItemFlag.NoItemFlags
#: Evidence of a pair whose passages were not weighed (-1 in the pair columns): ranked after every
#: weighed pair.
_UNKNOWN = -1


def _tr(text: str) -> str:
    from PySide6.QtCore import QCoreApplication

    return QCoreApplication.translate("PairsModel", text)


def recentred_copies(files: Any, labels: np.ndarray, rows: np.ndarray) -> PairArrays:
    """The copy pairs of ``rows``, the files in the scope of the sets of copies that lie partly outside
    it (``labels``: ``copies.copy_classes``): the pair search lists a set of copies as a star around one
    file, so two copies in the listed folders whose star centre lies elsewhere would not be paired.
    A star again, around the first of them by the representative's rules (oldest, shortest path,
    path); "exact" for the same bytes, else "content"."""
    from simscan.gui.snapshot import digest_columns

    n = len(files.paths)
    rank = np.empty(n, np.int64)
    rank[priority_order(files)] = np.arange(n)
    rows = rows[np.lexsort((rank[rows], labels[rows]))]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = labels[rows[1:]] != labels[rows[:-1]]
    centre = rows[first][np.cumsum(first) - 1]
    x, y = centre[~first], rows[~first]
    digests, size = digest_columns(files), np.asarray(files.size, np.int64)
    exact = (digests[x] == digests[y]).all(axis=1) & (size[x] == size[y])
    sim = np.asarray(files.simhash, np.uint64)
    hundred = np.full(x.size, 100.0)
    none = np.full(x.size, -1, np.int32)
    return PairArrays(x, y, hundred, hundred.copy(), hundred.copy(), popcount64(sim[x] ^ sim[y]), exact,
                      np.where(exact, 0, 1).astype(np.int8), np.zeros(x.size, np.int8), none, none.copy())


@dataclass(frozen=True)
class ReviewRows:
    """The listed pairs at one threshold, ranked by evidence (row ``k`` of every column is the
    ``k``-th best).  ``a`` / ``b``: rows of ``files``; scores in percent as the pairs carry them;
    ``longest`` / ``shared``: characters (-1 for a copy: the whole text, or for a pair not weighed);
    ``evidence``: what the ranking reads (``longest``, a copy's whole text in normalised characters).
    ``prefix``: the
    folder every listed file lies in, which the list leaves out of the paths it shows."""

    threshold: float
    min_passage: int
    files: Any = field(repr=False)
    a: np.ndarray = field(repr=False)
    b: np.ndarray = field(repr=False)
    best: np.ndarray = field(repr=False)
    resemblance: np.ndarray = field(repr=False)
    containment_a: np.ndarray = field(repr=False)
    containment_b: np.ndarray = field(repr=False)
    distance: np.ndarray = field(repr=False)
    kind: np.ndarray = field(repr=False)
    view: np.ndarray = field(repr=False)
    longest: np.ndarray = field(repr=False)
    shared: np.ndarray = field(repr=False)
    evidence: np.ndarray = field(repr=False)
    by_passage: int = 0  # pairs listed for a passage alone (their share is under the threshold)
    left_out: int = 0  # pairs of copies with other files left out (more than MAX_COPY_PAIRS)
    prefix: str = ""
    # Per row of ``files``: the path casefolded (the search), and its rank in path order (sorting by path).
    folded: list[str] = field(default_factory=list, repr=False)
    path_rank: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    key: tuple[Any, ...] = ()  # what they were made from (see ``jobs.review``)

    @property
    def n(self) -> int:
        return int(self.a.size)

    def path_a(self, k: int) -> str:
        return self.files.paths[int(self.a[k])]

    def path_b(self, k: int) -> str:
        return self.files.paths[int(self.b[k])]

    def shown_path(self, path: str) -> str:
        """A path as the list shows it: below :attr:`prefix`."""
        return path[len(self.prefix):] if self.prefix and path.startswith(self.prefix) else path

    def is_copy(self, k: int) -> bool:
        return bool(self.kind[k] <= 1)

    def pair(self, k: int) -> Pair:
        """Row ``k`` as the similarity layer's ``Pair`` (a, b), with its evidence."""
        f = self.files
        ra, rb = int(self.a[k]), int(self.b[k])
        longest, shared, kind = int(self.longest[k]), int(self.shared[k]), int(self.kind[k])
        return Pair(
            int(f.ids[ra]), int(f.ids[rb]), f.paths[ra], f.paths[rb], float(self.resemblance[k]),
            float(self.containment_a[k]), float(self.containment_b[k]), int(self.distance[k]),
            kind == 0, KINDS[kind], VIEWS[int(self.view[k])],
            None if longest < 0 else longest, None if shared < 0 else shared,
        )

    def scores_text(self, k: int) -> str:
        """The detailed scores of row ``k``, for a tooltip."""
        text = _tr("Resemblance {0:.1f} % · {1:.1f} % of A is in B · {2:.1f} % of B is in A").format(
            shown_pct(self.resemblance[k]), shown_pct(self.containment_a[k]), shown_pct(self.containment_b[k]))
        if self.view[k] == 1:
            text += " · " + _tr("compared as program code (names and literals ignored)")
        if not passes(self.best[k], self.threshold) and not self.is_copy(k):
            text += "\n" + _tr("Listed for its shared passage of {0:,} characters, under the similarity "
                               "threshold ({1:.0f} %).").format(int(self.longest[k]), self.threshold)
        return text

    @staticmethod
    def empty(threshold: float = 0.0, min_passage: int = 0) -> ReviewRows:
        e = np.zeros(0, np.int64)
        return ReviewRows(threshold, min_passage, None, e, e, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), e,
                          np.zeros(0, np.int8), np.zeros(0, np.int8), e, e, e)


_FOLDED: list[tuple[Any, list[str], np.ndarray]] = []


def folded_paths(files: Any) -> tuple[list[str], np.ndarray]:
    """(casefolded path, rank in path order) of each row of a file table, remembered for the last
    table seen (a regroup reuses its load's table; tables are never edited in place)."""
    entry = _FOLDED[0] if _FOLDED else None  # (one read: two jobs may race here)
    if entry is not None and entry[0] is files:
        return entry[1], entry[2]
    folded = [p.casefold() for p in files.paths]
    order = np.fromiter(sorted(range(len(folded)), key=files.paths.__getitem__), np.int64, len(folded))
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size)
    _FOLDED[:] = [(files, folded, rank)]
    return folded, rank


def common_folder(paths: Iterable[str]) -> str:
    """The deepest folder holding every one of ``paths``, with its trailing separator ("" when
    they share none but the root)."""
    ps = list(paths)
    if not ps:
        return ""
    lo, hi = min(ps), max(ps)  # (the common prefix of all is the common prefix of these two)
    common = os.path.commonprefix([lo, hi])
    cut = common.rfind(os.sep)
    return common[: cut + 1] if cut > 0 else ""


def review_rows(
    files: Any,
    pairs: Any,
    threshold: float,
    min_passage: int,
    scope: np.ndarray | None = None,
    limit: int = MAX_COPY_PAIRS,
    key: tuple[Any, ...] = (),
) -> ReviewRows:
    """The pairs of ``pairs`` (``PairArrays`` of rows of ``files``, as the window's load keeps them)
    listed at ``threshold``: copies, pairs whose best share passes it, and pairs sharing a passage
    of ``min_passage`` characters (0: none by passage), as the pair search keeps them; with copies'
    inherited pairs (``copies.expand_copies``), both files in ``scope`` (bool per row; None: all) and
    neither empty; ranked by evidence.  Columnar: no object per pair."""
    if files is None or pairs is None or len(files.paths) == 0:
        return ReviewRows.empty(threshold, min_passage)
    n = len(files.paths)
    pa, pb = np.asarray(pairs.a, np.int64), np.asarray(pairs.b, np.int64)
    kind = np.asarray(pairs.kind, np.int8)
    copy = kind <= 1
    labels = copy_classes(n, pa[copy], pb[copy])
    by_share = passes(pairs.best, threshold)
    by_passage = ((np.asarray(pairs.longest) >= min_passage) & ~by_share & ~copy if min_passage > 0
                  else np.zeros(kind.size, bool))
    keep = np.flatnonzero(by_share | copy | by_passage)
    a, b, src, left_out = expand_copies(pa[keep], pb[keep], copy[keep], n, limit, labels)
    src = keep[src]
    ok = pairs_shown(files, a, b)  # (as groups list them: empty files are all alike, never listed)
    if scope is not None:
        member = np.zeros(n, dtype=bool)
        member[pa[copy]] = member[pb[copy]] = True
        if (member & ~scope).any():
            # Sets of copies partly outside the scope: their pairs in it as a star of their own.
            partial = np.zeros(n, dtype=bool)  # (by label)
            partial[labels[member & ~scope]] = True
            extra = recentred_copies(files, labels, np.flatnonzero(member & scope & partial[labels]))
            ok &= ~(copy[src] & partial[labels[a]])
            src = np.concatenate((src, kind.size + np.arange(extra.a.size)))
            a, b, ok = np.concatenate((a, extra.a)), np.concatenate((b, extra.b)), np.concatenate(
                (ok, np.ones(extra.a.size, bool)))
            pairs = concat_pairs(pairs, extra)
            by_passage = np.concatenate((by_passage, np.zeros(extra.a.size, bool)))
        ok &= scope[a] & scope[b]
    a, b, src = a[ok], b[ok], src[ok]
    kind = np.asarray(pairs.kind, np.int8)[src]
    longest = np.asarray(pairs.longest, np.int64)[src]
    shared = np.asarray(pairs.shared, np.int64)[src]
    best = np.asarray(pairs.best, np.float64)[src]
    # A copy's evidence is its whole text (normalised characters; bytes of a binary file).
    units = np.asarray(files.units, np.int64)
    whole = np.maximum(units[a], units[b])
    evidence = np.where(kind <= 1, whole, np.where(longest >= 0, longest, _UNKNOWN))
    covered = np.where(kind <= 1, whole, np.where(shared >= 0, shared, _UNKNOWN))
    order = np.lexsort((np.arange(a.size), -best, -covered, -evidence))
    a, b, src = a[order], b[order], src[order]
    kind, longest, shared, best, evidence = kind[order], longest[order], shared[order], best[order], evidence[order]
    view = np.asarray(pairs.view, np.int8)[src]
    folded, rank = folded_paths(files)
    listed = np.unique(np.concatenate((a, b)))
    return ReviewRows(
        threshold=float(threshold),
        min_passage=int(min_passage),
        files=files,
        a=a,
        b=b,
        best=best,
        resemblance=np.asarray(pairs.resemblance, np.float64)[src],
        containment_a=np.asarray(pairs.containment_a, np.float64)[src],
        containment_b=np.asarray(pairs.containment_b, np.float64)[src],
        distance=np.asarray(pairs.distance, np.int64)[src],
        kind=kind,
        view=view,
        longest=longest,
        shared=shared,
        evidence=evidence,
        by_passage=int(by_passage[src].sum()),
        left_out=left_out,
        prefix=common_folder(files.paths[r] for r in listed.tolist()),
        folded=folded,
        path_rank=rank,
        key=key,
    )


def chars_text(n: int, copy: bool) -> str:
    """A passage length as the list shows it: "1,234", "whole file" for a copy, "–" unknown."""
    if copy:
        return _tr("whole file")
    return "–" if n < 0 else f"{n:,}"


class PairsModel(BatchedRows, QAbstractTableModel):
    """The listed pairs, one row each, in the order of the ranking or of a column the person chose;
    filtered by kind (the Show box) and by a path search on either file."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows = ReviewRows.empty()
        self._kinds: frozenset[int] = KIND_FILTERS["all"]
        self._search = ""
        self._sort: tuple[int, Qt.SortOrder] = (COL_LONGEST, Qt.SortOrder.DescendingOrder)
        self._order: list[int] = []  # view row -> ReviewRows row (sorted, filtered)
        self._order_a = np.zeros(0, np.int64)
        self._loaded = 0

    # -- contents ---------------------------------------------------------------------------
    @property
    def rows(self) -> ReviewRows:
        return self._rows

    @property
    def active(self) -> bool:
        """Whether a filter (kind or search) is on."""
        return self._kinds != KIND_FILTERS["all"] or bool(self._search)

    def set_rows(self, rows: ReviewRows) -> None:
        """Swap in new pairs (a model reset), keeping the filters and the sort."""
        self.beginResetModel()
        self._rows = rows
        self._compute()
        self.endResetModel()

    def set_filters(self, kinds: frozenset[int] | None = None, search: str | None = None) -> None:
        self.beginResetModel()
        if kinds is not None:
            self._kinds = kinds
        if search is not None:
            self._search = search.strip().casefold()
        self._compute()
        self.endResetModel()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        self._sort = (column, order)
        self._compute()
        self.layoutChanged.emit()

    def _compute(self) -> None:
        r = self._rows
        shown = np.ones(r.n, dtype=bool)
        if self._kinds != KIND_FILTERS["all"]:
            shown &= np.isin(r.kind, np.fromiter(self._kinds, np.int8))
        if self._search and r.n:
            q = self._search
            hit = np.fromiter((q in p for p in r.folded), dtype=bool, count=len(r.folded))
            shown &= hit[r.a] | hit[r.b]
        rows = np.flatnonzero(shown)
        col, order = self._sort
        key = self.sort_key(col, rows)
        if key is not None:
            # Ties keep the ranking (rows are in its order); descending reverses the key only.
            k = key if order == Qt.SortOrder.AscendingOrder else -key
            rows = rows[np.argsort(k, kind="stable")]
        self._order_a = rows
        self._order = rows.tolist()
        self._loaded = min(FETCH_BATCH, len(self._order))

    def sort_key(self, col: int, rows: np.ndarray) -> np.ndarray | None:
        """A numeric key per row for a sort by ``col`` (None: the ranking itself, the rows' order).
        The passage columns sort by the ranking's own key, so a sort by the longest passage is the
        ranking (ties broken by shared characters, then the share)."""
        r = self._rows
        if col == COL_LONGEST:
            return None if self._sort[1] == Qt.SortOrder.DescendingOrder else -np.arange(rows.size, dtype=np.float64)
        if col == COL_A:
            return r.path_rank[r.a[rows]].astype(np.float64)
        if col == COL_B:
            return r.path_rank[r.b[rows]].astype(np.float64)
        if col == COL_SHARED:
            sh = np.where(r.kind[rows] <= 1, r.evidence[rows], r.shared[rows])
            return sh.astype(np.float64)
        if col == COL_SIMILARITY:
            return r.best[rows]
        if col == COL_KIND:
            return r.kind[rows].astype(np.float64)
        if col == COL_VIEW:
            return r.view[rows].astype(np.float64)
        return None

    def shown_rows(self) -> np.ndarray:
        """The ReviewRows rows the filter shows, in the shown order (fetched or not)."""
        return self._order_a

    @property
    def shown_count(self) -> int:
        return len(self._order)

    def row_at(self, view_row: int) -> int:
        """The ReviewRows row of a view row (-1 when out of range)."""
        return self._order[view_row] if 0 <= view_row < len(self._order) else -1

    def view_row_of(self, k: int) -> int:
        """The view row showing ReviewRows row ``k`` (fetched or not), -1 when the filter hides it."""
        hits = np.flatnonzero(self._order_a == k)
        return int(hits[0]) if hits.size else -1

    def find(self, a_id: int, b_id: int) -> int:
        """The ReviewRows row of the pair of these two file ids (either order), -1 when not listed."""
        r = self._rows
        if r.n == 0:
            return -1
        ids = np.asarray(r.files.ids, np.int64)
        ia, ib = ids[r.a], ids[r.b]
        hits = np.flatnonzero(((ia == a_id) & (ib == b_id)) | ((ia == b_id) & (ib == a_id)))
        return int(hits[0]) if hits.size else -1

    # -- structure --------------------------------------------------------------------------
    def rowCount(self, parent: ModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else self._loaded

    def columnCount(self, parent: ModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        return _F_ITEM if index.isValid() else _NO_FLAGS

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(HEADERS):
            if role == Qt.ItemDataRole.DisplayRole:
                return _tr(HEADERS[section])
            if role == Qt.ItemDataRole.ToolTipRole and section in _HEADER_TIPS:
                return _tr(_HEADER_TIPS[section])
        return no_data()

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < self._loaded:
            return no_data()
        r = self._rows
        k = self._order[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == COL_A:
                return display_path(r.shown_path(r.path_a(k)))
            if col == COL_B:
                return display_path(r.shown_path(r.path_b(k)))
            if col == COL_LONGEST:
                return chars_text(int(r.longest[k]), r.is_copy(k))
            if col == COL_SHARED:
                return chars_text(int(r.shared[k]), r.is_copy(k))
            if col == COL_SIMILARITY:
                return percent_text(float(r.best[k]))
            if col == COL_KIND:
                return _tr(KINDS[int(r.kind[k])])
            if col == COL_VIEW:
                return _tr(VIEWS[int(r.view[k])])
            return no_data()
        if role == SimilarityRole and col == COL_SIMILARITY:
            v = float(r.best[k])
            return no_data() if math.isnan(v) else v
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == COL_A:
                return display_path(r.path_a(k))
            if col == COL_B:
                return display_path(r.path_b(k))
            if col == COL_KIND and r.kind[k] == 3:
                ca, cb = r.containment_a[k], r.containment_b[k]
                return _tr("A lies in B ({0:.1f} % of A)").format(shown_pct(ca)) if ca >= cb else _tr(
                    "B lies in A ({0:.1f} % of B)").format(shown_pct(cb))
            return r.scores_text(k)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_LONGEST, COL_SHARED, COL_SIMILARITY):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return no_data()
