"""Split-K (kernel10 with ``splits`` > 1): small and skinny problems fill the SMs.

A 1024^3 problem has 32 tiles of 128 x 256 for 132 SMs. With ``splits`` = S, each tile's K
tiles are cut into S contiguous ranges, split s taking K tiles ``s * n // S`` up to
``(s + 1) * n // S`` (n K tiles; the ranges differ by at most one K tile, none is empty), and
the grid has one block per (tile, split): S times the blocks, split-major (block
``s * tiles + t``; the tile order of `tcsim.kernels.scheduler` inside a split).

The reduction is fixed, so the bits are too. At the end of its K range a block's consumer
thread 0 takes a *ticket* (``atom.global.add`` on the tile's arrival counter):

- ticket < S - 1: the block is not the tile's last. Every consumer thread stores its f32
  accumulators to the workspace as they lie in its registers (``st.global.v4``: 512 bytes a
  warp instruction, whole lines), fences, and thread 0 adds one to the tile's *written*
  counter. The block then ends: no epilogue.
- ticket = S - 1: the last block. Thread 0 waits (atomics, so no global load depends on
  timing) until the S - 1 others have written, and resets both counters for the next launch;
  lane 0 of each consumer warp asks for C (the TMA epilogue's first boxes), and every thread
  sums the S partials *in split order*, ``((p0 + p1) + p2) + ...`` in f32 (``add.rn.f32``),
  its own partial from registers and the others by ``ld.global.cg.v4`` (L2, where the other
  SMs' stores are); then the normal epilogue (alpha, beta * C, conversion, TMA stores).

Which block is last depends on timing on the GPU, but the bits do not: the sum's order is the
splits', and every tile costs S - 1 partial stores and S - 1 partial loads whoever is last. The
simulator runs the splits in order, so split S - 1 is last there (`Machine.split_ticket`
counts arrivals as the GPU's atomic does).

f16 accumulators are refused with split-K (`GemmParams`): partials summed in f32 would not be
the f16 accumulator's bits, and f16 partials would round at every split.
"""

from __future__ import annotations

import numpy as np

PARTIAL_COLUMNS = 4 * 128  # a workspace row: one float4 of each thread of a warpgroup


def k_range(k_tiles: int, splits: int, split: int) -> tuple[int, int]:
    """(first, stop): the K tiles of ``split`` of ``splits`` over ``k_tiles`` K tiles."""
    return split * k_tiles // splits, (split + 1) * k_tiles // splits


def registers(p) -> int:
    """f32 accumulator registers per consumer thread (the wgmma m64nN fragment's)."""
    return p.block_n // 2


def rows_per_tile(p) -> int:
    """Workspace rows of one tile: its S partials, each a float4 row per (consumer, register
    quad)."""
    return p.splits * p.consumers * registers(p) // 4


def workspace_shape(p, M: int, N: int) -> tuple[int, int]:
    """The f32 workspace as a matrix (rows, 512): partial s of tile t (numbered along N first,
    ``row * tiles_n + col``), consumer c, registers 4j .. 4j + 3 of thread i at row
    ``((t * S + s) * consumers + c) * registers / 4 + j``, columns 4i .. 4i + 3."""
    grid_n, grid_m = p.grid(M, N)
    return grid_m * grid_n * rows_per_tile(p), PARTIAL_COLUMNS


def workspace_bytes(p, M: int, N: int) -> int:
    rows, cols = workspace_shape(p, M, N)
    return 4 * rows * cols


def _lanes(p, split: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-lane workspace (rows, columns) relative to the tile, (consumer warps, quads, 32)."""
    warps = np.arange(4 * p.consumers)[:, None, None]
    quads = registers(p) // 4
    j = np.arange(quads)[:, None]
    lane = np.arange(32)
    rows = (split * p.consumers + warps // 4) * quads + j + 0 * lane
    cols = 4 * (warps % 4 * 32 + lane) + 0 * j
    return rows, cols


def _to_quads(acc: np.ndarray) -> np.ndarray:
    """Accumulators (blocks, consumers, 128, R) -> (blocks, warps, R / 4, 32, 4)."""
    b, c, _, r = acc.shape
    return acc.reshape(b, 4 * c, 32, r // 4, 4).swapaxes(2, 3)


def _from_quads(quads: np.ndarray, consumers: int) -> np.ndarray:
    b, w, q, _, _ = quads.shape
    return np.ascontiguousarray(quads.swapaxes(2, 3)).reshape(b, consumers, 128, 4 * q)


def arrive(m, p, t: int, acc: np.ndarray) -> bool:
    """The end of a block's K range on tile ``t``: its ticket; a block that is not the last
    stores its partial. Whether the block is the tile's last (it then runs the epilogue)."""
    with m.tile(t):
        if m.split_ticket("split_ticket") < p.splits - 1:
            rows, cols = _lanes(p, m.split)
            m.store_global("partial_store", "W", rows, cols, _to_quads(acc))
            return False
    return True


def reduce(m, p, t: int, acc: np.ndarray, reverse: bool = False) -> np.ndarray:
    """The last block's sum of tile ``t``'s partials in split order, ((p0 + p1) + p2) ...,
    each add an f32 add rounded to nearest; its own partial is ``acc``. ``reverse``: the
    planted bug of the twin's PLANT_SPLIT_ORDER, the splits summed the other way round."""
    total = None
    with m.tile(t):
        for s in range(p.splits)[::-1] if reverse else range(p.splits):
            if s == m.split:
                part = _to_quads(acc)
            else:
                rows, cols = _lanes(p, s)
                part = m.load_global("partial_load", "W", rows, cols, vector=4)
            total = part if total is None else _add(total, part)
    return _from_quads(total, p.consumers)


def _add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.ascontiguousarray(x).view(np.float32) +
                np.ascontiguousarray(y).view(np.float32)).view(np.uint32)
