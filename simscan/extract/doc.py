"""Word 97-2003 documents (.doc): the text of the headers, body, footnotes, endnotes, text boxes and footers.

A .doc file is an OLE compound file ([MS-CFB]: a small file system of 512- or 4,096-byte sectors chained
by an allocation table, with a directory of streams).  Its ``WordDocument`` stream starts with the File
Information Block ([MS-DOC] 2.5), which says which table stream (``0Table`` or ``1Table``) holds the
*piece table* (``Clx``, 2.9.38): the document's characters as pieces, each either 8-bit (Windows-1252)
or UTF-16LE, at an offset of ``WordDocument``.  The characters come in order: the main text
(``ccpText`` of them), then the footnotes, headers, comments, endnotes and text boxes.  The headers and
footers are given once each, headers first and footers last, as the DOCX reader gives them, so that a
.doc and a .docx of one document read alike; comments are left out (not the author's text).
Field instructions (``HYPERLINK "..."``, ``PAGE``: between the marks 0x13 and 0x14) are dropped and their
results kept; pictures and objects (0x01, 0x08) are dropped; cell and row ends become line ends.

Refused: an encrypted or obfuscated file ("password-protected"), a Word 6/95 file (another layout),
and anything inconsistent ("damaged").  A compound file without a ``WordDocument`` stream (.xls, .ppt,
.msg) is not sniffed as one and stays binary; one whose only ``WordDocument`` is in a storage inside it (an
embedded object) is refused as "not a Word document".
"""

from __future__ import annotations

import bisect
import itertools
import re
import struct
from typing import IO

from simscan.extract import reader_version
from simscan.extract.base import CUT, MAX_TEXT_CHARS, Extracted, ExtractError, clean, source_bytes

NAME = "doc"

_CFB = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_END = 0xFFFFFFFE  # ENDOFCHAIN
_FREE = 0xFFFFFFFF
_WORD_IDENT = 0xA5EC


def extract(file: IO[bytes] | str | bytes, fmt: str = "doc") -> Extracted:
    """The text of a .doc file (a path, bytes or a binary file).  Raises :class:`ExtractError`."""
    data = source_bytes(file)
    try:
        streams = _Compound(data)
        word = streams.read("WordDocument")
        if word is None:
            raise ExtractError("no WordDocument stream: not a Word document", "unsupported", fmt)
        text, parts, cut = _text(word, streams)
    except (struct.error, IndexError, ValueError, OverflowError) as e:
        raise ExtractError(f"damaged Word file ({e})", "corrupt", fmt) from None
    except _Damaged as e:
        raise ExtractError(f"damaged Word file ({e})", "corrupt", fmt) from None
    return Extracted(text, fmt, NAME, reader_version(NAME), tuple(parts), ("comments", "field codes", "pictures"),
                     (CUT,) if cut else ())


class _Damaged(Exception):
    pass


class _Compound:
    """The streams of an OLE compound file ([MS-CFB]), read from ``data``."""

    def __init__(self, data: bytes) -> None:
        if len(data) < 512 or not data.startswith(_CFB):
            raise _Damaged("no compound file header")
        self.data = data
        shift, mini_shift = struct.unpack_from("<HH", data, 0x1E)
        if shift not in (9, 12) or mini_shift != 6:
            raise _Damaged("sector size")
        self.size = 1 << shift
        self.mini_size = 1 << mini_shift
        n_fat, first_dir = struct.unpack_from("<II", data, 0x2C)
        self.cutoff, first_minifat, _n_minifat, first_difat, n_difat = struct.unpack_from("<IIIII", data, 0x38)
        self.sectors = max(0, (len(data) - 512) // self.size + 1)
        fat_ids = list(struct.unpack_from("<109I", data, 0x4C))
        per = self.size // 4 - 1
        sid, seen = first_difat, 0
        while sid not in (_END, _FREE) and seen < min(n_difat, self.sectors):  # (a looping chain ends too)
            block = struct.unpack_from(f"<{per + 1}I", self._sector(sid))
            fat_ids += block[:per]
            sid, seen = block[per], seen + 1
        # (No more table sectors than the file's sectors need: a DIFAT chain that loops or names one
        # sector over and over must not build a table of millions of entries.)
        needed = -(-self.sectors // (self.size // 4))
        fat_ids = [s for s in fat_ids[: min(n_fat, needed)] if s not in (_END, _FREE)]
        self.fat: list[int] = []
        for s in fat_ids:
            self.fat += struct.unpack_from(f"<{self.size // 4}I", self._sector(s))
        directory = self._chain(first_dir, self.fat, self._sector)
        # The streams of the root storage only: the red-black tree of its children, from the root entry's
        # child through left and right siblings ([MS-CFB] 2.6).  A stream of a storage inside it (an
        # embedded object: a Word document in an .xls or a .msg, or in the document itself) is not the
        # file's own, even when the directory lists it first.
        self.entries: dict[str, tuple[int, int, int]] = {}  # name -> (type, start, size)
        count = len(directory) // 128
        kind = struct.unpack_from("<B", directory, 66)[0] if count else 0
        root: tuple[int, int, int] | None = None
        if kind == 5:
            start, size = struct.unpack_from("<II", directory, 116)
            root = (kind, start, size)
            todo, seen = [struct.unpack_from("<I", directory, 76)[0]], set()
            while todo:
                i = todo.pop()
                if i >= count or i in seen:  # (NOSTREAM, or a loop)
                    continue
                seen.add(i)
                off = 128 * i
                name_len, kind = struct.unpack_from("<HB", directory, off + 64)
                todo += struct.unpack_from("<II", directory, off + 68)  # left and right siblings
                if kind == 2 and 2 <= name_len <= 64:
                    name = directory[off : off + name_len - 2].decode("utf-16-le", "replace")
                    start, size = struct.unpack_from("<II", directory, off + 116)
                    self.entries.setdefault(name, (kind, start, size))
        if root is None:
            raise _Damaged("no root entry")
        self.ministream = self._chain(root[1], self.fat, self._sector)[: root[2]] if root[2] else b""
        self.minifat: list[int] = []
        if first_minifat not in (_END, _FREE):
            raw = self._chain(first_minifat, self.fat, self._sector)
            self.minifat = list(struct.unpack_from(f"<{len(raw) // 4}I", raw))

    def _sector(self, sid: int) -> bytes:
        if sid >= self.sectors:
            raise _Damaged(f"sector {sid} past the end")
        start = (sid + 1) * self.size
        return self.data[start : start + self.size]

    def _mini(self, sid: int) -> bytes:
        start = sid * self.mini_size
        if start + self.mini_size > len(self.ministream):
            raise _Damaged(f"mini sector {sid} past the end")
        return self.ministream[start : start + self.mini_size]

    @staticmethod
    def _chain(start: int, table: list[int], read) -> bytes:  # type: ignore[no-untyped-def]
        """The sectors of the chain from ``start`` in ``table``, joined (a loop is damage)."""
        out: list[bytes] = []
        sid, steps = start, 0
        while sid != _END:
            if sid >= len(table) or steps > len(table):
                raise _Damaged("broken or looping chain")
            out.append(read(sid))
            sid, steps = table[sid], steps + 1
        return b"".join(out)

    def read(self, name: str) -> bytes | None:
        """The stream ``name`` of the root storage (None when there is none)."""
        entry = self.entries.get(name)
        if entry is None:
            return None
        _kind, start, size = entry
        if size == 0:
            return b""
        if size < self.cutoff:
            data = self._chain(start, self.minifat, self._mini)
        else:
            data = self._chain(start, self.fat, self._sector)
        if len(data) < size:
            raise _Damaged(f"stream {name} is short")
        return data[:size]


def _text(word: bytes, streams: _Compound) -> tuple[str, list[str], bool]:
    ident, nfib = struct.unpack_from("<HH", word, 0)
    if ident != _WORD_IDENT:
        raise _Damaged("no Word file information block")
    (flags,) = struct.unpack_from("<H", word, 0x0A)
    if flags & 0x0100 or flags & 0x8000:
        raise ExtractError("password-protected", "encrypted", "doc")
    if nfib <= 105:  # (Word 6: 101, Word 95: 104 and 105; Word 97 and later: 0xC0 and up)
        raise ExtractError("a Word 6 or Word 95 document: not read", "unsupported", "doc")
    table = streams.read("1Table" if flags & 0x0200 else "0Table")
    if table is None:
        raise _Damaged("no table stream")
    # FibBase (32 bytes), then counted arrays: fibRgW (16-bit), fibRgLw (32-bit), fibRgFcLcb (pairs).
    off = 0x20
    (csw,) = struct.unpack_from("<H", word, off)
    off += 2 + 2 * csw
    (cslw,) = struct.unpack_from("<H", word, off)
    lw = struct.unpack_from(f"<{cslw}i", word, off + 2)
    off += 2 + 4 * cslw
    (pairs,) = struct.unpack_from("<H", word, off)
    if pairs <= 33 or len(lw) < 11:
        raise _Damaged("file information block too short")
    fc_clx, lcb_clx = struct.unpack_from("<II", word, off + 2 + 33 * 8)
    fc_hdd, lcb_hdd = struct.unpack_from("<II", word, off + 2 + 11 * 8)
    fc_chpx, lcb_chpx = struct.unpack_from("<II", word, off + 2 + 12 * 8)
    # ccpText, ccpFtn, ccpHdd, (reserved), ccpAtn, ccpEdn, ccpTxbx, ccpHdrTxbx.
    counts = [max(0, c) for c in (lw[3], lw[4], lw[5], lw[7], lw[8], lw[9], lw[10])]
    deleted = _deleted_runs(word, table[fc_chpx : fc_chpx + lcb_chpx])
    chars = _pieces(word, table[fc_clx : fc_clx + lcb_clx], sum(counts), deleted)
    text, ftn, hdd, atn, edn, txbx, _hdr_txbx = _split(chars, counts)
    del atn  # (comments are not the author's text)
    headers, footers = _headers(hdd, table[fc_hdd : fc_hdd + lcb_hdd])
    parts = [name for name, part in (("headers", headers), ("footnotes", ftn), ("endnotes", edn),
                                     ("text boxes", txbx), ("footers", footers)) if part.strip()]
    # In the order the DOCX reader gives a document's parts: headers, body, notes, footers.
    whole = "\n".join(p for p in (headers, text, ftn, edn, txbx, footers) if p)
    out = clean(_plain(whole))
    cut = len(out) > MAX_TEXT_CHARS
    return out[:MAX_TEXT_CHARS], parts, cut


#: What stands for a character deleted with changes tracked, until :func:`_plain` drops it (the parts are
#: cut by character positions first, so a deleted character keeps its place until then).
_GONE = "\x00"
#: sprmCFRMarkDel ([MS-DOC] 2.6.1): the character is deleted text of a tracked change; its operand (a
#: ToggleOperand, one byte) is 1 (on) or 0x81 (the opposite of its style's, which has it off).
_MARK_DEL = b"\x00\x08"


def _deleted_runs(word: bytes, plc: bytes) -> list[tuple[int, int]]:
    """The byte ranges of ``word`` holding text deleted with changes tracked (a .doc keeps it in its
    pieces, marked by a character property, as a DOCX keeps it in ``w:del``): from the character property
    pages ([MS-DOC] 2.8.6 PlcBteChpx, 2.9.33 ChpxFkp, 2.9.32 Chpx), only those that hold the mark at all."""
    n = (len(plc) - 4) // 8
    if n <= 0:
        return []
    runs: list[tuple[int, int]] = []
    # (Each page once: a table naming one page 100,000 times took 7 s.)
    for pn in sorted({p & 0x3FFFFF for p in struct.unpack_from(f"<{n}I", plc, 4 * (n + 1))}):
        page = word[pn * 512 : pn * 512 + 512]
        if len(page) < 512 or _MARK_DEL not in page:
            continue
        crun = page[511]
        if 5 * crun + 4 > 511:
            raise _Damaged("character property page")
        fcs = struct.unpack_from(f"<{crun + 1}I", page)
        for i in range(crun):
            at = 2 * page[4 * (crun + 1) + i]
            if at and _has_mark_del(page[at + 1 : at + 1 + page[at]]):
                runs.append((fcs[i], fcs[i + 1]))
    merged: list[tuple[int, int]] = []  # (sorted and disjoint, which :func:`_without` relies on)
    for lo, hi in sorted(runs):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def _has_mark_del(grpprl: bytes) -> bool:
    """Whether the property list ``grpprl`` sets sprmCFRMarkDel on."""
    pos = 0
    while pos + 2 <= len(grpprl):
        (sprm,) = struct.unpack_from("<H", grpprl, pos)
        pos += 2
        if sprm == 0x0800:
            return pos < len(grpprl) and grpprl[pos] in (1, 0x81)
        spra = sprm >> 13
        if spra == 6:
            pos += 1 + (grpprl[pos] if pos < len(grpprl) else 0)
        else:
            pos += (1, 1, 2, 4, 2, 2, 0, 3)[spra]
    return False


def _pieces(word: bytes, clx: bytes, wanted: int, deleted: list[tuple[int, int]]) -> str:
    """The document's characters, from the piece table in ``clx`` ([MS-DOC] 2.9.38): at most ``wanted``;
    those in the byte ranges ``deleted`` of ``word`` as :data:`_GONE`."""
    pos = 0
    while pos < len(clx) and clx[pos] == 0x01:  # Prc: formatting, skipped
        (cb,) = struct.unpack_from("<h", clx, pos + 1)
        pos += 3 + max(0, cb)
    if pos >= len(clx) or clx[pos] != 0x02:
        raise _Damaged("no piece table")
    (lcb,) = struct.unpack_from("<I", clx, pos + 1)
    plc = clx[pos + 5 : pos + 5 + lcb]
    n = (len(plc) - 4) // 12
    if n <= 0 or len(plc) < 4 + 12 * n:
        raise _Damaged("empty piece table")
    cps = struct.unpack_from(f"<{n + 1}I", plc)
    out: list[str] = []
    have = 0
    for i in range(n):
        count = cps[i + 1] - cps[i]
        if count <= 0:
            continue
        (fc,) = struct.unpack_from("<I", plc, 4 * (n + 1) + 8 * i + 2)
        if fc & 0x40000000:  # 8-bit characters, at half the offset
            start = (fc & 0x3FFFFFFF) // 2
            raw = word[start : start + count]
            piece = raw.decode("cp1252", "replace")
        else:
            start = fc & 0x3FFFFFFF
            raw = word[start : start + 2 * count]
            piece = raw.decode("utf-16-le", "replace")
        if len(raw) < (count if fc & 0x40000000 else 2 * count):
            raise _Damaged("a piece runs past the end of the document stream")
        if deleted:
            piece = _without(piece, start, 1 if fc & 0x40000000 else 2, deleted)
        out.append(piece)
        have += len(piece)
        if have >= wanted or have >= MAX_TEXT_CHARS + 1:
            break
    return "".join(out)


def _without(piece: str, start: int, width: int, deleted: list[tuple[int, int]]) -> str:
    """``piece`` (at byte ``start`` of the document stream, ``width`` bytes a character) with the
    characters in the byte ranges ``deleted`` (sorted) as :data:`_GONE`: one pass over the ranges in it."""
    end = start + width * len(piece)
    out: list[str] = []
    at = 0
    for lo, hi in deleted[max(0, bisect.bisect_left(deleted, (start, 0)) - 1) :]:
        if lo >= end:
            break
        a = max(at, (max(lo, start) - start + width - 1) // width)
        b = (min(hi, end) - start + width - 1) // width
        if b > a:
            out += (piece[at:a], _GONE * (b - a))
            at = b
    return "".join(out) + piece[at:] if out else piece


def _headers(story: str, plc: bytes) -> tuple[str, str]:
    """(headers, footers): the distinct texts of the header story's headers and footers ([MS-DOC]
    2.8.25 PlcfHdd: six note separators, then per section its even, odd and first-page headers and
    footers in the order even header, odd header, even footer, odd footer, first header, first footer)."""
    n = len(plc) // 4
    if not story or n < 2:
        return "", ""
    cps = struct.unpack_from(f"<{n}I", plc)
    if any(b < a for a, b in itertools.pairwise(cps)):  # (else a story read once per position: hours)
        raise _Damaged("header positions go back")
    heads: dict[str, None] = {}  # (ordered sets: many distinct headers kept in one pass)
    foots: dict[str, None] = {}
    for k in range(6, n - 1):
        if cps[k + 1] == cps[k]:
            continue
        block = clean(_plain(story[cps[k] : cps[k + 1]]))
        if block:
            (heads if (k - 6) % 6 in (0, 1, 4) else foots).setdefault(block)
    return "\n".join(heads), "\n".join(foots)


def _split(chars: str, counts: list[int]) -> list[str]:
    """``chars`` cut into the document's parts by their character counts (main text first)."""
    out, at = [], 0
    for c in counts:
        out.append(chars[at : at + c])
        at += c
    return out


#: Word's special characters: paragraph, line and page breaks, hyphens, spaces, note references, pictures.
_SPECIAL = str.maketrans({_GONE: None, "\r": "\n", "\x0b": "\n", "\x0c": "\n", "\x1e": "-", "\x1f": None,
                          "\xa0": " ", "\x01": None, "\x08": None, "\x05": None, "\x02": None})


_FIELD_MARK = re.compile("[\x13\x14\x15]")
#: Fields whose result is a page number or count: left out, as the RTF reader leaves them (and as a DOCX
#: of the same document usually holds no result for them), so that the copies of one text read alike.
_PAGE_FIELDS = frozenset(("PAGE", "NUMPAGES", "SECTIONPAGES"))


def _plain(text: str) -> str:
    """``text`` without field instructions (0x13 instruction 0x14 result 0x15, nested; the result of a page
    number field too) and with Word's special characters as plain text: a table's cells joined by tabs,
    one line a row.  Walks the field marks only (a stack of open fields: the instruction read so far, or
    None once in the result, and whether that result is kept), keeping the stretches in no instruction."""
    if "\x13" in text:
        out: list[str] = []
        stack: list[tuple[list[str] | None, bool]] = []
        at = 0
        for m in _FIELD_MARK.finditer(text):
            piece = text[at : m.start()]
            if not stack:
                out.append(piece)
            elif stack[-1][0] is not None:
                stack[-1][0].append(piece)
            elif all(keep for _code, keep in stack):
                out.append(piece)
            mark = m.group()
            if mark == "\x13":
                stack.append(([], True))
            elif mark == "\x14" and stack and stack[-1][0] is not None:
                words = "".join(stack[-1][0]).split()
                stack[-1] = (None, not words or words[0].upper() not in _PAGE_FIELDS)
            elif mark == "\x15" and stack:
                stack.pop()
            at = m.end()
        if not stack:
            out.append(text[at:])
        text = "".join(out)
    return text.replace("\x07\x07", "\n").replace("\x07", "\t").translate(_SPECIAL)
