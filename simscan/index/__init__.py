"""The local index: one SQLite file holding every scanned file's checksums, fingerprints and
simhash, an inverted index of (sampled) fingerprints, scan runs and problems.

See :mod:`simscan.index.schema` for the tables and migration policy, :mod:`simscan.index.store`
for the connection discipline and locking, :mod:`simscan.index.postings` for what the inverted
index holds and why.
"""

from simscan.index.errors import (
    IndexCorrupt,
    IndexDamaged,
    IndexError_,
    IndexLocked,
    IndexUnavailable,
    NotAnIndex,
    RefusedToMove,
)
from simscan.index.postings import DEFAULT_SHIFT as POSTING_SHIFT
from simscan.index.postings import posted_mask
from simscan.index.schema import SCHEMA_VERSION
from simscan.index.store import (
    FileRecord,
    FileTable,
    Index,
    PostingJob,
    companion_paths,
    default_index_path,
    move_aside,
    posting_spans,
    rebuild,
    set_aside_paths,
)

__all__ = [
    "POSTING_SHIFT",
    "SCHEMA_VERSION",
    "FileRecord",
    "FileTable",
    "Index",
    "IndexCorrupt",
    "IndexDamaged",
    "IndexError_",
    "IndexLocked",
    "IndexUnavailable",
    "NotAnIndex",
    "PostingJob",
    "RefusedToMove",
    "companion_paths",
    "default_index_path",
    "move_aside",
    "posted_mask",
    "posting_spans",
    "rebuild",
    "set_aside_paths",
]
