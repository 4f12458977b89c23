"""Type stub of ``simscan._native``, simscan's native core (the Rust crate under ``native/``).

Private: users import ``simscan``, whose ``fingerprint`` and ``scanner`` modules wrap these
functions.  Long work runs with the GIL released; a panic in the core raises ``RuntimeError``
(``read_task``: a problem line for the file instead).
"""

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

#: Files at least this large are streamed in chunks by ``read_task``; smaller ones are read whole.
LARGE_FILE: int
#: Bytes of a file that text/binary detection examines.
SAMPLE: int

class NativeParams:
    """Fingerprint parameters (``simscan.fingerprint.FingerprintParams.native`` builds them)."""

    def __init__(
        self,
        window: int,
        text_density: int,
        binary_density: int,
        text_anchor_density: int,
        binary_anchor_density: int,
        text_anchor_length: int,
        level_units: list[int],
        text_chunk: int = ...,
        binary_chunk: int = ...,
    ) -> None: ...

#: (size, checksum, partial, is_text, encoding, content_hash, rolling, anchored, simhash, units)
FingerprintTuple: TypeAlias = tuple[
    int, bytes, int, bool, str | None, bytes, npt.NDArray[np.uint64], npt.NDArray[np.uint64], int, int
]

def fingerprint_bytes(
    data: bytes, params: NativeParams, encoding: str | None = None, after_iso2022: bool = False
) -> FingerprintTuple | tuple[str, Any]:
    """Fingerprints of bytes in memory; ``("legacy", iso2022)`` when chardet must name the encoding
    first (then call again with ``encoding``), ``("foreign", encoding)`` when Python's codec must
    decode it (``TextStream``)."""

def fingerprint_file(
    path: bytes,
    params: NativeParams,
    limit: int | None = None,
    encoding: str | None = None,
    after_iso2022: bool = False,
    follow: bool = True,
) -> FingerprintTuple | tuple[str, Any]:
    """As ``fingerprint_bytes``, for a file read in chunks (at most ``limit`` bytes).  Raises OSError."""

def read_task(
    items: list[tuple[int, bytes, int]], follow: bool, params: NativeParams, max_fingerprints: int
) -> list[tuple[int, Any, Any]]:
    """The scanner's reading of a batch ``[(slot, path, size)]``: ``[(slot, stat key, payload)]``, the
    payload a tuple, ``("legacy", data | None, iso2022)`` (chardet must name the encoding),
    ``("maybe-document", data | None)`` (its first bytes may be a document's: ``simscan.extract.sniff``
    decides), or (key None) a problem sentence or errno."""

class TextStream:
    """Fingerprints of text decoded by Python (legacy multi-byte encodings) or extracted from a
    document: its raw bytes through ``raw``, its text through ``text``."""

    def __init__(self, params: NativeParams) -> None: ...
    def raw(self, data: bytes) -> None: ...
    def text(self, text: str) -> None: ...
    def finish(self, size: int, head: bytes, tail: bytes, encoding: str) -> FingerprintTuple: ...

class UnitHasher:
    """The Manber hash over units fed in pieces, with explicit parameters (tests, benchmarks)."""

    def __init__(
        self,
        window: int,
        density: int,
        anchor_density: int,
        anchor_length: int = 0,
        anchor_level: int = 0,
        level_units: list[int] = ...,
        binary: bool = False,
    ) -> None: ...
    @property
    def units(self) -> int: ...
    def feed(self, units: npt.NDArray[np.uint8] | npt.NDArray[np.uint32]) -> None: ...
    def finish(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...

def detect(sample: bytes, after_iso2022: bool = False) -> tuple[Any, ...]:
    """``("binary",)``, ``("text", encoding, bom_length)`` or ``("legacy", iso2022)``."""

def decode(data: bytes, encoding: str, replace: bool = False) -> str | None: ...
def native_codec(encoding: str) -> bool: ...
def normalize(
    text: str, heavy: bool = True, offsets: bool = False
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64] | None]: ...
def looks_like_code(text: str) -> bool: ...
def code_form(text: str) -> str: ...
def code_units(text: str) -> npt.NDArray[np.uint32]: ...
def window_values(
    units: npt.NDArray[np.uint8] | npt.NDArray[np.uint32], starts: npt.NDArray[np.int64], window: int, binary: bool = False
) -> npt.NDArray[np.uint64]: ...
def anchored_levels(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]: ...
def partition_counts(
    values: npt.NDArray[np.uint64], own: npt.NDArray[np.uint32], level: npt.NDArray[np.uint8],
    row_level: npt.NDArray[np.uint8], n: int, cut: int, frequent_cut: int, hist_bins: int, pairs: bool,
    width: int, full: npt.NDArray[np.int32] | None = None, kept: npt.NDArray[np.int32] | None = None,
    pair_limit: int = 2**64 - 1, pair_cut: int = 2**64 - 1, hold_entries: bool = True, threads: int = 1,
    key_limit: int = 2**64 - 1,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.int64],
           npt.NDArray[np.int32], int, npt.NDArray[np.uint32],
           tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32]],
           tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint32], npt.NDArray[np.uint8]], bool]:
    """One partition of the pair search (``simscan_core::runs``): (run-length histogram, common values,
    frequent values, pair keys, their shared counts, pair incidences made, the frequent runs' lengths,
    the held runs (values, lengths), their entries (values, positions, levels), over: its distinct
    pairs were more than ``key_limit`` and none are given); ``threads``: threads that make and sort
    the pairs (the result does not depend on it)."""

def merge_counts(
    keys: list[npt.NDArray[np.int64]], counts: list[npt.NDArray[np.int32]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """Batches of (sorted distinct pair keys, counts) merged (``simscan_core::runs::merge_counts``): sorted
    distinct keys, counts summed (saturating).  Raises ValueError for a batch out of order."""

def place_groups(
    n: int, walk_pos: npt.NDArray[np.int64], walk_unit: npt.NDArray[np.int64], walk_start: npt.NDArray[np.int64],
    walk_end: npt.NDArray[np.int64], dst: npt.NDArray[np.int32], score: npt.NDArray[np.float64],
    pair: npt.NDArray[np.int64], count: npt.NDArray[np.int64], marked: npt.NDArray[np.uint8], move_keeps: float,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
           npt.NDArray[np.int64]]:
    """The sequential half of grouping (``simscan_core::grouping``): (each group's position, then per
    block its group's position, sequence, unit and pair).  Raises ValueError for columns that do not fit."""

def unicode_version() -> str: ...

# Sketches (native/py/src/sketches.rs): simscan.similarity.minhash and simhash_compressed wrap them.
def minhash_sketch(
    offsets: npt.NDArray[np.int64], values: npt.NDArray[np.uint64], seeds: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint32]:
    """MinHash sketches (rows x len(seeds)) of the CSR's sets; an empty set's row is all 2**32 - 1.
    Raises ValueError for offsets that do not ascend within ``values``."""

class SimhashTables:
    """The k + 1 sorted tables of simhashes, raw (``block`` 0) or compressed in blocks of ``block``."""

    def __init__(self, values: npt.NDArray[np.uint64], k: int, block: int) -> None: ...
    def lookup(self, queries: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]: ...
    def table(self, t: int) -> npt.NDArray[np.uint64]: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def k(self) -> int: ...
    def __len__(self) -> int: ...
