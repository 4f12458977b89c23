"""Build the fingerprinter's per-process tables at import.

The scanner's worker processes fork from a server that imports this module first
(``multiprocessing`` forkserver preload): every worker then starts with the normalisation tables
(65,536 code points mapped through ``unicodedata``, ~0.1 s of CPU) and the hasher's power tables
already built, instead of building them on its first file of each scan.
"""

from __future__ import annotations

from simscan.fingerprint import DEFAULT_PARAMS, fingerprint_bytes
from simscan.fingerprint import text as _text

_text._table(True)
_text._table(False)
# One small text and one binary input: the rolling hash's power tables for both paths.
fingerprint_bytes(b"warm " * 64, DEFAULT_PARAMS)
fingerprint_bytes(bytes(range(256)) * 2, DEFAULT_PARAMS)
