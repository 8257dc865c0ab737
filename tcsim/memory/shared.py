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
from ..isa.validate import integer, integer_array
from .access import SM90_BLOCK_LIMIT, WARP, Access, _access, parse_instruction

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
        size = integer(size, "shared memory size", minimum=1, maximum=SM90_BLOCK_LIMIT,
                       why=" bytes (SM90_BLOCK_LIMIT)")
        self.size = size
        self.data = np.zeros(size, np.uint8)
        self.sites: dict[str, SiteTotals] = defaultdict(SiteTotals)

    # ---- accounting -------------------------------------------------------------------------

    def _account(self, instruction: str, addresses, site: str | None,
                 sources=None) -> tuple[Access, np.ndarray, np.ndarray]:
        acc, addr, active = _access(instruction, addresses, self.size, site, sources)
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
        values = _bytes(values, inst)
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
        registers = frag.check_registers(registers)
        if registers.shape != (WARP, inst.matrices):
            raise ValueError(f"{instruction}: registers must have shape (32, {inst.matrices}), "
                             f"got {registers.shape}")
        rows = frag.scatter_bits(frag.from_registers(registers))
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
        offset = integer(offset, "offset", minimum=0)
        count = integer(count, "count", minimum=0)
        end = offset + count * dtype.itemsize
        if offset < 0 or end > self.size:
            raise IndexError(f"bytes {offset}..{end} are outside shared memory of {self.size}")
        return self.data[offset:end].view(dtype)


def _bytes(values, inst) -> np.ndarray:
    """The lanes' bytes to store: integers 0..255 of shape (32, width), as uint8."""
    width = inst.bytes_per_address
    if np.shape(values) != (WARP, width):
        raise ValueError(f"{inst.spelling}: values must be (32, {width}) bytes, one row a lane, "
                         f"got shape {np.shape(values)}")
    out, _ = integer_array(values, f"{inst.spelling} values", limit=256,
                           limit_text=" (a byte is 0..255)",
                           name=lambda i: f"lane {i // width} byte {i % width} =")
    return out.astype(np.uint8)
