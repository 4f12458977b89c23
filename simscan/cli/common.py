"""Helpers shared by the sub-commands: the ``--index`` option, opening the index, a progress bar."""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TextIO

from simscan.display import display_path
from simscan.index import Index
from simscan.progress import Progress


def add_index_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--index PATH`` (default: $SIMSCAN_INDEX, else the XDG data folder)."""
    parser.add_argument(
        "--index",
        metavar="PATH",
        type=Path,
        default=None,
        help="index file (default: $SIMSCAN_INDEX, else $XDG_DATA_HOME/simscan/index.sqlite3)",
    )


def open_index_from_args(args: argparse.Namespace, readonly: bool = True) -> Index:
    """Open the index named by ``args.index`` (or the default).  Raises the index errors (exit code 3)."""
    return Index.open(getattr(args, "index", None), readonly=readonly)


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):  # decimal units, written as the window writes them
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def human_duration(s: float) -> str:
    s = round(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


#: What a phase counts (``Progress.files_done``), where it is not files: the pair search's phases.
PHASE_UNITS = {
    "load": "fingerprints", "pairs": "parts", "score": "candidate pairs", "passages": "pairs", "code:pairs": "parts",
    "code:score": "candidate pairs", "code:passages": "pairs",
}
#: The names the bar gives phases (others are shown as they are).
PHASE_NAMES = {
    "load": "reading fingerprints", "exact": "copies", "pairs": "similar files", "score": "scoring pairs",
    "passages": "shared passages", "sets": "reading every stored set", "verify": "checking the files",
    "trash": "moving to the trash",
    "code:pairs": "program code", "code:score": "scoring program code", "code:passages": "shared code passages",
}


class ProgressBar:
    """A one-line progress bar on a terminal (stderr), redrawn in place; silent otherwise."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._drawn = False
        self._start = time.monotonic()
        self._phase = ("", self._start)  # the phase shown and when it began

    def __call__(self, p: Progress) -> None:
        if not self.enabled:
            return
        width = shutil.get_terminal_size((100, 20)).columns
        now = time.monotonic()
        if p.phase != self._phase[0]:
            self._phase = (p.phase, now)
        unit = PHASE_UNITS.get(p.phase, "files")
        if p.phase == "walk":
            line = f"walking: {p.files_done:,} files found"
        else:
            parts = [f"{PHASE_NAMES.get(p.phase, p.phase)}:"]
            if p.files_total:
                frac = min(1.0, p.bytes_done / p.bytes_total) if p.bytes_total else p.files_done / p.files_total
                bar_w = 20
                fill = int(frac * bar_w)
                parts.append(f"[{'#' * fill}{'.' * (bar_w - fill)}] {frac * 100:3.0f}%")
                parts.append(f"{p.files_done:,}/{p.files_total:,} {unit}")
            else:
                parts.append(f"{p.files_done:,} {unit}")
            if p.bytes_total:
                parts.append(f"{human_bytes(p.bytes_done)}/{human_bytes(p.bytes_total)}")
            if p.rate_bytes_s:
                parts.append(f"{human_bytes(p.rate_bytes_s)}/s")
            if p.eta_s is not None:
                parts.append(f"ETA {human_duration(p.eta_s)}")
            elif p.phase in PHASE_UNITS and now - self._phase[1] >= 2:  # a long step shows it is alive
                parts.append(f"{human_duration(now - self._phase[1])}")
            line = " ".join(parts)
        if p.current and len(line) + 4 < width:
            room = width - len(line) - 3
            shown = display_path(p.current, terminal=True)
            cur = shown if len(shown) <= room else "…" + shown[-(room - 1) :]
            line = f"{line}  {cur}"
        line = line[: width - 1]
        self.stream.write("\r\x1b[K" + line)
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        """Clear the bar so that the next line starts clean."""
        if self.enabled and self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False


def raw_b64(path: str) -> str | None:
    """base64 of the path's bytes when it is not valid UTF-8 (else None): what JSON output adds
    beside a path shown with \\xNN escapes, so a script gets the exact name."""
    try:
        path.encode("utf-8")
        return None
    except UnicodeEncodeError:
        return base64.b64encode(os.fsencode(path)).decode("ascii")
