"""Plain data shared by every layer.  No I/O, no Qt."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Bump when fingerprints of the same bytes would change: stored ones are then recomputed.
#: 8: nested, length-dependent anchored fingerprints for text.
#: 9: a view bit in text values, and the code view of program source (``fingerprint.code``).
#: 10: no code view for texts under 450 characters; CRs not counted in the code view's limits.
#: 11: code view: primitive types are names, no space between two names (``code.glue``).
#: 12: text windows chosen by robust winnowing on the selection hash (no anchored fingerprints for
#:     text), each value's dominance span and place stored (``FingerprintMeta``); white space between
#:     two characters of unspaced scripts (Han, kana) dropped by normalisation.
ALGORITHM_VERSION = 12


@dataclass(frozen=True, slots=True)
class FingerprintMeta:
    """Where each stored value of a file comes from, aligned with ``rolling`` then ``anchored``.

    d (uint8): the value's dominance span, 1..128 (``fingerprint.rolling``: a text keeps the windows
    whose span reaches its level's winnowing window, and a pair counts a value where its span
    reaches the pair's window); 128 for binary files' values (they count at every level).
    unit (uint32): the unit offset of the value's window in its view's units (text: normalised code
    points of the text or code view; binary: bytes).  char (uint32), chars (uint16): the window's
    first character in the decoded text and its length in characters (binary: bytes).
    """

    d: np.ndarray
    unit: np.ndarray
    char: np.ndarray
    chars: np.ndarray

    #: Bytes per value in :meth:`blob`.
    BYTES = 11

    def blob(self) -> bytes:
        """Column by column, little-endian: d, unit, char, chars (11 bytes a value)."""
        return b"".join(
            np.ascontiguousarray(a, dtype=dt).tobytes()
            for a, dt in ((self.d, "u1"), (self.unit, "<u4"), (self.char, "<u4"), (self.chars, "<u2"))
        )

    @classmethod
    def from_blob(cls, b: bytes | memoryview, n: int) -> FingerprintMeta:
        """The meta of ``n`` values from :meth:`blob` (arrays are views into ``b``)."""
        if len(b) != cls.BYTES * n:
            raise ValueError(f"a meta blob of {n} values has {cls.BYTES * n} bytes, not {len(b)}")
        return cls(
            np.frombuffer(b, "u1", n, 0),
            np.frombuffer(b, "<u4", n, n),
            np.frombuffer(b, "<u4", n, 5 * n),
            np.frombuffer(b, "<u2", n, 9 * n),
        )


@dataclass(frozen=True, slots=True)
class Fingerprints:
    """Everything simscan knows about one file's content.

    size: bytes on disk.  checksum: XXH3-128 digest of the raw bytes (16 bytes).
    partial: XXH3-64 of size, head and tail (signed 64-bit).  is_text / encoding: how it was
    decoded (encoding None for binary; a "+replace" suffix when undecodable bytes were
    replaced).  content_hash: XXH3-128 of the light normalised text as UTF-8 (same
    characters, case and punctuation; encoding, line endings, white-space runs, line
    wrapping and control/format characters unified) or of the raw bytes for binary files.
    rolling / anchored: sorted distinct uint64 fingerprints (rolling have the top bit clear,
    anchored set; text files have rolling values only since version 12, binary files both).
    A text keeps the windows of its *level*, which grows with ``units``
    (``FingerprintParams.level_units`` and ``winnow``), so compare two texts' sets at the coarser of
    their levels with each value's span (``meta.d``).  simhash: unsigned 64-bit.
    meta: where each value comes from (:class:`FingerprintMeta`).
    units: normalised code points (text) or bytes (binary) that were fingerprinted.
    """

    size: int
    checksum: bytes
    partial: int
    is_text: bool
    encoding: str | None
    content_hash: bytes
    rolling: np.ndarray = field(repr=False)
    anchored: np.ndarray = field(repr=False)
    simhash: int
    units: int
    algorithm_version: int = ALGORITHM_VERSION
    meta: FingerprintMeta | None = field(default=None, repr=False)

    @property
    def fingerprint_count(self) -> int:
        return int(self.rolling.size + self.anchored.size)
