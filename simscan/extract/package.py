"""Zip packages (OOXML, ODF, EPUB) read safely, and their XML parts parsed as streams.

Zip (stdlib ``zipfile``; only the central directory is read when opened):

* a file that is no zip or whose directory is damaged or missing (truncated) raises
  :class:`ExtractError` "corrupt"; a member whose data is damaged fails its CRC check when read;
* an encrypted member (zip encryption) raises "encrypted";
* a zip bomb raises "bomb": a member read expands to more than :data:`MAX_MEMBER_BYTES`, or more
  than :data:`MAX_RATIO` times its compressed size beyond :data:`RATIO_FLOOR` bytes, or the
  members read expand to more than :data:`MAX_TOTAL_BYTES` together.  The sizes are checked as
  declared before reading and counted while inflating (``zipfile`` never returns more than the
  declared size of a member), so a lying header cannot make a reader hold more.  Members are read
  in chunks of :data:`CHUNK` bytes and fed to the parser: memory does not grow with their size.

XML (``xml.parsers.expat``, streaming, namespace-aware; the names a handler sees are local names):

* a document type declaration that declares an entity, or any entity reference expat would
  have to expand, raises "entities" (OOXML and ODF never declare entities; expat 2.4+ also
  stops "billion laughs" amplification, but only after 8 MB, and a refusal is clearer);
  external entities are never fetched (no handler is set for them);
* elements nested deeper than :data:`MAX_DEPTH` raise "depth" (expat itself does not recurse,
  but a reader's stack of open elements would grow without end);
* malformed XML raises "corrupt" with expat's message and line.
"""

from __future__ import annotations

import lzma
import zipfile
import zlib
from collections.abc import Iterator
from typing import IO, Any, Self
from xml.parsers import expat

from simscan.extract.base import ExtractError

#: Bytes a member may expand to at most (uncompressed).
MAX_MEMBER_BYTES = 1 << 30
#: ... and all members read from one package together.
MAX_TOTAL_BYTES = 2 << 30
#: Largest expansion ratio of a member larger than RATIO_FLOOR (XML of office files compresses
#: 5-30x; a sheet of one repeated cell ~150x; deflate's own maximum is ~1,030x).
MAX_RATIO = 250
RATIO_FLOOR = 8 << 20
#: Members a package may list at most.
MAX_MEMBERS = 100_000
#: Element nesting an XML part may reach at most (real office XML stays under ~30).
MAX_DEPTH = 512
CHUNK = 1 << 20


class Package:
    """An opened zip package.  ``names``: its member names; :meth:`chunks` / :meth:`read` read a
    member under the bomb limits; :meth:`parse` streams a member through an XML handler."""

    def __init__(self, file: IO[bytes] | str, fmt: str) -> None:
        self.format = fmt
        self.expanded = 0
        try:
            self.zip = zipfile.ZipFile(file)
        except (zipfile.BadZipFile, EOFError, ValueError, OSError) as e:
            raise ExtractError(f"damaged or truncated zip ({e})", "corrupt", fmt) from e
        except (NotImplementedError, zipfile.LargeZipFile) as e:
            raise ExtractError(f"zip that cannot be read ({e})", "corrupt", fmt) from e
        infos = self.zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise ExtractError(f"zip with {len(infos):,} members (more than {MAX_MEMBERS:,})", "bomb", fmt)
        self.names = frozenset(self.zip.NameToInfo)

    def close(self) -> None:
        self.zip.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chunks(self, name: str) -> Iterator[bytes]:
        """The member's uncompressed bytes in chunks (see the module docstring for the limits)."""
        try:
            info = self.zip.getinfo(name)
        except KeyError:
            raise ExtractError(f"part {name} is missing", "corrupt", self.format) from None
        if info.flag_bits & 0x1:
            raise ExtractError("password-protected (encrypted zip members)", "encrypted", self.format)
        declared = info.file_size
        if declared > MAX_MEMBER_BYTES or (declared > RATIO_FLOOR and declared > MAX_RATIO * max(1, info.compress_size)):
            raise ExtractError(
                f"zip bomb? part {name} expands {info.compress_size:,} bytes to {declared:,}", "bomb", self.format
            )
        if self.expanded + declared > MAX_TOTAL_BYTES:
            raise ExtractError(f"zip bomb? its parts expand to more than {MAX_TOTAL_BYTES >> 30} GiB", "bomb",
                               self.format)
        try:
            with self.zip.open(info) as f:
                while True:
                    b = f.read(CHUNK)
                    if not b:
                        break
                    self.expanded += len(b)
                    yield b
        except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError, NotImplementedError) as e:
            raise ExtractError(f"damaged zip part {name} ({e})", "corrupt", self.format) from e

    def read(self, name: str, limit: int = 16 << 20) -> bytes:
        """A small member whole (a manifest, relationships): at most ``limit`` bytes."""
        out = bytearray()
        for b in self.chunks(name):
            out += b
            if len(out) > limit:
                raise ExtractError(f"part {name} is larger than {limit >> 20} MiB", "too-large", self.format)
        return bytes(out)

    def parse(self, name: str, handler: XmlHandler) -> None:
        """Stream member ``name`` through ``handler`` (see :func:`parse_xml`)."""
        parse_xml(self.chunks(name), handler, self.format, name)


class XmlHandler:
    """Receives a part's elements: ``start(name, attrs)``, ``end(name)``, ``text(data)``; names are
    local names (namespace dropped), attribute names too.  ``depth`` is the current nesting."""

    depth = 0

    def start(self, name: str, attrs: dict[str, str]) -> None:
        pass

    def end(self, name: str) -> None:
        pass

    def text(self, data: str) -> None:
        pass


def _local(name: str) -> str:
    i = name.rfind(" ")
    return name if i < 0 else name[i + 1 :]


def parse_xml(chunks: Iterator[bytes], handler: XmlHandler, fmt: str = "", part: str = "") -> None:
    """Parse XML fed as ``chunks`` with expat, calling ``handler`` (see the module docstring)."""
    p = expat.ParserCreate(namespace_separator=" ")
    p.buffer_text = True
    p.buffer_size = 1 << 16
    where = f" in {part}" if part else ""

    def refuse(*_: Any) -> None:
        raise ExtractError(f"XML entity declarations{where} (refused: entity expansion)", "entities", fmt)

    # Local names by qualified name: a part repeats a few dozen names ~10^5 times (a 700 KB book as
    # DOCX: 132,000 elements; looking names up instead of cutting them made it ~1.4x faster).
    local: dict[str, str] = {}

    def name_of(name: str) -> str:
        got = local.get(name)
        if got is None:
            got = local[name] = _local(name)
        return got

    def start(name: str, attrs: dict[str, str]) -> None:
        handler.depth += 1
        if handler.depth > MAX_DEPTH:
            raise ExtractError(f"XML nested more than {MAX_DEPTH} levels deep{where}", "depth", fmt)
        handler.start(name_of(name), {name_of(k): v for k, v in attrs.items()} if attrs else attrs)

    def end(name: str) -> None:
        handler.depth -= 1
        handler.end(name_of(name))

    p.StartElementHandler = start
    p.EndElementHandler = end
    p.CharacterDataHandler = handler.text
    p.EntityDeclHandler = refuse
    p.UnparsedEntityDeclHandler = refuse
    # A reference to an entity expat does not know (declared in an external DTD it never reads)
    # is skipped, not fetched.
    p.SkippedEntityHandler = lambda name, is_param: None
    p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        for b in chunks:
            p.Parse(b, False)
        p.Parse(b"", True)
    except expat.ExpatError as e:
        raise ExtractError(f"damaged XML{where} ({expat.ErrorString(e.code)}, line {e.lineno})", "corrupt", fmt) from e
    except LookupError as e:  # an XML declaration naming an encoding Python does not know
        raise ExtractError(f"damaged XML{where} ({e})", "corrupt", fmt) from e
    except RecursionError as e:
        raise ExtractError(f"XML nested too deeply{where}", "depth", fmt) from e


def relationships(pkg: Package, rels_name: str) -> dict[str, str]:
    """An OOXML relationships part: id -> target part name (resolved against the source part's folder)."""
    if rels_name not in pkg.names:
        return {}
    base = rels_name.rsplit("_rels/", 1)[0]
    out: dict[str, str] = {}

    class H(XmlHandler):
        def start(self, name: str, attrs: dict[str, str]) -> None:
            if name == "Relationship" and attrs.get("TargetMode") != "External":
                out[attrs.get("Id", "")] = resolve(base, attrs.get("Target", ""))

    parse_xml(iter([pkg.read(rels_name)]), H(), pkg.format, rels_name)
    return out


def resolve(base: str, target: str) -> str:
    """A part name from a relationship target relative to folder ``base`` ("word/" + "media/a.png")."""
    if target.startswith("/"):
        parts: list[str] = []
        target = target[1:]
    else:
        parts = [p for p in base.split("/") if p]
    for seg in target.split("/"):
        if seg == "..":
            if parts:
                parts.pop()
        elif seg and seg != ".":
            parts.append(seg)
    return "/".join(parts)

