"""Export the shown results to CSV, JSON or HTML.

What is exported is what the window lists: the groups the Show filter and the search leave, and of
each, its reference and the files the Show filter keeps ("Exact copies" exports no edited version,
as none is on screen), in the shown order; a group's numbers (``reclaimable_bytes``, the HTML
summary) count those files.  JSON and HTML also say which filter was on (``shown``), so a report
never passes a filtered list off as the whole.

* CSV is safe to open in a spreadsheet: a text cell starting with ``=``, ``+``, ``-``, ``@``
  (or a tab / carriage return, which some spreadsheets strip before looking) is prefixed with
  an apostrophe so it is never evaluated as a formula (OWASP "CSV injection").
* JSON is one document: ``{"threshold": …, "shown": {"show": …, "search": …}, "groups": [{"kind", "reference", "reclaimable_bytes",
  "members": [{"path", "similarity", "kind", "copies", "size", "modified", "encoding", "reference", "marked",
  "view", "longest_passage", "shared_chars"}]}]}``; ``view`` is "code" when a member was compared with its
  reference as program code (names and literals ignored), "text" otherwise, "" for the reference; ``copies``
  the member's place in its set of copies ("kept", "copy", "copy (text)", ""), ``reclaimable_bytes`` the
  bytes of the shown extra copies: the window's meaning of reclaimable; ``longest_passage`` /
  ``shared_chars`` the longest passage the member shares with its reference and the characters their
  shared passages cover (null for the reference, a copy, or a pair not weighed), as ``simscan groups``.
* HTML is a standalone page; every path is escaped.

The pairs review list exports the same three ways (:data:`PAIR_WRITERS`): one row / object per shown
pair, in the shown order, with the fields of ``simscan pairs --format json`` (``a``, ``b``, ``best``,
``resemblance``, ``containment_a``, ``containment_b``, ``simhash_distance``, ``exact``, ``kind``,
``view``, ``longest_passage``, ``shared_chars``); JSON adds ``threshold``, ``min_passage`` and ``shown``.

Paths that are not valid UTF-8 keep their bytes in CSV (surrogateescape) and are
``\\u``-escaped in JSON (ASCII output), so no file name is lost.
"""

from __future__ import annotations

import csv
import html
import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from simscan.display import display_path
from simscan.gui.review import ReviewRows
from simscan.gui.snapshot import KINDS, Snapshot
from simscan.similarity.types import shown_pct

CSV_COLUMNS = [
    "group", "group_kind", "role", "path", "similarity", "kind", "copies", "size", "modified", "encoding", "marked",
    "view", "longest_passage", "shared_chars",
]
_DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(cell: Any) -> Any:
    """A CSV cell that a spreadsheet will not run as a formula."""
    if isinstance(cell, str) and cell.startswith(_DANGEROUS):
        return "'" + cell
    return cell


def _iso(mtime_ns: int) -> str:
    return datetime.fromtimestamp(mtime_ns / 1e9, tz=UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Shown:
    """What the window shows of a snapshot: ``members`` (bool per member, None: all of each listed
    group), and the filter's words for the file (``show``: the Show choice's label, "" for all;
    ``search``: the search text, "" for none)."""

    members: np.ndarray | None = None
    show: str = ""
    search: str = ""

    def describe(self) -> str:
        """"" when nothing is filtered, else e.g. "Show: Exact copies · search: report"."""
        parts = ([f"Show: {self.show}"] if self.show else []) + ([f"search: {self.search}"] if self.search else [])
        return " · ".join(parts)


ALL = Shown()


def rows(
    snap: Snapshot, groups: Iterable[int], marked: frozenset[int] | set[int], shown: Shown = ALL
) -> Iterator[dict[str, Any]]:
    """One dict per shown member of each group (reference first); ``group`` numbers from 1."""
    keep = shown.members
    for n, g in enumerate(groups, 1):
        g = int(g)
        for m in range(snap.l_start[g], snap.l_start[g + 1]):
            if keep is not None and not keep[m] and not snap.l_is_ref[m]:
                continue
            sim = snap.l_sim[m]
            longest, shared = snap.member_evidence(m)
            yield {
                "group": n,
                "group_kind": KINDS[snap.l_g_kind[g]],
                "role": "reference" if snap.l_is_ref[m] else "member",
                "path": snap.paths[m],
                "similarity": None if math.isnan(sim) else shown_pct(sim, 2),
                "kind": "reference" if snap.l_is_ref[m] else snap.kind_name(m),
                "copies": copies_text(snap, m),
                "extra": not snap.l_keeper[m],
                "size": snap.l_size[m],
                "modified": _iso(snap.l_mtime[m]),
                "encoding": snap.encodings[m] or ("" if snap.is_text[m] else "binary"),
                "marked": snap.l_file_id[m] in marked,
                "view": _view(snap, m),
                "longest_passage": longest,
                "shared_chars": shared,
            }


def copies_text(snap: Snapshot, m: int) -> str:
    """Member ``m``'s place in its copy set, as the window's Copies column says it: "kept" (the file
    kept of a set), "copy" (an extra copy with the same bytes), "copy (text)" (the same text in
    another encoding or line ending), "" (a file without a copy)."""
    if snap.l_set_size[m] < 2:
        return ""
    if snap.l_keeper[m]:
        return "kept"
    return "copy" if snap.l_copy_kind[m] == 0 else "copy (text)"


def _view(snap: Snapshot, m: int) -> str:
    """The fingerprint view that scored member ``m`` against its reference ("text" or "code"), or
    "" for the reference."""
    return "" if snap.l_is_ref[m] else snap.member_view(m)


def write_csv(
    path: str | os.PathLike[str], snap: Snapshot, groups: Iterable[int], marked: frozenset[int], shown: Shown = ALL
) -> int:
    """Returns the number of rows written.  (CSV has no place to say which filter was on: the
    window's Export dialog and status line say it.)"""
    n = 0
    # utf-8-sig: spreadsheets then detect UTF-8; surrogateescape keeps undecodable names' bytes.
    with open(path, "w", newline="", encoding="utf-8-sig", errors="surrogateescape") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows(snap, groups, marked, shown):
            r = dict(r, marked="yes" if r["marked"] else "")
            r.update((k, "") for k in ("similarity", "longest_passage", "shared_chars") if r[k] is None)
            w.writerow([neutralise(r[c]) for c in CSV_COLUMNS])
            n += 1
    return n


def to_json(snap: Snapshot, groups: Iterable[int], marked: frozenset[int], shown: Shown = ALL) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for r in rows(snap, groups, marked, shown):
        if r["role"] == "reference":
            g = int(r["group"])
            out.append(
                {
                    "group": g,
                    "kind": r["group_kind"],
                    "reference": r["path"],
                    "reclaimable_bytes": 0,
                    "members": [],
                }
            )
        if r["extra"]:
            out[-1]["reclaimable_bytes"] += r["size"]
        member = {k: r[k] for k in ("path", "similarity", "kind", "copies", "size", "modified", "encoding", "marked",
                                    "view", "longest_passage", "shared_chars")}
        member["reference"] = r["role"] == "reference"
        out[-1]["members"].append(member)
    return {"threshold": snap.threshold, "shown": {"show": shown.show, "search": shown.search}, "groups": out}


def _dump_json(path: str | os.PathLike[str], doc: dict[str, Any]) -> None:
    with open(path, "w", encoding="ascii") as f:
        json.dump(doc, f, indent=1, ensure_ascii=True)
        f.write("\n")


def write_json(
    path: str | os.PathLike[str], snap: Snapshot, groups: Iterable[int], marked: frozenset[int], shown: Shown = ALL
) -> int:
    doc = to_json(snap, groups, marked, shown)
    _dump_json(path, doc)
    return len(doc["groups"])


_HTML_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
:root {{ color-scheme: light dark; }}
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ text-align: left; padding: .25em .6em; border-bottom: 1px solid #8884; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.group td {{ font-weight: bold; padding-top: 1em; }}
tr.ref td.path {{ font-weight: bold; }}
</style></head><body>
<h1>{title}</h1>
<p>{summary}</p>
<table><thead><tr>{headers}</tr></thead><tbody>
"""
_GROUP_HEADERS = ("Path", "Similarity", "Kind", "Longest passage (characters)", "Copies", "Size (bytes)",
                  "Modified (UTC)", "Encoding", "Marked")


def _html_head(title: str, summary: str, headers: Iterable[str]) -> str:
    """The page up to the table's body: ``title``, ``summary`` and ``headers`` escaped."""
    e = html.escape
    return _HTML_HEAD.format(title=e(title), summary=e(summary), headers="".join(f"<th>{e(h)}</th>" for h in headers))


def write_html(
    path: str | os.PathLike[str], snap: Snapshot, groups: Iterable[int], marked: frozenset[int], shown: Shown = ALL
) -> int:
    e = html.escape
    groups = [int(g) for g in groups]
    listed = list(rows(snap, groups, marked, shown))
    reclaim = sum(r["size"] for r in listed if r["extra"])
    files = sum(1 for r in listed if r["role"] != "reference")
    summary = (f"{len(groups)} groups at ≥ {snap.threshold:.0f} % similarity; {reclaim:,} bytes reclaimable by removing "
               "the extra copies (every copy but the one kept of each set).")
    if shown.describe():
        summary += f" Filtered as shown in the window ({shown.describe()}): {files:,} files besides the references."
    parts = [_html_head("simscan results", summary, _GROUP_HEADERS)]
    for r in listed:
        if r["role"] == "reference":
            parts.append(f'<tr class="group"><td colspan="9">Group {r["group"]} — {e(r["group_kind"])}</td></tr>\n')
        # Cut to one decimal as the window shows it (99.97 is 99.9 %, never a rounded 100.0 %).
        sim = "" if r["similarity"] is None else f'{shown_pct(r["similarity"]):.1f} %'
        parts.append(
            f'<tr class="{"ref" if r["role"] == "reference" else "member"}"><td class="path">{e(display_path(r["path"]))}</td>'
            f'<td class="num">{e(sim)}</td><td>{e(r["kind"] + (" (code)" if r["view"] == "code" else ""))}</td>'
            f'<td class="num">{"" if r["longest_passage"] is None else format(r["longest_passage"], ",")}</td>'
            f'<td>{e(r["copies"])}</td><td class="num">{r["size"]:,}</td>'
            f'<td>{e(r["modified"])}</td><td>{e(r["encoding"])}</td><td>{"✔" if r["marked"] else ""}</td></tr>\n'
        )
    _write_page(path, parts)
    return len(groups)


def _write_page(path: str | os.PathLike[str], parts: list[str]) -> None:
    """The HTML page of ``parts`` (head and rows), its table closed, to ``path``."""
    parts.append("</tbody></table></body></html>\n")
    with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
        f.write("".join(parts))


WRITERS = {"csv": write_csv, "json": write_json, "html": write_html}


# -- the pairs review list -------------------------------------------------------------------------
PAIR_COLUMNS = [
    "a", "b", "best", "resemblance", "containment_a", "containment_b", "simhash_distance", "exact", "kind", "view",
    "longest_passage", "shared_chars",
]


def pair_rows(review: ReviewRows, order: Iterable[int]) -> Iterator[dict[str, Any]]:
    """One dict per pair (rows of ``review``, in ``order``), with the fields of ``simscan pairs``:
    percentages cut to two decimals, ``longest_passage`` / ``shared_chars`` None for a copy (its
    whole text) or a pair not weighed."""
    for k in order:
        p = review.pair(int(k))
        yield {
            "a": p.a_path,
            "b": p.b_path,
            "best": shown_pct(p.best, 2),
            "resemblance": shown_pct(p.resemblance, 2),
            "containment_a": shown_pct(p.containment_a, 2),
            "containment_b": shown_pct(p.containment_b, 2),
            "simhash_distance": p.simhash_distance,
            "exact": p.exact,
            "kind": p.kind,
            "view": p.view,
            "longest_passage": p.longest_passage,
            "shared_chars": p.shared_chars,
        }


def write_pairs_csv(path: str | os.PathLike[str], review: ReviewRows, order: Iterable[int], shown: Shown = ALL) -> int:
    n = 0
    with open(path, "w", newline="", encoding="utf-8-sig", errors="surrogateescape") as f:
        w = csv.writer(f)
        w.writerow(PAIR_COLUMNS)
        for r in pair_rows(review, order):
            w.writerow([neutralise("" if r[c] is None else r[c]) for c in PAIR_COLUMNS])
            n += 1
    return n


def pairs_to_json(review: ReviewRows, order: Iterable[int], shown: Shown = ALL) -> dict[str, Any]:
    return {"threshold": review.threshold, "min_passage": review.min_passage,
            "shown": {"show": shown.show, "search": shown.search}, "pairs": list(pair_rows(review, order))}


def write_pairs_json(path: str | os.PathLike[str], review: ReviewRows, order: Iterable[int], shown: Shown = ALL) -> int:
    doc = pairs_to_json(review, order, shown)
    _dump_json(path, doc)
    return len(doc["pairs"])


_PAIR_HEADERS = ("File A", "File B", "Longest passage (characters)", "Shared (characters)", "Similarity", "Kind",
                 "View")


def write_pairs_html(path: str | os.PathLike[str], review: ReviewRows, order: Iterable[int], shown: Shown = ALL) -> int:
    e = html.escape
    listed = list(pair_rows(review, order))
    summary = (f"{len(listed):,} pairs at ≥ {review.threshold:.0f} % similarity"
               + (f" or sharing a passage of ≥ {review.min_passage:,} characters" if review.min_passage else "")
               + ", ranked by evidence: the longest shared passage, then the characters shared, then the share.")
    if shown.describe():
        summary += f" Filtered as shown in the window ({shown.describe()})."
    parts = [_html_head("simscan pairs", summary, _PAIR_HEADERS)]
    for r in listed:
        copy = r["kind"] in ("exact", "content")

        def chars(n: int | None, copy: bool = copy) -> str:
            return "whole file" if copy else "" if n is None else f"{n:,}"

        parts.append(
            f'<tr><td>{e(display_path(r["a"]))}</td><td>{e(display_path(r["b"]))}</td><td class="num">{chars(r["longest_passage"])}</td>'
            f'<td class="num">{chars(r["shared_chars"])}</td><td class="num">{shown_pct(r["best"]):.1f} %</td>'
            f'<td>{e(r["kind"])}</td><td>{e(r["view"])}</td></tr>\n'
        )
    _write_page(path, parts)
    return len(listed)


PAIR_WRITERS = {"csv": write_pairs_csv, "json": write_pairs_json, "html": write_pairs_html}
