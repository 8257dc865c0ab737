"""kernel3: the next block tile's global loads overlap this tile's compute (register staging).

As the article does on Turing, which has no asynchronous copy: the loads of K tile k + 1 go
to registers before the warps compute on tile k, and only after the second barrier do the
registers go to shared memory. The global latency hides behind the mma work.
"""

from .blocks import (
    SharedTile,
    copy_tile,
    epilogue,
    load_a_fragments,
    load_b_fragments,
    load_tile,
    mma_warp_tile,
    shared_tiles,
    store_tile,
    zero_accumulators,
)
from .kernel import Kernel
from .params import GemmParams


def program(m, p: GemmParams, A_smem: SharedTile, B_smem: SharedTile,
            a_matrices: int = 2, b_matrices: int = 1) -> None:
    acc = zero_accumulators(m)
    copy_tile(m, A_smem, 0)  # prologue: the first tiles
    copy_tile(m, B_smem, 0)
    last = m.k_tile_count - 1
    for k in m.k_tiles():
        m.sync()
        if k < last:  # start the next tile's loads; they land in registers
            a_next, b_next = load_tile(m, A_smem, k + 1), load_tile(m, B_smem, k + 1)
        for warp_k in range(p.block_k // p.warp_k):
            a = load_a_fragments(m, A_smem, warp_k, a_matrices)
            b = load_b_fragments(m, B_smem, warp_k, b_matrices)
            acc = mma_warp_tile(m, a, b, acc)
        m.sync()  # every warp is done reading the tiles
        if k < last:
            store_tile(m, A_smem, a_next)
            store_tile(m, B_smem, b_next)
    epilogue(m, acc)


kernel3 = Kernel("kernel3", "kernel2 with the next tile's global loads overlapped", program,
                 lambda p: shared_tiles(p, swizzled=True),
                 GemmParams(block_m=256, block_n=128, block_k=64, warp_m=64, warp_n=64,
                            warp_k=32))
