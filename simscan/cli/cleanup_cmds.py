"""Sub-commands ``apply`` (a plan exported from the window) and ``forget`` (results of folders)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from simscan.cli.common import add_index_option, display_path, human_bytes


def _shown(path: str) -> str:
    return display_path(path, terminal=True)


def cmd_forget(args: argparse.Namespace) -> int:
    from simscan.cleanup import forget_under

    n = forget_under(args.index, args.folders)
    names = ", ".join(_shown(f) for f in args.folders)
    if n:
        print(f"forgot {n:,} indexed file{'' if n == 1 else 's'} under {names} (the files themselves are untouched; scanning the "
              "folder again reads them again)")
    else:
        print(f"simscan: the index holds no file under {names}", file=sys.stderr)
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    from simscan.cleanup import apply_plan, read_plan
    from simscan.cli.common import ProgressBar
    from simscan.errors import SimscanError

    plan = read_plan(args.plan)
    bar = ProgressBar()
    out = apply_plan(plan, dry_run=args.dry_run, progress=bar)
    bar.finish()
    for p, why in out.refused:
        print(f"refused: {_shown(p)}: {why}", file=sys.stderr)
    for p, why in out.failed:
        print(f"not moved: {_shown(p)}: {why}", file=sys.stderr)
    for p in out.missing:
        print(f"already gone: {_shown(p)}", file=sys.stderr)
    size = {e.target.path: e.target.size for e in plan.entries}
    moved = sum(size.get(p, 0) for p in out.trashed)
    verb = "would move" if args.dry_run else "moved"
    print(f"{verb} {len(out.trashed):,} of {len(plan.entries):,} files ({human_bytes(moved)}) to the trash; "
          f"{len(out.refused):,} refused, {len(out.failed):,} could not be moved, {len(out.missing):,} already gone"
          + ("" if args.dry_run else "; nothing was deleted"))
    index = args.index or (Path(plan.index) if plan.index else None)
    gone = ([] if args.dry_run else out.trashed) + out.missing
    if gone and index is not None and index.exists():
        from simscan.index import Index

        try:
            with Index.open(index) as idx:
                idx.remove_paths([os.fsencode(p) for p in gone])
        except SimscanError as e:
            print(f"simscan: the index was not updated ({e}); the next scan forgets the moved files.",
                  file=sys.stderr)
    if out.refused:
        print("simscan: refused files were left in place; scan again and export a new plan if you still want "
              "them gone.", file=sys.stderr)
    return 1 if out.refused or out.failed else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "apply", help="check a plan exported from the window, and move its files to the trash",
        description="Move the files of PLAN (a JSON or shell plan exported from the window: the files to remove "
        "and the ones kept in their place) to the trash. Every file is checked again first: it must hold the "
        "bytes the scan read (size, time and checksum), must not be another path of a kept file, and a kept "
        "file with its content must still be there; any other is refused and left in place. Nothing is "
        "deleted. Exit 1 when a file was refused or could not be moved.",
    )
    p.add_argument("plan", metavar="PLAN")
    p.add_argument("--dry-run", action="store_true", help="check only: say what would move")
    add_index_option(p)
    p.set_defaults(func=cmd_apply, index=None)

    p = sub.add_parser(
        "forget", help="forget what the index holds about folders",
        description="Forget every indexed file under FOLDER (its fingerprints and results): pairs, groups and "
        "the window no longer list them. The files themselves are not touched; scanning the folder again reads "
        "them again.",
    )
    p.add_argument("folders", nargs="+", metavar="FOLDER")
    add_index_option(p)
    p.set_defaults(func=cmd_forget)
