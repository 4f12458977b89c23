"""Fuzzing the document readers: malformed input gives a text or an ExtractError, never another error.

Mutations are seeded (the same inputs on every run); inputs that once broke a reader are kept in
``tests/data/documents/fuzz``.  PDFs are read through the extraction pool: PDFium is C++, and a crash
there must cost a worker, not the scan (or this test run).
"""

from __future__ import annotations

import io
import os
import random
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simscan.extract import Extracted, ExtractError, extract, sniff_bytes
from simscan.extract.pool import ExtractionPool
from tests.helpers_documents import DATA, W, docx_bytes

FUZZ = DATA / "fuzz"
OTHERS = [p for p in sorted(DATA.iterdir()) if p.suffix in (".docx", ".doc", ".odt", ".rtf", ".html", ".epub", ".pptx",
                                                             ".xlsx", ".ods", ".odp") and not p.name.startswith("encrypted")]


def read_or_refuse(data: bytes, fmt: str | None) -> Extracted | None:
    """The reader's answer: a text, or None when it refused with an ExtractError (anything else fails)."""
    if fmt is None:
        return None
    try:
        return extract(data, fmt)
    except ExtractError as e:
        assert str(e) and e.kind
        return None


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(b))
        op = rng.random()
        if op < 0.5:
            b[i] = rng.randrange(256)
        elif op < 0.7:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op < 0.85:
            del b[i : i + rng.randint(1, 64)]
        else:
            b[i:i] = b[rng.randrange(len(b)) :][: rng.randint(1, 200)]
    return bytes(b)


def mutate_a_part(rng: random.Random, data: bytes) -> bytes:
    """The package with one of its XML parts edited (the zip itself intact: the XML parser is fuzzed)."""
    z = zipfile.ZipFile(io.BytesIO(data))
    names = z.namelist()
    target = rng.choice([n for n in names if n.endswith((".xml", ".xhtml", ".opf", ".rels"))])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as w:
        for n in names:
            w.writestr(n, mutate(rng, z.read(n)) if n == target else z.read(n))
    return out.getvalue()


@pytest.mark.parametrize("path", sorted(p for p in FUZZ.iterdir() if p.suffix != ".md"), ids=lambda p: p.name)
def test_inputs_that_once_broke_a_reader(path: Path) -> None:
    data = path.read_bytes()
    read_or_refuse(data, sniff_bytes(data))


@pytest.mark.parametrize("doc", OTHERS, ids=lambda p: p.name)
def test_mutated_documents(doc: Path) -> None:
    rng = random.Random(doc.name)
    data = doc.read_bytes()
    fmt = sniff_bytes(data)
    for _ in range(60):
        m = mutate_a_part(rng, data) if data[:2] == b"PK" and rng.random() < 0.6 else mutate(rng, data)
        read_or_refuse(m, sniff_bytes(m) or fmt)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.sampled_from([b"", b"PK\x03\x04", b"%PDF-1.4\n", b"{\\rtf1", b"<html>",
                                                   b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"]))
def test_sniff_never_fails(data: bytes, magic: bytes) -> None:
    assert sniff_bytes(magic + data) in (None, "pdf", "rtf", "html", "ooxml-encrypted", "docx", "pptx", "xlsx", "odt",
                                         "ods", "odp", "epub")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=2000))
def test_rtf_and_html_readers_take_any_bytes(data: bytes) -> None:
    read_or_refuse(b"{\\rtf1" + data, "rtf")
    read_or_refuse(b"<html><body>" + data, "html")


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(alphabet=st.sampled_from('<>/="&;!?[] abwptr:x\n\'#1'), max_size=400))
def test_word_xml_of_any_shape(xml: str) -> None:
    """Whatever the main part holds, the DOCX reader gives a text or refuses it."""
    read_or_refuse(docx_bytes(f"<w:document {W}><w:body>{xml}</w:body></w:document>"), "docx")
    read_or_refuse(docx_bytes(xml), "docx")


def test_mutated_pdfs_cost_at_most_a_worker(tmp_path: Path) -> None:
    rng = random.Random(15)
    sources = [(DATA / n).read_bytes() for n in ("essay.pdf", "student.pdf", "scanned.pdf", "encrypted.pdf")]
    pool = ExtractionPool(jobs=2)
    try:
        for k in range(60):
            p = tmp_path / f"{k}.pdf"
            p.write_bytes(mutate(rng, rng.choice(sources)))
            pool.submit(k, os.fsencode(p), "pdf", p.stat().st_size)
        done = []
        while pool.pending:
            done += pool.collect(1.0)
    finally:
        pool.close()
    assert [k for k, _, _ in done] == list(range(60))
    for k, read, why in done:
        assert why is None and read is not None, (k, why)  # every file indexed: by its text or its bytes
        assert read.fingerprints.size == (tmp_path / f"{k}.pdf").stat().st_size
        assert read.summary is not None or read.note.endswith("compared by its bytes")
