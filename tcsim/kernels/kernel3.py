"""kernel3: the next block tile's global loads overlap this tile's compute (register staging).

As the article does on Turing, which has no asynchronous copy: the loads of K tile k + 1 go
to registers before the warps compute on tile k, and only after the second barrier do the
registers go to shared memory. The global latency hides behind the mma work.
"""

from .blocks import (
    SharedTile,
    compute_block_tile,
    copy_tile,
    epilogue,
    load_tile,
    shared_tiles,
    store_tile,
    zero_accumulators,
)
from .kernel import Kernel, one_stage_m16n8k8
from .params import GemmParams


def program(m, p: GemmParams, A_smem: SharedTile, B_smem: SharedTile,
            a_matrices: int = 2, b_matrices: int = 1) -> None:
    acc = zero_accumulators(m)
    copy_tile(m, A_smem, 0)  # prologue: the first tiles
    copy_tile(m, B_smem, 0)
    # Every K tile but the last: start the next tile's loads (they land in registers), compute
    # on this one, then store the next. The last tile only computes: no branch inside the loop,
    # so the compiler need not predicate the stores (a predicated-off store still counts as an
    # executed instruction in Nsight Compute).
    for k in m.k_tiles(stop=m.k_tile_count - 1):
        m.sync()
        a_next, b_next = load_tile(m, A_smem, k + 1), load_tile(m, B_smem, k + 1)
        acc = compute_block_tile(m, A_smem, B_smem, acc, a_matrices, b_matrices)
        m.sync()  # every warp is done reading the tiles
        store_tile(m, A_smem, a_next)
        store_tile(m, B_smem, b_next)
    m.sync()
    acc = compute_block_tile(m, A_smem, B_smem, acc, a_matrices, b_matrices)
    epilogue(m, acc)


kernel3 = Kernel("kernel3", "kernel2 with the next tile's global loads overlapped", program,
                 lambda p: shared_tiles(p, swizzled=True),
                 GemmParams(block_m=256, block_n=128, block_k=64, warp_m=64, warp_n=64,
                            warp_k=32), one_stage_m16n8k8,
                 twin_schedule="gemm_overlapped<2, 1, false>")
