"""Seed 004's tf32 tensor-core GEMM (Mojo GPU Puzzles, puzzle 33), as its Mojo source does it.

f32 matrices, ``mma.sync`` m16n8k8 with tf32 inputs (the f32 bits go in as they are: Mojo's
``mma`` bitcasts them, no ``cvt.rna.tf32``), BM = 128, BN = 64, BK = 32, 8 warps of 32x32.
What the source asks for, read from Modular's open source (docs/seeds.md gives the lines):

- ``copy_dram_to_sram_async[thread_layout=row_major(4, 8), num_threads=256]``: threads beyond
  the layout's 32 return, so **warp 0 alone** copies both tiles, 16 bytes per ``cp.async.cg``,
  thread w taking rows ``w // 8 + 4 i`` at vector column ``w % 8`` (+ 8 j for B's 16 vectors);
  then ``async_copy_wait_all`` (``cp.async.wait_all``) and a barrier;
- ``mma_op.load_a`` / ``load_b`` read each fragment element with a 32-bit shared load (no
  ``ldmatrix``), at the places of tcsim's m16n8k8 tf32 fragment tables; unpadded row-major
  tiles 128 and 256 bytes wide put the 8 rows a warp reads in the same banks;
- the accumulator is ``tb[f32]().row_major[WM, WN]().local()``: a 32x32 f32 array **per
  thread** (4 KB) that the fragments index by lane, so it lives in local memory. Every mma
  loads its C fragment from it and stores D back (two 8-byte ``ld.local`` / ``st.local`` each),
  and the tile is zeroed first (1,024 floats, as 256 16-byte stores);
- ``store_d`` writes the result in 8-byte pairs.

The source asks for A's and B's fragments again in every (mma_m, mma_n) iteration; ptxas
keeps one load of each A fragment per (mma_k, mma_m) and of each B fragment per (mma_k, mma_n),
even from the twin's inline PTX (Nsight Compute on the H100: 12 shared-load wavefronts per mma,
not the 40 the repeated loads would take). The schedule issues what ptxas leaves.
"""

from __future__ import annotations

import numpy as np

from ..isa.fragments import mma_fragment
from .blocks import SharedTile, pair_coordinates, shared_tiles, tile_shape
from .kernel import Kernel, require
from .params import MMA_M, MMA_N, GemmParams

COPY_LANES = (4, 8)  # the copy's thread layout: row_major(4, 8), 32 threads


def requires(p: GemmParams) -> None:
    require((p.inputs, p.accumulate, p.output, p.mma_k) == ("f32", "f32", "f32", 8),
            "seed 004 multiplies f32 data as tf32 m16n8k8 into f32: inputs, accumulate and "
            "output 'f32', mma_k 8")
    require(p.stages == 1 and p.warp_k == p.block_k,
            "the seed's kernel has one shared buffer (stages=1) and walks BK in MMA_K steps "
            "(warp_k = block_k)")
    for operand in "AB":
        rows, cols = tile_shape(p, operand)
        require(rows % COPY_LANES[0] == 0 and cols // p.vector % COPY_LANES[1] == 0,
                f"warp 0 copies the {operand} tile ({rows}x{cols}) in 4x8-thread steps: its "
                f"rows must be a multiple of 4 and its 16-byte vectors per row of 8")


def local_bytes(p: GemmParams) -> int:
    return p.warp_m * p.warp_n * 4  # C_warp_accum: WM x WN f32 per thread


def copy_by_warp_zero(m, tile: SharedTile, k_tile: int) -> None:
    """copy_dram_to_sram_async: thread w of warp 0 copies rows w // 8 + 4 i, vector columns
    w % 8 + 8 j of the tile, one 16-byte cp.async each. Shape (1 warp, i, j, 32)."""
    rows, cols = tile_shape(m.params, tile.operand)
    lane = np.arange(32)
    i = np.arange(rows // COPY_LANES[0])[:, None, None]
    j = np.arange(cols // m.params.vector // COPY_LANES[1])[:, None]
    row = (lane // COPY_LANES[1] + COPY_LANES[0] * i + 0 * j)[None]
    col = ((lane % COPY_LANES[1] + COPY_LANES[1] * j) * m.params.vector + 0 * i)[None]
    m.copy_async(f"{tile.operand}_cp_async", tile.operand, row, col, k_tile,
                 tile.address(row, col))


def program(m, p: GemmParams, A_smem: SharedTile, B_smem: SharedTile) -> None:
    # Axes: (warps, mma_m, mma_n, register or pair, lane).
    shape = (p.warps, p.tiles_m, p.tiles_n)
    mm = np.arange(p.tiles_m).reshape(1, -1, 1, 1, 1) * MMA_M
    nn = np.arange(p.tiles_n).reshape(1, 1, -1, 1, 1) * MMA_N
    warp_row = m.warp_row.reshape(-1, 1, 1, 1, 1) * p.warp_m
    warp_col = m.warp_col.reshape(-1, 1, 1, 1, 1) * p.warp_n
    a, b = (np.moveaxis(mma_fragment(p.qualifier, op).coords, 0, 1) for op in "ab")
    # C's 8-byte pairs (low column) in the block tile, and in the warp's local tile
    rows, cols = pair_coordinates(m)  # (warps, mma_m, mma_n, pair, lane)
    local = ((rows - warp_row) * p.warp_n + cols - warp_col) * 4

    # C_warp_accum[i, j] = 0 for every element: 16-byte stores, every lane the same offsets
    zeros = np.broadcast_to(np.arange(local_bytes(p) // 16)[:, None] * 16,
                            (p.warps, local_bytes(p) // 16, 32))
    m.store_local("acc_zero", zeros, m.zeros(*zeros.shape, 4)[0])
    for k in m.k_tiles():
        m.sync()
        copy_by_warp_zero(m, A_smem, k)
        copy_by_warp_zero(m, B_smem, k)
        m.commit_group()  # cp.async.wait_all: commit and wait for everything
        m.wait_group(0)
        m.sync()
        for mma_k in range(p.block_k // p.mma_k):
            # A once per mma_m, B once per mma_n: what ptxas leaves of the source's loads
            k0 = mma_k * p.mma_k
            a_addr = A_smem.address(warp_row + mm + a[..., 0], k0 + a[..., 1])
            b_addr = B_smem.address(k0 + b[..., 0], warp_col + nn + b[..., 1])
            a_addr = np.broadcast_to(a_addr, shape[:2] + (1,) + a.shape[:2])
            b_addr = np.broadcast_to(b_addr, (p.warps, 1, p.tiles_n) + b.shape[:2])
            a_regs = _registers(m.load_shared("A_lds", a_addr))
            b_regs = _registers(m.load_shared("B_lds", b_addr))
            acc = _registers(m.load_local("acc_load", local, 8))
            m.store_local("acc_store", local, _pairs(m.mma("mma", a_regs, b_regs, acc)))
    acc = _registers(m.load_local("acc_final_load", local, 8))
    m.store_global("C_gmem_store", "D", rows, cols, _pairs(acc))


def _registers(loaded: np.ndarray) -> np.ndarray:
    """(..., register group, 32, r) -> (..., 32, group * r): loads per register to a fragment."""
    moved = np.moveaxis(loaded, -3, -2)
    return moved.reshape(moved.shape[:-2] + (-1,))


def _pairs(registers: np.ndarray) -> np.ndarray:
    """(..., 32, 4) -> (..., 2, 32, 2): the accumulator's two 8-byte pairs per lane."""
    return np.moveaxis(registers.reshape(registers.shape[:-1] + (2, 2)), -2, -3)


tf32_puzzle = Kernel(
    "tf32_puzzle", "seed 004's tf32 m16n8k8 GEMM: warp 0 copies, 32-bit fragment loads, "
    "accumulators in local memory", program, lambda p: shared_tiles(p, swizzled=False),
    GemmParams(block_m=128, block_n=64, block_k=32, warp_m=32, warp_n=32, warp_k=32,
               mma_k=8, accumulate="f32", inputs="f32", output="f32"),
    requires, takes_c=False, local_bytes=local_bytes)
