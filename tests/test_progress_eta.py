"""The time left a progress report shows counts the files left as well as the bytes left."""

from __future__ import annotations

from simscan.progress import Progress, Throttle, time_left


def test_eta_counts_the_files_left_as_well_as_the_bytes() -> None:
    """The large files are read first: after 10 s, 95 % of the bytes but a third of the files are done.
    By the bytes alone ~0.5 s were left ("ETA 0s" at 35 %); by the files, 20 s are."""
    p = Progress("read", files_done=1_000, files_total=3_000, bytes_done=950, bytes_total=1_000)
    assert time_left(p, 10.0) == 20.0
    # Bytes left dominate: the bytes' estimate.
    p = Progress("read", files_done=900, files_total=1_000, bytes_done=100, bytes_total=1_000)
    assert time_left(p, 10.0) == 90.0
    assert time_left(Progress("read", files_total=10, bytes_total=10), 1.0) is None  # nothing done yet


def test_throttle_reports_the_longer_estimate() -> None:
    clock = iter([0.0, 0.0, 10.0])
    got: list[Progress] = []
    t = Throttle(got.append, clock=lambda: next(clock))
    t.report(Progress("read", 0, 3_000, 0, 1_000))
    t.report(Progress("read", 1_000, 3_000, 950, 1_000), force=True)
    assert got[-1].eta_s == 20.0
