"""Paths and messages as text for people: one line each, undecodable bytes and control characters
escaped.  Core (no Qt, no CLI): the command line, plans' comments and the HTML exports show paths alike."""

from __future__ import annotations

from simscan.index.store import storable_text

# C0 and C1 control characters and DEL as escapes: a name holding a newline, a carriage return or
# a terminal escape sequence must not break a line-per-path listing or drive the terminal.
_CONTROL_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(32), *range(127, 160))} | {9: "\\t", 10: "\\n", 13: "\\r"}


def terminal_text(text: str) -> str:
    """``text`` (a file's content, a reason naming other paths) with control characters escaped,
    as :func:`display_path` does for terminal output."""
    return text.translate(_CONTROL_ESCAPES)


def display_path(path: str, *, terminal: bool = False, unambiguous: bool = False) -> str:
    """A path as text: bytes that are not UTF-8 (decoded with surrogate escapes) as ``\\xNN``;
    with ``terminal`` (text output, messages, the progress bar) control characters (C0, DEL, C1)
    escaped too (``\\n``, ``\\x1b``), so that every path stays on one line.  JSON and CSV carry
    control characters as they are (their quoting keeps them apart).  With ``terminal`` or
    ``unambiguous`` (CSV) a backslash of the name is doubled, so that ``\\`` always starts an
    escape (else a file really named ``caf\\xe9.txt`` and a Latin-1 ``café.txt`` print alike).  JSON
    keeps names as they are (it carries the bytes of names that are not UTF-8 apart)."""
    if terminal or unambiguous:
        path = path.replace("\\", "\\\\")
    path = storable_text(path)
    return terminal_text(path) if terminal else path


__all__ = ["display_path", "terminal_text"]
