"""OpenDocument (ODF 1.2/1.3): ODT, ODS, ODP and their templates.

Text, in the order DOCX gives it (``ooxml``), so that one document saved in both formats reads
the same: the page headers (``styles.xml``, master pages), the body of ``content.xml``
(paragraphs, headings, lists, tables: cells separated by tabs, rows by lines; text frames;
slides with their speaker notes in page order; sheets a row per line), the footnotes and
endnotes (ODF keeps them inside the paragraph that cites them), then the page footers.
Left out: styles, fields a program fills in (page numbers and counts, dates, times, file names),
note citations, comments (``office:annotation``), deleted text of tracked changes, and titles and
descriptions of drawings.  A package whose ``META-INF/manifest.xml`` lists encryption data is
password-protected.
"""

from __future__ import annotations

from typing import IO

from simscan.extract import reader_version
from simscan.extract.base import CUT, Extracted, ExtractError, TextFull, TextSink
from simscan.extract.package import Package, XmlHandler
from simscan.extract.sniff import ODP, ODS, ODT

NAME = "odf"

_SKIP = frozenset(
    ["annotation", "tracked-changes", "note-citation", "page-number", "page-count", "page-continuation", "date", "time", "file-name", "title", "desc", "sheet-name", "chapter", "template-name"]
)
#: A cell or row repeated more than this many times is shown this many times (ODF compresses
#: runs of equal cells; 1,048,576 repeated rows of text would be a bomb).
MAX_REPEAT = 100


class _OdfText(XmlHandler):
    """Text of a content.xml or of the headers/footers of a styles.xml (``styles``)."""

    def __init__(self, sink: TextSink, notes: list[str], styles: bool = False) -> None:
        self.sink = sink
        self.notes = notes
        self.styles = styles
        self.skip = 0
        self.para = 0  # inside text:p / text:h
        self.note: list[str] | None = None  # the note body being read
        self.header_footer = 0
        self.cell: list[str] | None = None  # the table cell being read (spreadsheets)
        self.cell_repeat = 1
        self.row: list[str] = []
        self.row_repeat = 1
        self.headers: list[str] = []
        self.footers: list[str] = []
        self.area: list[str] | None = None  # header or footer text being read

    def _out(self, s: str) -> None:
        if self.skip:
            return
        if self.note is not None:
            self.note.append(s)
        elif self.area is not None:
            self.area.append(s)
        elif self.cell is not None:
            self.cell.append(s)
        elif not self.styles:
            self.sink.add(s)

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if name in _SKIP:
            self.skip += 1
            return
        if name in ("p", "h"):
            self.para += 1
        elif name == "s":
            self._out(" " * min(MAX_REPEAT, _int(attrs.get("c"), 1)))
        elif name == "tab":
            self._out("\t")
        elif name == "line-break":
            self._out("\n")
        elif name == "note-body":
            self.note = []
        elif name in ("header", "header-left", "header-first", "footer", "footer-left", "footer-first"):
            self.area = []
        elif name == "table-cell" or name == "covered-table-cell":
            self.cell = []
            self.cell_repeat = min(MAX_REPEAT, _int(attrs.get("number-columns-repeated"), 1))
        elif name == "table-row":
            self.row = []
            self.row_repeat = min(MAX_REPEAT, _int(attrs.get("number-rows-repeated"), 1))

    def end(self, name: str) -> None:
        if name in _SKIP:
            self.skip -= 1
            return
        if self.skip:
            return
        if name in ("p", "h"):
            self.para -= 1
            if self.cell is not None:
                self.cell.append("\n")
            else:
                self._out("\n")
        elif name == "note-body" and self.note is not None:
            self.notes.append("".join(self.note).strip())
            self.note = None
        elif name.startswith(("header", "footer")) and self.area is not None:
            text = "".join(self.area).strip()
            target = self.headers if name.startswith("header") else self.footers
            if text and text not in target:
                target.append(text)
            self.area = None
        elif name in ("table-cell", "covered-table-cell") and self.cell is not None:
            text = " ".join("".join(self.cell).split("\n")).strip()
            self.cell = None
            if text:
                self.row.extend([text] * self.cell_repeat)
        elif name == "table-row":
            if self.row:
                line = "\t".join(self.row) + "\n"
                for _ in range(self.row_repeat):
                    self._out(line)
            self.row = []

    def text(self, data: str) -> None:
        if self.para > 0:
            self._out(data)


def _int(v: str | None, default: int) -> int:
    try:
        return max(1, int(v)) if v is not None else default
    except ValueError:
        return default


def extract(file: IO[bytes] | str, fmt: str) -> Extracted:
    """The text of an ODF package (``fmt``: "odt", "ods" or "odp", as sniffed)."""
    with Package(file, fmt) as pkg:
        if "META-INF/manifest.xml" in pkg.names and b"encryption-data" in pkg.read("META-INF/manifest.xml"):
            raise ExtractError("password-protected", "encrypted", fmt)
        if "content.xml" not in pkg.names:
            raise ExtractError("not an OpenDocument package (content.xml missing)", "corrupt", fmt)
        sink = TextSink()
        notes: list[str] = []
        page = _OdfText(sink, notes, styles=True)
        cut: tuple[str, ...] = ()
        try:
            if fmt == ODT and "styles.xml" in pkg.names:  # a sheet's or slide's page footer is print decoration
                pkg.parse("styles.xml", page)
            for h in page.headers:
                sink.add(h + "\n")
            pkg.parse("content.xml", _OdfText(sink, notes))
            for n in notes:
                sink.newline()
                sink.add(n + "\n")
            for f in page.footers:
                sink.add(f + "\n")
        except TextFull:
            cut = (CUT,)
        parts = []
        if notes:
            parts.append("footnotes" if fmt == ODT else "notes")
        if page.headers:
            parts.append("headers")
        if page.footers:
            parts.append("footers")
        left = {ODT: ("styles", "fields", "comments"), ODS: ("formulas", "styles", "comments"),
                ODP: ("layouts", "fields")}[fmt]
        return Extracted(sink.text(), fmt, NAME, reader_version(NAME), tuple(parts), left, cut)
