"""Seed 003's optimized WMMA kernel (``tensorCoreMatMulOptimized``): shared-memory tiles.

A block of 4 warps (2 x 2) computes a 64x64 tile of ``C = A @ B`` (f16 in, f32 out). Per
32-wide K step the block copies A's 64x32 tile and B's 32x64 tile into the seed's unpadded
``__shared__ half As[64][32], Bs[32][64]``; each warp then loads two A fragments and two B
fragments (both row-major) with ``wmma::load_matrix_sync`` per 16-wide K step and issues the
2 x 2 ``wmma::mma_sync`` of its 32x32 tile, and finally stores its four fragments.

The seed leaves the copy out ("loading code similar to regular tiled MatMul"); tcsim's schedule
and twin copy 16-byte vectors, thread t taking vectors t and t + 128 in row-major order (the
ladder's `copy_tile`). On sm_90 each shared ``wmma.load`` is one ``ldmatrix.x4``: 8 rows of 16
bytes per 8x8 matrix, 64 bytes apart in As (4 rows share each bank group: 4 wavefronts where
1 would do) and 128 bytes apart in Bs (all 8 rows in the same banks: 8 wavefronts).
"""

from __future__ import annotations

import numpy as np

from .blocks import SharedTile, copy_tile, shared_tiles
from .kernel import Kernel, require
from .params import GemmParams

QUALIFIER = "wmma.m16n16k16.row.row.f32.f16.f16.f32"
FRAGMENT = 16  # WMMA_M = WMMA_N = WMMA_K


def requires(p: GemmParams) -> None:
    require(p.warp_k == FRAGMENT and p.block_k % FRAGMENT == 0,
            "this kernel loads 16-wide K fragments: warp_k must be 16, block_k a multiple")
    require(p.stages == 1, "the seed's kernel has one shared buffer: stages=1")
    require((p.accumulate, p.output, p.inputs) == ("f32", "f32", "f16"),
            "seed 003 multiplies f16 into f32: accumulate='f32', output='f32', inputs='f16'")


def accumulate(m, p: GemmParams, A_smem: SharedTile, B_smem: SharedTile):
    """The K loop: (rows, cols, accumulators) of each warp's fragments, the accumulators
    (blocks, warps, frags_m, frags_n, 32, 8) with their origin at D[rows, cols]."""
    frags_m, frags_n = p.warp_m // FRAGMENT, p.warp_n // FRAGMENT
    rows = m.warp_row * p.warp_m + np.arange(frags_m) * FRAGMENT  # (warps, frags_m)
    cols = m.warp_col * p.warp_n + np.arange(frags_n) * FRAGMENT
    acc = m.zeros(p.warps, frags_m, frags_n, 32, 8)  # fill_fragment(c_frag[i][j], 0.0f)
    for k in m.k_tiles():
        copy_tile(m, A_smem, k)
        copy_tile(m, B_smem, k)
        m.sync()
        for kk in range(0, p.block_k, FRAGMENT):
            a = m.wmma_load_shared("A_wmma_load", QUALIFIER, "a", "row",
                                   A_smem.address(rows, kk), p.block_k)
            b = m.wmma_load_shared("B_wmma_load", QUALIFIER, "b", "row",
                                   B_smem.address(kk, cols), p.block_n)
            acc = m.wmma_mma("wmma_mma", QUALIFIER, a[..., :, None, :, :],
                             b[..., None, :, :, :], acc)
        m.sync()
    return rows, cols, acc


def program(m, p: GemmParams, A_smem: SharedTile, B_smem: SharedTile) -> None:
    rows, cols, acc = accumulate(m, p, A_smem, B_smem)
    m.wmma_store_global("C_wmma_store", QUALIFIER, "row", "D", rows[..., None],
                        cols[..., None, :], acc)


wmma_shared = Kernel(
    "wmma_shared", "seed 003's optimized WMMA kernel: 64x64 block tile in unpadded shared "
    "memory, 2x2 fragments per warp", program, lambda p: shared_tiles(p, swizzled=False),
    GemmParams(block_m=64, block_n=64, block_k=32, warp_m=32, warp_n=32, warp_k=16, mma_k=16,
               accumulate="f32", output="f32"), requires, takes_c=False)
