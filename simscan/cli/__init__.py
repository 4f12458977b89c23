"""Command line: ``simscan COMMAND ...``.  A thin layer on the core; never imports Qt
(``simscan gui`` imports the GUI only when run).

Exit codes (a contract, also in README.md):
  0  success
  1  error (a message on stderr says what and what to do)
  2  usage error (bad arguments)
  3  the index cannot be used (corrupt, locked by another scan, unreadable)
  130  interrupted (Ctrl-C); what was finished is kept
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from simscan import __version__
from simscan.errors import SimscanError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INDEX = 3
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    from simscan.cli import gui_cmd, scan_cmds, similarity_cmds

    parser = argparse.ArgumentParser(
        prog="simscan",
        description="Find files with similar content: exact copies, the same text in another "
        "encoding, edited versions, excerpts and plagiarised passages.",
    )
    parser.add_argument("--version", action="version", version=f"simscan {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (scan_cmds, similarity_cmds, gui_cmd):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("simscan: interrupted; finished work is kept in the index.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SimscanError as e:
        print(f"simscan: {e}", file=sys.stderr)
        return getattr(e, "exit_code", EXIT_ERROR)
    except BrokenPipeError:
        # Output piped into e.g. `head` that closed early: not an error worth a traceback.
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
