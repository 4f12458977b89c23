"""Result types of the similarity layer (plain frozen data, no I/O).

Every percentage is a float in [0, 100].  ``containment_a`` is the share of file a's
fingerprints found in file b ("how much of a is in b"), ``containment_b`` the converse,
``resemblance`` the Jaccard index of the two fingerprint sets (Broder 1997; DESIGN.md §2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

#: Decimals a pair's scores carry (``Pair``; the JSON output shows 2, the text and the window 1).
SCORE_DECIMALS = 3


def passes(best: Any, threshold: float) -> Any:
    """Whether a best score (float or array of them) is at or above ``threshold`` (percent), compared
    as the pairs carry it (:data:`SCORE_DECIMALS`): every filter uses this, so that a pair's kept or
    dropped the same way whatever computed it (pair search, groups, query, the cache)."""
    return np.round(best, SCORE_DECIMALS) >= threshold


def shown_pct(pct: float, decimals: int = 1) -> float:
    """A percentage as displayed: cut, not rounded, to ``decimals``.  A displayed score is then never
    above the score, so a pair shown at X % is kept by a threshold of X % (99.857 shows as 99.8, not
    as 99.9, which ``--min-similarity 99.9`` would drop) and 100 % means all of it, never 99.96."""
    scale = 10**decimals
    # (the epsilon absorbs binary noise: 14.3 * 10 is 142.99999999999997)
    return math.floor(float(pct) * scale + 1e-6) / scale


#: Pair kinds, from the strongest to the weakest relation.
KINDS = ("exact", "content", "near", "contained")
#: Each kind's code (its place in :data:`KINDS`): int8 columns of groups, and the order of a sort.
#: A group member's "contains" (``member_kind``) has the code of "contained": the columns keep
#: the pair's kind, and its direction is read from the pair's containments where it is shown.
KIND_CODE = {**{k: i for i, k in enumerate(KINDS)}, "contains": 3}

def member_kind(pair: Pair) -> str:
    """A group member's kind, read from the member's side of ``pair`` (reference, member): a
    "contained" pair says one file lies in the other, and the member is "contained" when it is the
    excerpt (it lies in the reference), "contains" when the reference lies in it (a short reference,
    e.g. the older student answer, quoted by a longer source).  Other kinds are symmetric."""
    return member_kind_of(pair.kind, pair.containment_a, pair.containment_b)


def member_kind_of(kind: str, containment_reference: float, containment_member: float) -> str:
    """:func:`member_kind` of a pair (reference, member) of ``kind`` with these containments."""
    return "contains" if kind == "contained" and containment_reference > containment_member else kind


#: Fingerprint views a pair can be scored on (``simscan.similarity.views``): "text" (the
#: normalised words of any file, raw bytes of binary files) or "code" (program source with
#: every identifier and literal as one placeholder: the same program under other names).
VIEWS = ("text", "code")


class FileTableLike(Protocol):
    """The columns of ``simscan.index.FileTable`` the similarity layer reads (same order)."""

    ids: np.ndarray  # int64
    paths: list[str]
    size: np.ndarray  # int64
    mtime_ns: np.ndarray  # int64
    is_text: np.ndarray  # bool
    encoding: list[str | None]
    checksum: list[bytes]
    partial: np.ndarray  # int64
    content_hash: list[bytes]
    simhash: np.ndarray  # uint64
    units: np.ndarray  # int64: normalised units (text) or bytes fingerprinted (levels, see ``levels``)


@dataclass(frozen=True, slots=True)
class Pair:
    """Two files and how much content they share.

    a_id / b_id: index file ids (-1 for a file that is not in the index).
    resemblance, containment_a, containment_b: percent, 0..100.
    simhash_distance: Hamming distance of the two 64-bit simhashes, 0..64.
    exact: same bytes.  kind: "exact" (same bytes), "content" (same normalised text,
    different bytes: another encoding, line ending, BOM), "contained" (one file lies largely
    inside the other: its containment is >= 50% and >= 1.5 times the other containment; an
    excerpt, or a file quoted in a longer one) or "near" (anything else: edited versions,
    symmetric partial overlaps).
    view: the fingerprint view the scores come from, one of ``VIEWS``: "code" when both files
    are program source and their code forms (names and literals ignored) score higher than
    their text; such a score says the two have the same structure, not the same words.
    longest_passage / shared_chars: the longest passage the two share, and the characters their
    shared passages cover (on the side where fewer are), in characters of the original texts, as
    the stored fingerprints show them (``similarity.evidence``); None for copies ("exact",
    "content": the whole file) and for a pair weighed without them.
    """

    a_id: int
    b_id: int
    a_path: str
    b_path: str
    resemblance: float
    containment_a: float
    containment_b: float
    simhash_distance: int
    exact: bool
    kind: str
    view: str = "text"
    longest_passage: int | None = None
    shared_chars: int | None = None

    @property
    def best(self) -> float:
        """The pair's score: max of resemblance and both containments (percent)."""
        return max(self.resemblance, self.containment_a, self.containment_b)


@dataclass(frozen=True, slots=True)
class Member:
    """One file of a group.  similarity: the best score of the pair (reference, this file)
    in percent (100 for the reference itself); kind: that pair's kind ("exact" for the
    reference), read from the member's side (``member_kind``: "contained" when the member lies
    in the reference, "contains" when the reference lies in the member).  pair: that pair (None
    for the reference), for the detailed scores.  copy_set: the member's set of copies in the
    group (files with the same bytes, or the same text in another encoding or line ending),
    numbered from 1 in the group's order, 0 for a file without a copy; keeper: the file kept of its
    set (the first of it, by the keep rules; True for a file without a copy)."""

    file_id: int
    path: str
    size: int
    mtime_ns: int
    encoding: str | None
    is_text: bool
    similarity: float
    kind: str
    is_reference: bool
    pair: Pair | None = field(default=None, compare=False)
    copy_set: int = 0
    keeper: bool = True


@dataclass(frozen=True, slots=True)
class Group:
    """Files similar to one reference file.  members includes the reference (first).

    kind: "exact" when every member is a byte copy of the reference, "content" when every
    member has its normalised text, else "near" if any member is a near duplicate, else
    "contained".
    """

    id: int
    kind: str
    reference: Member
    members: list[Member]

    @property
    def reclaimable(self) -> int:
        """Bytes freed by removing every copy but the one kept of each of its copy sets (the same
        meaning in the CLI's outputs and the window: only true copies, never edited versions)."""
        return sum(m.size for m in self.members if not m.keeper)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two files side by side (see :func:`simscan.similarity.compare`).

    text_a / text_b: the decoded text (None for binary files).  ranges_a / ranges_b:
    (start, end) offsets into text_a / text_b in Python ``str`` indexes (code points, end
    exclusive) of the matching passages; ranges_a[i] matches ranges_b[i]; sorted by start in
    a.  truncated: the texts were longer than the comparison cap and passages were only
    searched in their first part.  capped: repetitive text, whose windows repeated in the other
    file are matched at a few of their places only (``compare.MAX_OCCURRENCES``), or too many
    passages to examine (``compare.MAX_RUNS``).  source_a / source_b: for a document, where its
    text came from (``simscan.extract.Extracted.summary``: "PDF, 12 pages, text layer; left out:
    ...") or why it is compared by its bytes; None for a plain file.
    """

    pair: Pair
    text_a: str | None
    text_b: str | None
    ranges_a: list[tuple[int, int]]
    ranges_b: list[tuple[int, int]]
    encoding_a: str | None
    encoding_b: str | None
    truncated: bool = False
    capped: bool = False
    source_a: str | None = None
    source_b: str | None = None

    def matched_chars(self) -> tuple[int, int]:
        """Characters of text_a and of text_b inside a matching passage (each counted once: a
        passage repeated in one file may match the same text of the other several times)."""
        return _covered(self.ranges_a), _covered(self.ranges_b)


def _covered(ranges: list[tuple[int, int]]) -> int:
    total, reach = 0, 0
    for s, e in sorted(ranges):
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total
