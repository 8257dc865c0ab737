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
from .validate import broadcasts_to, check_memory, integer

# The most 32-bit registers one thread can have (PTX, every architecture since sm_35).
MAX_REGISTERS = 255


class Warp:
    """Registers ``r[0..registers)`` of every lane of a batch of warps, all zero at start.

    ``batch``: an int or a tuple of non-negative ints (0 gives an empty batch); ``registers``:
    1 to 255, as on the GPU. A register file larger than this machine's memory is refused
    before it is allocated."""

    def __init__(self, batch: tuple[int, ...] | int = (), registers: int = 64) -> None:
        if not isinstance(batch, (tuple, list)):
            batch = (batch,)
        batch = tuple(integer(n, f"batch[{i}]", minimum=0) for i, n in enumerate(batch))
        registers = integer(registers, "registers", minimum=1, maximum=MAX_REGISTERS,
                            why=" (the most a thread has)")
        size = int(np.prod(batch, dtype=object)) * WARP_SIZE * registers * 4
        check_memory(size, f"Warp(batch={batch}, registers={registers})")
        self.regs = np.zeros(batch + (WARP_SIZE, registers), np.uint32)

    @property
    def batch(self) -> tuple[int, ...]:
        return self.regs.shape[:-2]

    @property
    def registers(self) -> int:
        return self.regs.shape[-1]

    def _check(self, registers: Sequence[int], count: int | None, what: str) -> list[int]:
        """Register numbers: a sequence of ints (TypeError otherwise, a float included), each
        in r0..r{registers-1} (IndexError)."""
        if isinstance(registers, (str, bytes)) or np.ndim(registers) != 1:
            raise TypeError(f"{what}: registers are a sequence of register numbers such as "
                            f"[4, 5], got {registers!r}")
        regs = [integer(r, f"{what}: register number") for r in registers]
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
        shape = self.batch + (WARP_SIZE, len(regs))
        if not broadcasts_to(values.shape, shape):
            raise ValueError(f"write: values of shape {values.shape} do not broadcast to "
                             f"(*batch, 32, registers) = {shape}")
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
