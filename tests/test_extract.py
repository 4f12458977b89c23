"""Text out of documents (simscan.extract): real documents written by LibreOffice, and bad inputs."""

from __future__ import annotations

import io
import itertools
import random
import shutil
import struct
import zipfile
from pathlib import Path

import pytest

from simscan.extract import FORMATS, ExtractError, current_versions, extract, reader_version, sniff_bytes, sniff_fd
from simscan.extract.base import MAX_TEXT_CHARS
from simscan.extract.pdf import join_hyphens, strip_running
from simscan.fingerprint.text import normalize
from tests.helpers_documents import DATA, W, docx_bytes, docx_of_paragraphs, pdf_bytes

ESSAY_FORMATS = ["docx", "doc", "odt", "rtf", "html", "epub", "pdf"]


def words(text: str) -> list[str]:
    return "".join(chr(c) for c in normalize(text).tolist()).split()


def essay_paragraphs() -> list[str]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_documents", DATA / "make.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAKE = essay_paragraphs()


def read(name: str):
    data = (DATA / name).read_bytes()
    fmt = sniff_bytes(data)
    assert fmt is not None, name
    return extract(data, fmt)


@pytest.mark.parametrize("ext", ESSAY_FORMATS)
def test_every_format_gives_the_essay_in_reading_order(ext: str) -> None:
    got = read(f"essay.{ext}")
    assert got.format == ext and got.extractor == FORMATS[ext] and got.version == reader_version(got.extractor)
    text = " ".join(words(got.text))
    pos = [text.find(" ".join(words(p))) for p in MAKE.ESSAY]
    assert all(p >= 0 for p in pos), (ext, pos)
    assert pos == sorted(pos)
    # The table's cells, the footnote and the header are text of the document.
    assert "confluence two trade routes" in text
    assert " ".join(words(MAKE.FOOTNOTE)) in text
    # The running header once, as the document has it (LibreOffice's EPUB has no page headers).
    assert text.count("river towns a short essay") == (ext != "epub")
    assert "xml" not in text.split() and "w" not in text.split()  # no markup


def test_styles_and_fields_are_left_out() -> None:
    got = read("essay.docx")
    assert "Heading1" not in got.text and "Liberation" not in got.text
    assert "Page" in got.text and "Page 1" not in got.text  # the footer's field (the page number) is left out
    assert "field codes" in got.left_out


def test_slides_with_notes_and_sheets_cells() -> None:
    for name in ("slides.pptx", "slides.odp"):
        text = " ".join(words(read(name).text))
        for title, bullets, notes in MAKE.SLIDES:
            for piece in (title, *bullets, notes):
                assert " ".join(words(piece)) in text, (name, piece)
        assert text.find("why rivers mattered") < text.find("start with the map") < text.find("what changed")
    for name in ("sheet.xlsx", "sheet.ods"):
        got = read(name)
        assert got.text.split("\n") == ["\t".join(row) for row in MAKE.SHEET], name


def test_the_same_document_reads_the_same_in_docx_doc_odt_and_rtf() -> None:
    texts = {ext: words(read(f"essay.{ext}").text) for ext in ("docx", "doc", "odt", "rtf")}
    assert texts["docx"] == texts["doc"] == texts["odt"] == texts["rtf"]


def test_word_97_text_in_utf16_pieces_fields_and_tables() -> None:
    """A .doc stores its text as 8-bit or UTF-16 pieces (the piece table); a field's instruction is left
    out and its result kept (a page number's too is left out); a table's cells are joined by tabs."""
    from simscan.extract import doc

    got = read("unicode.doc")
    assert got.format == "doc" and got.text == "Heading with café and “quotes”\n\nSecond paragraph: αβγ Greek."
    raw = ("a\x13 HYPERLINK \"http://x\" \x14link\x15 b\x13 PAGE \x145\x15 c"
           "\x13 IF \x13 PAGE \x141\x15 = 1 \x14yes\x15 d\rcell\x07two\x07\x07next\x07row\x07\x07\x01\x02end")
    assert doc._plain(raw) == "alink b cyes d\ncell\ttwo\nnext\trow\nend"



def test_word_97_text_deleted_with_changes_tracked_is_left_out() -> None:
    """A .doc keeps the words deleted with changes tracked in its text, marked by a character property
    (sprmCFRMarkDel); they are no longer the document's text, as a DOCX's ``w:del`` is not: read, the
    .doc has the text its DOCX export has (the inserted words kept)."""
    got = read("tracked.doc")
    assert got.text == "Some inserted words remain."
    # The characters of a piece (at a byte offset, 1 or 2 bytes each) whose first byte lies in a deleted
    # range, against the obvious reading character by character.
    from simscan.extract.doc import _GONE, _without

    r = random.Random(5)
    for _ in range(3000):
        width, start = r.choice((1, 2)), r.randrange(50)
        piece = "".join(r.choice("abc") for _ in range(r.randrange(20)))
        ends = sorted(r.sample(range(100), 2 * r.randrange(6)))
        ranges = list(zip(ends[::2], ends[1::2]))  # (sorted and disjoint, as _deleted_runs gives them)
        slow = "".join(_GONE if any(lo <= start + width * i < hi for lo, hi in ranges) else c
                       for i, c in enumerate(piece))
        assert _without(piece, start, width, ranges) == slow, (piece, start, width, ranges)

def _with_flags(data: bytes, set_bits: int) -> bytes:
    """``data`` (a .doc) with bits of its File Information Block's flags set (the WordDocument stream's
    0x0A, found by its identifier 0xA5EC at a sector start)."""
    at = next(k for k in range(512, len(data), 512) if data[k : k + 2] == b"\xec\xa5")
    flags = int.from_bytes(data[at + 10 : at + 12], "little") | set_bits
    return data[: at + 10] + flags.to_bytes(2, "little") + data[at + 12 :]


def test_a_bad_word_97_file_is_a_clear_problem() -> None:
    data = (DATA / "essay.doc").read_bytes()
    for bits in (0x0100, 0x8000):  # encrypted, obfuscated
        with pytest.raises(ExtractError) as e:
            extract(_with_flags(data, bits), "doc")
        assert e.value.kind == "encrypted" and str(e.value) == "password-protected"
    for cut in (600, len(data) // 2, len(data) - 600):
        with pytest.raises(ExtractError) as e:
            extract(data[:cut], sniff_bytes(data[:cut]) or "doc")
        assert e.value.kind == "corrupt" and "damaged Word file" in str(e.value), cut
    # A compound file without a WordDocument stream (a spreadsheet of Office 97-2003) is no document.
    other = data.replace("WordDocument".encode("utf-16-le"), "WorkBookData".encode("utf-16-le"))
    assert sniff_bytes(other) is None


def test_pdf_export_has_the_docx_text_without_running_headers() -> None:
    docx, pdf = read("student.docx"), read("student.pdf")
    assert words(docx.text) == words(pdf.text)
    essay = read("essay.pdf")
    assert "running headers and page numbers (3 lines)" in essay.left_out
    assert essay.parts[:2] == ("2 pages", "text layer")
    assert "Page" not in essay.text.split()


def test_sniffing_reads_content_never_names(tmp_path: Path) -> None:
    for name in [p.name for p in DATA.iterdir() if p.is_file() and p.suffix != ".py"]:
        renamed = tmp_path / "renamed.txt"
        shutil.copyfile(DATA / name, renamed)
        want = {"encrypted.docx": "ooxml-encrypted"}.get(name, Path(name).suffix[1:])
        assert sniff_bytes(renamed.read_bytes()) == want, name
        import os

        fd = os.open(renamed, os.O_RDONLY)
        try:
            assert sniff_fd(fd, renamed.stat().st_size) == want, name
        finally:
            os.close(fd)
    # Text that is not a web page, though it holds markup, stays text; so do other zips and compound files.
    for data in (
        b"# Notes\n\n<b>bold</b> and <html> in Markdown\n",
        b"<?xml version='1.0'?><svg xmlns='http://www.w3.org/2000/svg'/>",
        b'print("<html><body>hi</body></html>")\n',
        b"\\documentclass{article}\n\\begin{document}x\\end{document}\n",
        b"<p>a fragment</p>",
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600),  # an old .doc: binary, as before
    ):
        assert sniff_bytes(data) is None, data
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "an ordinary archive")
    assert sniff_bytes(buf.getvalue()) is None
    assert sniff_bytes(b"\xef\xbb\xbf  <!-- made by hand -->\n<!DOCTYPE HTML><p>x") == "html"
    assert sniff_bytes("<html><body>é</body></html>".encode("utf-16")) == "html"


def test_versions_name_each_reader_and_its_library() -> None:
    versions = current_versions()
    assert versions[0] == "plain/2" and len(set(versions)) == len(versions)
    assert any(v.startswith("pdf/") and "+pypdfium2-" in v for v in versions)
    assert any(v.startswith("html/") and "+lxml-" in v for v in versions)


# --------------------------------------------------------------------------- PDF layout artefacts
def test_running_headers_and_page_numbers_are_dropped_once_repeated() -> None:
    pages = [["Annual report", f"Body line {i} of the first kind", f"Page {i + 1}"] for i in range(4)]
    pages[2].insert(1, "Annual report")  # a body line equal to the header, not at an edge: kept
    out, dropped = strip_running(pages)
    assert dropped == 3 + 4  # the header's repeats, every page number
    assert [ln for p in out for ln in p].count("Annual report") == 2
    assert not any(ln.startswith("Page") for p in out for ln in p)
    one = [["Only page", "Page 1"]]
    assert strip_running(one) == (one, 0)


def test_a_running_header_with_a_date_is_dropped_once_repeated() -> None:
    """A student's header names the course and the date: a long line with digits.  Its repeats are dropped
    as a running header's (they cut a copied paragraph in two at every page break), its first kept; a long
    body line whose digits change from page to page is text of the same shape, kept on every page."""
    header = "Jane Doe - CS 101 Information Retrieval - essay 2 - submitted 20 November 2026"
    row = "Row {} of the table of results that ends the page here"
    pages = [[header, f"Body line {i} of the essay, and more words", row.format(i), f"Page {i + 1} of 4"] for i in range(4)]
    out, dropped = strip_running(pages)
    assert dropped == 3 + 4  # the header's repeats, every page number
    lines = [ln for p in out for ln in p]
    assert lines.count(header) == 1 and sum(ln.startswith("Row ") for ln in lines) == 4
    # The same through PDFium: a PDF whose paragraph runs over a page break reads without the header in it.
    sentence = ["The river carried grain to the market in spring,", "when the water was high and the boats"]
    pdf = [[header, sentence[0]], [header, sentence[1], "were many."]]
    got = extract(pdf_bytes(pdf), "pdf")
    assert got.text.count("Jane Doe") == 1 and "in spring,\n\nwhen the water" in got.text, got.text


def test_hyphens_at_line_ends_are_joined_between_lower_case_letters() -> None:
    text, n = join_hyphens("an inter-\nnational river and a well-\nknown town; 1990-\n2000; Anglo-\nSaxon")
    assert text == "an international river and a wellknown town; 1990-\n2000; Anglo-\nSaxon" and n == 2


def test_a_pdf_with_hyphenated_lines_and_running_headers_reads_as_its_text() -> None:
    body = ["The river carried grain to the mar-", "ket in spring, when the water was high."]
    pages = [["The Book of Rivers", *body, str(i)] for i in range(1, 4)]
    got = extract(pdf_bytes(pages), "pdf")
    assert got.text.count("market in spring") == 3 and got.text.count("The Book of Rivers") == 1
    assert not any(line.strip().isdigit() for line in got.text.splitlines())
    assert "hyphens at line ends (3)" in got.left_out  # (PDFium drops them; the reader counts them)
    assert extract(pdf_bytes(pages), "pdf") == got  # the same again: deterministic
    from simscan.extract.pdf import extract as read_pdf

    kept = read_pdf(pdf_bytes(pages), hyphens=False, running=False)  # (what the benchmark compares with)
    assert kept.text.count("mar-\nket") == 3 and kept.text.count("The Book of Rivers") == 3


# --------------------------------------------------------------------------- bad inputs
def test_encrypted_documents_are_refused_with_a_reason() -> None:
    for name in ("encrypted.pdf", "encrypted.odt", "encrypted.docx"):
        with pytest.raises(ExtractError, match="password-protected") as e:
            read(name)
        assert e.value.kind == "encrypted", name


def test_zip_bomb_is_refused() -> None:
    bomb = docx_bytes(f'<w:document {W}><w:body><w:p><w:r><w:t>' + " " * (64 << 20) + "</w:t></w:r></w:p></w:body>"
                      "</w:document>")
    assert len(bomb) < 200_000
    with pytest.raises(ExtractError, match="zip bomb") as e:
        extract(bomb, "docx")
    assert e.value.kind == "bomb"


def test_a_zip_that_lies_about_its_sizes_cannot_make_the_reader_hold_more() -> None:
    text = "river " * 20_000
    data = bytearray(docx_of_paragraphs([text]))
    # Declare 1,000 bytes for word/document.xml in its local and central headers: zipfile then
    # stops there, and the part's checksum fails.
    z = zipfile.ZipFile(io.BytesIO(bytes(data)))
    info = z.getinfo("word/document.xml")
    real = info.file_size.to_bytes(4, "little")
    assert data.count(real) == 2
    data = bytes(data).replace(real, (1000).to_bytes(4, "little"))
    with pytest.raises(ExtractError) as e:
        extract(data, "docx")
    assert e.value.kind == "corrupt"


def test_entity_expansion_is_refused() -> None:
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>'
        f"<w:document {W}><w:body><w:p><w:r><w:t>&d;</w:t></w:r></w:p></w:body></w:document>"
    )
    with pytest.raises(ExtractError, match="entity") as e:
        extract(docx_bytes(laughs), "docx")
    assert e.value.kind == "entities"
    external = (
        '<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        f"<w:document {W}><w:body><w:p><w:r><w:t>&x;</w:t></w:r></w:p></w:body></w:document>"
    )
    with pytest.raises(ExtractError) as e:
        extract(docx_bytes(external), "docx")
    assert e.value.kind == "entities"


def test_very_deep_nesting_is_refused() -> None:
    deep = f"<w:document {W}><w:body>" + "<w:p>" * 100_000 + "</w:p>" * 100_000 + "</w:body></w:document>"
    with pytest.raises(ExtractError, match="nested") as e:
        extract(docx_bytes(deep), "docx")
    assert e.value.kind == "depth"
    rtf = b"{\\rtf1 " + b"{" * 5000 + b"x" + b"}" * 5000 + b"}"
    with pytest.raises(ExtractError) as e:
        extract(rtf, "rtf")
    assert e.value.kind == "depth"
    html = "<html><body>" + "<div>" * 5000 + "deep text" + "</div>" * 5000 + "</body></html>"
    with pytest.raises(ExtractError, match="nested") as e:  # libxml2 would drop the text silently
        extract(html.encode(), "html")
    assert e.value.kind == "depth"
    html = "<html><body>" + "<div>" * 1000 + "deep text" + "</div>" * 1000 + "</body></html>"
    assert extract(html.encode(), "html").text == "deep text"


@pytest.mark.parametrize("name", ["essay.docx", "slides.pptx", "sheet.xlsx", "essay.odt", "essay.epub", "essay.pdf"])
def test_truncated_documents_are_damaged_not_crashes(name: str) -> None:
    data = (DATA / name).read_bytes()
    fmt = sniff_bytes(data)
    for cut in (len(data) // 2, len(data) - 30, 3000):
        part = data[:cut]
        assert sniff_bytes(part) == fmt, (name, cut)  # still recognised from the head
        try:
            got = extract(part, fmt)
        except ExtractError as e:
            assert e.kind in ("corrupt", "no-text"), (name, cut, e)
        else:  # PDFium repairs a truncated PDF and reads the pages it has
            assert name.endswith(".pdf") and got.text


def test_a_pdf_without_text_layer_says_so() -> None:
    with pytest.raises(ExtractError, match="no text layer") as e:
        read("scanned.pdf")
    assert e.value.kind == "no-text"


def test_a_2000_page_pdf_is_read_page_by_page() -> None:
    pages = [["The Book of Rivers", f"Chapter text of page {i}, where the water rose.", f"- {i + 1} -"]
             for i in range(2000)]
    got = extract(pdf_bytes(pages), "pdf")
    assert got.parts[0] == "2000 pages"
    assert got.text.count("where the water rose") == 2000 and got.text.count("The Book of Rivers") == 1
    assert "- 17 -" not in got.text


def test_text_sink_stops_at_its_cap() -> None:
    from simscan.extract.base import TextFull, TextSink

    sink = TextSink(limit=10)
    sink.add("river ")
    with pytest.raises(TextFull):
        sink.add("towns grew")
    assert sink.text() == "river town" and sink.cut
    assert MAX_TEXT_CHARS == 32 << 20


def test_html_is_decoded_as_a_browser_would_and_a_stale_charset_loses_to_utf8() -> None:
    from simscan.extract.html import decode

    page = '<html><head><meta charset="Shift_JIS"></head><body>{}</body></html>'
    # "①" (a circled digit) exists in Windows' Shift_JIS (cp932) only: browsers read it, strict shift_jis does not.
    assert "①テスト" in decode(page.format("①テスト").encode("cp932"))
    assert "①テスト" in decode(page.format("①テスト").encode("utf-8"))  # converted to UTF-8, meta kept
    latin = '<html><head><meta charset="iso-8859-1"></head><body>caf\xe9 \x93quoted\x94</body></html>'.encode("latin-1")
    assert "café “quoted”" in decode(latin)  # ISO-8859-1 is read as windows-1252
    assert extract(b"<html><body><p>a<b>wo</b>rd</p><p>next</p><script>x()</script></body></html>", "html").text \
        == "aword\nnext"


def test_a_word_95_file_is_unsupported_not_damaged() -> None:
    """Word 6 (nFib 101) and Word 95 (nFib 104) files have another File Information Block and no table
    stream: the reader says so, rather than calling a good old file damaged or reading it as Word 97."""
    data = (DATA / "essay.doc").read_bytes()
    at = next(k for k in range(512, len(data), 512) if data[k : k + 2] == b"\xec\xa5")
    for nfib in (101, 104, 105):
        old = data[: at + 2] + nfib.to_bytes(2, "little") + data[at + 4 :]
        with pytest.raises(ExtractError) as e:
            extract(old, "doc")
        assert e.value.kind == "unsupported" and "Word 95" in str(e.value), nfib


def test_header_positions_that_go_back_are_damage_not_the_story_read_again_and_again() -> None:
    """The header story's positions (PlcfHdd) only go forward; a file whose positions go back and forth
    over the whole story made the reader clean the story once per position (80 positions over a 1.4 MB
    story: 2 s; a 40 KB table of them: hours).  Such a file is damaged; and many distinct headers are
    kept in one pass (a list searched per header was quadratic: 32,000 headers, 1.3 s)."""
    from simscan.extract import doc

    story = "".join(f"header {i}\r" for i in range(40_000))
    back_and_forth = struct.pack("<8I", *([0, len(story)] * 4))
    with pytest.raises(doc._Damaged):
        doc._headers(story, back_and_forth)
    ends = list(itertools.accumulate(len(f"header {i}\r") for i in range(40_000)))
    cps = [0] * 7 + ends  # (six note separators, then one header or footer a line)
    heads, foots = doc._headers(story, struct.pack(f"<{len(cps)}I", *cps))
    lines = heads.split("\n") + foots.split("\n")
    assert sorted(lines) == sorted(f"header {i}" for i in range(40_000))

def test_a_looping_difat_chain_costs_no_more_than_the_file() -> None:
    """A compound file whose DIFAT chain loops on itself, each of its sectors naming one allocation
    table sector 127 times, and whose header claims millions of table sectors: the reader must not
    build an allocation table of every sector named (a 3 MB file took 1.6 s and 977 MB of memory)."""
    import tracemalloc

    data = bytearray((DATA / "essay.doc").read_bytes())
    sectors = (len(data) - 512) // 512
    fat0 = int.from_bytes(data[0x4C:0x50], "little")
    loop = sectors - 1  # (the last sector: a DIFAT sector naming itself as the next one)
    data[0x2C:0x30] = (0xFFFFFF).to_bytes(4, "little")  # table sectors claimed
    data[0x44:0x4C] = loop.to_bytes(4, "little") + (0xFFFFFF).to_bytes(4, "little")  # first DIFAT, count
    data[(loop + 1) * 512 : (loop + 2) * 512] = fat0.to_bytes(4, "little") * 127 + loop.to_bytes(4, "little")
    extract((DATA / "essay.doc").read_bytes(), "doc")  # (the reader's modules imported before measuring)
    peaks = []
    for source in ((DATA / "essay.doc").read_bytes(), bytes(data)):
        tracemalloc.start()
        try:
            try:
                extract(source, "doc")
            except ExtractError:
                pass
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    with pytest.raises(ExtractError):
        extract(bytes(data), "doc")
    assert peaks[1] < 2 * peaks[0], peaks  # (before: 17.8 MB against 39 KB for the file read whole)


def _with_embedded_word_stream(own: str, embedded: tuple[int, int]) -> bytes:
    """essay.doc with a storage ``ObjectPool`` in its root holding a stream named ``WordDocument`` (``embedded``:
    its first sector and size), listed first in the directory (entry 1), as an embedded object may be; the root's
    own ``WordDocument`` stream renamed ``own``.  (essay.doc's directory, one sector at 29: 0 the root, children
    1-6 in a tree from 1 (left 2, right 4), entry 7 free.)"""
    data = bytearray((DATA / "essay.doc").read_bytes())
    at = 512 * 30  # (sector 29)
    assert data[at + 128 : at + 128 + 16] == "\x01CompObj".encode("utf-16-le")

    def entry(i: int, name: str, kind: int, left: int, right: int, child: int, start: int, size: int) -> None:
        raw = name.encode("utf-16-le")
        o = at + 128 * i
        data[o : o + 64] = raw + bytes(64 - len(raw))
        data[o + 64 : o + 80] = struct.pack("<HBBIII", len(raw) + 2, kind, 1, left, right, child)
        data[o + 116 : o + 124] = struct.pack("<II", start, size)

    none = 0xFFFFFFFF
    data[at + 76 : at + 80] = struct.pack("<I", 7)  # the root's tree now starts at the storage
    entry(7, "ObjectPool", 1, 2, 4, 1, 0, 0)
    entry(1, "WordDocument", 2, none, none, none, *embedded)
    o = at + 128 * 5
    assert data[o : o + 24] == "WordDocument".encode("utf-16-le")
    data[o : o + 64] = own.encode("utf-16-le") + bytes(64 - 2 * len(own))
    data[o + 64 : o + 66] = struct.pack("<H", 2 * len(own) + 2)
    return bytes(data)


def test_only_the_root_storages_word_document_is_read() -> None:
    """A Word document embedded in a compound file (an object in a .doc, a Word file in an .xls or a .msg) has its
    own ``WordDocument`` stream in a storage; the file's text is the root storage's stream only, even when the
    directory lists the embedded one first."""
    essay = read("essay.doc").text
    # The embedded stream first (here the table stream's bytes: no Word document); the root's own read.
    assert extract(_with_embedded_word_stream("WordDocument", (3, 2667)), "doc").text == essay
    # No WordDocument of its own (a spreadsheet holding a Word document): not read as the embedded one.
    other = _with_embedded_word_stream("Workbook", (9, 9285))
    with pytest.raises(ExtractError) as e:
        extract(other, "doc")
    assert e.value.kind == "unsupported"


def test_a_character_property_page_named_many_times_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table of character property pages (PlcBteChpx) may name one page many times (a damaged or
    hostile file): each page is read once (100,000 namings of tracked.doc's marked page took 7 s)."""
    from simscan.extract import doc

    data = (DATA / "tracked.doc").read_bytes()
    word = doc._Compound(data).read("WordDocument")
    assert word is not None
    page = next(k for k in range(len(word) // 512) if doc._deleted_runs(word, struct.pack("<3I", 0, 1, k)))
    calls = []
    has_mark_del = doc._has_mark_del
    monkeypatch.setattr(doc, "_has_mark_del", lambda grpprl: calls.append(1) or has_mark_del(grpprl))
    once = doc._deleted_runs(word, struct.pack("<3I", 0, 1, page))
    reads = len(calls)
    n = 10_000
    assert doc._deleted_runs(word, struct.pack(f"<{n + 1}I", *range(n + 1)) + struct.pack("<I", page) * n) == once
    assert len(calls) == 2 * reads
