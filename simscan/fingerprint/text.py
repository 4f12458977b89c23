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

Where it runs: detection, decoding (UTF-8, UTF-16, UTF-32 and the single-byte codecs) and both
normalisations run in the native core (``simscan._native``); its character tables are generated
from this interpreter's ``unicodedata`` (Unicode 14.0) by ``native/tools/gen_tables.py``, and
``tests/reference_fingerprint.py`` states the mapping of one character as plain Python.  chardet,
and Python's codecs for the multi-byte legacy encodings, stay here.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

import numpy as np

from simscan import _native

SAMPLE = _native.SAMPLE


@dataclass(frozen=True, slots=True)
class Detected:
    is_text: bool
    encoding: str | None  # Python codec name; None for binary
    bom_len: int = 0


def detect(sample: bytes) -> Detected:
    """Decide text or binary, and the encoding, from the first bytes of a file."""
    d = _native.detect(sample)
    if d[0] == "legacy":
        if d[1]:
            # ISO-2022 escape sequences: only chardet can tell, and only its ISO-2022 verdict counts.
            det = chardet_verdict(sample)
            if (det.encoding or "").startswith("iso2022"):
                return det
            d = _native.detect(sample, True)
            if d[0] != "legacy":
                return _detected(d)
            return det
        return chardet_verdict(sample)
    return _detected(d)


def _detected(d: tuple) -> Detected:
    return Detected(False, None) if d[0] == "binary" else Detected(True, d[1], d[2])


def detect_decode(data: bytes) -> tuple[Detected, str | None]:
    """Detect and decode a whole (small) file: (detection, decoded text or None for
    binary); the encoding gets a ``+replace`` suffix when strict decoding failed.  The
    same result as :func:`detect` on the first ``SAMPLE`` bytes, then decoding."""
    det = detect(data[:SAMPLE])
    if not det.is_text:
        return det, None
    assert det.encoding is not None
    body = data[det.bom_len :] if det.bom_len else data
    try:
        return det, body.decode(det.encoding)
    except UnicodeDecodeError:
        return Detected(True, det.encoding + "+replace", det.bom_len), body.decode(det.encoding, "replace")


def chardet_verdict(sample: bytes) -> Detected:
    """chardet's verdict on text that is not UTF-8: its guess when it decodes the sample (chardet's
    confidence is low for short Latin-1/cp1252 text, so it is not used to say binary), else cp1252
    (the commonest legacy encoding), else Latin-1."""
    import chardet  # imported lazily: only non-UTF-8 text pays for it

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


def normalize(text: str, heavy: bool = True) -> np.ndarray:
    """Normalised units (uint32 code points) of a whole string (see the module docstring)."""
    return _native.normalize(text, heavy)[0]


def normalize_with_offsets(text: str, heavy: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Normalised units (uint32) and, per unit, the index in ``text`` of its source character (a
    space: the first character of the run it stands for)."""
    units, src = _native.normalize(text, heavy, True)
    return units, src
