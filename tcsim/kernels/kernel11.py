"""kernel11: the fp8 rung. kernel8's roles and tile order, fp8 wgmma, cuBLAS's promoted sums.

``tcsim.run(kernel11, A, B, scale_a=..., scale_b=..., out_dtype=...)`` computes
``torch._scaled_mm(A, B, scale_a, scale_b, out_dtype=..., use_fast_accum=False)`` bit for bit
(`tcsim.blas.scaled_mm`; arguments: `tcsim.kernels.scaled`). What changes from kernel8:

- **fp8 operands, both K-major.** A and B are e4m3 or e5m2 (any mix torch takes: not e5m2 x
  e5m2). fp8 wgmma reads both operands K-major only (no transposed B), so B lies in global
  memory as cuBLAS's TN layout asks: N rows of K (`GemmParams.b_k_major`). A K tile is 128
  fp8 elements, one 128-byte swizzle row of A and of B; both arrive as one TMA box each.
- **wgmma m64nNk32.** Each K tile is 4 wgmma ``.f32.e4m3.e5m2`` (say) k32 steps.
- **promoted accumulation.** The tensor core keeps its f32 sum with 13 fraction bits
  (docs/wgmma.md), so cuBLAS sums only ``promotion`` (4) k32 steps in it, from zero, and
  then adds that partial sum to an f32 register accumulator (`scaled.promote`, add.rn.f32).
  A consumer keeps one partial: the step that closes it ends a wgmma group, the consumer
  waits until the group retired (``wgmma.wait_group 0``) and adds the partial up, in K
  order, as cuBLAS does; with the default interval that is once per K tile, after which
  the stage is released. The other consumer's wgmma keep the tensor cores busy meanwhile.
  (Two partials with ``wait_group 1``, the promotion overlapping the next K tile's wgmma,
  need 192 registers and made ptxas serialize every wgmma: docs/kernels.md.) A partial that
  stays open at a K tile's end (another interval) runs on into the next; the last is
  promoted at the tile's end.
- **scaled epilogue.** ``D = out(acc * (scale_a * scale_b))`` (`scaled.scaled_words`), f16,
  bf16 or f32, stored by each lane with predicated stores (no C, alpha or beta), 8 bytes of a
  row each: an f32 pair, or two f16/bf16 pairs after neighbouring lanes swap a word, so that
  every store writes whole 32-byte sectors (`sector_pairs`; half sectors cost 17% of the speed
  at 4096^3 on the H100). With
  row-wise scales (``row_scales=1``: scale_a (M, 1), scale_b (1, N), e4m3 x e4m3, bf16 out,
  torch's rule) each lane loads scale_a of its two rows and scale_b of its column pairs, and
  ``D = out((acc * scale_b) * scale_a)``, cuBLAS's order.

Any M; K a multiple of 16 (A's and B's rows are whole 16-byte units; the k32 steps past K read
TMA's zeros); N a multiple of 8. CUDA twin: ``gemm_fp8`` in tcsim/hw/kernels/scaled.cuh.
"""

from __future__ import annotations

import numpy as np

from ..isa.fragments import mma_fragment
from ..isa.validate import integer
from ..isa.wgmma import wgmma_fragment
from ..memory.descriptors import MatrixDescriptor, SwizzleMode
from ..memory.tma import TensorMap
from .blocks import pair_coordinates
from .hopper import BARRIER_BYTES
from .kernel import Kernel, require
from .kernel7 import REGISTERS, launch_shape
from .kernel8 import H100_SXM_SMS
from .params import FP8_STEP, GemmParams
from .scaled import promote, scaled_words

SWIZZLE = SwizzleMode.B128
ROW_BYTES = 128  # one swizzled row: 128 fp8 elements along K, for A and for B
PROMOTION = 4  # cuBLAS's: 4 wgmma k32 steps per partial sum
GROUP_M = 8  # tiles in groups of 8 block rows: 1-2% ahead of kernel8's 16 on the H100


def requires(p: GemmParams) -> None:
    require(p.fp8, f"kernel11 multiplies fp8: inputs must be 'e4m3' or 'e5m2', got "
                   f"{p.inputs!r}")
    require(p.producers == 1, "kernel11 is warp-specialized: producers must be 1")
    require(p.block_k == ROW_BYTES,
            f"kernel11's A and B rows are one 128-byte swizzle row: block_k must be 128, got "
            f"{p.block_k}")
    require(p.warp_n == p.block_n and p.block_n in (64, 128, 192, 256),
            f"each consumer owns whole rows of the tile: warp_n must equal block_n, one of 64, "
            f"128, 192, 256 (wgmma's N), got warp_n={p.warp_n}, block_n={p.block_n}")
    require(p.warp_k == FP8_STEP, f"kernel11 steps K by one wgmma k32: warp_k must be 32, got "
                                  f"{p.warp_k}")
    require(p.stages >= 2, f"kernel11 pipelines its copies: stages must be >= 2, got "
                           f"{p.stages}")
    require(p.promotion >= 1, f"kernel11 promotes its partial sums every `promotion` k32 steps "
                              f"(cuBLAS: {PROMOTION}): promotion must be >= 1, got "
                              f"{p.promotion}")
    require(not (p.staged_epilogue or p.store_buffers),
            "kernel11's epilogue stores D from registers: staged_epilogue and store_buffers "
            "must be 0")


def tensor_maps(p: GemmParams, M: int, N: int, K: int) -> tuple[tuple[str, TensorMap], ...]:
    """A's map (block_m x 128 boxes) and B's, N rows of K (block_n x 128 boxes), both
    128-byte swizzled."""
    return (("A", TensorMap(M, K, 1, p.block_m, p.block_k, SWIZZLE)),
            ("B", TensorMap(N, K, 1, p.block_n, p.block_k, SWIZZLE)))


def descriptors(p: GemmParams, stage: int, kk: int) -> tuple[np.ndarray, int]:
    """The K-major wgmma descriptors of k32 step ``kk`` of ``stage``: A's per consumer (its 64
    rows), B's (all block_n rows); rows of 128 bytes, 32 bytes further along K per step, SBO
    8 rows."""
    base = stage * p.stage_bytes + kk * 32
    a = base + np.arange(p.consumers) * p.warp_m * ROW_BYTES
    a_desc = [MatrixDescriptor(int(x), 16, 8 * ROW_BYTES, 0, SWIZZLE).encode() for x in a]
    b_desc = MatrixDescriptor(base + p.a_tile_bytes, 16, 8 * ROW_BYTES, 0, SWIZZLE).encode()
    return np.array(a_desc, np.uint64), b_desc


def qualifier(p: GemmParams) -> str:
    return f"m64n{p.block_n}k32.f32.{p.inputs}.{p.b_inputs}"


def program(m, p: GemmParams, plant: str = "") -> None:
    """The schedule; ``plant`` "promotion_off_by_one" promotes every ``promotion + 1`` steps,
    "scale_a_first" applies row-wise scales in the other order (`tcsim.kernels.planted`)."""
    stages = p.stages * p.stage_bytes  # the barriers follow the stages
    full = m.mbarriers("full", stages, p.stages, arrivals=1)
    empty = m.mbarriers("empty", stages + BARRIER_BYTES * p.stages, p.stages,
                        arrivals=4 * p.consumers)
    m.sync()
    spelling = qualifier(p)
    n = m.k_tile_count
    interval = p.promotion + (plant == "promotion_off_by_one")
    steps = p.block_k // FP8_STEP

    def producer():  # kernel7's: one thread copies each stage's A box and B box
        for t in m.tiles():
            for k in m.k_tiles():
                it = t * n + k
                s = it % p.stages
                if it >= p.stages:
                    yield from m.wait(empty, s, (it // p.stages - 1) & 1)
                a = s * p.stage_bytes
                m.arrive(full, s, expect_tx=p.stage_bytes)
                with m.tile(t):
                    m.tma_load("A_tma", "A", a, 0, 0, k, full, s)
                    m.tma_load("B_tma", "B", a + p.a_tile_bytes, 0, 0, k, full, s)

    def consumers():
        registers = wgmma_fragment(spelling, "d").registers
        for t in m.tiles():
            total = m.zeros(p.consumers, 128, registers)  # the f32 register accumulator
            part = None  # the tensor core's partial sum
            pending = 0  # k32 steps in ``part``
            for k in m.k_tiles():
                it = t * n + k
                s = it % p.stages
                yield from m.wait(full, s, (it // p.stages) & 1)
                m.wgmma_fence()
                for kk in range(steps):
                    if pending == 0:  # a partial starts from zero (the twin: scale-d 0)
                        part = m.zeros(p.consumers, 128, registers)
                    part = m.wgmma("wgmma", spelling, *descriptors(p, s, kk), part)
                    pending += 1
                    if pending == interval:  # closed: once its group retired, add it up
                        m.wgmma_commit()
                        m.wgmma_wait(0)
                        total = promote(total, part)
                        pending = 0
                        if kk + 1 < steps:  # the registers were read: fence the next wgmma
                            m.wgmma_fence()
                if pending:  # an open partial runs on into the next K tile
                    m.wgmma_commit()
                    m.wgmma_wait(0)
                m.arrive(empty, s, count=4 * p.consumers)  # every wgmma of stage s retired
            if pending:  # the last, open partial
                total = promote(total, part)
            with m.tile(t):
                scaled_epilogue(m, p, total, plant)

    m.run_roles(("producer", producer()), ("consumers", consumers()))


def scaled_epilogue(m, p: GemmParams, acc: np.ndarray, plant: str = "") -> None:
    """``D = out(acc * scale)`` from the consumers' f32 accumulators (row-wise: ``out((acc *
    scale_b[n]) * scale_a[m])``): warp w holds rows 16w .. 16w + 15 of the tile as m16n8
    accumulators; each lane stores 8 bytes of a row (an f32 pair; f16/bf16: two pairs,
    `sector_pairs`), predicated off past the matrix. The plant "scale_a_first" multiplies by
    scale_a first."""
    regs = mma_fragment(p.qualifier, "c").registers
    per_warp = acc.reshape(acc.shape[0], p.consumers * 4, 1, 32, p.block_n // 8, regs)
    per_warp = np.moveaxis(per_warp, 3, 4)  # (blocks, warps, 1, tiles_n, 32, regs)
    warps = np.arange(p.consumers * 4)[:, None]
    row, col = pair_coordinates(m, per_warp.shape[-4:-2], (16 * warps, 0 * warps))
    scales = ()
    if p.row_scales:  # each lane loads scale_a of its 2 rows, scale_b of its column pairs
        scales = (m.load_global("SA_gmem_load", "SA", row[:, :, :1], 0, vector=1, clip=True),
                  m.load_global("SB_gmem_load", "SB", 0, col[..., :1, :], vector=2, clip=True))
        if plant == "scale_a_first":
            scales = scales[::-1]
    words = scaled_words(m, per_warp, *scales)  # (blocks, warps, 1, tiles_n, 2, 32, words)
    if p.output != "f32":
        row, col, words = sector_pairs(row, col, words)
    m.store_global("D_gmem_store", "D", row, col, words, clip=True)


def sector_pairs(row: np.ndarray, col: np.ndarray,
                 words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f16/bf16 words stored by pairs of lanes (the twin: ``shfl.sync.bfly`` by 1, then
    ``st.global.v2.b32``): of column tiles 2j and 2j + 1, lanes 2i and 2i + 1 both store tile
    2j + (lane % 2), lane 2i's word then lane 2i + 1's, at lane 2i's column, so a row's four
    lanes write 16 adjacent columns (32 bytes, one sector). ``row``, ``col``: (..., tiles_n,
    2, 32); ``words`` (..., tiles_n, 2, 32, 1). Returns them per pair of tiles: (...,
    tiles_n / 2, 2, 32) and (..., tiles_n / 2, 2, 32, 2)."""
    lane = np.arange(32)
    tile, first = lane % 2, lane & ~1  # the tile of the pair each lane stores, its first lane

    def paired(x: np.ndarray, tiles_axis: int) -> np.ndarray:
        x = x.reshape(*x.shape[:tiles_axis], -1, 2, *x.shape[tiles_axis + 1:])
        return np.moveaxis(x, tiles_axis + 1, tiles_axis + 2)  # (..., j, halves, which, 32)

    row, col = np.broadcast_arrays(row, col)
    r, c = paired(row, row.ndim - 3), paired(col, col.ndim - 3)
    w = paired(words[..., 0], words.ndim - 4)
    return (r[..., tile, lane], c[..., tile, first],
            np.stack([w[..., tile, first], w[..., tile, first + 1]], axis=-1))


# Tile overrides from this size on (M and N): 128 x 192 with 5 stages (`measured_tile`).
LARGE = 8192


def measured_tile(M: int, N: int) -> dict[str, int]:
    """kernel11's tile overrides for D of M x N, as measured on the H100 against
    ``torch._scaled_mm`` (docs/kernels.md, "Half sectors"): none (128 x 128, 6 stages,
    94-96% of ``_scaled_mm`` at 4096^3, where 128 x 192 ran 90-91%) below `LARGE`;
    ``block_n=192, warp_n=192, stages=5`` once M and N are both at least `LARGE` (95-99% at
    8192^3, where 128 x 128 ran 77-85%). Only those two sizes were measured: the rule for the
    others is this threshold, not a model. Use as ``tcsim.run(kernel11, A, B, ...,
    **measured_tile(M, N))`` or ``bench_fp8.py --variants``."""
    M, N = (integer(x, f"measured_tile: {name}", minimum=1) for x, name in ((M, "M"), (N, "N")))
    if M >= LARGE and N >= LARGE:
        return {"block_n": 192, "warp_n": 192, "stages": 5}
    return {}


kernel11 = Kernel(
    "kernel11", "fp8 (e4m3/e5m2) with cuBLAS's promoted f32 accumulation and scales: "
    "wgmma m64nNk32 from K-major descriptors, kernel8's roles and tile order",
    program, lambda p: (),
    GemmParams(block_m=128, block_n=128, block_k=128, warp_m=64, warp_n=128, warp_k=32,
               mma_k=32, stages=6, producers=1, accumulate="f32", inputs="e4m3",
               output="bf16", promotion=PROMOTION, group_m=GROUP_M,
               persistent_blocks=H100_SXM_SMS),
    requires, arch="sm_90a", tensor_maps=tensor_maps, options=REGISTERS,
    launch_shape=launch_shape, takes_c=False, scaled=True, twin_schedule="gemm_fp8")

__all__ = ["kernel11", "measured_tile"]
