"""Office Open XML (ECMA-376): DOCX/DOCM/DOTX, PPTX, XLSX.

Text, in reading order:

* DOCX: the headers, the body (paragraphs, tables: cells separated by tabs, rows by lines; text
  boxes), the footnotes and endnotes, then the footers.  Left out: styles and properties, field
  instructions (``w:instrText``) and the results of fields a program fills in (PAGE, NUMPAGES,
  DATE, ...), deleted text of tracked changes, comments, list numbers and bullets (not text in
  the file).
* PPTX: each slide in the presentation's order (``p:sldIdLst``), its text then its speaker
  notes.  Left out: slide numbers and dates (``a:fld``), layouts and masters.
* XLSX: each sheet in the workbook's order, a row per line and cells separated by tabs; a cell's
  shared or inline string, else its stored value (a formula's last result).  Left out: formulas,
  number formats, styles, comments.

Parts are found through ``[Content_Types].xml`` and the relationships, never by guessing names.
"""

from __future__ import annotations

import re
from typing import IO

from simscan.extract import reader_version
from simscan.extract.base import CUT, Extracted, ExtractError, TextFull, TextSink
from simscan.extract.package import Package, XmlHandler, parse_xml, relationships
from simscan.extract.sniff import DOCX, PPTX, XLSX

NAME = "ooxml"

#: Fields whose result a program fills in when the document is shown or printed.
_VOLATILE_FIELDS = frozenset(
    ["PAGE", "NUMPAGES", "SECTIONPAGES", "SECTION", "DATE", "TIME", "CREATEDATE", "SAVEDATE", "PRINTDATE", "EDITTIME", "FILENAME", "FILESIZE", "NUMWORDS", "NUMCHARS", "REVNUM", "AUTHOR", "LASTSAVEDBY", "TEMPLATE"]
)


def content_types(pkg: Package) -> dict[str, str]:
    """Part name (no leading slash) -> content type, from ``[Content_Types].xml`` overrides."""
    out: dict[str, str] = {}

    class H(XmlHandler):
        def start(self, name: str, attrs: dict[str, str]) -> None:
            if name == "Override":
                out[attrs.get("PartName", "").lstrip("/")] = attrs.get("ContentType", "")

    parse_xml(iter([pkg.read("[Content_Types].xml")]), H(), pkg.format, "[Content_Types].xml")
    return out


class _Text(XmlHandler):
    """Text runs (``t``) of Office XML.  A paragraph (``p``) ends a line, but inside a table cell
    (``tc``) its paragraphs are joined by spaces, the cell ends with a tab and the row (``tr``) with
    a line; ``tab``, ``br`` and ``cr`` are a tab and line breaks.  Subclasses say what to leave out
    (:meth:`skipping`)."""

    def __init__(self, sink: TextSink) -> None:
        self.sink = sink
        self.capture = 0  # inside a t element
        self.cells = 0  # inside a table cell

    def skipping(self) -> bool:
        return False

    def add(self, s: str) -> None:
        if not self.skipping():
            self.sink.add(s)

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if name == "t":
            self.capture += 1
        elif name == "tc":
            self.cells += 1
        elif name == "tab":
            self.add("\t")
        elif name in ("br", "cr"):
            self.add("\n")

    def end(self, name: str) -> None:
        if name == "t":
            self.capture -= 1
        elif name == "p":
            if self.cells:
                self.sink.add(" ")
            else:
                self.sink.newline()
        elif name == "tc":
            self.cells -= 1
            if self.sink.pieces and self.sink.pieces[-1] == " ":  # the tab in place of the last paragraph's space
                self.sink.pieces[-1] = "\t"
            else:
                self.sink.add("\t")
        elif name == "tr":
            self.sink.newline()

    def text(self, data: str) -> None:
        if self.capture > 0:
            self.add(data)


class _WordText(_Text):
    """WordprocessingML (a DOCX part): also leaves out field instructions, the results of volatile
    fields (:data:`_VOLATILE_FIELDS`) and ``mc:Fallback`` (the same content again for older readers)."""

    def __init__(self, sink: TextSink) -> None:
        super().__init__(sink)
        self.fields: list[bool] = []  # open complex fields: is it volatile?
        self.instr: list[str] = []
        self.in_instr = False
        self.simple_volatile = 0
        self.fallback = 0

    def skipping(self) -> bool:
        return bool(self.simple_volatile or self.fallback or any(self.fields))

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if name == "Fallback":
            self.fallback += 1
        elif name == "noBreakHyphen":
            self.add("-")
        elif name == "fldChar":
            kind = attrs.get("fldCharType")
            if kind == "begin":
                self.fields.append(False)
                self.instr = []
            elif kind == "separate" and self.fields:
                words = "".join(self.instr).split()
                self.fields[-1] = bool(words) and words[0].upper() in _VOLATILE_FIELDS
            elif kind == "end" and self.fields:
                self.fields.pop()
        elif name == "instrText":
            self.in_instr = True
        elif name == "fldSimple":
            words = attrs.get("instr", "").split()
            if words and words[0].upper() in _VOLATILE_FIELDS:
                self.simple_volatile += 1
        else:
            super().start(name, attrs)

    def end(self, name: str) -> None:
        if name == "Fallback":
            self.fallback -= 1
        elif name == "instrText":
            self.in_instr = False
        elif name == "fldSimple":
            if self.simple_volatile:
                self.simple_volatile -= 1
        else:
            super().end(name)

    def text(self, data: str) -> None:
        if self.in_instr:
            self.instr.append(data)
        else:
            super().text(data)


class _DrawingText(_Text):
    """DrawingML (slides, notes): also leaves out fields (``a:fld``: slide numbers, dates)."""

    def __init__(self, sink: TextSink) -> None:
        super().__init__(sink)
        self.field = 0

    def skipping(self) -> bool:
        return self.field > 0

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if name == "fld":
            self.field += 1
        else:
            super().start(name, attrs)

    def end(self, name: str) -> None:
        if name == "fld":
            self.field -= 1
        else:
            super().end(name)


def _natural(name: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def _docx(pkg: Package, sink: TextSink) -> list[str]:
    types = content_types(pkg)

    def parts(kind: str) -> list[str]:
        return sorted((n for n, t in types.items() if t.endswith(f"wordprocessingml.{kind}+xml") and n in pkg.names),
                      key=_natural)

    main = [n for n, t in types.items() if ".main+xml" in t and "wordprocessingml" in t and n in pkg.names]
    if not main:
        main = ["word/document.xml"]
    got = []
    for kind, group in (("header", parts("header")), ("body", main), ("footnotes", parts("footnotes")),
                        ("endnotes", parts("endnotes")), ("footer", parts("footer"))):
        before = sink.size
        for name in group:
            pkg.parse(name, _WordText(sink))
            sink.newline()
        if sink.size > before and kind != "body":
            got.append({"header": "headers", "footer": "footers"}.get(kind, kind))
    return got


def _listed_parts(pkg: Package, main: str, element: str) -> list[str]:
    """The parts that ``main`` lists, in its order: the targets of the relationships named by the
    ``r:id`` of each ``element`` (a presentation's ``sldId``, a workbook's ``sheet``)."""
    folder, base = main.rsplit("/", 1)
    rels = relationships(pkg, f"{folder}/_rels/{base}.rels")
    order: list[str] = []

    class H(XmlHandler):
        def start(self, name: str, attrs: dict[str, str]) -> None:
            if name == element:
                target = rels.get(attrs.get("id", ""))
                if target in pkg.names:
                    order.append(target)

    pkg.parse(main, H())
    return order


def _pptx(pkg: Package, sink: TextSink) -> list[str]:
    order = _listed_parts(pkg, "ppt/presentation.xml", "sldId")
    if not order:  # no list (a damaged presentation part): the slide parts in name order
        order = sorted((n for n in pkg.names if re.fullmatch(r"ppt/slides/slide\d+\.xml", n)), key=_natural)
    notes = 0
    for slide in order:
        pkg.parse(slide, _DrawingText(sink))
        sink.newline()
        folder, base = slide.rsplit("/", 1)
        for target in relationships(pkg, f"{folder}/_rels/{base}.rels").values():
            if "/notesSlides/" in f"/{target}" and target in pkg.names:
                before = sink.size
                pkg.parse(target, _DrawingText(sink))
                sink.newline()
                notes += sink.size > before
    got = [f"{len(order)} slides"]
    if notes:
        got.append("speaker notes")
    return got


class _SharedStrings(XmlHandler):
    def __init__(self, limit: int) -> None:
        self.strings: list[str] = []
        self.cur: list[str] = []
        self.capture = 0
        self.skip = 0  # phonetic runs (rPh) are readings, not the cell's text
        self.size = 0
        self.limit = limit

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if name == "t":
            self.capture += 1
        elif name == "rPh":
            self.skip += 1

    def end(self, name: str) -> None:
        if name == "t":
            self.capture -= 1
        elif name == "rPh":
            self.skip -= 1
        elif name == "si":
            s = "".join(self.cur)
            self.size += len(s)
            if self.size > self.limit:
                raise TextFull
            self.strings.append(s)
            self.cur = []

    def text(self, data: str) -> None:
        if self.capture > 0 and not self.skip:
            self.cur.append(data)


class _SheetText(XmlHandler):
    def __init__(self, sink: TextSink, strings: list[str]) -> None:
        self.sink = sink
        self.strings = strings
        self.kind = ""
        self.capture = 0
        self.value: list[str] = []
        self.row_cells = 0

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if name == "c":
            self.kind = attrs.get("t", "n")
            self.value = []
        elif name in ("v", "t"):
            self.capture += 1

    def end(self, name: str) -> None:
        if name in ("v", "t"):
            self.capture -= 1
        elif name == "c":
            v = "".join(self.value)
            if self.kind == "s":
                try:
                    v = self.strings[int(v)]
                except (ValueError, IndexError):
                    v = ""
            elif self.kind == "e":  # an error value (#DIV/0!)
                v = ""
            if v:
                if self.row_cells:
                    self.sink.add("\t")
                self.sink.add(v)
                self.row_cells += 1
        elif name == "row":
            if self.row_cells:
                self.sink.newline()
            self.row_cells = 0

    def text(self, data: str) -> None:
        if self.capture > 0:
            self.value.append(data)


def _xlsx(pkg: Package, sink: TextSink) -> list[str]:
    types = content_types(pkg)
    strings = _SharedStrings(sink.limit)
    for name, t in types.items():
        if t.endswith("spreadsheetml.sharedStrings+xml") and name in pkg.names:
            try:
                pkg.parse(name, strings)
            except TextFull:
                pass  # more shared text than one document gives: the sheets use what was read
    order = _listed_parts(pkg, "xl/workbook.xml", "sheet")
    for sheet in order:
        pkg.parse(sheet, _SheetText(sink, strings.strings))
        sink.newline()
    return [f"{len(order)} sheet{'s' if len(order) != 1 else ''}", "cell text"]


_READERS = {DOCX: _docx, PPTX: _pptx, XLSX: _xlsx}
_LEFT_OUT = {
    DOCX: ("styles", "field codes", "comments", "deleted text"),
    PPTX: ("layouts", "slide numbers"),
    XLSX: ("formulas", "styles", "comments"),
}


def extract(file: IO[bytes] | str, fmt: str) -> Extracted:
    """The text of an OOXML package (``fmt``: "docx", "pptx" or "xlsx", as sniffed)."""
    with Package(file, fmt) as pkg:
        if "[Content_Types].xml" not in pkg.names:
            raise ExtractError("not an Office Open XML package ([Content_Types].xml missing)", "corrupt", fmt)
        sink = TextSink()
        notes: tuple[str, ...] = ()
        try:
            parts = _READERS[fmt](pkg, sink)
        except TextFull:
            parts, notes = [], (CUT,)
        return Extracted(sink.text(), fmt, NAME, reader_version(NAME), tuple(parts), _LEFT_OUT[fmt], notes)
