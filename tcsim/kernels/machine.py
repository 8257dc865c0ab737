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

from ..isa.validate import INT64_LIMIT, integer_array
from ..memory.access import parse_instruction
from .checks import (
    DivergentWarpError,
    GlobalMemoryError,
    Report,
    SharedAddressError,
    SharedChecker,
    first_index,
)
from .params import ELEMENT_BYTES, GemmParams

WARP = 32

# The PTX spellings of the instructions a schedule issues (the CUDA twins use these).
# Tile loads bypass L1 (.cg): L1-cached loads fill L1's data banks, which shared memory shares,
# and Nsight Compute then counts extra shared-store conflicts that depend on timing
# (docs/kernels.md). C is read once, after every shared access, through L1.
LD_GLOBAL = {8: "ld.global.cg.v4.u32", 2: "ld.global.b32"}  # by f16 elements per lane
ST_GLOBAL = {2: "st.global.b32"}
ST_SHARED = "st.shared.v4.b32"
CP_ASYNC = "cp.async.cg.shared.global.16"  # L2 -> shared, 16 bytes a lane, no registers
LDMATRIX = "ldmatrix.sync.aligned.m8n8.{}.shared.b16"


class Machine(ABC):
    """What a schedule may do; see the module docstring for the array conventions.

    The public instructions check (addresses, warp-wide use, races and initialization through
    `SharedChecker`) and then call the engine's ``_``-prefixed method that moves bits or
    counts. ``checks`` is "raise", "warn", "collect" or "off" (race and initialization checks;
    a bad address always raises, as it faults on the GPU).
    """

    def __init__(self, kernel: str, params: GemmParams, M: int, N: int, K: int,
                 checks: str = "raise") -> None:
        self.M, self.N, self.K = M, N, K = params.check_problem(M, N, K, kernel)
        self.kernel = kernel
        self.params = params
        self.lane = np.arange(WARP)
        warp = np.arange(params.warps)[:, None]  # (warps, 1): broadcasts against lanes
        self.warp = warp
        self.warp_row = warp // params.warps_n  # the warp's tile along M
        self.warp_col = warp % params.warps_n  # along N
        # operand -> (rows, cols) of the whole matrix in global memory (row-major)
        self.shapes = {"A": (M, K), "B": (K, N), "C": (M, N), "D": (M, N)}
        self.alpha, self.beta = np.float32(1), np.float32(0)  # the epilogue's scalars
        self.report = Report(kernel, checks)
        self.active = np.ones(WARP, bool)  # lanes that execute (see `lanes`)
        self.checker: SharedChecker | None = None
        self.begin_blocks(np.zeros(1, np.int64), np.zeros(1, np.int64))

    @property
    def k_tile_count(self) -> int:
        return self.K // self.params.block_k

    def begin_blocks(self, rows: np.ndarray, cols: np.ndarray) -> None:
        """The blocks in flight from now on: tile indices along M and N; fresh shared state."""
        self.block_rows, self.block_cols = rows, cols
        self.checker = None if self.report.mode == "off" else SharedChecker(
            self.report, rows.size, self.params.warps, self.params.shared_bytes, self.describe)

    def end_blocks(self) -> None:
        """The blocks finished: the last barrier interval is checked too."""
        if self.checker is not None:
            self.checker.barrier()

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
                    vector: int = 8) -> np.ndarray:
        """Each lane loads ``vector`` f16 elements from ``operand[row, col:col+vector]``."""
        offsets = self.global_elements(site, operand, rows, cols, k_tile, vector)
        return self._load_global(site, LD_GLOBAL[vector], operand, offsets, vector)

    def store_global(self, site: str, operand: str, rows, cols, registers) -> None:
        """Each lane stores its registers' f16 pairs to ``operand[row, col:col+2]``."""
        vector = 2 * np.shape(registers)[-1]
        offsets = self.global_elements(site, operand, rows, cols, 0, vector)
        self._store_global(site, ST_GLOBAL[vector], operand, offsets, registers)

    def store_shared(self, site: str, addresses, registers) -> None:
        """``st.shared.v4.b32``: each lane writes its 4 registers at its byte address."""
        addresses = self.integers(site, "shared addresses", addresses)
        self.check_shared(site, ST_SHARED, addresses, 16)
        if self.checker is not None:
            self.checker.write(site, ST_SHARED, addresses)
        self._store_shared(site, addresses, registers)

    def copy_async(self, site: str, operand: str, rows, cols, k_tile: int, addresses) -> None:
        """``cp.async.cg.shared.global`` of 16 bytes: ``operand[row, col:col+8]`` -> shared."""
        addresses = self.integers(site, "shared addresses", addresses)
        offsets = self.global_elements(site, operand, rows, cols, k_tile, 8)
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
        addresses = self.integers(site, "shared addresses", addresses)
        rows = addresses[..., : 8 * parse_instruction(spelling).matrices]
        self.check_shared(site, spelling, rows, 16)
        if self.checker is not None:
            self.checker.read(site, spelling, rows)
        return self._ldmatrix(site, spelling, addresses, rows)

    def mma(self, site: str, a, b, c) -> np.ndarray:
        """``mma.sync`` of the kernel's qualifier on every (warp, tile) at once."""
        self.require_full_warp(site, "mma.sync.aligned." + self.params.qualifier)
        return self._mma(site, a, b, c)

    def sync(self) -> None:
        """``__syncthreads()`` (bar.sync 0): ends a barrier interval."""
        if self.checker is not None:
            self.checker.barrier()

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

    # ---- checks --------------------------------------------------------------------------------

    def integers(self, site: str, what: str, values) -> np.ndarray:
        """Per-lane addresses or coordinates as int64, refusing floats, bools and strings (a
        TypeError naming the site: an address computed with ``/`` is a schedule's bug); the
        range checks that follow name block, warp and lane."""
        return integer_array(values, f"{self.kernel} site {site!r} {what}",
                             minimum=-INT64_LIMIT)[0]

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
                        vector: int) -> np.ndarray:
        """Element offsets (blocks, *lanes shape) into ``operand``, checked."""
        p = self.params
        rows, cols = np.broadcast_arrays(self.integers(site, f"{operand} rows", rows),
                                         self.integers(site, f"{operand} columns", cols))
        expand = (-1,) + (1,) * rows.ndim
        bm = self.block_rows.reshape(expand) * p.block_m
        bn = self.block_cols.reshape(expand) * p.block_n
        bk = k_tile * p.block_k
        if operand == "A":
            r, c = bm + rows, bk + cols
        elif operand == "B":
            r, c = bk + rows, bn + cols
        else:
            r, c = bm + rows, bn + cols
        nrows, ncols = self.shapes[operand]
        offset = r * ncols + c
        r, c = np.broadcast_to(r, offset.shape), np.broadcast_to(c, offset.shape)
        bad = (r < 0) | (r >= nrows) | (c < 0) | (c + vector > ncols)
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
        return offset

    def check_shared(self, site: str, spelling: str, addresses: np.ndarray,
                     width: int) -> None:
        """Raise `SharedAddressError` for a misaligned or out-of-range shared address."""
        size = self.params.shared_bytes
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

    def describe(self, block: int, warp: int, lane: int | None) -> str:
        """'block (m, n) warp w lane l' for block ``block`` of those in flight."""
        text = f"block ({int(self.block_rows[block])}, {int(self.block_cols[block])})"
        if warp is not None:
            text += f" warp {warp}"
        return text if lane is None else f"{text} lane {lane}"


def byte_addresses(offsets) -> np.ndarray:
    """f16 element offsets -> byte addresses."""
    return np.asarray(offsets, np.int64) * ELEMENT_BYTES
