"""kernel9's epilogue: C and D cross shared memory in whole 128-byte lines.

The ladder's epilogue moves C and D as one 32-bit word per lane: a warp's ``st.global.b32``
touches 8 rows, 16 bytes of each, half of a sector. On the H100 that store path cost kernel8
about a sixth of its time at 8192x4096x2048 (docs/kernels.md). Here each consumer warp owns a
staging buffer of 16 rows x 128 bytes (64 columns; 16-byte chunk c of row r at c ^ (r % 8), so
neither the row-wise nor the fragment-wise accesses conflict) and walks its 16 x block_n rows
of the tile 64 columns at a time:

1. C: ``ld.global.cg.v4`` (lane l: 16 bytes of row 4q + l / 8, chunk l % 8, for q = 0..3, so
   8 lanes read one whole line), ``st.shared.v4`` into the staging, then ``ldmatrix.x4``
   four times, which hands every lane its C words in the accumulators' m16n8 order;
2. D: the ladder's arithmetic (`tcsim.kernels.blocks.epilogue_words`), ``stmatrix.x4`` to the
   same places, ``ld.shared.v4`` row-wise, ``st.global.v4``: whole lines again.

On a ragged edge tile the lanes whose 16 bytes lie past the matrix neither load C (their
staging gets zeros) nor read D's line from the staging nor store it.

Matrix i of an x4 is columns 8(2h + i // 2) .. + 7 of rows 8(i % 2) .. + 7 of the chunk (h =
0..3), so register i of every lane is the accumulator word of column group 2h + i // 2, half
i % 2. The twin (``epilogue_tile_staged`` in hopper.cuh) issues C's global loads one chunk
ahead; the simulator issues the same instructions in program order.

A tile whose width is not a multiple of 64 (96, 160, 224: `GemmParams.column_box`) is walked
32 columns at a time through a staging of 16 rows x 64 bytes under the 64-byte swizzle (chunk
c of row r at c ^ (r / 2 % 4)): 4 lanes move a 64-byte line, a row-wise step covers 8 rows (2
steps), and two ldmatrix.x4 (h = 0, 1) cover the chunk.
"""

from __future__ import annotations

import numpy as np

from ..isa.fragments import mma_fragment
from .blocks import epilogue_words
from .machine import OFF
from .params import GemmParams

ROWS = 16  # a consumer warp's rows of the tile


def staging_address(p: GemmParams, warp, row, chunk) -> np.ndarray:
    """Shared byte address of 16-byte chunk ``chunk`` of ``row`` in consumer warp ``warp``'s
    staging (arrays broadcast): the swizzle of its rows (128-byte, or 64-byte) on the offset
    in the staging."""
    row_bytes = p.box_row_bytes
    offset = np.asarray(row) * row_bytes + np.asarray(chunk) * 16
    return p.staging_offset + np.asarray(warp) * ROWS * row_bytes + p.box_swizzle.swizzle(offset)


def _lines(p: GemmParams, warps: np.ndarray):
    """Row-wise moves: each lane's staging address, and its row and column in the chunk,
    (warps, steps, 32) each: with L = lanes per line (8 for 128-byte rows, 4 for 64-byte
    ones), lane l of step q moves 16 bytes of row (32 / L) q + l / L, chunk l % L."""
    per_line = p.box_row_bytes // 16
    lane = np.arange(32)
    rows_per_step = 32 // per_line
    row = rows_per_step * np.arange(ROWS // rows_per_step)[:, None] + lane // per_line
    chunk = np.broadcast_to(lane % per_line, row.shape)
    return staging_address(p, warps[:, None, None], row, chunk), row, 8 * chunk


def matrix_addresses(p: GemmParams, warps: np.ndarray) -> np.ndarray:
    """ldmatrix/stmatrix.x4 row addresses, (warps, x4s, 32): x4 number h (4 a 64-column chunk,
    2 a 32-column one), lane 8i + r addresses row r + 8 (i % 2) of column group 2h + i // 2
    (``warps`` number the buffers)."""
    lane = np.arange(32)
    i, r = lane // 8, lane % 8
    group = 2 * np.arange(p.column_box // 16)[:, None] + i // 2
    return staging_address(p, warps[:, None, None], r + 8 * (i % 2), group)


def warp_accumulators(p: GemmParams, acc: np.ndarray) -> np.ndarray:
    """The consumers' accumulators (blocks, consumers, 128, registers) per warp: (blocks,
    warps, column groups, 32, registers), warp w holding rows 16w .. 16w + 15 of the tile as
    m16n8 accumulators."""
    regs = mma_fragment(p.qualifier, "c").registers
    per_warp = acc.reshape(acc.shape[0], 4 * p.consumers, 32, p.block_n // 8, regs)
    return np.moveaxis(per_warp, 2, 3)


def d_in_place(m, matrices: np.ndarray, per_warp: np.ndarray, chunk: int,
               reads_c: bool = True) -> None:
    """C's columns ``chunk`` (of 64, or 32) in the buffers whose ldmatrix rows are
    ``matrices`` (warps, x4s, 32) -> ``ldmatrix.x4`` -> D's words by the ladder's arithmetic
    -> ``stmatrix.x4`` to the same places (kernel9 and kernel10). Without ``reads_c`` (beta
    0) the buffers hold no C and no ldmatrix is issued."""
    x4s = matrices.shape[-2]
    n = 2 * x4s  # column groups of 8 in the chunk
    if reads_c:
        c = m.ldmatrix("C_ldmatrix", "x4", matrices)  # (blocks, warps, x4s, 32, 4)
        # register i of x4 h: column group 2h + i // 2, half i % 2 -> (groups, halves, 32)
        c = np.moveaxis(c.reshape(c.shape[:-1] + (2, 2)), -3, -1)
        c = c.reshape(c.shape[:2] + (n, 2, 32))
    else:
        c = np.zeros(per_warp.shape[:2] + (n, 2, 32), np.uint32)
    groups = per_warp[:, :, chunk * n:(chunk + 1) * n]
    d = epilogue_words(m, groups, c)  # (blocks, warps, groups, 2, 32)
    d = np.moveaxis(d.reshape(d.shape[:2] + (x4s, 2, 2, 32)), -1, -3)
    m.stmatrix("D_stmatrix", "x4", matrices, d.reshape(d.shape[:3] + (32, 4)))


def staged_epilogue(m, p: GemmParams, acc: np.ndarray) -> None:
    """The epilogue of the consumers' accumulators ``acc`` (blocks, consumers, 128,
    registers): warp w of the block's consumers holds rows 16w .. 16w + 15 of the tile as
    m16n8 accumulators."""
    warps = np.arange(p.consumers * 4)
    per_warp = warp_accumulators(p, acc)
    line, row, col = _lines(p, warps)
    matrices = matrix_addresses(p, warps)
    rows = ROWS * warps[:, None, None] + row
    for chunk in range(p.block_n // p.column_box):
        cols = chunk * p.column_box + col
        c = m.load_global("C_gmem_load", "C", rows, cols, vector=8, clip=p.ragged)
        m.store_shared("C_smem_store", line, c)
        d_in_place(m, matrices, per_warp, chunk)
        # an edge tile's lines past the matrix are neither read nor stored (hopper.cuh)
        inside = m.global_elements("D_gmem_store", "D", rows, cols, 0, 8, clip=True) != OFF \
            if p.ragged else None
        m.store_global("D_gmem_store", "D", rows, cols,
                       m.load_shared("D_smem_load", line, 16, active=inside), clip=p.ragged)
