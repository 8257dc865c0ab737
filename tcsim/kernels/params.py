"""Tile parameters of a GEMM kernel and the problem sizes they accept.

`GemmParams` owns the hierarchical tiling every kernel of the ladder shares: a block computes a
``block_m x block_n`` tile of D, looping over K in steps of ``block_k``; its warps each own a
``warp_m x warp_n`` sub-tile and walk ``block_k`` in steps of ``warp_k``; a warp covers its
sub-tile with m16n8k8 (or m16n8k16) tensor-core instructions; ``stages`` shared buffers
hold successive K tiles when a kernel pipelines its copies. Every derived count (warps,
threads, mma tiles, shared-memory bytes) is a property here, so the Python schedule and its
CUDA twin read the same numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import ml_dtypes
import numpy as np

from ..isa.validate import integer
from ..memory.descriptors import SwizzleMode
from ..memory.shared import SM90_BLOCK_LIMIT

MMA_M, MMA_N = 16, 8  # every mma.sync tile of the ladder is 16 x 8; K is 8 or 16 (mma_k)
MMA_KS = (8, 16, 32)  # k32: fp8 (kernel11's wgmma m64nNk32)
VECTOR = 8  # f16 elements per 16-byte global load / shared store
ELEMENT_BYTES = 2  # f16
ACCUMULATE = ("f16", "f32")
# Element types in global memory: f16 (the ladder, seed 003), f32 (seed 004's tf32 kernel,
# whose f32 data goes to the tensor cores as tf32) or bf16 (the Hopper rungs).
# fp8 (e4m3, e5m2) inputs run on kernel11 only.
TYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "e4m3": 1, "e5m2": 1}
DTYPES = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
          "f32": np.dtype(np.float32), "e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
          "e5m2": np.dtype(ml_dtypes.float8_e5m2)}
FP8 = ("e4m3", "e5m2")
FP8_STEP = 32  # K of one fp8 wgmma (m64nNk32)
TMA_ROW_ELEMENTS = 8  # TMA's global rows are whole 16-byte units: 8 f16 or bf16 elements
# What the CUDA twin can launch: it takes M, N and K as int, and the grid is (N / block_n,
# M / block_m) blocks, where CUDA allows at most 65,535 along y.
MAX_SIZE = 2**31 - 1
MAX_GRID_Y = 65535
CLUSTER_SIZES = (1, 2)  # cluster_m: blocks a cluster (the twin's CLUSTER_M)
ZERO_ALLOWED = ("stages", "producers", "group_m", "persistent_blocks", "staged_epilogue",
                "store_buffers", "promotion", "row_scales")
STAGING_ROW_BYTES = 128  # a staged epilogue's row: 64 f16 columns
TMA_SWIZZLE_ALIGN = 1024  # a 128-byte swizzled TMA box in shared memory starts here
# Columns of the Hopper rungs' boxes along N (B's TMA boxes, the epilogues' chunks): 64 (rows
# of 128 bytes, the 128-byte swizzle) where block_n is a multiple of 64, else 32 (rows of 64
# bytes, the 64-byte swizzle), so block_n may be any multiple of 32 (96, 160, 224)
WIDE_BOX, NARROW_BOX = 64, 32


def box_swizzle(columns: int) -> SwizzleMode:
    """The swizzle of boxes ``columns`` f16 wide: a row is one swizzle atom's width."""
    if columns not in (WIDE_BOX, NARROW_BOX):
        raise ValueError(f"the Hopper rungs' boxes along N are {WIDE_BOX} or {NARROW_BOX} "
                         f"columns wide (128- or 64-byte swizzle), got {columns!r}")
    return SwizzleMode.B128 if columns == WIDE_BOX else SwizzleMode.B64


class ProblemSizeError(ValueError):
    """M, N or K that a kernel cannot run: not a positive integer, not a multiple of what its
    tiles require, more than its CUDA twin can launch, or (`tcsim.run`) more than this
    machine's memory holds."""


def tile_count(size: int, tile: int) -> int:
    """Tiles of ``tile`` elements covering ``size`` (the last one partial unless it divides)."""
    return -(-size // tile)


@dataclass(frozen=True)
class GemmParams:
    """A kernel's tile sizes (in elements) and accumulator type; see the module docstring."""

    block_m: int = 256
    block_n: int = 128
    block_k: int = 64
    warp_m: int = 64
    warp_n: int = 64
    warp_k: int = 32
    accumulate: str = "f16"
    mma_k: int = 8  # m16n8k8 or m16n8k16
    # shared-memory buffers of (A, B) tiles: >1 for a cp.async pipeline, 0 for a kernel that
    # loads its fragments straight from global memory
    stages: int = 1
    inputs: str = "f16"  # A's and B's element type in memory: "f16" or "f32" (tf32 mma)
    output: str = "f16"  # C's and D's element type in memory
    # Warp-specialized kernels (kernel7): warpgroups that only copy (TMA). With one, each
    # warp_m x warp_n tile belongs to a consumer warpgroup (128 threads issuing wgmma), and
    # the block is the producer warpgroup plus one consumer per tile.
    producers: int = 0
    # Which block computes which tile (`tcsim.kernels.scheduler`; warp-specialized kernels):
    # ``group_m`` 0 hands tiles out along N first, g > 0 in groups of g block rows walked down
    # M first (tiles in flight share rows of A and columns of B in L2); ``persistent_blocks``
    # 0 launches one block per tile, b > 0 launches b blocks that each loop over tiles.
    group_m: int = 0
    persistent_blocks: int = 0
    # 1: the epilogue moves C and D through shared memory in whole 128-byte lines, each
    # consumer warp through its own staging of 16 rows x 64 columns (kernel9; 32 columns,
    # 64-byte lines, where block_n is not a multiple of 64: `column_box`).
    staged_epilogue: int = 0
    # n > 0: C arrives and D leaves by TMA, through n buffers of 16 rows x 64 (or 32:
    # `column_box`) columns per consumer warp, each with an mbarrier its C completes on
    # (kernel10).
    store_buffers: int = 0
    # fp8 (kernel11): B's element type when it differs from A's ("" for A's: ``inputs``), and
    # every how many wgmma k32 steps the tensor core's partial sum, started from zero, is
    # added to the f32 register accumulator (cuBLAS's promoted accumulation: 4); 0 for the
    # other inputs.
    inputs_b: str = ""
    promotion: int = 0
    # 1: fp8's row-wise scales, scale_a per row of A and scale_b per column of B (f32 vectors
    # "SA" and "SB" in global memory); 0: one scale each, per tensor.
    row_scales: int = 0
    # split-K (kernel10, `tcsim.kernels.split_k`): s > 1 splits each tile's K tiles into s
    # contiguous ranges, one block per (tile, range); the block of the last range adds the
    # others' f32 partials to its own in range order. With s > 1 ``persistent_blocks`` does
    # not apply.
    splits: int = 1
    # Thread-block clusters (kernel8 .. kernel10): c > 1 launches the persistent blocks in
    # clusters of c that compute c vertically adjacent tiles of one block column at a time;
    # each block copies 1 / c of B's 64-column boxes and multicasts them to every block of the
    # cluster (`tcsim.kernels.kernel7`). 1: no clusters.
    cluster_m: int = 1

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "accumulate":
                if value not in ACCUMULATE:
                    raise ValueError(f"{f.name} must be 'f16' or 'f32', got {value!r}")
            elif f.name in ("inputs", "output"):
                if value not in TYPE_BYTES:
                    raise ValueError(f"{f.name} must be 'f16', 'bf16', 'f32', 'e4m3' or 'e5m2', "
                                     f"got {value!r}")
            elif f.name == "inputs_b":
                if value not in ("", *FP8):
                    raise ValueError(f"inputs_b (B's fp8 type) must be '', 'e4m3' or 'e5m2', "
                                     f"got {value!r}")
            else:  # numpy integers are welcome, and stored as ints
                object.__setattr__(self, f.name, integer(
                    value, f.name, minimum=0 if f.name in ZERO_ALLOWED else 1,
                    type_error=ValueError))
        self._require(self.inputs != "f32" or (self.accumulate == "f32" and self.mma_k == 8),
                      "f32 inputs run as tf32 m16n8k8 with f32 accumulators: they need "
                      f"accumulate='f32' and mma_k=8, got {self.accumulate!r} and {self.mma_k}")
        self._require(self.inputs != "bf16" or self.accumulate == "f32",
                      "bf16 inputs accumulate in f32: the tensor cores have no f16 accumulator "
                      "for bf16 products (wgmma and mma.sync take .f16 accumulators with f16 "
                      f"inputs only), got accumulate={self.accumulate!r}")
        self._check_fp8()
        self._require("bf16" not in (self.inputs, self.output) or self.producers,
                      "bf16 inputs and outputs run on the Hopper rungs (kernel7 .. kernel10, "
                      f"producers=1), got inputs={self.inputs!r}, output={self.output!r}, "
                      f"producers={self.producers}")
        self._require(self.warp_m % MMA_M == 0, f"warp_m={self.warp_m} must be a multiple of 16")
        self._require(self.warp_n % MMA_N == 0, f"warp_n={self.warp_n} must be a multiple of 8")
        self._require(self.mma_k in MMA_KS, f"mma_k must be 8, 16 or 32, got {self.mma_k}")
        self._require((self.mma_k == FP8_STEP) == self.fp8,
                      f"mma_k=32 is fp8's wgmma k32, and fp8 inputs need it: got mma_k="
                      f"{self.mma_k} with inputs={self.inputs!r}")
        self._require(self.warp_k % self.mma_k == 0,
                      f"warp_k={self.warp_k} must be a multiple of mma_k={self.mma_k}")
        for outer, inner in (("block_m", "warp_m"), ("block_n", "warp_n"),
                             ("block_k", "warp_k")):
            o, i = getattr(self, outer), getattr(self, inner)
            self._require(o % i == 0, f"{outer}={o} must be a multiple of {inner}={i} (a "
                                      f"smaller {outer} may need a smaller {inner} too)")
        self._require(self.threads <= 1024,
                      f"{self.warps} warps ({self.threads} threads) exceed 1024 threads a block")
        self._require(self.producers in (0, 1), f"producers must be 0 or 1, got {self.producers}")
        self._require(not self.producers or (self.warp_m == 64 and self.mma_k in (16, 32)),
                      "a consumer warpgroup issues wgmma m64nNk16 (m64nNk32 for fp8): warp_m "
                      f"must be 64 and mma_k 16 (32), got {self.warp_m} and {self.mma_k}")
        self._require(self.producers or not (self.group_m or self.persistent_blocks),
                      "group_m and persistent_blocks order the tiles of a warp-specialized "
                      "kernel's tile loop (producers=1); this kernel launches one block per "
                      f"tile, got group_m={self.group_m}, "
                      f"persistent_blocks={self.persistent_blocks}")
        self._require(self.staged_epilogue in (0, 1) and (
            not self.staged_epilogue or (self.producers and self.block_n % NARROW_BOX == 0)),
            "staged_epilogue is 0 or 1, and 1 only for a warp-specialized kernel (producers=1) "
            f"whose block_n is a multiple of {NARROW_BOX}, got staged_epilogue="
            f"{self.staged_epilogue}, producers={self.producers}, block_n={self.block_n}")
        self._require(not self.store_buffers or (
            self.producers and self.block_n % NARROW_BOX == 0 and not self.staged_epilogue),
            "store_buffers > 0 (the TMA epilogue) needs a warp-specialized kernel (producers=1) "
            f"whose block_n is a multiple of {NARROW_BOX}, and no staged_epilogue, got "
            f"store_buffers={self.store_buffers}, producers={self.producers}, "
            f"block_n={self.block_n}, staged_epilogue={self.staged_epilogue}")
        self._require(self.splits == 1 or self.store_buffers,
                      f"splits={self.splits} (split-K) runs on kernel10's TMA epilogue: it needs "
                      f"store_buffers > 0, got {self.store_buffers}")
        self._require(self.splits == 1 or self.accumulate == "f32",
                      f"splits={self.splits} (split-K) sums f32 partials: it needs "
                      f"accumulate='f32', got {self.accumulate!r}")
        self._check_cluster()
        copied_by_threads = self.stages and not self.producers  # TMA copies whole tiles
        for name, rows, cols in (("A", self.block_m, self.block_k),
                                 ("B", self.block_k, self.block_n))[:2 if copied_by_threads else 0]:
            vectors = rows * cols // self.vector
            self._require(cols % self.vector == 0 and vectors % self.threads == 0,
                          f"the {name} tile ({rows}x{cols}) must split into 16-byte vectors, an "
                          f"equal number per thread ({self.threads} threads)")
        self._require(self.shared_bytes <= SM90_BLOCK_LIMIT,
                      f"{self.shared_bytes} bytes of shared memory exceed {SM90_BLOCK_LIMIT}")

    def _check_cluster(self) -> None:
        """What clusters ask (the twin's CLUSTER_M): persistent TMA blocks in pairs that split
        B's boxes between them, one tile each per turn, on the whole K range."""
        c = self.cluster_m
        if c == 1:
            return
        self._require(c in CLUSTER_SIZES, f"cluster_m must be 1 or 2 (blocks a cluster), got {c}")
        self._require(self.producers and not self.fp8,
                      f"cluster_m={c} runs on the warp-specialized f16/bf16 rungs (kernel8 .. "
                      f"kernel10: producers=1), got producers={self.producers}, "
                      f"inputs={self.inputs!r}")
        self._require(self.persistent_blocks > 0 and self.persistent_blocks % c == 0,
                      f"cluster_m={c} needs persistent blocks (kernel8 and later) in whole "
                      f"clusters: persistent_blocks a positive multiple of {c}, got "
                      f"persistent_blocks={self.persistent_blocks}")
        self._require(self.block_n % NARROW_BOX == 0,
                      f"cluster_m={c}: the blocks share B's boxes of {WIDE_BOX} or {NARROW_BOX} "
                      f"columns (rank r multicasts boxes r, r + {c}, ...), so block_n must be a "
                      f"multiple of {NARROW_BOX}, got block_n={self.block_n}")
        self._require(self.splits == 1,
                      f"cluster_m={c} and split-K (splits={self.splits}) do not go together: a "
                      "cluster's blocks share B's tiles over the whole K range")

    def _check_fp8(self) -> None:
        """What fp8 inputs ask (kernel11): the scaled GEMM that torch._scaled_mm runs."""
        b = self.b_inputs
        self._require(self.output not in FP8, "fp8 output (e4m3, e5m2) is not offered yet: "
                      f"output must be 'f16', 'bf16' or 'f32', got {self.output!r}")
        self._require(not self.fp8 or self.mma_k == FP8_STEP,
                      f"inputs must be 'f16', 'bf16' or 'f32' for a kernel of mma_k={self.mma_k}"
                      f", got {self.inputs!r}: fp8 inputs ('e4m3', 'e5m2') run on kernel11, "
                      "whose wgmma steps K by 32 (mma_k=32)")
        self._require((b in FP8) == self.fp8,
                      "fp8 inputs go together: A and B both e4m3 or e5m2 (inputs, inputs_b), "
                      f"got inputs={self.inputs!r}, inputs_b={self.inputs_b!r}")
        self._require(self.row_scales in (0, 1) and (not self.row_scales or (
            self.inputs == b == "e4m3" and self.output == "bf16")),
            "row_scales is 0 or 1, and 1 only with e4m3 x e4m3 inputs and bf16 output (torch's "
            f"rule for row-wise scales), got row_scales={self.row_scales}, inputs="
            f"{self.inputs!r}, inputs_b={self.inputs_b!r}, output={self.output!r}")
        if not self.fp8:
            self._require(not self.promotion, "promotion (fp8's promoted accumulation) needs "
                          f"fp8 inputs, got promotion={self.promotion}, inputs={self.inputs!r}")
            return
        self._require(not (self.inputs == b == "e5m2"),
                      "e5m2 x e5m2 is refused as torch._scaled_mm refuses it (cuBLAS's fp8 "
                      "GEMM takes e4m3 x e4m3, e4m3 x e5m2 or e5m2 x e4m3)")
        self._require(self.accumulate == "f32",
                      "fp8 inputs accumulate in f32 (cuBLAS's and torch._scaled_mm's; the "
                      f"f16 accumulator is not offered), got accumulate={self.accumulate!r}")
        self._require(self.producers == 1,
                      f"fp8 inputs run on kernel11 (producers=1), got producers={self.producers}")

    @property
    def fp8(self) -> bool:
        """Whether A is fp8 (B then is too): kernel11's scaled GEMM."""
        return self.inputs in FP8

    @property
    def b_inputs(self) -> str:
        """B's element type."""
        return self.inputs_b or self.inputs

    @property
    def b_k_major(self) -> bool:
        """Whether B lies in global memory K-major, N rows of K elements (cuBLAS's TN, the
        layout torch._scaled_mm asks): fp8 wgmma reads both operands K-major only."""
        return self.fp8

    @staticmethod
    def _require(ok: bool, message: str) -> None:
        if not ok:
            raise ValueError(message)

    # ---- derived counts ---------------------------------------------------------------------

    @property
    def warps_m(self) -> int:
        return self.block_m // self.warp_m

    @property
    def warps_n(self) -> int:
        return self.block_n // self.warp_n

    @property
    def consumers(self) -> int:
        """Consumer warpgroups of a warp-specialized kernel (0 for the ladder's lockstep)."""
        return self.warps_m * self.warps_n if self.producers else 0

    @property
    def warps(self) -> int:
        if self.producers:
            return 4 * (self.producers + self.consumers)
        return self.warps_m * self.warps_n

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def tiles_m(self) -> int:
        """m16n8k8 tiles along a warp tile's M."""
        return self.warp_m // MMA_M

    @property
    def tiles_n(self) -> int:
        return self.warp_n // MMA_N

    @property
    def tiles_k(self) -> int:
        """mma steps along K in one warp_k step."""
        return self.warp_k // self.mma_k

    def element_bytes(self, operand: str) -> int:
        """Bytes of one element of global operand "A", "B", "C" or "D"."""
        if operand in ("SA", "SB", "W"):  # fp8's row-wise scales; split-K's f32 partials
            return 4
        kind = {"A": self.inputs, "B": self.b_inputs}.get(operand, self.output)
        return TYPE_BYTES[kind]

    @property
    def output_dtype(self) -> np.dtype:
        """numpy's dtype of C and D."""
        return DTYPES[self.output]

    @property
    def input_dtype(self) -> np.dtype:
        """numpy's dtype of A and B."""
        return DTYPES[self.inputs]

    @property
    def vector(self) -> int:
        """A's and B's elements in one 16-byte vector (a copy's unit)."""
        return 16 // TYPE_BYTES[self.inputs]

    @property
    def a_tile_bytes(self) -> int:
        return self.block_m * self.block_k * TYPE_BYTES[self.inputs]

    @property
    def b_tile_bytes(self) -> int:
        return self.block_k * self.block_n * TYPE_BYTES[self.b_inputs]

    @property
    def stage_bytes(self) -> int:
        """One stage: an A tile then a B tile."""
        return self.a_tile_bytes + self.b_tile_bytes

    @property
    def barrier_bytes(self) -> int:
        """A warp-specialized kernel's mbarriers, 8 bytes each, after the stages: a full and an
        empty one per stage, then the TMA epilogue's one per buffer of C."""
        return 16 * self.stages + 8 * self.c_barriers if self.producers else 0

    @property
    def c_barriers(self) -> int:
        """The TMA epilogue's barriers: one per consumer warp and buffer (else 0)."""
        return 4 * self.consumers * self.store_buffers

    @property
    def column_box(self) -> int:
        """Columns of B's TMA boxes and of the epilogues' chunks (Hopper rungs): 64 where
        block_n is a multiple of 64, else 32 (96-wide tiles and the like)."""
        return WIDE_BOX if self.block_n % WIDE_BOX == 0 else NARROW_BOX

    @property
    def box_row_bytes(self) -> int:
        """Bytes of one row of those boxes (f16 or bf16): 128 or 64."""
        return 2 * self.column_box

    @property
    def box_swizzle(self) -> SwizzleMode:
        """Their swizzle: a row is one swizzle atom's width (128-byte or 64-byte swizzle)."""
        return box_swizzle(self.column_box)

    @property
    def staging_offset(self) -> int:
        """Where an epilogue's buffers start: after the barriers, on a 128-byte row (1024
        bytes for TMA boxes, whose 128-byte swizzle follows the address bits)."""
        end = self.stages * self.stage_bytes + self.barrier_bytes
        align = TMA_SWIZZLE_ALIGN if self.store_buffers else STAGING_ROW_BYTES
        return -(-end // align) * align

    @property
    def staging_bytes(self) -> int:
        """An epilogue's buffers of 16 rows of `box_row_bytes`: one per consumer warp for the
        staged epilogue, ``store_buffers`` for the TMA one (else 0)."""
        buffers = self.staged_epilogue + self.store_buffers
        return buffers * 4 * self.consumers * 16 * self.box_row_bytes

    @property
    def shared_bytes(self) -> int:
        if self.staging_bytes:
            return self.staging_offset + self.staging_bytes
        return self.stages * self.stage_bytes + self.barrier_bytes

    @property
    def qualifier(self) -> str:
        """The mma.sync the tiles are made of (f32 inputs: tf32); the wgmma kernels'
        accumulators are laid out as these m16n8 tiles."""
        acc = self.accumulate
        ab = "tf32" if self.inputs == "f32" else self.inputs
        return f"m16n8k{self.mma_k}.row.col.{acc}.{ab}.{self.inputs_b or ab}.{acc}"

    @property
    def ragged(self) -> bool:
        """Whether M, N and K need not be multiples of the tiles: the TMA kernels (producers=1)
        read their edge tiles as boxes that TMA fills with zeros past the matrix and store
        only what lies inside it; the ladder's copies and stores are not predicated."""
        return bool(self.producers)

    def grid(self, M: int, N: int) -> tuple[int, int]:
        """(blocks along N, blocks along M): CUDA's gridDim.x, gridDim.y."""
        return tile_count(N, self.block_n), tile_count(M, self.block_m)

    def check_problem(self, M: int, N: int, K: int,
                      kernel: str = "this kernel") -> tuple[int, int, int]:
        """(M, N, K) as ints; `ProblemSizeError` unless they are positive integers (numpy's
        too) that the tiles divide (a TMA kernel: whose rows are whole 16-byte units) and the
        CUDA twin can launch."""
        M, N, K = (integer(value, name, minimum=1, maximum=MAX_SIZE,
                           why=" (the CUDA twin takes int sizes)", error=ProblemSizeError,
                           type_error=ProblemSizeError)
                   for name, value in (("M", M), ("N", N), ("K", K)))
        if self.splits > tile_count(K, self.block_k):
            raise ProblemSizeError(
                f"{kernel}: splits={self.splits} exceeds K's {tile_count(K, self.block_k)} K "
                f"tiles (K={K}, block_k={self.block_k}): every split takes at least one K tile")
        if tile_count(M, self.block_m) % self.cluster_m:
            raise ProblemSizeError(
                f"{kernel}: M={M} gives {tile_count(M, self.block_m)} tiles along M "
                f"(block_m={self.block_m}), not a multiple of cluster_m={self.cluster_m}: a "
                f"cluster's {self.cluster_m} blocks compute {self.cluster_m} tiles of one "
                "block column together (use cluster_m=1, or another M or block_m)")
        if self.ragged:
            # A is M x K and B, C, D are . x N, row-major: TMA needs each row's pitch in whole
            # 16-byte units (cuTensorMapEncodeTiled); M is free.
            unit = TMA_ROW_ELEMENTS
            if self.fp8:  # B is N rows of K: K in 16-byte rows of 1-byte elements
                units = (("K", K, 16), ("N", N, unit))
                bad = [f"{name}={v} is not a multiple of {u}" for name, v, u in units if v % u]
                if bad:
                    raise ProblemSizeError(
                        f"{kernel}: {'; '.join(bad)}: TMA copies rows of A and B (K fp8 "
                        f"elements, B being N rows of K) whose pitch must be a multiple of 16 "
                        f"bytes, so K must be a multiple of 16 (wgmma's k32 steps read TMA's "
                        f"zeros past it) and N of {unit}; M may be any size")
                return M, N, K
            bad = [f"{name}={v} is not a multiple of {unit}" for name, v in (("K", K), ("N", N))
                   if v % unit]
            if bad:
                raise ProblemSizeError(
                    f"{kernel}: {'; '.join(bad)}: TMA copies rows of A (K elements) and of B, "
                    f"C and D (N elements) whose pitch must be a multiple of 16 bytes, so K "
                    f"and N must be multiples of {unit} ({self.inputs}); M may be any size")
            return M, N, K
        bad = [f"{name}={v} is not a multiple of {tile}={t}"
               for name, v, tile, t in (("M", M, "block_m", self.block_m),
                                        ("N", N, "block_n", self.block_n),
                                        ("K", K, "block_k", self.block_k)) if v % t]
        if bad:
            raise ProblemSizeError(
                f"{kernel}: {'; '.join(bad)} (it needs M % {self.block_m} == 0, "
                f"N % {self.block_n} == 0, K % {self.block_k} == 0)")
        if M // self.block_m > MAX_GRID_Y:
            raise ProblemSizeError(
                f"{kernel}: M={M} needs {M // self.block_m} blocks along M; CUDA launches at "
                f"most {MAX_GRID_Y} (gridDim.y): use a larger block_m or a smaller M")
        if K // self.block_k < self.stages - 1 and not self.producers:  # cp.async prologue
            raise ProblemSizeError(
                f"{kernel}: K={K} gives {K // self.block_k} K tiles; a {self.stages}-stage "
                f"pipeline needs K >= {(self.stages - 1) * self.block_k}")
        return M, N, K

    def with_overrides(self, **overrides) -> GemmParams:
        unknown = set(overrides) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"unknown kernel parameter(s) {sorted(unknown)}; "
                            f"known: {[f.name for f in fields(self)]}")
        return replace(self, **overrides)

    def as_dict(self) -> dict:
        return asdict(self)
