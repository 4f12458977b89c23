"""``simscan scan``, ``simscan stats`` and ``simscan problems``.

Exit codes: 0 done (problems with single files are reported, not failures), 3 the index cannot
be used (corrupt: the message names the file and ``--rebuild``; locked by another scan;
unavailable), 130 interrupted by Ctrl-C, 143 terminated by SIGTERM (finished work kept either way),
2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from simscan.cli.common import (
    ProgressBar,
    add_index_option,
    display_path,
    human_bytes,
    human_duration,
    open_index_from_args,
    raw_b64,
)
from simscan.display import terminal_text
from simscan.errors import SimscanError
from simscan.progress import CancelToken

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"1500"``, ``"10k"``, ``"2MB"``, ``"1GiB"`` -> bytes (k = 1000, Ki = 1024)."""
    m = _SIZE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 500, 10k, 2MB, 1GiB)")
    num, unit, binary = float(m.group(1)), m.group(2).lower(), bool(m.group(3))
    base = 1024 if binary else 1000
    return int(num * base ** " kmgt".index(unit or " "))


def add_walk_options(p: argparse.ArgumentParser) -> None:
    """The options that choose which files a scan reads (``scan``, ``cluster scan``)."""
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip files and folders matching GLOB: the name ('*.tmp', '.git'); with a / the path, at any depth "
        "('build/*.o'), or from the top of a ROOT when it starts with / ('/docs', as in .gitignore; an absolute "
        "path matches itself); repeatable",
    )
    p.add_argument(
        "--include", action="append", default=[], metavar="GLOB", help="only scan files matching GLOB; repeatable"
    )
    hidden = p.add_mutually_exclusive_group()
    hidden.add_argument(
        "--hidden", dest="hidden", action="store_true", default=False,
        help="also scan names starting with '.' (dot files and folders: .git, .cache, ...). Left out by default, "
        "as in the window: a scan forgets indexed files it now leaves out, so one default keeps the two from "
        "undoing each other's scans of one index",
    )
    hidden.add_argument("--no-hidden", dest="hidden", action="store_false", help="skip names starting with '.' "
                        "(the default)")
    p.add_argument(
        "--min-size",
        type=parse_size,
        default=0,
        metavar="N",
        help="skip files smaller than N (bytes; 10k, 2MB, 1GiB also work)",
    )
    p.add_argument(
        "--max-size",
        type=parse_size,
        default=None,
        metavar="N",
        help="skip files larger than N (bytes; 10k, 2MB, 1GiB also work)",
    )
    p.add_argument(
        "--follow-links", action="store_true", help="follow symbolic links (never to places outside the ROOTs)"
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "scan",
        help="scan folders into the index (only new and changed files are read)",
        description="Walk ROOTs and fingerprint every new or changed file into the index. Files are "
        "never modified. Problems with single files are listed by `simscan problems`.",
        epilog="A second scan reads only new and changed files; renamed files are recognised, and files "
        "that are gone (or now excluded) under the ROOTs leave the index. Exit codes: 0 done (even with "
        "problems in single files), 2 bad arguments (a ROOT that is not there or cannot be read: nothing is "
        "scanned), 3 the index cannot be used (damaged: the message says whether a scan repairs it or --rebuild "
        "is needed; its disk is full; "
        "another scan is running), 130 interrupted by Ctrl-C, 143 terminated by SIGTERM (finished work is "
        "kept either way).",
    )
    p.add_argument("roots", nargs="+", metavar="ROOT", type=Path, help="folder or file to scan")
    add_index_option(p)
    add_walk_options(p)
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N", help="worker processes (default: CPUs)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")
    p.add_argument(
        "--no-cache",
        dest="cache",
        action="store_false",
        help="do not work out the similarity results at the end (the window and `simscan groups` "
        "then do it when they first open the index)",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="move the existing index aside (as *.corrupt-<time>, never deleted) and start a new one holding "
        "every file of it whose entries pass their checksums (the others are read again)",
    )
    p.set_defaults(func=cmd_scan)

    s = sub.add_parser("stats", help="show what the index holds")
    add_index_option(s)
    s.add_argument("--format", choices=("text", "json"), default="text")
    s.set_defaults(func=cmd_stats)

    k = sub.add_parser(
        "check",
        help="verify the whole index now (checksums of every entry, SQLite's integrity check)",
        description="Verify every entry of the index against its checksum and the database's structure "
        "(SQLite's integrity check). Changes nothing. Every command verifies what it reads anyway, and "
        "each scan checks part of the index in turn; this checks all of it now (about a second per "
        "100,000 files).",
        epilog="Exit codes: 0 the index is intact, 3 it is damaged (the message says what, and whether the next "
        "scan repairs it or --rebuild is needed) or cannot be used.",
    )
    add_index_option(k)
    k.set_defaults(func=cmd_check)

    q = sub.add_parser("problems", help="list files the last scan could not (fully) read, and why")
    add_index_option(q)
    q.add_argument("--all", action="store_true", help="problems of every scan, not just the last")
    q.add_argument("--format", choices=("text", "json"), default="text")
    q.set_defaults(func=cmd_problems)


def _root_problem(path: Path) -> str | None:
    """Why the ROOT ``path`` cannot be scanned at all (None: it can): it is not there, or it cannot be
    read (a folder that may not be listed, a file that may not be opened, a folder on the way that may
    not be searched)."""
    try:
        os.lstat(path)
        if os.path.isdir(path):
            with os.scandir(path):
                pass
        elif os.path.exists(path):
            os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))
        else:
            return "a symbolic link to nothing"
    except FileNotFoundError:
        return "no such file or folder"
    except OSError as e:
        return e.strerror or str(e)
    return None


def check_walk_args(args: argparse.Namespace) -> int | None:
    """2 (said on stderr) when a scan's ROOTs or sizes cannot be right, else None."""
    if args.max_size is not None and args.min_size > args.max_size:
        # Nothing would be scanned, and every file already indexed under the roots would be forgotten.
        print(f"simscan: --min-size {args.min_size:,} is larger than --max-size {args.max_size:,} (bytes)",
              file=sys.stderr)
        return 2
    # One rule for every ROOT: one that is not there or cannot be read is a wrong argument (exit 2), found
    # before anything is scanned, so that a mistyped path or an unmounted disk changes nothing in the index.
    bad = [(r, why) for r in args.roots if (why := _root_problem(r)) is not None]
    for r, why in bad:
        print(f"simscan: cannot scan {display_path(os.fspath(r), terminal=True)}: {why}", file=sys.stderr)
    if bad:
        print(
            "Nothing was scanned. Give folders that exist and that you may read, e.g. `simscan scan ~` or "
            "`simscan scan /path/to/folder` (several folders may be given).",
            file=sys.stderr,
        )
        return 2
    return None


def cmd_scan(args: argparse.Namespace) -> int:
    from simscan.index import rebuild
    from simscan.scanner import ScanRequest, run_scan

    if args.jobs is not None and args.jobs < 1:
        print("simscan: --jobs must be at least 1", file=sys.stderr)
        return 2
    bad = check_walk_args(args)
    if bad is not None:
        return bad
    if args.rebuild:
        idx, moved = rebuild(args.index)
        idx.close()
        if moved is not None and not args.quiet:
            kept, lost = idx.salvaged
            print(f"simscan: the old index was moved to {moved}; the new one keeps the {_count(kept, 'file')} whose "
                  f"entries passed their checksums" + (f" ({lost:,} damaged, read again)" if lost else ""),
                  file=sys.stderr)
    bar = ProgressBar(enabled=False if args.quiet else None)
    cancel = CancelToken()
    req = ScanRequest(
        roots=list(args.roots),
        index_path=args.index,
        exclude=list(args.exclude),
        include=list(args.include),
        hidden=args.hidden,
        min_size=args.min_size,
        max_size=args.max_size,
        follow_links=args.follow_links,
        jobs=args.jobs,
    )
    try:
        result = run_scan(req, progress=bar, cancel=cancel)
        changed = result.files_read or result.files_removed or result.files_renamed
        if args.cache and changed and not result.cancelled:
            _cache_results(args.index, bar, cancel)
    finally:
        bar.finish()
    if not args.quiet:
        rate = result.files_read / result.elapsed_s if result.elapsed_s > 0 else 0.0
        print(
            f"scanned {_count(result.files_seen, 'file')} in {human_duration(result.elapsed_s)}: "
            f"{result.files_read:,} read ({human_bytes(result.bytes_read)}, {rate:,.0f} files/s), "
            f"{result.files_unchanged:,} unchanged, {result.files_renamed:,} renamed, "
            f"{result.files_removed:,} removed, {_count(result.problems, 'problem')}",
            file=sys.stderr,
        )
        if result.repairs:
            print(f"repaired the index: {'; '.join(result.repairs)}", file=sys.stderr)
        if result.files_repaired:
            n = result.files_repaired
            print(f"{_count(n, 'file')} with damaged entries {'was' if n == 1 else 'were'} dropped from the index to "
                  "be read again (those under the folders just scanned were); `simscan problems` lists them",
                  file=sys.stderr)
        if result.hidden_skipped:
            n = result.hidden_skipped
            what = "1 hidden file or folder" if n == 1 else f"{n:,} hidden files and folders"
            print(f"left out {what} (names starting with '.'); `--hidden` scans them", file=sys.stderr)
    if not args.quiet:
        # (with the index named as this scan named it, so that the hint can be run as it is)
        where = "" if args.index is None else f" --index {shlex.quote(os.fsdecode(args.index))}"
        if result.problems:
            print(f"run `simscan problems{where}` to see what could not be read", file=sys.stderr)
        print(f"run `simscan groups{where}` to see similar files", file=sys.stderr)
    return 0


def _cache_results(index_path: Path | None, bar: ProgressBar, cancel: CancelToken) -> None:
    """Work out the results the window and ``simscan pairs|groups`` show first and keep them in
    the index, so that the next of those opens at once (a scan is usually followed by one).
    Best-effort: an index that cannot take them (read-only, busy) is left as it is."""
    from simscan.index import Index
    from simscan.index.errors import disk_full, no_room
    from simscan.similarity.engine import cache_results

    with Index.open(index_path, readonly=True) as idx:
        if not cache_results(idx, progress=bar, cancel=cancel) and not cancel.cancelled and no_room(idx.path):
            # The scan's files are stored; only its results could not be: the user must free space anyway.
            raise disk_full(idx.path)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def cmd_stats(args: argparse.Namespace) -> int:
    with open_index_from_args(args, readonly=True) as idx:
        st = idx.stats(verify=True)
        st["scan_running"] = idx.scan_running()
    last: dict[str, Any] | None = st["last_scan"]
    if last and last["status"] == "running" and not st["scan_running"]:
        # Its process died (kill -9, a crash, a power cut) before it could say so; the next scan
        # marks it "killed" in the index too.
        last["status"] = "killed"
    if args.format == "json":
        print(json.dumps(st, indent=2, sort_keys=True))
        return 0
    print(f"index:        {st['index']} ({human_bytes(st['index_bytes'])})")
    print(
        f"files:        {st['files']:,} ({human_bytes(st['bytes'])}): {st['text_files']:,} text, "
        f"{st['binary_files']:,} binary, {st['files_with_errors'] - st['files_changed_while_read']:,} unreadable"
        + (f", {st['files_changed_while_read']:,} changed while being read (the next scan reads them)"
           if st["files_changed_while_read"] else "")
    )
    if st["files_needing_rescan"]:
        print(
            f"stale:        {st['files_needing_rescan']:,} files were fingerprinted by another version; "
            "run `simscan scan` again"
        )
    print(f"fingerprints: {st['fingerprints']:,} (the inverted index posts {st['posting_sample']})")
    if st.get("files_waiting_for_postings"):
        print(
            f"pending:      {st['files_waiting_for_postings']:,} files not yet in the inverted index "
            + ("(a scan is running: it adds them)" if st["scan_running"] else
               "(a scan was stopped early; the next scan adds them)")
        )
    if last:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(last["started_at"]))
        roots = ", ".join(display_path(r, terminal=True) for r in last["roots"])
        if last["status"] in ("running", "killed"):
            # Its counts are written when it ends: a running or killed scan has none yet.
            how = "running" if last["status"] == "running" else "killed before it finished; the next scan reads the rest"
            print(f"last scan:    {when}, {how}, {roots}")
        else:
            print(
                f"last scan:    {when}, {last['status']}, {roots}: {_count(last['files_seen'], 'file')}, "
                f"{last['files_read']:,} read, {_count(last['problems'], 'problem')}"
            )
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from simscan.index import IndexCorrupt, IndexDamaged
    from simscan.index.checks import note_damage
    from simscan.index.errors import corrupt

    with open_index_from_args(args, readonly=True) as idx:
        t0 = time.monotonic()
        rep = idx.check(integrity=True)
        checked = idx.checked
    took = human_duration(time.monotonic() - t0)
    if rep.ok:
        what = f"{_count(rep.files_checked, 'file')} and their fingerprints" if checked else "its structure"
        print(f"the index {display_path(str(idx.path), terminal=True)} is intact: {what} checked in {took}",
              file=sys.stderr)
        if not checked:
            print("(an older index: its entries carry no checksums until the next scan upgrades it)", file=sys.stderr)
        return 0
    for line in rep.findings():
        print(f"damaged: {terminal_text(line)}", file=sys.stderr)
    note_damage(idx.path)  # the next scan checks all of it (and repairs what it can)
    if rep.structure:
        err: IndexCorrupt = corrupt(idx.path, "the structure of its pages is broken")
    else:
        err = IndexDamaged(
            f"the index {idx.path} is damaged; nothing is computed from the damaged entries.",
            "The next `simscan scan` of your folders repairs it: it drops the damaged entries and reads those "
            "files again (or `simscan scan --rebuild ...` starts a new index with what passes its checksums).",
        )
    print(f"simscan: {err}", file=sys.stderr)
    return err.exit_code


def cmd_problems(args: argparse.Namespace) -> int:
    with open_index_from_args(args, readonly=True) as idx:
        rows = idx.problems(last_run_only=not args.all)
    print_problems(rows, args.format, "no problems in the last scan" if not args.all else "no problems recorded")
    return 0


def print_problems(rows: list[tuple[str, str]], fmt: str, none: str) -> None:
    """``(path, reason)`` rows as ``problems`` prints them (``none``: what stderr says of no row)."""
    if fmt == "json":
        for path, reason in rows:
            # As `pairs` writes paths: \xNN for bytes that are not UTF-8, and then the exact bytes in base64.
            rec = {"path": display_path(path), "reason": reason}
            raw = raw_b64(path)
            if raw is not None:
                rec["path_raw"] = raw
            print(json.dumps(rec, ensure_ascii=False))
        return
    if not rows:
        print(none, file=sys.stderr)
    for path, reason in rows:
        print(f"{display_path(path, terminal=True)}: {terminal_text(reason)}")  # (reasons are stored escaped)


__all__ = ["SimscanError", "cmd_check", "cmd_problems", "cmd_scan", "cmd_stats", "parse_size", "register"]
