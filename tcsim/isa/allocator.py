"""Keep glibc from handing the engine's scratch memory back to the OS after every call.

One chunk of instructions allocates and frees some 30 MB of numpy temporaries, one to three
megabytes each. By default glibc returns the freed top of its heap to the OS, so the next call
page-faults all of it in again: a loop of `tcsim.mma` calls on 2,032 instructions each ran at
0.30 x 10^6 a second instead of 0.74 x 10^6 (docs/benchmarks.md). Two settings fix it: arrays
up to 8 MB come from the heap rather than their own mappings, and up to 64 MB of free heap is
kept for reuse. They apply to the whole process, so tcsim sets them once, on glibc only, when
the engine first runs, and not at all when the user set either through glibc's environment
variables or opts out with ``TCSIM_MALLOC_TUNING=0``.
"""

from __future__ import annotations

import ctypes
import os
import platform
from functools import cache

# mallopt parameter numbers from glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 8 << 20
TRIM_THRESHOLD = 64 << 20


@cache
def tune_allocator() -> bool:
    """Apply the settings above once; True when they were applied."""
    if os.environ.get("TCSIM_MALLOC_TUNING", "1") == "0":
        return False
    if any(v in os.environ for v in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
