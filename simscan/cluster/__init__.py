"""simscan beyond one machine: scans and pair searches on a Dask cluster (the optional extra
``simscan[cluster]``: ``dask[distributed]`` and ``pyarrow``).

The answers are the local ones: workers read files with the local scan's reading code
(``simscan.scanner.read_task``, the native core), and the client scores, groups and formats with
the similarity layer's own functions; only where the fingerprints live and who counts the
shared ones differ.

- :mod:`simscan.cluster.store`: the store, a folder of Parquet files every worker sees
  (segments of file rows and of fingerprints partitioned by value; a manifest renamed into
  place is the commit point).
- :mod:`simscan.cluster.tasks`: what runs on the workers (read a batch of files, shuffle
  fingerprints into partitions, count shared fingerprints of a partition, look values up).
- :mod:`simscan.cluster.scan`: ``simscan cluster scan`` (walk here, read there, commit).
- :mod:`simscan.cluster.search`: ``simscan cluster pairs|groups|query`` (the pair search's
  inverted-index half on the workers, the rest of it here).
- :mod:`simscan.cluster.connect`: a client of a running scheduler, or of a ``LocalCluster``.

Nothing here imports Qt, and nothing else in simscan imports this package: only the
``simscan cluster`` commands do.
"""

from __future__ import annotations

from simscan.errors import SimscanError

#: What to install when Dask or PyArrow is missing.
INSTALL_HINT = 'Install them with: pip install "simscan[cluster]"'


class ClusterUnavailable(SimscanError):
    """The cluster extra is not installed, or the scheduler cannot be reached or used."""

    exit_code = 1


def require() -> None:
    """Raise :class:`ClusterUnavailable` naming what to install when Dask or PyArrow is missing."""
    missing = []
    for name in ("distributed", "pyarrow"):
        try:
            __import__(name)
        except ImportError:
            missing.append("dask[distributed]" if name == "distributed" else name)
    if missing:
        raise ClusterUnavailable(
            f"the cluster commands need {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
            "not installed",
            INSTALL_HINT,
        )
