"""The tile scheduler: which block computes which tiles of D, in what order.

The ladder launches one block per tile and lets the GPU hand blocks to SMs. A warp-specialized
kernel can instead walk a *tile order* of its own (`GemmParams.group_m`) and launch
*persistent* blocks (`GemmParams.persistent_blocks`), block b computing tiles b, b + blocks,
b + 2 blocks, ... of that order, so that its producer fills the next tile's stages while its
consumers store the last one. The CUDA twin's ``tile_coordinates`` (tcsim/hw/kernels/hopper.cuh) is
the same order; the hw tests hold the two to the same bits.

Why an order matters: the tiles in flight at once read their rows of A and columns of B from
L2. Walking N first, a wave of 132 tiles of 128 x 256 on an 8192 x 8192 D covers 4 block rows
and all 32 block columns, so every wave reads all of B from DRAM again. Groups of 16 block rows
walked down M first make a wave about 16 x 8 tiles, which share far more of both.
"""

from __future__ import annotations

import numpy as np

from .params import GemmParams, tile_count


def tile_order(p: GemmParams, M: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols): the tile indices along M and N of the t-th tile handed out, t = 0 ..
    tiles - 1. ``group_m`` 0: N fastest. g > 0: groups of g block rows (the last group may be
    shorter), each walked column by column, M fastest inside a column.

    With clusters (``cluster_m`` c > 1) the order is one of c-tall tiles, (row, col) walked as
    above over tiles_m / c rows, and the c tiles of each, rows c row .. c row + c - 1, follow
    one another: block b, cluster rank b % c, computes tiles b, b + blocks, ... as ever, each
    in row c R + b % c (the twin's ``block_tile``)."""
    c = p.cluster_m
    tiles_m, tiles_n = tile_count(M, p.block_m) // c, tile_count(N, p.block_n)
    t = np.arange(tiles_m * tiles_n)
    if not p.group_m:
        rows, cols = t // tiles_n, t % tiles_n
    else:
        per_group = p.group_m * tiles_n
        first = t // per_group * p.group_m
        rows_in_group = np.minimum(p.group_m, tiles_m - first)
        within = t % per_group
        rows, cols = first + within % rows_in_group, within // rows_in_group
    if c == 1:
        return rows, cols
    return (rows[:, None] * c + np.arange(c)).reshape(-1), np.repeat(cols, c)


def blocks_launched(p: GemmParams, M: int, N: int) -> int:
    """The grid's size: one block per tile, or the persistent blocks (at most one per tile);
    with split-K, one block per (tile, split) (`tcsim.kernels.split_k`)."""
    tiles = tile_count(M, p.block_m) * tile_count(N, p.block_n)
    if p.splits > 1:
        return tiles * p.splits
    return min(tiles, p.persistent_blocks) if p.persistent_blocks else tiles


def block_units(p: GemmParams, M: int, N: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """`block_tiles` with each group's split: [(split, rows, cols)]. Split-K's blocks compute
    one tile each, split by split in order (split s of the tiles in `tile_order`'s order
    is blocks s * tiles ...): the order in which a simulator runs them, so that split
    ``splits - 1``, which reduces, finds the others' partials written
    (`tcsim.kernels.split_k`)."""
    if p.splits == 1:  # with clusters, the blocks of each rank apart (`Machine.cluster_rank`)
        c = p.cluster_m
        return [(0, rows[rank::c], cols[rank::c]) for rows, cols in block_tiles(p, M, N)
                for rank in range(c) if rows[rank::c].size]
    rows, cols = tile_order(p, M, N)
    return [(s, rows[:, None], cols[:, None]) for s in range(p.splits)]


def block_tiles(p: GemmParams, M: int, N: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each block's tiles, in the order it computes them, as groups of blocks with the same
    number of tiles: [(rows, cols)], each (blocks, tiles per block). A simulator runs a group's
    blocks together, as they issue the same instructions."""
    rows, cols = tile_order(p, M, N)
    blocks = blocks_launched(p, M, N)
    count = -(-rows.size // blocks)  # tiles of the first blocks; the rest have one fewer
    full = rows.size - (count - 1) * blocks  # blocks with `count` tiles
    groups = []
    for first, last, tiles in ((0, full, count), (full, blocks, count - 1)):
        if last > first and tiles:
            index = np.arange(first, last)[:, None] + blocks * np.arange(tiles)
            groups.append((rows[index], cols[index]))
    return groups
