"""The *code view*: a second set of fingerprints for program source, robust to renamed identifiers.

Plagiarised program source is often the original with identifiers renamed (IR-Plag level L2)
or with declarations and statements moved (L3-L6).  The text fingerprints (``text``
normalisation: case, punctuation and white space unified) see a renamed variable as new text
in every window that holds it.  The code view is the same text with every identifier *outside
comments and string/character literals* that is not a keyword replaced by one placeholder
unit, then normalised like any text and fingerprinted with the same 50-unit windows, the
same rolling rule (no-overlap) and the same nested anchors at the file's own level.  Its values
carry a *view bit* (``views``), so the similarity layer scores the two views of a pair apart
and keeps the better one: the code view can only add evidence, the text view is never
diluted, and prose that happens to look like code keeps its text fingerprints.

Which files: recognised by content (:func:`looks_like_code`), never by file name, so a file's
fingerprints stay a function of its bytes (copies under any name, ``fingerprint_bytes`` and
``fingerprint_many`` give the same values, and no path has to reach the fingerprinter).  The
test is for the C family of syntax (C, C++, C#, Java, JavaScript/TypeScript, Go, Rust, PHP,
Kotlin, Swift, CSS ...): many lines ending in ``;``, ``{`` or ``}`` (a trailing ``//`` comment
allowed), and not markup.  Python, shell and other languages without braces are not
recognised: they keep the text view only.  Texts longer than ``MAX_CODE_CHARS`` are not
given a code view (source files are small; the view needs the whole text in memory).

The transformation (:func:`code_form`) keeps the length of the text: an identifier of n
characters becomes the placeholder ``PLACEHOLDER`` followed by n - 1 ``FILLER`` characters
(U+200B, a format character that normalisation drops), so an offset into the code form is an
offset into the original text, and ``normalize_with_offsets`` maps code-view units back to the
characters they came from.  What is kept, and why (``benchmarks/code_view.py``, evaluation
corpus, recall at the default threshold, light / heavy plagiarism):

* comments are KEPT: copies keep the original's comments far more often than independent
  solutions share them (dropping them: light 0.81 -> 0.74 and the unrelated tail doubles);
* string and character literals are kept (placeholders: 0.87 -> 0.80 with the text view);
* numbers are kept (a placeholder changed nothing but added false positives);
* identifiers become ONE unit, whatever their length or shape: keeping their first letter,
  length or case class, Baker-style distances to the previous use, or first-occurrence
  numbering all scored lower (numbering breaks window locality: 0.45 light);
* punctuation and operators are dropped by the text normalisation, as in the text view
  (keeping them made added or removed braces break windows: 0.81 -> 0.72).
"""

from __future__ import annotations

import re

import numpy as np

from simscan.fingerprint import text as _text

#: Stands for every identifier in the code view (a private-use character: normalisation keeps
#: it as one unit, and real text rarely holds it).
PLACEHOLDER = "\ue000"
#: Pads a replaced identifier to its original length (ZERO WIDTH SPACE, category Cf: dropped
#: by normalisation, so it costs no unit).
FILLER = "\u200b"
#: Longest text (characters) that gets a code view.  Source files are far smaller; the code view
#: holds the decoded text in memory.
MAX_CODE_CHARS = 1 << 20
#: Characters of a text examined by :func:`looks_like_code` (the first few hundred lines).
SAMPLE_CHARS = 1 << 14

#: Keywords of the C family (C, C++, C#, Java, JavaScript/TypeScript, Go, Rust, PHP, Kotlin,
#: Swift), case-sensitive, plus the literals true/false/null.  They are structure, not names,
#: and keep their text in the code view.  Library names (String, System, printf) are
#: identifiers: a plagiarist does not rename them, but neither does an independent author.
KEYWORDS = frozenset(
    """
    abstract as assert async auto await bool boolean break byte case catch char class const
    constexpr continue def default defer delete do double dynamic elif else enum explicit export
    extends extern false final finally float fn for foreach friend fun func function go goto if
    impl implements import in inline instanceof int interface internal is let long loop match
    mod module mut namespace native new nil null object operator override package private
    protected pub public range readonly record register return sealed select short signed
    sizeof static struct super switch synchronized template this throw throws trait transient
    true try type typedef typename typeof union unsafe unsigned use using val var virtual void
    volatile when where while yield
    """.split()  # noqa: SIM905 - a word list reads better than 120 quoted strings
)

# Comments and literals, leftmost first: a "//" inside a string is string, a quote inside a
# comment is comment.  Literals end at the line end when unterminated (never swallow a file).
_PROTECTED = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\[^\n]|[^\"\\\n])*(?:\"|\\?$)|'(?:\\[^\n]|[^'\\\n])*(?:'|\\?$)",
    re.DOTALL | re.MULTILINE,
)
_CODE_LINE = re.compile(r"[;{}][ \t]*(?://[^\n]*)?\r?$", re.MULTILINE)
_NONBLANK = re.compile(r"^[ \t]*\S", re.MULTILINE)

# Word characters (str.isalnum or "_") of the Basic Multilingual Plane, for the vectorised path.
_WORD = np.array([chr(c).isalnum() or c == 0x5F for c in range(0x10000)], dtype=bool)
_WORD[0xD800:0xE000] = False
_DIGIT = np.array([chr(c).isdigit() for c in range(0x10000)], dtype=bool)
_PH = ord(PLACEHOLDER)

_FILL = ord(FILLER)
_HASH_P = np.uint64(0x100000001B3)


def looks_like_code(text: str) -> bool:
    """True when ``text`` reads as C-family program source (see the module docstring).

    Of the first ``SAMPLE_CHARS`` characters: at least one ``{``, at least 3 non-blank lines,
    at least 40% of them ending in ``;``, ``{`` or ``}`` (optionally followed by a ``//``
    comment), and fewer ``<`` than non-blank lines (XML and HTML end many lines with ``;``
    entities or ``{``).  Texts over ``MAX_CODE_CHARS`` characters are never code here.  On the
    evaluation corpus this picks all 264 Java files and 1 of the 65 short essays (it quotes a
    Java class), and none of the 155 PEPs, 24 books or 521 web pages.
    """
    if len(text) > MAX_CODE_CHARS:
        return False
    sample = text[:SAMPLE_CHARS]
    if "{" not in sample:
        # C-family source has blocks; prose almost never has a brace, and this one C-level
        # search spares it the two regex passes (~80 us for 8 KB, as much as fingerprinting).
        return False
    lines = len(_NONBLANK.findall(sample))
    if lines < 3 or sample.count("<") >= lines:
        return False
    return len(_CODE_LINE.findall(sample)) * 5 >= lines * 2


def _keyword_hashes() -> dict[int, np.ndarray]:
    """Per keyword length, the sorted :func:`_run_hashes` values of the keywords."""
    out: dict[int, list[int]] = {}
    for kw in KEYWORDS:
        u = np.frombuffer(kw.encode("utf-32-le"), dtype="<u4")
        h = _run_hashes(u, np.array([0]), np.array([u.size]))
        out.setdefault(len(kw), []).append(int(h[0]))
    return {k: np.array(sorted(v), dtype=np.uint64) for k, v in out.items()}


def _run_hashes(u: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """64-bit polynomial hash of each run ``u[start:end]`` (uint64, wrapping): the sum of
    ``u[i] * P^(end-1-i)``, from one prefix sum of ``u[i] * P^-i`` (P is odd, so invertible
    mod 2^64)."""
    n = u.size
    with np.errstate(over="ignore"):
        pinv = np.uint64(pow(int(_HASH_P), -1, 1 << 64))
        pw_inv = np.cumprod(np.full(n, pinv, dtype=np.uint64)) if n else np.empty(0, np.uint64)
        pw_inv = np.concatenate(([np.uint64(1)], pw_inv[:-1])) if n else pw_inv
        s = np.zeros(n + 1, dtype=np.uint64)
        np.cumsum(u.astype(np.uint64) * pw_inv, out=s[1:])
        # P^(end-1) for each run: the inverse of pw_inv at end-1.
        pw = np.cumprod(np.full(n, _HASH_P, dtype=np.uint64)) if n else np.empty(0, np.uint64)
        pw = np.concatenate(([np.uint64(1)], pw[:-1])) if n else pw
        return (s[ends] - s[starts]) * pw[ends - 1]


_KW_HASHES: dict[int, np.ndarray] | None = None


def code_form(text: str) -> str:
    """``text`` with every identifier outside comments and literals that is not a keyword
    replaced by ``PLACEHOLDER`` + ``FILLER`` * (length - 1): same length, same offsets.

    An identifier is a maximal run of word characters (letters, digits, ``_``) that does not
    start with a digit; runs starting with a digit are numbers and stay.  Vectorised: one
    regex pass finds the comments and literals, word runs and keyword lookups are numpy.
    Characters outside the Basic Multilingual Plane are never word characters here.
    """
    global _KW_HASHES
    if not text:
        return text
    u = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    out = u.copy()
    bmp = u < 0x10000
    word = np.zeros(u.size, dtype=bool)
    word[bmp] = _WORD[u[bmp]]
    spans = [m.span() for m in _PROTECTED.finditer(text)]
    if spans:
        edges = np.zeros(u.size + 1, dtype=np.int64)
        sp = np.array(spans, dtype=np.int64)
        np.add.at(edges, sp[:, 0], 1)
        np.add.at(edges, sp[:, 1], -1)
        free = np.cumsum(edges[:-1]) == 0
        word &= free
    if not word.any():
        return text
    prev = np.zeros(u.size, dtype=bool)
    prev[1:] = word[:-1]
    starts = np.flatnonzero(word & ~prev)
    nxt = np.zeros(u.size, dtype=bool)
    nxt[:-1] = word[1:]
    ends = np.flatnonzero(word & ~nxt) + 1
    first = u[starts]
    ident = ~(_DIGIT[np.minimum(first, 0xFFFF)] & (first < 0x10000))
    starts, ends = starts[ident], ends[ident]
    if _KW_HASHES is None:
        _KW_HASHES = _keyword_hashes()
    lengths = ends - starts
    h = _run_hashes(u, starts, ends)
    is_kw = np.zeros(starts.size, dtype=bool)
    for k, table in _KW_HASHES.items():
        sel = np.flatnonzero(lengths == k)
        if sel.size:
            pos = np.minimum(np.searchsorted(table, h[sel]), table.size - 1)
            is_kw[sel] = table[pos] == h[sel]
    starts, ends = starts[~is_kw], ends[~is_kw]
    if starts.size:
        fill = np.zeros(u.size + 1, dtype=np.int64)
        np.add.at(fill, starts, 1)
        np.add.at(fill, ends, -1)
        out[np.cumsum(fill[:-1]) > 0] = _FILL
        out[starts] = _PH
    return out.tobytes().decode("utf-32-le", "surrogatepass")


def code_form_reference(text: str) -> str:
    """Slow, plain reference of :func:`code_form`: a character-by-character scanner (tests)."""
    out: list[str] = []
    i, n = 0, len(text)

    def is_word(c: str) -> bool:
        return ord(c) < 0x10000 and not 0xD800 <= ord(c) < 0xE000 and (c.isalnum() or c == "_")

    while i < n:
        c = text[i]
        if text.startswith("//", i):
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


def code_units(text: str) -> np.ndarray:
    """Normalised units (uint32) of the code view of ``text``."""
    return _text.normalize(code_form(text))
