"""A slow, obviously correct reference of simscan's fingerprints, in plain Python.

Everything the native core computes for one file, restated from the definitions one character and
one window at a time, with Python integers and the standard library only (chardet aside): detection,
decoding, normalisation, the Manber fingerprints (rolling, nested and sparse anchors), the view
bits, the code view, simhash, checksums.  The definitions are those of ``simscan/fingerprint``'s
docstrings (``rolling``, ``text``, ``code``, ``views``) for ALGORITHM_VERSION 12.  Quadratic in
places: meant for inputs of a few thousand units.

``map_char`` is *the* definition of normalisation: ``native/tools/gen_tables.py`` builds the native
core's tables from it.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from dataclasses import dataclass

import xxhash

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1
M63 = (1 << 63) - 1
P32, C32, Q64 = 0x01000193, 0x9E3779B1, 0x100000001B3
SAMPLE = 64 * 1024
PARTIAL_SAMPLE = 4096
WINDOW = 50
TEXT_DENSITY, BINARY_DENSITY = 32, 256
TEXT_ANCHOR_DENSITY, BINARY_ANCHOR_DENSITY = 2, 4096
ANCHOR_LENGTH = 8
LEVEL_UNITS = (512, 1024, 2048, 4096, 4096, 8192, 16384)
#: Text: the winnowing window per level (level 4 never occurs: its limit is the same as level 5's).
WINNOW = (4, 6, 14, 26, 64, 64, 64, 64)
#: Dominance spans are kept up to this (above the largest winnowing window); a file's rightmost
#: minimum gets it whatever the file's length.
D_CAP = 128
MAX_CODE_CHARS, MIN_CODE_CHARS, SAMPLE_CHARS = 1 << 20, 450, 1 << 14
PLACEHOLDER, FILLER = "\ue000", "\u200b"


# --------------------------------------------------------------------------- normalisation


def map_char(ch: str, heavy: bool) -> str:
    """The normalised form of one character ('' = dropped): heavy (fingerprint units) NFKD, case
    folding, marks, controls and format characters dropped, punctuation, symbols and white space as
    a space; light (the content hash's form) only white space as a space and controls and format
    characters dropped."""
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


#: Scripts written without spaces between words (Han, kana, CJK punctuation, full-width forms): white
#: space between two of their characters is a line break inside a sentence, and counts as nothing.
_UNSPACED = "\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_GAP = re.compile(rf"(?<=[{_UNSPACED}])\s+(?=[{_UNSPACED}])")


def close_gaps(text: str) -> str:
    """``text`` less the white space between two characters of unspaced scripts."""
    return _GAP.sub("", text)


def normalize(text: str, heavy: bool = True) -> str:
    """White space between unspaced-script characters dropped, every character mapped, runs of
    spaces as one space, none at either end."""
    mapped = "".join(map_char(c, heavy) for c in close_gaps(text))
    return re.sub(" +", " ", mapped).strip(" ")


def normalize_with_offsets(text: str, heavy: bool = True) -> tuple[list[int], list[int]]:
    """The units and, per unit, the index of the character it came from (a space: the first
    character of the run it stands for)."""
    gone = set()
    for m in _GAP.finditer(text):
        gone.update(range(*m.span()))
    units: list[int] = []
    src: list[int] = []
    pending = None
    for i, c in enumerate(text):
        if i in gone:
            continue
        for m in map_char(c, heavy):
            if m == " ":
                if units and pending is None:
                    pending = i
            else:
                if pending is not None:
                    units.append(32)
                    src.append(pending)
                    pending = None
                units.append(ord(m))
                src.append(i)
    return units, src


# --------------------------------------------------------------------------- detection and decoding

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def chardet_verdict(sample: bytes) -> str:
    import chardet

    for enc in (chardet.detect(sample).get("encoding"), "cp1252", "latin-1"):
        if not enc:
            continue
        try:
            name = codecs.lookup(enc).name
        except LookupError:
            continue
        if name == "ascii":
            name = "cp1252"
        try:
            codecs.getincrementaldecoder(name)().decode(sample)
        except UnicodeDecodeError:
            continue
        return name
    raise AssertionError("latin-1 decodes everything")


def detect(sample: bytes) -> tuple[str | None, int]:
    """(encoding, byte-order mark length), encoding None for binary."""
    for bom, enc in _BOMS:
        if sample.startswith(bom):
            return enc, len(bom)
    if not sample:
        return "utf-8", 0
    if b"\0" in sample:
        n = len(sample) - len(sample) % 2
        if n >= 4:
            half = n // 2
            even = sum(1 for k in range(0, n, 2) if sample[k] == 0)
            odd = sum(1 for k in range(1, n, 2) if sample[k] == 0)
            if odd > 0.4 * half and even < 0.02 * half:
                return "utf-16-le", 0
            if even > 0.4 * half and odd < 0.02 * half:
                return "utf-16-be", 0
        return None, 0
    if b"\x1b" in sample and (b"\x1b$" in sample or b"\x1b(" in sample):
        enc = chardet_verdict(sample)
        if enc.startswith("iso2022"):
            return enc, 0
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 11, 12, 13, 27))
    if controls * 100 > len(sample):
        return None, 0
    try:
        sample.decode("utf-8")
        return "utf-8", 0
    except UnicodeDecodeError as e:
        if e.start >= len(sample) - 3 and e.reason.startswith("unexpected end"):
            return "utf-8", 0
    return chardet_verdict(sample), 0


def decode(data: bytes) -> tuple[str | None, str | None]:
    """(text, encoding) as the fingerprinter decodes a file: strictly, else with replacement."""
    enc, bom = detect(data[:SAMPLE])
    if enc is None:
        return None, None
    body = data[bom:]
    try:
        return body.decode(enc), enc
    except UnicodeDecodeError:
        return body.decode(enc, "replace"), enc + "+replace"


# --------------------------------------------------------------------------- Manber fingerprints


def fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


def window_hash(raw: bytes) -> int:
    """B = Q^K + sum w_k Q^(K-1-k) over the window's bytes as K little-endian words (zero-padded)."""
    raw += bytes(-len(raw) % 8)
    h = 1
    for i in range(0, len(raw), 8):  # Horner
        h = (h * Q64 + int.from_bytes(raw[i : i + 8], "little")) & M64
    return h


def mixed(win: list[int]) -> int:
    """The mixed 32-bit selection hash H * C of units."""
    h = 0
    for u in win:
        h = (h * P32 + u) & M32
    return (h * C32) & M32


def select(win: list[int], binary: bool) -> int:
    """A window's selection value: binary windows of even length on their even-offset bytes mod 2^19."""
    if binary and len(win) % 2 == 0:
        h = 0
        for u in win[0::2]:
            h = (h * P32 * P32 + u) & M32
        return (((h & 0x7FFFF) * C32) & 0x7FFFF) << 13
    return mixed(win)


def value(win: list[int], binary: bool) -> int:
    if binary:
        return fmix64(window_hash(bytes(win)))
    return fmix64((window_hash(bytes(u & 0xFF for u in win)) + (mixed(win) << 32)) & M64)


def greedy(starts: list[int], window: int) -> list[int]:
    """Manber's no-overlap rule: the first candidate, then the first one a window past the last kept."""
    out, nxt = [], -1
    for s in starts:
        if s >= nxt:
            out.append(s)
            nxt = s + window
    return out


def perm63(y: int) -> int:
    y = (y * (0x9E3779B97F4A7C15 & M63 | 1)) & M63
    y ^= y >> 32
    return (y * (0xC2B2AE3D27D4EB4F & M63 | 1)) & M63


def unperm63(v: int) -> int:
    y = ((v & M63) * pow(0xC2B2AE3D27D4EB4F & M63 | 1, -1, 1 << 63)) & M63
    y ^= y >> 32
    return (y * pow(0x9E3779B97F4A7C15 & M63 | 1, -1, 1 << 63)) & M63


def level_of(units: int, limits: tuple[int, ...] = LEVEL_UNITS) -> int:
    return sum(1 for lim in limits if units >= lim)


def hash_units(
    units: list[int], window: int, density: int, anchor_density: int, binary: bool, anchor_length: int = 0, level: int = 0
) -> tuple[list[int], list[int]]:
    """(rolling, anchored) values of a unit sequence, sorted and distinct, no view bit set."""
    n = len(units)
    top = 1 << 32
    thr = top - top // density
    sel = [select(units[i : i + window], binary) for i in range(n - window + 1)]
    roll = greedy([i for i, v in enumerate(sel) if v >= thr], window)
    rolling = sorted({value(units[i : i + window], binary) & M63 for i in roll})
    if anchor_length and not binary:
        # Nested anchors: at EVERY k-unit anchor (mixed hash below 2^32 / anchor_density), the window
        # right after it, kept when its level (leading zero bits of its selection hash) is >= level.
        k = anchor_length
        anchored = set()
        for a in range(n - k - window + 1):
            if mixed(units[a : a + k]) >= top // anchor_density:
                continue
            win = units[a + k : a + k + window]
            g = mixed(win)
            if 32 - g.bit_length() >= level:
                anchored.add((1 << 63) | perm63((g << 31) | (value(win, False) >> 33)))
        return rolling, sorted(anchored)
    # Sparse anchors: a window whose selection value lies just below the rolling range; the window
    # after it is anchored, with the no-overlap rule among anchored windows.
    athr = thr - top // anchor_density
    wins = greedy([i + window for i, v in enumerate(sel) if athr <= v < thr and i + 2 * window <= n], window)
    return rolling, sorted({value(units[i : i + window], binary) | (1 << 63) for i in wins})


def tag(v: int, view: int) -> int:
    """A text value with its view bit: bit 62 of rolling values, the low bit of the anchored pre-image."""
    if v >> 63 == 0:
        return (v & ~(1 << 62)) | (view << 62)
    return (1 << 63) | perm63((unperm63(v) & ~1) | view)


def dominance(g: list[int]) -> list[int]:
    """D(i): the length of the longest stretch of windows containing i in which g(i) is the
    rightmost minimum (robust winnowing with window w keeps i iff D(i) >= w), capped at D_CAP; the
    file's rightmost minimum (a stretch of every window) gets D_CAP."""
    n = len(g)
    out = []
    for i in range(n):
        lo = i
        while lo > 0 and g[lo - 1] >= g[i]:
            lo -= 1
        hi = i
        while hi + 1 < n and g[hi + 1] > g[i]:
            hi += 1
        d = hi - lo + 1
        out.append(D_CAP if d >= n else min(d, D_CAP))
    return out


@dataclass(frozen=True)
class Kept:
    """A stored text fingerprint: its value, dominance span, and where its window is (unit offset of
    its start; first character and length in characters of the decoded text)."""

    value: int
    d: int
    unit: int
    char: int
    chars: int


def winnow(units: list[int], src: list[int], w: int, view: int) -> list[Kept]:
    """The windows of ``units`` (``src``: each unit's character) kept by robust winnowing on their
    selection hash ``g`` with window ``w``; one per distinct value: the occurrence with the largest
    span (the first of those)."""
    n = len(units) - WINDOW + 1
    if n <= 0:
        return []
    g = [mixed(units[i : i + WINDOW]) for i in range(n)]
    d = dominance(g)
    best: dict[int, Kept] = {}
    for i in range(n):
        if d[i] < w:
            continue
        v = tag(value(units[i : i + WINDOW], False) & M63, view)
        k = Kept(v, d[i], i, src[i], min(src[i + WINDOW - 1] - src[i] + 1, 0xFFFF))
        if v not in best or k.d > best[v].d:
            best[v] = k
    return [best[v] for v in sorted(best)]


def simhash(values: list[int]) -> int:
    out = 0
    for b in range(64):
        if 2 * sum((v >> b) & 1 for v in values) > len(values):
            out |= 1 << b
    return out


# --------------------------------------------------------------------------- the code view

KEYWORDS = frozenset(
    """
    abstract as assert async auto await break case catch class const
    constexpr continue def default defer delete do dynamic elif else enum explicit export
    extends extern false final finally fn for foreach friend fun func function go goto if
    impl implements import in inline instanceof interface internal is let loop match
    mod module mut namespace native new nil null object operator override package private
    protected pub public range readonly record register return sealed select
    sizeof static struct super switch synchronized template this throw throws trait transient
    true try type typedef typename typeof union unsafe use using val var virtual
    volatile when where while yield
    """.split()  # noqa: SIM905
)
_IMPORT_LINE = re.compile(r"[ \t]*#[ \t]*include\b[^\n]*|[ \t]*(?:import|package|using|use)[ \t]+[\w.*: \t]+;")
_CODE_LINE = re.compile(r"[;{}][ \t]*(?://[^\n]*)?\r?$", re.MULTILINE)
_NONBLANK = re.compile(r"^[ \t]*\S", re.MULTILINE)


def code_length(text: str) -> int:
    return len(text) - text.count("\r\n")


def looks_like_code(text: str) -> bool:
    n = code_length(text)
    if not MIN_CODE_CHARS <= n <= MAX_CODE_CHARS or "{" not in text[: 2 * SAMPLE_CHARS]:
        return False
    sample = text[: 2 * SAMPLE_CHARS].replace("\r\n", "\n")[:SAMPLE_CHARS]
    lines = len(_NONBLANK.findall(sample))
    if "{" not in sample or lines < 3 or sample.count("<") >= lines:
        return False
    return len(_CODE_LINE.findall(sample)) * 5 >= lines * 2


def code_form(text: str) -> str:
    """Each identifier outside comments, literals and include/import lines that is not a keyword
    becomes PLACEHOLDER + FILLER * (length - 1): a character-by-character scanner."""
    out: list[str] = []
    i, n = 0, len(text)

    def is_word(c: str) -> bool:
        return ord(c) < 0x10000 and not 0xD800 <= ord(c) < 0xE000 and (c.isalnum() or c == "_")

    while i < n:
        c = text[i]
        m = _IMPORT_LINE.match(text, i) if i == 0 or text[i - 1] == "\n" else None
        if m:
            j = m.end()
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            # Up to the closing quote, else the end of the line; a backslash escapes the next
            # character on the same line (a trailing backslash stays in the literal).
            j = i + 1
            while j < n and text[j] != "\n":
                if text[j] == c:
                    j += 1
                    break
                if text[j] == "\\":
                    j += 2 if j + 1 < n and text[j + 1] != "\n" else 1
                    if j == n or text[j] == "\n":
                        break
                    continue
                j += 1
        elif is_word(c):
            j = i
            while j < n and is_word(text[j]):
                j += 1
            tok = text[i:j]
            if not c.isdigit() and tok not in KEYWORDS:
                tok = PLACEHOLDER + FILLER * (len(tok) - 1)
            out.append(tok)
            i = j
            continue
        else:
            j = i + 1
        out.append(text[i:j])
        i = j
    return "".join(out)


def code_units(text: str) -> list[int]:
    """The code form, normalised, less a space between two placeholders."""
    return code_units_with_offsets(text)[0]


def code_units_with_offsets(text: str) -> tuple[list[int], list[int]]:
    """:func:`code_units` and each unit's character in ``text`` (the code form keeps offsets)."""
    u, src = normalize_with_offsets(code_form(text))
    ph = ord(PLACEHOLDER)
    keep = [not (x == 32 and 0 < k < len(u) - 1 and u[k - 1] == ph and u[k + 1] == ph) for k, x in enumerate(u)]
    return [x for x, k in zip(u, keep) if k], [c for c, k in zip(src, keep) if k]


# --------------------------------------------------------------------------- one file


@dataclass(frozen=True)
class Reference:
    size: int
    checksum: bytes
    partial: int
    is_text: bool
    encoding: str | None
    content_hash: bytes
    rolling: list[int]
    anchored: list[int]
    simhash: int
    units: int
    #: Per value of rolling + anchored: (dominance span, unit offset, first character, characters).
    meta: list[tuple[int, int, int, int]]


def partial(data: bytes) -> int:
    size = len(data)
    head = data[:PARTIAL_SAMPLE]
    tail = data[max(min(size, PARTIAL_SAMPLE), size - PARTIAL_SAMPLE) :]
    h = xxhash.xxh3_64_intdigest(size.to_bytes(8, "little") + head + tail)
    return h - (1 << 64) if h >= 1 << 63 else h


def binary_meta(units: list[int], values: list[int], anchored: bool) -> list[tuple[int, int, int, int]]:
    """A binary fingerprint counts at every level; its place is the first window with its value."""
    first: dict[int, int] = {}
    for i in range(len(units) - WINDOW + 1):
        v = value(units[i : i + WINDOW], True)
        v = v | (1 << 63) if anchored else v & M63
        first.setdefault(v, i)
    return [(D_CAP, first[v], first[v], WINDOW) for v in values]


def fingerprints(data: bytes) -> Reference:
    """Everything simscan stores about the content of a file holding ``data``."""
    checksum = xxhash.xxh3_128_digest(data)
    text, enc = decode(data)
    if text is None:
        units = list(data)
        rolling, anchored = hash_units(units, WINDOW, BINARY_DENSITY, BINARY_ANCHOR_DENSITY, True)
        meta = binary_meta(units, rolling, False) + binary_meta(units, anchored, True)
        return Reference(len(data), checksum, partial(data), False, None, checksum, rolling, anchored,
                         simhash(rolling + anchored), len(units), meta)  # fmt: skip
    units, src = normalize_with_offsets(text)
    w = WINNOW[level_of(len(units))]
    kept = winnow(units, src, w, 0)
    sim = simhash([k.value for k in kept])
    if looks_like_code(text):
        # The code view, at the text's window: its values that the text view lacks, tagged CODE.
        cu, csrc = code_units_with_offsets(text)
        have = {k.value for k in kept}
        kept = sorted(kept + [k for k in winnow(cu, csrc, w, 1) if tag(k.value, 0) not in have], key=lambda k: k.value)
    content = xxhash.xxh3_128_digest(normalize(text, heavy=False).encode("utf-8", "surrogatepass"))
    return Reference(len(data), checksum, partial(data), True, enc, content, [k.value for k in kept], [], sim,
                     len(units), [(k.d, k.unit, k.char, k.chars) for k in kept])  # fmt: skip
