"""Fingerprint throughput on one core, data in memory (issue 2).

Prints MB/s for the raw-bytes path (64 MiB of random bytes), the text path (Pride and
Prejudice, UTF-8 with curly quotes, repeated to about 6 MB; a synthetic English-like text
when the evaluation corpus is absent), py-tlsh on the same data where it imports, and the
batch API's files/s on 8 KB text files.  The LAST line is one JSON object with the keys
raw_mb_s, text_mb_s, tlsh_mb_s (null without tlsh), batch_files_s.

Run: ``python3 benchmarks/fingerprint_throughput.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simscan.fingerprint import fingerprint_bytes, fingerprint_many

CORPUS = Path(os.environ.get("SIMSCAN_EVALCORPUS", "/work/shared/evalcorpus")) / "corpus"
BOOK = CORPUS / "gutenberg" / "pride_and_prejudice" / "1342-0.txt"


def _best(fn, data_len: int, repeats: int) -> float:
    """Best of ``repeats`` runs, in MB/s (10^6 bytes per second)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return data_len / best / 1e6


def _text_data() -> bytes:
    if BOOK.exists():
        return BOOK.read_bytes() * 8
    rng = np.random.default_rng(7)
    words = ["the", "of", "and", "to", "a", "in", "that", "was", "her", "“Mr.", "Darcy,”", "said", "Elizabeth."]
    return " ".join(rng.choice(words, 1_000_000).tolist()).encode()


def _small_files(n: int, size: int) -> list[bytes]:
    text = _text_data()
    rng = np.random.default_rng(3)
    offs = rng.integers(0, len(text) - size - 8, n)
    # Cut at a space so that each file is valid UTF-8.
    out = []
    for o in offs.tolist():
        a = text.index(b" ", o)
        out.append(text[a + 1 : a + 1 + size].rsplit(b" ", 1)[0])
    return out


def main() -> None:
    quick = "--quick" in sys.argv
    reps = 2 if quick else 5
    raw = np.random.default_rng(1).integers(0, 256, 64 << 20, dtype=np.uint8).tobytes()
    text = _text_data()
    fingerprint_bytes(raw[: 1 << 20])  # build the tables outside the timing
    fingerprint_bytes(text[: 1 << 20])
    raw_mb_s = _best(lambda: fingerprint_bytes(raw), len(raw), reps)
    print(f"raw path : {raw_mb_s:8.1f} MB/s  ({len(raw) >> 20} MiB random bytes, one core)")
    text_mb_s = _best(lambda: fingerprint_bytes(text), len(text), reps)
    print(f"text path: {text_mb_s:8.1f} MB/s  ({len(text) / 1e6:.1f} MB UTF-8 English text)")
    tlsh_mb_s = None
    try:
        import tlsh  # type: ignore[import-not-found]
    except ImportError:
        print("tlsh     : not importable")
    else:
        tlsh_mb_s = _best(lambda: tlsh.hash(raw), len(raw), reps)
        tlsh_text = _best(lambda: tlsh.hash(text), len(text), reps)
        print(f"tlsh     : {tlsh_mb_s:8.1f} MB/s raw, {tlsh_text:.1f} MB/s on the text")
    files = _small_files(2000 if quick else 10000, 8192)
    fingerprint_many(files[:100])
    t0 = time.perf_counter()
    fingerprint_many(files)
    dt = time.perf_counter() - t0
    batch_files_s = len(files) / dt
    t0 = time.perf_counter()
    for f in files[:1000]:
        fingerprint_bytes(f)
    single_files_s = 1000 / (time.perf_counter() - t0)
    print(
        f"batch    : {batch_files_s:8.0f} files/s of ~8 KB text (fingerprint_many), "
        f"{single_files_s:.0f} files/s one by one (fingerprint_bytes)"
    )
    print(
        json.dumps(
            {
                "raw_mb_s": round(raw_mb_s, 1),
                "text_mb_s": round(text_mb_s, 1),
                "tlsh_mb_s": None if tlsh_mb_s is None else round(tlsh_mb_s, 1),
                "batch_files_s": round(batch_files_s),
            }
        )
    )


if __name__ == "__main__":
    main()
