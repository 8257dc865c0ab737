"""A batched warp register file, and instructions executed on it.

`Warp` holds 32-bit registers for 32 lanes, for any batch of warps at once: an array of shape
(*batch, 32, registers). Instructions name their operand registers as PTX does (``{%r4, %r5}``
becomes ``[4, 5]``) and read and write exactly the bits `tcsim.mma_regs` takes and returns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .fragments import WARP_SIZE, mma_fragment
from .mma import mma_regs
from .profiles import ArchProfile
from .qualifier import parse


class Warp:
    """Registers ``r[0..registers)`` of every lane of a batch of warps, all zero at start."""

    def __init__(self, batch: tuple[int, ...] | int = (), registers: int = 64) -> None:
        batch = (batch,) if isinstance(batch, int) else tuple(batch)
        if registers < 1:
            raise ValueError("a warp needs at least one register")
        self.regs = np.zeros(batch + (WARP_SIZE, registers), np.uint32)

    @property
    def batch(self) -> tuple[int, ...]:
        return self.regs.shape[:-2]

    @property
    def registers(self) -> int:
        return self.regs.shape[-1]

    def _check(self, registers: Sequence[int], count: int | None, what: str) -> list[int]:
        regs = [int(r) for r in registers]
        if count is not None and len(regs) != count:
            raise ValueError(f"{what} takes {count} register(s), got {len(regs)}: {regs}")
        for r in regs:
            if not 0 <= r < self.registers:
                raise IndexError(f"{what}: register r{r} is outside r0..r{self.registers - 1}")
        return regs

    def read(self, registers: Sequence[int]) -> np.ndarray:
        """Registers as uint32 (*batch, 32, len(registers))."""
        return self.regs[..., self._check(registers, None, "read")].copy()

    def write(self, registers: Sequence[int], values: np.ndarray) -> None:
        """Write uint32 values (broadcastable to (*batch, 32, len(registers)))."""
        regs = self._check(registers, None, "write")
        values = np.asarray(values)
        if values.dtype != np.uint32:
            raise TypeError(f"register values must be uint32, got {values.dtype}")
        self.regs[..., regs] = values

    def load_fragment(self, qualifier: str, operand: str, matrix: np.ndarray,
                      registers: Sequence[int]) -> None:
        """Pack a matrix into registers the way ``qualifier``'s ``operand`` expects it."""
        frag = mma_fragment(qualifier, operand)
        self.write(self._check(registers, frag.registers, f"{frag.name}"), frag.pack(matrix))

    def store_fragment(self, qualifier: str, operand: str,
                       registers: Sequence[int]) -> np.ndarray:
        """Unpack registers into the matrix that ``qualifier``'s ``operand`` holds."""
        frag = mma_fragment(qualifier, operand)
        return frag.unpack(self.read(self._check(registers, frag.registers, f"{frag.name}")))

    def mma(self, qualifier: str, d: Sequence[int], a: Sequence[int], b: Sequence[int],
            c: Sequence[int], arch: str | ArchProfile = "sm_90") -> None:
        """``mma.sync.aligned.<qualifier> {d}, {a}, {b}, {c}`` on every warp of the batch."""
        spec = parse(qualifier)
        ops = {}
        for name, regs in zip("dabc", (d, a, b, c)):
            frag = mma_fragment(spec, name)
            ops[name] = self._check(regs, frag.registers, f"{spec.qualifier} operand {name}")
        result = mma_regs(spec.qualifier, self.regs[..., ops["a"]], self.regs[..., ops["b"]],
                          self.regs[..., ops["c"]], arch)
        self.regs[..., ops["d"]] = result
