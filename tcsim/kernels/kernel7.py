"""kernel7: Hopper's own path. Warp specialization, TMA copies on mbarriers, wgmma.

- **Roles.** The block is three warpgroups: warpgroup 0 *produces* (one thread issues the
  copies; ``setmaxnreg`` gives its registers away), warpgroups 1 and 2 *consume* (each issues
  ``wgmma.mma_async`` m64n256k16 on its 64 rows of the 128 x 256 block tile).
- **TMA.** Each K tile arrives by ``cp.async.bulk.tensor``: A's 128 x 64 tile as one box, B's
  64 x 256 tile as four 64 x 64 boxes, all under the 128-byte swizzle, straight from L2 to
  shared memory without registers or per-thread addresses. A block_n that is a multiple of 32
  but not of 64 (96, 160, 224) takes B in boxes of 32 columns under the 64-byte swizzle
  (`GemmParams.column_box`): a box row is then 64 bytes, one 64-byte swizzle atom's width.
- **mbarriers.** ``stages`` buffers, each with a *full* barrier (the producer's
  ``arrive.expect_tx`` of the stage's bytes; the copies complete it) and an *empty* barrier
  (one arrival per consumer warp once its wgmma no longer read the stage). Phases alternate,
  so a wait names the parity of the phase it waits for.
- **wgmma.** A consumer reads A (K-major) and B (MN-major, transposed by the instruction) from
  shared memory through matrix descriptors (`tcsim.memory.MatrixDescriptor`): no ldmatrix,
  no registers for the operands. It keeps one batch of wgmma in flight: after committing the
  batch of stage k it waits until only that batch is pending, then releases stage k - 1.

The same epilogue as the ladder: ``D = f16(alpha * acc + beta * C)``.

- **Any shape.** M, N and K need not be multiples of the tile (K and N of 8: TMA's rows are
  whole 16-byte units). The tensor maps describe the true matrices, so a box that reaches past
  the edge gets zeros there (and still completes its whole box of bytes on the barrier), the
  last K tile multiplies those zeros, and the epilogue stores nothing past the edge
  (predicated stores; kernel10's TMA stores clip). The grid is ceil-divided.
- **bf16.** ``inputs="bf16"`` issues wgmma ``.f32.bf16.bf16`` (f32 accumulation only: there
  is no f16 accumulator for bf16), ``output="bf16"`` reads C and writes D in bf16.
"""

from __future__ import annotations

import numpy as np

from ..isa.fragments import mma_fragment
from ..isa.wgmma import wgmma_fragment
from ..memory.descriptors import MatrixDescriptor, SwizzleMode
from ..memory.tma import TensorMap
from . import split_k
from .blocks import epilogue
from .hopper import BARRIER_BYTES
from .kernel import Kernel, require
from .params import GemmParams
from .scheduler import blocks_launched
from .staged_epilogue import staged_epilogue
from .tma_epilogue import C_EARLY, TmaEpilogue, c_barriers
from .tma_epilogue import tensor_maps as epilogue_maps

SWIZZLE = SwizzleMode.B128  # A's; B's is GemmParams.box_swizzle (128-byte, or 64-byte)
REGISTERS = (("CONSUMER_REGISTERS", 232), ("PRODUCER_REGISTERS", 40))  # setmaxnreg
ROW_BYTES = 128  # one swizzled row of A: 64 f16 along K
WGMMA_N = range(64, 257, 32)  # the tile widths: wgmma's N, in whole boxes of 32 or 64 columns


def requires(p: GemmParams) -> None:
    require(p.producers == 1, "kernel7 is warp-specialized: producers must be 1")
    require(p.block_k * 2 == ROW_BYTES,
            f"kernel7's A rows are one 128-byte swizzle row: block_k must be 64, got {p.block_k}")
    require(p.warp_n == p.block_n and p.block_n in WGMMA_N,
            f"each consumer owns whole rows of the tile: warp_n must equal block_n, a multiple "
            f"of 32 from 64 to 256 (wgmma's N, B's tile in whole TMA boxes of 64 columns, or of "
            f"32 under the 64-byte swizzle), got warp_n={p.warp_n}, block_n={p.block_n}")
    require(p.warp_k == p.mma_k, f"kernel7 steps K by one wgmma: warp_k must be 16, got "
                                 f"{p.warp_k}")
    require(p.stages >= 2, f"kernel7 pipelines its copies: stages must be >= 2, got {p.stages}")
    require(p.inputs in ("f16", "bf16") and p.output in ("f16", "bf16"),
            f"kernel7 reads f16 or bf16 and writes f16 or bf16, got inputs={p.inputs!r}, "
            f"output={p.output!r}")


def tensor_maps(p: GemmParams, M: int, N: int, K: int) -> tuple[tuple[str, TensorMap], ...]:
    """A's map (block_m x 64 boxes, 128-byte swizzled) and B's (64 x 64 boxes, 128-byte
    swizzled; 64 x 32 boxes, 64-byte swizzled, for a block_n not a multiple of 64); with the
    TMA epilogue, C's and D's (`tcsim.kernels.tma_epilogue`)."""
    return (("A", TensorMap(M, K, 2, p.block_m, p.block_k, SWIZZLE)),
            ("B", TensorMap(K, N, 2, p.block_k, p.column_box, p.box_swizzle)),
            *(epilogue_maps(M, N, p.column_box) if p.store_buffers else ()))


def tiles(p: GemmParams) -> tuple:
    return ()  # the stages are TMA boxes and descriptors, not the ladder's SharedTiles


def descriptors(p: GemmParams, stage: int, kk: int,
                swizzle: SwizzleMode | None = None) -> tuple[np.ndarray, int]:
    """The wgmma descriptors of K step ``kk`` of ``stage``: A's per consumer (its 64 rows of
    128 bytes, 32 bytes further along K per step; SBO: 8 rows), B's (MN-major: LBO the step
    between B's boxes, one swizzle atom's width of columns each; SBO between groups of 8 K
    rows; 16 rows further per step). The PTX ISA's swizzled MN-major layout (CuTe's
    ``Layout_MN_SW{128,64}_Atom``: `tcsim.memory.descriptors`) is the same for both
    swizzles, with rows of 128 or 64 bytes. ``swizzle`` overrides both (a planted bug)."""
    row = p.box_row_bytes
    a = stage * p.stage_bytes + np.arange(p.consumers) * p.warp_m * ROW_BYTES + kk * 32
    b = stage * p.stage_bytes + p.a_tile_bytes + kk * 16 * row
    a_desc = [MatrixDescriptor(int(x), 16, 8 * ROW_BYTES, 0, swizzle or SWIZZLE).encode()
              for x in a]
    b_desc = MatrixDescriptor(b, p.block_k * row, 8 * row, 0, swizzle or p.box_swizzle).encode()
    return np.array(a_desc, np.uint64), b_desc


def program(m, p: GemmParams, plant: str = "") -> None:
    """The schedule; ``plant`` names one of the bugs of `tcsim.kernels.planted` (the twin's
    ``PLANT_<name>`` macro makes the same change), "" for the correct kernel."""
    stages = p.stages * p.stage_bytes  # the barriers follow the stages
    # With clusters, a stage is refilled only once every block's consumers are done with it:
    # each consumer warp arrives on the empty barrier of every block of the cluster. The
    # engines run one block at a time, so the cluster is modeled symmetrically: the other
    # blocks' warps arrive when this block's do (``released``), and their multicast copies
    # land when this block's producer issues its own (`Machine.tma_received`).
    c = p.cluster_m
    released = 4 * p.consumers * c
    full = m.mbarriers("full", stages, p.stages, arrivals=1)
    empty = m.mbarriers("empty", stages + BARRIER_BYTES * p.stages, p.stages,
                        arrivals=released)
    tma_epilogue = TmaEpilogue(m, p, c_barriers(m, p, stages + 2 * BARRIER_BYTES * p.stages)) \
        if p.store_buffers else None
    m.sync()
    qualifier = f"m64n{p.block_n}k16.{p.accumulate}.{p.inputs}.{p.inputs}"
    n = m.k_tile_count
    box_bytes = p.block_k * p.box_row_bytes  # one of B's boxes
    expect = p.stage_bytes - (box_bytes if plant == "short_expect_tx" else 0)
    swizzle = SwizzleMode.B64 if plant == "descriptor_swizzle" else None
    early_release = plant == "early_release"
    boxes = p.block_n // p.column_box
    rank = m.cluster_rank  # with clusters, this block copies boxes rank, rank + c, ...
    # Iteration `it` = t * n + k of a block's life uses stage it % stages in phase
    # it // stages: the pipeline runs on from one tile to the next (kernel8).

    def producer():  # one thread: wait until the stage is free, announce its bytes, copy
        for t in m.tiles():
            for k in m.k_tiles():
                it = t * n + k
                s = it % p.stages
                if it >= p.stages:  # every stage starts empty
                    yield from m.wait(empty, s, (it // p.stages - 1) & 1)
                a = s * p.stage_bytes
                m.arrive(full, s, expect_tx=expect)
                with m.tile(t):
                    m.tma_load("A_tma", "A", a, 0, 0, k, full, s)
                    for box in range(boxes):
                        at = (a + p.a_tile_bytes + box * box_bytes, 0, box * p.column_box, k,
                              full, s)
                        if c == 1:
                            m.tma_load("B_tma", "B", *at)
                        elif box % c == rank:  # this block's share, to every block
                            m.tma_load("B_tma", "B", *at, multicast=True)
                        else:  # another block's share of the same column of B
                            m.tma_received("B_multicast_in", "B", *at)

    def k_tile(t, k, acc, after_issue=None):  # one K tile of the consumers' main loop
        it = t * n + k
        s = it % p.stages
        if plant != "skip_first_waits" or it >= p.stages:
            yield from m.wait(full, s, (it // p.stages) & 1)
        m.wgmma_fence()
        for kk in range(p.block_k // 16):
            acc = m.wgmma("wgmma", qualifier, *descriptors(p, s, kk, swizzle), acc,
                          trans_b=True)
        m.wgmma_commit()
        if after_issue:  # while the tensor pipe works
            after_issue()
        m.wgmma_wait(1)  # the wgmma of iteration it - 1 no longer read its stage
        if early_release:  # (the bug) stage it, whose wgmma may still be reading
            m.arrive(empty, s, count=released)
        elif k > 0:  # lane 0 of each consumer warp
            m.arrive(empty, (it - 1) % p.stages, count=released)
        return acc

    def consumers():
        fragment = wgmma_fragment(qualifier, "d")
        # kernel10 asks for C after the wgmma of K tile `early` (a loop of its own: the
        # tracer counts one iteration of a loop for all of them); with split-K, once the
        # block knows it is its tile's last
        early = max(n - 1 - C_EARLY, 0) if tma_epilogue and p.splits == 1 else n
        for t in m.tiles():
            acc = m.zeros(p.consumers, 128, fragment.registers)
            for k in m.k_tiles(0, early):
                acc = yield from k_tile(t, k, acc)
            for k in m.k_tiles(early, min(early + 1, n)):
                acc = yield from k_tile(t, k, acc, lambda t=t: tma_epilogue.ask_first(t, plant))
            for k in m.k_tiles(early + 1, n):
                acc = yield from k_tile(t, k, acc)
            m.wgmma_wait(0)
            if not early_release:  # the last stage
                m.arrive(empty, (t * n + n - 1) % p.stages, count=released)
            if p.splits > 1:  # split-K: split S - 1's block adds the others' partials
                if not split_k.arrive(m, p, t, acc):
                    continue
                tma_epilogue.ask_first(t, plant)
                acc = split_k.reduce(m, p, t, acc, reverse=plant == "split_order")
            if tma_epilogue:
                yield from tma_epilogue.run(t, acc, plant)
                continue
            with m.tile(t):
                (staged_epilogue if p.staged_epilogue else epilogue_tile)(m, p, acc)
        if tma_epilogue:
            tma_epilogue.finish()

    m.run_roles(("producer", producer()), ("consumers", consumers()))


def epilogue_tile(m, p: GemmParams, acc: np.ndarray) -> None:
    """The ladder's epilogue on the consumers' accumulators: warp w of a consumer holds its
    rows 16w .. 16w + 15 as m16n8 accumulators."""
    regs = mma_fragment(p.qualifier, "c").registers  # per m16n8 tile
    per_warp = acc.reshape(acc.shape[0], p.consumers * 4, 1, 32, p.block_n // 8, regs)
    warps = np.arange(p.consumers * 4)[:, None]
    epilogue(m, np.moveaxis(per_warp, 3, 4), origin=(16 * warps, 0 * warps))


def launch_shape(p: GemmParams, M: int, N: int) -> tuple[tuple[int], tuple[int]]:
    """A 1-D grid: one block per tile, or the persistent blocks (`tcsim.kernels.scheduler`)."""
    return (blocks_launched(p, M, N),), (p.threads,)


kernel7 = Kernel(
    "kernel7", "warp-specialized: TMA copies on mbarriers, wgmma m64n256k16 from descriptors",
    program, tiles,
    GemmParams(block_m=128, block_n=256, block_k=64, warp_m=64, warp_n=256, warp_k=16,
               mma_k=16, stages=4, producers=1),
    requires, arch="sm_90a", tensor_maps=tensor_maps,
    options=REGISTERS, launch_shape=launch_shape, twin_schedule="gemm_warp_specialized")
