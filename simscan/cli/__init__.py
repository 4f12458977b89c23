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
import errno
import os
import signal
import sys
import threading
from collections.abc import Sequence

from simscan import __version__
from simscan.errors import SimscanError
from simscan.heap import one_arena

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
    from simscan.cli import cleanup_cmds, cluster_cmds, gui_cmd, scan_cmds, similarity_cmds

    parser = argparse.ArgumentParser(
        prog="simscan",
        description="Find files with similar content: exact copies, the same text in another "
        "encoding, edited versions, excerpts and plagiarised passages.",
    )
    parser.add_argument("--version", action="version", version=f"simscan {__version__}")
    # `simscan --index PATH COMMAND` as well as `simscan COMMAND --index PATH` (README: "every command takes
    # --index"): before the command it was taken for the command's name ("invalid choice: 'PATH'").
    parser.add_argument("--index", dest="index_before_command", metavar="PATH", default=None,
                        help="the index file, as the command's own --index")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (scan_cmds, similarity_cmds, cleanup_cmds, gui_cmd, cluster_cmds):
        module.register(sub)
    return parser


def _index_before_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Give the command the ``--index`` written before it (a usage error when the command takes none, or
    takes another after it)."""
    before = args.index_before_command
    if before is None:
        return
    if not hasattr(args, "index"):
        parser.error(f"`simscan {args.command}` takes no --index")
    if args.index is None:
        from pathlib import Path

        args.index = before if args.command == "gui" else Path(before)
    elif str(args.index) != before:
        parser.error(f"two indexes given: --index {before} before the command and --index {args.index} after it")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _index_before_command(parser, args)
    if args.command != "gui":  # (the window asks in its own start)
        one_arena()  # one malloc arena for every thread: ``simscan.heap``
    _check_memory_variable()
    watch = args.command != "gui" and threading.current_thread() is threading.main_thread()
    if watch:  # (the window handles its own signals)
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return int(args.func(args) or EXIT_OK)
    except Terminated:
        kept = "; finished work is kept in the index" if args.command == "scan" else ""
        print(f"simscan: terminated{kept}.", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        kept = "; finished work is kept in the index" if args.command == "scan" else ""
        print(f"simscan: interrupted{kept}.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SimscanError as e:
        print(f"simscan: {e}", file=sys.stderr)
        return getattr(e, "exit_code", EXIT_ERROR)
    except BrokenPipeError:
        # Output piped into e.g. `head` that closed early: not an error worth a traceback.
        sys.stderr.close()
        return EXIT_OK
    except OSError as e:
        # A full disk, a quota, an I/O error on the file the output goes to.  (Files that simscan
        # reads are reported with their names where they are read; these errors carry no name.)
        if e.filename is not None or e.errno not in _WRITE_ERRORS:
            raise
        print(f"simscan: cannot write the output: {e.strerror or e}.", file=sys.stderr)
        _drop_output()
        return EXIT_ERROR
    finally:
        if watch:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _check_memory_variable() -> None:
    """Say (stderr) when ``SIMSCAN_MEMORY`` is set to something that is not a budget, which the search
    then leaves for its default."""
    from simscan.similarity.slices import DEFAULT_MEMORY, memory_from_env

    try:
        memory_from_env()
    except ValueError:
        print(f"simscan: SIMSCAN_MEMORY={os.environ.get('SIMSCAN_MEMORY', '')!r} is not a number of MB (e.g. 256); "
              f"the default, {DEFAULT_MEMORY >> 20} MB, is used.", file=sys.stderr)


def _drop_output() -> None:
    """Point standard output at /dev/null, so that the interpreter's flush at exit does not fail
    a second time with a traceback."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # no real file descriptor (an embedding, a test's capture)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
