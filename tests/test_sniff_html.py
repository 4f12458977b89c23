"""Telling an HTML page by its start (simscan.extract.sniff): the same verdicts as the regular expression
it replaces, at a cost linear in the comments before the first tag (that expression backtracked through
every way of grouping them, and took minutes to hours on sympy's mathml stylesheets)."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from simscan.extract import sniff_bytes
from simscan.extract.sniff import _HTML8, _HTML16, COMMENT_BODY, HEAD, _html_after_comments, _Markup
from simscan.scanner import ScanRequest, run_scan

#: The slow, obviously correct references: the expressions sniff.py used before (exponential on a run of
#: comments that no page follows, so only ever given short inputs here).
_FLAGS = re.IGNORECASE | re.DOTALL
REFERENCE8 = re.compile(
    rb"(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]{0,200}\?>\s*)?(?:<!--.{0,2000}?-->\s*)*<(?:!doctype\s+html|html[\s>])", _FLAGS
)
REFERENCE16 = re.compile(
    r"\s*(?:<\?xml[^>]{0,200}\?>\s*)?(?:<!--.{0,2000}?-->\s*)*<(?:!doctype\s+html|html[\s>])", _FLAGS
)

#: Pieces of a page's start and of what only looks like one: comment marks, whole comments, white space (the
#: vertical tab and U+2028 are white space too), long bodies that bring the 2,000-character bound into play, tags.
PIECES = [
    "<!-- c -->", "<!---->", "<!--", "-->", "--", " ", "\n", "\x0b",
    "<html>", "<HTML\t", "<htmlx", "<!DOCTYPE  html", "<!doctype", "x", "<p>",
    "<?xml version='1.0'?>", "<?xml", "?>", "<", ">", "-", "y" * 600, "z" * 1400,
]  # fmt: skip


def reference(data: bytes) -> bool:
    return REFERENCE8.match(data, 0, HEAD) is not None


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.sampled_from(["", "\ufeff", "\u2028"]))
def test_html_start_is_read_as_the_regular_expression_read_it(pieces: list[str], first: str) -> None:
    text = "".join(pieces)
    data = text.encode("latin-1")
    assert _html_after_comments(data[:HEAD], _HTML8) == reference(data), data
    assert _html_after_comments(first + text, _HTML16) == (REFERENCE16.match(first + text) is not None), text
    # And through sniff itself: plain, after a UTF-8 byte-order mark, as UTF-16 with its byte-order mark.
    # (Only a start of markup or white space other than a vertical tab is looked at, as before.)
    want = "html" if reference(data) and data.startswith((b"<", b" ", b"\n")) else None
    assert sniff_bytes(data) == want, data
    assert sniff_bytes(b"\xef\xbb\xbf" + data) == ("html" if reference(b"\xef\xbb\xbf" + data) else None)
    utf16 = (first + text).encode("utf-16")
    assert sniff_bytes(utf16) == ("html" if REFERENCE16.match(utf16[2:2048].decode("utf-16-le", "replace")) else None)


def test_comments_that_may_be_read_as_longer_ones_are_still_told_apart() -> None:
    # A comment may run on to a later "-->": what lies between two comments is then inside one.
    assert sniff_bytes(b"<!-- a --> not markup <!-- b -->\n<html>") == "html"
    assert reference(b"<!-- a --> not markup <!-- b -->\n<html>")
    # ... but never further than COMMENT_BODY characters after its "<!--".
    for gap, want in ((COMMENT_BODY - 13, "html"), (COMMENT_BODY - 12, None)):
        data = b"<!-- a -->" + b"x" * gap + b"<!-- b -->\n<html>"
        assert sniff_bytes(data) == want == ("html" if reference(data) else None), gap
    assert sniff_bytes(b"<!-- a -->" + b" " * 5000 + b"<html>") is None  # the page past the first 4 KiB


class _Counted:
    """A pattern whose matches are counted."""

    def __init__(self, pattern: re.Pattern[bytes], calls: list[int]) -> None:
        self.pattern, self.calls = pattern, calls

    def match(self, text: bytes, pos: int = 0) -> re.Match[bytes] | None:
        self.calls[0] += 1
        return self.pattern.match(text, pos)

    def finditer(self, text: bytes) -> Iterator[re.Match[bytes]]:
        self.calls[0] += 1
        return self.pattern.finditer(text)


def sympy_like(comments: int, page: bytes) -> bytes:
    """The shape of sympy's mathml/data/mmlctop.xsl: an XML declaration, a block of one-line comments,
    a first element, then more comments further down the first 4 KiB."""
    block = b"".join(b"<!--  %-52s  -->\n" % f"line {i} of the notice".encode() for i in range(comments))
    body = b"".join(b'<xsl:template match="m%d"> <!-- step %d -->\n</xsl:template>\n' % (i, i) for i in range(80))
    return b'<?xml version="1.0"?>\n\n' + block + b"\n" + page + b"\n" + body


def test_the_work_grows_with_the_comments_not_with_their_groupings() -> None:
    for comments in (4, 16, 40):
        calls = [0]
        syntax = _Markup(*(_Counted(p, calls) if isinstance(p, re.Pattern) else p for p in _HTML8))
        data = sympy_like(comments, b'<xsl:stylesheet version="1.0">')
        assert not _html_after_comments(data[:HEAD], syntax)  # type: ignore[arg-type]
        closings = data[:HEAD].count(b"-->")
        # At most: the lead, a look for the page after it, the search for closings, then a look for the
        # page at each place a comment may end (the lead's end again, and after each closing) and one
        # white-space match after each closing.
        assert calls[0] <= 3 + (1 + closings) + closings, (comments, calls[0], closings)
        assert _html_after_comments(sympy_like(comments, b"<!DOCTYPE html>")[:HEAD], _HTML8)
    data = sympy_like(6, b'<xsl:stylesheet version="1.0">')  # few enough comments for the reference
    assert not reference(data) and sniff_bytes(data) is None


def test_a_scan_reads_comment_headed_markup_as_text_and_a_page_after_them_as_a_document(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    # (With the old expression, each of the first two files would have taken minutes or more.)
    (root / "mmlctop.xsl").write_bytes(sympy_like(40, b'<xsl:stylesheet version="1.0">'))
    (root / "notice.xml").write_bytes(sympy_like(40, b"<config/>"))
    (root / "page.html").write_bytes(sympy_like(40, b"<!DOCTYPE html><html><body><p>a page</p></body></html>"))
    idx = tmp_path / "i.sqlite3"
    result = run_scan(ScanRequest([root], index_path=idx, jobs=2))
    assert result.files_read == 3 and result.problems == 0
    with sqlite3.connect(idx) as c:
        got = {os.path.basename(os.fsdecode(p)): (fmt, is_text) for p, fmt, is_text in
               c.execute("SELECT path, format, is_text FROM files")}  # fmt: skip
    assert got == {"mmlctop.xsl": ("text", 1), "notice.xml": ("text", 1), "page.html": ("html", 1)}
