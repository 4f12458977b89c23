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
characters they came from.  What is kept, and why (``benchmarks/code_view.py``: evaluation
corpus, default threshold 15 %; recall light / heavy plagiarism, false positives on the 882
unrelated pairs; "max" = each view scored apart, the better one kept, as the product does):

* text view only (ALGORITHM_VERSION 8): 0.77 / 0.33 at 0.45 % (0.79 / 0.35 at its 13 %);
* this code view, max: 0.85 / 0.43 at 0.91 % (ROC AUC 0.98 / 0.85); version 10's (types kept,
  names spaced) 0.86 / 0.38 at 0.91 %; a code view *replacing* the text view of source files:
  0.81 / 0.31 at 0.91 %, AUC 0.95 / 0.80 (a copy that kept its names loses the evidence of the
  names);
* comments are KEPT: copies keep the original's comments far more often than independent
  solutions share them (dropped: 0.85 / 0.39 but 1.9 % false positives; 0.60 / 0.02 at 1 %);
* string and character literals are kept (one placeholder each: 0.79 / 0.35);
* primitive type keywords are names (``TYPE_NAMES``: ``int`` -> ``long`` is a renaming too);
* no space between two placeholders (:func:`glue`): fewer structure-only matches, see below;
* identifiers become ONE unit, whatever their length or shape: their first letter 0.79 / 0.35,
  length 0.77 / 0.33, capitalisation 0.82 / 0.37, Baker's distance to the previous use 0.83 /
  0.34, numbering by first occurrence (JPlag-like; breaks window locality) 0.79 / 0.33 (0.61 /
  0.06 replacing the text view); 3 units per name 1.25 % false positives, 8 units 2.2 %
  (0.93 / 0.54, but 0.69 / 0.15 at 1 %);
* operators and punctuation become white space, as in the text view (kept: 1.5 % false
  positives, 0.81 / 0.30 at 1 %: added or removed braces break windows; dropped, so that the
  white space of the source decides what is glued: no better than :func:`glue`);
* numbers are kept (one unit of their own: false positives 1.02 -> 1.36 % over every window);
* ``#include`` and ``import`` / ``package`` / ``using`` / ``use`` lines keep their names (they
  name libraries, which a plagiarist does not rename; as identifiers they made every run of
  includes alike);
* windows the text view already has (no identifier in them) are left out of the code view
  (``views.code_only``; no change on the corpus, 26 % fewer code fingerprints, and far fewer
  structure-only pairs among real headers, see ``similarity.views.CODE_MIN_SHARED``).

Differences of a few pairs are noise.  Over equivalent hashes (both views' units shifted, so
other windows are selected) the figures of one code view range over ~0.06 light and ~0.10 heavy
at 0.5-1.6 % false positives; version 10's 0.91 % at 15 % was a lucky draw (its mean is
1.27 %).  This version against version 10, 24 equivalent hashes, paired: at 15 % false
positives 1.27 -> 0.93 %, light 0.853 -> 0.837, heavy 0.381 -> 0.382; at the best threshold
with <= 1 % false positives heavy 0.334 -> 0.385 (better on 23 of 24 hashes), light 0.828 ->
0.839.  Over every window (no sampling) no code view tried reaches 0.5 heavy at <= 1 % false
positives: the corpus' independent same-task solutions score as high as rewritten copies.
Cost: a source file is fingerprinted twice (``fingerprint_many`` on the corpus' Java files:
~14,800 -> ~4,650 files/s, 181 -> 251 fingerprints per file); other text pays one substring
search (``looks_like_code``).
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
#: Longest text (characters, a CR LF counted once: see :func:`code_length`) that gets a
#: code view.  Source files are far smaller; the code view holds the decoded text in memory.
MAX_CODE_CHARS = 1 << 20
#: Shortest text that gets a code view.  Below it a source file is mostly a skeleton (a licence
#: line, an include guard, a small struct) that unrelated files share exactly once names are
#: abstracted: five 200-280-byte kernel headers scored 100 % alike by their code views.  On the
#: evaluation corpus 450 changes no recall and no false positive (its smallest plagiarised Java
#: files are ~500 bytes); 600 loses light plagiarism recall 0.861 -> 0.803.
MIN_CODE_CHARS = 450
#: Characters of a text examined by :func:`looks_like_code` (the first few hundred lines).
SAMPLE_CHARS = 1 << 14

#: Keywords of the C family (C, C++, C#, Java, JavaScript/TypeScript, Go, Rust, PHP, Kotlin,
#: Swift), case-sensitive, plus the literals true/false/null.  They are structure, not names,
#: and keep their text in the code view.  Library names (String, System, printf) are
#: identifiers: a plagiarist does not rename them, but neither does an independent author.
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
    """.split()  # noqa: SIM905 - a word list reads better than 120 quoted strings
)
#: Primitive type keywords, read as *names* (one placeholder each), not kept as keywords: a
#: plagiarist swaps ``int`` for ``long`` or ``float`` for ``double`` as freely as he renames a
#: variable (IR-Plag L3-L6), and Java's library types (``String``, ``Integer``) are names anyway.
#: ``benchmarks/code_view.py``, every window (no sampling): heavy plagiarism recall at 15 %
#: 0.372 -> 0.407 at the same false positives (1.25 %); over 12 equivalent hashes 0.391 -> 0.435.
TYPE_NAMES = frozenset("bool boolean byte char double float int long short signed unsigned void".split())  # noqa: SIM905

# Comments and literals, leftmost first: a "//" inside a string is string, a quote inside a
# comment is comment.  Literals end at the line end when unterminated (never swallow a file).
_PROTECTED = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\[^\n]|[^\"\\\n])*(?:\"|\\?$)|'(?:\\[^\n]|[^'\\\n])*(?:'|\\?$)"
    r"|^[ \t]*#[ \t]*include\b[^\n]*|^[ \t]*(?:import|package|using|use)[ \t]+[\w.*: \t]+;",
    re.DOTALL | re.MULTILINE,
)
#: The include / import lines of :data:`_PROTECTED`, matched at a line start (reference).
_IMPORT_LINE = re.compile(r"[ \t]*#[ \t]*include\b[^\n]*|[ \t]*(?:import|package|using|use)[ \t]+[\w.*: \t]+;")
# The same for texts joined with ``_SEP`` (``code_units_many``): nothing crosses a separator.
_PROTECTED_JOINED = re.compile(
    r"//[^\n\ue001]*|/\*[^\ue001]*?(?:\*/|(?=\ue001)|\Z)"
    r"|\"(?:\\[^\n\ue001]|[^\"\\\n\ue001])*(?:\"|\\?(?=\ue001)|\\?$)"
    r"|'(?:\\[^\n\ue001]|[^'\\\n\ue001])*(?:'|\\?(?=\ue001)|\\?$)"
    r"|(?:^|(?<=\ue001))(?:[ \t]*#[ \t]*include\b[^\n\ue001]*|[ \t]*(?:import|package|using|use)[ \t]+[\w.*: \t]+;)",
    re.MULTILINE,
)
_CODE_LINE = re.compile(r"[;{}][ \t]*(?://[^\n]*)?\r?$", re.MULTILINE)
_NONBLANK = re.compile(r"^[ \t]*\S", re.MULTILINE)

# Word characters (str.isalnum or "_") of the Basic Multilingual Plane, for the vectorised path.
_WORD = np.array([chr(c).isalnum() or c == 0x5F for c in range(0x10000)], dtype=bool)
_WORD[0xD800:0xE000] = False
_DIGIT = np.array([chr(c).isdigit() for c in range(0x10000)], dtype=bool)
_PH = ord(PLACEHOLDER)
#: Joins the texts of a batch (:func:`code_units_many`).
_SEP = "\ue001"
_KW_MAX = 12  # the longest keyword ("synchronized")
_KW_SHIFTS = (5 * (_KW_MAX - 1 - np.arange(_KW_MAX))).astype(np.uint64)

_FILL = ord(FILLER)


def code_length(text: str) -> int:
    """Characters of ``text`` as the code view's size limits count them: a CR LF line break
    counts as one, so that a file and its CRLF twin (one content) get the same fingerprints.
    (Old Mac CR-only line endings are not read as lines by the code view at all.)"""
    return len(text) - text.count("\r\n")


def looks_like_code(text: str) -> bool:
    """True when ``text`` reads as C-family program source (see the module docstring).

    Of the first ``SAMPLE_CHARS`` characters: at least one ``{``, at least 3 non-blank lines,
    at least 40% of them ending in ``;``, ``{`` or ``}`` (optionally followed by a ``//``
    comment), and fewer ``<`` than non-blank lines (XML and HTML end many lines with ``;``
    entities or ``{``).  Texts over ``MAX_CODE_CHARS`` or under ``MIN_CODE_CHARS`` characters
    (:func:`code_length`) are never code here.  On the
    evaluation corpus this picks all 264 Java files and 1 of the 65 short essays (it quotes a
    Java class), and none of the 155 PEPs, 24 books or 521 web pages.
    """
    n = len(text)
    # C-family source has blocks; prose almost never has a brace, and this one C-level search
    # (no copy) spares it the two regex passes (~80 us for 8 KB, as much as fingerprinting it).
    if n < MIN_CODE_CHARS or text.find("{", 0, 2 * SAMPLE_CHARS) < 0:
        return False
    if n < 2 * MIN_CODE_CHARS or n > MAX_CODE_CHARS:
        # Counting line breaks costs ~0.7 ns a character: only where it can change the answer
        # (a CRLF file has at most twice the characters of its LF twin).
        n = code_length(text)
    if n > MAX_CODE_CHARS or n < MIN_CODE_CHARS:
        return False
    # The sample in LF terms, so that a file and its CRLF twin examine the same lines.
    sample = text[: 2 * SAMPLE_CHARS].replace("\r\n", "\n")[:SAMPLE_CHARS]
    if "{" not in sample:
        return False
    lines = len(_NONBLANK.findall(sample))
    if lines < 3 or sample.count("<") >= lines:
        return False
    return len(_CODE_LINE.findall(sample)) * 5 >= lines * 2


def _letter_keys(u: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Exact 60-bit keys of word runs of at most ``_KW_MAX`` characters: each character as 5
    bits (a-z -> 1..26, anything else -> 31, which no keyword holds; 0 past the run's end)."""
    j = np.arange(_KW_MAX)
    idx = np.minimum(starts[:, None] + j[None, :], max(u.size - 1, 0))
    ch = u[idx].astype(np.int64)
    c5 = np.where((ch >= 97) & (ch <= 122), ch - 96, 31)
    c5 = np.where(j[None, :] < lengths[:, None], c5, 0).astype(np.uint64)
    return (c5 << _KW_SHIFTS[None, :]).sum(axis=1, dtype=np.uint64)


def _marks(n: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Boolean mask of the union of the non-empty, non-overlapping ranges [starts, ends) of n
    positions (starts are distinct, ends too, so fancy += / -= count each once)."""
    d = np.zeros(n + 1, dtype=np.int8)
    d[starts] += 1
    d[ends] -= 1
    return np.cumsum(d[:n], dtype=np.int8) > 0


def _protected_spans(text: str, offset: int = 0) -> list[tuple[int, int]]:
    """[start, end) of the comments and literals of ``text`` (shifted by ``offset``)."""
    return [(a + offset, b + offset) for a, b in (m.span() for m in _PROTECTED.finditer(text))]


def code_form_units(text: str) -> np.ndarray:
    """:func:`code_form` as code points (uint32), one per character of ``text``."""
    u = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    return _code_form_array(u, _protected_spans(text))


def _code_form_array(u: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray:
    """The code form of the code points ``u`` whose comments and literals are ``spans``."""
    n = u.size
    if n == 0:
        return u
    bmp = u < 0x10000
    word = np.zeros(n, dtype=bool)
    word[bmp] = _WORD[u[bmp]]
    if spans:
        sp = np.array(spans, dtype=np.int64)
        word &= ~_marks(n, sp[:, 0], sp[:, 1])
    if not word.any():
        return u
    edge = np.flatnonzero(np.diff(word.view(np.int8), prepend=0, append=0))
    starts, ends = edge[0::2], edge[1::2]
    first = u[starts]
    ident = ~(_DIGIT[np.minimum(first, 0xFFFF)] & (first < 0x10000))
    starts, ends = starts[ident], ends[ident]
    lengths = ends - starts
    # Keywords are 2-12 lowercase ASCII letters: only such runs are looked up.
    short = np.flatnonzero((lengths <= _KW_MAX) & (u[starts] >= 97) & (u[starts] <= 122))
    if short.size:
        keys = _letter_keys(u, starts[short], lengths[short])
        kw = _KW_KEYS[np.minimum(np.searchsorted(_KW_KEYS, keys), _KW_KEYS.size - 1)] == keys
        names = np.ones(starts.size, dtype=bool)
        names[short[kw]] = False
        starts, ends = starts[names], ends[names]
    if starts.size == 0:
        return u
    out = u.copy()
    out[_marks(n, starts, ends)] = _FILL
    out[starts] = _PH
    return out


def code_form(text: str) -> str:
    """``text`` with every identifier outside comments and literals that is not a keyword
    replaced by ``PLACEHOLDER`` + ``FILLER`` * (length - 1): same length, same offsets.

    An identifier is a maximal run of word characters (letters, digits, ``_``) that does not
    start with a digit; runs starting with a digit are numbers and stay.  Vectorised: one
    regex pass finds the comments and literals, word runs and keyword lookups are numpy.
    Characters outside the Basic Multilingual Plane are never word characters here.
    """
    if not text:
        return text
    return code_form_units(text).tobytes().decode("utf-32-le", "surrogatepass")


assert max(map(len, KEYWORDS)) == _KW_MAX and all(k.isalpha() and k.islower() and k.isascii() for k in KEYWORDS)
_KW_KEYS = np.sort(np.concatenate([
    _letter_keys(np.frombuffer(k.encode("utf-32-le"), dtype="<u4"), np.array([0]), np.array([len(k)])) for k in KEYWORDS
]))


def code_form_reference(text: str) -> str:
    """Slow, plain reference of :func:`code_form`: a character-by-character scanner (tests)."""
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


def code_units_many(texts: list[str]) -> list[np.ndarray]:
    """:func:`code_units` of many texts, equal to it for each, in one vectorised pass (the
    scanner's batches hold hundreds of small files; per-call numpy overhead would dominate).

    The texts are joined with ``_SEP`` (a private-use character that normalisation keeps),
    transformed and normalised at once, and cut at the separators; a text that holds the
    separator itself is done alone.
    """
    out: list[np.ndarray | None] = [None] * len(texts)
    batch = [k for k, t in enumerate(texts) if _SEP not in t]
    for k in set(range(len(texts))) - set(batch):
        out[k] = code_units(texts[k])
    if batch:
        joined = _SEP.join(texts[k] for k in batch)
        spans = [m.span() for m in _PROTECTED_JOINED.finditer(joined)]
        u = _code_form_array(np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4"), spans)
        # A separator is not a space: nothing is glued across two texts.
        units = glue(_text.normalize_code_points(u[u != _FILL]))
        cuts = np.flatnonzero(units == ord(_SEP))
        bounds = [0, *(cuts + 1).tolist(), units.size + 1]
        for k, a, b in zip(batch, bounds[:-1], bounds[1:]):
            piece = units[a : b - 1]
            lo = 1 if piece.size and piece[0] == 32 else 0
            hi = piece.size - 1 if piece.size > lo and piece[-1] == 32 else piece.size
            out[k] = piece[lo:hi]
    return out  # type: ignore[return-value]


def glue_mask(units: np.ndarray) -> np.ndarray:
    """Which normalised code-form units the code view keeps: all but a space between two
    placeholders (``a.b(c)`` and ``a . b ( c )`` both become three adjacent placeholder units).

    Why: a run of names joined by operators is the bulk of a statement; with a space between
    every two placeholders half of the code view's units said only "another name follows", so a
    50-unit window covered little code, and independent solutions of one task matched on
    structure alone.  ``benchmarks/code_view.py``: over 24 equivalent hashes at 15 %, false
    positives 1.27 -> 0.93 %, heavy plagiarism recall unchanged (0.381 -> 0.382), light 0.853 ->
    0.837; at the best threshold with <= 1 % false positives heavy 0.334 -> 0.385 (with
    ``TYPE_NAMES``).  Spaces are never kept or dropped by the source's white space, so reformatted
    code gets the same units."""
    u = np.asarray(units)
    keep = np.ones(u.size, dtype=bool)
    if u.size > 2:
        keep[1:-1] = ~((u[1:-1] == 32) & (u[:-2] == _PH) & (u[2:] == _PH))
    return keep


def glue(units: np.ndarray) -> np.ndarray:
    """``units`` less the spaces :func:`glue_mask` drops."""
    keep = glue_mask(units)
    return units if keep.all() else units[keep]


def code_units(text: str) -> np.ndarray:
    """Normalised units (uint32) of the code view of ``text``: ``glue(normalize(code_form(text)))``,
    computed on the array (the fillers dropped first: they would map to nothing)."""
    u = code_form_units(text)
    return glue(_text.normalize_code_points(u[u != _FILL]))
