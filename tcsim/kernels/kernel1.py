"""kernel1: hierarchical tiling (the article's first kernel).

A block copies its A and B tiles from global to shared memory, then each warp loads m16n8k8
fragments with ``ldmatrix`` (``.x2`` for A, ``.x1.trans`` for B) and issues ``mma.sync``
over its warp tile. Shared tiles are plain row-major, so the ldmatrix reads of 8 rows that are
128 or 256 bytes apart land in the same banks: the bank conflicts kernel2 removes.
"""

from .blocks import (
    SharedTile,
    compute_block_tile,
    copy_tile,
    epilogue,
    shared_tiles,
    zero_accumulators,
)
from .kernel import Kernel, one_stage_m16n8k8
from .params import GemmParams


def program(m, p: GemmParams, A_smem: SharedTile, B_smem: SharedTile) -> None:
    acc = zero_accumulators(m)
    for k in m.k_tiles():  # block_k steps along K
        copy_tile(m, A_smem, k)  # A[block_m, k] -> shared
        copy_tile(m, B_smem, k)  # B[k, block_n] -> shared
        m.sync()
        acc = compute_block_tile(m, A_smem, B_smem, acc, a_matrices=2, b_matrices=1)
        m.sync()  # before the next copy overwrites the tiles
    epilogue(m, acc)


kernel1 = Kernel("kernel1", "hierarchical tiling, row-major shared tiles", program,
                 lambda p: shared_tiles(p, swizzled=False),
                 GemmParams(block_m=256, block_n=128, block_k=64, warp_m=64, warp_n=64,
                            warp_k=32), one_stage_m16n8k8, twin_schedule="gemm_tiled")
