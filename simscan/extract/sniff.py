"""Which document format a file holds, from its content alone (never its name).

``sniff(head, open_zip)`` looks at the first bytes of a file (:data:`HEAD` of them are enough):

* ``%PDF-`` within the first 1,024 bytes (the PDF specification lets readers accept junk before
  it): ``pdf``;
* ``{\\rtf``: ``rtf``;
* a zip (``PK\\x03\\x04``): its member names decide, read from the zip's central directory through
  ``open_zip`` (a callable returning a :class:`zipfile.ZipFile`, or None when the caller has no
  random access).  An ODF or EPUB package names its type in a first, uncompressed ``mimetype``
  member (ODF 1.2 part 3, section 3.3; OCF 3.0); an OOXML package has ``[Content_Types].xml``
  and its main part (``word/document.xml``, ``ppt/presentation.xml``, ``xl/workbook.xml``; the
  content types file is often *not* the first member: LibreOffice writes it last, so the head
  alone cannot tell);
* an OLE compound file (``D0 CF 11 E0``) holding an ``EncryptedPackage`` stream: a
  password-protected OOXML file (``ooxml-encrypted``; ECMA-376 part 2, MS-OFFCRYPTO); one holding a
  ``WordDocument`` stream: a Word 97-2003 document (``doc``).  Other compound files (.xls, .ppt of
  Office 97-2003, Outlook's .msg) are left as they are: binary;
* HTML: after an optional byte-order mark, XML declaration, white space and comments, the text
  starts with ``<!DOCTYPE html`` or ``<html`` (any case).  A fragment, Markdown with some tags,
  a template or a program printing HTML is left as text.

Everything else (plain text, Markdown, TeX, program source, images, archives) is None: it is
fingerprinted as today.  The checks cost well under a microsecond for a file that starts with
none of these signatures, so every file the scanner reads can be sniffed.
"""

from __future__ import annotations

import heapq
import re
import zipfile
import zlib
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Generic, NamedTuple, TypeVar

#: Bytes of a file's start that :func:`sniff` reads.
HEAD = 4096

PDF = "pdf"
RTF = "rtf"
HTML = "html"
DOCX = "docx"
PPTX = "pptx"
XLSX = "xlsx"
ODT = "odt"
ODS = "ods"
ODP = "odp"
EPUB = "epub"
OOXML_ENCRYPTED = "ooxml-encrypted"
DOC = "doc"

#: ODF package media types (``mimetype`` member) and the format each is read as.
ODF_TYPES = {
    "application/vnd.oasis.opendocument.text": ODT,
    "application/vnd.oasis.opendocument.text-template": ODT,
    "application/vnd.oasis.opendocument.text-master": ODT,
    "application/vnd.oasis.opendocument.spreadsheet": ODS,
    "application/vnd.oasis.opendocument.spreadsheet-template": ODS,
    "application/vnd.oasis.opendocument.presentation": ODP,
    "application/vnd.oasis.opendocument.presentation-template": ODP,
}
EPUB_TYPE = "application/epub+zip"
#: OOXML main parts (transitional and strict packages use the same part names).
OOXML_MAIN = (("word/document.xml", DOCX), ("ppt/presentation.xml", PPTX), ("xl/workbook.xml", XLSX))

_ZIP = b"PK\x03\x04"
_CFB = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
#: A directory entry's name, as a compound file stores it (UTF-16LE, with its terminating NUL).
_WORD_DOCUMENT = "WordDocument\0".encode("utf-16-le")
#: An HTML page's start (module docstring), in the pieces :func:`_html_after_comments` reads it by: an optional
#: byte-order mark, white space and XML declaration; white space; a comment's opening and closing; at most
#: COMMENT_BODY characters in a comment; and the page's first tag.  What it accepts is exactly what the one
#: regular expression of earlier versions matched, ``lead (?:<!--.{0,2000}?-->\s*)* page``.  That expression
#: backtracked through every way of reading a run of comments as fewer, longer ones (a comment may run to any
#: later ``-->`` within 2,000 characters), so a file whose first 4 KiB hold a few dozen comments and then no
#: page took minutes, more with more comments (sympy's mathml/data/mmlctop.xsl, 16 comment lines and a
#: stylesheet with more comments: 189 s of CPU, with the GIL held; simple_mmlctop.xsl 341 s).
COMMENT_BODY = 2000
_Text = TypeVar("_Text", bytes, str)


class _Markup(NamedTuple, Generic[_Text]):
    lead: re.Pattern[_Text]
    space: re.Pattern[_Text]
    open: _Text
    close: re.Pattern[_Text]
    page: re.Pattern[_Text]


_FLAGS = re.IGNORECASE | re.DOTALL
_HTML8 = _Markup(
    re.compile(rb"(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]{0,200}\?>\s*)?", _FLAGS), re.compile(rb"\s*"), b"<!--",
    re.compile(rb"-->"), re.compile(rb"<(?:!doctype\s+html|html[\s>])", _FLAGS),
)  # fmt: skip
_HTML16 = _Markup(
    re.compile(r"\s*(?:<\?xml[^>]{0,200}\?>\s*)?", _FLAGS), re.compile(r"\s*"), "<!--",
    re.compile(r"-->"), re.compile(r"<(?:!doctype\s+html|html[\s>])", _FLAGS),
)  # fmt: skip
#: What an HTML page can start with: its markup, white space, or a UTF-8 byte-order mark.
_HTML_START = (b"<", b" ", b"\t", b"\r", b"\n", b"\xef\xbb\xbf")


def _html_after_comments(text: _Text, syntax: _Markup[_Text]) -> bool:
    """Whether ``text`` starts with ``lead``, then comments separated by white space, then ``page``.

    The lead has one way to match (nothing in it can be given back for the rest to match), so only the
    comments have choices: a comment opened at p may close at any ``-->`` that starts within COMMENT_BODY
    characters after its ``<!--``, and the next one (or the page) starts after the white space that
    follows.  The places a comment or the page may start are followed in increasing order, each once,
    and each ``-->`` is looked at once (the windows of later openings start and end later): linear in
    the number of ``-->`` instead of exponential."""
    at = syntax.lead.match(text).end()  # (it always matches: every part is optional)
    if syntax.page.match(text, at):
        return True
    if not text.startswith(syntax.open, at):
        return False
    ends = [m.end() for m in syntax.close.finditer(text)]  # (two "-->" never overlap)
    width = len(syntax.open) + len("-->")
    todo, seen, done = [at], {at}, 0  # ends[:done]: followed already
    while todo:
        p = heapq.heappop(todo)
        if syntax.page.match(text, p):
            return True
        if not text.startswith(syntax.open, p):
            continue
        first = bisect_left(ends, p + width)
        last = bisect_right(ends, p + width + COMMENT_BODY)
        for e in ends[max(first, done) : last]:
            q = syntax.space.match(text, e).end()
            if q not in seen:
                seen.add(q)
                heapq.heappush(todo, q)
        done = max(done, last)
    return False


def sniff(head: bytes, open_zip: Callable[[], zipfile.ZipFile] | None = None,
          whole: bytes | None = None) -> str | None:
    """The document format of a file that starts with ``head`` (see the module docstring), or None.

    ``open_zip``: opens the file as a zip (only called for a zip); ``whole``: the whole file when
    the caller has it in memory (a compound file's directory may lie anywhere in it).  A zip that
    cannot be opened (truncated, damaged) but names an ODF/EPUB ``mimetype`` in its head is still
    that format, so that the reader can say it is damaged; any other broken zip is None."""
    # (``head`` may be longer than HEAD: a whole small file.  Nothing here copies it.)
    if head.startswith(_ZIP):
        return _sniff_zip(head[:HEAD], open_zip)
    if head.startswith(b"%PDF-") or (head.find(b"%", 0, 1024) >= 0 and head.find(b"%PDF-", 0, 1024) >= 0):
        return PDF  # (a one-byte search first: the five-byte one costs ~0.7 us a KiB)
    if head.startswith(b"{\\rtf"):
        return RTF
    if head.startswith(_CFB):
        data = whole if whole is not None else head
        if _ENCRYPTED_PACKAGE in data:
            return OOXML_ENCRYPTED
        return DOC if _WORD_DOCUMENT in data else None
    if head.startswith(_HTML_START):
        return HTML if _html_after_comments(head[:HEAD], _HTML8) else None
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = head[2:2048].decode("utf-16-le" if head[:2] == b"\xff\xfe" else "utf-16-be", "replace")
        return HTML if _html_after_comments(text, _HTML16) else None
    return None


def _mimetype_in_head(head: bytes) -> str | None:
    """The ``mimetype`` member's content when it is the first, stored member (ODF, EPUB)."""
    if len(head) < 30 or head[8:10] != b"\0\0":  # compression method 0: stored
        return None
    n = int.from_bytes(head[26:28], "little")
    extra = int.from_bytes(head[28:30], "little")
    size = int.from_bytes(head[18:22], "little")
    if head[30 : 30 + n] != b"mimetype" or size > 200:
        return None
    start = 30 + n + extra
    return head[start : start + size].decode("ascii", "replace").strip()


def _package_format(mimetype: str | None, names: frozenset[str] | None) -> str | None:
    if mimetype == EPUB_TYPE:
        return EPUB
    if mimetype in ODF_TYPES:
        return ODF_TYPES[mimetype]
    if names is not None and "[Content_Types].xml" in names:
        for part, fmt in OOXML_MAIN:
            if part in names:
                return fmt
    return None


def _sniff_zip(head: bytes, open_zip: Callable[[], zipfile.ZipFile] | None) -> str | None:
    mimetype = _mimetype_in_head(head)
    known = _package_format(mimetype, None)
    if known is not None or open_zip is None:
        return known
    try:
        with open_zip() as z:
            names = frozenset(z.NameToInfo)
            if "mimetype" in names and mimetype is None:
                info = z.getinfo("mimetype")
                if info.file_size <= 200 and not info.flag_bits & 1:
                    mimetype = z.read(info).decode("ascii", "replace").strip()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError,
            RuntimeError, KeyError, zlib.error):
        # No readable central directory (a truncated or damaged file): the members whose local headers
        # lie in the head still tell an OOXML package, which its reader then reports as damaged.
        return _ooxml_from_local_headers(head)
    return _package_format(mimetype, names)


def _ooxml_from_local_headers(head: bytes) -> str | None:
    names = set()
    pos = 0
    while 0 <= pos and pos + 30 <= len(head) and head[pos : pos + 4] == _ZIP:
        n = int.from_bytes(head[pos + 26 : pos + 28], "little")
        extra = int.from_bytes(head[pos + 28 : pos + 30], "little")
        size = int.from_bytes(head[pos + 18 : pos + 22], "little")
        names.add(head[pos + 30 : pos + 30 + n].decode("utf-8", "replace"))
        if head[pos + 6] & 0x08:  # the sizes follow the data (a data descriptor): look for the next header
            pos = head.find(_ZIP, pos + 30 + n)
        else:
            pos += 30 + n + extra + size
    if "[Content_Types].xml" not in names and "_rels/.rels" not in names:
        return None
    for prefix, fmt in (("word/", DOCX), ("ppt/", PPTX), ("xl/", XLSX)):
        if any(name.startswith(prefix) for name in names):
            return fmt
    return None
