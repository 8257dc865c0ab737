"""kernel6: the ladder's next step for Ampere and Hopper mma.sync: a cp.async pipeline.

- ``mma.sync`` m16n8k16: twice the K per instruction, and its A fragment is exactly one
  ``ldmatrix.x4`` (B: one ``ldmatrix.x4.trans`` per two N tiles);
- ``stages`` shared buffers filled by ``cp.async.cg`` (16 bytes a lane, L2 to shared memory
  without registers): while the warps compute on K tile k, the copies of tiles k + 1 ..
  k + stages - 1 are in flight; ``cp.async.wait_group stages - 2`` and one barrier per K tile;
- swizzled shared tiles (conflict-free, as kernel2);
- register double buffering: the fragments of the next warp_k step load before the mma of this
  one.

The K loop is split where the copies stop (the last stages - 1 tiles issue none), so no
instruction is predicated (docs/kernels.md says why that matters to the counters).
"""

from .blocks import (
    SharedTile,
    compute_pipelined,
    copy_tile_async,
    epilogue,
    shared_tiles,
    zero_accumulators,
)
from .kernel import Kernel, require
from .params import GemmParams


def requires(p: GemmParams) -> None:
    require(p.mma_k == 16, f"kernel6 issues m16n8k16: mma_k must be 16, got {p.mma_k}")
    require(p.stages >= 2, f"kernel6 pipelines its copies: stages must be >= 2, got {p.stages}")
    require(p.tiles_n % 2 == 0, f"warp_n={p.warp_n} must be a multiple of 16 (ldmatrix.x4 on B)")


def tiles(p: GemmParams) -> tuple[SharedTile, SharedTile]:
    return shared_tiles(p, swizzled=True)


def program(m, p: GemmParams, A_smem: SharedTile, B_smem: SharedTile) -> None:
    stages = [shared_tiles(p, swizzled=True, stage=s) for s in range(p.stages)]
    n = m.k_tile_count  # at least stages - 1 (GemmParams.check_problem)
    acc = zero_accumulators(m)
    for k in range(p.stages - 1):  # prologue: fill all stages but one
        for tile in stages[k]:
            copy_tile_async(m, tile, k)
        m.commit_group()
    for k in m.k_tiles(stop=n - p.stages + 1):  # steady state: one tile in, one computed
        m.wait_group(p.stages - 2)  # tile k has landed (for this thread) ...
        m.sync()  # ... for every thread, and every warp is done with tile k - 1's stage
        for tile in stages[(k + p.stages - 1) % p.stages]:
            copy_tile_async(m, tile, k + p.stages - 1)
        m.commit_group()
        acc = compute_pipelined(m, *stages[k % p.stages], acc)
    for k in m.k_tiles(start=n - p.stages + 1):  # drain: no copies left to issue
        m.wait_group(p.stages - 2)
        m.sync()
        m.commit_group()  # an empty group keeps wait_group's count uniform
        acc = compute_pipelined(m, *stages[k % p.stages], acc)
    epilogue(m, acc)


kernel6 = Kernel("kernel6", "m16n8k16, multi-stage cp.async pipeline, register double buffering",
                 program, tiles,
                 GemmParams(block_m=128, block_n=128, block_k=32, warp_m=64, warp_n=64,
                            warp_k=16, mma_k=16, stages=4), requires,
                 twin_schedule="gemm_pipelined")
