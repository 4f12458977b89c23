"""Text or binary, decoding, and normalisation to code-point units.

Decoding order (first that applies):
1. a byte-order mark: UTF-8-SIG, UTF-32 LE/BE, UTF-16 LE/BE;
2. UTF-16 without a BOM, recognised by NUL bytes on one parity only (ASCII-range text);
3. otherwise NUL or many control bytes in the sample: binary;
4. strict UTF-8 (the fast path; most text is UTF-8 or ASCII);
5. chardet on a sample (up to ``SAMPLE`` bytes); below ``MIN_CONFIDENCE``: binary.

If a later part of a large file fails to decode with the sampled encoding, the file is
decoded again from the start with a replacement policy (never a crash, never binary after
the fact); the encoding is then recorded with a ``+replace`` suffix.

Normalisation maps every code point through one table built once per process:
NFKD (compatibility forms: full-width, ligatures), case folding, combining marks dropped
(accents, and so composed/decomposed forms agree), format and control characters dropped,
punctuation, symbols and every kind of white space and line ending turned into a space;
runs of spaces collapsed to one, none at the start or end.  The result is a uint32 array of
code points that is the same for the same words in any encoding, line-ending style, line
wrapping, case or punctuation.  ``normalize_with_offsets`` also returns, for each unit, the
index of the character of the decoded text it came from (used to show matching passages).

The *light* form keeps case and punctuation and only unifies white space, line endings,
format characters and Unicode composition: its hash decides whether two files hold the
same text in a different encoding ("content" duplicates).
"""

from __future__ import annotations

import codecs
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

SAMPLE = 64 * 1024
MIN_CONFIDENCE = 0.5
_SPACE = 32
_BMP = 0x10000


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


def detect(sample: bytes) -> Detected:
    """Decide text or binary, and the encoding, from the first bytes of a file."""
    for bom, enc in _BOMS:
        if sample.startswith(bom):
            return Detected(True, enc, len(bom))
    if not sample:
        return Detected(True, "utf-8")
    arr = np.frombuffer(sample, dtype=np.uint8)
    nul = arr == 0
    if nul.any():
        enc = _utf16_without_bom(arr, nul)
        return Detected(True, enc) if enc else Detected(False, None)
    if np.count_nonzero(_CONTROL[arr]) * 100 > arr.size:  # >1% control bytes
        return Detected(False, None)
    try:
        sample.decode("utf-8")
        return Detected(True, "utf-8")
    except UnicodeDecodeError as e:
        # A sample cut inside a multi-byte sequence is still UTF-8.
        if e.start >= len(sample) - 3 and e.reason.startswith("unexpected end"):
            return Detected(True, "utf-8")
    import chardet  # imported lazily: only non-UTF-8 text pays for it

    guess = chardet.detect(sample)
    enc = guess.get("encoding")
    if not enc or (guess.get("confidence") or 0) < MIN_CONFIDENCE:
        return Detected(False, None)
    try:
        name = codecs.lookup(enc).name
    except LookupError:
        return Detected(False, None)
    if name == "ascii":  # chardet says ascii for bytes that failed UTF-8? be lenient
        name = "cp1252"
    return Detected(True, name)


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


class _Table:
    """Per-code-point mapping for the BMP: one output unit, none (0), or several."""

    def __init__(self, heavy: bool) -> None:
        single = np.zeros(_BMP, dtype=np.uint32)
        multi = np.zeros(_BMP, dtype=bool)
        expand: dict[int, tuple[int, ...]] = {}
        for cp in range(_BMP):
            out = _map_char(chr(cp), heavy) if not 0xD800 <= cp < 0xE000 else ""
            if len(out) == 1:
                single[cp] = ord(out)
            elif len(out) > 1:
                multi[cp] = True
                expand[cp] = tuple(ord(c) for c in out)
        self.single = single
        self.multi = multi
        self.expand = expand


def _map_char(ch: str, heavy: bool) -> str:
    cat = unicodedata.category(ch)
    if ch.isspace() or cat in ("Zs", "Zl", "Zp"):
        return " "
    if cat in ("Cc", "Cf", "Cs", "Co", "Cn"):
        return "" if cat in ("Cc", "Cf") else ch
    if not heavy:
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


_TABLES: dict[bool, _Table] = {}


def _table(heavy: bool) -> _Table:
    t = _TABLES.get(heavy)
    if t is None:
        t = _TABLES[heavy] = _Table(heavy)
    return t


def _astral(cp: np.ndarray, heavy: bool) -> list[tuple[int, ...]]:
    """Mappings of code points outside the BMP (rare: emoji, historic scripts)."""
    return [tuple(ord(c) for c in _map_char(chr(int(c)), heavy)) for c in cp]


def _map(units: np.ndarray, heavy: bool, want_offsets: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Apply the table; returns mapped units (0 = dropped) and source indices if asked."""
    t = _table(heavy)
    bmp = units < _BMP
    if bmp.all():
        idx = units
        mapped = t.single[idx]
        special = t.multi[idx]
    else:
        idx = np.where(bmp, units, 0)
        mapped = t.single[idx]
        mapped[~bmp] = units[~bmp]
        special = t.multi[idx] & bmp
        special |= ~bmp
    if not special.any():
        return mapped, (np.arange(units.size, dtype=np.int64) if want_offsets else None)
    # Some units map to zero or several units: expand them.
    pos = np.flatnonzero(special)
    reps: list[tuple[int, ...]] = []
    for p in pos.tolist():
        cp = int(units[p])
        reps.append(t.expand[cp] if cp < _BMP else _astral(np.array([cp]), heavy)[0])
    lengths = np.ones(units.size, dtype=np.int64)
    lengths[pos] = [len(r) for r in reps]
    src = np.repeat(np.arange(units.size, dtype=np.int64), lengths)
    out = np.repeat(mapped, lengths)
    starts = np.cumsum(lengths) - lengths
    flat = [c for r in reps for c in r]
    if flat:
        fill = np.concatenate([starts[p] + np.arange(len(r)) for p, r in zip(pos.tolist(), reps) if r])
        out[fill] = flat
    return out, (src if want_offsets else None)


class Normalizer:
    """Streams decoded text to normalised units, collapsing spaces across chunk borders."""

    def __init__(self, heavy: bool = True, offsets: bool = False) -> None:
        self.heavy = heavy
        self.offsets = offsets
        self._pending_space = False  # a space run seen after emitted text
        self._emitted = False
        self._consumed = 0  # characters of decoded text consumed so far

    def feed(self, text: str) -> tuple[np.ndarray, np.ndarray | None]:
        units = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        base = self._consumed
        self._consumed += units.size
        mapped, src = _map(units, self.heavy, self.offsets)
        keep = mapped != 0
        if not keep.all():
            mapped = mapped[keep]
            if src is not None:
                src = src[keep]
        if mapped.size == 0:
            return mapped.astype(np.uint32), (src if src is None else src + base)
        space = mapped == _SPACE
        nonspace = np.flatnonzero(~space)
        if nonspace.size == 0:
            self._pending_space = self._pending_space or (self._emitted and bool(space.any()))
            empty = np.empty(0, dtype=np.uint32)
            return empty, (None if src is None else np.empty(0, dtype=np.int64))
        # A non-space unit is preceded by one space when a space run lies before it in this
        # chunk (or was pending from the last) and some text was emitted before the run.
        before = np.zeros(nonspace.size, dtype=bool)
        before[1:] = np.diff(nonspace) > 1
        first = int(nonspace[0])
        before[0] = self._emitted and (first > 0 or self._pending_space)
        out_len = nonspace.size + int(np.count_nonzero(before))
        slots = np.arange(nonspace.size, dtype=np.int64) + np.cumsum(before)
        out = np.full(out_len, _SPACE, dtype=np.uint32)
        out[slots] = mapped[nonspace]
        out_src = None
        if src is not None:
            out_src = np.empty(out_len, dtype=np.int64)
            out_src[slots] = src[nonspace]
            # An inserted space stands for the white space just before the next word (or
            # for that word's first character when the run ended the previous chunk).
            word = nonspace[before]
            prev = np.where(word > 0, word - 1, word)
            out_src[slots[before] - 1] = src[prev]
            out_src += base
        self._emitted = True
        self._pending_space = bool(space[-1])
        return out, out_src


def normalize(text: str, heavy: bool = True) -> np.ndarray:
    """Normalised units of a whole string (see the module docstring)."""
    return Normalizer(heavy).feed(text)[0]


def normalize_with_offsets(text: str, heavy: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Normalised units and, per unit, the index in ``text`` of the character it came from."""
    units, src = Normalizer(heavy, offsets=True).feed(text)
    assert src is not None
    return units, src
