"""``simscan.heap``: one malloc arena for every thread of a simscan process (glibc)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROBE = "from simscan.heap import one_arena; print(one_arena())"


def _glibc() -> bool:
    try:
        return sys.platform.startswith("linux") and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):
        return False


def _run(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif(not _glibc(), reason="glibc's malloc only")
def test_one_arena_is_taken_by_glibc_and_leaves_an_explicit_setting_alone() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert _run(env) == "True"  # mallopt(M_ARENA_MAX, 1) returned 1
    assert _run({**env, "MALLOC_ARENA_MAX": "4"}) == "False"  # the person's own setting rules
