"""Fingerprint throughput on one core, data in memory (issues 2 and 17).

Prints MB/s for the raw-bytes path (64 MiB of random bytes), the text path (Pride and
Prejudice, UTF-8 with curly quotes, repeated to about 6 MB; a synthetic English-like text
when the evaluation corpus is absent), CJK text (the corpus's Chinese and Japanese pages as
UTF-8, repeated), program source (the corpus's Java files, code view on), py-tlsh on the same
data where it imports (``pip install py-tlsh``: the peer, measured in the same run), and the batch
API's files/s on 8 KB text files.  Figures are best-of-N CPU time of this process (the per-core
figure, robust to other work on the machine), wall clock alongside.  The LAST line is one JSON
object with the keys raw_mb_s, text_mb_s, cjk_mb_s, code_mb_s, tlsh_mb_s (null without tlsh),
batch_files_s.  Targets (issue 17): raw >= 10x TLSH, text >= 3x TLSH.

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

CORPUS = Path(os.environ.get("SIMSCAN_EVALCORPUS", Path(__file__).resolve().parents[2] / "shared" / "evalcorpus")) / "corpus"
BOOK = CORPUS / "gutenberg" / "pride_and_prejudice" / "1342-0.txt"
BATCH = 500  # files per fingerprint_many call


def _best(fn, data_len: int, repeats: int) -> tuple[float, float]:
    """Best of ``repeats`` runs in MB/s (10^6 bytes per second): (CPU time of this process,
    wall clock).  CPU time is the per-core figure even when other work shares the machine;
    on an idle machine the two agree."""
    cpu = wall = float("inf")
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu = min(cpu, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return data_len / cpu / 1e6, data_len / wall / 1e6


def _text_data() -> bytes:
    if BOOK.exists():
        book = BOOK.read_bytes()
        bom = b"\xef\xbb\xbf" if book.startswith(b"\xef\xbb\xbf") else b""
        return bom + (book[len(bom) :] + b"\n") * 8  # one file: one BOM at the start
    rng = np.random.default_rng(7)
    words = ["the", "of", "and", "to", "a", "in", "that", "was", "her", "“Mr.", "Darcy,”", "said", "Elizabeth."]
    return " ".join(rng.choice(words, 1_000_000).tolist()).encode()


def _corpus_text(pattern: str, want: int, keep) -> bytes | None:
    """The corpus files matching ``pattern`` that ``keep`` accepts, decoded and joined as UTF-8,
    repeated to about ``want`` bytes (None without the corpus)."""
    from simscan.fingerprint import decode_bytes

    parts = []
    for p in sorted(q for q in CORPUS.glob(pattern) if q.is_file()):
        text = decode_bytes(p.read_bytes()).text
        if text and keep(text):
            parts.append(text)
    if not parts:
        return None
    data = "\n".join(parts).encode("utf-8")
    return (data * (want // len(data) + 1))[:want].rsplit(b"\n", 1)[0]


def _cjk(text: str) -> bool:
    han = sum(1 for c in text if "\u3040" <= c <= "\u9fff")
    return han > 0.3 * max(1, sum(c.isalpha() for c in text))


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
    raw_mb_s, raw_wall = _best(lambda: fingerprint_bytes(raw), len(raw), reps)
    print(f"raw path : {raw_mb_s:8.1f} MB/s CPU, {raw_wall:.1f} wall  ({len(raw) >> 20} MiB random bytes, one core)")
    text_mb_s, text_wall = _best(lambda: fingerprint_bytes(text), len(text), reps)
    print(f"text path: {text_mb_s:8.1f} MB/s CPU, {text_wall:.1f} wall  ({len(text) / 1e6:.1f} MB UTF-8 English text)")
    cjk_mb_s = code_mb_s = None
    cjk = _corpus_text("encodings/**/*", 6_000_000, _cjk)
    if cjk:
        cjk_mb_s, _ = _best(lambda: fingerprint_bytes(cjk), len(cjk), reps)
        print(f"CJK text : {cjk_mb_s:8.1f} MB/s CPU  ({len(cjk) / 1e6:.1f} MB of the corpus's Chinese and Japanese pages, UTF-8)")
    java = [p.read_bytes() for p in sorted(CORPUS.glob("irplag/**/*.java"))]
    if java:
        code_mb_s, _ = _best(lambda: fingerprint_many(java), sum(map(len, java)), reps)
        print(f"source   : {code_mb_s:8.1f} MB/s CPU  ({len(java)} Java files, {sum(map(len, java)) / 1e3:.0f} kB, code view on)")
    tlsh_mb_s = None
    try:
        import tlsh  # type: ignore[import-not-found]
    except ImportError:
        print("tlsh     : not importable")
    else:
        tlsh_mb_s, tlsh_wall = _best(lambda: tlsh.hash(raw), len(raw), reps)
        tlsh_text, _ = _best(lambda: tlsh.hash(text), len(text), reps)
        print(
            f"tlsh     : {tlsh_mb_s:8.1f} MB/s CPU, {tlsh_wall:.1f} wall on the raw data; {tlsh_text:.1f} CPU on the text"
        )
        print(f"ratios   : raw / tlsh = {raw_mb_s / tlsh_mb_s:.2f}, text / tlsh = {text_mb_s / tlsh_mb_s:.2f}")
    files = _small_files(2000 if quick else 10000, 8192)
    fingerprint_many(files[:100])
    batch_cpu = float("inf")
    for _ in range(2 if quick else 3):  # best of a few passes, like the MB/s figures
        c0 = time.process_time()
        for i in range(0, len(files), BATCH):
            fingerprint_many(files[i : i + BATCH])
        batch_cpu = min(batch_cpu, time.process_time() - c0)
    batch_files_s = len(files) / batch_cpu
    c0 = time.process_time()
    for f in files[:1000]:
        fingerprint_bytes(f)
    single_files_s = 1000 / (time.process_time() - c0)
    print(
        f"batch    : {batch_files_s:8.0f} files/s of ~8 KB text (fingerprint_many, {BATCH} per call, best CPU pass), "
        f"{single_files_s:.0f} files/s one by one (fingerprint_bytes)"
    )
    print(
        json.dumps(
            {
                "raw_mb_s": round(raw_mb_s, 1),
                "text_mb_s": round(text_mb_s, 1),
                "cjk_mb_s": None if cjk_mb_s is None else round(cjk_mb_s, 1),
                "code_mb_s": None if code_mb_s is None else round(code_mb_s, 1),
                "tlsh_mb_s": None if tlsh_mb_s is None else round(tlsh_mb_s, 1),
                "batch_files_s": round(batch_files_s),
            }
        )
    )


if __name__ == "__main__":
    main()
