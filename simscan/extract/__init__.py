"""Text out of documents: DOCX/PPTX/XLSX, DOC, ODT/ODS/ODP, EPUB, PDF, RTF, HTML.  Never imports Qt.

A file's format is found from its content (``sniff``), never its name; its text is read by one
module per family (``ooxml``, ``doc``, ``odf``, ``epub``, ``pdf``, ``rtf``, ``html``), and that text is then
fingerprinted like any text file, while the file's checksums stay those of its bytes
(``document.read_document``).  Everything else (plain text, Markdown, TeX, source code, images,
archives) is read as before.

Documents are read in worker processes under per-file limits of time and memory
(``pool.ExtractionPool`` for the scanner, ``pool.read_isolated`` for ``compare`` and the
window's preview): a document that hangs or explodes is killed and becomes one problem line.

``current_versions()`` names the version of every reader (and of the plain reading): the index
keeps each file's, and a scan re-reads a file whose reader has another version now.
"""

from __future__ import annotations

import functools
import io
import os
import zipfile
from typing import IO

from simscan.extract.base import MAX_TEXT_CHARS, Extracted, ExtractError
from simscan.extract.sniff import (
    DOC,
    DOCX,
    EPUB,
    HEAD,
    HTML,
    ODP,
    ODS,
    ODT,
    OOXML_ENCRYPTED,
    PDF,
    PPTX,
    RTF,
    XLSX,
    sniff,
)  # fmt: skip

__all__ = [
    "FORMATS", "HEAD", "LIBRARIES", "MAX_TEXT_CHARS", "PLAIN_VERSION", "READER_VERSIONS", "ExtractError", "Extracted", "current_versions",
    "extract", "library_version", "reader_version", "sniff", "sniff_bytes", "sniff_fd",
]

#: Each format read and the module (extractor) that reads it.
FORMATS = {
    DOCX: "ooxml", PPTX: "ooxml", XLSX: "ooxml", OOXML_ENCRYPTED: "ooxml", DOC: "doc",
    ODT: "odf", ODS: "odf", ODP: "odf", EPUB: "epub", PDF: "pdf", RTF: "rtf", HTML: "html",
}
#: The version of the plain reading (text or bytes as they are, no extractor): a change of what
#: ``sniff`` recognises bumps it, so that every plain file is looked at again.
PLAIN_VERSION = "plain/2"  # (2: Word 97-2003 files are sniffed as documents)


#: Each reader's own version: bump it when the text it gives for the same file changes (the
#: index then re-reads the files of its formats, and no others).
#: (ooxml/odf/epub/rtf/html 2, pdf 3: a document whose text cannot be read keeps its checksums but no fingerprints
#: of its bytes, ``document._bytes_only``.)
READER_VERSIONS = {"ooxml": "2", "doc": "2", "odf": "2", "epub": "2", "pdf": "3", "rtf": "2", "html": "2"}
#: The library doing a reader's work (distribution, module): its version is part of the reader's.
LIBRARIES = {"pdf": ("pypdfium2", "pypdfium2"), "html": ("lxml", "lxml"), "epub": ("lxml", "lxml")}


@functools.cache
def reader_version(extractor: str) -> str:
    """The stored version string of ``extractor`` ("pdf/1+pypdfium2-5.15.2"): the reader's own
    version and, where a library reads, the library's (found without importing anything)."""
    version = f"{extractor}/{READER_VERSIONS[extractor]}"
    if extractor in LIBRARIES:
        dist, module = LIBRARIES[extractor]
        version += f"+{dist}-{library_version(dist, module)}"
    return version


def library_version(dist: str, module: str) -> str:
    """The installed version of distribution ``dist`` (import name ``module``), found from its
    ``.dist-info`` folder beside the module without importing it (``importlib.metadata`` scans
    every installed distribution: ~80 ms, paid by each scan otherwise); "?" when not found."""
    import glob
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return "?"
    site = os.path.dirname(os.path.dirname(spec.origin))
    found = sorted(glob.glob(os.path.join(glob.escape(site), f"{dist}-*.dist-info")))
    if len(found) != 1:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(dist)
        except PackageNotFoundError:
            return "?"
    return os.path.basename(found[0])[len(dist) + 1 : -len(".dist-info")]


def current_versions() -> tuple[str, ...]:
    """Every reader's current version string, the plain reading's first."""
    return (PLAIN_VERSION, *(reader_version(e) for e in sorted(set(FORMATS.values()))))


def sniff_bytes(data: bytes) -> str | None:
    """:func:`sniff` of a whole file held in memory (~0.5 us for a file that is no document)."""
    return sniff(data, lambda: zipfile.ZipFile(io.BytesIO(data)), whole=data)


def sniff_fd(fd: int, size: int) -> str | None:
    """:func:`sniff` of an open file (read with ``pread``: its offset is left alone)."""
    head = os.pread(fd, HEAD, 0)
    if head.startswith(b"PK\x03\x04"):
        return sniff(head, lambda: zipfile.ZipFile(_FdReader(fd, size)))
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        # The compound file's directory lies anywhere: read the whole file when small, else its
        # two ends (an encrypted package keeps its directory near one of them).
        whole = os.pread(fd, size, 0) if size <= (16 << 20) else head + os.pread(fd, 1 << 20, max(0, size - (1 << 20)))
        return sniff(head, whole=whole)
    return sniff(head)


class _FdReader:
    """A read-only, seekable file over a descriptor, read with ``pread`` (``zipfile`` needs seek/tell)."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size, self.pos = fd, size, 0

    def seekable(self) -> bool:
        return True

    def seek(self, off: int, whence: int = 0) -> int:
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = max(0, self.size - self.pos)
        b = os.pread(self.fd, n, self.pos)
        self.pos += len(b)
        return b

    def close(self) -> None:
        pass


def extract(source: IO[bytes] | str | bytes, fmt: str) -> Extracted:
    """The text of a document of format ``fmt`` (as sniffed), in this process and without limits
    of time or memory: the scanner, ``compare`` and the window call it in a worker process
    (``pool``).  Raises :class:`ExtractError`."""
    ext = FORMATS.get(fmt)
    if fmt == OOXML_ENCRYPTED:
        raise ExtractError("password-protected", "encrypted", fmt)
    if ext == "ooxml":
        from simscan.extract import ooxml

        return ooxml.extract(source if not isinstance(source, bytes) else _bytes_io(source), fmt)
    if ext == "doc":
        from simscan.extract import doc

        return doc.extract(source, fmt)
    if ext == "odf":
        from simscan.extract import odf

        return odf.extract(source if not isinstance(source, bytes) else _bytes_io(source), fmt)
    if ext == "epub":
        from simscan.extract import epub

        return epub.extract(source if not isinstance(source, bytes) else _bytes_io(source), fmt)
    if ext == "pdf":
        from simscan.extract import pdf

        return pdf.extract(source, fmt)
    if ext == "rtf":
        from simscan.extract import rtf

        return rtf.extract(source, fmt)
    if ext == "html":
        from simscan.extract import html

        return html.extract(source, fmt)
    raise ExtractError(f"no reader for {fmt}", "unsupported", fmt)


def _bytes_io(data: bytes) -> IO[bytes]:
    return io.BytesIO(data)
