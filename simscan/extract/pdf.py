"""PDF: the text layer, read with PDFium (pypdfium2: Google's PDF engine of Chrome, BSD/Apache
licences, wheels for every platform, nothing to install on the system).

Text: each page's characters in PDFium's reading order (``FPDFText``), pages in order.  Layout
artefacts that a document in another format does not have are taken out:

* **running headers and footers**: a line among the first or last :data:`EDGE_LINES` non-blank
  lines of a page (one line on a page of at most four lines) whose form (digits as one sign, case and spacing ignored) stands in that place on at least
  :data:`REPEAT_SHARE` of the pages (and on two pages or more) is a running header or footer.
  Its first occurrence is kept (the same text once, as a DOCX or ODT holds its header once), its
  repeats are dropped; a short line with digits (a page number: "Page 3", "3 / 12", "- 3 -") is
  dropped everywhere.  A longer line with digits is running only when its very text (digits too)
  repeats so ("Jane Doe, CS 101 essay 2, 20 November 2026"): one whose digits change from page to
  page is body text of the same shape ("Line 3 of the table");
* **hyphenation at line ends**: a word split at the end of a line ("inter-" + "national") is
  joined.  PDFium does most of it (it drops such a hyphen and the line break, leaving U+FFFE);
  what it leaves is joined when the hyphen follows a letter and the next line starts with a
  lower-case letter (a dash between words, "well-known" at a line end, is joined too: the price
  of the rule).

A page without characters has no text layer (a scanned page); a document with no text at all
raises ``ExtractError`` "no-text" (the scanner then fingerprints its bytes, as before).
Password-protected files (a user password) raise "encrypted", files PDFium cannot open "corrupt"
(PDFium repairs what it can: a truncated file often still opens, with the pages it has).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import IO

from simscan.extract import reader_version
from simscan.extract.base import CUT, MAX_TEXT_CHARS, Extracted, ExtractError

NAME = "pdf"
EDGE_LINES = 3
REPEAT_SHARE = 0.5
#: A line with digits is a page number only when it is this short ("Annual report 2023, page 3 of 12"):
#: a body line of the same shape on every page ("Line 1 of the table") is text.
MAX_NUMBER_WORDS = 8
#: Pages a document may have for its header/footer pass: beyond, pages are read in blocks.
_BLOCK = 512

_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
#: A hyphen after a letter at a line end, before a lower-case letter (the hyphen is matched first and
#: the letter before it looked behind: 5x faster than the other way round on 5 MB of text).
_HYPHEN_END = re.compile(r"[-\u00ad\u2010\x02](?<=[^\W\d_].)\n(?=[^\W\d_A-Z])")


def _form(line: str) -> str:
    return _SPACE.sub(" ", _DIGITS.sub("#", line)).strip().lower()


def _exact(line: str) -> str:
    return _SPACE.sub(" ", line).strip().lower()


def strip_running(pages: list[list[str]]) -> tuple[list[list[str]], int]:
    """``pages`` (each a list of lines) without running headers and footers (module docstring),
    and how many lines were dropped."""
    n = len(pages)
    if n < 2:
        return pages, 0
    top: Counter[str] = Counter()
    bottom: Counter[str] = Counter()
    edges = []  # per page: {line index: (form, exact text)} of its first and last non-blank lines
    for lines in pages:
        body = [i for i, ln in enumerate(lines) if ln.strip()]
        k = min(EDGE_LINES, max(1, (len(body) - 1) // 2))  # a short page: its body is not an edge
        head, tail = body[:k], body[-k:]
        forms = {i: (_form(lines[i]), _exact(lines[i])) for i in head + tail}
        edges.append(forms)
        for ends, counts in ((head, top), (tail, bottom)):
            # (a line's exact text counts too: a long line with digits is running when its very text repeats)
            counts.update({forms[i][0] for i in ends} | {"\0" + forms[i][1] for i in ends if "#" in forms[i][0]})
    need = max(2, REPEAT_SHARE * n)
    running = {
        f for counts in (top, bottom) for f, c in counts.items()
        if c >= need and f and ("#" not in f or f.startswith("\0") or f.count(" ") < MAX_NUMBER_WORDS)
    }
    if not running:
        return pages, 0
    seen: set[str] = set()
    dropped = 0
    out = []
    for lines, forms in zip(pages, edges):
        drop = set()
        for i in sorted(forms):
            f, e = forms[i]
            page_number = f in running and "#" in f  # (a short line with digits: dropped everywhere)
            if page_number or ((f in running or "\0" + e in running) and e in seen):  # else: its repeats
                drop.add(i)
            seen.add(e)
        dropped += len(drop)
        out.append([ln for i, ln in enumerate(lines) if i not in drop] if drop else lines)
    return out, dropped


def join_hyphens(text: str) -> tuple[str, int]:
    """``text`` with words split by a hyphen at a line end joined again, and how many."""
    return _HYPHEN_END.subn("", text)


def extract(file: IO[bytes] | str | bytes, fmt: str = "pdf", running: bool = True, hyphens: bool = True) -> Extracted:
    """The text layer of a PDF (``file``: a path, bytes or a seekable binary file).

    ``running`` / ``hyphens``: take out running headers and footers, join hyphenated words (on by
    default; off only to measure what they change, ``benchmarks/documents.py``)."""
    import pypdfium2 as pdfium

    try:
        doc = pdfium.PdfDocument(file)
    except pdfium.PdfiumError as e:
        msg = str(e)
        if "password" in msg.lower():
            raise ExtractError("password-protected", "encrypted", fmt) from e
        raise ExtractError(f"damaged PDF ({msg})", "corrupt", fmt) from e
    try:
        n = len(doc)
        pages: list[list[str]] = []
        empty = 0
        size = 0
        cut = False
        for i in range(n):
            page = doc[i]
            try:
                tp = page.get_textpage()
                try:
                    t = tp.get_text_range() if tp.count_chars() > 0 else ""
                finally:
                    tp.close()
            finally:
                page.close()
            if not t.strip():
                empty += 1
            t = t.replace("\r\n", "\n").replace("\r", "\n")
            pages.append(t.split("\n"))
            size += len(t)
            if size > MAX_TEXT_CHARS:
                cut = True
                break
    except pdfium.PdfiumError as e:
        raise ExtractError(f"damaged PDF ({e})", "corrupt", fmt) from e
    finally:
        doc.close()
    if n == 0:
        raise ExtractError("damaged PDF (no pages)", "corrupt", fmt)
    if empty == len(pages):
        raise ExtractError(f"no text layer ({n} page{'s' if n != 1 else ''}: scanned images?)", "no-text", fmt)
    dropped = 0
    if running:
        pages, dropped = strip_running(pages)
    text = "\n\n".join("\n".join(lines) for lines in pages)
    # PDFium itself takes out a hyphen it sees ending a line inside a word, leaving U+FFFE where it was
    # (and no line break); the rule here joins those it left.
    joined = text.count("\ufffe")
    if hyphens:
        text, more = join_hyphens(text.replace("\ufffe", ""))
        joined += more
    else:
        text, joined = text.replace("\ufffe", "-\n"), 0
    text = text.replace("\x02", "-")
    parts = [f"{n} page{'s' if n != 1 else ''}", "text layer"]
    left = []
    if dropped:
        left.append(f"running headers and page numbers ({dropped} lines)")
    if joined:
        left.append(f"hyphens at line ends ({joined})")
    notes = []
    if empty:
        notes.append(f"{empty} page{'s' if empty != 1 else ''} without text")
    if cut:
        notes.append(CUT)
    from simscan.extract.base import clean

    return Extracted(clean(text)[:MAX_TEXT_CHARS], fmt, NAME, reader_version(NAME), tuple(parts), tuple(left), tuple(notes))
