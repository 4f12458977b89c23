"""Plain data shared by every layer.  No I/O, no Qt."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Bump when fingerprints of the same bytes would change: stored ones are then recomputed.
#: 8: nested, length-dependent anchored fingerprints for text.
#: 9: a view bit in text values, and the code view of program source (``fingerprint.code``).
#: 10: no code view for texts under 450 characters; CRs not counted in the code view's limits.
#: 11: code view: primitive types are names, no space between two names (``code.glue``).
ALGORITHM_VERSION = 11


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
    anchored set).  A text's anchored fingerprints are those of its *level*, which grows with
    ``units`` (``FingerprintParams.level_units``; the level of each value is recoverable with
    ``rolling.anchored_levels``), so compare two texts' sets at the coarser of their levels
    (``simscan.similarity.levels``).  simhash: unsigned 64-bit.
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

    @property
    def fingerprint_count(self) -> int:
        return int(self.rolling.size + self.anchored.size)
