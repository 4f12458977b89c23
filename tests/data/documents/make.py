"""Writes the test documents of this folder with LibreOffice (headless), as an office user would.

Usage (Debian: ``apt-get install -y libreoffice-writer-nogui libreoffice-calc-nogui
libreoffice-impress-nogui``)::

    python3 tests/data/documents/make.py

The texts below were written for these tests.  Each document is first written here as a flat
OpenDocument file (``.fodt``, ``.fodp``, ``.fods``: plain XML that LibreOffice opens), then
LibreOffice converts it to the formats the tests read; the PDF of the essay is the export of its
DOCX, as a person would make it ("Save as PDF").  Files made:

* ``essay.{docx,doc,odt,rtf,html,epub}`` and ``essay.pdf`` (exported from ``essay.docx``): two pages,
  a running header and a page-number footer, a heading, a table, a footnote;
* ``student.{docx,pdf}``: another essay with one paragraph of the essay copied into it;
* ``unicode.doc``: ``soffice --convert-to doc`` of a UTF-8 text file holding the two lines
  ``Heading with café and “quotes”`` and ``Second paragraph: αβγ Greek.`` (a blank line between): a Word
  97 file whose text is stored as UTF-16 pieces (not made by ``main``);
* ``tracked.doc``: ``soffice --convert-to "doc:MS Word 97"`` of the RTF file
  ``{\\rtf1\\ansi{\\*\\revtbl{Unknown;}{Jane;}}\\pard Some {\\deleted\\revauth1 deleted words }{\\revised\\revauth1
  inserted words }remain.\\par}``: a tracked deletion and insertion, which the DOCX export gives as ``w:del`` and
  ``w:ins`` (not made by ``main``);
* ``slides.{pptx,odp}``: two slides with speaker notes; ``sheet.{xlsx,ods}``: a small table;
* ``scanned.pdf``: a page holding only an image (a "scanned" page: no text layer), LibreOffice Draw's
  export of a small picture drawn here;
* ``encrypted.pdf`` (LibreOffice's PDF export with an open password), ``encrypted.odt`` (saved with a
  password through LibreOffice's UNO API: needs Debian's ``python3-uno`` and ``/usr/bin/python3``),
  ``encrypted.docx`` (``msoffcrypto-tool -e``, from PyPI: MS-OFFCRYPTO agile encryption, the
  format Word writes).  The password is "secret".  Skipped, with a message, when a tool is missing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

HERE = Path(__file__).resolve().parent

TITLE = "Rivers and the Towns That Grew Beside Them"
ESSAY = [
    ("Long before roads were paved, the first settlements of most regions clustered along rivers. Water meant "
     "drinking and washing, but it also meant travel: a loaded boat drifting downstream carried more grain in a day "
     "than a cart could move in a week. Markets therefore appeared where two streams met, where a ford crossed "
     "shallow water, or where rapids forced traders to unload and carry their cargo around the falls."),
    ("The same currents that brought trade also brought danger. Spring floods spread fertile silt across the "
     "lowland fields, yet they could sweep away a season's harvest and the houses of the families who planted it. "
     "Towns learned to build on terraces above the highest marks, and their chronicles kept careful note of the "
     "years when the water rose over the bridge."),
    ("Mills changed the relationship again. A wheel turned by a weir could grind flour, saw timber, or full woollen "
     "cloth without a single horse, and villages competed for the best sites along a stream. Quarrels over water "
     "rights filled the court records, because a dam upstream could leave a neighbour's wheel standing idle for the "
     "whole summer."),
    # page break before this one
    ("When railways arrived in the nineteenth century, many river towns lost their advantage almost overnight. "
     "Goods that once waited for the tide now left by train at any hour, and warehouses on the quays stood empty. "
     "Some towns declined into quiet villages; others turned their old wharves into promenades and found a new "
     "living in visitors who came to walk beside the water."),
    ("Today engineers speak of rivers less as highways than as systems to be managed. Levees, reservoirs and "
     "treatment plants decide how much water reaches a city and how clean it is when it leaves. Yet the old "
     "pattern remains visible on any map: the oldest streets still follow the curve of the bank, and the town hall "
     "usually stands within sight of the river that first gave the place a reason to exist."),
]
FOOTNOTE = "Flood marks carved into bridge piers are still legible in several old market towns."
TABLE = [("Site", "What it offered"), ("Confluence", "Two trade routes"), ("Ford", "A safe crossing"),
         ("Rapids", "A forced stop for cargo")]
HEADER = "River towns, a short essay"

STUDENT_TITLE = "How Energy Shaped the Early Village"
STUDENT = [
    ("Before coal and electricity, a village could only use the energy it found around it: the muscles of people "
     "and animals, the wind, and moving water. Each of these sources set limits on where houses were built and on "
     "what work could be done in each season of the year."),
    ESSAY[2],  # the copied paragraph
    ("Windmills spread later across flat country where streams were slow, and they freed villages from the "
     "river bank, but they stopped whenever the air was still. For that reason many farmers kept both kinds of mill "
     "and sent their grain to whichever one was turning that week."),
]

SLIDES = [
    ("Why rivers mattered", ["Drinking water and washing", "Cheap transport downstream", "Markets at fords"],
     "Start with the map of the old town and point out the ford."),
    ("What changed", ["Mills on weirs", "Railways took the trade", "Wharves became promenades"],
     "Mention the court records about water rights before the railway part."),
]
SHEET = [("Town", "River", "Mills in 1850"), ("Ashford", "Stour", "4"), ("Bridgnorth", "Severn", "7"),
         ("Kendal", "Kent", "12")]

NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
    'office:version="1.3"'
)


def p(text: str, style: str = "") -> str:
    attr = f' text:style-name="{style}"' if style else ""
    return f"<text:p{attr}>{escape(text)}</text:p>"


def fodt(title: str, paragraphs: list[str], *, header: str = "", footnote: str = "", table=(),
         break_before: int = -1) -> str:
    body = [f'<text:h text:outline-level="1">{escape(title)}</text:h>']
    for i, para in enumerate(paragraphs):
        style = "Break" if i == break_before else ""
        if footnote and i == 1:
            # The footnote's citation follows the paragraph's last sentence.
            body.append(
                f'<text:p{" text:style-name=" + chr(34) + style + chr(34) if style else ""}>{escape(para)}'
                '<text:note text:id="ftn1" text:note-class="footnote"><text:note-citation>1</text:note-citation>'
                f"<text:note-body>{p(footnote)}</text:note-body></text:note></text:p>"
            )
        else:
            body.append(p(para, style))
        if table and i == 2:
            rows = "".join(
                "<table:table-row>"
                + "".join(f'<table:table-cell office:value-type="string">{p(c)}</table:table-cell>' for c in row)
                + "</table:table-row>"
                for row in table
            )
            body.append(f'<table:table table:name="Sites"><table:table-column table:number-columns-repeated="2"/>'
                        f"{rows}</table:table>")
    master = '<style:master-page style:name="Standard" style:page-layout-name="pm1">'
    if header:
        master += (f"<style:header>{p(header)}</style:header><style:footer><text:p>Page "
                   '<text:page-number text:select-page="current">1</text:page-number></text:p></style:footer>')
    master += "</style:master-page>"
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<office:document {NS} '
        'office:mimetype="application/vnd.oasis.opendocument.text">'
        '<office:automatic-styles><style:page-layout style:name="pm1"><style:page-layout-properties '
        'fo:page-width="21cm" fo:page-height="29.7cm" fo:margin-top="2cm" fo:margin-bottom="2cm" '
        'fo:margin-left="2.5cm" fo:margin-right="2.5cm"/><style:header-style/><style:footer-style/>'
        "</style:page-layout>"
        '<style:style style:name="Break" style:family="paragraph"><style:paragraph-properties '
        'fo:break-before="page"/></style:style></office:automatic-styles>'
        f"<office:master-styles>{master}</office:master-styles>"
        f'<office:body><office:text>{"".join(body)}</office:text></office:body></office:document>\n'
    )


def fodp() -> str:
    pages = []
    for i, (title, bullets, notes) in enumerate(SLIDES, 1):
        items = "".join(f"<text:list-item>{p(b)}</text:list-item>" for b in bullets)
        pages.append(
            f'<draw:page draw:name="page{i}">'
            '<draw:frame presentation:class="title" svg:x="2cm" svg:y="1cm" svg:width="24cm" svg:height="3cm">'
            f"<draw:text-box>{p(title)}</draw:text-box></draw:frame>"
            '<draw:frame presentation:class="outline" svg:x="2cm" svg:y="5cm" svg:width="24cm" svg:height="12cm">'
            f"<draw:text-box><text:list>{items}</text:list></draw:text-box></draw:frame>"
            '<presentation:notes><draw:frame presentation:class="notes" svg:x="2cm" svg:y="14cm" svg:width="17cm" '
            f'svg:height="10cm"><draw:text-box>{p(notes)}</draw:text-box></draw:frame></presentation:notes>'
            "</draw:page>"
        )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<office:document {NS} '
        'office:mimetype="application/vnd.oasis.opendocument.presentation">'
        f'<office:body><office:presentation>{"".join(pages)}</office:presentation></office:body>'
        "</office:document>\n"
    )


def fods() -> str:
    def cell(v: str) -> str:
        if v.isdigit():
            return f'<table:table-cell office:value-type="float" office:value="{v}">{p(v)}</table:table-cell>'
        return f'<table:table-cell office:value-type="string">{p(v)}</table:table-cell>'

    rows = "".join("<table:table-row>" + "".join(cell(c) for c in row) + "</table:table-row>" for row in SHEET)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<office:document {NS} '
        'office:mimetype="application/vnd.oasis.opendocument.spreadsheet">'
        f'<office:body><office:spreadsheet><table:table table:name="Mills">{rows}</table:table>'
        "</office:spreadsheet></office:body></office:document>\n"
    )


def scanned_png(path: Path) -> None:
    """A grey-scale PNG of 200 x 120 pixels with stripes like lines of print (no text in it)."""
    import struct
    import zlib

    w, h = 200, 120
    rows = b"".join(
        b"\0" + bytes(0 if y % 12 < 3 and 20 < x < 180 and (x // 7) % 3 else 255 for x in range(w)) for y in range(h)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


UNO_SAVE = """
import os, subprocess, sys, time, uno
from com.sun.star.beans import PropertyValue
def prop(n, v):
    p = PropertyValue(); p.Name = n; p.Value = v; return p
proc = subprocess.Popen(["soffice", "--headless", "--invisible", "--norestore",
                         "--accept=socket,host=127.0.0.1,port=2202;urp;"])
try:
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    for _ in range(150):
        try:
            ctx = resolver.resolve("uno:socket,host=127.0.0.1,port=2202;urp;StarOffice.ComponentContext")
            break
        except Exception:
            time.sleep(0.2)
    desktop = ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
    doc = desktop.loadComponentFromURL(uno.systemPathToFileUrl(sys.argv[1]), "_blank", 0, (prop("Hidden", True),))
    doc.storeToURL(uno.systemPathToFileUrl(sys.argv[2]), (prop("FilterName", "writer8"), prop("Password", "secret")))
    doc.close(True)
finally:
    proc.terminate()
    proc.wait(10)
"""


def encrypted(t: Path, docx: Path, odt: Path) -> list[Path]:
    """encrypted.pdf, .odt and .docx (the module docstring), those whose tool is installed."""
    made = []
    pdf_options = ('pdf:writer_pdf_Export:{"EncryptFile":{"type":"boolean","value":"true"},'
                   '"DocumentOpenPassword":{"type":"string","value":"secret"}}')
    enc = t / "encrypted"
    enc.mkdir()
    made.append(convert(docx, pdf_options, enc).rename(enc / "encrypted.pdf"))
    if Path("/usr/bin/python3").exists():
        out = enc / "encrypted.odt"
        subprocess.run(["/usr/bin/python3", "-c", UNO_SAVE, str(odt), str(out)], check=False, capture_output=True)
        if out.exists():
            made.append(out)
        else:
            print("encrypted.odt not made: python3-uno missing?")
    tool = shutil.which("msoffcrypto-tool")
    if tool:
        subprocess.run([tool, "-e", "-p", "secret", str(docx), str(enc / "encrypted.docx")], check=True)
        made.append(enc / "encrypted.docx")
    else:
        print("encrypted.docx not made: pip install msoffcrypto-tool")
    return made


def convert(src: Path, target: str, out: Path) -> Path:
    subprocess.run(["soffice", "--headless", "--convert-to", target, "--outdir", str(out), str(src)],
                   check=True, capture_output=True)
    made = out / (src.stem + "." + target.split(":")[0])
    if not made.exists():
        sys.exit(f"LibreOffice did not write {made}")
    return made


def main() -> None:
    if shutil.which("soffice") is None:
        sys.exit("soffice not found: apt-get install -y libreoffice-writer-nogui libreoffice-calc-nogui "
                 "libreoffice-impress-nogui")
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "essay.fodt").write_text(fodt(TITLE, ESSAY, header=HEADER, footnote=FOOTNOTE, table=TABLE,
                                           break_before=3), "utf-8")
        (t / "student.fodt").write_text(fodt(STUDENT_TITLE, STUDENT), "utf-8")
        (t / "slides.fodp").write_text(fodp(), "utf-8")
        (t / "sheet.fods").write_text(fods(), "utf-8")
        made = [
            *(convert(t / "essay.fodt", f, t)
              for f in ("docx:MS Word 2007 XML", "doc:MS Word 97", "odt", "rtf", "html", "epub")),
            convert(t / "student.fodt", "docx:MS Word 2007 XML", t),
            convert(t / "slides.fodp", "pptx", t), convert(t / "slides.fodp", "odp", t),
            convert(t / "sheet.fods", "xlsx", t), convert(t / "sheet.fods", "ods", t),
        ]
        pdf_dir = t / "pdf"
        made += [convert(t / "essay.docx", "pdf", pdf_dir), convert(t / "student.docx", "pdf", pdf_dir)]
        scanned_png(t / "scanned.png")
        made.append(convert(t / "scanned.png", "pdf", t))
        made += encrypted(t, t / "student.docx", convert(t / "student.docx", "odt", t / "odt"))
        for f in made:
            shutil.copyfile(f, HERE / f.name)
            print(f"{f.name}: {f.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
