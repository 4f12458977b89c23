"""The fault campaign, longer than the test suite's: kills, damaged pages, and what came of them.

Usage: python3 benchmarks/faults.py [--kills 200] [--damage 10] [--bases 30] [--seed 1] [--only kills|damage]

Prints:
1. ``kill -9`` of a scan (or of the window's trash action) at random moments of each phase, a reader
   process reading the index all along: kills survived (integrity check passed, the next scan
   completed, its results identical to a fresh scan's), per phase;
2. random bytes in the pages of every table of a real index, ``--damage`` places per table (and the
   header): how the damage was found (by the read commands, by ``simscan check`` only, or by nobody
   because it changed nothing any command reads), how it was repaired (a scan that re-read the files
   concerned, or the ``--rebuild`` the messages named), and the files re-read; a breach of the rule
   (results that differ from the intact index's printed with exit 0, or no repair) is counted and shown.

Everything runs on a 2-core VM in a few minutes at the defaults (the kills take ~2 s each).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fault_campaign import (
    checkpoint,
    damage_cycle,
    has_dbstat,
    make_family_tree,
    outputs,
    pages_by_table,
    scan,
)


def run_damage(top: Path, per_table: int, bases: int, seed: int) -> None:
    if not has_dbstat():
        print("damage: skipped (this SQLite has no dbstat table)")
        return
    root = top / "dtree"
    files = make_family_tree(root, n_bases=bases, seed=seed)
    base = top / "intact.db"
    scan(root, base)
    checkpoint(base)
    queries = files[:: max(1, len(files) // 3)][:3]
    expected = outputs(base, queries)
    rng = random.Random(seed)
    work = top / "dwork"
    work.mkdir()
    by_table: dict[str, list] = {}
    for table, pages in sorted(pages_by_table(base).items()):
        by_table[table] = [(table, p, k) for p, k in pages]
    by_table["(header)"] = [None]
    tally: dict[str, Counter] = {}
    breaches: list[str] = []
    reread = 0
    t0 = time.perf_counter()
    for table, places in by_table.items():
        c = tally.setdefault(table, Counter())
        for _ in range(per_table):
            try:
                r = damage_cycle(base, work, root, expected, queries, rng.choice(places), rng)
            except AssertionError as e:
                c["BREACH"] += 1
                breaches.append(str(e)[:300])
                continue
            found = "reads" if r["found_by_reads"] else "check" if r["found_by_check"] else "none"
            c[f"found by {found}"] += 1
            c["rebuild" if "rebuild" in r["remedy"] else "repaired by a scan" if any(
                "repaired" in x for x in r["remedy"]) else "nothing to repair"] += 1
            reread += r["reread"]
    n = sum(sum(v for k, v in c.items() if k.startswith(("found", "BREACH"))) for c in tally.values())
    print(f"damage: {n} places in {len(by_table)} tables and indexes ({bases} bases, "
          f"{len(files)} files), {time.perf_counter() - t0:.0f} s")
    print(f"  {'table':28} {'reads':>6} {'check':>6} {'none':>6} {'repaired':>9} {'rebuild':>8} {'BREACH':>7}")
    total: Counter = Counter()
    for table, c in tally.items():
        total.update(c)
        print(f"  {table:28} {c['found by reads']:6} {c['found by check']:6} {c['found by none']:6} "
              f"{c['repaired by a scan']:9} {c['rebuild']:8} {c['BREACH']:7}")
    print(f"  {'total':28} {total['found by reads']:6} {total['found by check']:6} {total['found by none']:6} "
          f"{total['repaired by a scan']:9} {total['rebuild']:8} {total['BREACH']:7}")
    print(f"  faults detected: {total['found by reads'] + total['found by check']}; files re-read by the scans "
          f"that repaired or rebuilt: {reread} (of {len(files)} files x {n} places); breaches: {total['BREACH']}")
    for b in breaches[:10]:
        print(f"  BREACH: {b}")


def run_kills(top: Path, kills: int, seed: int) -> None:
    from tests.fault_kill import PHASES, kill_cycle, prepare

    ctx = prepare(top / "ktree", top / "kwork")
    rng = random.Random(seed)
    per: dict[str, Counter] = {p: Counter() for p in PHASES}
    failures: list[str] = []
    t0 = time.perf_counter()
    for k in range(kills):
        phase = PHASES[k % len(PHASES)]
        try:
            r = kill_cycle(ctx, phase, rng)
            per[phase]["survived"] += 1
            per[phase]["identical"] += bool(r["identical"])
            per[phase]["killed in phase"] += bool(r["killed_in_phase"])
        except AssertionError as e:
            per[phase]["FAILED"] += 1
            failures.append(f"{phase}: {str(e)[:300]}")
    print(f"kill -9: {kills} kills, {time.perf_counter() - t0:.0f} s, a reader process open all along")
    print(f"  {'phase':10} {'kills':>6} {'in phase':>9} {'survived':>9} {'identical':>10} {'FAILED':>7}")
    for p, c in per.items():
        n = c["survived"] + c["FAILED"]
        print(f"  {p:10} {n:6} {c['killed in phase']:9} {c['survived']:9} {c['identical']:10} {c['FAILED']:7}")
    tot = sum((c for c in per.values()), Counter())
    print(f"  kills survived: {tot['survived']} of {kills}; results identical to a fresh scan's: {tot['identical']}")
    for f in failures[:10]:
        print(f"  FAILED: {f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--damage", type=int, default=10, help="damaged places per table")
    ap.add_argument("--bases", type=int, default=20, help="base texts of the damage campaign's tree")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=("kills", "damage"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="simscan-faults-") as d:
        top = Path(d)
        if args.only != "kills":
            run_damage(top, args.damage, args.bases, args.seed)
        if args.only != "damage":
            run_kills(top, args.kills, args.seed)


if __name__ == "__main__":
    main()
