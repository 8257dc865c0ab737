"""Planted bugs: broken variants of the ladder's kernels, for the checks (docs/checks.md).

Each is a `Kernel` whose schedule differs from a correct one in one place, and whose CUDA twin
is the correct kernel's source compiled with a ``PLANT_<name>`` macro that makes the same
change. They exist to show what the simulator's checks and compute-sanitizer each catch.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from .blocks import (
    SharedTile,
    compute_block_tile,
    compute_pipelined,
    copy_tile,
    copy_tile_async,
    epilogue,
    load_a_fragments,
    load_b_fragments,
    load_tile,
    mma_warp_tile,
    shared_tiles,
    tile_vectors,
    zero_accumulators,
)
from .kernel import Kernel
from .kernel2 import kernel2
from .kernel6 import kernel6
from .kernel7 import kernel7
from .kernel10 import kernel10
from .kernel11 import kernel11


def _missing_barrier(m, p, A_smem: SharedTile, B_smem: SharedTile) -> None:
    """kernel2 without the barrier after the compute: the next copy can overwrite a tile
    that slower warps are still reading."""
    acc = zero_accumulators(m)
    for k in m.k_tiles():
        copy_tile(m, A_smem, k)
        copy_tile(m, B_smem, k)
        m.sync()
        acc = compute_block_tile(m, A_smem, B_smem, acc, 2, 1)
        # (no m.sync() here)
    epilogue(m, acc)


def _read_unswizzled(m, p, A_smem: SharedTile, B_smem: SharedTile) -> None:
    """kernel2 storing swizzled tiles but reading them as if row-major: wrong data, no fault."""
    A_read, B_read = shared_tiles(p, swizzled=False)
    acc = zero_accumulators(m)
    for k in m.k_tiles():
        copy_tile(m, A_smem, k)
        copy_tile(m, B_smem, k)
        m.sync()
        acc = compute_block_tile(m, A_read, B_read, acc, 2, 1)
        m.sync()
    epilogue(m, acc)


def _tile_offset(m, p, A_smem: SharedTile, B_smem: SharedTile) -> None:
    """kernel2 loading A from the next block row (block_m + 1): the last block row reads
    past the end of A."""
    rows, cols = tile_vectors(p, p.block_m, p.block_k)
    acc = zero_accumulators(m)
    for k in m.k_tiles():
        m.store_shared("A_smem_store", A_smem.address(rows, cols),
                       m.load_global("A_gmem_load", "A", rows + p.block_m, cols, k))
        copy_tile(m, B_smem, k)
        m.sync()
        acc = compute_block_tile(m, A_smem, B_smem, acc, 2, 1)
        m.sync()
    epilogue(m, acc)


def _unaligned_ldmatrix(m, p, A_smem: SharedTile, B_smem: SharedTile) -> None:
    """kernel2 whose A ldmatrix rows start 8 bytes late: not 16-byte aligned."""
    A_read = replace(A_smem, base=A_smem.base + 8)
    acc = zero_accumulators(m)
    for k in m.k_tiles():
        copy_tile(m, A_smem, k)
        copy_tile(m, B_smem, k)
        m.sync()
        for warp_k in range(p.block_k // p.warp_k):
            a = load_a_fragments(m, A_read, warp_k, 2)
            b = load_b_fragments(m, B_smem, warp_k, 1)
            acc = mma_warp_tile(m, a, b, acc)
        m.sync()
    epilogue(m, acc)


def _uninitialized_tail(m, p, A_smem: SharedTile, B_smem: SharedTile) -> None:
    """kernel2 whose B copy skips each thread's last vector: part of the B tile is never
    written, and the warps read it."""
    rows, cols = tile_vectors(p, p.block_k, p.block_n)
    acc = zero_accumulators(m)
    for k in m.k_tiles():
        copy_tile(m, A_smem, k)
        regs = load_tile(m, B_smem, k)
        m.store_shared("B_smem_store", B_smem.address(rows[:, :-1], cols[:, :-1]),
                       regs[..., :-1, :, :])
        m.sync()
        acc = compute_block_tile(m, A_smem, B_smem, acc, 2, 1)
        m.sync()
    epilogue(m, acc)


def _early_wait(m, p, A_smem: SharedTile, B_smem: SharedTile) -> None:
    """kernel6 waiting for one cp.async group too few (wait_group stages - 1): the warps
    read a stage whose copies may still be in flight."""
    stages = [shared_tiles(p, swizzled=True, stage=s) for s in range(p.stages)]
    n = m.k_tile_count
    acc = zero_accumulators(m)
    for k in range(p.stages - 1):
        for tile in stages[k]:
            copy_tile_async(m, tile, k)
        m.commit_group()
    for k in m.k_tiles(stop=n - p.stages + 1):
        m.wait_group(p.stages - 1)  # the bug: stages - 2 is needed
        m.sync()
        for tile in stages[(k + p.stages - 1) % p.stages]:
            copy_tile_async(m, tile, k + p.stages - 1)
        m.commit_group()
        acc = compute_pipelined(m, *stages[k % p.stages], acc)
    for k in m.k_tiles(start=n - p.stages + 1):
        m.wait_group(p.stages - 1)
        m.sync()
        m.commit_group()
        acc = compute_pipelined(m, *stages[k % p.stages], acc)
    epilogue(m, acc)


def _padded_maps(p, M: int, N: int, K: int):
    """kernel7's tensor maps over A and B as if they were padded to whole tiles (M and K
    rounded up to block_m and block_k): TMA fills zeros only past a map's edge, so the boxes
    at the matrices' edge read global memory past A's last row and B's last row instead."""
    (_, a), (_, b), *rest = kernel7.tensor_maps(p, M, N, K)
    m, k = (-(-M // p.block_m) * p.block_m, -(-K // p.block_k) * p.block_k)
    return (("A", replace(a, rows=m)), ("B", replace(b, rows=k)), *rest)


def _planted(base: Kernel, plant: str, program, summary: str) -> Kernel:
    return replace(base, name=f"{base.name}-{plant.replace('_', '-')}", summary=summary,
                   program=program, twin=base.name, plants=(plant,))


PLANTED = {k.name: k for k in (
    _planted(kernel2, "missing_barrier", _missing_barrier,
             "kernel2 without the barrier before the next copy"),
    _planted(kernel2, "read_unswizzled", _read_unswizzled,
             "kernel2 reading its swizzled tiles as row-major"),
    _planted(kernel2, "tile_offset", _tile_offset,
             "kernel2 loading A one block row too far"),
    _planted(kernel2, "unaligned_ldmatrix", _unaligned_ldmatrix,
             "kernel2 with A ldmatrix rows 8 bytes off"),
    _planted(kernel2, "uninitialized_tail", _uninitialized_tail,
             "kernel2 leaving the last vector of each thread's B copy unwritten"),
    _planted(kernel6, "early_wait", _early_wait,
             "kernel6 waiting for one cp.async group too few"),
    # kernel7's plants are switches of its own schedule, as PLANT_ macros are of its twin.
    _planted(kernel7, "skip_first_waits", partial(kernel7.program, plant="skip_first_waits"),
             "kernel7 whose consumers wait for a stage only from its second use on (the "
             "producer's guard copied): the first round reads stages before they are full"),
    _planted(kernel7, "early_release", partial(kernel7.program, plant="early_release"),
             "kernel7 whose consumers release each stage before its wgmma retired"),
    _planted(kernel7, "short_expect_tx", partial(kernel7.program, plant="short_expect_tx"),
             "kernel7 announcing one B box too few bytes on each stage's full barrier"),
    _planted(kernel7, "descriptor_swizzle", partial(kernel7.program,
                                                    plant="descriptor_swizzle"),
             "kernel7 whose wgmma descriptors say 64-byte swizzle for 128-byte swizzled tiles"),
    replace(_planted(kernel7, "no_edge_fill", kernel7.program,
                     "kernel7 whose tensor maps describe A and B padded to whole tiles: on a "
                     "ragged shape the edge boxes read past the matrices, where the true maps "
                     "get TMA's zero fill"), tensor_maps=_padded_maps),
    _planted(kernel10, "no_store_wait", partial(kernel10.program, plant="no_store_wait"),
             "kernel10 asking TMA for C into a buffer without waiting until the TMA store "
             "that last used it has read it (no cp.async.bulk.wait_group.read)"),
    _planted(kernel10, "skip_c_wait", partial(kernel10.program, plant="skip_c_wait"),
             "kernel10 reading C from its buffers without waiting on their mbarriers"),
    _planted(kernel10, "no_fence", partial(kernel10.program, plant="no_fence"),
             "kernel10 issuing each TMA store of D without fence.proxy.async after the "
             "stmatrix that wrote its buffer"),
    # No check of the simulator sees it: only D's bits do (cuBLAS's, tcsim.blas.scaled_mm).
    _planted(kernel11, "promotion_off_by_one", partial(kernel11.program,
                                                        plant="promotion_off_by_one"),
             "kernel11 adding its partial sums to the f32 registers every 5 wgmma k32 steps "
             "instead of 4"),
    _planted(kernel11, "scale_a_first", partial(kernel11.program, plant="scale_a_first"),
             "kernel11 multiplying by the row-wise scale_a before scale_b (cuBLAS: scale_b "
             "first)"),
)}

__all__ = ["PLANTED"]
