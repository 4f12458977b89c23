"""Documents made by the tests themselves: hostile packages, and PDFs with many pages.

The office documents of ``tests/data/documents`` were written by LibreOffice (see its
``make.py``); what no office program writes on purpose (bombs, entity expansion, absurd nesting,
lying headers) or what would be too large to commit (a 2,000-page PDF, a 100 MB spreadsheet) is
built here from the formats' own rules.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "documents"

CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Override PartName="/word/document.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx_bytes(document_xml: str | bytes, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A minimal DOCX package whose main part is ``document_xml``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        z.writestr("[Content_Types].xml", CONTENT_TYPES)
        z.writestr("word/document.xml", document_xml)
    return buf.getvalue()


def docx_of_paragraphs(paragraphs: list[str]) -> bytes:
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    return docx_bytes(f'<?xml version="1.0" encoding="UTF-8"?><w:document {W}><w:body>{body}</w:body></w:document>')


def pdf_bytes(pages: list[list[str]]) -> bytes:
    """A PDF whose pages hold these lines of text (Helvetica, one of the standard 14 fonts: no font
    file needed), top to bottom, 14 points apart."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    pages_id = len(objects) + 1 + 2 * len(pages)  # placeholder number, fixed below
    kids = []
    for lines in pages:
        ops = [b"BT /F1 11 Tf 72 800 Td 14 TL"]
        for line in lines:
            esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("cp1252")
            ops.append(b"(" + esc + b") Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops)
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (pages_id, font, content)
        ))
    assert add(b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids) + b"] /Count %d >>" % len(kids)) \
        == pages_id
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, xref)
    return bytes(out)


def big_xlsx(path: Path, target: int = 100 << 20) -> None:
    """An XLSX of about ``target`` bytes (its sheet stored, not deflated: written at disk speed):
    64 shared strings and numbers, 20 cells a row, a million rows or so."""
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
    words = ["river", "town", "mill", "weir", "ford", "bridge", "market", "grain"]
    strings = [f"{a} {b} {i}" for i, (a, b) in enumerate((a, b) for a in words for b in words)]
    main = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("[Content_Types].xml",
                   '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                   f'<Override PartName="/xl/workbook.xml" ContentType="{main}.sheet.main+xml"/>'
                   f'<Override PartName="/xl/sharedStrings.xml" ContentType="{main}.sharedStrings+xml"/></Types>')
        z.writestr("xl/workbook.xml", f'<workbook {ns} {rel}><sheets><sheet name="Data" sheetId="1" r:id="rId1"/>'
                   "</sheets></workbook>")
        z.writestr("xl/_rels/workbook.xml.rels",
                   '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship '
                   'Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
                   'Target="worksheets/sheet1.xml"/></Relationships>')
        z.writestr("xl/sharedStrings.xml", f"<sst {ns}>" + "".join(f"<si><t>{s}</t></si>" for s in strings) + "</sst>")
        row = "".join(f'<c t="s"><v>{(k * 7) % len(strings)}</v></c><c><v>{k * 3.25}</v></c>' for k in range(10))
        block = "".join(f"<row>{row}</row>" for _ in range(1000)).encode()
        with z.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as f:
            f.write(f"<worksheet {ns}><sheetData>".encode())
            for _ in range(max(1, target // len(block))):
                f.write(block)
            f.write(b"</sheetData></worksheet>")
