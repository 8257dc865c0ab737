"""Seed 003's basic WMMA kernel (``tensorCoreMatMul``), and the same kernel with its bug fixed.

Each warp computes one 16x16 tile of ``C = A @ B`` (f16 in, f32 out) straight from global
memory: per 16-wide K step, ``wmma::load_matrix_sync`` of A (row-major, stride K) and of B,
one ``wmma::mma_sync``; then ``wmma::store_matrix_sync`` (row-major, stride N). The seed
launches ``dim3 block(128, 4)``: 16 warps, 4 along M (``threadIdx.x / 32``) and 4 along N
(``threadIdx.y``), and a grid of (M / 64, N / 64) blocks with x along M.

The seed's mistake: B's fragment is declared ``col_major`` but B is row-major and its tile
pointer ``B + k * N + warpN * 16`` indexes it row-major. A col-major load at that pointer with
stride N reads fragment element (k, n) from ``B[k0 + n, n0 + k]``: every 16x16 block of B
transposed. `wmma_basic` computes that, ``C[i, j] = sum_k A[i, k-block] @ B[k-block, j]^T``;
`wmma_basic_fixed` declares B ``row_major`` and computes ``A @ B``. Comparing either with
``A @ B`` in float64 shows which is which (tests/kernels/test_seed_kernels.py, docs/seeds.md);
`blockwise_transposed` gives the matrix the seed's kernel really multiplies by.
"""

from __future__ import annotations

import numpy as np

from .blocks import SharedTile
from .kernel import Kernel, require
from .params import GemmParams

SHAPE = "m16n16k16"  # WMMA_M, WMMA_N, WMMA_K


def qualifier(b_layout: str) -> str:
    return f"wmma.{SHAPE}.row.{b_layout}.f32.f16.f16.f32"


def requires(p: GemmParams) -> None:
    require((p.warp_m, p.warp_n, p.warp_k, p.block_k) == (16, 16, 16, 16),
            "each warp of this kernel computes one 16x16 tile per 16-wide K step: warp_m, "
            "warp_n, warp_k and block_k must be 16")
    require(p.stages == 0, "this kernel reads its fragments from global memory: stages=0")
    require((p.accumulate, p.output, p.inputs) == ("f32", "f32", "f16"),
            "seed 003 multiplies f16 into f32: accumulate='f32', output='f32', inputs='f16'")


def launch_shape(p: GemmParams, M: int, N: int):
    """The seed's launch: block (32 x warps along M, warps along N), grid x along M."""
    return (M // p.block_m, N // p.block_n), (32 * p.warps_m, p.warps_n)


def program(m, p: GemmParams, b_layout: str = "col") -> None:
    q = qualifier(b_layout)
    warp = m.warp[:, 0]
    row = warp % p.warps_m * 16  # warpM within the block: threadIdx.x / 32
    col = warp // p.warps_m * 16  # warpN: threadIdx.y
    acc = m.zeros(p.warps, 32, 8)  # wmma::fill_fragment(c_frag, 0.0f)
    for k in m.k_tiles():
        a = m.wmma_load_global("A_wmma_load", q, "a", "row", "A", row, 0, k)
        b = m.wmma_load_global("B_wmma_load", q, "b", b_layout, "B", 0, col, k)
        acc = m.wmma_mma("wmma_mma", q, a, b, acc)
    m.wmma_store_global("C_wmma_store", q, "row", "D", row, col, acc)


def _fixed(m, p: GemmParams) -> None:
    program(m, p, b_layout="row")


def _no_tiles(p: GemmParams) -> tuple[SharedTile, ...]:
    return ()


DEFAULTS = GemmParams(block_m=64, block_n=64, block_k=16, warp_m=16, warp_n=16, warp_k=16,
                      mma_k=16, accumulate="f32", stages=0, output="f32")

wmma_basic = Kernel(
    "wmma_basic", "seed 003's basic WMMA kernel, as written (B's col_major fragment on row-major "
    "B: each 16x16 block of B transposed)", program, _no_tiles, DEFAULTS, requires,
    takes_c=False, launch_shape=launch_shape, options=(("B_COL_MAJOR", 1),))
wmma_basic_fixed = Kernel(
    "wmma_basic_fixed", "seed 003's basic WMMA kernel with B's fragment row_major: A @ B",
    _fixed, _no_tiles, DEFAULTS, requires, twin="wmma_basic", takes_c=False,
    launch_shape=launch_shape, options=(("B_COL_MAJOR", 0),))


def blockwise_transposed(B: np.ndarray, block: int = 16) -> np.ndarray:
    """B with every ``block`` x ``block`` tile transposed in place: what seed 003's basic kernel
    multiplies A by (its fragment reads B's tiles col-major)."""
    K, N = B.shape
    tiles = B.reshape(K // block, block, N // block, block)
    return np.ascontiguousarray(tiles.transpose(0, 3, 2, 1).reshape(K, N))
