"""Command line: ``simscan COMMAND ...``.  A thin layer on the core; never imports Qt
(``simscan gui`` imports the GUI only when run).

Exit codes (a contract, also in README.md):
  0  success
  1  error (a message on stderr says what and what to do)
  2  usage error (bad arguments)
  3  the index cannot be used (corrupt, locked by another scan, unreadable)
  130  interrupted (Ctrl-C); what was finished is kept
  143  terminated (SIGTERM: a logout, ``timeout``, a service manager); what was finished is kept
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from simscan import __version__
from simscan.errors import SimscanError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INDEX = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, stopped as Ctrl-C stops: a scan's workers are stopped and its finished work kept
    (the default action would kill this process alone and leave its workers waiting for ever)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


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
    watch = args.command != "gui" and threading.current_thread() is threading.main_thread()
    if watch:  # (the window handles its own signals)
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return int(args.func(args) or EXIT_OK)
    except Terminated:
        print("simscan: terminated; finished work is kept in the index.", file=sys.stderr)
        return EXIT_TERMINATED
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
    finally:
        if watch:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
