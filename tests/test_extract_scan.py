"""Documents in a scan: stored by their text, kinds, problem lines, re-reading, worker limits."""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import zipfile
from pathlib import Path

import numpy as np
import pytest

from simscan.extract import PLAIN_VERSION, current_versions, reader_version
from simscan.extract.document import read_document
from simscan.extract.pool import ExtractionPool, read_isolated
from simscan.fingerprint import fingerprint_bytes, fingerprint_file
from simscan.index import Index
from simscan.scanner import ScanRequest, run_scan
from simscan.similarity import compare, find_pairs, query
from tests.helpers_documents import DATA, W, docx_bytes, docx_of_paragraphs, pdf_bytes


def read_all(pool: ExtractionPool, *files: tuple[Path, str]) -> list[tuple]:
    """Each (file, format) read by ``pool`` (keyed by the file's name), in order; the pool is closed."""
    try:
        for p, fmt in files:
            pool.submit(p.name, os.fsencode(p), fmt, p.stat().st_size)
        done: list[tuple] = []
        while pool.pending:
            done += pool.collect(1.0)
        return done
    finally:
        pool.close()


def scan(root: Path, idx: Path, jobs: int = 1):
    return run_scan(ScanRequest([root], index_path=idx, jobs=jobs))


def rows(idx: Path) -> dict[str, tuple]:
    with sqlite3.connect(idx) as c:
        return {
            os.path.basename(os.fsdecode(r[0])): r[1:]
            for r in c.execute("SELECT path, format, extractor, extractor_version, is_text, encoding, fp_count, error"
                               " FROM files")
        }


def problems(idx: Path) -> dict[str, str]:
    with Index.open(idx, readonly=True) as ix:
        return {os.path.basename(p): r for p, r in ix.problems()}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    for p in DATA.iterdir():
        if p.is_file() and p.suffix != ".py":
            shutil.copyfile(p, d / p.name)
    shutil.copyfile(DATA / "essay.docx", d / "essay-renamed.txt")  # a renamed document
    (d / "notes.md").write_text("# Notes\n\nA plain Markdown file with <b>some</b> tags stays text.\n")
    (d / "truncated.docx").write_bytes((DATA / "essay.docx").read_bytes()[:3000])
    return d


def test_documents_are_indexed_by_their_text(folder: Path, tmp_path: Path) -> None:
    idx = tmp_path / "i.sqlite3"
    res = scan(folder, idx)
    assert res.files_failed == 0 and res.files_read == len(list(folder.iterdir()))
    r = rows(idx)
    for name in ("essay.docx", "essay.doc", "essay.odt", "essay.rtf", "essay.html", "essay.epub", "essay.pdf",
                 "slides.pptx", "sheet.ods", "essay-renamed.txt"):
        fmt, extractor, version, is_text, encoding, fp_count, error = r[name]
        assert extractor and version == reader_version(extractor) and is_text and encoding == fmt and fp_count > 0
        assert error is None
    assert r["essay-renamed.txt"][0] == "docx"
    assert r["notes.md"][:3] == ("text", None, PLAIN_VERSION)
    # The checksums are those of the bytes: a renamed copy is an exact copy.
    raw = fingerprint_file(folder / "essay.pdf")
    with Index.open(idx, readonly=True) as ix:
        t = ix.files()
    i = t.paths.index(str(folder / "essay.pdf"))
    assert t.checksum[i] == raw.checksum and int(t.partial[i]) == raw.partial and int(t.size[i]) == raw.size


def test_bad_documents_are_problem_lines_and_indexed_by_their_bytes(folder: Path, tmp_path: Path) -> None:
    idx = tmp_path / "i.sqlite3"
    scan(folder, idx)
    got = problems(idx)
    assert "password-protected" in got["encrypted.pdf"] and "compared by its bytes" in got["encrypted.pdf"]
    assert "password-protected" in got["encrypted.odt"] and "password-protected" in got["encrypted.docx"]
    assert "no text layer" in got["scanned.pdf"]
    assert "damaged or truncated zip" in got["truncated.docx"]
    r = rows(idx)
    for name in ("encrypted.pdf", "encrypted.docx", "scanned.pdf", "truncated.docx"):
        _fmt, _extractor, _version, is_text, encoding, fp_count, error = r[name]
        # Its checksums (exact copies are found), but no fingerprints: those of its bytes are its format's
        # structure, which unrelated damaged or encrypted documents share.
        assert not is_text and encoding is None and fp_count == 0 and error is None, name
        want = fingerprint_file(folder / name)
        with Index.open(idx, readonly=True) as ix:
            t = ix.files()
            i = t.paths.index(str(folder / name))
            assert t.checksum[i] == want.checksum and ix.fingerprints([int(t.ids[i])], kind="all")[2].size == 0
    assert len(got) == 5  # nothing else


def test_documents_read_by_their_bytes_pair_with_their_copies_only(tmp_path: Path) -> None:
    """Two different truncated DOCX files shared their zip structure (a 23 % "near" pair in the acceptance test,
    36 % with a zip bomb): a document whose text cannot be read now pairs with its exact copies alone."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "a.docx").write_bytes((DATA / "essay.docx").read_bytes()[:3000])
    (root / "b.docx").write_bytes((DATA / "student.docx").read_bytes()[:3500])
    (root / "a copy.docx").write_bytes((DATA / "essay.docx").read_bytes()[:3000])
    idx = tmp_path / "i.sqlite3"
    scan(root, idx)
    with Index.open(idx, readonly=True) as ix:
        pairs = find_pairs(ix, min_similarity=0)
    assert [({os.path.basename(p.a_path), os.path.basename(p.b_path)}, p.kind) for p in pairs] == [
        ({"a copy.docx", "a.docx"}, "exact")]


def test_docx_and_its_pdf_export_are_content_and_a_copied_paragraph_is_found(folder: Path, tmp_path: Path) -> None:
    idx = tmp_path / "i.sqlite3"
    scan(folder, idx)
    with Index.open(idx, readonly=True) as ix:
        pairs = {(os.path.basename(p.a_path), os.path.basename(p.b_path)): p for p in find_pairs(ix, min_similarity=15)}

    def pair(a: str, b: str):
        """The listed pair, or (copies are listed against one of them) the two files compared alone."""
        return pairs.get((a, b)) or pairs.get((b, a)) or compare(folder / a, folder / b).pair

    p = pair("student.docx", "student.pdf")
    assert p.kind == "content" and p.best >= 95
    assert pair("essay.docx", "essay-renamed.txt").kind == "exact"
    assert pair("essay.docx", "essay.odt").kind == "content"
    assert pair("essay.docx", "essay.doc").kind == "content"  # (Word 97: read by its text, as the DOCX)
    assert pair("slides.pptx", "slides.odp").kind == "content"
    assert pair("essay.docx", "essay.pdf").best >= 90  # header, footnote and page numbers placed otherwise
    plag = pair("essay.docx", "student.pdf")
    assert plag is not None and plag.kind == "near" and plag.best >= 20
    # compare highlights the copied paragraph in both, DOCX -> PDF.
    c = compare(folder / "essay.docx", folder / "student.pdf")
    assert c.source_a.startswith("DOCX") and c.source_b.startswith("PDF, 1 page, text layer")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_documents", DATA / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    copied = " ".join(make.ESSAY[2].split())
    assert len(c.ranges_a) == 1
    (a0, a1), (b0, b1) = c.ranges_a[0], c.ranges_b[0]
    for text, s, e in ((c.text_a, a0, a1), (c.text_b, b0, b1)):
        shown = " ".join(text[s:e].split())
        assert copied[10:-10] in shown and len(shown) <= len(copied) + 12
    # query of the PDF finds the DOCX by its text.
    with Index.open(idx, readonly=True) as ix:
        found = {os.path.basename(p.b_path): p.kind for p in query(ix, folder / "student.pdf", min_similarity=15)}
    assert found["student.docx"] == "content"


def test_a_new_reader_version_rereads_only_its_format(folder: Path, tmp_path: Path) -> None:
    idx = tmp_path / "i.sqlite3"
    scan(folder, idx)
    assert scan(folder, idx).files_read == 0
    pdfs = sum(1 for v in rows(idx).values() if v[1] == "pdf")
    with sqlite3.connect(idx) as c:  # as an older PDF reader left them
        c.execute("UPDATE files SET extractor_version = 'pdf/0+pypdfium2-1.0' WHERE extractor = 'pdf'")
    res = scan(folder, idx)
    assert res.files_read == pdfs == 4 and res.files_unchanged == len(rows(idx)) - pdfs
    assert {v[2] for v in rows(idx).values() if v[1] == "pdf"} == {reader_version("pdf")}
    with sqlite3.connect(idx) as c:  # an index from before schema 6: every file is read once more
        c.execute("UPDATE files SET format = NULL, extractor = NULL, extractor_version = NULL")
    assert scan(folder, idx).files_read == len(rows(idx))
    assert scan(folder, idx).files_read == 0
    assert set(current_versions()) >= {v[2] for v in rows(idx).values()}


def test_the_same_text_in_another_container_is_content_never_exact(tmp_path: Path) -> None:
    paragraphs = ["Rivers carried grain to the towns that grew beside them, and mills turned on their weirs."] * 3
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.docx").write_bytes(docx_of_paragraphs(paragraphs))
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    (d / "b.docx").write_bytes(docx_bytes(f"<w:document {W}><w:body>{body}</w:body></w:document>", zipfile.ZIP_STORED))
    (d / "c.txt").write_text("\n".join(paragraphs) + "\n")
    idx = tmp_path / "i.sqlite3"
    scan(d, idx)
    with Index.open(idx, readonly=True) as ix:
        kinds = {frozenset((os.path.basename(p.a_path), os.path.basename(p.b_path))): p.kind for p in find_pairs(ix, min_similarity=15)}
    assert set(kinds.values()) == {"content"} and len(kinds) == 2  # three files, listed against one of them


def test_a_document_that_takes_too_long_is_killed_and_read_by_its_bytes(tmp_path: Path) -> None:
    slow = tmp_path / "slow.pdf"
    slow.write_bytes(pdf_bytes([[f"page {i} of a long book about rivers and towns"] * 30 for i in range(2000)]))
    ok = tmp_path / "ok.docx"
    ok.write_bytes(docx_of_paragraphs(["a short document read after the slow one"]))
    pool = ExtractionPool(jobs=1, limit=lambda size: 0.2 if size > 100_000 else 60.0)
    (k1, r1, why1), (k2, r2, why2) = read_all(pool, (slow, "pdf"), (ok, "docx"))
    assert (k1, k2) == ("slow.pdf", "ok.docx") and why1 is None and why2 is None
    assert r1.note == "PDF: took longer than 0 s to read; compared by its bytes" and r1.summary is None
    raw = fingerprint_file(slow)  # (this PDF's bytes are ASCII: read as they are, they are text)
    assert (r1.fingerprints.checksum, r1.fingerprints.is_text, r1.fingerprints.encoding) == \
        (raw.checksum, raw.is_text, raw.encoding)
    assert np.array_equal(r1.fingerprints.rolling, raw.rolling)
    assert r2.note is None and r2.fingerprints.is_text and r2.summary.startswith("DOCX")


def test_a_document_that_needs_too_much_memory_is_read_by_its_bytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz     ", np.uint8)
    text = letters[rng.integers(0, letters.size, 24 << 20)].tobytes().decode()
    big = tmp_path / "big.docx"
    big.write_bytes(docx_bytes(f'<w:document xmlns:w="x"><w:body><w:p><w:r><w:t>{text}</w:t></w:r></w:p>'
                               "</w:body></w:document>"))
    [(_key, read, why)] = read_all(ExtractionPool(jobs=1, memory_limit=8 << 20), (big, "docx"))
    assert why is None and not read.fingerprints.is_text
    assert "memory" in read.note and read.note.endswith("compared by its bytes")
    assert read.fingerprints.checksum == fingerprint_file(big).checksum


def test_read_isolated_gives_compare_the_text_or_none(tmp_path: Path) -> None:
    doc = read_isolated(DATA / "student.pdf", keep_text=True)
    assert doc.text.startswith("How Energy Shaped the Early Village") and doc.summary.startswith("PDF, 1 page")
    again = read_document(os.fsencode(DATA / "student.pdf"), "pdf").fingerprints
    assert doc.fingerprints.content_hash == again.content_hash and np.array_equal(doc.fingerprints.rolling, again.rolling)
    plain = tmp_path / "plain.txt"
    plain.write_text("just text\n")
    assert read_isolated(plain) is None
    with pytest.raises(OSError):
        read_isolated(tmp_path / "missing.pdf")


def test_a_damaged_zip_part_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    data = bytearray(docx_of_paragraphs(["the water rose over the bridge " * 200]))
    info = zipfile.ZipFile(__import__("io").BytesIO(bytes(data))).getinfo("word/document.xml")
    start = info.header_offset + 30 + len(info.filename) + 20
    data[start : start + 40] = bytes(40)  # garbage inside the deflated stream
    d = tmp_path / "d"
    d.mkdir()
    (d / "damaged.docx").write_bytes(bytes(data))
    (d / "fine.txt").write_text("the rest of the folder is scanned\n")
    idx = tmp_path / "i.sqlite3"
    res = scan(d, idx)
    assert res.files_read == 2 and res.files_failed == 0
    assert "damaged zip part word/document.xml" in problems(idx)["damaged.docx"]
    assert fingerprint_bytes(bytes(data)).checksum == read_document(os.fsencode(d / "damaged.docx"), "docx") \
        .fingerprints.checksum


@pytest.mark.slow
def test_a_100_mb_spreadsheet_is_read_within_its_limits(tmp_path: Path) -> None:
    """A 100 MB XLSX (stored sheet XML of ~1 M rows) is read by a worker under the default limits of
    time (60 s + 1 s/MB) and memory (1 GiB): its text is cut at 32 M characters, and nothing is killed."""
    from simscan.extract.base import CUT
    from tests.helpers_documents import big_xlsx

    sheet = tmp_path / "big.xlsx"
    big_xlsx(sheet)
    assert sheet.stat().st_size > 100_000_000
    [(_, read, why)] = read_all(ExtractionPool(jobs=1), (sheet, "xlsx"))
    assert why is None and read.summary.startswith("XLSX")
    assert read.note == f"XLSX: {CUT}" and read.fingerprints.is_text and read.fingerprints.units > 20_000_000


def test_a_rescan_keeps_the_problems_of_unchanged_files(tmp_path: Path) -> None:
    """`problems` lists the last scan's: a password-protected document a rescan finds unchanged is
    listed again (it is still compared by its bytes), once, and only for scans of its folder; once it
    is replaced by a readable document the line goes."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    shutil.copy(DATA / "encrypted.docx", a / "locked.docx")
    shutil.copy(DATA / "student.docx", a / "open.docx")
    (b / "note.txt").write_text("a note " * 40)
    idx = tmp_path / "i.sqlite3"

    def problems(*roots: Path) -> list[tuple[str, str]]:
        run_scan(ScanRequest(list(roots), index_path=idx, jobs=1))
        with Index.open(idx, readonly=True) as ix:
            return ix.problems()

    (first,) = problems(a)
    assert first[0] == str(a / "locked.docx") and "password" in first[1]
    for _ in range(2):  # unchanged: listed again, once, with where it comes from
        assert problems(a) == [(first[0], first[1] + " (unchanged since an earlier scan)")]
    assert problems(b) == []  # another folder's scan
    shutil.copy(DATA / "student.docx", a / "locked.docx")
    os.utime(a / "locked.docx", ns=(1, 1))
    assert problems(a) == []


def test_a_document_larger_than_the_large_file_size_is_read_by_its_text(tmp_path: Path) -> None:
    """A DOCX of 4.5 MB (its pictures make it large) is read by its text like a small one: the native
    reader streamed files of LARGE_FILE bytes or more as binary without sniffing them first."""
    from simscan.scanner import LARGE_FILE

    words = " ".join(f"word{i * 7919 % 10007}" for i in range(400))
    buf = io.BytesIO(docx_of_paragraphs([words]))
    with zipfile.ZipFile(buf, "a", zipfile.ZIP_STORED) as z:
        z.writestr("word/media/image1.bin", np.random.default_rng(5).integers(0, 256, LARGE_FILE + 500_000,
                                                                            np.uint8).tobytes())
    root = tmp_path / "d"
    root.mkdir()
    (root / "big.docx").write_bytes(buf.getvalue())
    (root / "same.txt").write_text(words)
    assert (root / "big.docx").stat().st_size > LARGE_FILE
    idx = tmp_path / "i.sqlite3"
    run_scan(ScanRequest([root], index_path=idx, jobs=1))
    with sqlite3.connect(idx) as c:
        rows = {bytes(p): (f, t) for p, f, t in c.execute("SELECT path, format, is_text FROM files")}
    assert rows[os.fsencode(root / "big.docx")] == ("docx", 1)
    with Index.open(idx, readonly=True) as ix:
        (p,) = find_pairs(ix)
    assert p.kind == "content"
