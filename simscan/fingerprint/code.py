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
Cost: a source file is fingerprinted twice (181 -> 251 fingerprints per file of the corpus' Java
files); other text pays one byte search for a brace (``looks_like_code``).  The transformation runs
in the native core (``native/core/src/code.rs``); ``tests/reference_fingerprint.py`` holds a plain,
character-by-character reference of it.
"""

from __future__ import annotations

import numpy as np

from simscan import _native

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

_PH = ord(PLACEHOLDER)


def code_length(text: str) -> int:
    """Characters of ``text`` as the code view's size limits count them: a CR LF line break
    counts as one, so that a file and its CRLF twin (one content) get the same fingerprints.
    (Old Mac CR-only line endings are not read as lines by the code view at all.)"""
    return len(text) - text.count("\r\n")


def looks_like_code(text: str) -> bool:
    """True when ``text`` reads as C-family program source (see the module docstring).

    Of the first ``SAMPLE_CHARS`` characters (CR LF read as LF): at least one ``{``, at least 3
    non-blank lines, at least 40% of them ending in ``;``, ``{`` or ``}`` (optionally followed by a
    ``//`` comment), and fewer ``<`` than non-blank lines (XML and HTML end many lines with ``;``
    entities or ``{``).  Texts over ``MAX_CODE_CHARS`` or under ``MIN_CODE_CHARS`` characters
    (:func:`code_length`) are never code here.  On the evaluation corpus this picks all 264 Java
    files and 1 of the 65 short essays (it quotes a Java class), and none of the 155 PEPs, 24 books
    or 521 web pages.
    """
    return _native.looks_like_code(text)


def code_form(text: str) -> str:
    """``text`` with every identifier outside comments and literals that is not a keyword
    replaced by ``PLACEHOLDER`` + ``FILLER`` * (length - 1): same length, same offsets.

    An identifier is a maximal run of word characters (letters, digits, ``_``) that does not
    start with a digit; runs starting with a digit are numbers and stay.  Characters outside the
    Basic Multilingual Plane are never word characters here.
    """
    return _native.code_form(text) if text else text


def code_units(text: str) -> np.ndarray:
    """Normalised units (uint32) of the code view of ``text``: ``glue(normalize(code_form(text)))``."""
    return _native.code_units(text)


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
