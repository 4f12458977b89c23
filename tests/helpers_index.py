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
