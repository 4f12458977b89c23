"""RTF (Rich Text Format 1.9.1): the text of the body, tables, headers, footers and footnotes.

A small reader of the format's own grammar: groups ``{...}``, control words ``\\word-N``,
control symbols, ``\\'hh`` bytes in the document's code page (``\\ansicpg``, or a font's
``\\fcharset``), ``\\uN`` characters with their ``\\ucN`` fallbacks skipped, ``\\binN`` data
skipped.  Destinations that are not text (font, colour and style tables, document information,
pictures, objects, field instructions, bookmarks, themes, every ``{\\*\\...}`` destination this
reader does not know) are skipped; a field's result (``\\fldrslt``) is kept, except page numbers.
Order as ``ooxml`` gives it: headers first, the body (footnotes taken out of the paragraph that
cites them), the footnotes, then footers.

The candidates measured (issue 15): ``striprtf`` 0.0.35 (one regular expression and a token loop,
as here) skips headers, footers and footnotes with no way to keep them; ``rtfparse`` 0.9.5 builds
a tree by recursion (a deeply nested file overflows the stack) and logs and swallows errors.
Neither gives what the issue asks, and the grammar is small, so it is read here.
"""

from __future__ import annotations

import codecs
import re
from typing import IO

from simscan.extract import reader_version
from simscan.extract.base import CUT, Extracted, ExtractError, TextFull, TextSink, clean, source_bytes

NAME = "rtf"
MAX_DEPTH = 512

_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?"  # control word, its parameter, its delimiter
    rb"|\\'([0-9a-fA-F]{2})"  # a byte in the code page
    rb"|\\([^a-zA-Z'])"  # control symbol
    rb"|([{}])"
    rb"|([^\\{}\r\n]+)"  # text
    rb"|[\r\n]+",
)
_SKIP_DEST = frozenset(
    b"fonttbl colortbl stylesheet listtable listoverridetable info pict object fldinst themedata "
    b"colorschememapping datastore latentstyles rsidtbl generator xmlnstbl pgdsctbl filetbl revtbl userprops "
    b"docvar bkmkstart bkmkend shpinst nonshppict private falt panose annotation atnid atnauthor atndate "
    b"objdata result keywords author title subject comment operator company category".split()
)
_NEWLINE = frozenset(b"par line sect page row".split())
_CHARS = {
    b"tab": "\t", b"cell": "\t", b"emdash": "\u2014", b"endash": "\u2013", b"bullet": "\u2022",
    b"lquote": "\u2018", b"rquote": "\u2019", b"ldblquote": "\u201c", b"rdblquote": "\u201d",
    b"emspace": " ", b"enspace": " ", b"qmspace": " ", b"nestcell": "\t",
}
_SYMBOLS = {b"~": "\u00a0", b"_": "\u2011", b"-": "", b"\\": "\\", b"{": "{", b"}": "}"}
#: \fcharset values and their code pages (RTF 1.9.1, \fcharset).
_CHARSETS = {
    0: "cp1252", 77: "mac_roman", 128: "cp932", 129: "cp949", 134: "gbk", 136: "big5", 161: "cp1253",
    162: "cp1254", 163: "cp1258", 177: "cp1255", 178: "cp1256", 186: "cp1257", 204: "cp1251", 222: "cp874",
    238: "cp1250",
}
#: Fields whose result a program fills in when printing.
_VOLATILE = (b"PAGE", b"NUMPAGES", b"SECTIONPAGES", b"DATE", b"TIME", b"PRINTDATE", b"SAVEDATE", b"FILENAME")


class _State:
    __slots__ = ("dest", "font", "skip", "uc")

    def __init__(self, skip: bool = False, uc: int = 1, font: int = -1, dest: str = "body") -> None:
        self.skip, self.uc, self.font, self.dest = skip, uc, font, dest

    def copy(self) -> _State:
        return _State(self.skip, self.uc, self.font, self.dest)


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "cp1252"


def extract(file: IO[bytes] | str | bytes, fmt: str = "rtf") -> Extracted:
    """The text of an RTF file (a path, bytes or a binary file)."""
    data = source_bytes(file)
    if not data.startswith(b"{\\rtf"):
        raise ExtractError("not RTF", "corrupt", fmt)
    out = {"header": TextSink(), "body": TextSink(), "footnote": TextSink(), "footer": TextSink()}
    cut = False
    try:
        _read(data, out)
    except TextFull:
        cut = True
    text = "\n".join(_blocks(s) if name in ("header", "footer") else s.text() for name, s in out.items() if s.pieces)
    parts = [name + "s" for name in ("header", "footnote", "footer") if out[name].pieces]
    return Extracted(text, fmt, NAME, reader_version(NAME), tuple(parts), ("styles", "fields", "pictures"), (CUT,) if cut else ())


def _blocks(sink: TextSink) -> str:
    """The distinct header (or footer) blocks of a document: RTF repeats a header for left, right
    and first pages, usually with the same text."""
    seen: list[str] = []
    for block in "".join(sink.pieces).split(_BLOCK):
        block = clean(block)
        if block and block not in seen:
            seen.append(block)
    return "\n".join(seen)


#: Starts each header or footer group in its sink (a control character, never text).
_BLOCK = "\x1e"


def _read(data: bytes, out: dict[str, TextSink]) -> None:
    codepage = "cp1252"
    fonts: dict[int, str] = {}
    stack: list[_State] = []
    st = _State()
    pending = bytearray()  # \'hh bytes not yet decoded (a double-byte character spans two)
    skip_chars = 0  # fallback characters still to skip after a \uN
    in_fonttbl = -1  # depth of the font table group
    font_no = -1
    field_instr: list[bytes] = []
    in_instr = -1
    volatile_depth = -1  # depth of a field whose result is a page number, date ...
    pos, n = 0, len(data)
    match = _TOKEN.match

    def flush() -> None:
        if pending:
            enc = fonts.get(st.font, codepage)
            emit(bytes(pending).decode(enc, "replace"))
            pending.clear()

    def emit(s: str) -> None:
        if not st.skip and volatile_depth < 0:
            out[st.dest].add(s)

    while pos < n:
        m = match(data, pos)
        if m is None:  # a lone backslash at the end, or a byte the grammar does not know
            pos += 1
            continue
        pos = m.end()
        word, param, hexbyte, symbol, brace, text = m.groups()
        if hexbyte is not None:
            if skip_chars:
                skip_chars -= 1
            elif not st.skip:
                pending.append(int(hexbyte, 16))
            continue
        flush()
        if text is not None:
            if skip_chars:
                k = min(skip_chars, len(text))
                skip_chars -= k
                text = text[k:]
            if in_instr >= 0 and len(stack) >= in_instr:
                field_instr.append(text)
            elif in_fonttbl >= 0 and font_no >= 0:
                pass
            elif text:
                emit(text.decode(fonts.get(st.font, codepage), "replace"))
            continue
        if brace is not None:
            skip_chars = 0
            if brace == b"{":
                stack.append(st)
                if len(stack) > MAX_DEPTH:
                    raise ExtractError(f"groups nested more than {MAX_DEPTH} deep", "depth", "rtf")
                st = st.copy()
            else:
                if in_instr >= 0 and len(stack) <= in_instr:
                    words = b"".join(field_instr).split()
                    if words and words[0].upper() in _VOLATILE:
                        volatile_depth = len(stack) - 1  # the field group holding this instruction
                    in_instr = -1
                if volatile_depth >= 0 and len(stack) <= volatile_depth:
                    volatile_depth = -1
                if in_fonttbl >= 0 and len(stack) <= in_fonttbl:
                    in_fonttbl = -1
                if stack:
                    st = stack.pop()
            continue
        if symbol is not None:
            if symbol == b"*":
                # An optional destination: skipped unless this reader knows it (checked at its word).
                st.skip = st.skip or _unknown_dest(data, pos)
            elif skip_chars:
                skip_chars -= 1
            elif symbol in _SYMBOLS:
                emit(_SYMBOLS[symbol])
            continue
        # control word
        if word == b"bin" and param:
            pos += max(0, int(param))
            continue
        if skip_chars and word not in (b"u", b"uc"):
            skip_chars -= 1
            continue
        if word == b"u" and param:
            v = int(param)
            emit(chr(v + 65536 if v < 0 else v) if v not in (-1, 0xFFFF) else "")
            skip_chars = st.uc
        elif word == b"uc" and param is not None:
            st.uc = max(0, int(param))
        elif word in _NEWLINE:
            emit("\n")
        elif word in _CHARS:
            emit(_CHARS[word])
        elif word == b"ansicpg" and param:
            codepage = _codec(f"cp{int(param)}")
        elif word == b"mac":
            codepage = "mac_roman"
        elif word == b"fonttbl":
            in_fonttbl = len(stack)
            st.skip = True
        elif word == b"f" and param is not None:
            if in_fonttbl >= 0:
                font_no = int(param)
            else:
                st.font = int(param)
        elif word == b"fcharset" and param is not None and in_fonttbl >= 0 and font_no >= 0:
            cs = _CHARSETS.get(int(param))
            if cs:
                fonts[font_no] = _codec(cs)
        elif word == b"fldinst":
            in_instr = len(stack)
            field_instr = []
            st.skip = True
        elif word in (b"header", b"headerl", b"headerr", b"headerf"):
            st.dest, st.skip = "header", False
            out["header"].add(_BLOCK)
        elif word in (b"footer", b"footerl", b"footerr", b"footerf"):
            st.dest, st.skip = "footer", False
            out["footer"].add(_BLOCK)
        elif word == b"footnote":
            st.dest, st.skip = "footnote", False
            out["footnote"].newline()
        elif word == b"chftn":
            pass  # the footnote's number, made by the program
        elif word in _SKIP_DEST:
            st.skip = True
    flush()


#: Optional destinations (``{\\*\\word``) whose text is kept.
_KEEP_OPTIONAL = frozenset((b"shptxt", b"fldrslt", b"footnote", b"header", b"footer"))
_WORD = re.compile(rb"\\([a-zA-Z]{1,32})")


def _unknown_dest(data: bytes, pos: int) -> bool:
    m = _WORD.match(data, pos)
    return m is None or m.group(1) not in _KEEP_OPTIONAL
