"""Errors about the index file itself.  All exit the CLI with code 3 (``EXIT_INDEX``)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from simscan.errors import SimscanError

#: CLI exit code for every index error (mirrors ``simscan.cli.EXIT_INDEX``; the core does not import the CLI).
EXIT_INDEX = 3


class IndexError_(SimscanError):
    """Base of the errors below: the index cannot be used as asked."""

    exit_code = EXIT_INDEX


class IndexCorrupt(IndexError_):
    """The file is not a SQLite database, or SQLite reports it malformed."""


class IndexDamaged(IndexCorrupt):
    """Values in the index fail their checksums.  Nothing was computed from them; the next scan
    checks the whole index and reads the files concerned again (fingerprints are a cache)."""


class IndexLocked(IndexError_):
    """Another scan holds the index (or SQLite stayed busy past the timeout)."""


class IndexUnavailable(IndexError_):
    """The index does not exist (read-only open), cannot be created, or is from a newer simscan."""


class NotAnIndex(IndexUnavailable):
    """The file exists but is not a simscan index (empty, another kind of file, another program's
    database).  Nothing offers to move it aside: it is probably the user's own file."""


class RefusedToMove(OSError):
    """:func:`simscan.index.move_aside` will not rename a file that is not a (damaged) SQLite index."""


def corrupt(path: Path, detail: str) -> IndexCorrupt:
    return IndexCorrupt(
        f"the index {path} is damaged ({detail}).",
        f"Run `simscan scan --rebuild --index {path} ROOT...`: it moves it aside as {path.name}.corrupt-<time> and "
        "starts a new index with every entry of it that passes its checksums; the files of the others are read "
        "again (your files are not touched).",
    )


def damaged(path: Path, what: str, files: int = 0) -> IndexDamaged:
    """The error for values found damaged on reading them (``what`` says which)."""
    if files:
        repair = (f"`simscan scan` of your folders checks the whole index and reads the {files:,} file"
                  f"{'' if files == 1 else 's'} again; ")
    else:
        repair = "`simscan scan` of your folders checks the whole index and repairs it; "
    return IndexDamaged(
        f"the index {path} is damaged: {what}. Nothing was computed from it.",
        f"{repair}or `simscan scan --rebuild --index {path} ROOT...` moves it aside and starts a new index with "
        "what of it passes its checksums (your files are not touched).",
    )


def no_room(path: Path) -> bool:
    """Whether the disk holding ``path`` has (almost) no room left: less than a few pages of the index."""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 256 << 10


def disk_full(path: Path) -> IndexUnavailable:
    """The error for a write to the index that found its disk full (SQLITE_FULL, ENOSPC)."""
    try:
        st = os.statvfs(path.parent)
        free = f" ({st.f_bavail * st.f_frsize // 1024:,} KiB free)"
    except OSError:
        free = ""
    return IndexUnavailable(
        f"cannot write to the index {path}: the disk holding it is full{free}. What the index held before, "
        "and every file scanned so far, is kept.",
        "Free some space on that disk (or choose another place with --index PATH), then scan again: the scan "
        "goes on where it stopped.",
    )


def translate(e: sqlite3.Error, path: Path) -> IndexError_:
    """Map a sqlite3 error met while using the index at ``path`` to an error for a person."""
    msg = str(e)
    low = msg.lower()
    if "locked" in low or "busy" in low:
        return IndexLocked(
            f"the index {path} is busy: another simscan process is writing to it ({msg}).",
            "Wait for the other scan to finish, or use another index with --index PATH.",
        )
    if ("not a database" in low or "malformed" in low or "corrupt" in low or "disk image" in low
            or "could not decode" in low  # (a text column that is not UTF-8 any more)
            or "unsupported file format" in low  # (a damaged header)
            or "unique constraint" in low):  # (simscan never repeats a key: an index disagrees with its table)
        return corrupt(path, msg)
    if "full" in low or ("disk i/o" in low and no_room(path)):  # (a write that found no room: I/O error too)
        return disk_full(path)
    if "readonly" in low or "read-only" in low or "unable to open" in low or "disk i/o" in low:
        return IndexUnavailable(
            f"the index {path} cannot be used: {msg}.",
            "Check that its folder exists, is writable and has free space, or choose another with --index PATH.",
        )
    return IndexUnavailable(f"the index {path} cannot be used: {msg}.", "")
