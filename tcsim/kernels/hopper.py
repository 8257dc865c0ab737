"""The Machine's Hopper instructions: mbarriers, TMA tile copies, wgmma, roles (sm_90a).

`HopperInstructions` is part of `tcsim.kernels.machine.Machine`; a warp-specialized schedule
(kernel7) issues these next to the ladder's instructions (its epilogue is the ladder's). The
public methods check their operands and call the engine's ``_``-prefixed method, which moves
bits (the executor) or counts (the tracer). Conventions beyond the Machine's:

- wgmma works on warpgroups: accumulators are (blocks, warpgroups, 128, registers) in the
  warpgroup fragment map (`tcsim.isa.wgmma.wgmma_fragment`), descriptors are 64-bit values,
  one per warpgroup (`tcsim.memory.MatrixDescriptor.encode`);
- a TMA copy is issued by one thread for the whole block; its box's origin, like every global
  coordinate, is relative to the block's tile (the machine adds the block's origin and the K
  tile's);
- roles are generator functions (`tcsim.kernels.roles`); a wait is ``yield from m.wait(...)``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..isa.validate import integer
from ..isa.wgmma import parse_wgmma, wgmma_fragment
from ..memory.tma import SHARED_ALIGN, TensorMap
from .checks import GlobalMemoryError, SharedAddressError, first_index
from .roles import Barriers, PhaseError, Role, Waiting

BARRIER_BYTES = 8
TMA_LOAD = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
TMA_MULTICAST = TMA_LOAD + ".multicast::cluster"
TMA_STORE = "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
WGMMA = "wgmma.mma_async.sync.aligned."


class HopperInstructions:
    """What a warp-specialized schedule may do beyond the ladder's instructions."""

    tensor_maps: dict[str, TensorMap]  # by operand, set by Kernel.issue
    shared_bytes: int  # the block's shared memory (the Machine's)
    shared_tiles: tuple = ()  # the kernel's SharedTiles, set by Kernel.issue

    def mbarriers(self, name: str, address: int, count: int, arrivals: int) -> Barriers:
        """``mbarrier.init`` of ``count`` barriers from shared byte ``address``, each phase
        expecting ``arrivals`` arrivals (one thread initializes them; a barrier follows)."""
        end = address + BARRIER_BYTES * count
        if address % BARRIER_BYTES or address < 0 or end > self.shared_bytes:
            raise SharedAddressError(
                f"{self.kernel}: mbarriers {name!r} at {address:#x} (+{end - address} bytes) "
                f"must be 8-byte aligned inside the block's {self.shared_bytes} bytes",
                site=name, address=address)
        for tile in self.shared_tiles:  # a barrier is not data: it may not share a tile's bytes
            if address < tile.end and tile.base < end:
                raise SharedAddressError(
                    f"{self.kernel}: mbarriers {name!r} at bytes {address:,}..{end:,} overlap "
                    f"tile {tile.operand} at bytes {tile.base:,}..{tile.end:,}",
                    site=name, address=address)
        barriers = Barriers(name, address, count, arrivals)
        self._mbarrier_init(name, barriers)
        return barriers

    def arrive(self, barriers: Barriers, index: int, count: int = 1,
               expect_tx: int = 0) -> None:
        """``mbarrier.arrive`` by ``count`` threads (one per warp that arrives, say); with
        ``expect_tx``, ``mbarrier.arrive.expect_tx``: the phase also waits for that many bytes
        of copies."""
        self._arrive(barriers, self._barrier_index(barriers, index), count, expect_tx)

    def wait(self, barriers: Barriers, index: int, parity: int) -> Iterator[Waiting]:
        """``mbarrier.try_wait.parity`` in a loop: the role is suspended until the phase of
        ``parity`` (0 or 1) has completed. Use as ``yield from m.wait(...)``."""
        index = self._barrier_index(barriers, index)
        if self.in_tile:
            raise PhaseError(f"{self.kernel}: a role waits inside `with m.tile(...)`; leave "
                             "the tile first (other roles run while it waits)")
        if parity not in (0, 1):
            raise PhaseError(f"{self.kernel}: a wait's parity is 0 or 1, got {parity!r}")
        return self._wait(barriers, index, parity)

    def tma_load(self, site: str, operand: str, destination: int, rows: int, cols: int,
                 k_tile: int, barriers: Barriers, index: int, multicast: bool = False) -> None:
        """``cp.async.bulk.tensor.2d`` of the box of ``operand``'s tensor map at (rows, cols)
        of the block's tile (of A and B: of K tile ``k_tile``) to shared byte
        ``destination``; its bytes complete on ``barriers[index]``. With ``multicast``, its
        ``.multicast::cluster`` form: read from L2 once, the box lands at ``destination`` in
        every block of the cluster (``cluster_m``) and completes on each one's barrier; the
        other blocks' side is theirs to state (`tma_received`)."""
        if multicast and self.params.cluster_m == 1:
            raise ValueError(f"{self.kernel} site {site!r}: a multicast TMA copy needs a "
                             "cluster (cluster_m > 1)")
        tensor_map, rows, cols = self._box(site, operand, destination, rows, cols, k_tile)
        if self.checker is not None:  # bytes the copy writes, for the ladder's own checks
            self.checker.fill(tensor_map.box_offsets(destination))
        self._tma_load(site, operand, tensor_map, destination, rows, cols,
                       barriers, self._barrier_index(barriers, index), bool(multicast))

    def tma_received(self, site: str, operand: str, destination: int, rows: int, cols: int,
                     k_tile: int, barriers: Barriers, index: int) -> None:
        """The box another block of the cluster multicasts to this one: it lands at shared
        byte ``destination`` and completes on ``barriers[index]``, but this block issues no
        instruction and reads nothing from L2. The engines run one block at a time, so the
        cluster is modeled symmetrically: the other block copies the same operand at the same
        K tile and block column (B), at the same moment as this block's producer, so what
        lands is the box at (rows, cols) of this block's tile, which this call names."""
        if self.params.cluster_m == 1:
            raise ValueError(f"{self.kernel} site {site!r}: a box multicast by another block "
                             "needs a cluster (cluster_m > 1)")
        tensor_map, rows, cols = self._box(site, operand, destination, rows, cols, k_tile)
        if self.checker is not None:
            self.checker.fill(tensor_map.box_offsets(destination))
        self._tma_received(site, operand, tensor_map, destination, rows, cols,
                           barriers, self._barrier_index(barriers, index))

    def tma_store(self, site: str, operand: str, source: int, rows: int, cols: int) -> None:
        """``cp.async.bulk.tensor.2d.global.shared::cta.bulk_group``: the box at shared byte
        ``source`` to (rows, cols) of the block's tile of ``operand`` (D). It reads shared
        memory in the background until `bulk_wait_read` retires its group; the writes it reads
        must come before a `fence_proxy_async`."""
        self._check_operand(site, operand, store=True)
        tensor_map, rows, cols = self._box(site, operand, source, rows, cols, 0)
        self._tma_store(site, operand, tensor_map, source, rows, cols)

    def _box(self, site: str, operand: str, address: int, rows: int, cols: int, k_tile: int):
        """The operand's tensor map and the box's global origin (blocks,), its shared address
        checked."""
        self._check_operand(site, operand)
        if operand not in self.tensor_maps:
            raise ValueError(f"{self.kernel} site {site!r}: the kernel has no tensor map for "
                             f"{operand} (it has {', '.join(self.tensor_maps) or 'none'})")
        tensor_map = self.tensor_maps[operand]
        if address % SHARED_ALIGN or address < 0 or \
                address + tensor_map.box_bytes > self.shared_bytes:
            raise SharedAddressError(
                f"{self.kernel} site {site!r}: a TMA box of {tensor_map.box_bytes} bytes at "
                f"{address:#x} must be {SHARED_ALIGN}-byte aligned inside the block's "
                f"{self.shared_bytes} bytes", site=site, address=address)
        p = self.params
        tile = (self.block_rows * p.block_m, self.block_cols * p.block_n)
        k = (self.k_first + k_tile) * p.block_k  # split-K: the split's K tiles
        b = (tile[1], k) if p.b_k_major else (k, tile[1])
        origin_rows, origin_cols = {"A": (tile[0], k),
                                    "B": b}.get(operand, tile)
        rows = np.broadcast_to(origin_rows + rows, self.block_rows.shape)
        cols = np.broadcast_to(origin_cols + cols, self.block_rows.shape)
        self._check_map(site, operand, tensor_map, rows, cols)
        return tensor_map, rows, cols

    def _check_map(self, site: str, operand: str, tensor_map: TensorMap, rows, cols) -> None:
        """TMA fills zeros only past the *map's* edge: a map that describes more rows or
        columns than the operand has (or another row pitch) makes a box read or write global
        memory past the matrix (`GlobalMemoryError`, as a bad address)."""
        nrows, ncols = self.shapes[operand]
        if tensor_map.cols != ncols:
            raise GlobalMemoryError(
                f"{self.kernel} site {site!r}: {operand}'s tensor map has rows of "
                f"{tensor_map.cols} elements, but {operand} is {nrows}x{ncols}: every row "
                "after the first is read at the wrong place", site=site)
        if tensor_map.rows <= nrows:  # every element the map holds is the matrix's
            return
        elements, inside = tensor_map.box_elements(rows, cols)
        past = inside & (elements >= nrows * ncols)
        if past.any():
            block, i, j = first_index(past)
            raise GlobalMemoryError(
                f"{self.kernel} site {site!r}: {self.describe(block, None, None)}: the TMA box "
                f"at {operand}[{int(rows[block])}, {int(cols[block])}] reaches "
                f"{operand}[{int(rows[block]) + i}, {int(cols[block]) + j}], past the "
                f"{nrows}x{ncols} matrix: its tensor map describes {tensor_map.rows}x"
                f"{tensor_map.cols}, and TMA fills zeros only past the map's edge",
                site=site, block=block, address=int(elements[block, i, j]) *
                tensor_map.element_bytes)

    def bulk_commit(self) -> None:
        """``cp.async.bulk.commit_group``: the TMA stores issued since the last commit form a
        bulk group (each issuing thread has its own; a schedule's warps commit in step)."""
        self._bulk_commit()

    def bulk_wait_read(self, pending: int) -> None:
        """``cp.async.bulk.wait_group.read``: at most ``pending`` bulk groups still read shared
        memory; the buffers of the older ones may be written again."""
        self._bulk_wait_read(integer(pending, f"{self.kernel}: cp.async.bulk.wait_group.read "
                                              "takes a count of pending groups, which",
                                     minimum=0, type_error=ValueError))

    def fence_proxy_async(self) -> None:
        """``fence.proxy.async.shared::cta``: the thread's shared-memory writes become visible
        to the async proxy (a TMA store or wgmma issued after reads them)."""
        self._fence_proxy_async()

    def wgmma(self, site: str, qualifier: str, desc_a, desc_b, acc: np.ndarray,
              trans_b: bool = False) -> np.ndarray:
        """``wgmma.mma_async`` with A and B from shared memory: ``desc_a`` and ``desc_b`` are
        each warpgroup's 64-bit descriptors (warpgroups,), ``acc`` its accumulators (blocks,
        warpgroups, 128, registers); B read MN-major when ``trans_b``. Returns D."""
        spec = parse_wgmma(qualifier)
        desc_a, desc_b = (np.asarray(d, np.uint64).reshape(-1) for d in (desc_a, desc_b))
        if desc_a.size != desc_b.size and 1 not in (desc_a.size, desc_b.size):
            raise ValueError(f"{self.kernel} site {site!r} ({WGMMA}{spec.qualifier}): "
                             f"{desc_a.size} A descriptors but {desc_b.size} B descriptors; "
                             f"give one of each per warpgroup (or one for all)")
        acc = self._check_registers(site, WGMMA + spec.qualifier, "the accumulator", acc,
                                    [wgmma_fragment(spec, "c").registers],
                                    (max(desc_a.size, desc_b.size), 128), threads=128)
        return self._wgmma(site, spec, desc_a, desc_b, acc, bool(trans_b))

    def wgmma_fence(self) -> None:
        """``wgmma.fence``: registers and shared memory written before are seen by the wgmma
        issued after."""

    def wgmma_commit(self) -> None:
        """``wgmma.commit_group``: the wgmma issued since the last commit form a group."""
        self._wgmma_commit()

    def wgmma_wait(self, pending: int) -> None:
        """``wgmma.wait_group``: at most ``pending`` groups still run. The executor computes a
        wgmma when it is issued, which gives the same bits for a schedule that reads its
        accumulators and releases its stages only after the wait; its checks report a stage
        released before its group retired (docs/checks.md)."""
        self._wgmma_wait(integer(pending, f"{self.kernel}: wgmma.wait_group takes a count of "
                                          "pending groups, which", minimum=0,
                                 type_error=ValueError))

    def run_roles(self, *roles: tuple[str, Role]) -> None:
        """Run the block's roles, (name, generator) pairs, to their ends (`tcsim.kernels.roles`
        says how each engine interleaves them)."""
        self._run_roles(roles)

    def _barrier_index(self, barriers: Barriers, index: int) -> int:
        if not 0 <= int(index) < barriers.count:
            raise PhaseError(f"{self.kernel}: barrier {barriers.name}[{index}] does not exist "
                             f"({barriers.count} were initialized)")
        return int(index)

    # ---- what the engines implement ------------------------------------------------------------

    def _mbarrier_init(self, name: str, barriers: Barriers) -> None: ...

    def _arrive(self, barriers: Barriers, index: int, count: int, expect_tx: int) -> None: ...

    def _wait(self, barriers: Barriers, index: int, parity: int) -> Iterator[Waiting]:
        raise NotImplementedError

    def _tma_load(self, site, operand, tensor_map, destination, rows, cols, barriers,
                  index, multicast=False) -> None:
        raise NotImplementedError

    def _tma_received(self, site, operand, tensor_map, destination, rows, cols, barriers,
                      index) -> None:
        raise NotImplementedError

    def _tma_store(self, site, operand, tensor_map, source, rows, cols) -> None:
        raise NotImplementedError

    def _bulk_commit(self) -> None: ...

    def _fence_proxy_async(self) -> None: ...

    def _bulk_wait_read(self, pending: int) -> None: ...

    def _wgmma(self, site, spec, desc_a, desc_b, acc, trans_b) -> np.ndarray:
        raise NotImplementedError

    def _wgmma_commit(self) -> None: ...

    def _wgmma_wait(self, pending: int) -> None: ...

    def _run_roles(self, roles) -> None:
        raise NotImplementedError
