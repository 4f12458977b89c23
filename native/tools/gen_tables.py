"""Generate ``native/core/data/unicode.bin``: the character tables of simscan's native core.

Run with CPython 3.11 (Unicode 14.0, the tables the fingerprints were defined with)::

    python native/tools/gen_tables.py

The tables are data, not code: each entry is what a few lines of ``unicodedata`` say about one code
point, so the native core needs no Unicode library of its own and its results cannot drift with a
crate's Unicode version.  ``tests/test_native_tables.py`` checks every entry against this interpreter.

Contents (little-endian):

* header: ``b"SSUT"``, format version (u32), the Unicode version as 8 ASCII bytes;
* two *maps* (heavy, then light: the fingerprint units and the content-hash form), each:
  u32 block size (128), u32 number of blocks, u32 pool length, then ``stage1`` (u16 per block of
  code points, 0x110000 / 128 of them), ``stage2`` (u32 per entry, blocks of 128), ``pool`` (u32).
  An entry is ``DROP`` (0xFFFFFFFF), ``SPACE`` (0xFFFFFFFE), a *multi* entry (top bit set: bits
  24..30 the length, bits 0..23 the offset into the pool of the output code points), or a single
  output code point as ``output - cp + 0x40000000`` (top bit clear: identity blocks are all alike);
* three bit sets over the BMP (8 KiB each): word characters (``str.isalnum()`` or ``_``, no
  surrogates), digits (``str.isdigit()``), white space as ``re``'s ``\\s`` matches it; then the
  code points above the BMP that ``re``'s ``\\w`` matches, as a u32 count of ranges and the ranges
  (start, end exclusive);
* the single-byte codecs of this interpreter: u32 count, then per codec a length-prefixed name
  (``codecs.lookup(name).name``) and 256 u32 code points (0xFFFFFFFF: undefined byte).
"""

from __future__ import annotations

import codecs
import encodings
import os
import pkgutil
import re
import struct
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "native" / "core" / "data" / "unicode.bin"
# The definition of normalisation is the tests' reference's (plain Python, one character at a time).
sys.path.insert(0, str(ROOT / "tests"))
from reference_fingerprint import map_char  # noqa: E402
MAX_CP = 0x110000
BLOCK = 128
DROP = 0xFFFFFFFF
SPACE = 0xFFFFFFFE
BIAS = 0x40000000


def build_map(heavy: bool) -> bytes:
    pool: list[int] = []
    pool_at: dict[tuple[int, ...], int] = {}
    entries = []
    for cp in range(MAX_CP):
        out = map_char(chr(cp), heavy)
        if out == "":
            entries.append(DROP)
        elif out == " ":
            entries.append(SPACE)
        elif len(out) == 1:
            entries.append(ord(out) - cp + BIAS)
        else:
            key = tuple(map(ord, out))
            assert len(key) < 127
            at = pool_at.get(key)
            if at is None:
                at = pool_at[key] = len(pool)
                pool.extend(key)
            assert at < 1 << 24
            entries.append(0x80000000 | (len(key) << 24) | at)
    blocks: dict[tuple[int, ...], int] = {}
    stage1 = []
    stage2: list[int] = []
    for b in range(MAX_CP // BLOCK):
        key = tuple(entries[b * BLOCK : (b + 1) * BLOCK])
        idx = blocks.get(key)
        if idx is None:
            idx = blocks[key] = len(blocks)
            stage2.extend(key)
        stage1.append(idx)
    assert len(blocks) < 1 << 16
    return (
        struct.pack("<III", BLOCK, len(blocks), len(pool))
        + struct.pack(f"<{len(stage1)}H", *stage1)
        + struct.pack(f"<{len(stage2)}I", *stage2)
        + struct.pack(f"<{len(pool)}I", *pool)
    )


def bitset(pred) -> bytes:
    bits = bytearray(0x10000 // 8)
    for cp in range(0x10000):
        if pred(cp):
            bits[cp >> 3] |= 1 << (cp & 7)
    return bytes(bits)


def is_word(cp: int) -> bool:
    if 0xD800 <= cp < 0xE000:
        return False
    c = chr(cp)
    return c.isalnum() or c == "_"


_SPACE_RE = re.compile(r"\s")
_WORD_RE = re.compile(r"\w")


def astral_word_ranges() -> list[tuple[int, int]]:
    """Ranges of code points above the BMP that ``re``'s ``\\w`` matches."""
    out: list[tuple[int, int]] = []
    for cp in range(0x10000, MAX_CP):
        if _WORD_RE.match(chr(cp)):
            if out and out[-1][1] == cp:
                out[-1] = (out[-1][0], cp + 1)
            else:
                out.append((cp, cp + 1))
    return out


def single_byte_codecs() -> list[tuple[str, list[int]]]:
    """Every stateless codec of this interpreter that maps each byte to at most one character."""
    names = {m.name for m in pkgutil.iter_modules(encodings.__path__)} | {"latin_1"}
    out: dict[str, list[int]] = {}
    for mod in sorted(names):
        try:
            info = codecs.lookup(mod)
        except LookupError:
            continue
        name = info.name
        if name in out:
            continue
        table = []
        ok = True
        for b in range(256):
            try:
                s = bytes([b]).decode(name)
            except UnicodeDecodeError:
                table.append(DROP)
                continue
            except Exception:  # noqa: BLE001 - not a plain byte codec (base64, rot13, ...)
                ok = False
                break
            if len(s) != 1:
                ok = False
                break
            table.append(ord(s))
        if not ok:
            continue
        # A single-byte codec decodes any string byte by byte: check it on every byte at once,
        # and reject stateful or multi-byte codecs that happen to decode lone bytes.
        data = bytes(b for b in range(256) if table[b] != DROP)
        try:
            whole = data.decode(name)
        except Exception:  # noqa: BLE001
            continue
        if [ord(c) for c in whole] != [table[b] for b in data]:
            continue
        if name.startswith(("utf", "mbcs", "oem", "idna", "punycode", "raw", "unicode", "undefined", "charmap")):
            continue
        if "2022" in name or name == "hz":  # stateful: escape sequences switch the character set
            continue
        # Each byte alone: an undefined byte replaced by itself, never the lead of a longer sequence.
        chars = ["\ufffd" if t == DROP else chr(t) for t in table]
        if any(
            bytes((a, b)).decode(name, "replace") != chars[a] + chars[b] for a in range(256) for b in range(256)
        ):
            continue
        out[name] = table
    return sorted(out.items())


def main() -> None:
    if sys.version_info[:2] != (3, 11):
        sys.exit("generate the tables with CPython 3.11 (Unicode 14.0)")
    parts = [b"SSUT", struct.pack("<I", 1), unicodedata.unidata_version.encode().ljust(8, b"\0")]
    parts.append(build_map(True))
    parts.append(build_map(False))
    parts.append(bitset(is_word))
    parts.append(bitset(lambda cp: not 0xD800 <= cp < 0xE000 and chr(cp).isdigit()))
    parts.append(bitset(lambda cp: _SPACE_RE.match(chr(cp)) is not None))
    ranges = astral_word_ranges()
    parts.append(struct.pack(f"<I{2 * len(ranges)}I", len(ranges), *[x for r in ranges for x in r]))
    cods = single_byte_codecs()
    parts.append(struct.pack("<I", len(cods)))
    for name, table in cods:
        nb = name.encode()
        parts.append(struct.pack("<I", len(nb)) + nb + struct.pack("<256I", *table))
    data = b"".join(parts)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, OUT)
    print(f"{OUT}: {len(data):,} bytes, {len(cods)} single-byte codecs")


if __name__ == "__main__":
    main()
