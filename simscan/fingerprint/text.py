"""Text or binary, decoding, and normalisation to code-point units.

Decoding order (first that applies):
1. a byte-order mark: UTF-8-SIG, UTF-32 LE/BE, UTF-16 LE/BE;
2. UTF-16 without a BOM, recognised by NUL bytes on one parity only (ASCII-range text);
3. otherwise NUL or many control bytes in the sample: binary;
4. strict UTF-8 (the fast path; most text is UTF-8 or ASCII);
5. chardet on a sample (up to ``SAMPLE`` bytes): its guess when it decodes the sample
   (chardet's confidence is low for short Latin-1 text, so it is not used to say binary),
   else cp1252, else Latin-1.  Binary is decided by NUL and control bytes (step 3).

If a later part of a large file fails to decode with the sampled encoding, the file is
decoded again from the start with a replacement policy (never a crash, never binary after
the fact); the encoding is then recorded with a ``+replace`` suffix.

Heavy normalisation (the fingerprint units) maps every code point through one table built
once per process: NFKD (compatibility forms: full-width, ligatures), case folding,
combining marks dropped (accents, and so composed/decomposed forms agree), format and
control characters dropped, punctuation, symbols and every kind of white space and line
ending turned into a space; then runs of spaces are collapsed to one, none at the start or
end.  The result is a sequence of code points that is the same for the same words in any
encoding, line-ending style, line wrapping, case or punctuation.
``normalize_with_offsets`` also returns, for each unit, the index of the character of the
decoded text it came from (a space stands for the first character of the run it replaces).

The *light* form keeps case, punctuation and accents and only unifies white space, line
endings and format/control characters (same collapsing rule): its XXH3-128 over UTF-8
(``content_hash``) decides whether two files hold the same text in another encoding,
line-ending style or wrapping ("content" duplicates).

Speed: most text is ASCII or nearly so (English with curly quotes, code).  For such a chunk
the few non-ASCII characters are mapped with the table (found in the chunk's UTF-8 bytes when
it came as UTF-8 and is large, else in its UTF-16 form), the rest is narrowed to bytes and
mapped with ``bytes.translate`` (a C loop), and space runs are collapsed with one numpy
boolean compress; only other text takes the general numpy path.  Both paths produce
identical units (tests compare them on random text).
"""

from __future__ import annotations

import codecs
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from simscan.fingerprint.rolling import sparse_flatnonzero

SAMPLE = 64 * 1024
_SPACE = 32
_BMP = 0x10000
#: Table entries with this bit set expand to several units (``_Table.expand``).
_MULTI = np.uint32(1 << 31)
#: The byte fast path is used when at most one unit in this many is non-ASCII.
_SPARSE = 8


@dataclass(frozen=True, slots=True)
class Detected:
    is_text: bool
    encoding: str | None  # Python codec name; None for binary
    bom_len: int = 0


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# Control bytes that text does not contain (everything below 0x20 but TAB LF VT FF CR ESC).
_CONTROL = np.zeros(256, dtype=bool)
_CONTROL[:32] = True
_CONTROL[[9, 10, 11, 12, 13, 27]] = False


def detect_decode(data: bytes) -> tuple[Detected, str | None]:
    """Detect and decode a whole (small) file: (detection, decoded text or None for
    binary); the encoding gets a ``+replace`` suffix when strict decoding failed.  The
    same result as :func:`detect` on the first ``SAMPLE`` bytes, then decoding."""
    det, decoded = _detect(data[:SAMPLE])
    if not det.is_text:
        return det, None
    if decoded is not None and len(data) <= SAMPLE:
        return det, decoded  # the sample was the whole file, already decoded by the detection
    assert det.encoding is not None
    body = data[det.bom_len :] if det.bom_len else data
    try:
        return det, body.decode(det.encoding)
    except UnicodeDecodeError:
        return Detected(True, det.encoding + "+replace", det.bom_len), body.decode(det.encoding, "replace")


def detect(sample: bytes) -> Detected:
    """Decide text or binary, and the encoding, from the first bytes of a file."""
    return _detect(sample)[0]


def _detect(sample: bytes) -> tuple[Detected, str | None]:
    """:func:`detect`, and ``sample`` decoded when the detection decoded all of it as UTF-8
    (without a BOM), so that a small file is not decoded twice (else None)."""
    for bom, enc in _BOMS:
        if sample.startswith(bom):
            return Detected(True, enc, len(bom)), None
    if not sample:
        return Detected(True, "utf-8"), ""
    if b"\0" in sample:
        arr = np.frombuffer(sample, dtype=np.uint8)
        enc = _utf16_without_bom(arr, arr == 0)
        return (Detected(True, enc) if enc else Detected(False, None)), None
    if b"\x1b" in sample and (b"\x1b$" in sample or b"\x1b(" in sample):
        # ISO-2022 (7-bit CJK: escape sequences, SO/SI shifts): only chardet can tell.
        det = _chardet(sample)
        if det.is_text and det.encoding and det.encoding.startswith("iso2022"):
            return det, None
    # More than 1% control bytes: binary (counted with one C pass: small files are common).
    if sample.translate(_CONTROL_MAP).count(0) * 100 > len(sample):
        return Detected(False, None), None
    if sample.isascii():
        return Detected(True, "utf-8"), None
    try:
        return Detected(True, "utf-8"), sample.decode("utf-8")
    except UnicodeDecodeError as e:
        # A sample cut inside a multi-byte sequence is still UTF-8.
        if e.start >= len(sample) - 3 and e.reason.startswith("unexpected end"):
            return Detected(True, "utf-8"), None
    return _chardet(sample), None


def _chardet(sample: bytes) -> Detected:
    import chardet  # imported lazily: only non-UTF-8 text pays for it

    # No NUL and few control bytes: text in some 8-bit or multi-byte encoding.  chardet's
    # confidence is often low for short Latin-1/cp1252 text, so its guess is used whenever it
    # decodes the sample, else cp1252 (the commonest legacy encoding), else Latin-1.
    guess = chardet.detect(sample)
    for enc in (guess.get("encoding"), "cp1252", "latin-1"):
        if not enc:
            continue
        try:
            name = codecs.lookup(enc).name
        except LookupError:
            continue
        if name == "ascii":  # chardet says ascii for bytes that failed UTF-8: be lenient
            name = "cp1252"
        try:
            codecs.getincrementaldecoder(name)().decode(sample)
        except UnicodeDecodeError:
            continue
        return Detected(True, name)
    return Detected(False, None)  # pragma: no cover - Latin-1 decodes every byte


# Control bytes to 0, every other byte to 1: counting zeros after one translate is cheaper
# than deleting most bytes.
_CONTROL_MAP = bytes((~_CONTROL).astype(np.uint8).tolist())


def _utf16_without_bom(arr: np.ndarray, nul: np.ndarray) -> str | None:
    n = arr.size - (arr.size % 2)
    if n < 4:
        return None
    even, odd = nul[:n:2], nul[1:n:2]
    half = n // 2
    # Mostly-Latin UTF-16: one byte of (nearly) every pair is NUL, the other almost never.
    if np.count_nonzero(odd) > 0.4 * half and np.count_nonzero(even) < 0.02 * half:
        return "utf-16-le"
    if np.count_nonzero(even) > 0.4 * half and np.count_nonzero(odd) < 0.02 * half:
        return "utf-16-be"
    return None


def utf8_pieces(chunks: Iterator[bytes]) -> Iterator[tuple[bytes, str]]:
    """Strict UTF-8 decoding of byte chunks into (bytes, text) pieces cut at character
    boundaries; raises UnicodeDecodeError on invalid or truncated input."""
    for piece in utf8_cut(chunks):
        yield piece, piece.decode("utf-8")


def utf8_cut(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Byte chunks re-cut at UTF-8 character borders (an incomplete trailing sequence is
    carried to the next chunk), NOT decoded: the caller validates or decodes each piece.
    Raises UnicodeDecodeError when the input ends inside a sequence."""
    carry = b""
    for chunk in chunks:
        data = carry + chunk if carry else bytes(chunk)
        cut = len(data)
        for back in range(1, min(4, len(data)) + 1):
            b = data[-back]
            if b < 0x80:
                break
            if b >= 0xC0:
                need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
                if need > back:
                    cut = len(data) - back
                break
        carry = data[cut:]
        if cut:
            yield data[:cut] if cut < len(data) else data
    if carry:
        carry.decode("utf-8")  # raises: truncated sequence at the end
        yield carry  # pragma: no cover - decode above raised


def decode_chunks(chunks: Iterator[bytes], encoding: str, errors: str = "strict") -> Iterator[str]:
    """Incrementally decode byte chunks; raises UnicodeDecodeError when ``errors='strict'``."""
    dec = codecs.getincrementaldecoder(encoding)(errors=errors)
    for chunk in chunks:
        text = dec.decode(chunk)
        if text:
            yield text
    tail = dec.decode(b"", final=True)
    if tail:
        yield tail


# --------------------------------------------------------------------------- tables


def _map_char(ch: str, heavy: bool) -> str:
    """The normalised form of one character (see the module docstring); '' = dropped."""
    cat = unicodedata.category(ch)
    if ch.isspace() or cat in ("Zs", "Zl", "Zp"):
        return " "
    if cat in ("Cc", "Cf"):
        return ""
    if cat in ("Cs", "Co", "Cn") or not heavy:
        return ch
    out = []
    for c in unicodedata.normalize("NFKD", ch).casefold():
        ccat = unicodedata.category(c)
        if ccat.startswith("M") or ccat in ("Cc", "Cf"):
            continue
        if ccat.startswith(("P", "S", "Z")) or c.isspace():
            out.append(" ")
        else:
            out.append(c)
    return "".join(out)


class _Table:
    """Per-code-point mapping of the BMP in one uint32 array.

    ``code[cp]`` is the single output unit, 0 when the character is dropped, or ``_MULTI``
    (flag bit) when it expands to several units, listed in ``expand``.  ``ascii_map`` and
    ``ascii_drop`` are the same mapping for the byte fast path (``bytes.translate``);
    bytes 128..255 map to themselves there, so UTF-8 multi-byte sequences pass unchanged.
    """

    def __init__(self, heavy: bool) -> None:
        code = np.zeros(_BMP, dtype=np.uint32)
        expand: dict[int, tuple[int, ...]] = {}
        for cp in range(_BMP):
            out = _map_char(chr(cp), heavy)
            if len(out) == 1:
                code[cp] = ord(out)
            elif len(out) > 1:
                code[cp] = _MULTI
                expand[cp] = tuple(ord(c) for c in out)
        self.heavy = heavy
        self.code = code
        self.expand = expand
        amap = bytearray(range(256))
        drop = bytearray()
        for b in range(128):
            v = int(code[b])
            assert v < 128, "ASCII maps to ASCII"
            if v == 0:
                drop.append(b)
            else:
                amap[b] = v
        self.ascii_map = bytes(amap)
        self.ascii_drop = bytes(drop)
        assert 0 in self.ascii_drop, "NUL is dropped (the UTF-8 fast path blanks continuation bytes to NUL)"
        # The light byte map only turns bytes up to the space into a space and drops a few
        # controls (every other byte is itself): then it is ``max(byte, 32)`` on text free of
        # the dropped bytes, which :func:`_light_collapse` uses.  Dropped bytes as ranges.
        drops = sorted(self.ascii_drop)
        self.drop_ranges = [(d, d) for d in drops]
        for i in range(len(self.drop_ranges) - 1, 0, -1):
            (a0, a1), (b0, b1) = self.drop_ranges[i - 1], self.drop_ranges[i]
            if b0 == a1 + 1:
                self.drop_ranges[i - 1 : i + 1] = [(a0, b1)]
        self.max_space = all(
            b in self.ascii_drop or amap[b] == max(_SPACE, b) for b in range(256)
        ) and all(d <= _SPACE or d == 127 for d in drops)
        # Mapping an already mapped ASCII unit again must not change it (the fast path maps
        # the non-ASCII characters first, then everything through ascii_map).
        for b in range(1, 128):
            v = int(code[b])
            assert v == 0 or int(code[v]) == v


_TABLES: dict[bool, _Table] = {}


def _table(heavy: bool) -> _Table:
    t = _TABLES.get(heavy)
    if t is None:
        t = _TABLES[heavy] = _Table(heavy)
    return t


def _collapse_bytes(b: bytes) -> np.ndarray:
    """Runs of spaces to one space, as a uint8 array (one boolean compress; most text has
    some double spaces, e.g. every CR LF and every punctuation mark followed by a space)."""
    a = np.frombuffer(b, dtype=np.uint8)
    if b"  " not in b:
        return a
    keep = np.empty(a.size, dtype=bool)
    keep[0] = True
    sp = a == _SPACE
    np.logical_and(sp[1:], sp[:-1], out=keep[1:])
    np.logical_not(keep[1:], out=keep[1:])
    return a[keep]


def _map_general(units: np.ndarray, t: _Table, want_src: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Table mapping of code points (uint16 without surrogates, or uint32), expansions
    applied, dropped units removed and space runs collapsed.  Returns (uint32 units,
    source index per unit or None)."""
    n = units.size
    if units.dtype == np.uint16:
        mapped = t.code.take(units)
        special_mask = mapped >= _MULTI
    else:
        astral = units >= _BMP
        if astral.any():
            mapped = t.code.take(np.where(astral, 0, units))
            mapped[astral] = _MULTI
        else:
            mapped = t.code.take(units)
        special_mask = mapped >= _MULTI
    src = np.arange(n, dtype=np.int64) if want_src else None
    if special_mask.any():
        pos = np.flatnonzero(special_mask)
        reps: list[tuple[int, ...]] = []
        for cp in units[pos].tolist():
            if cp < _BMP:
                reps.append(t.expand[cp])
            else:
                reps.append(tuple(ord(c) for c in _map_char(chr(cp), t.heavy)))
        lengths = np.ones(n, dtype=np.int64)
        lengths[pos] = [len(r) for r in reps]
        mapped = np.repeat(mapped, lengths)
        if src is not None:
            src = np.repeat(src, lengths)
        starts = np.cumsum(lengths) - lengths
        flat = [c for r in reps for c in r]
        if flat:
            fill = np.concatenate([starts[p] + np.arange(len(r)) for p, r in zip(pos.tolist(), reps) if r])
            mapped[fill] = flat
        # Expansions to nothing leave their (repeated zero times) slot out already.
    keep = mapped != 0
    if not keep.all():
        mapped = mapped[keep]
        if src is not None:
            src = src[keep]
    sp = mapped == _SPACE
    dup = sp[1:] & sp[:-1]
    if dup.any():
        keep = np.ones(mapped.size, dtype=bool)
        keep[1:] = ~dup
        mapped = mapped[keep]
        if src is not None:
            src = src[keep]
    return mapped, src


def _code_points(text: str, u16: np.ndarray | None = None) -> np.ndarray:
    """The code points of ``text``: uint16 when it has no surrogates (astral characters),
    else uint32."""
    if u16 is None:
        u16 = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    if ((u16 >= 0xD800) & (u16 < 0xE000)).any():
        return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return u16


def _sparse_non_ascii(text: str) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray | None]:
    """(UTF-16 units, positions of the non-ASCII ones, their values, None)."""
    u16 = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype=np.uint16)
    hi = np.flatnonzero(u16 >= 128)
    return u16, hi, u16[hi], None


def _sparse_utf8(text: str, raw: bytes) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`_sparse_non_ascii` read from ``raw``, the exact UTF-8 bytes of ``text``: (None,
    positions in ``raw`` of the non-ASCII characters' lead bytes, their code points, positions
    of their continuation bytes).  One byte compare and a sparse nonzero instead of a UTF-16
    encoding of the whole piece (~0.3 ns a byte cheaper).  A piece with a character outside
    the BMP (a 4-byte sequence) takes the UTF-16 form, whose surrogates send it down the
    general path as before."""
    return _sparse_utf8_valid(raw) or _sparse_non_ascii(text)


def _dense_utf8(raw: bytes) -> bool:
    """Whether the UTF-8 bytes ``raw`` certainly hold too many non-ASCII characters for the byte
    fast path (:func:`_fast_bytes`: more than 1 in :data:`_SPARSE`): one compare, before the
    sparse arrays are built for nothing (Cyrillic, Greek, CJK text took 1.8x as long)."""
    return int(np.count_nonzero(np.frombuffer(raw, dtype=np.uint8) >= 0xC0)) * _SPARSE > len(raw)


def _sparse_utf8_valid(raw: bytes) -> tuple[None, np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_sparse_utf8` of bytes not yet decoded, or None unless ``raw`` is certainly
    well-formed UTF-8 made of 1- to 3-byte sequences (then it decodes strictly, and the
    caller may skip decoding it: ~0.4 ns a byte).  Checked on the non-ASCII bytes only:
    each lead byte C2..EF is followed by exactly its continuation bytes (the next entries,
    at the next positions), no continuation byte is left over, and the second byte after
    E0 is A0..BF (no overlong form), after ED 80..9F (no surrogate): the well-formed
    sequences of the Unicode standard (table 3-7) below U+10000, which is what Python's
    strict decoder accepts.  Anything else (4-byte sequences included) gives None."""
    a = np.frombuffer(raw, dtype=np.uint8)
    hi = np.flatnonzero(a >= 0x80)
    if hi.size == 0:
        return None
    b = a[hi]
    li = np.flatnonzero(b >= 0xC0)  # entries of hi that are lead bytes
    if li.size == 0:
        return None
    b0 = b[li].astype(np.uint32)
    if int(b0.min()) < 0xC2 or int(b0.max()) >= 0xF0:
        return None
    three = np.flatnonzero(b0 >= 0xE0)
    if hi.size != 2 * li.size + three.size or int(li[-1]) + 1 >= hi.size:
        return None
    lead = hi[li]
    # The entry after each lead is the next byte, a continuation (not a lead); with the
    # count above, every continuation byte then belongs to exactly one lead.
    if not (bool((hi[li + 1] == lead + 1).all()) and bool((b[li + 1] < 0xC0).all())):
        return None
    b1 = b[li + 1].astype(np.uint32)
    cp = ((b0 & 0x1F) << 6) | (b1 & 0x3F)
    cont = lead + 1
    if three.size:
        l3 = li[three]
        if int(l3[-1]) + 2 >= hi.size:
            return None
        if not (bool((hi[l3 + 2] == hi[l3] + 2).all()) and bool((b[l3 + 2] < 0xC0).all())):
            return None
        t0, t1 = b0[three], b1[three]
        if bool(((t0 == 0xE0) & (t1 < 0xA0)).any()) or bool(((t0 == 0xED) & (t1 >= 0xA0)).any()):
            return None
        cp[three] = ((t0 & 0x0F) << 12) | ((t1 & 0x3F) << 6) | (b[l3 + 2].astype(np.uint32) & 0x3F)
        cont = np.concatenate((cont, hi[l3] + 2))
    return None, lead, cp, cont


def _fast_bytes(
    text: str | None, t: _Table, sparse: tuple | None, raw: bytes | None = None, translate: bool = True
) -> bytes | None:
    """The byte fast path: ``text`` mapped through the table, not yet collapsed (heavy:
    ASCII code points; light: UTF-8), or None when the text needs the general path.
    ``raw``: the UTF-8 bytes of ``text`` when at hand (saves encoding it again);
    ``sparse``: :func:`_sparse_non_ascii` or, with ``raw``, :func:`_sparse_utf8`.  ``text``
    may be None when ``raw`` is given with its :func:`_sparse_utf8_valid` (or is ASCII).
    ``translate=False`` (light table): the bytes before the final translate."""
    if sparse is None and (raw.isascii() if text is None else text.isascii()):
        b = raw if raw is not None else text.encode("ascii")
        return b.translate(t.ascii_map, t.ascii_drop) if translate else b
    u16, hi, vals, cont = sparse if sparse is not None else _sparse_non_ascii(text)
    if u16 is None:
        chars = len(raw) - cont.size if text is None else len(text)
    else:
        chars = u16.size
    if hi.size * _SPARSE > chars:
        return None
    m = t.code.take(vals)
    # Fast only when every non-ASCII character maps to one ASCII unit (or none), for the
    # light form to itself or to a few kinds of space/format character.
    if t.heavy:
        if not bool((m < 128).all()):
            return None
        if u16 is None:
            # In the UTF-8 bytes: the lead byte becomes the unit, the continuation bytes NUL,
            # which the table drops (a control character).  Edited in a bytearray, which
            # translates without another copy.
            assert raw is not None and cont is not None
            buf = bytearray(raw)
            narrow = np.frombuffer(buf, dtype=np.uint8)
            narrow[cont] = 0
            narrow[hi] = m
            return buf.translate(t.ascii_map, t.ascii_drop)  # type: ignore[return-value]
        narrow = u16.astype(np.uint8)
        narrow[hi] = m
        return narrow.tobytes().translate(t.ascii_map, t.ascii_drop)
    changed = vals[m != vals]
    kinds = np.unique(changed) if changed.size else changed
    if kinds.size > 4 or ((kinds >= 0xD800) & (kinds < 0xE000)).any():
        return None
    if raw is not None:
        b = raw
        for cp in kinds.tolist():
            rep = int(t.code[cp])
            b = b.replace(chr(cp).encode("utf-8"), chr(rep).encode("utf-8") if rep else b"")
    else:
        for cp in kinds.tolist():
            rep = int(t.code[cp])
            text = text.replace(chr(cp), chr(rep) if rep else "")
        b = text.encode("utf-8")
    return b.translate(t.ascii_map, t.ascii_drop) if translate else b


def _sparse(text: str, raw: bytes | None) -> tuple | None:
    """The non-ASCII characters of ``text`` for :func:`_fast_bytes` (None: all ASCII): read from
    the UTF-8 bytes when at hand and the piece is large (its dozen numpy calls cost more than
    the UTF-16 encoding they save below ~50 KB: 8 KB files in a batch were 9 % slower)."""
    if text.isascii():
        return None
    if raw is not None and len(raw) >= _UTF8_SPARSE_MIN and not _dense_utf8(raw):
        return _sparse_utf8(text, raw)
    return _sparse_non_ascii(text)


#: From this many bytes a piece's non-ASCII characters are found in its UTF-8 bytes.
_UTF8_SPARSE_MIN = 1 << 16


_SPACES = np.full(0, _SPACE, dtype=np.uint8)


def _spaces(n: int) -> np.ndarray:
    """n spaces (a read-only view of a shared array, grown on demand and never written)."""
    global _SPACES
    if _SPACES.size < n:
        _SPACES = np.full(max(n, 1 << 20), _SPACE, dtype=np.uint8)
    return _SPACES[:n]


def _light_bytes_only(a: np.ndarray, nuls: int, t: _Table) -> bool:
    """Whether ``a`` (uint8) holds no byte the light table ``t`` drops, but for ``nuls`` NULs."""
    for lo, hi in t.drop_ranges:
        if lo == hi:
            hit = a == lo
        elif lo == 0:
            hit = a <= hi
        else:
            hit = np.subtract(a, np.uint8(lo), dtype=np.uint8) <= np.uint8(hi - lo)
        if np.count_nonzero(hit) > (nuls if lo == 0 else 0):
            return False
    return True


def _light_collapse(b: bytes | bytearray, t: _Table) -> np.ndarray | None:
    """``_collapse_bytes(b.translate(t.ascii_map, t.ascii_drop))`` for the light table
    (``t.max_space``) when ``b`` holds none of the bytes it drops (else None): runs of bytes
    up to the space are collapsed in the raw bytes, then each kept one becomes a space with
    one ``maximum`` against an array of spaces (numpy's uint8 maximum with a scalar is 12x
    slower).  Saves the translate pass, ~0.2 ns a byte net of the dropped-byte check."""
    a = np.frombuffer(b, dtype=np.uint8)
    n = a.size
    if not _light_bytes_only(a, 0, t):
        return None
    if n == 0:
        return a
    low = a <= _SPACE
    keep = np.empty(n, dtype=bool)
    keep[0] = True
    np.logical_and(low[1:], low[:-1], out=keep[1:])
    np.logical_not(keep[1:], out=keep[1:])
    c = a[keep]
    np.maximum(c, _spaces(c.size), out=c)
    return c


def _light_source(text: str | None, t: _Table, sparse: tuple | None, raw: bytes | None) -> bytes | None:
    """For the light table: the bytes :func:`_fast_bytes` would translate, or None (general path)."""
    return _fast_bytes(text, t, sparse, raw, translate=False)


def _map_fast(text: str, t: _Table, sparse: tuple | None, raw: bytes | None = None) -> tuple[np.ndarray, None]:
    """Mapped and collapsed units of ``text`` (not joined): uint8 from the byte fast path
    (heavy: ASCII code points; light: UTF-8), else uint32 code points from numpy."""
    if not t.heavy and t.max_space:
        src = _light_source(text, t, sparse, raw)
        if src is not None:
            c = _light_collapse(src, t)
            return (c if c is not None else _collapse_bytes(src.translate(t.ascii_map, t.ascii_drop))), None
    else:
        b = _fast_bytes(text, t, sparse, raw)
        if b is not None:
            return _collapse_bytes(b), None
    u16 = sparse[0] if sparse is not None else None
    mapped, _ = _map_general(_code_points(text, u16), t, False)
    return mapped, None


def fast_pair_bytes(text: str, raw: bytes | None = None) -> tuple[bytes, bytes] | None:
    """(heavy, light) byte fast-path forms of a whole text, each stripped of spaces at both
    ends but not yet collapsed (see :func:`collapse_many`), or None when the text needs
    the general path.  ``raw``: its UTF-8 bytes, when at hand.  The light form is not yet
    translated either (``collapse_many(..., light=True)`` maps it, see :func:`_light_collapse`):
    stripped of every byte up to the space, which is the same as translating and then
    stripping spaces whenever the text holds no byte the light table drops (and
    ``collapse_many`` translates the pieces of a group that holds one)."""
    sparse = _sparse(text, raw)
    h = _fast_bytes(text, _table(True), sparse, raw)
    if h is None:
        return None
    light = _fast_bytes(text, _table(False), sparse, raw, translate=False)
    if light is None:
        return None
    return h.strip(b" "), light.strip(_LOW_BYTES)


_LOW_BYTES = bytes(range(_SPACE + 1))


def collapse_many(
    pieces: list[bytes], group_bytes: int = 1 << 18, light: bool = False
) -> tuple[list[np.ndarray], np.ndarray]:
    """Collapse the space runs of many stripped pieces with a few numpy passes per group
    of about ``group_bytes`` (cache-sized: big fresh arrays cost page faults).

    Returns (parts, lengths): the collapsed pieces concatenated, as a list of uint8 arrays
    (one per group, in order), and the length of each piece.  A group's pieces are joined
    with NUL (never present after mapping), so a run never spans two pieces, and the NULs
    are dropped in the same compress.  ``light``: the pieces are light forms not yet
    translated (:func:`fast_pair_bytes`): runs of bytes up to the space are collapsed and
    mapped to a space as in :func:`_light_collapse`; a group holding a byte the light table
    drops (a NUL other than the separators included) is translated piece by piece first.
    """
    lt = _table(False)
    if light and not lt.max_space:  # pragma: no cover - the light table has this form
        pieces = [p.translate(lt.ascii_map, lt.ascii_drop).strip(b" ") for p in pieces]
        light = False
    pieces = list(pieces)
    sizes = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
    lengths = sizes.copy()
    parts: list[np.ndarray] = []
    bounds = np.searchsorted(
        np.cumsum(sizes + 1), np.arange(group_bytes, int(sizes.sum()) + len(pieces) + group_bytes, group_bytes)
    )
    first = 0
    for last in [*np.unique(bounds + 1).tolist(), len(pieces)]:
        last = min(last, len(pieces))
        if last <= first:
            continue
        group = pieces[first:last]
        a = np.frombuffer(b"\0".join(group), dtype=np.uint8)
        shortcut = light and a.size > 0
        if shortcut and not _light_bytes_only(a, last - first - 1, lt):
            group = pieces[first:last] = [p.translate(lt.ascii_map, lt.ascii_drop).strip(b" ") for p in group]
            sizes[first:last] = lengths[first:last] = [len(p) for p in group]
            a = np.frombuffer(b"\0".join(group), dtype=np.uint8)
            shortcut = False
        if a.size:
            if shortcut:
                # Bytes 1..32 (the NUL separators excluded) all become a space.
                sp = np.subtract(a, np.uint8(1), dtype=np.uint8) < _SPACE
            else:
                sp = a == _SPACE
            # ~5 % of heavy bytes (each punctuation mark before a space): see sparse_flatnonzero.
            dup = sparse_flatnonzero(sp[1:] & sp[:-1], 0.05) + 1
            keep = a != 0
            keep[dup] = False
            out = a[keep]
            if shortcut:
                np.maximum(out, _spaces(out.size), out=out)
            parts.append(out)
            if dup.size:
                starts = np.zeros(last - first, dtype=np.int64)
                starts[1:] = np.cumsum(sizes[first : last - 1] + 1)
                lengths[first:last] -= np.bincount(
                    np.searchsorted(starts, dup, side="right") - 1, minlength=last - first
                )
        first = last
    return parts, lengths


_EMPTY8 = np.empty(0, dtype=np.uint8)


class Normalizer:
    """Streams decoded text to normalised units, collapsing spaces across chunk borders.

    ``feed(text)`` returns (units, src): units uint8 (fast path, all < 128) or uint32 code
    points; src the index in the whole text fed so far of each unit's source character
    (only with ``offsets=True``, else None).  ``feed_utf8`` returns the same units encoded
    as UTF-8 bytes (used for the content hash).
    """

    def __init__(self, heavy: bool = True, offsets: bool = False) -> None:
        self.heavy = heavy
        self.offsets = offsets
        self.t = _table(heavy)
        self._pending = False  # a space run seen after emitted text, not yet output
        self._pending_src = 0
        self._emitted = False
        self._consumed = 0  # characters of decoded text consumed so far

    # -- the two mapping paths -------------------------------------------------------

    def _map(self, text: str) -> tuple[np.ndarray, np.ndarray | None]:
        """Units of one piece, collapsed but not yet joined to the previous piece."""
        if not self.offsets:
            return _map_fast(text, self.t, None)
        return _map_general(_code_points(text), self.t, True)

    # -- joining pieces ----------------------------------------------------------------

    def feed(self, text: str) -> tuple[np.ndarray, np.ndarray | None]:
        mapped, src = self._map(text)
        base = self._consumed
        self._consumed += len(text)
        if src is None and mapped.dtype == np.uint8:
            joined = self._join_u8(mapped)
            if not self.heavy and joined.size and int(joined.max()) >= 128:
                # The light fast path yields UTF-8: back to code points.
                wide = joined.tobytes().decode("utf-8", "surrogatepass").encode("utf-32-le", "surrogatepass")
                return np.frombuffer(wide, dtype="<u4"), None
            return joined, None
        return self._join_array(mapped, src, base)

    def feed_utf8(self, text: str) -> bytes | np.ndarray:
        """The normalised units of ``text`` as UTF-8 (bytes-like; no offsets)."""
        mapped, _ = self._map(text)
        self._consumed += len(text)
        if mapped.dtype == np.uint8:
            return self._join_u8(mapped)
        out, _ = self._join_array(mapped, None, 0)
        return (
            out.astype("<u4", copy=False)
            .tobytes()
            .decode("utf-32-le", "surrogatepass")
            .encode("utf-8", "surrogatepass")
        )

    def _join_u8(self, b: np.ndarray) -> np.ndarray:
        """Join a collapsed uint8 piece to what came before (one space between, none at the
        start or end of the whole text)."""
        n = b.size
        if n == 0:
            return b
        lead = b[0] == _SPACE
        trail = b[-1] == _SPACE
        if n == 1 and lead:
            self._pending = self._pending or self._emitted
            return b[:0]
        need = self._emitted and (self._pending or lead)
        end = n - 1 if trail else n
        if need:
            if lead:
                out = b[:end]
            else:
                out = np.empty(end + 1, dtype=np.uint8)
                out[0] = _SPACE
                out[1:] = b[:end]
        else:
            out = b[1:end] if lead else b[:end]
        self._emitted = True
        self._pending = bool(trail)
        return out

    def _join_array(self, m: np.ndarray, src: np.ndarray | None, base: int) -> tuple[np.ndarray, np.ndarray | None]:
        n = m.size
        if n == 0:
            return m.astype(np.uint32, copy=False), (None if src is None else src)
        lead = bool(m[0] == _SPACE)
        trail = bool(m[-1] == _SPACE)
        if n == 1 and lead:
            if not self._pending and self._emitted and src is not None:
                self._pending_src = int(src[0]) + base
            self._pending = self._pending or self._emitted
            return m[:0], (None if src is None else src[:0])
        need = self._emitted and (self._pending or lead)
        end = n - 1 if trail else n
        if need and lead:
            out, osrc = m[:end], (None if src is None else src[:end] + base)
            if src is not None and self._pending:
                osrc[0] = self._pending_src
        elif need:
            out = np.empty(end + 1, dtype=m.dtype)
            out[0] = _SPACE
            out[1:] = m[:end]
            osrc = None
            if src is not None:
                osrc = np.empty(end + 1, dtype=np.int64)
                osrc[0] = self._pending_src
                osrc[1:] = src[:end] + base
        else:
            out, osrc = m[int(lead) : end], (None if src is None else src[int(lead) : end] + base)
        self._emitted = True
        self._pending = trail
        if trail and src is not None:
            self._pending_src = int(src[-1]) + base
        return out, osrc


def normalize(text: str, heavy: bool = True) -> np.ndarray:
    """Normalised units (uint32 code points) of a whole string (see the module docstring)."""
    return Normalizer(heavy).feed(text)[0].astype(np.uint32)


def normalize_with_offsets(text: str, heavy: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Normalised units (uint32) and, per unit, the index in ``text`` of its source character."""
    units, src = Normalizer(heavy, offsets=True).feed(text)
    assert src is not None
    return units.astype(np.uint32, copy=False), src


class PairNormalizer:
    """Heavy units and light UTF-8 of the same stream at once (shares the decoding work)."""

    def __init__(self) -> None:
        self.heavy = Normalizer(True)
        self.light = Normalizer(False)

    def feed(self, text: str, raw: bytes | None = None) -> tuple[np.ndarray, bytes | np.ndarray]:
        """(heavy units, light form as UTF-8 bytes-like) of the next piece; ``raw``: the
        piece's exact UTF-8 bytes, when at hand."""
        sparse = _sparse(text, raw)
        hm, _ = _map_fast(text, self.heavy.t, sparse, raw)
        lm, _ = _map_fast(text, self.light.t, sparse, raw)
        units = self.heavy._join_u8(hm) if hm.dtype == np.uint8 else self.heavy._join_array(hm, None, 0)[0]
        if lm.dtype == np.uint8:
            light = self.light._join_u8(lm)
        else:
            out, _ = self.light._join_array(lm, None, 0)
            light = (
                out.astype("<u4", copy=False)
                .tobytes()
                .decode("utf-32-le", "surrogatepass")
                .encode("utf-8", "surrogatepass")
            )
        return units, light

    def feed_bytes(self, raw: bytes) -> tuple[np.ndarray, bytes | np.ndarray, int] | None:
        """:meth:`feed` of a piece given only as bytes (cut at a character border) that may
        not be UTF-8: (units, light, characters), or None, with nothing consumed, unless the
        piece is certainly valid UTF-8 and takes the byte fast path (then it need not be
        decoded at all).  Only large pieces are checked (``_UTF8_SPARSE_MIN``): the check's
        numpy calls cost more than a small piece's decoding."""
        if raw.isascii():
            sparse, chars = None, len(raw)
        elif len(raw) < _UTF8_SPARSE_MIN or _dense_utf8(raw):
            return None
        else:
            sparse = _sparse_utf8_valid(raw)
            if sparse is None:
                return None
            chars = len(raw) - sparse[3].size
        hb = _fast_bytes(None, self.heavy.t, sparse, raw)  # type: ignore[arg-type]
        if hb is None:
            return None
        lt = self.light.t
        lb = _fast_bytes(None, lt, sparse, raw, translate=not lt.max_space)  # type: ignore[arg-type]
        if lb is None:
            return None
        lc = _light_collapse(lb, lt) if lt.max_space else None
        if lc is None:
            lc = _collapse_bytes(lb.translate(lt.ascii_map, lt.ascii_drop) if lt.max_space else lb)
        return self.heavy._join_u8(_collapse_bytes(hb)), self.light._join_u8(lc), chars


def normalize_code_points(cp: np.ndarray) -> np.ndarray:
    """:func:`normalize` of a text given as code points (uint32, no surrogates): the same units
    without a round trip through ``str`` (the code view builds its text as an array)."""
    mapped, _ = _map_general(np.asarray(cp, dtype=np.uint32), _table(True), False)
    lo = 1 if mapped.size and mapped[0] == _SPACE else 0
    hi = mapped.size - 1 if mapped.size > lo and mapped[-1] == _SPACE else mapped.size
    return mapped[lo:hi]
