"""`SharedMemory`: a block's shared memory with exact per-access bank accounting.

Every warp-wide access moves real bytes and is counted with `tcsim.memory.access`: wavefronts,
ideal wavefronts and bank conflicts, also totalled per instruction site (a name the caller
gives, such as ``"A_smem_ldmatrix"``). Misaligned or out-of-range addresses raise
`SharedMemoryError` naming the site, lane and address.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..isa.fragments import ldmatrix_fragment
from .access import WARP, Access, _as_addresses, access, parse_instruction

# The most shared memory one block can have on sm_90: 227 KB.
SM90_BLOCK_LIMIT = 227 * 1024

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@dataclass
class SiteTotals:
    """Accumulated counts of one instruction site."""

    instruction: str = ""
    executions: int = 0
    wavefronts: int = 0
    ideal: int = 0

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal


class SharedMemory:
    """Byte-addressable shared memory of ``size`` bytes (at most the sm_90 per-block limit)."""

    def __init__(self, size: int = SM90_BLOCK_LIMIT) -> None:
        if not 0 < size <= SM90_BLOCK_LIMIT:
            raise ValueError(f"shared memory size must be 1..{SM90_BLOCK_LIMIT} bytes, got {size}")
        self.size = size
        self.data = np.zeros(size, np.uint8)
        self.sites: dict[str, SiteTotals] = defaultdict(SiteTotals)

    # ---- accounting -------------------------------------------------------------------------

    def _account(self, instruction: str, addresses, site: str | None,
                 sources=None) -> tuple[Access, np.ndarray, np.ndarray]:
        acc = access(instruction, addresses, size=self.size, site=site, sources=sources)
        addr, active = _as_addresses(addresses)
        name = site or acc.instruction
        totals = self.sites[name]
        if totals.instruction and totals.instruction != acc.instruction:
            raise ValueError(f"site {name!r} is {totals.instruction}, not {acc.instruction}")
        totals.instruction = acc.instruction
        totals.executions += 1
        totals.wavefronts += acc.wavefronts
        totals.ideal += acc.ideal
        return acc, addr, active

    def totals(self) -> dict[str, dict[str, int | str]]:
        """Per-site totals: instruction, executions, wavefronts, ideal, conflicts."""
        return {name: {"instruction": t.instruction, "executions": t.executions,
                       "wavefronts": t.wavefronts, "ideal": t.ideal, "conflicts": t.conflicts}
                for name, t in self.sites.items()}

    # ---- ld.shared / st.shared / cp.async ---------------------------------------------------

    def load(self, instruction: str, addresses, site: str | None = None) -> np.ndarray:
        """``ld.shared``: each lane's bytes as (32, width) uint8 (zeros for inactive lanes)."""
        inst = parse_instruction(instruction)
        if inst.kind != "ld":
            raise ValueError(f"load() takes ld.shared instructions, not {instruction!r}")
        _, addr, active = self._account(instruction, addresses, site)
        return self._gather(addr, active, inst.bytes_per_address)

    def store(self, instruction: str, addresses, values, site: str | None = None,
              sources=None) -> None:
        """``st.shared`` / ``cp.async`` (shared side): ``values`` is (32, width) uint8.

        ``sources``: for cp.async, the lanes' global addresses (see `access`)."""
        inst = parse_instruction(instruction)
        if inst.kind not in ("st", "cp.async"):
            raise ValueError(f"store() takes st.shared or cp.async, not {instruction!r}")
        values = np.asarray(values, np.uint8).reshape(WARP, inst.bytes_per_address)
        _, addr, active = self._account(instruction, addresses, site, sources)
        self._scatter(addr, active, values)

    # ---- ldmatrix / stmatrix ----------------------------------------------------------------

    def ldmatrix(self, instruction: str, addresses, site: str | None = None) -> np.ndarray:
        """``ldmatrix``: the 32 lanes' destination registers, (32, N) uint32."""
        inst = parse_instruction(instruction)
        if inst.kind != "ldmatrix":
            raise ValueError(f"ldmatrix() takes ldmatrix instructions, not {instruction!r}")
        _, addr, active = self._account(instruction, addresses, site)
        lanes = np.arange(8 * inst.matrices)
        rows = self._gather(addr[lanes], np.ones(lanes.size, bool), 16)  # (8N, 16) bytes
        frag = ldmatrix_fragment(inst.matrices, inst.transpose)
        return frag.to_registers(frag.gather_bits(rows.view(np.uint16)))

    def stmatrix(self, instruction: str, addresses, registers, site: str | None = None) -> None:
        """``stmatrix``: write the lanes' registers (32, N) uint32 to the addressed rows."""
        inst = parse_instruction(instruction)
        if inst.kind != "stmatrix":
            raise ValueError(f"stmatrix() takes stmatrix instructions, not {instruction!r}")
        frag = ldmatrix_fragment(inst.matrices, inst.transpose)
        rows = frag.scatter_bits(frag.from_registers(np.asarray(registers, np.uint32)))
        _, addr, _ = self._account(instruction, addresses, site)
        lanes = np.arange(8 * inst.matrices)
        self._scatter(addr[lanes], np.ones(lanes.size, bool), rows.view(np.uint8))

    # ---- bytes -------------------------------------------------------------------------------

    def _gather(self, addr, active, width) -> np.ndarray:
        idx = addr[:, None] + np.arange(width)[None, :]
        out = self.data[np.where(active[:, None], idx, 0)]
        out[~active] = 0
        return out

    def _scatter(self, addr, active, values) -> None:
        width = values.shape[1]
        for lane in np.flatnonzero(active):  # in lane order: the highest lane wins a clash
            a = int(addr[lane])
            self.data[a:a + width] = values[lane]

    def view(self, offset: int, dtype, count: int) -> np.ndarray:
        """A typed view of ``count`` elements at byte ``offset`` (for setting up and checking)."""
        dtype = np.dtype(dtype)
        end = offset + count * dtype.itemsize
        if offset < 0 or end > self.size:
            raise IndexError(f"bytes {offset}..{end} are outside shared memory of {self.size}")
        return self.data[offset:end].view(dtype)
