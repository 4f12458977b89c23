"""Sub-commands ``pairs``, ``groups``, ``query`` and ``compare`` (output formats are a contract).

``--format json`` prints JSON Lines (one object per line); ``csv`` has a header row and is
safe to open in a spreadsheet (a cell starting with ``=``, ``+``, ``-``, ``@``, TAB or CR
gets a leading ``'`` so it is never taken as a formula); ``text`` is for people.  Paths are
printed as text; bytes that are not valid UTF-8 appear as ``\\xNN`` escapes, and JSON
objects then also carry the exact bytes in base64 (``a_raw`` / ``b_raw`` / ``path_raw``).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import io
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TextIO

import numpy as np

from simscan.cli.common import display_path, human_bytes, raw_b64
from simscan.display import terminal_text
from simscan.errors import SimscanError
from simscan.similarity.copies import MAX_COPY_PAIRS
from simscan.similarity.types import KINDS, VIEWS, shown_pct

_PAIR_FIELDS = (
    "a", "b", "best", "resemblance", "containment_a", "containment_b", "simhash_distance", "exact", "kind", "view",
    "longest_passage", "shared_chars",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class FileProblem(SimscanError):
    """A file named on the command line cannot be read."""

    exit_code = 1


def _shown(path: str) -> str:
    """A path in text output and messages (one line, see ``display_path``)."""
    return display_path(path, terminal=True)


def _unreadable(path: str) -> FileProblem:
    """The error for a FILE argument that is missing, cannot be reached or is not a regular file."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return FileProblem(f"cannot read {_shown(path)}: no such file", "Check the path.")
    except OSError as e:  # e.g. a folder on the way that may not be searched: not "no such file"
        return FileProblem(f"cannot read {_shown(path)}: {e.strerror or e}", "Check the path and its permissions.")
    return FileProblem(f"cannot read {_shown(path)}: not a regular file", "Give a file, not a folder or a device.")


def csv_cell(value: Any) -> Any:
    """Neutralise spreadsheet formulas: prefix ``'`` to text starting with = + - @ TAB CR."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _out() -> TextIO:
    # Never crash on a character the terminal's encoding cannot show.
    try:
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    except (AttributeError, ValueError):
        pass
    return sys.stdout


def _num(x: float) -> float:
    return shown_pct(x, 2)


def pair_record(p: Any, unambiguous: bool = False) -> dict[str, Any]:
    """A pair as JSON (and, ``unambiguous``: backslashes of names doubled, as CSV has them) has it."""
    rec: dict[str, Any] = {
        "a": display_path(p.a_path, unambiguous=unambiguous),
        "b": display_path(p.b_path, unambiguous=unambiguous),
        "best": _num(p.best),
        "resemblance": _num(p.resemblance),
        "containment_a": _num(p.containment_a),
        "containment_b": _num(p.containment_b),
        "simhash_distance": int(p.simhash_distance),
        "exact": bool(p.exact),
        "kind": p.kind,
        "view": p.view,
        "longest_passage": p.longest_passage,
        "shared_chars": p.shared_chars,
    }
    for key, path in (("a_raw", p.a_path), ("b_raw", p.b_path)):
        raw = raw_b64(path)
        if raw is not None:
            rec[key] = raw
    return rec


def pair_columns(pairs: Sequence[Any]) -> tuple[list[str], Any]:
    """``Pair`` objects as a part :class:`PairWriter` writes: (their paths, ``PairArrays`` whose a and b
    index them)."""
    from simscan.similarity.core import PairArrays
    from simscan.similarity.types import KIND_CODE

    at: dict[str, int] = {}
    a = [at.setdefault(p.a_path, len(at)) for p in pairs]
    b = [at.setdefault(p.b_path, len(at)) for p in pairs]

    def col(get: Callable[[Any], Any], dtype: Any) -> np.ndarray:
        return np.fromiter(map(get, pairs), dtype, len(pairs))

    return list(at), PairArrays(
        np.asarray(a, np.int64), np.asarray(b, np.int64), col(lambda p: p.resemblance, np.float64),
        col(lambda p: p.containment_a, np.float64), col(lambda p: p.containment_b, np.float64),
        col(lambda p: p.simhash_distance, np.int64), col(lambda p: p.exact, bool), col(lambda p: KIND_CODE[p.kind], np.int8),
        col(lambda p: VIEWS.index(p.view), np.int8),
        col(lambda p: -1 if p.longest_passage is None else p.longest_passage, np.int64),
        col(lambda p: -1 if p.shared_chars is None else p.shared_chars, np.int64))


#: Pairs written at a time by ``simscan pairs`` (their texts are made column by column: ~15 MB of them).
PAIRS_AT_A_TIME = 1 << 14


def pair_column_parts(pa: Any, files: Any, expand: bool, limit: int) -> tuple[Iterator[Any], int]:
    """The pairs of ``pa`` (``PairArrays`` of rows of ``files``) as ``simscan pairs`` lists them, in
    parts (``PairArrays`` too, scores rounded): in ``find_pairs``' order, and with ``expand`` followed by
    the pairs their copies inherit (``copies.CopyBlocks``, at most ``limit`` added, made a part at a
    time).  Returns (the parts, how many were left out)."""
    from simscan.similarity.copies import CopyBlocks
    from simscan.similarity.core import sorted_rounded, take_pairs

    table = sorted_rounded(pa)
    # (without ``expand``: no copy pair, so every block is the listed pair alone)
    blocks = CopyBlocks(table.a, table.b, table.kind <= 1 if expand else np.zeros(table.a.size, bool),
                        len(files.paths), limit)

    def parts() -> Iterator[Any]:
        for lo in range(0, blocks.size, PAIRS_AT_A_TIME):
            a, b, k = blocks.take(lo, lo + PAIRS_AT_A_TIME)
            yield dataclasses.replace(take_pairs(table, k), a=a, b=b)

    return parts(), blocks.left_out


@functools.lru_cache(maxsize=8)
def _pct_table(decimals: int, spec: str) -> np.ndarray:
    """The text of every percentage shown with ``decimals`` (0 to 100), by ``format(x, spec)`` (``"r"``: repr)."""
    scale = 10**decimals
    return np.array([repr(k / scale) if spec == "r" else format(k / scale, spec) for k in range(100 * scale + 1)],
                    dtype=object)


def _pct_texts(x: np.ndarray, decimals: int, spec: str) -> list[str]:
    """``format(shown_pct(v, decimals), spec)`` of each score (``"r"``: repr), from a table."""
    k = np.floor(np.asarray(x, np.float64) * 10**decimals + 1e-6)  # (as ``shown_pct`` cuts them)
    table = _pct_table(decimals, spec)
    if k.size and not (k.min() >= 0 and k.max() < table.size):  # (never, for percentages)
        return [repr(shown_pct(v, decimals)) if spec == "r" else format(shown_pct(v, decimals), spec)
                for v in np.asarray(x, np.float64).tolist()]
    return table[k.astype(np.intp)].tolist()


def _or_blank(x: np.ndarray, blank: str, width: int = 0) -> list[str]:
    """Each int as text (right-aligned to ``width``), ``blank`` where it is negative (unknown)."""
    text = x.astype(str) if width == 0 else np.char.rjust(x.astype(str), width)
    return np.where(x < 0, blank, text).tolist()


def _view_mark(view: str) -> str:
    """The view in text output: marked only when it is the code view (the exception)."""
    return "code" if view == "code" else "    "


_KIND_JSON = np.array([json.dumps(k) for k in KINDS], dtype=object)
_VIEW_JSON = np.array([json.dumps(v) for v in VIEWS], dtype=object)
_KIND_TEXT = np.array([f"{k:<9}" for k in KINDS], dtype=object)
_VIEW_TEXT = np.array([_view_mark(v) for v in VIEWS], dtype=object)


class PairWriter:
    """Writes a pair list in a ``--format`` (json, csv, text), a part at a time (``PairArrays`` whose a
    and b index ``names``); each path's texts are made once (a list names each file many times: 445,893
    pairs of 20,000 files)."""

    def __init__(self, fmt: str, out: TextIO) -> None:
        self.fmt, self.out, self.n = fmt, out, 0
        self._texts: dict[str, Any] = {}
        if fmt == "csv":
            csv.writer(out).writerow(_PAIR_FIELDS)

    def _path_text(self, path: str) -> Any:
        if self.fmt == "json":
            raw = raw_b64(path)
            return (json.dumps(display_path(path), ensure_ascii=False),
                    "" if raw is None else f', "a_raw": {json.dumps(raw)}', "" if raw is None else f', "b_raw": {json.dumps(raw)}')
        if self.fmt == "csv":
            return csv_cell(display_path(path, unambiguous=True))
        return _shown(path)

    def _paths(self, names: Sequence[str], part: Any) -> list[list[str]]:
        """Texts of the part's paths: side a's, side b's (json: then the a_raw and b_raw fields)."""
        used = np.unique(np.concatenate((part.a, part.b)))
        cache = self._texts
        got = []
        for k in used.tolist():
            name = names[k]
            t = cache.get(name)
            if t is None:
                t = cache[name] = self._path_text(name)
            got.append(t)
        at_a, at_b = np.searchsorted(used, part.a), np.searchsorted(used, part.b)
        if self.fmt != "json":
            texts = np.empty(used.size, dtype=object)
            texts[:] = got
            return [texts[at_a].tolist(), texts[at_b].tolist()]
        path, a_raw, b_raw = (np.empty(used.size, dtype=object) for _ in range(3))
        for col, k in ((path, 0), (a_raw, 1), (b_raw, 2)):
            col[:] = [t[k] for t in got]
        return [path[at_a].tolist(), path[at_b].tolist(), a_raw[at_a].tolist(), b_raw[at_b].tolist()]

    def write(self, names: Sequence[str], part: Any) -> None:
        r, ca, cb = part.resemblance, part.containment_a, part.containment_b
        best = np.maximum(r, np.maximum(ca, cb))
        a, b, *raw = self._paths(names, part)
        if self.fmt == "json":
            cols = (a, b, *(_pct_texts(x, 2, "r") for x in (best, r, ca, cb)), part.distance.tolist(),
                    np.where(part.exact, "true", "false").tolist(), _KIND_JSON[part.kind].tolist(),
                    _VIEW_JSON[part.view].tolist(), _or_blank(part.longest, "null"), _or_blank(part.shared, "null"),
                    *raw)
            self.out.write("".join(
                f'{{"a": {pa}, "b": {pb}, "best": {x}, "resemblance": {xr}, "containment_a": {xa}, '
                f'"containment_b": {xb}, "simhash_distance": {d}, "exact": {e}, "kind": {k}, "view": {v}, '
                f'"longest_passage": {lp}, "shared_chars": {sc}{ra}{rb}}}\n'
                for pa, pb, x, xr, xa, xb, d, e, k, v, lp, sc, ra, rb in zip(*cols)))
        elif self.fmt == "csv":
            # A part's rows into one string, then one write (a row at a time: a write each to an unbuffered
            # stdout).  Numbers as the texts ``csv`` gives them (repr).  RFC 4180 rows end in \r\n: a cell
            # holding \r is quoted too.
            buf = io.StringIO()
            csv.writer(buf).writerows(zip(
                a, b, *(_pct_texts(x, 2, "r") for x in (best, r, ca, cb)), part.distance.tolist(),
                np.where(part.exact, "True", "False").tolist(), np.asarray(KINDS, dtype=object)[part.kind].tolist(),
                np.asarray(VIEWS, dtype=object)[part.view].tolist(), _or_blank(part.longest, ""),
                _or_blank(part.shared, "")))
            self.out.write(buf.getvalue())
        else:
            mark = np.where(part.kind <= 1, "  all", _or_blank(part.longest, "    -", 5)).tolist()
            self.out.write("".join(
                f"{x}%  {k}  {v}  J {xr}  A {xa}  B {xb}  d {d}  L {lp}  {pa}  <->  {pb}\n"
                for x, k, v, xr, xa, xb, d, lp, pa, pb in zip(
                    _pct_texts(best, 1, "6.1f"), _KIND_TEXT[part.kind].tolist(), _VIEW_TEXT[part.view].tolist(),
                    *(_pct_texts(y, 1, "5.1f") for y in (r, ca, cb)),
                    np.char.rjust(part.distance.astype(str), 2).tolist(), mark, a, b)))
        self.n += int(part.a.size)


def write_pairs(pairs: Sequence[Any], fmt: str, out: TextIO) -> int:
    """Writes ``Pair`` objects in ``fmt`` (as ``simscan pairs`` writes its columns); returns how many."""
    w = PairWriter(fmt, out)
    if pairs:
        w.write(*pair_columns(pairs))
    return w.n


def _member_record(m: Any, unambiguous: bool = False) -> dict[str, Any]:
    return _member_fields(m.path, m.similarity, m.kind, m.is_reference, m.size, m.mtime_ns, m.encoding, m.is_text,
                          m.copy_set, m.keeper, m.pair, unambiguous)


def _member_fields(path: str, similarity: float, kind: str, is_reference: bool, size: int, mtime_ns: int,
                   encoding: str | None, is_text: bool, copy_set: int, keeper: bool, pair: Any,
                   unambiguous: bool = False) -> dict[str, Any]:
    """A group member as JSON (and CSV) has it; ``pair``: its pair with the reference, read (reference,
    member) (a ``Pair`` or ``grouping.PairScores``), None for the reference.  The reference's kind is
    "reference" (as the text output and the window's export say it): it is no copy of itself, and a
    script keeping the rows of kind "exact" must not take it for one (its copies say "exact")."""
    rec = {
        "path": display_path(path, unambiguous=unambiguous),
        "similarity": _num(similarity),
        "kind": "reference" if is_reference else kind,
        "is_reference": bool(is_reference),
        "size": int(size),
        "mtime_ns": int(mtime_ns),
        "encoding": encoding,
        "is_text": bool(is_text),
    }
    if copy_set:
        rec["copy_set"] = copy_set
        rec["kept"] = bool(keeper)
    if pair is not None:
        rec["resemblance"] = _num(pair.resemblance)
        rec["containment_reference"] = _num(pair.containment_a)
        rec["containment_member"] = _num(pair.containment_b)
        rec["view"] = pair.view
        rec["longest_passage"] = pair.longest_passage
        rec["shared_chars"] = pair.shared_chars
    raw = raw_b64(path)
    if raw is not None:
        rec["path_raw"] = raw
    return rec


def write_group_rows(mr: Any, fmt: str, out: TextIO) -> int:
    """``write_groups(groups, fmt, out)`` (``fmt``: json or csv) of the groups whose members ``mr`` holds
    (``grouping.MemberRows``), without a ``Group`` / ``Member`` / ``Pair`` object each (the 1,000,000-file
    mix's 138,895 groups: 58 s -> 43 s for the command).  Returns how many groups."""
    start = mr.g_start
    csv_ = fmt == "csv"

    def records() -> Iterator[tuple[str, str, int, list[dict[str, Any]]]]:
        for g, gk in enumerate(mr.g_kind):
            s, t = start[g], start[g + 1]
            members = [
                _member_fields(mr.path[j], mr.similarity[j], mr.kind[j], j == s, mr.size[j], mr.mtime_ns[j],
                               mr.encoding[j], mr.is_text[j], mr.copy_set[j], mr.keeper[j], mr.pair[j], csv_)
                for j in range(s, t)
            ]
            yield gk, mr.path[s], sum(mr.size[j] for j in range(s, t) if not mr.keeper[j]), members

    _write_group_records(records(), fmt, out, None)
    return len(mr.g_kind)


def _write_group_records(records: Iterable[tuple[str, str, int, list[dict[str, Any]]]], fmt: str, out: TextIO,
                         empty: Sequence[str] | None) -> None:
    """Groups as JSON lines or CSV rows, numbered from 1: each (kind, reference path, reclaimable bytes,
    member records of ``_member_fields``, unambiguous for CSV); ``empty``: as ``write_groups``."""
    if fmt == "json":
        for n, (kind, ref, reclaimable, members) in enumerate(records, 1):
            rec = {
                "id": n,  # numbered from 1, as the text output and the window's export
                "kind": kind,
                "reference": display_path(ref),
                "reclaimable": reclaimable,
                "members": members,
            }
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
        if empty is not None:
            out.write(json.dumps({"kind": "empty", "files": [display_path(p) for p in empty]}, ensure_ascii=False)
                      + "\n")
        return
    w = csv.writer(out)  # RFC 4180 rows end in \r\n: then a cell holding \r is quoted too
    w.writerow(_GROUP_CSV)
    for n, (kind, _ref, _reclaimable, members) in enumerate(records, 1):
        for r in members:
            w.writerow([csv_cell(x) for x in (n, kind, r["is_reference"], r["similarity"], r["kind"],
                                              r["path"], r["size"], r["mtime_ns"], r["encoding"] or "",
                                              r.get("view", ""), r.get("copy_set", ""),
                                              r.get("kept", ""), _blank(r.get("longest_passage")),
                                              _blank(r.get("shared_chars")))])
    for p in empty or ():
        w.writerow([csv_cell(x) for x in ("empty", "empty", False, "", "empty",
                                          display_path(p, unambiguous=True), 0, "", "", "", "", "", "", "")])


_GROUP_CSV = (
    "group", "group_kind", "is_reference", "similarity", "kind", "path", "size", "mtime_ns", "encoding", "view",
    "copy_set", "kept", "longest_passage", "shared_chars",
)


def _blank(x: Any) -> Any:
    return "" if x is None else x


def _copy_mark(m: Any, ref_set: int) -> str:
    """A member's copy set in text output ("[copies 2: kept]" / "[copies 2: copy]"), for the sets
    other than the reference's (whose copies read "exact" / "content"); "" for the others."""
    if not m.copy_set or m.copy_set == ref_set:
        return ""
    return f"  [copies {m.copy_set}: {'kept' if m.keeper else 'copy'}]"


def write_groups(groups: Sequence[Any], fmt: str, out: TextIO, empty: Sequence[str] | None = None) -> None:
    """``groups`` numbered from 1 in the order given; ``empty``: the empty files, listed apart after
    the groups (None: not listed)."""
    if fmt in ("json", "csv"):
        records = ((g.kind, g.reference.path, g.reclaimable, [_member_record(m, fmt == "csv") for m in g.members])
                   for g in groups)
        _write_group_records(records, fmt, out, empty)
    else:
        for n, g in enumerate(groups, 1):
            total = sum(m.size for m in g.members)
            free = f", {human_bytes(g.reclaimable)} reclaimable" if g.reclaimable else ""
            out.write(f"group {n}  {g.kind}  {len(g.members)} files  {human_bytes(total)}{free}\n")
            for m in g.members:
                kind = "reference" if m.is_reference else m.kind
                view = _view_mark(m.pair.view) if m.pair is not None else _view_mark("")
                out.write(f"  {shown_pct(m.similarity):6.1f}%  {kind:<9}  {view}  {_shown(m.path)}{_copy_mark(m, g.members[0].copy_set)}\n")
            out.write("\n")
        if empty:
            out.write(f"empty files  {len(empty)} files (not grouped: every empty file is alike)\n")
            out.writelines(f"  {_shown(p)}\n" for p in empty)
            out.write("\n")


#: ``groups --kind`` words: the member kinds each keeps (a group is listed when a member other than its
#: reference is of one, with its reference and those members), as the window's Show filter.
GROUP_KINDS = {
    "copies": "files in a set of copies (same bytes, or the same text in another encoding or line ending)",
    "similar": "edited versions (near)",
    "contained": "excerpts and files holding their reference (contained / contains)",
    "empty": "the empty files, which groups leave out",
}


def filter_groups(groups: Sequence[Any], kinds: set[str]) -> list[Any]:
    """The groups holding a member (not the reference) of one of ``kinds`` (``GROUP_KINDS``), each
    with its reference and those members; all of them unchanged when every kind is asked for."""
    if {"copies", "similar", "contained"} <= kinds:
        return list(groups)

    def wanted(m: Any) -> bool:
        return (("copies" in kinds and (m.copy_set > 0 or m.kind in ("exact", "content")))
                or ("similar" in kinds and m.kind == "near")
                or ("contained" in kinds and m.kind in ("contained", "contains")))

    out = []
    for g in groups:
        keep = [m for m in g.members[1:] if wanted(m)]
        if keep:
            out.append(dataclasses.replace(g, members=[g.members[0], *keep]))
    return out


#: ``groups --sort`` keys: how groups are ordered (each descending but ``path``).
GROUP_SORTS = ("reclaimable", "similarity", "path")


def sort_groups(groups: Sequence[Any], key: str | None) -> list[Any]:
    """``groups`` by ``key`` (None: as the grouping lists them): the most bytes freed by removing the
    extra copies first, the most similar first (the group's weakest member), or by the reference's
    path.  Stable: ties keep the grouping's order."""
    if key is None:
        return list(groups)
    if key == "reclaimable":
        return sorted(groups, key=lambda g: -g.reclaimable)
    if key == "similarity":
        return sorted(groups, key=lambda g: -min((m.similarity for m in g.members[1:]), default=100.0))
    return sorted(groups, key=lambda g: g.reference.path)


def _min_sim(value: str) -> float:
    try:
        v = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0 <= v <= 100:
        raise argparse.ArgumentTypeError("must be a percentage between 0 and 100")
    return v


def _count(value: str) -> int:
    try:
        v = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return v


def _add_common(
    p: argparse.ArgumentParser, formats: Sequence[str] = ("text", "json", "csv"), index: bool = True
) -> None:
    from simscan.cli.common import add_index_option
    from simscan.similarity import DEFAULT_MIN_SIMILARITY
    from simscan.similarity.evidence import DEFAULT_MIN_PASSAGE

    if index:
        add_index_option(p)
    p.add_argument(
        "--min-similarity", "-m", type=_min_sim, default=DEFAULT_MIN_SIMILARITY, metavar="P",
        help=f"report pairs whose best score (max of resemblance and both containments) is at least P "
        f"percent (default {DEFAULT_MIN_SIMILARITY:g})",
    )
    p.add_argument(
        "--min-passage", type=_count, default=DEFAULT_MIN_PASSAGE, metavar="CHARS",
        help=f"also report pairs that share a passage at least CHARS characters long, whatever their score "
        f"(default {DEFAULT_MIN_PASSAGE}; 0: by score only). Text common to many indexed files makes no passage",
    )
    p.add_argument("--format", choices=formats, default="text", help="output format (default: text)")


def _add_cache_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-cache", action="store_true",
        help="neither read nor write the results cached in the index (the output is the same; by default "
        "results computed from the same files are read from the index, and new ones stored in it)",
    )


def _add_memory_option(p: argparse.ArgumentParser) -> None:
    from simscan.similarity.slices import DEFAULT_MEMORY

    p.add_argument(
        "--memory", type=_megabytes, default=None, metavar="MB",
        help=f"memory budget of the pair search in MB (default: the SIMSCAN_MEMORY variable, else "
        f"{DEFAULT_MEMORY >> 20}). The results do not depend on it: past it the search's fingerprints wait in "
        "temporary files beside the index (removed when it ends), and a smaller budget is slower",
    )


def _common_cutoff(value: str) -> int:
    from simscan.similarity import SimilarityParams

    v, most = _count(value), SimilarityParams.MAX_COMMON_MIN_DF
    if v < 2:
        raise argparse.ArgumentTypeError("must be 2 or more")
    if v > most:
        raise argparse.ArgumentTypeError(f"must be {most:,} or less")
    return v


def _megabytes(value: str) -> int:
    v = _count(value)
    if v == 0:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return v << 20


def _add_view_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-code-view", action="store_true",
        help="score program source on its text only. By default two source files are also compared with "
        "every identifier and literal ignored, and the better score counts (view \"code\"): that finds "
        "copies with renamed variables, and also sources that merely share a shape",
    )


def _add_ignore_option(p: argparse.ArgumentParser) -> None:
    from simscan.similarity import SimilarityParams

    p.add_argument(
        "--ignore-text", action="append", default=[], metavar="FILE",
        help="text that counts nowhere (repeatable): e.g. the question or template every answer repeats, so "
        "that answers are not similar for repeating it. Its passages are left out of every file's score",
    )
    default = SimilarityParams().common_min_df
    p.add_argument(
        "--common-cutoff", type=_common_cutoff, default=default, metavar="N",
        help=f"text held by more than N indexed files (or by more than 0.1%% of them when that is more) counts "
        f"nowhere, as licences and templates (2 to 1,000,000; default {default}). Raise it when a folder holds more "
        "versions of one document than that: they are then paired by all their text, at more time and memory",
    )


def params_from_args(args: argparse.Namespace) -> Any:
    from simscan.similarity import SimilarityParams
    from simscan.similarity.engine import ignore_texts
    from simscan.similarity.evidence import DEFAULT_MIN_PASSAGE

    for f in args.ignore_text:
        if not os.path.isfile(f):
            raise _unreadable(f)
    try:
        ignored = ignore_texts(args.ignore_text)
    except OSError as e:
        name = _shown(e.filename) if isinstance(e.filename, str) else "a text to ignore"
        raise FileProblem(f"cannot read {name}: {e.strerror or e}", "Check the --ignore-text path.") from e
    return SimilarityParams(code_view=not args.no_code_view, ignore_values=ignored,
                            min_passage=getattr(args, "min_passage", DEFAULT_MIN_PASSAGE),
                            common_min_df=args.common_cutoff)


def _progress_bar() -> Any:
    from simscan.cli.common import ProgressBar

    return ProgressBar()


def cmd_pairs(args: argparse.Namespace) -> int:
    from simscan.cli.common import open_index_from_args
    from simscan.similarity.engine import find_pair_set

    bar = _progress_bar()
    with open_index_from_args(args, readonly=True) as index:
        # (no cancel token: Ctrl-C interrupts the command instead)
        ps = find_pair_set(index, min_similarity=args.min_similarity, progress=bar, cache=not args.no_cache,
                           params=params_from_args(args), memory=args.memory)
        bar.finish()
        _warn_incomplete(index)
    warn_cutoff(ps)
    warn_crowded(ps)
    print_pairs(args, ps)
    return 0


def print_pairs(args: argparse.Namespace, ps: Any) -> None:
    """Write the pairs of the pair set ``ps`` (``engine.find_pair_set``'s, here or from a cluster) as
    ``pairs`` does: copies' inherited pairs too unless ``--representatives-only``, in ``--format``,
    written from the columns a part at a time (``pair_column_parts``: no object per pair).  Empty files
    are left out, as from the groups and the window's Pairs tab: every empty file is alike."""
    pairs, empty = _without_empty_files(ps.pairs, ps.files)
    parts, left_out = pair_column_parts(pairs, ps.files, not args.representatives_only, args.max_copy_pairs)
    w = PairWriter(args.format, _out())
    for part in parts:
        w.write(ps.files.paths, part)
    if left_out:
        print(f"simscan: {left_out:,} pairs of copies with other files were left out (more than "
              f"--max-copy-pairs {args.max_copy_pairs:,}); each copy has the scores of the copy it is "
              "paired with as exact/content.", file=sys.stderr)
    if empty and args.format == "text":
        print(f"simscan: {empty:,} empty files are left out of the pairs (every empty file is alike); "
              "`simscan groups --kind empty` lists them.", file=sys.stderr)
    _say_none(args, range(w.n), "pairs")


def _without_empty_files(pa: Any, files: Any) -> tuple[Any, int]:
    """(the pairs of ``pa`` between two files that are not empty, how many empty files they leave out)."""
    from simscan.similarity.core import take_pairs
    from simscan.similarity.grouping import empty_mask, pairs_shown

    blank = empty_mask(files)
    a, b = np.asarray(pa.a, np.int64), np.asarray(pa.b, np.int64)
    keep = pairs_shown(files, a, b)
    if keep.all():
        return pa, 0
    ends = np.concatenate((a[~keep], b[~keep]))
    return take_pairs(pa, keep), int(np.unique(ends[blank[ends]]).size)


def warn_cutoff(ps: Any) -> None:
    """Say (stderr) when the pair budget lowered the common cut-off for this search: text held by more
    files than the lowered cut-off counted nowhere, so families of many versions can be missing."""
    if getattr(ps, "cutoff", None) is None:
        return
    used, usual = ps.cutoff
    print(f"simscan: note: this index holds too many shared passages for the pair search's budget: text held "
          f"by more than {used:,} files (usually {usual:,}) counted nowhere, so files with many versions may be "
          "missing from these results or score lower. `simscan compare A B` shows two files' own figures.",
          file=sys.stderr)


def warn_crowded(ps: Any) -> None:
    """Say (stderr) when more files than the common cut-off are mostly text that more files than it hold
    (``PairSet.crowded``): what a family of more near-copies of one text than that looks like, which is
    then paired only by its edits.  Templates and licences repeated that often look the same, so it says
    both, and how to count such text."""
    if getattr(ps, "crowded", None) is None:
        return
    files, cut = ps.crowded
    print(f"simscan: note: {files:,} files are mostly text that more than {cut:,} indexed files hold (a template "
          "or licence, or more versions of one text than that). Such text counts nowhere, so near-copies of it are "
          "paired only by what they do not share and may be missing from these results. If they are versions of "
          "one document, --common-cutoff N with N above their number counts it.", file=sys.stderr)


def _warn_incomplete(index: Any) -> None:
    """Say (stderr) what the results leave out: files fingerprinted by an older simscan (until
    rescanned), and the files a scan writing to the index right now has not stored yet."""
    try:
        stale = index.files_needing_rescan()
        unfinished = index.unfinished_scan()
    except Exception:  # noqa: BLE001 - a hint must never fail the command
        return
    if stale:
        print(f"simscan: {stale:,} indexed files were fingerprinted by an older version and are left out; "
              "run `simscan scan` on their folders again to include them.", file=sys.stderr)
    if unfinished == "running":
        print("simscan: note: a scan is writing to this index now; these results cover the files it has stored "
              "so far. Run the command again when the scan ends.", file=sys.stderr)
    elif unfinished:
        how = "failed" if unfinished == "failed" else f"was {unfinished}"
        print(f"simscan: note: the last scan {how} before it finished; these results cover the files it stored. "
              "Run `simscan scan` again on its folders to complete them.", file=sys.stderr)


#: ``groups --kind`` words in the message that none was found.
_KIND_NONE = {"copies": "copies", "similar": "edited versions", "contained": "excerpts"}


def _say_none(args: argparse.Namespace, results: Sequence[Any], what: str, kinds: Iterable[str] = ()) -> None:
    """On text output, tell a person that nothing was found (stderr; machine formats stay empty), with
    advice that can help: ``kinds``, the ``groups --kind`` asked for (empty: all).  Copies are alike
    whatever the threshold, so lowering --min-similarity finds no more of them."""
    if args.format != "text" or results:
        return
    kinds = [k for k in GROUP_KINDS if k in set(kinds) and k != "empty"]
    if kinds == ["copies"]:
        print("simscan: no copies (files with the same bytes, or the same text in another encoding or line "
              "ending); --min-similarity does not change that, as copies are alike at any threshold (scan more "
              "folders to find more).", file=sys.stderr)
        return
    if kinds:
        what = f"{what} with {' or '.join(_KIND_NONE[k] for k in kinds)}"
    hint = "lower it with --min-similarity, or scan more folders" if args.min_similarity > 0 else "scan more folders"
    print(f"simscan: no {what} at {args.min_similarity:g}% or more ({hint}).", file=sys.stderr)


def cmd_groups(args: argparse.Namespace) -> int:
    from simscan.cli.common import open_index_from_args
    from simscan.similarity.engine import find_pair_set, group_rows_of_pair_set, groups_of_pair_set

    bar = _progress_bar()
    roots = reference_roots(args)
    empty: list[str] = []
    # JSON / CSV of every group as grouped: written from the groups' columns, without an object per member.
    columns = args.format in ("json", "csv") and not args.kind and args.sort is None and not args.plan
    with open_index_from_args(args, readonly=True) as index:
        # (no cancel token: Ctrl-C interrupts the command instead)
        ps = find_pair_set(index, min_similarity=args.min_similarity, progress=bar, reference_roots=roots,
                           cache=not args.no_cache, params=params_from_args(args), memory=args.memory)
        if columns:
            rows = group_rows_of_pair_set(ps, min_similarity=args.min_similarity, reference_roots=roots,
                                          keep=keep_rules(args))
        else:
            groups = groups_of_pair_set(ps, min_similarity=args.min_similarity, reference_roots=roots,
                                        keep=keep_rules(args), empty=empty)
        bar.finish()
        _warn_incomplete(index)
    warn_cutoff(ps)
    warn_crowded(ps)
    if columns:
        write_group_rows(rows, args.format, _out())
        return 0

    def plan_files() -> tuple[Any, str]:
        with open_index_from_args(args, readonly=True) as index:
            return index.files(), str(index.path) if hasattr(index, "path") else ""

    return print_groups(args, groups, empty, plan_files)


def reference_roots(args: argparse.Namespace) -> list[str]:
    """The ``--reference`` folders, absolute; a note on stderr for each that is no folder."""
    roots = [os.path.abspath(r) for r in args.reference]
    for r in roots:
        if not os.path.isdir(r):  # a typo would silently change nothing
            what = "is not a folder" if os.path.exists(r) else "does not exist"
            print(f"simscan: note: the reference folder {display_path(r, terminal=True)} {what}; "
                  "no file is preferred for it", file=sys.stderr)
    return roots


def print_groups(args: argparse.Namespace, groups: list[Any], empty: list[str], plan_files: Any) -> int:
    """Write ``groups`` as ``groups`` does: filtered by ``--kind``, ordered by ``--sort``, with the
    empty files (``empty``: their paths) when asked, and the plan of ``--plan``
    (``plan_files()``: the file table the checksums come from, and where it is)."""
    kinds = set(args.kind or GROUP_KINDS)
    groups = sort_groups(filter_groups(groups, kinds), args.sort)
    if args.plan:
        _write_plan(args, groups, *plan_files())
    write_groups(groups, args.format, _out(), empty if "empty" in kinds and args.kind else None)
    if empty and not ("empty" in kinds and args.kind) and args.format == "text":
        print(f"simscan: {len(empty):,} empty files are left out of the groups (every empty file is alike); "
              "`--kind empty` lists them.", file=sys.stderr)
    if kinds != {"empty"}:
        _say_none(args, groups, "groups", args.kind or ())
    if "empty" in kinds and args.kind and not empty and args.format == "text":
        print("simscan: no empty files in the index.", file=sys.stderr)
    return 0


def _write_plan(args: argparse.Namespace, groups: Sequence[Any], t: Any, where: str) -> None:
    """``groups --plan FILE``: the plan that moves every extra copy of the listed groups to the trash
    (``simscan apply FILE`` checks and applies it); ``t``: the file table the groups come from."""
    from simscan.cleanup import plan_for_copies, true_copies_only, write_plan

    sums = {p: (c.hex() if isinstance(c, bytes) else "") for p, c in zip(t.paths, t.checksum)}
    bar = _progress_bar()  # (the copies in other encodings are read: seconds for thousands)
    try:
        plan, false = true_copies_only(plan_for_copies(groups, lambda p: sums.get(p, ""), where),
                                       lambda p: sums.get(p, ""), bar)
    finally:
        bar.finish()
    if false:
        n = len(false)
        print(f"simscan: left {n:,} file{'s' if n != 1 else ''} with the same words as their kept copy out of the "
              "plan: their text is not exactly the kept one's (another document format, indentation, spacing or "
              "wrapping), or one of the two cannot be read as text now, so `apply` would refuse them; move them by "
              "hand if you mean to. First: "
              f"{_shown(false[0].target.path)} (kept: {_shown(false[0].target.kept[0].path)}).", file=sys.stderr)
    try:
        write_plan(plan, args.plan)
    except OSError as e:
        raise SimscanError(f"cannot write the plan {_shown(args.plan)}: {e.strerror or e}") from e
    print(f"simscan: wrote a plan moving {len(plan.entries):,} extra copies ({human_bytes(plan.size)}) to the trash "
          f"to {_shown(args.plan)}; review it, then run `simscan apply {_shown(args.plan)}`.", file=sys.stderr)


def keep_rules(args: argparse.Namespace) -> Any:
    from simscan.similarity.keep import KeepRules

    try:
        rules = KeepRules.parse(args.keep, args.keep_pattern or "") if args.keep is not None else KeepRules(
            pattern=args.keep_pattern or "")
    except ValueError as e:
        raise SimscanError(str(e), "Give --keep as a comma-separated list, e.g. --keep newest,shortest-path.") from e
    if "pattern" in rules.order and not rules.pattern:
        raise SimscanError("the keep rule 'pattern' needs its pattern", "Give it with --keep-pattern GLOB.")
    if rules.pattern and "pattern" not in rules.order:
        # A pattern given is a rule asked for: it decides first (--keep orders the rules otherwise).
        rules = KeepRules(("pattern", *rules.order), rules.pattern)
    return rules


def _add_keep_options(p: argparse.ArgumentParser) -> None:
    from simscan.similarity.keep import CRITERIA, DEFAULT_KEEP

    words = "; ".join(f"{k}: {v}" for k, v in CRITERIA.items())
    p.add_argument(
        "--keep", metavar="RULES", default=None,
        help="which file of each set of copies is kept (and leads its group), as a comma-separated list of "
        f"rules, the first deciding first (default {DEFAULT_KEEP.text()}; files under a --reference folder "
        f"always first; a similar group is led by the file the others are contained in): {words}",
    )
    p.add_argument("--keep-pattern", metavar="GLOB", default=None,
                   help="the pattern of the 'pattern' rule: files whose path matches it are kept first (the rule "
                        "comes first unless --keep places it)")


def cmd_query(args: argparse.Namespace) -> int:
    from simscan.cli.common import open_index_from_args
    from simscan.index.postings import DEFAULT_RULE

    with open_index_from_args(args, readonly=True) as index:
        pairs, failed = query_files(args, index)
        _warn_incomplete(index)
        if getattr(index, "posting_shift", DEFAULT_RULE) != DEFAULT_RULE:
            print("simscan: note: an older simscan made this index's inverted index, which finds a shared passage "
                  "only by chance; the next `simscan scan` updates it (once).", file=sys.stderr)
    return print_query(args, pairs, failed)


def query_files(args: argparse.Namespace, index: Any) -> tuple[list[Any], int]:
    """``query`` of each of ``args.files`` in ``index``: (pairs, how many files could not be read).
    One file that cannot be read is named on stderr and the others are still queried (a single
    FILE raises :class:`FileProblem`)."""
    from simscan.similarity import query

    pairs = []
    params = params_from_args(args)  # (reads the texts to ignore once)
    failed = 0
    for f in args.files:
        problem = _unreadable(f) if not os.path.isfile(f) else None
        if problem is None and os.path.getsize(f) == 0:
            # (it would be listed as an exact copy of every empty file: all are alike)
            print(f"simscan: {_shown(f)} is empty: an empty file is compared with no file "
                  "(`simscan groups --kind empty` lists the empty files).", file=sys.stderr)
            continue
        if problem is None:
            bar = _progress_bar()  # (a short text's pass over every stored set takes seconds)
            notes: list[str] = []
            try:
                pairs.extend(query(index, f, min_similarity=args.min_similarity, params=params, progress=bar,
                                   notes=notes))
            except OSError as e:
                problem = FileProblem(f"cannot read {_shown(f)}: {e.strerror or e}")
            finally:
                bar.finish()
            for note in notes:  # (a password-protected PDF is compared by its bytes: "no similar files" says why)
                print(f"simscan: {_shown(f)}: {terminal_text(note)}", file=sys.stderr)
        if problem is not None:
            if len(args.files) == 1:
                raise problem
            print(f"simscan: {problem}", file=sys.stderr)
            failed += 1
    return pairs, failed


def print_query(args: argparse.Namespace, pairs: list[Any], failed: int) -> int:
    """Write the pairs of :func:`query_files` in ``--format``; the exit code (1 when a file failed)."""
    out = _out()
    write_pairs(pairs, args.format, out)
    empty = sum(1 for f in args.files if os.path.isfile(f) and os.path.getsize(f) == 0)  # (told by query_files)
    if failed < len(args.files) - empty:
        _say_none(args, pairs, "similar files")
    return FileProblem.exit_code if failed else 0


def _comparison_record(c: Any) -> dict[str, Any]:
    rec = pair_record(c.pair)
    matched_a, matched_b = c.matched_chars()
    rec.update(
        encoding_a=c.encoding_a,
        encoding_b=c.encoding_b,
        source_a=c.source_a,
        source_b=c.source_b,
        ranges_a=[list(r) for r in c.ranges_a],
        ranges_b=[list(r) for r in c.ranges_b],
        matched_chars_a=matched_a,
        matched_chars_b=matched_b,
        chars_a=None if c.text_a is None else len(c.text_a),
        chars_b=None if c.text_b is None else len(c.text_b),
        truncated=bool(c.truncated),
        capped=bool(c.capped),
    )
    return rec


def _snippet(text: str, start: int, end: int, width: int = 70) -> str:
    s = terminal_text(" ".join(text[start:end].split()))  # file content: no terminal escapes
    return s if len(s) <= width else s[: width // 2 - 2] + " … " + s[-(width // 2 - 2):]


class IndexPair(NamedTuple):
    """What ``compare`` knows of two files in the index (:func:`_index_pair`).  pair, left: the pair and
    what the index leaves out of it at the usual common cut-off (``engine.pair_in_index``); changed: the
    indexed files among the two that changed since the scan; searched: the common cut-off the last pair
    search of these files with these settings used, from the results cache -- (used, usual) when the
    pair budget lowered it, () when it did not, None when no such search is cached (then compare cannot
    know whether `pairs` scores the pair at the usual cut-off); at_search: the pair at a lowered cut-off
    (None: nothing shared that it counts)."""

    pair: Any
    left: Any
    changed: list[str]
    searched: tuple[int, ...] | None = None
    at_search: Any = None


def _search_cutoff(ix: Any, params: Any) -> tuple[int, ...] | None:
    """The common cut-off of the pair search cached in ``ix`` for ``params`` at the default threshold and
    the files as they are now: (used, usual) when the pair budget lowered it, () when not, None when no
    such search is cached (only that array of it is kept, ``Index.cached_result``)."""
    from simscan.similarity import DEFAULT_MIN_SIMILARITY
    from simscan.similarity.engine import cache_key, stored_cutoff

    if not (hasattr(ix, "generation") and hasattr(ix, "cached_result")):
        return None
    hit = ix.cached_result(cache_key(params), ix.generation(), DEFAULT_MIN_SIMILARITY, "search.cutoff")
    return None if hit is None else (stored_cutoff(hit.get("search.cutoff")) or ())


def _index_pair(args: argparse.Namespace, c: Any) -> IndexPair | None:
    """:class:`IndexPair` of the two files as the index scores them, with the containments in compare's
    order; None without an index holding one of them (``--no-index``, no index file, or neither file
    indexed)."""
    from pathlib import Path

    from simscan.extract.document import fingerprint_path
    from simscan.index import Index
    from simscan.index.errors import IndexError_
    from simscan.index.store import default_index_path
    from simscan.similarity.engine import pair_in_index

    if args.no_index:
        return None
    path = Path(args.index) if args.index is not None else default_index_path()
    if not path.is_file():
        return None
    a, b = os.path.abspath(args.file_a), os.path.abspath(args.file_b)
    params = params_from_args(args)
    at_search = None
    try:
        with Index.open(path, readonly=True) as ix:
            ids = ix.ids_for_paths([os.fsencode(a), os.fsencode(b)])
            if os.fsencode(b) in ids:
                query_path, other, swap = a, ids[os.fsencode(b)], False
            elif os.fsencode(a) in ids:
                query_path, other, swap = b, ids[os.fsencode(a)], True
            else:
                return None
            rows = ix.files_by_ids(list(ids.values()))
            if any(int(n) == 0 for n in rows.fp_count):
                # An indexed file without fingerprints (too short for a window, or too large: indexed by its
                # checksum alone) shares none with any file: the index adds nothing to the two compared alone,
                # and fingerprinting the other (a 420 MB text: 99 s, 1.8 GB) would be for nothing.
                return None
            fp = fingerprint_path(query_path)
            bar = _progress_bar()  # (each pass over every stored set: seconds at a million files)
            try:
                pair, left = pair_in_index(ix, fp, query_path, other, params, bar)
                changed = _changed_since_scan(ix, ids)
                searched = _search_cutoff(ix, params)
                if searched and pair is not None:  # (nothing shared at the usual cut-off: nothing at a lower one)
                    lowered = dataclasses.replace(params, common_min_df=searched[0], common_fraction=0.0)
                    at_search, _ = pair_in_index(ix, fp, query_path, other, lowered, bar)
            finally:
                bar.finish()
    except (IndexError_, OSError):
        return None
    if swap and left is not None:
        left = dataclasses.replace(left, alone_a=left.alone_b, alone_b=left.alone_a, counted_a=left.counted_b,
                                   counted_b=left.counted_a)

    def ours(p: Any) -> Any:
        if p is None or not swap:
            return p
        return dataclasses.replace(p, a_path=c.pair.a_path, b_path=c.pair.b_path, a_id=p.b_id, b_id=p.a_id,
                                   containment_a=p.containment_b, containment_b=p.containment_a)

    return IndexPair(ours(pair), left, changed, searched, ours(at_search))


def _changed_since_scan(ix: Any, ids: dict[bytes, int]) -> list[str]:
    """The indexed files among ``ids`` (path -> id) whose size or time differ from the index's row now:
    `pairs` still shows what the last scan read of them."""
    t = ix.files_by_ids(list(ids.values()))
    row = {int(i): k for k, i in enumerate(t.ids.tolist())}
    out = []
    for path, fid in ids.items():
        try:
            st = os.stat(path)
        except OSError:
            continue
        k = row.get(fid)  # (None: a row that failed or an older version wrote: not in the results anyway)
        if k is not None and (int(t.size[k]), int(t.mtime_ns[k])) != (st.st_size, st.st_mtime_ns):
            out.append(os.fsdecode(path))
    return out


def _scores_line(p: Any) -> str:
    return (f"best {shown_pct(p.best):.1f}%  resemblance {shown_pct(p.resemblance):.1f}%  "
            f"a in b {shown_pct(p.containment_a):.1f}%  b in a {shown_pct(p.containment_b):.1f}%")


def _left_out_text(left: Any, ignored: bool = False) -> str:
    why = f"held by more than {left.cutoff} indexed files, or inside text that many share (licences, templates, " \
          "boilerplate)"
    return (f"the index leaves out {left.alone_a - left.counted_a:,} of a's {left.alone_a:,} fingerprints and "
            f"{left.alone_b - left.counted_b:,} of b's {left.alone_b:,}: "
            + (f"in the text given with --ignore-text, or {why}" if ignored else why))


def _as_pairs(indexed: IndexPair) -> str:
    """How ``compare`` names the index's scores of a pair: "as `pairs` scores it" only when the last pair
    search is known to have used the usual common cut-off (``IndexPair.searched``)."""
    usual = f"more than {indexed.left.cutoff:,} indexed files" if indexed.left is not None else "many indexed files"
    if indexed.searched == ():
        return "as `pairs` scores it"
    if indexed.searched:
        return f"in the index at the usual common cut-off (text held by {usual} left out)"
    return f"in the index (text held by {usual} left out, as `pairs` does unless it says it lowered that cut-off)"


def cmd_compare(args: argparse.Namespace) -> int:
    from simscan.similarity import compare

    for f in (args.file_a, args.file_b, *args.ignore_text):
        if not os.path.isfile(f):
            raise _unreadable(f)
    try:
        c = compare(args.file_a, args.file_b, code_view=not args.no_code_view, ignore=args.ignore_text)
    except OSError as e:
        raise FileProblem(f"cannot read {_shown(e.filename or '')}: {e.strerror or e}") from None
    indexed = _index_pair(args, c) if c.pair.kind not in ("exact", "content") else None
    out = _out()
    if args.format == "json":
        rec = _comparison_record(c)
        if indexed is not None:
            # The pair as the index scores it (at the usual cut-off), and the two files alone beside it.
            pair, left, changed = indexed.pair, indexed.left, indexed.changed
            rec["alone"] = {k: rec[k] for k in ("best", "resemblance", "containment_a", "containment_b", "kind",
                                                "view", "longest_passage", "shared_chars")}
            if pair is None:
                rec.update(best=0.0, resemblance=0.0, containment_a=0.0, containment_b=0.0, kind="near",
                           longest_passage=0, shared_chars=0)
            else:
                rec.update({k: v for k, v in pair_record(pair).items() if k in rec["alone"]})
            rec["left_out"] = None if left is None else {
                "fingerprints_a": left.alone_a - left.counted_a, "fingerprints_b": left.alone_b - left.counted_b,
                "of_a": left.alone_a, "of_b": left.alone_b, "common_cutoff": left.cutoff}
            rec["changed_since_scan"] = changed
            # The cut-off of the last pair search (null: none cached, so unknown), and the pair at it when lowered.
            searched, at = indexed.searched, indexed.at_search
            rec["pairs_search"] = None if searched is None else {
                "lowered": bool(searched), "common_cutoff": searched[0] if searched else None,
                "usual_cutoff": searched[1] if searched else None,
                "at_cutoff": None if not searched or pair is None else (
                    {k: 0.0 for k in ("best", "resemblance", "containment_a", "containment_b")} if at is None
                    else {k: v for k, v in pair_record(at).items() if k in rec["alone"]})}
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return 0
    p = c.pair
    # A document says where its text came from ("PDF, 2 pages, text layer; left out: ...").
    out.write(f"a: {_shown(p.a_path)}  ({terminal_text(c.source_a or c.encoding_a or 'binary')})\n")
    out.write(f"b: {_shown(p.b_path)}  ({terminal_text(c.source_b or c.encoding_b or 'binary')})\n")
    view = " (code view: names and literals ignored)"
    if indexed is not None:
        pair, left, changed = indexed.pair, indexed.left, indexed.changed
        if pair is None:  # (at a lowered cut-off too: it counts less)
            out.write("in the index: nothing shared that the index counts (as `pairs` scores them)\n")
        else:
            out.write(f"{pair.kind}{view if pair.view == 'code' else ''}, {_as_pairs(indexed)}: {_scores_line(pair)}"
                      f"  simhash distance {pair.simhash_distance}\n")
            if indexed.searched:
                used = indexed.searched[0]
                at = indexed.at_search
                out.write(f"(the last `pairs` search of these files had to lower that cut-off to {used:,} files: text "
                          f"held by more counted nowhere; there, "
                          + ("they share nothing it counts, so `pairs` does not list them)\n" if at is None else
                             f"{at.kind}: {_scores_line(at)})\n"))
            if pair.longest_passage:
                out.write(f"longest shared passage {pair.longest_passage:,} characters, {pair.shared_chars:,} in all\n")
            elif p.longest_passage and pair.kind not in ("exact", "content"):
                # (else a passage the two files show alone goes unexplained: a paragraph 11 essays copy)
                from simscan.similarity.evidence import frequent_cutoff

                many = f"more than {frequent_cutoff(left.cutoff):,}" if left is not None else "many"
                out.write(f"no shared passage as `pairs` counts them: text that {many} indexed files hold makes "
                          f"none, and the index keeps fewer windows than this comparison reads (alone: "
                          f"{p.longest_passage:,} characters)\n")
        if left is not None and (left.alone_a != left.counted_a or left.alone_b != left.counted_b):
            out.write(f"({_left_out_text(left, bool(args.ignore_text))})\n")
        out.write(f"the two files alone: {_scores_line(p)}\n")
        for f in changed:
            out.write(f"({_shown(f)} changed since the last scan: `pairs` still shows what that scan read; "
                      "scan again to update it)\n")
    else:
        # A "near" pair at 0 % reads as a finding -- unless a passage is shared (scores sample windows,
        # passages read every one).
        kind = p.kind if p.best > 0 or c.ranges_a else "nothing shared"
        out.write(f"{kind}{view if p.view == 'code' else ''}: {_scores_line(p)}  simhash distance {p.simhash_distance}\n")
        if p.longest_passage:
            out.write(f"longest shared passage {p.longest_passage:,} characters, {p.shared_chars:,} in all\n")
        if 0 < p.best < 100:  # (the scope only matters for a partial match)
            out.write(f"({COMPARE_SCOPE_NOTE})\n")
    if c.text_a is None or c.text_b is None:
        out.write("(binary: no passages shown)\n")
        return 0
    n = len(c.ranges_a)
    out.write(f"{n} matching passage{'' if n == 1 else 's'} (every shared window)\n")
    order = sorted(range(len(c.ranges_a)), key=lambda i: c.ranges_a[i][0])
    for shown, i in enumerate(order, 1):
        (a0, a1), (b0, b1) = c.ranges_a[i], c.ranges_b[i]
        out.write(f"  a[{a0}:{a1}] = b[{b0}:{b1}]  {_snippet(c.text_a, a0, a1)}\n")
        if shown >= 20 and len(order) > 21:
            out.write(f"  … {len(order) - shown} more (use --format json for all)\n")
            break
    if c.truncated:
        out.write("(large files: passages searched in the first part only)\n")
    if c.capped:
        out.write("(repetitive text: a passage that repeats many times is matched at a few of its places)\n")
    return 0


_SCORES_EPILOG = """\
scores (percent, 0-100):
  resemblance     shared fingerprints / all fingerprints of the two files (Jaccard)
  containment_a   share of a's fingerprints found in b ("how much of a is in b")
  containment_b   share of b's fingerprints found in a
  best            the largest of the three; the threshold applies to it
                  (fingerprints held by more than 50 distinct indexed files, or 0.1% of
                  the index, are boilerplate and left out; `compare` counts them)
  kind            exact (same bytes), content (same words in another encoding, line
                  ending, spacing or wrapping), contained (one file lies largely inside the other: its
                  containment is at least 50% and at least 1.5 times the other's, e.g.
                  an excerpt), near (anything else: edited versions, partial overlaps)
  view            text (the words of the files) or code (both are program source and
                  score higher with every identifier and literal ignored: the same
                  program under other names -- or two programs of the same shape;
                  --no-code-view scores on the text only)
  simhash_distance  bits that differ between the files' 64-bit simhashes (0-64)
  longest_passage the longest passage the two share, in characters of the original text
                  (the shorter side); a pair sharing one of at least --min-passage
                  characters (default 100) is listed whatever its score: a paragraph
                  copied into a long essay is 3% of it
  shared_chars    characters the shared passages cover (on the side with fewer)
                  (both empty/null for copies: all of the file is shared)
Text output, a line a pair: best, kind, "code" for the code view, J resemblance,
A containment_a, B containment_b, d simhash_distance, L longest_passage ("all" for
copies), then a <-> b.

Copies (exact/content) of one file are listed as pairs against one of them (the oldest),
not as every pair among them (n copies: n-1 pairs).  Every other pair is listed for each
copy: if A-B is listed, so is A_copy-B, with the same scores (at most --max-copy-pairs
such inherited pairs, a note on stderr says how many were left out; --representatives-only
lists only the pairs of the oldest copy).  Paths of one file on disk (hard links, a folder
indexed through a symbolic link) are one file, listed once.
--format json prints one JSON object per line; csv is safe to open in a spreadsheet."""

#: ``query`` lists every indexed file like the queried one, copies included: no copy options.
_QUERY_EPILOG = _SCORES_EPILOG[: _SCORES_EPILOG.index("Copies (exact/content)")] + (
    "Every indexed file like FILE is listed, each copy of it too.  Paths of one file on disk\n"
    "(hard links, a folder indexed through a symbolic link) are one file, listed once.\n"
    "--format json prints one JSON object per line; csv is safe to open in a spreadsheet."
)


#: Why ``compare`` without an index and ``pairs`` / ``query`` can show different percentages for one pair.
COMPARE_SCOPE_NOTE = (
    "scores of these two files alone: no index holds them; `pairs` and `query` leave out text common to "
    "many indexed files (boilerplate), so they can show other percentages for the same pair"
)

_COMPARE_EPILOG = """\
scores (percent, 0-100): resemblance (Jaccard), a in b, b in a and best, as for `pairs`.
When the index (--index, or the default one) holds one of the files, the pair is scored as
`pairs` and `query` score it -- fingerprints held by many indexed files (more than 50
distinct files, or 0.1% of the index) and the text they mark (licences, templates,
boilerplate) are left out -- and compare says how much the index left out, with the scores
of the two files alone beside them (every shared fingerprint counts).  In a very large index
the pair search can lower that cut-off (`pairs` then says so): compare says "as `pairs` scores
it" only when the search cached for these files kept the usual one, and when it was lowered,
how the pair fares at the lowered cut-off.  --no-index: the
two files alone only.  The matching passages shown are every shared 50-unit window of the
two texts, boilerplate included; the longest shared passage is the fingerprints' evidence,
the number `pairs` lists.
--format json prints one JSON object with the scores and the character ranges ("alone",
"left_out" and "pairs_search" too when an index holds the files: the cut-off of the cached
search, null when none is cached)."""


def add_options(p: argparse.ArgumentParser, command: str, index: bool = True) -> None:
    """The arguments of ``pairs``, ``groups`` or ``query`` (``command``), results cache aside;
    without ``index`` no ``--index`` (``simscan cluster`` reads a store instead)."""
    if command == "query":
        p.add_argument("files", nargs="+", metavar="FILE")
    _add_common(p, index=index)
    if command == "pairs":
        p.add_argument("--representatives-only", action="store_true",
                       help="pair only the oldest of identical copies with other files (smaller output)")
        p.add_argument("--max-copy-pairs", type=_count, default=MAX_COPY_PAIRS, metavar="N",
                       help="list at most N pairs inherited by copies (default %(default)s)")
    elif command == "groups":
        p.add_argument("--reference", "-r", action="append", default=[], metavar="DIR",
                       help="prefer files under DIR as references (repeatable)")
        p.add_argument("--kind", action="append", choices=tuple(GROUP_KINDS), metavar="KIND",
                       help="list only the groups holding such files, with their reference and those files "
                       "(repeatable): " + "; ".join(f"{k}: {v}" for k, v in GROUP_KINDS.items()))
        p.add_argument("--sort", choices=GROUP_SORTS, default=None,
                       help="order of the groups: reclaimable (most bytes freed by removing the extra copies "
                       "first), similarity (most similar first), path (of the reference); default: as grouped")
        _add_keep_options(p)
        p.add_argument("--plan", metavar="FILE", default=None,
                       help="also write the plan that moves every extra copy of the listed groups to the trash "
                       "(the file kept of each set stays): a shell script when FILE ends in .sh, else JSON; check "
                       "and apply it with `simscan apply FILE`")
    _add_view_option(p)
    _add_ignore_option(p)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("pairs", help="list pairs of similar files in the index",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_SCORES_EPILOG,
                       description="List every pair of indexed files whose best score is at least P percent.")
    add_options(p, "pairs")
    _add_cache_option(p)
    _add_memory_option(p)
    p.set_defaults(func=cmd_pairs)

    p = sub.add_parser("groups", help="list groups of similar files with a reference file",
                       description="Group similar files around a reference file (preferred: under a --reference "
                       "folder, then the oldest, then the shortest path). Every member is similar to the reference.",
                       epilog="Each member shows its best score against the reference and its kind, read from the "
                       "member's side: exact, content, near, contained (the member lies in the reference: an "
                       "excerpt) or contains (the reference lies in the member); the reference's kind is "
                       "reference.")
    add_options(p, "groups")
    _add_cache_option(p)
    _add_memory_option(p)
    p.set_defaults(func=cmd_groups)

    p = sub.add_parser("query", help="find indexed files similar to given files",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_QUERY_EPILOG,
                       description="Find files in the index similar to FILE (which need not be indexed); "
                       "a is the queried file.")
    add_options(p, "query")
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("compare", help="compare two files and show their matching passages",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_COMPARE_EPILOG,
                       description="Scores of two files and their matching passages (character ranges of the "
                       "decoded texts). The files need not be indexed.")
    p.add_argument("file_a", metavar="FILE_A")
    p.add_argument("file_b", metavar="FILE_B")
    p.add_argument("--format", choices=("text", "json"), default="text")
    from simscan.cli.common import add_index_option

    add_index_option(p)
    p.add_argument("--no-index", action="store_true",
                   help="score the two files alone, even when the index holds them")
    _add_view_option(p)
    _add_ignore_option(p)
    p.set_defaults(func=cmd_compare)
