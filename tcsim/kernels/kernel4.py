"""kernel4: cheaper index math: wider ldmatrix and swizzled offsets computed once.

kernel3's schedule with ``ldmatrix.x4``: one instruction loads two K steps of an A tile
(16x16) or four N tiles of B (8x32), halving and quartering the ldmatrix count. The CUDA twin
also computes each lane's swizzled shared offset once, before the K loop, and steps it with
XORs and adds; the addresses, and so this schedule, are the same as computing them afresh.
"""

from .blocks import SharedTile, shared_tiles
from .kernel import Kernel, one_stage_m16n8k8, require
from .kernel3 import kernel3
from .params import GemmParams


def requires(p: GemmParams) -> None:
    one_stage_m16n8k8(p)
    require(p.tiles_k % 2 == 0, f"warp_k={p.warp_k} must be a multiple of 16 (ldmatrix.x4 on A)")
    require(p.tiles_n % 4 == 0, f"warp_n={p.warp_n} must be a multiple of 32 (ldmatrix.x4 on B)")


def program(m, p: GemmParams, A_smem: SharedTile, B_smem: SharedTile) -> None:
    kernel3.program(m, p, A_smem, B_smem, a_matrices=4, b_matrices=4)


kernel4 = Kernel("kernel4", "kernel3 with ldmatrix.x4 and hoisted swizzled offsets", program,
                 lambda p: shared_tiles(p, swizzled=True), kernel3.defaults, requires,
                 twin_schedule="gemm_overlapped<4, 4, true>")
