"""Split-K (kernel10 with ``splits`` > 1): small and skinny problems fill the SMs.

A 1024^3 problem has 32 tiles of 128 x 256 for 132 SMs. With ``splits`` = S, each tile's K
tiles are cut into S contiguous ranges, split s taking K tiles ``s * n // S`` up to
``(s + 1) * n // S`` (n K tiles; the ranges differ by at most one K tile, none is empty), and
the grid has one block per (tile, split): S times the blocks, split-major (block
``s * tiles + t``; the tile order of `tcsim.kernels.scheduler` inside a split).

The reduction is fixed, so the bits are too. At the end of its K range, a block of split
s < S - 1 stores its f32 accumulators to the workspace as they lie in its registers (every
consumer thread, ``st.global.v4``: 512 bytes a warp instruction, whole lines), fences, and its
first consumer thread adds one to the tile's counter (``red.global.add``); the block then ends,
with no epilogue. The block of split S - 1 reduces: its first consumer thread waits (on
atomics, so no global load's count depends on timing) until the counter reaches S - 1 and
resets it to zero for the next launch; lane 0 of each consumer warp asks for C (the TMA
epilogue's first boxes), and every thread adds the other partials to its own registers in
split order, ``(((p[S-1] + p0) + p1) + ...) + p[S-2]``, each an f32 add rounded to nearest
(``add.rn.f32``; the others by ``ld.global.cg.v4`` from L2, where the other SMs' stores are);
then the normal epilogue (alpha, beta * C, conversion, TMA stores). Adding into its own
registers keeps every load independent of the others (they are all in flight at once) and
needs no register beyond the accumulators; a canonical ((p0 + p1) + ...) would need a second
accumulator for the sum before the reducer's own partial. Split S - 1's blocks are the last
launched (split-major): the GPU hands blocks out in index order (not a CUDA guarantee; stream-K
kernels rely on it too), so when one waits, every block it waits for has started, and none of
those waits.

Every tile costs S - 1 partial stores and S - 1 partial loads. The simulator runs the splits in
order (`tcsim.kernels.scheduler.block_units`); `Machine.split_written` checks that the reducer
finds the others written, as the twin's counter does.

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
    """The end of a block's K range on tile ``t``: a split before the last stores its partial
    and counts it written; the last waits for the others'. Whether the block reduces (split
    S - 1: it then runs the epilogue)."""
    last = m.split == p.splits - 1
    with m.tile(t):
        if not last:
            rows, cols = _lanes(p, m.split)
            m.store_global("partial_store", "W", rows, cols, _to_quads(acc))
        m.split_written("split_written", last)
    return last


def reduce(m, p, t: int, acc: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Split S - 1's sum of tile ``t``'s partials: its own ``acc``, then p0, p1, ..., p[S-2]
    added in that order, each an f32 add rounded to nearest. ``reverse``: the planted bug of
    the twin's PLANT_SPLIT_ORDER, the others added from p[S-2] down to p0."""
    total = _to_quads(acc)
    others = range(p.splits - 1)
    with m.tile(t):
        for s in reversed(others) if reverse else others:
            rows, cols = _lanes(p, s)
            total = _add(total, m.load_global("partial_load", "W", rows, cols, vector=4))
    return _from_quads(total, p.consumers)


def _add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.ascontiguousarray(x).view(np.float32) +
                np.ascontiguousarray(y).view(np.float32)).view(np.uint32)
