"""Keep rules: which file of a set is kept (pure, no I/O).

A person cleaning a folder chooses once how the file to keep is picked, and the rules apply to
every set: the *keeper* of each set of copies (files with the same bytes, or the same text in
another encoding or line ending) and the order in which the grouping offers files as references
of similar groups (``grouping``).  As in dupeGuru's "re-prioritize" dialog, the rules are an
ordered list of criteria; a later one only breaks the ties of the earlier ones:

* ``encoding``: the best encoding first: UTF-8 (and ASCII), then UTF-16/32, then the legacy
  8-bit and multi-byte encodings, then a text that could not be decoded cleanly (binary files
  tie),
* ``oldest`` / ``newest``: modification time,
* ``shortest-path`` / ``longest-path``: the length of the path,
* ``pattern``: a path matching :attr:`KeepRules.pattern` (a glob on the whole path, ``*`` crossing
  folders) first.

Files under a reference folder always come first (the person said they are the originals); the
last tie-break is path order, so the rank is a total order that depends on the files only.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simscan.similarity.types import FileTableLike

#: Criteria names (the CLI's ``--keep`` words) and what they say, in the order a menu lists them.
CRITERIA = {
    "encoding": "the best encoding (UTF-8 before UTF-16, before legacy encodings)",
    "oldest": "the oldest (modification time)",
    "newest": "the newest (modification time)",
    "shortest-path": "the shortest path",
    "longest-path": "the longest path",
    "pattern": "a path matching the pattern",
}
#: Criteria that contradict each other: only the first of a pair counts.
_OPPOSITE = {"oldest": "newest", "newest": "oldest", "shortest-path": "longest-path", "longest-path": "shortest-path"}


def encoding_rank(encoding: str | None) -> int:
    """0 for UTF-8 (and binary files: no encoding to prefer), 1 for UTF-16/32, 2 for any other
    encoding, 3 for a text decoded with replacement characters (``+replace``)."""
    if encoding is None:
        return 0
    if encoding.endswith("+replace"):
        return 3
    e = encoding.lower().replace("_", "-")
    if e in ("utf-8", "utf8", "ascii", "utf-8-sig"):
        return 0
    if e.startswith(("utf-16", "utf-32")):
        return 1
    return 2


@dataclass(frozen=True)
class KeepRules:
    """An ordered list of criteria (names of :data:`CRITERIA`) and the glob of ``pattern``."""

    order: tuple[str, ...] = ("encoding", "oldest", "shortest-path")
    pattern: str = ""

    def __post_init__(self) -> None:
        unknown = [c for c in self.order if c not in CRITERIA]
        if unknown:
            raise ValueError(f"unknown keep rule {unknown[0]!r}; choose from {', '.join(CRITERIA)}")

    @staticmethod
    def parse(text: str, pattern: str = "") -> KeepRules:
        """Rules from a comma-separated list (``"newest,shortest-path"``); raises ValueError."""
        words = tuple(w.strip() for w in text.split(",") if w.strip())
        return KeepRules(words, pattern)

    def effective(self) -> tuple[str, ...]:
        """The criteria that can decide: each once, none after its opposite, ``pattern`` only with
        a pattern."""
        out: list[str] = []
        for c in self.order:
            if c in out or _OPPOSITE.get(c) in out or (c == "pattern" and not self.pattern):
                continue
            out.append(c)
        return tuple(out)

    def text(self) -> str:
        """The rules as the CLI takes them (``--keep``)."""
        return ",".join(self.order)

    def describe(self) -> str:
        """The rules in words: "in a reference folder, then the best encoding, then the oldest"."""
        parts = ["in a reference folder"]
        for c in self.effective():
            parts.append(f"matching {self.pattern}" if c == "pattern" else CRITERIA[c].split(" (")[0])
        return ", then ".join(parts)

    def rank(self, files: FileTableLike, preferred: np.ndarray | None = None) -> np.ndarray:
        """Rank of each row of ``files`` (0 = kept first): ``preferred`` rows (under a reference
        folder) first, then the criteria in order, then path order."""
        n = len(files.paths)
        keys: list[np.ndarray] = [] if preferred is None else [~np.asarray(preferred, dtype=bool)]
        for c in self.effective():
            if c == "encoding":
                keys.append(np.fromiter(map(encoding_rank, files.encoding), np.int64, n))
            elif c in ("oldest", "newest"):
                t = np.asarray(files.mtime_ns, dtype=np.int64)
                keys.append(t if c == "oldest" else -t)
            elif c in ("shortest-path", "longest-path"):
                ln = np.fromiter(map(len, files.paths), np.int64, n)
                keys.append(ln if c == "shortest-path" else -ln)
            elif c == "pattern":
                keys.append(~path_matches(files.paths, self.pattern))
        return _rank(keys, files.paths)


def path_matches(paths: Sequence[str], pattern: str) -> np.ndarray:
    """Boolean per path: the whole path matches the glob ``pattern`` (``*`` and ``?`` cross
    folders; a pattern without a ``/`` is matched against the file name)."""
    if not pattern:
        return np.zeros(len(paths), dtype=bool)
    rx = re.compile(fnmatch.translate(pattern))
    if "/" in pattern:
        return np.fromiter((rx.match(p) is not None for p in paths), bool, len(paths))
    return np.fromiter((rx.match(p.rpartition("/")[2]) is not None for p in paths), bool, len(paths))


def _rank(keys: list[np.ndarray], paths: Sequence[str]) -> np.ndarray:
    """Rank by ``keys`` (the first most significant), ties by path (a Python sort only among the
    tied rows)."""
    n = len(paths)
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort(keys[::-1]) if keys else np.arange(n)
    same = np.ones(n - 1, dtype=bool)
    for k in keys:
        s = k[order]
        same &= s[1:] == s[:-1]
    if same.any():
        tied = np.zeros(n, dtype=bool)
        tied[1:] |= same
        tied[:-1] |= same
        rows = order[tied]
        by_path = np.zeros(n, np.int64)
        by_path[sorted(rows.tolist(), key=paths.__getitem__)] = np.arange(rows.size)
        order = np.lexsort([by_path, *keys[::-1]])
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    return rank


DEFAULT_KEEP = KeepRules()
