"""The C heap of a simscan process: one malloc arena for all its threads (glibc).

glibc's malloc gives each thread that allocates a heap of its own (an *arena*, up to 8 per CPU) and
keeps what a thread freed in that thread's arena for its next allocations.  The native core counts
a partition's pairs, and weighs the evidence, on short-lived threads: every partition and
every evidence chunk then leaves its freed buffers in another arena, and the process's resident
memory grows past what it uses.  Measured on 20,000 near-copies (``benchmarks/groups_clusters.py``):
peak RSS 345 MB with the default arenas, 270 MB with one, in the same time.  The core allocates in
large buffers, so threads sharing one arena's lock cost nothing measurable.

:func:`one_arena` is called by the command line and the window at start; a ``MALLOC_ARENA_MAX`` set
in the environment is left to rule.  Elsewhere than glibc (musl, macOS, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: ``mallopt``'s parameter number of the most arenas (glibc's malloc.h).
_M_ARENA_MAX = -8


def one_arena() -> bool:
    """Ask glibc's malloc for one arena shared by every thread; whether it took the setting (False
    elsewhere than glibc, or when ``MALLOC_ARENA_MAX`` is set)."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # (the C library the process already runs on)
    except (OSError, AttributeError):  # no symbol table to read, or no mallopt (musl)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_ARENA_MAX, 1) == 1
