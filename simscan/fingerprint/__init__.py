"""Per-file fingerprints: checksums, Manber fingerprints, simhash.  Never imports Qt.

``fingerprint_file(path)`` and ``fingerprint_bytes(data)`` return a
:class:`simscan.model.Fingerprints`.  Files are read in chunks of ``chunk_size`` bytes and
decoded incrementally, so memory does not grow with file size.  See ``rolling`` (Manber),
``text`` (detection, decoding, normalisation), ``simhash`` and ``layout`` (byte layout).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import xxhash

from simscan.fingerprint import text as _text
from simscan.fingerprint.checksum import PARTIAL_SAMPLE, partial_checksum, tail_offset
from simscan.fingerprint.rolling import ManberHasher, ManberParams
from simscan.fingerprint.simhash import simhash
from simscan.model import Fingerprints

__all__ = [
    "FingerprintParams",
    "DEFAULT_PARAMS",
    "fingerprint_file",
    "fingerprint_bytes",
    "DecodedText",
    "decode_bytes",
    "decode_file",
]


@dataclass(frozen=True, slots=True)
class FingerprintParams:
    """window: units per Manber window.  text_density / binary_density: about one window in
    this many is a candidate fingerprint (then the no-overlap rule thins them further).
    text_anchor_density / binary_anchor_density: one unit bigram in this many is an anchor.
    chunk_size: bytes read at once.

    Text files are short and are where plagiarism and edits matter, so they are sampled
    densely; binary files are large and compared mostly as wholes, so they are sampled
    sparsely for speed.  See ARCHITECTURE.md for the measurements behind the defaults.
    """

    window: int = 50
    text_density: int = 16
    binary_density: int = 256
    text_anchor_density: int = 64
    binary_anchor_density: int = 4096
    chunk_size: int = 1 << 20

    def manber(self, is_text: bool) -> ManberParams:
        return ManberParams(
            window=self.window,
            density=self.text_density if is_text else self.binary_density,
            anchor_density=self.text_anchor_density if is_text else self.binary_anchor_density,
        )


DEFAULT_PARAMS = FingerprintParams()

ChunkSource = Callable[[], Iterator[bytes]]


def fingerprint_bytes(data: bytes, params: FingerprintParams = DEFAULT_PARAMS) -> Fingerprints:
    """Fingerprints of an in-memory byte string (same result as the file holding it)."""
    mv = memoryview(data)
    step = params.chunk_size

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(mv), step):
            yield mv[i : i + step]  # type: ignore[misc]

    size = len(data)
    head = bytes(mv[:PARTIAL_SAMPLE])
    tail = bytes(mv[tail_offset(size) :])
    return _fingerprint(chunks, size, head, tail, params)


def fingerprint_file(path: str | bytes | os.PathLike[str], params: FingerprintParams = DEFAULT_PARAMS) -> Fingerprints:
    """Fingerprints of a file, read in chunks.  Raises OSError when it cannot be read.

    The file is opened once; a text file whose later part does not decode is read a second
    time from the start.  The size is the number of bytes actually read.
    """
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(PARTIAL_SAMPLE)
        if size > PARTIAL_SAMPLE:
            f.seek(tail_offset(size))
            tail = f.read()
        else:
            tail = b""

        def chunks() -> Iterator[bytes]:
            f.seek(0)
            step = params.chunk_size
            while True:
                b = f.read(step)
                if not b:
                    return
                yield b

        return _fingerprint(chunks, size, head, tail, params)


def _fingerprint(chunks: ChunkSource, size: int, head: bytes, tail: bytes, params: FingerprintParams) -> Fingerprints:
    first = next(chunks(), b"")
    det = _text.detect(bytes(first[: _text.SAMPLE]))
    if det.is_text:
        assert det.encoding is not None
        try:
            return _fingerprint_text(chunks, det, "strict", size, head, tail, params)
        except UnicodeDecodeError:
            return _fingerprint_text(chunks, det, "replace", size, head, tail, params)
    return _fingerprint_binary(chunks, size, head, tail, params)


def _fingerprint_binary(chunks: ChunkSource, size: int, head: bytes, tail: bytes, params: FingerprintParams) -> Fingerprints:
    full = xxhash.xxh3_128()
    hasher = ManberHasher(params.manber(False), np.uint8)
    read = 0
    for chunk in chunks():
        full.update(chunk)
        read += len(chunk)
        hasher.feed(np.frombuffer(chunk, dtype=np.uint8))
    rolling, anchored = hasher.finish()
    digest = full.digest()
    return Fingerprints(
        size=read,
        checksum=digest,
        partial=_partial(read, size, head, tail),
        is_text=False,
        encoding=None,
        content_hash=digest,
        rolling=rolling,
        anchored=anchored,
        simhash=simhash(np.concatenate((rolling, anchored))),
        units=hasher.units,
    )


def _fingerprint_text(
    chunks: ChunkSource, det: _text.Detected, errors: str, size: int, head: bytes, tail: bytes, params: FingerprintParams
) -> Fingerprints:
    assert det.encoding is not None
    full = xxhash.xxh3_128()
    content = xxhash.xxh3_128()
    hasher = ManberHasher(params.manber(True), np.uint32)
    heavy = _text.Normalizer(heavy=True)
    light = _text.Normalizer(heavy=False)
    read = 0

    def raw() -> Iterator[bytes]:
        nonlocal read
        skip = det.bom_len
        for chunk in chunks():
            full.update(chunk)
            read += len(chunk)
            if skip:
                chunk, skip = chunk[skip:], max(0, skip - len(chunk))
            yield chunk

    for piece in _text.decode_chunks(raw(), det.encoding, errors):
        content.update(light.feed(piece)[0].tobytes())
        hasher.feed(heavy.feed(piece)[0])
    rolling, anchored = hasher.finish()
    return Fingerprints(
        size=read,
        checksum=full.digest(),
        partial=_partial(read, size, head, tail),
        is_text=True,
        encoding=det.encoding + ("+replace" if errors != "strict" else ""),
        content_hash=content.digest(),
        rolling=rolling,
        anchored=anchored,
        simhash=simhash(np.concatenate((rolling, anchored))),
        units=hasher.units,
    )


def _partial(read: int, size: int, head: bytes, tail: bytes) -> int:
    # A file that grew or shrank while read: head and tail are from the stat'ed size.
    return partial_checksum(read, head[: min(read, PARTIAL_SAMPLE)], tail if read == size else b"")


@dataclass(frozen=True, slots=True)
class DecodedText:
    """A file decoded for display and comparison: the text (None for binary) and encoding."""

    text: str | None
    encoding: str | None


def decode_bytes(data: bytes) -> DecodedText:
    """Decode like the fingerprinter does (same detection and fallbacks), all in memory."""
    det = _text.detect(data[: _text.SAMPLE])
    if not det.is_text:
        return DecodedText(None, None)
    assert det.encoding is not None
    body = data[det.bom_len :]
    try:
        return DecodedText(body.decode(det.encoding), det.encoding)
    except UnicodeDecodeError:
        return DecodedText(body.decode(det.encoding, "replace"), det.encoding + "+replace")


def decode_file(path: str | bytes | os.PathLike[str], limit: int | None = None) -> DecodedText:
    """Read (at most ``limit`` bytes of) a file and decode it like :func:`decode_bytes`."""
    with open(path, "rb") as f:
        data = f.read() if limit is None else f.read(limit)
    return decode_bytes(data)
