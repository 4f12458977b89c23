"""Helpers for tests that change an index behind simscan's back (as another version would)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from simscan.index import checks
from simscan.index.schema import SCHEMA_VERSION


def make_newer(path: Path, version: int = SCHEMA_VERSION + 5) -> None:
    """Make the index at ``path`` look like one a newer simscan wrote: a table this version does not
    know, and the newer version number in the header and in the settings, as simscan records it."""
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE IF NOT EXISTS future_things (x)")
        checks.meta_set(c, "schema_version", version)
        c.execute(f"PRAGMA user_version = {version}")


def edit_files(path: Path, sql: str, params: tuple = ()) -> None:
    """Run ``sql`` on the ``files`` table and give the rows changed their checks again, as simscan's
    own writers do (a test standing in for an older or newer writer, not for damage)."""
    with sqlite3.connect(path) as c:
        c.execute(sql, params)
        total = 0
        rows = c.execute(f"SELECT {checks.FILE_COLUMNS_SQL} FROM files").fetchall()
        new = checks.file_checks(rows)
        c.executemany("UPDATE files SET row_check = ? WHERE id = ?", zip(new.tolist(), (r[0] for r in rows)))
        total = checks.digest(new)
        checks.meta_set(c, "files_digest", total)
        # (every writer since schema 3 bumps the files' generation with a change of them)
        gen = c.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        if gen is not None:
            checks.meta_set(c, "generation", int(gen[0]) + 1)


def sampled(v: int) -> bool:
    """The inverted index's 1-in-8 value sample, in plain integers: the top 3 bits of v times the
    golden ratio (mod 2^64) are zero."""
    return ((v * 0x9E3779B97F4A7C15) % (1 << 64)) >> 61 == 0


def posted_values(values: list[int], spans: list[int] | None) -> set[int]:
    """What a file posts, value by value: its sampled values and, a text file's (``spans`` given), every
    value whose dominance span reaches 128 (``simscan.index.postings``)."""
    return {v for k, v in enumerate(values) if sampled(v) or (spans is not None and spans[k] >= 128)}


def expected_postings(path: Path) -> set[tuple[int, int]]:
    """(value as uint64, file id) of every stored fingerprint set of the index at ``path`` that the
    inverted index must hold, read with plain SQL."""
    import numpy as np

    out: set[tuple[int, int]] = set()
    with sqlite3.connect(path) as c:
        q = ("SELECT f.file_id, CAST(f.fps AS BLOB), CAST(f.spans AS BLOB), fl.is_text FROM fingerprints f"
             " JOIN files fl ON fl.id = f.file_id")
        for fid, blob, spans, is_text in c.execute(q):
            values = np.frombuffer(blob, "<u8").tolist()
            d = list(spans) if is_text and spans is not None else None
            out.update((v, fid) for v in posted_values(values, d))
    return out
