"""Groups of many near-copies (issue 19's cluster case): files drawn from a small pool of paragraphs.

Usage: python3 benchmarks/groups_clusters.py [--files 20000] [--paragraphs 400] [--edit 0.05] [--keep DIR]

Builds ``--files`` text files, each a near-copy of one of ``--paragraphs`` paragraphs of the
evaluation corpus's Gutenberg books (synthetic words when the corpus is absent): file i is
paragraph i mod N with each word replaced, with probability ``--edit``, by a word of another
paragraph (seeded).  So the files form N clusters of ~files/N near-copies each (20,000 / 400: 50
a cluster, up to 490,000 similar pairs), the shape where every pair of a cluster is formed. Scans
them with the command line, then times ``simscan pairs`` and ``simscan groups`` (JSON to a
file) each in its own process and prints wall and CPU time, peak RSS and how many pairs and
groups they list.  Targets (issue 19): groups <= 2 s and <= 300 MB.  Scanning 20,000 files takes a
minute or two on a 2-core machine.

The commands run as an installed simscan does: its modules byte-compiled first (``pip install`` writes
the ``.pyc`` files; with ``PYTHONDONTWRITEBYTECODE`` set, as on the project's machines, a source tree
would be compiled again by every process: ~0.07 s of each command).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "evalcorpus" / "corpus"


def paragraphs(n: int, rng: random.Random) -> list[str]:
    """``n`` distinct paragraphs of 300-1,200 characters from the corpus's books (or synthetic)."""
    found: list[str] = []
    # One edition of each book (the others hold the same paragraphs, slightly edited).
    books = [min(d.glob("*.txt")) for d in sorted((CORPUS / "gutenberg").glob("*")) if any(d.glob("*.txt"))]
    for book in books:
        text = book.read_text(encoding="utf-8", errors="replace")
        for p in re.split(r"\n\s*\n", text):
            p = " ".join(p.split())
            if 300 <= len(p) <= 1200 and p not in found:
                found.append(p)
        if len(found) >= 4 * n:
            break
    if len(found) < n:
        words = [f"w{k}" for k in range(5000)]
        found += [" ".join(rng.choice(words) for _ in range(120)) for _ in range(n - len(found))]
    return rng.sample(found, n)


def build(root: Path, files: int, pool: list[str], edit: float, rng: random.Random) -> None:
    vocabulary = sorted({w for p in pool for w in p.split()})
    for i in range(files):
        d = root / f"d{i // 1000:03d}"
        if i % 1000 == 0:
            d.mkdir(parents=True, exist_ok=True)
        words = [rng.choice(vocabulary) if rng.random() < edit else w for w in pool[i % len(pool)].split()]
        (d / f"f{i:06d}.txt").write_text(" ".join(words) + "\n", encoding="utf-8")


def timed(cmd: list[str], out: Path) -> tuple[float, float, float]:
    """Wall s, CPU s and peak RSS (MB) of ``cmd`` run in its own process (GNU time's figures:
    ``getrusage`` of children would give the largest child so far, the scan's), stdout to ``out``."""
    stats = out.with_suffix(".time")
    with out.open("wb") as f:
        subprocess.run(["/usr/bin/time", "-o", str(stats), "-f", "%e %U %S %M", *cmd], stdout=f, check=True)
    wall, user, system, rss_kb = stats.read_text().split()[-4:]
    return float(wall), float(user) + float(system), int(rss_kb) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--paragraphs", type=int, default=400)
    ap.add_argument("--edit", type=float, default=0.05, help="share of a copy's words replaced (default 0.05)")
    ap.add_argument("--keep", type=Path, help="build and keep the tree and index here instead of a temporary folder")
    args = ap.parse_args()
    rng = random.Random(19)
    base = args.keep or Path(tempfile.mkdtemp(prefix="simscan-clusters-"))
    root, idx = base / "tree", base / "index.sqlite3"
    simscan = [sys.executable, "-m", "simscan"]
    if not idx.exists():
        pool = paragraphs(args.paragraphs, rng)
        t0 = time.perf_counter()
        build(root, args.files, pool, args.edit, rng)
        print(f"built {args.files:,} near-copies of {len(pool)} paragraphs ({args.edit:.0%} of words replaced) "
              f"in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        subprocess.run(simscan + ["scan", "--quiet", "--no-cache", "--index", str(idx), str(root)], check=True)
        print(f"scan: {time.perf_counter() - t0:.1f} s")
    compiled = _byte_compile()
    env_note = f"load {os.getloadavg()[0]:.1f}{'' if compiled else ', modules not byte-compiled'}"
    out = base / "out.json"
    for what in ("pairs", "groups"):
        wall, cpu, rss = timed(simscan + [what, "--no-cache", "--index", str(idx), "--format", "json"], out)
        n = sum(1 for _ in out.open("rb")) if what == "pairs" else _groups(out)
        print(f"{what:6s}: {wall:6.2f} s wall, {cpu:6.2f} s CPU, peak RSS {rss:7.1f} MB, {n:,} {what}  ({env_note})")
    print("targets (issue 19): groups <= 2 s, <= 300 MB")
    if args.keep is None:
        shutil.rmtree(base, ignore_errors=True)


def _byte_compile() -> bool:
    """Writes the ``.pyc`` files of the simscan that ``python -m simscan`` runs (as ``pip install``
    does); False when its folder is not writable."""
    import compileall

    import simscan

    try:
        return bool(compileall.compile_dir(Path(simscan.__file__).parent, quiet=1))
    except OSError:
        return False


def _groups(path: Path) -> int:
    text = path.read_text(encoding="utf-8")
    try:
        return len(json.loads(text))
    except json.JSONDecodeError:  # JSON Lines
        return sum(1 for line in text.splitlines() if line.strip())


if __name__ == "__main__":
    main()
