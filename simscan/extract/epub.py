"""EPUB 2 and 3: the text of the content documents in reading order.

``META-INF/container.xml`` names the package document (OPF); its spine gives the reading order of
the manifest's XHTML documents, each read as HTML (``html.html_text``).  The navigation document
and the NCX table of contents are not in the spine's text (they repeat the headings).  A book
whose ``META-INF/encryption.xml`` encrypts a content document is DRM-protected ("encrypted"; font
obfuscation alone is not).
"""

from __future__ import annotations

from typing import IO

from simscan.extract import html as _html
from simscan.extract import reader_version
from simscan.extract.base import CUT, Extracted, ExtractError, TextFull, TextSink
from simscan.extract.package import Package, XmlHandler, resolve
from simscan.extract.sniff import EPUB

NAME = "epub"
#: Bytes of one content document read at most.
MAX_ITEM_BYTES = 64 << 20


def _rootfile(pkg: Package) -> str:
    found: list[str] = []

    class H(XmlHandler):
        def start(self, name: str, attrs: dict[str, str]) -> None:
            if name == "rootfile" and not found:
                found.append(attrs.get("full-path", ""))

    pkg.parse("META-INF/container.xml", H())
    if not found or found[0] not in pkg.names:
        raise ExtractError("EPUB without its package document (META-INF/container.xml)", "corrupt", EPUB)
    return found[0]


def _spine(pkg: Package, opf: str) -> list[str]:
    items: dict[str, tuple[str, str]] = {}
    order: list[str] = []

    class H(XmlHandler):
        def start(self, name: str, attrs: dict[str, str]) -> None:
            if name == "item":
                items[attrs.get("id", "")] = (attrs.get("href", ""), attrs.get("media-type", ""))
            elif name == "itemref" and attrs.get("linear", "yes") != "no":
                order.append(attrs.get("idref", ""))

    pkg.parse(opf, H())
    base = opf.rsplit("/", 1)[0] if "/" in opf else ""
    out = []
    for idref in order:
        href, media = items.get(idref, ("", ""))
        name = resolve(base, href.split("#", 1)[0])
        if name in pkg.names and ("html" in media or name.endswith((".xhtml", ".html", ".htm"))):
            out.append(name)
    return out


def _encrypted(pkg: Package, docs: list[str]) -> bool:
    if "META-INF/encryption.xml" not in pkg.names:
        return False
    found: list[str] = []

    class H(XmlHandler):
        def start(self, name: str, attrs: dict[str, str]) -> None:
            if name == "CipherReference":
                found.append(attrs.get("URI", ""))

    pkg.parse("META-INF/encryption.xml", H())
    return any(resolve("", u) in docs for u in found)


def extract(file: IO[bytes] | str, fmt: str = EPUB) -> Extracted:
    """The text of an EPUB book (a path or a seekable binary file)."""
    with Package(file, fmt) as pkg:
        docs = _spine(pkg, _rootfile(pkg))
        if _encrypted(pkg, docs):
            raise ExtractError("DRM-protected (its content documents are encrypted)", "encrypted", fmt)
        sink = TextSink()
        notes: tuple[str, ...] = ()
        try:
            for name in docs:
                data = pkg.read(name, MAX_ITEM_BYTES)
                sink.add(_html.html_text(_html.decode(data)))
                sink.newline()
        except TextFull:
            notes = (CUT,)
        return Extracted(sink.text(), fmt, NAME, reader_version(NAME), (f"{len(docs)} chapter{'' if len(docs) == 1 else 's'}",),
                         ("markup", "table of contents"), notes)
