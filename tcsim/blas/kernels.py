"""What a cuBLAS kernel's name says about its plan, and what it leaves open.

cuBLAS's kernel names (as the profiler shows them) carry the instruction family, the tile and
the k-tile, promotion (fp8 ``algo2``), split-K, and, in the split-K reduction kernel's template,
the type partial results are kept in. They do not carry the split count, nor always the
k-tile of older CUTLASS kernels: `candidates` lists what identification must try.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .plan import Plan

_NVJET = re.compile(r"nvjet_sm90_([a-z]+)_(\d+)x(\d+)_(\d+)x(\d+)_")
_CUTLASS = re.compile(
    r"cutlass_(\d+)_(wmma_)?tensorop_(?:([a-z0-9]+)_)?([shi])(\d+)gemm_([a-z0-9]+)_(\d+)x(\d+)"
    r"(?:_(\d+)x(\d+))?_")
_TILESIZE = re.compile(r"tilesize(\d+)x(\d+)x(\d+)")
_SIMT = re.compile(r"simt_sgemm_(\d+)x(\d+)_(\d+)x(\d+)")
_REDUCE = re.compile(r"splitKreduce_kernel<\d+, \d+, int, ([\w:]+),")
_PARTIAL_TYPES = {"float": "f32", "__half": "f16", "__nv_bfloat16": "bf16"}
_FP8_CODES = {"q": "e4m3", "r": "e5m2"}


@dataclass(frozen=True)
class KernelFacts:
    """A kernel's plan as far as its name fixes it, and the values identification tries for
    the rest."""

    base: Plan
    k_tiles: tuple[int, ...]
    split_k: bool  # the name (or a second, reduction kernel) says the launch splits K
    orders: tuple[str, ...]
    reductions: tuple[str, ...] = ("parallel",)
    # Element counts a split range rounds to (0: the k-tile), the likeliest first.
    split_aligns: tuple[int, ...] = (0,)
    # (lanes, lane_width, lane_reduction) of the threads sharing each output's K (gemv and
    # gemmSN kernels), the likeliest first.
    lanes: tuple[tuple[int, int, str], ...] = ((1, 1, "tree"),)
    # The launch's split count deals out k-tiles in turn (lanes of k-tile width) instead of
    # cutting K into contiguous ranges.
    interleaved: bool = False


def mma_qualifier(input_type: str, k: int) -> str:
    return f"m16n8k{k}.row.col.f32.{input_type}.{input_type}.f32"


def read(names: list[str], input_type: str,
         block: tuple[int, ...] | None = None) -> KernelFacts | None:
    """The facts of a launch from the names of its kernels (the GEMM, and a split-K reduction
    kernel when there is one), for inputs of ``input_type`` ("f16", "bf16", "f32" meaning
    f32 without tf32, "tf32", "e4m3"/"e5m2" pairs as "e4m3.e5m2", "s8"). None when tcsim has no
    model of the kernel's family. ``block``: the GEMM kernel's launch block, when known
    (gemv kernels share K among its threads)."""
    # torch's own kernels (a bias copied into the output first) are not the GEMM.
    names = [n for n in names if "at::native::" not in n] or names
    gemm = names[0]
    reduce = next((n for n in names[1:] if "splitKreduce" in n), None)
    partial = "f32"
    if reduce and (m := _REDUCE.search(reduce)):
        partial = _PARTIAL_TYPES.get(m.group(1), "f32")
    split = reduce is not None or "splitK" in gemm
    if input_type == "s8":
        return KernelFacts(Plan("int", "int8", 32, kernel=gemm), (32,), False, ("in_order",))
    if m := _NVJET.search(gemm):
        k_tile = int(m.group(4))
        if "." in input_type:  # fp8: wgmma k32 steps
            a, b = input_type.split(".")
            base = Plan("wgmma_fp8", f"m64n8k32.f32.{a}.{b}", k_tile,
                        promotion=4 if "algo2" in gemm else None, partial=partial,
                        kernel=gemm)
        else:
            base = Plan("mma", mma_qualifier(input_type, 16), k_tile, partial=partial,
                        kernel=gemm)
        return KernelFacts(base, (k_tile,), split, ("in_order",))
    if m := _CUTLASS.search(gemm):
        shape, tile_k = m.group(5), m.group(9)
        if m.group(4) == "i":
            return KernelFacts(Plan("int", "int8", 32, kernel=gemm), (32,), False,
                               ("in_order",))
        k = {"1688": 8, "16816": 16, "161616": 16}.get(shape)
        if k is None:
            return None
        itype = "tf32" if input_type in ("tf32", "f32") else input_type
        k_tiles = (int(tile_k),) if tile_k else (32, 64, 16)
        align = 4 if itype == "tf32" else 8
        base = Plan("mma", mma_qualifier(itype, k), k_tiles[0], split_align=align,
                    order="residue_first", partial=partial,
                    round_inputs="tf32" if itype == "tf32" else None, kernel=gemm)
        # A split with no reduction kernel is CUTLASS's serial split-K. Ranges round to 8
        # 16-bit elements (16 bytes); tf32's to whole k-tiles (measured: 6 of 6 sweep calls
        # that 4-element rounding left unexplained).
        serial = ("serial",) if reduce is None else ("parallel",)
        aligns = (0, align) if itype == "tf32" else (align, 0)
        return KernelFacts(base, k_tiles, split, ("residue_first", "in_order"), serial, aligns)
    if "sm90_xmma_gemm" in gemm and input_type in ("f16", "bf16") and (
            m := _TILESIZE.search(gemm)):
        # Hopper's xmma kernels (seen for some bmm shapes): wgmma k16 steps, like nvjet's.
        base = Plan("mma", mma_qualifier(input_type, 16), int(m.group(3)), partial=partial,
                    kernel=gemm)
        return KernelFacts(base, (int(m.group(3)),), split, ("in_order",))
    if "tf32f32" in gemm and (m := _TILESIZE.search(gemm)):
        base = Plan("mma", mma_qualifier("tf32", 8), int(m.group(3)), partial=partial,
                    round_inputs="tf32", kernel=gemm, split_align=4)
        return KernelFacts(base, (int(m.group(3)),), split, ("in_order", "residue_first"))
    # CUDA-core kernels read 16-bit inputs widened to f32 (f32 inputs as they are).
    widened = "f32" if input_type == "tf32" else input_type
    if "ffma" in gemm and (m := _TILESIZE.search(gemm)):
        base = Plan("ffma", f"fma.rn.f32.{widened}", int(m.group(3)), partial=partial,
                    kernel=gemm, split_align=4)
        # With a second, "execute_split_k" kernel that adds the slices: S = the first
        # launch's grid z slices take the k-tiles in turn (measured: 3 of 3 order probes).
        sliced = any("execute_split_k_kernel" in n for n in names[1:])
        return KernelFacts(base, (int(m.group(3)),), split, ("in_order", "residue_first"),
                           split_aligns=(4, 0), interleaved=sliced)
    if "dot_kernel" in gemm and any("reduce_1Block" in n for n in names[1:]):
        return None  # blocks of 128 threads and a reduction kernel: order not found yet
    if "dot_kernel" in gemm:  # cuBLAS's dot product (M = N = 1); seen only with K = 1
        return KernelFacts(Plan("ffma", f"fma.rn.f32.{widened}", 1, kernel=gemm), (1,), False,
                           ("in_order",))
    if m := _SIMT.search(gemm):
        # Split ranges round to 4 elements, each an in-order FMA chain (measured: all 48
        # sweep calls of these kernels with grid z = S and ranges of round_up(ceil(K/S), 4)).
        base = Plan("ffma", "fma.rn.f32.f32", int(m.group(3)), partial=partial,
                    kernel=gemm, split_align=4)
        return KernelFacts(base, (int(m.group(3)),), split, ("in_order", "residue_first"),
                           split_aligns=(4, 0))
    return gemv_facts(gemm, names, widened, partial, split, block)


_TEMPLATE_INTS = re.compile(r"(?<=[<, ])(\d+)(?=[,>])")
# Lane layouts of gemvx kernels, the likeliest first (measured on cancelling inputs: strided
# lanes for long K, one contiguous piece per lane for short K, blocks of 64 for [64, 8]).
_GEMVX_WIDTHS = (1, 0, 64, 4, 2, 8, 16, 32)


def gemv_facts(gemm: str, names: list[str], widened: str, partial: str, split: bool,
               block: tuple[int, ...] | None = None) -> KernelFacts | None:
    """cuBLAS's matrix-vector and small-N kernels: f32 FMA chains on the CUDA cores, each
    output's K shared by several threads (lanes) whose sums are then added.

    Measured on the H100 with inputs whose products cancel in pairs (the output is the
    rounding residue, which tells orders of addition apart; scripts/blas_sweep.py --set
    orders): ``gemmSN_NN_kernel<float, T, L, ...>`` gives K to L threads in contiguous pieces
    and adds their sums in order, ``gemmSN_TN_kernel`` strided; ``gemvNSP_kernel<..., 1, T,
    4, ...>`` to the block's y threads in blocks of 4, added pairwise (`gemv_nsp_lanes`);
    ``gemv2N_kernel`` runs one chain per output, ``gemv2T_kernel_val`` 16 strided lanes in
    chunks (`Plan.lane_chunk`); ``internal::gemvx::kernel`` to the block's
    K-threads (x when transposed, else y), in contiguous pieces or strided, added
    pairwise."""
    base = Plan("ffma", f"fma.rn.f32.{widened}", 1, partial=partial, kernel=gemm,
                split_align=1)
    ints = [int(x) for x in _TEMPLATE_INTS.findall(gemm.split(">(", 1)[0])]
    if "gemmSN_NN_kernel" in gemm and len(ints) >= 2:
        lanes = ((ints[1], 0, "in_order"),)
    elif "gemmSN_TN_kernel" in gemm and len(ints) >= 2:
        # L strided lanes, each summing 16 of its elements at a time from zero into its running
        # sum, added in order (measured: bf16 5 x 5199 x 144, 240 of 240 residues; whole
        # outputs of bf16 12 x 3 x 900, 1800 and 3638, where the chunks show)
        base = base.with_(lane_chunk=16)
        lanes = ((ints[1], 1, "in_order"), (ints[1], 0, "in_order"))
    elif "gemvNSP_kernel" in gemm and len(ints) >= 3:
        lanes = gemv_nsp_lanes(ints[1], ints[2], block)
    elif "gemv2N_kernel" in gemm:
        lanes = ((1, 1, "tree"),)
    elif "gemv2T_kernel" in gemm and len(ints) >= 2:
        # <..., 128, 16, 4, 4, ...>: 16 strided lanes, each summing 32 of its elements at a time
        # from zero into its running sum, the lanes added in order (measured: whole outputs
        # of 7 order probes, float16 and bfloat16, 7105 x 1 x 2048 .. 5208, 1 x 7789 x 3898,
        # and a split-K launch of S = grid z ranges of ceil(K / S))
        base = base.with_(lane_chunk=32)
        lanes = ((ints[1], 1, "in_order"),)
    elif "gemvx::kernel" in gemm:
        flags = re.findall(r"\b(true|false)\b", gemm.split("gemvx::kernel<", 1)[1])
        transposed = len(flags) >= 3 and flags[2] == "true"
        if block is not None:
            # The K-threads are x for a transposed matrix or the first flag set, else y;
            # not always (a split-K launch, first flag set, blocks [64, 2]: y's 2 threads in
            # blocks of 64, measured on float16 and bfloat16 1 x 1893 x 6360 probes), so the
            # other count is tried next.
            first = block[0] if transposed or flags[:1] == ["true"] else block[1]
            counts = tuple(dict.fromkeys((first, block[1] if first == block[0] else block[0])))
        else:
            counts = (32, 16, 8, 2, 4, 64, 128)
        lanes = tuple((n, w, r) for n in counts for r in ("tree", "in_order")
                      for w in _GEMVX_WIDTHS if n > 1 or (w, r) == (1, "tree"))
    else:
        return None
    return KernelFacts(base, (1,), split, ("in_order",), lanes=lanes)


def gemv_nsp_lanes(threads: int, width: int, block: tuple[int, ...] | None = None
                   ) -> tuple[tuple[int, int, str], ...]:
    """Lane layouts of ``gemvNSP_kernel<..., 1, threads, width, ...>``, the likeliest first.

    Measured (order probes): the block's y threads share K in blocks of ``width`` (block b
    to lane b % y), FMA chains, the lanes added pairwise over the next power of two (the
    missing lanes zero). <1, 32, 4> ran blocks [8 or 24, 32] (6 of 6 probes); <1, 16, 4>
    (float32) ran [32, 24]: 24 lanes, not the template's 16 (11 of 11 float32 probes, whole
    outputs, e.g. bmm 1 x 688 x 360, batch 3). Without the block: the template's count, then
    24, then the layouts tried before the block settled it."""
    first = ((block[1], width, "tree"),) if block is not None and len(block) > 1 and (
        block[1] > 1) else ()
    first += ((threads, width, "tree"), (24, width, "tree"), (threads * width, 1, "tree"),
              (threads, width, "in_order"), (threads, 1, "tree"), (threads, 0, "tree"),
              (32, width, "tree"))
    return tuple(dict.fromkeys(first))


def split_hint(kernels: list[dict], batch: int = 1) -> int | None:
    """The split count the launch grid suggests, or None: grid z for CUTLASS 2.x and gemv
    kernels (after the batch, which a batched launch counts there first), grid y for most
    nvjet split-K kernels (not all: some fold it into x)."""
    gemm = kernels[0]
    grid = gemm.get("grid") or [1, 1, 1]
    hint = None
    # sm80 xmma kernels whose slices a second, split_k kernel adds
    twice = len(kernels) > 1 and "execute_split_k_kernel" in kernels[1]["name"]
    if ("cutlass" in gemm["name"] or "gemv" in gemm["name"] or twice) and grid[2] > 1:
        hint = grid[2] // batch if grid[2] % batch == 0 else None
    elif "splitK" in gemm["name"]:
        hint = grid[1]
    return hint if hint and hint > 1 else None
