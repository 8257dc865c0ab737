"""Local memory as the load/store unit sees it: per-thread arrays interleaved across a warp.

Each thread's local memory is private, but the hardware lays the warp's 32 copies side by
side so that "consecutive 32-bit words are accessed by consecutive thread IDs" (CUDA
Programming Guide, device memory accesses): word ``w`` of lane ``l`` lies at byte
``4 * (32 w + l)`` of the warp's window. All lanes reading the same offset is one 128-byte
line per word; lanes reading different offsets, as an array indexed by the lane's id, scatter
over as many sectors as they have distinct words. Nsight Compute counts one request per 32-bit
word a lane moves (an 8-byte access is 2 requests, a 16-byte one 4): measured on the H100 with
seed 004's kernel, whose sectors this model also gives exactly (docs/seeds.md).
"""

from __future__ import annotations

import numpy as np

SECTOR = 32  # bytes: the unit of global traffic (L1 <-> L2), local, global and TMA alike
WARP = 32


def local_sectors(offsets: np.ndarray, width: int) -> np.ndarray:
    """32-byte sectors each warp-wide local access touches: ``offsets`` (..., 32) are each
    lane's byte offsets in its own local memory, ``width`` the bytes each lane moves.
    Returns the count per access, shape (...)."""
    words = np.asarray(offsets)[..., None] // 4 + np.arange(max(1, width // 4))
    physical = (words * WARP + np.arange(WARP)[:, None]) * 4  # byte in the warp's window
    sectors = np.sort((physical // SECTOR).reshape(*words.shape[:-2], -1), axis=-1)
    return 1 + (np.diff(sectors, axis=-1) != 0).sum(axis=-1)


def local_requests(width: int) -> int:
    """Requests Nsight Compute counts for one warp-wide local access of ``width`` bytes a lane."""
    return max(1, width // 4)
