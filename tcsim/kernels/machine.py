"""The instructions a kernel schedule issues, and what both engines share.

A schedule (kernel1 .. kernel6) is a Python function ``program(m, params, A_smem, B_smem)``
that issues warp-wide instructions on a `Machine` ``m``. Two engines implement it: the executor
(`tcsim.run`) moves real bits through simulated global memory, shared memory and registers; the
tracer (`tcsim.trace`) moves only addresses and counts what each instruction site costs.

Conventions a schedule follows:

- Per-lane values (addresses, coordinates) are numpy arrays whose last axis is the 32 lanes and
  whose first axis is the block's warps: shape ``(warps, ..., 32)``. Axes in between are tile
  indices, so one call issues one instruction per (warp, tile), all at once.
- Registers are uint32 arrays ``(blocks, warps, ..., 32, registers)``; the leading blocks axis
  is the engine's business (the executor runs many blocks together, the tracer one), so a
  schedule only ever indexes registers from the right.
- Global coordinates are relative to the block's tile of the operand; the machine adds the
  block's origin (and, for A and B, the K tile's), as ``A + block_m * BM * K + k * BK`` does in
  the CUDA twin.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..isa.fragments import mma_fragment
from ..isa.validate import INT64_LIMIT, broadcasts_to, integer_array
from ..isa.wmma import parse_wmma
from ..isa.wmma.lowering import element_offsets, lower, memory_coords
from ..memory.access import parse_instruction
from . import split_k
from .checks import (
    DivergentWarpError,
    GlobalMemoryError,
    Report,
    SharedAddressError,
    SharedChecker,
    first_index,
)
from .hopper import HopperInstructions
from .params import ELEMENT_BYTES, GemmParams, tile_count
from .roles import DeadlockError

WARP = 32

# The PTX spellings of the instructions a schedule issues (the CUDA twins use these).
# Tile loads bypass L1 (.cg): L1-cached loads fill L1's data banks, which shared memory shares,
# and Nsight Compute then counts extra shared-store conflicts that depend on timing
# (docs/kernels.md). C is read once, after every shared access, through L1.
LD_GLOBAL = {16: "ld.global.cg.v4.u32", 8: "ld.global.v2.f32", 4: "ld.global.b32"}  # by bytes
ST_GLOBAL = {4: "st.global.b32", 8: "st.global.v2.f32", 16: "st.global.v4.b32"}
ST_SHARED = "st.shared.v4.b32"
LD_SHARED = "ld.shared.b32"
LD_SHARED_V4 = "ld.shared.v4.b32"
LD_SHARED_BY_WIDTH = {4: LD_SHARED, 16: LD_SHARED_V4}
LD_LOCAL = {8: "ld.local.v2.f32"}  # by bytes per lane
ST_LOCAL = {8: "st.local.v2.f32", 16: "st.local.v4.f32"}
CP_ASYNC = "cp.async.cg.shared.global.16"  # L2 -> shared, 16 bytes a lane, no registers
LDMATRIX = "ldmatrix.sync.aligned.m8n8.{}.shared.b16"
STMATRIX = "stmatrix.sync.aligned.m8n8.{}.shared.b16"
OFF = -1  # the element offset of a lane predicated off (`Machine.global_elements`)


class Machine(HopperInstructions, ABC):
    """What a schedule may do; see the module docstring for the array conventions.

    The public instructions check (addresses, warp-wide use, races and initialization through
    `SharedChecker`) and then call the engine's ``_``-prefixed method that moves bits or
    counts. ``checks`` is "raise", "warn", "collect" or "off" (race and initialization checks;
    a bad address always raises, as it faults on the GPU).
    """

    takes_c = True  # False: the kernel reads no C (`Kernel.takes_c`, set by `Kernel.issue`)

    def __init__(self, kernel: str, params: GemmParams, M: int, N: int, K: int,
                 checks: str = "raise", shared_bytes: int | None = None) -> None:
        self.M, self.N, self.K = M, N, K = params.check_problem(M, N, K, kernel)
        self.kernel = kernel
        self.params = params
        # the block's shared memory (`Kernel.shared_bytes`: from the tiles); GemmParams' count
        # when not given
        self.shared_bytes = params.shared_bytes if shared_bytes is None else shared_bytes
        self.lane = np.arange(WARP)
        warp = np.arange(params.warps)[:, None]  # (warps, 1): broadcasts against lanes
        self.warp = warp
        self.warp_row = warp // params.warps_n  # the warp's tile along M
        self.warp_col = warp % params.warps_n  # along N
        # operand -> (rows, cols) of the whole matrix in global memory (row-major; B K-major
        # for fp8: N rows of K)
        self.shapes = {"A": (M, K), "B": (N, K) if params.b_k_major else (K, N),
                       "C": (M, N), "D": (M, N), "SA": (M, 1), "SB": (1, N)}
        if params.splits > 1:  # split-K's f32 partials (`tcsim.kernels.split_k`)
            self.shapes["W"] = split_k.workspace_shape(params, M, N)
        self.arrivals: dict[int, int] = {}  # split-K: each tile's count of written partials
        self.alpha, self.beta = np.float32(1), np.float32(0)  # the epilogue's scalars
        self.report = Report(kernel, checks)
        self.active = np.ones(WARP, bool)  # lanes that execute (see `lanes`)
        self.local_bytes = 0  # each thread's local memory (`allocate_local`)
        self.checker: SharedChecker | None = None
        self.begin_blocks(np.zeros(1, np.int64), np.zeros(1, np.int64))

    @property
    def reads_c(self) -> bool:
        """BLAS: with beta 0, of either sign, C takes no part in D (kernel10 does not even
        load it; the other kernels load it and leave it out)."""
        return self.beta != 0

    @property
    def k_tile_count(self) -> int:
        """The K tiles the blocks in flight multiply: all of K's, or their split's range."""
        return self.k_stop - self.k_first

    def begin_blocks(self, rows: np.ndarray, cols: np.ndarray, split: int = 0) -> None:
        """The blocks in flight from now on: tile indices along M and N, (blocks,), or
        (blocks, tiles) for blocks that compute several tiles in turn (`tiles`); fresh shared
        state. With split-K, all of them compute split ``split`` of their tiles: K tile k of
        the schedule is K tile ``k_first + k`` of the matrices."""
        self.split = split
        self.k_first, self.k_stop = split_k.k_range(
            tile_count(self.K, self.params.block_k), self.params.splits, split)
        self.tile_rows, self.tile_cols = (np.asarray(x).reshape(np.shape(x)[0], -1)
                                          for x in (rows, cols))
        self.block_rows, self.block_cols = self.tile_rows[:, 0], self.tile_cols[:, 0]
        self.in_tile = False
        self.checker = None if self.report.mode == "off" else SharedChecker(
            self.report, self.block_rows.size, self.params.warps, self.shared_bytes,
            self.describe)

    def end_blocks(self) -> None:
        """The blocks finished: the last barrier interval is checked too."""
        if self.checker is not None:
            self.checker.barrier()

    @property
    def cluster_rank(self) -> int:
        """The blocks in flight's rank in their cluster (``%cluster_ctarank``; 0 without
        clusters): a block's tiles lie in rows rank, rank + c, ... (`tcsim.kernels.scheduler`),
        and the engines run the blocks of one rank together."""
        ranks = np.unique(self.tile_rows % self.params.cluster_m)
        if ranks.size != 1:
            raise ValueError(f"{self.kernel}: blocks of cluster ranks {ranks.tolist()} in flight "
                             "together; an engine runs one rank's blocks at a time")
        return int(ranks[0])

    def tiles(self) -> range:
        """The tiles each block in flight computes, in turn (one, unless the kernel's blocks
        are persistent: `tcsim.kernels.scheduler`)."""
        return range(self.tile_rows.shape[1])

    @contextmanager
    def tile(self, t: int) -> Iterator[None]:
        """Global coordinates inside are relative to the blocks' tile ``t``. A role must not
        wait inside (another role may be on another tile meanwhile)."""
        saved = self.block_rows, self.block_cols, self.in_tile
        self.block_rows, self.block_cols = self.tile_rows[:, t], self.tile_cols[:, t]
        self.in_tile = True
        try:
            yield
        finally:
            self.block_rows, self.block_cols, self.in_tile = saved

    @contextmanager
    def lanes(self, mask) -> Iterator[None]:
        """Issue the enclosed instructions from the lanes where ``mask`` (32 bools) is true,
        as in ``if (lane < 16) { ... }`` in CUDA."""
        saved, self.active = self.active, np.asarray(mask, bool).reshape(WARP)
        try:
            yield
        finally:
            self.active = saved

    # ---- instructions ------------------------------------------------------------------------

    @abstractmethod
    def k_tiles(self, start: int = 0, stop: int | None = None) -> Iterator[int]:
        """The block-level K loop: K tile indices start .. stop - 1 (default: every K tile).
        An engine may assume the iterations of one loop issue the same instructions."""

    def load_global(self, site: str, operand: str, rows, cols, k_tile: int = 0,
                    vector: int = 8, clip: bool = False) -> np.ndarray:
        """Each lane loads ``vector`` elements from ``operand[row, col:col+vector]``. With
        ``clip``, a lane whose vector lies past the matrix's last row or column loads nothing
        and gets zeros (``if (row < M && col < N)`` in the twin)."""
        self._check_lanes(site, f"{operand} rows and columns",
                          np.broadcast_shapes(np.shape(rows), np.shape(cols)))
        offsets = self.global_elements(site, operand, rows, cols, k_tile, vector, clip)
        spelling = LD_GLOBAL[vector * self.params.element_bytes(operand)]
        return self._load_global(site, spelling, operand, offsets, vector)

    def store_global(self, site: str, operand: str, rows, cols, registers,
                     clip: bool = False) -> None:
        """Each lane stores its registers to ``operand[row, col:col+vector]`` (f16 pairs, or
        f32 values, one per register); with ``clip``, not past the matrix's edge (as
        `load_global`)."""
        self._check_operand(site, operand, store=True)
        lanes = np.broadcast_shapes(np.shape(rows), np.shape(cols))
        self._check_lanes(site, f"{operand} rows and columns", lanes)
        registers = self._check_registers(site, "st.global", "the stored", registers,
                                          sorted(n // 4 for n in ST_GLOBAL), lanes)
        size = 4 * registers.shape[-1]
        vector = size // self.params.element_bytes(operand)
        offsets = self.global_elements(site, operand, rows, cols, 0, vector, clip)
        self._store_global(site, ST_GLOBAL[size], operand, offsets, registers)

    def load_shared(self, site: str, addresses, width: int = 4, active=None) -> np.ndarray:
        """``ld.shared.b32`` (``width`` 4) or ``ld.shared.v4.b32`` (16): each lane reads
        ``width`` bytes; registers (..., 32, width / 4). ``active`` (bools, (blocks, ...,
        32)): only those lanes read (``if (inside) ld.shared`` in the
        twin); the others get zeros, and a warp with none reads nothing."""
        if width not in LD_SHARED_BY_WIDTH:
            raise ValueError(f"{self.kernel} site {site!r}: ld.shared reads 4 or 16 bytes a "
                             f"lane, not {width!r}")
        spelling = LD_SHARED_BY_WIDTH[width]
        addresses = self._per_lane(site, "shared addresses", addresses)
        self.check_shared(site, spelling, addresses, width)
        if self.checker is not None:
            self.checker.read(site, spelling, addresses)
        if active is not None:
            active = np.asarray(active, bool)
            addresses = np.broadcast_to(addresses, active.shape[1:])
        return self._load_shared(site, spelling, addresses, width, active)

    def allocate_local(self, size: int) -> None:
        """Give every thread ``size`` bytes of local memory (a per-thread array that the
        compiler cannot keep in registers), zero until written."""
        self.local_bytes = size

    def load_local(self, site: str, offsets, width: int) -> np.ndarray:
        """``ld.local``: each lane reads ``width`` bytes at byte ``offset`` of its own local
        memory; registers (..., 32, width / 4)."""
        offsets = self.check_local(site, offsets, width)
        return self._load_local(site, LD_LOCAL[width], offsets, width)

    def store_local(self, site: str, offsets, registers) -> None:
        """``st.local``: each lane writes its registers at byte ``offset`` of its local memory."""
        offsets = self.integers(site, "local offsets", offsets)
        registers = self._check_registers(site, "st.local", "the stored", registers,
                                          sorted(n // 4 for n in ST_LOCAL), offsets.shape)
        width = 4 * registers.shape[-1]
        offsets = self.check_local(site, offsets, width)
        self._store_local(site, ST_LOCAL[width], offsets, registers)

    def wmma_load_global(self, site: str, qualifier: str, operand: str, layout: str,
                         matrix: str, rows, cols, k_tile: int = 0) -> np.ndarray:
        """``wmma.load.<operand>.sync.aligned.<layout>.<shape>.global.<type>`` of fragments
        whose element (0, 0) is ``matrix[rows, cols]`` (one per warp and tile: no lane axis),
        with the matrix's row length as the stride, as seed 003 passes it. In the col layout,
        fragment element (r, c) is read from ``matrix[row + c, col + r]``. Registers
        (blocks, ..., 32, registers) in the H100's fragment map."""
        spec, spelling = self._wmma(qualifier, operand, layout, "global")
        self.require_full_warp(site, spelling)
        offsets = self._fragment_elements(site, spec, operand, layout, matrix, rows, cols, k_tile)
        return self._wmma_load(site, spec, operand, layout, "global", self.shapes[matrix][1],
                               matrix, offsets)

    def wmma_load_shared(self, site: str, qualifier: str, operand: str, layout: str,
                         addresses, stride: int) -> np.ndarray:
        """``wmma.load`` from shared memory: each fragment's element (0, 0) at byte address
        ``addresses`` (one per warp and tile), rows (or columns, for col) ``stride`` elements
        apart."""
        spec, offsets = self._shared_fragment(site, qualifier, operand, layout, addresses,
                                              stride, self.checker and self.checker.read)
        return self._wmma_load(site, spec, operand, layout, "shared", stride, None, offsets)

    def wmma_store_global(self, site: str, qualifier: str, layout: str, matrix: str, rows,
                          cols, registers) -> None:
        """``wmma.store.d.sync.aligned.<layout>.<shape>.global.<type>``: the inverse of
        `wmma_load_global`."""
        spec, spelling = self._wmma(qualifier, "d", layout, "global")
        self._check_operand(site, matrix, store=True)
        self.require_full_warp(site, spelling)
        registers = self._check_registers(site, spelling, "the stored", registers,
                                          [spec.registers("d")])
        offsets = self._fragment_elements(site, spec, "d", layout, matrix, rows, cols, 0)
        self._wmma_store(site, spec, layout, "global", self.shapes[matrix][1], matrix, offsets,
                         registers)

    def wmma_store_shared(self, site: str, qualifier: str, layout: str, addresses, stride: int,
                          registers) -> None:
        """``wmma.store.d`` to shared memory: the inverse of `wmma_load_shared`."""
        spec = parse_wmma(qualifier)
        registers = self._check_registers(site, spec.ptx, "the stored", registers,
                                          [spec.registers("d")])
        spec, offsets = self._shared_fragment(site, qualifier, "d", layout, addresses, stride,
                                              self.checker and self.checker.write)
        self._wmma_store(site, spec, layout, "shared", stride, None, offsets, registers)

    def _shared_fragment(self, site, qualifier, operand, layout, addresses, stride, record):
        """(spec, byte addresses (blocks?, ..., 32, elements)) of shared-memory fragments whose
        element (0, 0) is at ``addresses``, checked; ``record`` (the checker's read or write)
        sees each instruction the access becomes."""
        spec, spelling = self._wmma(qualifier, operand, layout, "shared")
        self.require_full_warp(site, spelling)
        size = spec.element_bytes(operand)
        origin = self.integers(site, "shared addresses", addresses)[..., None]
        offsets = origin[..., None] + element_offsets(spec, operand, layout, stride) * size
        self.check_shared(site, spelling, offsets, size)
        if record:
            for access in lower(spec, operand, layout, "shared", stride):
                record(site, access.spelling, origin + access.offsets * size)
        return spec, offsets

    def wmma_mma(self, site: str, qualifier: str, a, b, c) -> np.ndarray:
        """``wmma.mma.sync.aligned`` of ``qualifier`` on every (warp, tile) at once."""
        spec = parse_wmma(qualifier)
        self.require_full_warp(site, spec.ptx)
        a, b, c = (self._check_registers(site, spec.ptx, op.upper(), x, [spec.registers(op)])
                   for op, x in zip("abc", (a, b, c)))
        self._check_batch(site, spec.ptx, a, b, c)
        return self._wmma_mma(site, spec, a, b, c)

    def _fragment_elements(self, site, spec, operand, layout, matrix, rows, cols,
                           k_tile) -> np.ndarray:
        """Element offsets (blocks, ..., 32, elements) into global ``matrix`` of the fragments
        whose origin is ``matrix[rows, cols]`` (one per warp and tile), checked."""
        coords = memory_coords(spec, operand, layout)
        rows = self.integers(site, f"{matrix} rows", rows)[..., None, None] + coords[..., 0]
        cols = self.integers(site, f"{matrix} columns", cols)[..., None, None] + coords[..., 1]
        return self.global_elements(site, matrix, rows, cols, k_tile, 1)

    @staticmethod
    def _wmma(qualifier: str, operand: str, layout: str, space: str):
        spec = parse_wmma(qualifier)
        return spec, spec.load_ptx(operand, layout, space)

    def store_shared(self, site: str, addresses, registers) -> None:
        """``st.shared.v4.b32``: each lane writes its 4 registers at its byte address."""
        addresses = self._per_lane(site, "shared addresses", addresses)
        registers = self._check_registers(site, ST_SHARED, "the stored", registers, [4],
                                          addresses.shape)
        self.check_shared(site, ST_SHARED, addresses, 16)
        if self.checker is not None:
            self.checker.write(site, ST_SHARED, addresses)
        self._store_shared(site, addresses, registers)

    def copy_async(self, site: str, operand: str, rows, cols, k_tile: int, addresses) -> None:
        """``cp.async.cg.shared.global`` of 16 bytes: ``operand[row, col:col+vector]`` ->
        shared (8 f16 or 4 f32 elements)."""
        addresses = self._per_lane(site, "shared addresses", addresses)
        offsets = self.global_elements(site, operand, rows, cols, k_tile, self.params.vector)
        self.check_shared(site, CP_ASYNC, addresses, 16)
        if self.checker is not None:
            self.checker.write(site, CP_ASYNC, addresses, asynchronous=True)
        self._copy_async(site, operand, offsets, addresses)

    def commit_group(self) -> None:
        """``cp.async.commit_group``: the copies issued since the last commit form a group."""
        if self.checker is not None:
            self.checker.commit_group()

    def wait_group(self, pending: int) -> None:
        """``cp.async.wait_group pending``: wait until at most ``pending`` groups are in flight.
        The executor moves each copy's bytes when it is issued, which gives the same bits for
        a kernel that waits before it reads; the checker reports one that does not."""
        if self.checker is not None:
            self.checker.wait_group(pending)

    def ldmatrix(self, site: str, shape: str, addresses) -> np.ndarray:
        """``ldmatrix.sync.aligned.m8n8.<shape>.shared.b16`` (shape "x1", "x4.trans", ...)."""
        spelling = LDMATRIX.format(shape)
        self.require_full_warp(site, spelling)
        addresses = self._per_lane(site, "shared addresses", addresses)
        rows = addresses[..., : 8 * parse_instruction(spelling).matrices]
        self.check_shared(site, spelling, rows, 16)
        if self.checker is not None:
            self.checker.read(site, spelling, rows)
        return self._ldmatrix(site, spelling, addresses, rows)

    def stmatrix(self, site: str, shape: str, addresses, registers) -> None:
        """``stmatrix.sync.aligned.m8n8.<shape>.shared.b16``: ldmatrix's maps the other way
        (register i of every lane into matrix i, whose rows lanes 8i .. 8i + 7 address)."""
        spelling = STMATRIX.format(shape)
        self.require_full_warp(site, spelling)
        addresses = self._per_lane(site, "shared addresses", addresses)
        matrices = parse_instruction(spelling).matrices
        registers = self._check_registers(site, spelling, "the stored", registers, [matrices],
                                          addresses.shape)
        rows = addresses[..., : 8 * matrices]
        self.check_shared(site, spelling, rows, 16)
        if self.checker is not None:
            self.checker.write(site, spelling, rows)
        self._stmatrix(site, spelling, addresses, rows, registers)

    def mma(self, site: str, a, b, c) -> np.ndarray:
        """``mma.sync`` of the kernel's qualifier on every (warp, tile) at once."""
        p = self.params
        spelling = "mma.sync.aligned." + p.qualifier
        self.require_full_warp(site, spelling)
        counts = {op: mma_fragment(p.qualifier, op).registers for op in "abc"}
        # a schedule written for other parameters (mma_k, accumulate) shows here first
        hint = (f"; {p.qualifier} (mma_k={p.mma_k}, accumulate={p.accumulate!r}) takes "
                f"{counts['a']}, {counts['b']} and {counts['c']} registers a lane for A, B "
                f"and C: if {self.kernel} was written for other parameters, let its Kernel's "
                f"requires= refuse these")
        a, b, c = (self._check_registers(site, spelling, op.upper(), x, [counts[op]],
                                         hint=hint) for op, x in zip("abc", (a, b, c)))
        self._check_batch(site, spelling, a, b, c)
        return self._mma(site, a, b, c)

    def _check_batch(self, site: str, spelling: str, a, b, c) -> None:
        """A ValueError naming the site unless the operands' batch shapes broadcast."""
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2], c.shape[:-2])
        except ValueError:
            raise ValueError(f"{self.kernel} site {site!r} ({spelling}): the batch shapes of A "
                             f"{a.shape[:-2]}, B {b.shape[:-2]} and C {c.shape[:-2]} (the axes "
                             f"left of the lanes) do not broadcast") from None

    def split_written(self, site: str, last: bool) -> None:
        """Split-K's counter of each block's tile (inside ``m.tile``), by one thread: a block
        that is not the tile's last adds one once its partial is written (``red.global.add``);
        the last (split ``splits - 1``) waits until the others' ``splits - 1`` have, and resets
        it for the next launch, as the twin does. The engines run the splits in order, so the
        last finds them all written; `DeadlockError` if not (on the GPU it would wait
        forever)."""
        tiles_n = tile_count(self.N, self.params.block_n)
        keys = (self.block_rows * tiles_n + self.block_cols).tolist()
        if not last:
            for k in keys:
                self.arrivals[k] = self.arrivals.get(k, 0) + 1
            return
        missing = [k for k in keys if self.arrivals.get(k, 0) != self.params.splits - 1]
        if missing:
            raise DeadlockError(f"{self.kernel} site {site!r}: the last split of tile "
                                f"{divmod(missing[0], tiles_n)} waits for "
                                f"{self.params.splits - 1} partials written and finds "
                                f"{self.arrivals.get(missing[0], 0)}: it would wait forever",
                                site=site)
        for k in keys:
            self.arrivals[k] = 0

    def fragments_ahead(self) -> None:
        """The schedule loads the next warp_k step's fragments before this step's mma (register
        double buffering). Nothing to execute; the tracer records it for the speed model."""

    def sync(self) -> None:
        """``__syncthreads()`` (bar.sync 0): ends a barrier interval. bar.sync is
        ``barrier.sync.aligned``: every lane of a warp executes it, so it is refused under
        `lanes` with idle lanes (`DivergentWarpError`)."""
        self.require_full_warp("sync", "bar.sync 0 (__syncthreads)")
        if self.checker is not None:
            self.checker.barrier()

    def epilogue_words(self, acc: np.ndarray, c: np.ndarray) -> np.ndarray:
        """D's f16 pairs ``f16(alpha * acc + beta * C)``, element by element, each step an f32
        operation rounded to nearest (mul.rn, mul.rn, add.rn, then cvt.rn.f16.f32; NaN comes
        out as 0x7fff; with ``output="bf16"`` C and D are bf16 pairs, cvt.rn.bf16.f32, NaN
        0x7fff); with beta 0 (either sign) ``f16(alpha * acc)``, whatever C holds.
        ``acc``: (..., 32, registers), m16n8 accumulators; ``c``: C's words (f16 pairs) at the
        same places, (..., pairs, 32), pair 0 the accumulator's elements 0 and 1. Returns D's
        words like ``c``. The only arithmetic on registers a schedule does outside the tensor
        cores, so it is the machine's (the CUDA twins' ``epilogue_pair``)."""
        out = self.params.output_dtype  # f16, or bf16 on the Hopper rungs
        c = np.ascontiguousarray(c, np.uint32)[..., None].view(out).astype(np.float32)
        acc = accumulator_pairs(acc, self.params.accumulate)
        with np.errstate(over="ignore", invalid="ignore"):
            # BLAS: with beta 0, C is not read: its NaN, infinities and zero signs never reach D
            d = self.alpha * acc + self.beta * c if self.reads_c else self.alpha * acc
        return pack_pairs(d, out)[..., 0]

    def zeros(self, *shape: int) -> np.ndarray:
        """Registers of every block in flight, set to zero: (blocks, *shape) uint32."""
        return np.zeros((self.block_rows.size,) + shape, np.uint32)

    # ---- what the engines implement ------------------------------------------------------------

    @abstractmethod
    def _load_global(self, site, spelling, operand, offsets, vector) -> np.ndarray: ...

    @abstractmethod
    def _store_global(self, site, spelling, operand, offsets, registers) -> None: ...

    @abstractmethod
    def _store_shared(self, site, addresses, registers) -> None: ...

    @abstractmethod
    def _copy_async(self, site, operand, offsets, addresses) -> None: ...

    @abstractmethod
    def _ldmatrix(self, site, spelling, addresses, rows) -> np.ndarray: ...

    @abstractmethod
    def _mma(self, site, a, b, c) -> np.ndarray: ...

    @abstractmethod
    def _load_shared(self, site, spelling, addresses, width, active=None) -> np.ndarray: ...

    @abstractmethod
    def _stmatrix(self, site, spelling, addresses, rows, registers) -> None: ...

    @abstractmethod
    def _load_local(self, site, spelling, offsets, width) -> np.ndarray: ...

    @abstractmethod
    def _store_local(self, site, spelling, offsets, registers) -> None: ...

    @abstractmethod
    def _wmma_load(self, site, spec, operand, layout, space, stride, matrix,
                   offsets) -> np.ndarray:
        """``offsets``: (blocks, ..., 32, elements) element offsets into ``matrix`` (global)
        or byte addresses (shared) of each lane's fragment elements."""

    @abstractmethod
    def _wmma_store(self, site, spec, layout, space, stride, matrix, offsets,
                    registers) -> None: ...

    @abstractmethod
    def _wmma_mma(self, site, spec, a, b, c) -> np.ndarray: ...

    # ---- checks --------------------------------------------------------------------------------

    def integers(self, site: str, what: str, values) -> np.ndarray:
        """Per-lane addresses or coordinates as int64, refusing floats, bools and strings (a
        TypeError naming the site: an address computed with ``/`` is a schedule's bug); the
        range checks that follow name block, warp and lane."""
        return integer_array(values, f"{self.kernel} site {site!r} {what}",
                             minimum=-INT64_LIMIT)[0]

    def _per_lane(self, site: str, what: str, values) -> np.ndarray:
        """`integers` for one value a lane, shaped (warps, ..., 32) with the issuing warps
        first (the block's, or a role's; `_check_lanes`)."""
        values = self.integers(site, what, values)
        self._check_lanes(site, what, values.shape)
        return values

    def _check_lanes(self, site: str, what: str, shape: tuple) -> None:
        """A ValueError naming the site unless ``shape`` is (warps, ..., 32) with at most the
        block's warps first: otherwise the trace would count the other axes as instructions."""
        warps = self.params.warps
        if len(shape) < 2 or shape[-1] != WARP or not 1 <= shape[0] <= warps:
            raise ValueError(
                f"{self.kernel} site {site!r}: {what} of shape {shape}: give one value a lane, "
                f"shaped (warps, ..., 32) with the issuing warps first (at most the block's "
                f"{warps}): build them from m.warp, m.warp_row or m.warp_col and m.lane")

    def _check_operand(self, site: str, operand: str, store: bool = False) -> None:
        """A ValueError naming the site unless the schedule may access ``operand`` in global
        memory: A, B, C (not in a kernel that reads no C), D, the row-wise scales SA and SB of
        a kernel that has them and split-K's workspace W; a store goes to D or W only (the
        inputs are the caller's)."""
        names = ["A", "B", *(["C"] if self.takes_c else []), "D",
                 *(("SA", "SB") if self.params.row_scales else ()),
                 *(["W"] if "W" in self.shapes else [])]
        where = f"{self.kernel} site {site!r}"
        if not isinstance(operand, str) or operand not in names:
            why = (f": {self.kernel} reads no C (its Kernel has takes_c=False)"
                   if operand == "C" else "")
            raise ValueError(f"{where}: no operand {operand!r} to access{why}; the operands "
                             f"are {', '.join(names)} (capitals)")
        if store and operand not in ("D", "W"):
            raise ValueError(f"{where}: a store goes to D (or split-K's workspace W), not "
                             f"{operand} (A, B and C are the caller's inputs)")

    def _check_registers(self, site: str, spelling: str, what: str, registers,
                         counts: list[int], lanes: tuple | None = None,
                         hint: str = "", threads: int = WARP) -> np.ndarray:
        """``registers`` as an array, after checking what the executor's arithmetic needs:
        uint32 of shape (..., 32, n) (``threads`` 128 for a warpgroup's) with n in ``counts``
        and, given the per-lane shape ``lanes`` of the instruction's addresses, broadcasting
        to (blocks, *lanes). A TypeError or ValueError names the kernel, the site and the
        instruction. Both engines check here, so the tracer refuses what `tcsim.run` does."""
        r = np.asarray(registers)
        where = f"{self.kernel} site {site!r} ({spelling}): {what} registers"
        if r.dtype != np.uint32:
            raise TypeError(f"{where} must be uint32, got {r.dtype}{hint}")
        wanted = " or ".join(str(n) for n in counts)
        if r.ndim < 2 or r.shape[-2] != threads or r.shape[-1] not in counts:
            raise ValueError(f"{where} must have shape (..., {threads}, {wanted}), lanes then "
                             f"registers, got {r.shape}{hint}")
        if lanes is not None:
            full = (self.block_rows.size, *lanes, r.shape[-1])
            if not broadcasts_to(r.shape, full):
                raise ValueError(f"{where} of shape {r.shape} do not match the lanes' "
                                 f"addresses {tuple(lanes)}: give (blocks, *{tuple(lanes)}, "
                                 f"{r.shape[-1]}), as m.zeros and the loads make them")
        return r

    def require_full_warp(self, site: str, spelling: str) -> None:
        """A ``.sync.aligned`` instruction needs all 32 lanes (`DivergentWarpError`)."""
        if not self.active.all():
            idle = np.flatnonzero(~self.active)
            self.report(DivergentWarpError(
                f"{self.kernel} site {site!r}: {spelling} issued with "
                f"{int(self.active.sum())} active lanes (lane {int(idle[0])} is not); every "
                f"lane of the warp must execute a .sync.aligned instruction",
                site=site, lane=int(idle[0])))

    def global_elements(self, site: str, operand: str, rows, cols, k_tile: int,
                        vector: int, clip: bool = False) -> np.ndarray:
        """Element offsets (blocks, *lanes shape) into ``operand``, checked. With ``clip``, a
        lane whose vector starts past the last row or column is predicated off: its offset is
        `OFF` (engines move nothing for it); a vector that straddles the edge is still an
        error."""
        self._check_operand(site, operand)
        p = self.params
        rows, cols = np.broadcast_arrays(self.integers(site, f"{operand} rows", rows),
                                         self.integers(site, f"{operand} columns", cols))
        expand = (-1,) + (1,) * rows.ndim
        bm = self.block_rows.reshape(expand) * p.block_m
        bn = self.block_cols.reshape(expand) * p.block_n
        bk = (self.k_first + k_tile) * p.block_k
        if operand == "A":
            r, c = bm + rows, bk + cols
        elif operand == "B":
            r, c = bk + rows, bn + cols
        elif operand == "SA":  # fp8's row-wise scales: one per row of A, one per column of B
            r, c = bm + rows, cols
        elif operand == "SB":
            r, c = rows, bn + cols
        elif operand == "W":  # split-K's workspace: the tile's rows (`split_k.workspace_shape`)
            tiles_n = tile_count(self.N, p.block_n)
            tile = self.block_rows.reshape(expand) * tiles_n + self.block_cols.reshape(expand)
            r, c = tile * split_k.rows_per_tile(p) + rows, cols + 0 * bn
        else:
            r, c = bm + rows, bn + cols
        nrows, ncols = self.shapes[operand]
        offset = r * ncols + c
        r, c = np.broadcast_to(r, offset.shape), np.broadcast_to(c, offset.shape)
        off = ((r >= nrows) | (c >= ncols)) if clip else np.zeros(offset.shape, bool)
        bad = ((r < 0) | (r >= nrows) | (c < 0) | (c + vector > ncols)) & ~off
        misaligned = offset % vector != 0
        if bad.any() or misaligned.any():
            where = first_index(bad if bad.any() else misaligned)
            what = (f"elements [{int(r[where])}, {int(c[where])}:{int(c[where]) + vector}] are "
                    f"outside the {nrows}x{ncols} matrix" if bad.any() else
                    f"element offset {int(offset[where])} is not aligned to {vector} elements")
            raise GlobalMemoryError(
                f"{self.kernel} site {site!r}: {self.describe(where[0], where[1], where[-1])}: "
                f"{operand} {what}", site=site, block=where[0], warp=where[1], lane=where[-1],
                address=int(offset[where]) * ELEMENT_BYTES)
        return np.where(off, OFF, offset) if clip else offset

    def check_shared(self, site: str, spelling: str, addresses: np.ndarray,
                     width: int) -> None:
        """Raise `SharedAddressError` for a misaligned or out-of-range shared address."""
        size = self.shared_bytes
        bad = (addresses < 0) | (addresses + width > size)
        misaligned = addresses % width != 0
        if bad.any() or misaligned.any():
            where = first_index(bad if bad.any() else misaligned)
            a = int(addresses[where])
            what = (f"address {a:#x} (+{width} bytes) is outside the block's {size} bytes"
                    if bad.any() else f"address {a:#x} is not aligned to {width} bytes")
            raise SharedAddressError(
                f"{self.kernel} site {site!r} ({spelling}): "
                f"{self.describe(0, where[0], where[-1])}: {what}",
                site=site, block=0, warp=where[0], lane=where[-1], address=a)

    def check_local(self, site: str, offsets, width: int) -> np.ndarray:
        """Byte offsets into each thread's local memory, in range and aligned to ``width``."""
        offsets = self.integers(site, "local offsets", offsets)
        bad = (offsets < 0) | (offsets + width > self.local_bytes) | (offsets % width != 0)
        if bad.any():
            where = first_index(bad)
            raise GlobalMemoryError(
                f"{self.kernel} site {site!r}: {self.describe(0, where[0], where[-1])}: local "
                f"offset {int(offsets[where])} (+{width} bytes) is misaligned or outside the "
                f"thread's {self.local_bytes} bytes", site=site, warp=where[0], lane=where[-1])
        return offsets

    def describe(self, block: int, warp: int, lane: int | None) -> str:
        """'block (m, n) warp w lane l' for block ``block`` of those in flight."""
        text = f"block ({int(self.block_rows[block])}, {int(self.block_cols[block])})"
        if warp is not None:
            text += f" warp {warp}"
        return text if lane is None else f"{text} lane {lane}"


def byte_addresses(offsets, element_bytes: int = ELEMENT_BYTES) -> np.ndarray:
    """Element offsets (f16 unless told) -> byte addresses."""
    return np.asarray(offsets, np.int64) * element_bytes


def accumulator_pairs(acc: np.ndarray, accumulate: str = "f32") -> np.ndarray:
    """m16n8 accumulators (..., 32, 4), f16 or f32 bits, as f32 values (..., pairs, 32, 2):
    a lane's elements 0..3 are the pairs (0, 1) and (2, 3), the pair axis before the lanes."""
    acc = acc.view(np.float16).astype(np.float32) if accumulate == "f16" else \
        acc.view(np.float32)
    return np.moveaxis(acc.reshape(acc.shape[:-1] + (2, 2)), -2, -3)


def pack_pairs(d: np.ndarray, out: np.dtype) -> np.ndarray:
    """f32 values (..., 2), element pairs, as the words a twin stores: ``out`` f16 or bf16,
    each pair one word (cvt.rn, NaN 0x7fff), (..., 1); f32 as they are, (..., 2)."""
    if out == np.float32:
        return np.ascontiguousarray(d, np.float32).view(np.uint32)
    with np.errstate(over="ignore", invalid="ignore"):
        d = d.astype(out)
    bits = d.view(np.uint16)
    bits[np.isnan(d)] = 0x7FFF
    return np.ascontiguousarray(bits).view(np.uint32)
