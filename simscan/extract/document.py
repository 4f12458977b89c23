"""One document read for the index: its text's fingerprints with its bytes' checksums.

Runs in an extraction worker process (``pool``).  The file is opened as the scanner opens files
(read-only, ``O_NOATIME`` where allowed, ``O_NONBLOCK``, not through a link unless links are
followed), checked to be the file the walk saw before and after reading, and

* its size, checksum and partial checksum are those of its **bytes** (so "exact" stays "same
  bytes", and the copies and trash checks read the same bytes the scan saw);
* everything else (fingerprints, simhash, content hash, units) is that of its **text**, fingerprinted
  through :func:`simscan.fingerprint.fingerprint_bytes` as a UTF-8 text file would be: the same text
  in a DOCX, a PDF and a ``.txt`` has the same fingerprints, and is a "content" pair when the
  light forms agree;
* a document whose text cannot be read (password, damage, no text layer, a bomb) is fingerprinted
  by its bytes, as before documents were read, with a note saying why.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, replace

import numpy as np
import xxhash

from simscan.extract import FORMATS, extract, reader_version
from simscan.extract.base import Extracted, ExtractError, shown
from simscan.model import FingerprintMeta, Fingerprints

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

#: How a note ends when a document's text could not be read ("PDF: password-protected; compared by its bytes").
BY_ITS_BYTES = "compared by its bytes"
#: Documents up to this size are read into memory once (checksums and text from the same bytes);
#: larger ones are read from the file twice (checksums streamed, then the reader's own access).
IN_MEMORY = 256 << 20


class Changed(Exception):
    """The file changed (or was replaced) while it was read."""


@dataclass(frozen=True, slots=True)
class DocumentRead:
    """What the scanner stores for one document.  ``fingerprints``: a
    :class:`simscan.model.Fingerprints` (text or, on failure, bytes); ``key``: (device, inode, size,
    mtime_ns, ctime_ns) as read; ``note``: a problem line, or None; ``source``: (format, extractor,
    its version string) for the index; ``summary``: where the text came from
    (:meth:`Extracted.summary`; None when read as bytes)."""

    key: tuple[int, int, int, int, int]
    fingerprints: Fingerprints
    note: str | None
    source: tuple[str, str, str]
    summary: str | None
    #: The text the fingerprints are of (only when asked: ``keep_text``).
    text: str | None = None


def _key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def open_document(path: bytes | str, follow: bool = True) -> int:
    from simscan.fingerprint import open_fd_unseen

    return open_fd_unseen(path, os.O_RDONLY | os.O_NONBLOCK | _O_CLOEXEC | (0 if follow else _O_NOFOLLOW))


def read_document(
    path: bytes, fmt: str, follow: bool = False, raw_only: str | None = None, keep_text: bool = False
) -> DocumentRead:
    """Read the document at ``path`` (sniffed as ``fmt``) for the index.  ``raw_only``: fingerprint
    its bytes only, with this reason as the note (after an extraction that was killed);
    ``keep_text``: return the text too (compare, the preview).  Raises OSError when it cannot be
    read and :class:`Changed` when it changed while read."""
    from simscan.fingerprint import fingerprint_bytes, fingerprint_file

    extractor = FORMATS[fmt]
    source = (fmt, extractor, reader_version(extractor))
    fd = open_document(path, follow)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Changed("no longer a regular file")
        size = st.st_size
        note: str | None = None
        summary = text = None
        if raw_only is not None:
            fp = _bytes_only(fingerprint_file(os.dup(fd), limit=size + 1))
            note = raw_only
        else:
            data = os.pread(fd, size + 1, 0) if size <= IN_MEMORY else None
            try:
                if data is not None:
                    if len(data) != size:
                        raise Changed("changed size while read")
                    got = extract(data, fmt)
                else:
                    with os.fdopen(os.dup(fd), "rb") as f:
                        got = extract(f, fmt)
            except ExtractError as e:
                got = None
                note = f"{shown(fmt)}: {e}; {BY_ITS_BYTES}"
            except MemoryError:
                got = None
                note = f"{shown(fmt)}: its text needs more memory than a document may use; {BY_ITS_BYTES}"
            if got is None:
                fp = _bytes_only(fingerprint_bytes(data) if data is not None
                                 else fingerprint_file(os.dup(fd), limit=size + 1))
            else:
                fp = _text_fingerprints(got, data, fd, size)
                summary = got.summary()
                text = got.text if keep_text else None
                if got.notes:
                    note = f"{shown(fmt)}: " + "; ".join(got.notes)
        if _key(os.fstat(fd)) != _key(st) or fp.size != size:
            raise Changed("changed while read")
        return DocumentRead(_key(st), fp, note, source, summary, text)
    finally:
        os.close(fd)


def _bytes_only(fp: Fingerprints) -> Fingerprints:
    """``fp`` of a document whose text could not be read, without its fingerprints: its checksums find its
    exact copies, but the windows of its bytes are its format's structure (a zip's directory, a PDF's
    objects, a compound file's tables), which two unrelated damaged or encrypted documents share: a truncated
    DOCX and a zip bomb disguised as one paired at 36 %, two truncated essays at 23 % (acceptance test).
    Bytes that read as text (a PDF of uncompressed streams) keep theirs: their words are in them."""
    if fp.is_text:
        return fp
    empty = np.empty(0, np.uint64)
    return replace(fp, rolling=empty, anchored=empty, meta=None if fp.meta is None else FingerprintMeta.from_blob(b"", 0))


def _text_fingerprints(got: Extracted, data: bytes | None, fd: int, size: int) -> Fingerprints:
    """The fingerprints of ``got.text`` with the raw file's size and checksums (``data``: the whole
    file when it was read into memory, else it is read again from ``fd``)."""
    from simscan.fingerprint import fingerprint_bytes
    from simscan.fingerprint.checksum import PARTIAL_SAMPLE as sample
    from simscan.fingerprint.checksum import partial_checksum, tail_offset

    fp = fingerprint_bytes(got.text.encode("utf-8", "surrogatepass"))
    if data is not None:
        checksum = xxhash.xxh3_128_digest(data)
        head, tail = data[: min(size, sample)], data[tail_offset(size) :]
    else:
        h = xxhash.xxh3_128()
        off = 0
        while off < size:
            b = os.pread(fd, min(4 << 20, size - off), off)
            if not b:
                break
            h.update(b)
            off += len(b)
        checksum = h.digest()
        head = os.pread(fd, min(size, sample), 0)
        tail = os.pread(fd, sample, tail_offset(size)) if size > sample else b""
    # The encoding column names where the text came from ("docx"): it is shown beside the file.
    return replace(fp, size=size, checksum=checksum, partial=partial_checksum(size, head, tail), encoding=got.format)


def read_or_reason(path: bytes, fmt: str, follow: bool, raw_only: str | None = None) -> DocumentRead | str:
    """:func:`read_document`, tried again once when the file changed while read; a file that cannot
    be read gives the reason, worded as the scanner words it ("vanished ..." drops its row)."""
    import errno

    for attempt in (0, 1):
        try:
            return read_document(path, fmt, follow, raw_only)
        except Changed:
            if attempt:
                return "changed while being read (tried twice); skipped this time"
        except FileNotFoundError:
            return "vanished before it could be read"
        except OSError as e:
            if e.errno == errno.ELOOP:
                return "became a symbolic link after the walk; not followed"
            return f"cannot be read: {e.strerror or e}"
    raise AssertionError("unreachable")


def fingerprint_path(path: str | os.PathLike[str]) -> Fingerprints:
    """A file's fingerprints as the scan stores them: a document's text's (read in a worker process,
    ``pool.read_isolated``), any other file's bytes' (``fingerprint_file``).  For ``query`` and the
    texts to ignore.  Raises OSError when the file cannot be read."""
    return fingerprint_path_noted(path)[0]


def fingerprint_path_noted(path: str | os.PathLike[str]) -> tuple[Fingerprints, str | None]:
    """:func:`fingerprint_path`, with the line ``simscan problems`` would give the file (a document
    compared by its bytes: "PDF: password-protected; compared by its bytes"), or None."""
    from simscan.extract.pool import read_isolated
    from simscan.fingerprint import fingerprint_file

    doc = read_isolated(path)
    return (fingerprint_file(os.fspath(path)), None) if doc is None else (doc.fingerprints, doc.note)


def read_text(path: str | os.PathLike[str], limit: int) -> tuple[Fingerprints, bytes, str] | None:
    """For ``compare``: a document's fingerprints (as the scan stores them), its text as UTF-8 (the
    first ``limit`` bytes) and where that text came from (or why the document is compared by its
    bytes: then its first ``limit`` bytes); None when the file is no document."""
    from simscan.extract.pool import read_isolated
    from simscan.fingerprint import open_unseen

    doc = read_isolated(path, keep_text=True)
    if doc is None:
        return None
    if doc.text is None:  # read by its bytes: the note says why
        with open_unseen(os.fspath(path)) as f:
            data = f.read(limit)
        return doc.fingerprints, data, doc.note or BY_ITS_BYTES
    source = doc.summary or shown(doc.source[0])
    return doc.fingerprints, doc.text.encode("utf-8", "surrogatepass")[:limit], source
