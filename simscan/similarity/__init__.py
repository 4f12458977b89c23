"""Similarity: exact duplicates, candidate pairs, scores, groups, query and compare.

Never imports Qt.  The algorithms work on plain arrays (``core``, ``grouping``,
``simhash_tables``, ``compare``); ``engine`` reads those arrays from the index.

Public API (a contract with the GUI and CLI):
``DEFAULT_MIN_SIMILARITY``, ``Pair``, ``Group``, ``Member``, ``Comparison``,
``find_pairs(index, ...)``, ``group_pairs(pairs, files, ...)``, ``find_groups(index, ...)``,
``query(index, path, ...)``, ``compare(path_a, path_b)``.
"""

from simscan.similarity.compare import compare
from simscan.similarity.core import DEFAULT_MIN_SIMILARITY, SimilarityParams
from simscan.similarity.engine import find_groups, find_pairs, query
from simscan.similarity.grouping import group_pairs
from simscan.similarity.types import KINDS, Comparison, Group, Member, Pair

__all__ = [
    "DEFAULT_MIN_SIMILARITY",
    "KINDS",
    "Comparison",
    "Group",
    "Member",
    "Pair",
    "SimilarityParams",
    "compare",
    "find_groups",
    "find_pairs",
    "group_pairs",
    "query",
]
