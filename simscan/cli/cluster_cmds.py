"""``simscan cluster scan|pairs|groups|query|stats|problems``: simscan on a Dask cluster.

The same options, outputs and exit codes as the local commands, with ``--store DIR`` (a folder
every worker sees) instead of ``--index``, and ``--scheduler ADDRESS`` (else a ``LocalCluster``
of ``--workers`` processes here).  Without the ``cluster`` extra every command says what to
install (exit 1).  Dask and PyArrow are imported only when a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simscan.cli.common import ProgressBar, display_path, human_bytes, human_duration
from simscan.cli.scan_cmds import add_walk_options, check_walk_args, print_problems
from simscan.cli.similarity_cmds import (
    _QUERY_EPILOG,
    _SCORES_EPILOG,
    add_options,
    keep_rules,
    params_from_args,
    print_groups,
    print_pairs,
    print_query,
    query_files,
    reference_roots,
    warn_crowded,
    warn_cutoff,
)

_EPILOG = """\
The store is a folder of Parquet files that this machine and every worker can read (a share):
file rows and fingerprints, partitioned by fingerprint value. Without --scheduler, a Dask
LocalCluster of --workers processes on this machine does the work. To use a cluster, start its
scheduler and workers with Dask's own commands, on machines that all have this simscan with its
cluster extra (pip install "simscan[cluster]") and see the files under the same paths:
  dask scheduler                        # prints its address, e.g. tcp://10.0.0.5:8786
  DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker tcp://10.0.0.5:8786   # on each worker machine
  simscan cluster scan /share/docs --store /share/simscan-store --scheduler tcp://10.0.0.5:8786
  simscan cluster groups --store /share/simscan-store --scheduler tcp://10.0.0.5:8786
pairs, groups and query print what the local commands print for the same files."""


def _add_cluster_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, type=Path, metavar="DIR",
                   help="the store: a folder every worker can read (made by the first `cluster scan`)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running Dask scheduler, e.g. tcp://host:8786 (default: a LocalCluster on this machine)")
    p.add_argument("--workers", type=_positive, default=None, metavar="N",
                   help="worker processes of the LocalCluster used without --scheduler (default: CPUs)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    top = sub.add_parser(
        "cluster", help="scan and find similar files on a Dask cluster (needs simscan[cluster])",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Scan into a store on shared storage and search it on a Dask cluster, with the answers "
        "of the local commands.",
    )
    csub = top.add_subparsers(dest="cluster_command", metavar="COMMAND", required=True)

    p = csub.add_parser(
        "scan", help="scan folders into the store (only new and changed files are read)",
        description="Walk ROOTs here and fingerprint every new or changed file (by path, size and mtime) on "
        "the workers into the store.",
        epilog="Ctrl-C stops the scan; what the workers finished is staged in the store and the next scan "
        "uses it. Exit codes as `simscan scan` (3: the store cannot be used).",
    )
    p.add_argument("roots", nargs="+", metavar="ROOT", type=Path, help="folder or file to scan")
    _add_cluster_options(p)
    add_walk_options(p)
    p.add_argument("--partitions", type=int, default=None, metavar="N",
                   help="fingerprint partitions of a new store, a power of two (default 64; more for "
                   "millions of documents: ARCHITECTURE.md)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")
    p.set_defaults(func=_damage_said(cmd_scan))

    for name, help_, desc, epilog in (
        ("pairs", "list pairs of similar files in the store",
         "List every pair of files in the store whose best score is at least P percent.", _SCORES_EPILOG),
        ("groups", "list groups of similar files with a reference file",
         "Group similar files of the store around a reference file, as `simscan groups` does.", None),
        ("query", "find files in the store similar to given files",
         "Find files in the store similar to FILE (which need not be in it); a is the queried file.", _QUERY_EPILOG),
    ):
        q = csub.add_parser(name, help=help_, description=desc, epilog=epilog,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        add_options(q, name, index=False)
        _add_cluster_options(q)
        q.set_defaults(func=_damage_said(_SEARCH[name]))

    for name, help_, func in (("stats", "show what the store holds", cmd_stats),
                              ("problems", "list files the last cluster scan could not (fully) read, and why",
                               cmd_problems)):
        s = csub.add_parser(name, help=help_)
        s.add_argument("--store", required=True, type=Path, metavar="DIR")
        s.add_argument("--format", choices=("text", "json"), default="text")
        # (accepted, so that a command copied with the others' options works: the store is read here, no worker)
        s.add_argument("--scheduler", metavar="ADDRESS", help="not needed: the store is read on this machine")
        s.set_defaults(func=_damage_said(func))


def _positive(value: str) -> int:
    try:
        v = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return v


def _damage_said(command: Any) -> Any:
    """``command`` with an unreadable file of its store (truncated, overwritten: pyarrow's error names
    it, on a worker or here) said as the store's damage (exit 3), not as a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(command(args))
        except Exception as e:
            root = str(args.store.resolve())
            if type(e).__module__ != "pyarrow.lib" or root not in str(e):  # (pyarrow.ArrowException's)
                raise
            from simscan.cluster.store import StoreError

            raise StoreError(f"the store {root} is damaged: {e}",
                             "Scan into a new store (every file is read again); this one is left as it is.") from e

    return run


def _connect(args: argparse.Namespace) -> Any:
    from simscan.cluster.connect import connect

    return connect(args.scheduler, args.workers)


def cmd_scan(args: argparse.Namespace) -> int:
    from simscan.cluster import require
    from simscan.cluster.scan import ClusterScanRequest, run_cluster_scan
    from simscan.walk import WalkOptions

    require()
    bad = check_walk_args(args)
    if bad is not None:
        return bad
    walk = WalkOptions(exclude=tuple(args.exclude), include=tuple(args.include), hidden=args.hidden,
                       min_size=args.min_size, max_size=args.max_size, follow_links=args.follow_links)
    req = ClusterScanRequest(roots=list(args.roots), store=args.store, walk=walk, partitions=args.partitions)
    bar = ProgressBar(enabled=False if args.quiet else None)
    try:
        with _connect(args) as client:
            result = run_cluster_scan(client, req, progress=bar)
    except KeyboardInterrupt:
        bar.finish()
        print("simscan: what the workers finished is staged in the store; the next `simscan cluster scan` "
              "uses it.", file=sys.stderr)
        raise
    finally:
        bar.finish()
    if not args.quiet:
        rate = result.files_read / result.elapsed_s if result.elapsed_s > 0 else 0.0
        print(
            f"scanned {result.files_seen:,} files in {human_duration(result.elapsed_s)}: {result.files_read:,} read "
            f"({human_bytes(result.bytes_read)}, {rate:,.0f} files/s), {result.files_reused:,} staged earlier, "
            f"{result.files_unchanged:,} unchanged, {result.files_removed:,} removed, {result.problems:,} problems",
            file=sys.stderr,
        )
        if result.problems:
            print(f"run `simscan cluster problems --store {args.store}` to see what could not be read", file=sys.stderr)
        # (the same cluster: without --scheduler, groups would start a LocalCluster on this machine)
        where = f" --scheduler {args.scheduler}" if args.scheduler else ""
        print(f"run `simscan cluster groups --store {args.store}{where}` to see similar files", file=sys.stderr)
    return 0


def _pair_set(args: argparse.Namespace, client: Any, store: Any, roots: Sequence[str] = ()) -> Any:
    from simscan.cluster.search import find_pair_set

    bar = ProgressBar()
    try:
        ps = find_pair_set(client, store, min_similarity=args.min_similarity, params=params_from_args(args),
                           reference_roots=roots, progress=bar)
    finally:
        bar.finish()
    warn_cutoff(ps)
    warn_crowded(ps)
    return ps


def cmd_pairs(args: argparse.Namespace) -> int:
    from simscan.cluster import require
    from simscan.cluster.connect import check_workers_see
    from simscan.cluster.store import Store

    require()
    store = Store.open(args.store)
    with _connect(args) as client:
        check_workers_see(client, store)
        ps = _pair_set(args, client, store)
    print_pairs(args, ps)
    return 0


def cmd_groups(args: argparse.Namespace) -> int:
    from simscan.cluster import require
    from simscan.cluster.connect import check_workers_see
    from simscan.cluster.store import Store
    from simscan.similarity.engine import groups_of_pair_set

    require()
    roots = reference_roots(args)
    keep = keep_rules(args)
    store = Store.open(args.store)
    with _connect(args) as client:
        check_workers_see(client, store)
        ps = _pair_set(args, client, store, roots)
    empty: list[str] = []
    groups = groups_of_pair_set(ps, min_similarity=args.min_similarity, reference_roots=roots, keep=keep, empty=empty)
    # (a plan names no index: `simscan apply` then checks the files and leaves the store as it is)
    return print_groups(args, groups, empty, lambda: (ps.files, ""))


def cmd_query(args: argparse.Namespace) -> int:
    from simscan.cluster import require
    from simscan.cluster.connect import check_workers_see
    from simscan.cluster.search import StoreIndex
    from simscan.cluster.store import Store

    require()
    store = Store.open(args.store)
    with _connect(args) as client:
        check_workers_see(client, store)
        pairs, failed = query_files(args, StoreIndex(client, store))
    return print_query(args, pairs, failed)


_SEARCH = {"pairs": cmd_pairs, "groups": cmd_groups, "query": cmd_query}


def cmd_stats(args: argparse.Namespace) -> int:
    from simscan.cluster import require
    from simscan.cluster.store import Store

    require()
    st = Store.open(args.store).stats()
    if args.format == "json":
        print(json.dumps(st, indent=2, sort_keys=True))
        return 0
    print(f"store:        {st['store']} ({st['partitions']} partitions, {st['segments']} segments)")
    print(f"files:        {st['files']:,} ({human_bytes(st['bytes'])}): {st['text_files']:,} text, "
          f"{st['binary_files']:,} binary, {st['files_with_errors']:,} unreadable")
    print(f"fingerprints: {st['fingerprints']:,}")
    last = st["last_scan"]
    if last:
        roots = ", ".join(display_path(r, terminal=True) for r in last["roots"])
        print(f"last scan:    {roots}: {last['files_seen']:,} files, {last['files_read']:,} read, "
              f"{last['problems']:,} problems, {human_duration(last['elapsed_s'])}")
    return 0


def cmd_problems(args: argparse.Namespace) -> int:
    from simscan.cluster import require
    from simscan.cluster.scan import problems
    from simscan.cluster.store import Store

    require()
    print_problems(problems(Store.open(args.store)), args.format, "no problems in the last scan")
    return 0
