"""``simscan gui [ROOT...] [--index PATH]``: open the window (Qt is imported only here, when run)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("gui", help="open the simscan window", description="Open the simscan window.")
    p.add_argument("roots", nargs="*", metavar="ROOT", help="folders to scan at once (instead of the remembered ones)")
    p.add_argument("--index", metavar="PATH", help="index file (default: $SIMSCAN_INDEX or the data folder)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        from simscan.gui.app import run
    except ImportError as e:  # PySide6 missing or its system libraries not installed
        from simscan.errors import SimscanError

        raise SimscanError(f"the window cannot start: {e}.", "Install PySide6-Essentials, or use the CLI.") from e
    return run(args.roots, args.index)
