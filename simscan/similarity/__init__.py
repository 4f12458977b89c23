"""Similarity: exact duplicates, candidate pairs, scores, groups, query and compare.

Never imports Qt.  The algorithms work on plain arrays (``core``, ``grouping``,
``simhash_tables``, ``compare``); ``engine`` reads those arrays from the index.

Public API (a contract with the GUI and CLI):
``DEFAULT_MIN_SIMILARITY``, ``Pair``, ``Group``, ``Member``, ``Comparison``,
``find_pairs(index, ...)``, ``group_pairs(pairs, files, ...)``, ``find_groups(index, ...)``,
``query(index, path, ...)``, ``compare(path_a, path_b)``.  Columnar variants for large
results (no Python object per pair or member): ``find_pair_set(index, ...)`` (pairs as
``PairArrays`` with their file table, read from the index's results cache when the files did
not change) and ``group_pair_arrays(pairs, files, ...)`` (``GroupArrays``).
"""

from simscan.similarity.compare import compare
from simscan.similarity.core import DEFAULT_MIN_SIMILARITY, PairArrays, SimilarityParams
from simscan.similarity.engine import PairSet, find_groups, find_pair_set, find_pairs, query
from simscan.similarity.grouping import GroupArrays, group_pair_arrays, group_pairs
from simscan.similarity.types import KINDS, Comparison, Group, Member, Pair

__all__ = [
    "DEFAULT_MIN_SIMILARITY",
    "KINDS",
    "Comparison",
    "Group",
    "GroupArrays",
    "Member",
    "Pair",
    "PairArrays",
    "PairSet",
    "SimilarityParams",
    "compare",
    "find_groups",
    "find_pair_set",
    "find_pairs",
    "group_pair_arrays",
    "group_pairs",
    "query",
]
