"""What every extractor returns or raises, and the text they build under a size cap."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import IO

#: Characters of text one document gives at most; the rest is left out and the result says so
#: (a 100 MB spreadsheet holds ~10^8 characters of cells: fingerprinting and storing them all
#: would cost seconds and ~1 GB for one file, while a few million characters already tell every
#: copy and most shared passages).
MAX_TEXT_CHARS = 32 << 20

#: What a reader says when the text was cut at :data:`MAX_TEXT_CHARS`.
CUT = f"text cut after {MAX_TEXT_CHARS >> 20} M characters"


def shown(fmt: str) -> str:
    """A format as a person reads it: "PDF", "DOCX"; an encrypted Office file is an "Office file"."""
    return "Office file" if fmt == "ooxml-encrypted" else fmt.upper()


@dataclass(frozen=True, slots=True)
class Extracted:
    """The text of a document and where it came from.

    format: what the content is (``sniff``: "docx", "pdf", ...).  extractor / version: the reader
    that made the text (a module of this package) and its version string, which names the library
    version too where one does the work: the index keeps both, and a new version re-reads the
    files of that format (:func:`simscan.extract.current_versions`).  parts: what the text holds
    ("12 pages", "tables", "footnotes", "notes" ...); left_out: what was dropped on purpose
    ("styles", "running headers and page numbers (24 lines)" ...); notes: what the user should
    know (the text was cut, some pages have no text).
    """

    text: str
    format: str
    extractor: str
    version: str
    parts: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        """One line for a person: "PDF, 12 pages, text layer; left out: running headers ..." """
        out = ", ".join((shown(self.format), *self.parts))
        if self.left_out:
            out += "; left out: " + ", ".join(self.left_out)
        if self.notes:
            out += "; " + "; ".join(self.notes)
        return out


def source_bytes(file: IO[bytes] | str | bytes, limit: int = -1) -> bytes:
    """The bytes of a reader's source: bytes as they are, a path's file or a binary file read (at most
    ``limit`` bytes when it is not -1)."""
    if isinstance(file, bytes):
        return file
    if isinstance(file, str):
        with open(file, "rb") as f:
            return f.read(limit)
    return file.read(limit)


class ExtractError(Exception):
    """A document whose text cannot be read.  ``str(err)`` is the reason for a person
    ("password-protected", "damaged or truncated zip: ..."); ``kind`` a short code
    ("encrypted", "corrupt", "bomb", "entities", "depth", "no-text", "too-large", "unsupported");
    ``format`` the format sniffed."""

    def __init__(self, reason: str, kind: str, format: str = "") -> None:
        super().__init__(reason)
        self.kind = kind
        self.format = format


class TextFull(Exception):
    """Raised by :class:`TextSink` once it holds :data:`MAX_TEXT_CHARS`: the reader stops there."""


# Control characters other than TAB and LF (CR becomes LF): they would make the text look binary.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\ufeff\ufffe\uffff]")


class TextSink:
    """Pieces of text in reading order, at most ``limit`` characters (then :class:`TextFull`)."""

    __slots__ = ("cut", "limit", "pieces", "size")

    def __init__(self, limit: int = MAX_TEXT_CHARS) -> None:
        self.pieces: list[str] = []
        self.size = 0
        self.limit = limit
        self.cut = False

    def add(self, s: str) -> None:
        if not s:
            return
        if self.size + len(s) > self.limit:
            self.pieces.append(s[: self.limit - self.size])
            self.size = self.limit
            self.cut = True
            raise TextFull
        self.pieces.append(s)
        self.size += len(s)

    def newline(self) -> None:
        """End a paragraph (one line break, never two in a row from this call)."""
        if self.pieces and not self.pieces[-1].endswith("\n"):
            self.add("\n")

    def text(self) -> str:
        return clean("".join(self.pieces))


def clean(text: str) -> str:
    """``text`` without control characters (CR, CR LF become LF), trailing spaces and runs of blank lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
