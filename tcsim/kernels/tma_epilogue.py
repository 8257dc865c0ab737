"""kernel10's epilogue: C arrives and D leaves by TMA, and no warp waits for a store.

kernel9's consumers still spend their tile's end on global memory: they wait for C's loads and
issue D's stores themselves while the tensor pipe idles (docs/kernels.md). Here each consumer
warp has ``store_buffers`` buffers of 16 rows x 64 columns (2 KiB, the 128-byte swizzle that
TMA and kernel9's staging share; for a tile width that is not a multiple of 64, 16 rows x 32
columns, 1 KiB under the 64-byte swizzle: `GemmParams.column_box`), each with an mbarrier,
and lane 0 moves whole boxes:

1. ``C_EARLY`` K tiles before its tile ends, after issuing that K tile's wgmma, lane 0 waits
   until its earlier TMA stores have read their buffers (``cp.async.bulk.wait_group.read 0``)
   and asks for the first buffers of C (``cp.async.bulk.tensor`` of its 16 x 64 box,
   ``arrive.expect_tx`` of 2 KiB on the buffer's barrier): they arrive while the tensor pipe
   works;
2. per 64 columns (or 32): wait for the buffer's barrier, ``ldmatrix.x4`` hands every lane
   its C words in the accumulators' order, the ladder's arithmetic, ``stmatrix.x4`` D's words
   to the same places, ``fence.proxy.async`` (the TMA store reads what the warp wrote), and
   lane 0 issues the box's TMA store (``cp.async.bulk.tensor...global.shared::cta.bulk_group``,
   one bulk group). With more chunks than buffers, lane 0 then waits until that store has read the
   buffer and asks for the C of the chunk ``store_buffers`` ahead in it.

The warps never wait for a store to reach global memory; only the kernel's end waits for the
last ones. A buffer is refilled only after its store's group retired: the happens-before
checks report a schedule that does not wait (`tcsim.kernels.planted`).

With beta 0 no C is read (BLAS; cuBLAS does the same): step 1 is skipped, and in step 2 lane 0
waits only until the store that last used the buffer has read it
(``cp.async.bulk.wait_group.read`` with ``store_buffers - 1`` groups left), then the warp
writes D's words there with no ``ldmatrix``.
"""

from __future__ import annotations

import numpy as np

from ..memory.tma import TensorMap
from .params import GemmParams, box_swizzle
from .staged_epilogue import (
    ROWS,
    d_in_place,
    matrix_addresses,
    warp_accumulators,
)

C_EARLY = 1  # K tiles before the tile's end at which its C is asked for (hopper.cuh: C_EARLY)


def tensor_maps(M: int, N: int, columns: int) -> tuple[tuple[str, TensorMap], ...]:
    """C's and D's maps: boxes of a warp's 16 rows x ``columns`` (64: 128-byte swizzled; 32:
    64-byte swizzled, `GemmParams.column_box`)."""
    box = TensorMap(M, N, 2, ROWS, columns, box_swizzle(columns))
    return ("C", box), ("D", box)


def c_barriers(m, p: GemmParams, address: int):
    """One mbarrier per consumer warp and buffer (warp w's buffer b is ``w * buffers + b``),
    completed by lane 0's ``arrive.expect_tx`` and its C box."""
    return m.mbarriers("c_full", address, p.c_barriers, arrivals=1)


class TmaEpilogue:
    """The consumers' epilogue state across their tiles: ``stores`` counts each warp's stores
    so far (they move in step), so store x uses buffer x % buffers in phase x // buffers."""

    def __init__(self, m, p: GemmParams, c_full) -> None:
        self.m, self.p, self.c_full = m, p, c_full
        self.buffers = p.store_buffers
        self.reads_c = m.reads_c
        self.stores = 0
        self.warps = np.arange(4 * p.consumers)
        self.columns = p.column_box
        self.chunks = p.block_n // self.columns
        self.box_bytes = ROWS * p.box_row_bytes

    def buffer(self, warp: int, x: int) -> int:
        """Shared address of warp ``warp``'s buffer of store number ``x``."""
        return self.p.staging_offset + (warp * self.buffers + x % self.buffers) * self.box_bytes

    def _load_c(self, x: int, chunk: int) -> None:
        """Lane 0 of every consumer warp asks for its box of the tile's ``chunk`` in store
        ``x``'s buffer (inside ``m.tile``)."""
        for w in self.warps:
            index = int(w) * self.buffers + x % self.buffers
            self.m.arrive(self.c_full, index, expect_tx=self.box_bytes)
            self.m.tma_load("C_tma", "C", self.buffer(int(w), x), ROWS * int(w),
                            self.columns * chunk, 0, self.c_full, index)

    def ask_first(self, t: int, plant: str = "") -> None:
        """Step 1, C_EARLY K tiles before tile ``t`` ends."""
        if not self.reads_c:
            return
        if plant != "no_store_wait":
            self.m.bulk_wait_read(0)
        with self.m.tile(t):
            for chunk in range(min(self.buffers, self.chunks)):
                self._load_c(self.stores + chunk, chunk)

    def run(self, t: int, acc: np.ndarray, plant: str = ""):
        """Step 2 on the consumers' accumulators ``acc`` (blocks, consumers, 128, registers)
        of tile ``t``; a role's generator (it waits on the buffers' barriers)."""
        m, p = self.m, self.p
        per_warp = warp_accumulators(p, acc)
        for chunk in range(self.chunks):
            x = self.stores
            buffers = self.warps * self.buffers + x % self.buffers
            if not self.reads_c:  # the buffer's last store has read it
                if plant != "no_store_wait":
                    m.bulk_wait_read(self.buffers - 1)
            elif plant != "skip_c_wait":
                for index in buffers:
                    yield from m.wait(self.c_full, int(index), x // self.buffers & 1)
            matrices = matrix_addresses(p, buffers)
            with m.tile(t):
                d_in_place(m, matrices, per_warp, chunk, self.reads_c)
                if plant != "no_fence":
                    m.fence_proxy_async()
                for w in self.warps:
                    m.tma_store("D_tma", "D", self.buffer(int(w), x), ROWS * int(w),
                                self.columns * chunk)
                m.bulk_commit()
                if self.reads_c and chunk + self.buffers < self.chunks:
                    if plant != "no_store_wait":
                        m.bulk_wait_read(0)
                    self._load_c(x + self.buffers, chunk + self.buffers)
            self.stores += 1

    def finish(self) -> None:
        """The kernel's end: the last stores have read shared memory (the twin waits for
        them to complete)."""
        self.m.bulk_wait_read(0)
