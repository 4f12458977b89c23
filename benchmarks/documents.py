"""Documents against plain text on the labelled corpus (issue 15), and extraction throughput.

Usage: python3 benchmarks/documents.py [--corpus ../shared/evalcorpus] [--threshold P] [--jobs N]

Needs LibreOffice (headless) to write the documents and poppler's ``pdftotext`` to compare PDF
speed with (Debian)::

    apt-get install -y libreoffice-writer-nogui poppler-utils

What it does:

1. Takes the labelled prose files of the corpus: ``clough``, ``gutenberg`` and ``peps`` (source
   code and the encodings set left out, and the HTML editions of the books too: simscan now reads
   an HTML file by its shown text, so "the same file as plain text" would not hold the same text).
2. Gives each file a format among DOCX, ODT, PDF, RTF, HTML and EPUB so that most labelled pairs
   cross formats (files in a fixed order; each takes the format its already placed partners use
   least), and has LibreOffice write it from the file's text (one paragraph per line, as
   LibreOffice's text import makes it).  The PDFs are written as a person prints a document: a
   running header (the file's name), a page-number footer and automatic hyphenation (en-US) -- the
   layout artefacts the PDF reader takes out.  Documents are cached under
   ``benchmarks/out/documents`` (git-ignored), keyed by the source's digest and the format.
3. Scans the documents, and the same files as plain text, each into its own index with the command
   line (``simscan scan``, ``simscan pairs --min-similarity 0``), and prints side by side, per
   label: recall at the threshold (default: simscan's), ROC AUC against the unrelated pairs, and the
   false-positive rate on unrelated pairs.  Target: documents within 0.02 of plain text on every
   label, at no more false positives.
4. Prints what each PDF layout artefact costs in recall: the documents' texts are written out as
   plain text files and scanned again with the PDF reader's running-header removal, or its hyphen
   joining, turned off.  LibreOffice 7.4 headless did not hyphenate here (even with Debian's
   ``hyphen-en-us`` and ``fo:hyphenate`` set), so for this the PDFs are typeset by this script instead
   (Helvetica, 80 columns, 50 lines a page, a running header and "Page N", long words hyphenated
   at line ends: 4-10 % of the lines of a page end in a hyphen).
5. Prints extraction speed, one process, files read from the page cache: PDF pages/s and MB/s of
   simscan's reader (``simscan.extract.pdf``, PDFium) against ``pdftotext`` on the same files (wall
   time of one process per file, as a scan would call it, and of the text alone), and DOCX files/s.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.accuracy import LABELS, auc, pair_scores, run_cli

SOURCES = ("clough", "gutenberg", "peps")
FORMATS = ("docx", "odt", "pdf", "rtf", "html", "epub")
#: LibreOffice export filters (Writer).
FILTERS = {"docx": "docx:MS Word 2007 XML", "odt": "odt", "rtf": "rtf", "html": "html:HTML (StarWriter)",
           "epub": "epub", "pdf": "pdf:writer_pdf_Export"}
OUT = REPO / "benchmarks" / "out" / "documents"


def prose_files(corpus: Path) -> tuple[dict[str, str], list[dict]]:
    """{relative path: known encoding} of the prose files, and the labelled pairs between them."""
    files = {}
    with open(corpus / "files.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["source"] in SOURCES and not row["path"].lower().endswith((".htm", ".html")):
                files[row["path"]] = row["encoding"]
    with open(corpus / "truth.csv", newline="") as f:
        pairs = [r for r in csv.DictReader(f) if r["file_a"] in files and r["file_b"] in files]
    return files, pairs


def assign_formats(files: list[str], pairs: list[dict]) -> dict[str, str]:
    """A format per file, so that labelled partners mostly differ (greedy, in path order)."""
    partners: dict[str, list[str]] = defaultdict(list)
    for p in pairs:
        partners[p["file_a"]].append(p["file_b"])
        partners[p["file_b"]].append(p["file_a"])
    fmt: dict[str, str] = {}
    for i, f in enumerate(sorted(files)):
        used = Counter(fmt[q] for q in partners[f] if q in fmt)
        fmt[f] = min(FORMATS, key=lambda x: (used[x], (FORMATS.index(x) - i) % len(FORMATS)))
    return fmt


def flat(rel: str) -> str:
    return rel.replace("/", "__")


def fodt(text: str, header: str) -> str:
    """A Writer document of ``text`` (a paragraph per line) with a running header, a page-number
    footer and automatic hyphenation: how a printed document looks."""
    ns = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
          'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" office:version="1.3"')
    body = "".join(f'<text:p text:style-name="Body">{escape(_xml_chars(line))}</text:p>' for line in text.split("\n"))
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<office:document {ns} '
        'office:mimetype="application/vnd.oasis.opendocument.text"><office:styles>'
        '<style:default-style style:family="paragraph"><style:text-properties fo:language="en" fo:country="US"/>'
        "</style:default-style></office:styles><office:automatic-styles>"
        '<style:page-layout style:name="pm1"><style:page-layout-properties fo:page-width="21cm" '
        'fo:page-height="29.7cm" fo:margin-top="2cm" fo:margin-bottom="2cm" fo:margin-left="2.5cm" '
        'fo:margin-right="2.5cm"/><style:header-style/><style:footer-style/></style:page-layout>'
        '<style:style style:name="Body" style:family="paragraph"><style:paragraph-properties '
        'fo:text-align="justify" fo:hyphenation-ladder-count="no-limit"/><style:text-properties fo:hyphenate="true" '
        'fo:hyphenation-remain-char-count="2" fo:hyphenation-push-char-count="2" fo:language="en" fo:country="US"/>'
        "</style:style></office:automatic-styles><office:master-styles>"
        '<style:master-page style:name="Standard" style:page-layout-name="pm1">'
        f"<style:header><text:p>{escape(header)}</text:p></style:header><style:footer><text:p>Page "
        '<text:page-number text:select-page="current">1</text:page-number></text:p></style:footer>'
        f"</style:master-page></office:master-styles><office:body><office:text>{body}</office:text></office:body>"
        "</office:document>\n"
    )


def _xml_chars(s: str) -> str:
    return "".join(c for c in s if c in "\t" or c >= " ")


def convert(jobs: list[tuple[Path, str, Path]], infilter: str | None) -> None:
    """LibreOffice writes each (source, format, target); one soffice run per format and folder."""
    by_fmt: dict[str, list[tuple[Path, Path]]] = defaultdict(list)
    for src, fmt, target in jobs:
        by_fmt[fmt].append((src, target))
    for fmt, items in by_fmt.items():
        with tempfile.TemporaryDirectory() as tmp:
            for k in range(0, len(items), 40):
                chunk = items[k : k + 40]
                cmd = ["soffice", "--headless", "--norestore", "--convert-to", FILTERS[fmt], "--outdir", tmp]
                if infilter:
                    cmd.append(f"--infilter={infilter}")
                subprocess.run(cmd + [str(s) for s, _ in chunk], check=False, capture_output=True, timeout=3600)
                for src, target in chunk:
                    made = Path(tmp) / f"{src.stem}.{fmt}"
                    if made.exists():
                        target.parent.mkdir(parents=True, exist_ok=True)
                        shutil.move(made, target)
                    else:
                        print(f"  LibreOffice wrote no {fmt} for {src.name}", file=sys.stderr)


def make_documents(corpus: Path, files: dict[str, str], fmt: dict[str, str]) -> dict[str, Path]:
    """The documents (cached): {relative path: document}."""
    src_dir, doc_dir = OUT / "src", OUT / "docs"
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    todo_text, todo_fodt = [], []
    out = {}
    for rel, enc in sorted(files.items()):
        raw = (corpus / "corpus" / rel).read_bytes()
        key = f"{hashlib.sha256(raw).hexdigest()}:{fmt[rel]}:1"
        target = doc_dir / f"{flat(rel)}.{fmt[rel]}"
        out[rel] = target
        if manifest.get(rel) == key and target.exists():
            continue
        text = raw.decode(enc, "replace").replace("\r\n", "\n").replace("\r", "\n")
        src_dir.mkdir(parents=True, exist_ok=True)
        if fmt[rel] == "pdf":
            src = src_dir / f"{flat(rel)}.fodt"
            src.write_text(fodt(text, Path(rel).stem), "utf-8")
            todo_fodt.append((src, "pdf", target))
        else:
            src = src_dir / f"{flat(rel)}.txt"
            src.write_text(text, "utf-8")
            todo_text.append((src, fmt[rel], target))
        manifest[rel] = key
    if todo_text or todo_fodt:
        print(f"LibreOffice writes {len(todo_text) + len(todo_fodt)} documents (cached in {OUT}) ...", flush=True)
        t = time.perf_counter()
        convert(todo_text, "Text (encoded):UTF8,LF,,,")
        convert(todo_fodt, None)
        print(f"  {time.perf_counter() - t:.0f} s", flush=True)
        OUT.mkdir(parents=True, exist_ok=True)
        manifest_path.write_text(json.dumps(manifest, indent=0))
    return out


def scores(folder: Path, rel_of: dict[str, str], pairs: list[dict], jobs: int) -> dict[str, list[float]]:
    """Scan ``folder`` with the CLI; per label, the best score of each labelled pair."""
    with tempfile.TemporaryDirectory() as tmp:
        index = os.path.join(tmp, "i.sqlite3")
        run_cli(["scan", str(folder), "--index", index, "--quiet", "--jobs", str(jobs)])
        out = run_cli(["pairs", "--index", index, "--min-similarity", "0", "--format", "json"])
    found = [json.loads(line) for line in out.splitlines() if line.strip()]
    root = Path("/corpus")
    for p in found:  # back to the corpus's relative paths
        p["a"], p["b"] = str(root / rel_of[p["a"]]), str(root / rel_of[p["b"]])
    best, cls, _ = pair_scores(found, root)
    got: dict[str, list[float]] = defaultdict(list)
    for row in pairs:
        ca, cb = cls.get(row["file_a"], row["file_a"]), cls.get(row["file_b"], row["file_b"])
        got[row["label"]].append(100.0 if ca == cb else best.get(tuple(sorted((ca, cb))), 0.0))
    return got


def table(runs: dict[str, dict[str, list[float]]], threshold: float) -> None:
    """Per label and run: recall at ``threshold``, ROC AUC against the unrelated pairs, mean best score."""
    names = list(runs)
    print(f"{'label':<18} {'n':>5} " + " ".join(f"{n + ' recall':>18} {'AUC':>6} {'mean':>5}" for n in names))
    base = runs[names[0]]
    for lab in (*LABELS, "unrelated"):
        if not base[lab]:
            continue
        cells = []
        for n in names:
            pos, neg = runs[n][lab], runs[n]["unrelated"]
            rec = sum(s >= threshold for s in pos) / len(pos)
            cells.append(f"{rec:18.3f} {auc(pos, neg) if lab != 'unrelated' else float('nan'):6.3f} "
                         f"{sum(pos) / len(pos):5.1f}")
        print(f"{lab if lab != 'unrelated' else 'unrelated (FP)':<18} {len(base[lab]):>5} " + " ".join(cells))


def typeset(text: str, header: str, width: int = 80, lines_per_page: int = 50) -> bytes:
    """A PDF of ``text`` as a simple typesetter prints it (module docstring, step 4)."""
    from tests.helpers_documents import pdf_bytes

    text = text.encode("cp1252", "replace").decode("cp1252")
    lines: list[str] = []
    for para in text.split("\n\n"):
        words, line = para.split(), ""
        for w in words:
            while True:
                room = width - len(line) - (1 if line else 0)
                if len(w) <= room:
                    line = f"{line} {w}" if line else w
                    break
                if w.isalpha() and len(w) >= 7 and room >= 4:  # hyphenate: at least 3 letters on each side
                    k = min(room - 1, len(w) - 3)
                    lines.append(f"{line} {w[:k]}-" if line else f"{w[:k]}-")
                    line, w = "", w[k:]
                    continue
                if not line:  # longer than a line (a URL, a rule of dashes): it overflows
                    lines.append(w)
                    break
                lines.append(line)
                line = ""
        if line:
            lines.append(line)
        lines.append("")
    pages = [[header, ""] + lines[i : i + lines_per_page] + ["", f"Page {n + 1}"]
             for n, i in enumerate(range(0, len(lines), lines_per_page))]
    return pdf_bytes(pages)


def texts_folder(docs: dict[str, Path], dest: Path, **pdf_options: bool) -> dict[str, str]:
    """Each document's text as a .txt file in ``dest`` (the PDFs read with ``pdf_options``)."""
    from simscan.extract import ExtractError, extract, pdf, sniff_bytes

    dest.mkdir(parents=True, exist_ok=True)
    rel_of = {}
    for rel, path in docs.items():
        data = path.read_bytes()
        fmt = sniff_bytes(data)
        try:
            text = (pdf.extract(data, "pdf", **pdf_options) if fmt == "pdf" else extract(data, fmt)).text
        except ExtractError as e:
            print(f"  {path.name}: {e}", file=sys.stderr)
            continue
        out = dest / f"{flat(rel)}.txt"
        out.write_text(text, "utf-8")
        rel_of[str(out)] = rel
    return rel_of


def throughput(docs: dict[str, Path]) -> None:
    from simscan.extract import extract
    from simscan.extract.pdf import extract as read_pdf

    pdfs = [p for p in docs.values() if p.suffix == ".pdf"]
    docxs = [p for p in docs.values() if p.suffix == ".docx"]
    import pypdfium2

    pages = sum(len(pypdfium2.PdfDocument(str(p))) for p in pdfs)
    mb = sum(p.stat().st_size for p in pdfs) / 1e6
    for p in pdfs:
        p.read_bytes()  # page cache
    t = time.perf_counter()
    for p in pdfs:
        read_pdf(p.read_bytes())
    ours = time.perf_counter() - t
    have_pdftotext = shutil.which("pdftotext") is not None
    theirs = float("nan")
    if have_pdftotext:
        t = time.perf_counter()
        for p in pdfs:
            subprocess.run(["pdftotext", "-q", str(p), "-"], check=False, capture_output=True)
        theirs = time.perf_counter() - t
    print(f"\nPDF, {len(pdfs)} files, {pages} pages, {mb:.1f} MB (one process, page cache):")
    print(f"  simscan (pypdfium2, headers and hyphens handled): {pages / ours:7.0f} pages/s {mb / ours:6.2f} MB/s "
          f"({ours:.2f} s)")
    if have_pdftotext:
        print(f"  pdftotext (a process per file):                   {pages / theirs:7.0f} pages/s {mb / theirs:6.2f} "
              f"MB/s ({theirs:.2f} s)   ratio simscan/pdftotext {theirs / ours:.2f}")
    else:
        print("  pdftotext not found: apt-get install -y poppler-utils")
    for p in docxs:
        p.read_bytes()
    t = time.perf_counter()
    for p in docxs:
        extract(p.read_bytes(), "docx")
    dt = time.perf_counter() - t
    dmb = sum(p.stat().st_size for p in docxs) / 1e6
    print(f"DOCX, {len(docxs)} files, {dmb:.1f} MB: {len(docxs) / dt:.0f} files/s, {dmb / dt:.2f} MB/s ({dt:.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Needs: apt-get install -y libreoffice-writer-nogui poppler-utils")
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "evalcorpus"))
    ap.add_argument("--threshold", type=float, default=None)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if shutil.which("soffice") is None:
        sys.exit("LibreOffice not found: apt-get install -y libreoffice-writer-nogui poppler-utils")
    from simscan.similarity import DEFAULT_MIN_SIMILARITY

    threshold = DEFAULT_MIN_SIMILARITY if args.threshold is None else args.threshold
    corpus = Path(args.corpus).resolve()
    files, pairs = prose_files(corpus)
    fmt = assign_formats(list(files), pairs)
    crossing = sum(fmt[p["file_a"]] != fmt[p["file_b"]] for p in pairs)
    print(f"{len(files)} prose files, {len(pairs)} labelled pairs, {crossing / len(pairs):.1%} of them across formats; "
          + ", ".join(f"{k} {v}" for k, v in sorted(Counter(fmt.values()).items())))
    docs = make_documents(corpus, files, fmt)
    docs = {rel: p for rel, p in docs.items() if p.exists()}
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "plain"
        rel_plain = {}
        for rel in docs:
            target = plain / flat(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(corpus / "corpus" / rel, target)
            rel_plain[str(target)] = rel
        doc_dir = Path(tmp) / "docs"
        rel_doc = {}
        for rel, p in docs.items():
            target = doc_dir / p.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)
            rel_doc[str(target)] = rel
        kept = [p for p in pairs if p["file_a"] in docs and p["file_b"] in docs]
        t = time.perf_counter()
        runs = {"plain": scores(plain, rel_plain, kept, args.jobs)}
        t_plain = time.perf_counter() - t
        t = time.perf_counter()
        runs["documents"] = scores(doc_dir, rel_doc, kept, args.jobs)
        t_docs = time.perf_counter() - t
        print(f"\nthreshold {threshold:g}% (scan + pairs: plain {t_plain:.1f} s, documents {t_docs:.1f} s)")
        table(runs, threshold)
        with_pdf = [p for p in kept if "pdf" in (fmt[p["file_a"]], fmt[p["file_b"]])]
        typeset_docs = dict(docs)
        hyphenated = total_lines = 0
        for rel, p in docs.items():
            if fmt[rel] == "pdf":
                enc = files[rel]
                text = (corpus / "corpus" / rel).read_bytes().decode(enc, "replace").replace("\r\n", "\n")
                data = typeset(text, Path(rel).stem)
                target = Path(tmp) / "typeset" / p.name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                typeset_docs[rel] = target
                body = text.split()
                total_lines += max(1, len(" ".join(body)) // 80)
                hyphenated += data.count(b"-) Tj")
        print(f"\nPDF layout artefacts, on the {len(with_pdf)} labelled pairs with a PDF side (typeset PDFs: "
              f"{hyphenated} of ~{total_lines} lines end in a hyphen): the documents' texts scanned as plain text, "
              "the PDF reader's handling on or off")
        artefacts = {}
        for name, opts in (("handled", {}), ("headers kept", {"running": False}), ("hyphens kept", {"hyphens": False}),
                           ("both kept", {"running": False, "hyphens": False})):
            folder = Path(tmp) / f"texts-{len(artefacts)}"
            artefacts[name] = scores(folder, texts_folder(typeset_docs, folder, **opts), with_pdf, args.jobs)
        table(artefacts, threshold)
    throughput(docs)


if __name__ == "__main__":
    main()
