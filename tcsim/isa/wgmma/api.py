"""``wgmma.mma_async`` at matrix level (`wgmma`) and over the warpgroup's registers
(`wgmma_regs`): ``D = scale_d * C + (scale_a * A) @ (scale_b * B)``, bit-exact, any batch.

The PTX operands besides the matrices are keyword arguments with PTX's names: ``scale_d``
(the predicate: 0 ignores C), ``scale_a`` / ``scale_b`` (imm-scale-a/b: 1 or -1, not for
integers) and ``trans_a`` / ``trans_b`` (imm-trans-a/b, f16 and bf16 only). A transpose says
that the operand sits MN-major in shared memory; it changes no value, so the simulator only
checks that the instruction allows it (`tcsim.hw.wgmma` lays the operand out that way).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..fragments import check_batch, check_matrix
from ..profiles import ArchProfile
from ..validate import integer
from .arithmetic import wgmma_bits
from .fragments import wgmma_fragment
from .numerics import WgmmaNumerics, numerics
from .spec import WgmmaSpec, parse_wgmma


class Options(NamedTuple):
    """A wgmma's operands besides the matrices, checked: scale_d 0/1, scales +-1, flags."""

    scale_d: int = 1
    scale_a: int = 1
    scale_b: int = 1
    trans_a: bool = False
    trans_b: bool = False


def _flag(value, what: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    return integer(value, what, minimum=0, maximum=1)


def check_options(spec: WgmmaSpec, scale_d=1, scale_a=1, scale_b=1, trans_a=False,
                  trans_b=False, *, a_in_registers: bool = False) -> Options:
    """The options of one instruction, checked against what PTX allows for it."""
    name = spec.qualifier
    scales = []
    for what, value in (("scale_a", scale_a), ("scale_b", scale_b)):
        s = integer(value, what)
        if s not in (1, -1):
            raise ValueError(f"{name}: {what} must be 1 or -1 (PTX imm-{what.replace('_', '-')})"
                             f", got {s}")
        if s == -1 and not spec.scalable:
            raise ValueError(f"{name}: integer wgmma has no imm-{what.replace('_', '-')}: "
                             f"{what} must be 1")
        scales.append(s)
    flags = []
    for what, value in (("trans_a", trans_a), ("trans_b", trans_b)):
        t = _flag(value, what)
        if t and not spec.transposable:
            raise ValueError(f"{name}: imm-{what.replace('_', '-')} exists for .f16 and .bf16 "
                             f"only (MN-major operands in shared memory), not .{spec.a_type}")
        flags.append(bool(t))
    if flags[0] and a_in_registers:
        raise ValueError(f"{name}: A in registers has no transpose (imm-trans-a is for A in "
                         f"shared memory)")
    return Options(_flag(scale_d, "scale_d"), *scales, *flags)


def _arch(arch: str | ArchProfile | WgmmaNumerics) -> WgmmaNumerics:
    return numerics(arch)


def wgmma(qualifier: str, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None, *,
          scale_d=1,
          scale_a=1, scale_b=1, trans_a=False, trans_b=False,
          arch: str | ArchProfile | WgmmaNumerics = "sm_90") -> np.ndarray:
    """``D = scale_d * C + (scale_a * A) @ (scale_b * B)`` for one wgmma.mma_async, bit-exact.

    A is (..., 64, K), B (..., K, N), C (..., 64, N), any broadcastable batch, in the dtypes
    of the qualifier's types (float16, ml_dtypes.bfloat16, float32 for tf32 and f32,
    ml_dtypes.float8_e4m3fn / float8_e5m2, int8, uint8, int32); C None: zeros. Returns D
    (..., 64, N).
    """
    spec = parse_wgmma(qualifier)
    C = spec.zero_c(A, B) if C is None else C
    opts = check_options(spec, scale_d, scale_a, scale_b, trans_a, trans_b)
    prof = _arch(arch)
    bits = [_matrix_bits(spec, op, x) for op, x in zip("abc", (A, B, C))]
    check_batch(spec, bits)
    D = wgmma_bits(spec, *bits, prof, opts.scale_d, opts.scale_a, opts.scale_b)
    return spec.format("d").from_bits(D)


def wgmma_regs(qualifier: str, a: np.ndarray, B: np.ndarray, c: np.ndarray, *, scale_d=1,
               scale_a=1, scale_b=1, trans_a=False, trans_b=False,
               arch: str | ArchProfile | WgmmaNumerics = "sm_90") -> np.ndarray:
    """The instruction over the warpgroup's registers, in PTX operand order.

    ``a``: A's registers, uint32 (..., 128, 4) laid out by ``wgmma_fragment(q, "a")`` (the
    RS form), or, for A from shared memory, the matrix A (..., 64, K). ``B``: the matrix B
    (..., K, N), which wgmma always reads from shared memory. ``c``: the accumulator
    registers, uint32 (..., 128, N/2) (N/4 for f16) by ``wgmma_fragment(q, "c")``. Returns
    d (..., 128, N/2 or N/4) as the instruction writes it.
    """
    spec = parse_wgmma(qualifier)
    in_registers = np.asarray(a).dtype == np.uint32  # no A matrix has uint32 elements
    opts = check_options(spec, scale_d, scale_a, scale_b, trans_a, trans_b,
                         a_in_registers=in_registers)
    prof = _arch(arch)
    fa, fc, fd = (wgmma_fragment(spec, op) for op in "acd")
    if in_registers:
        a = fa.check_registers(a)
    c = fc.check_registers(c)
    b = _matrix_bits(spec, "b", B)
    check_batch(spec, [a, b, c])
    A = fa.scatter_bits(fa.from_registers(a)) if in_registers else _matrix_bits(spec, "a", a)
    C = fc.scatter_bits(fc.from_registers(c))
    D = wgmma_bits(spec, A, b, C, prof, opts.scale_d, opts.scale_a, opts.scale_b)
    return fd.to_registers(fd.gather_bits(D))


def _matrix_bits(spec: WgmmaSpec, operand: str, x) -> np.ndarray:
    fmt = spec.format(operand)
    name = f"wgmma {spec.qualifier} {operand.upper()}"
    return fmt.to_bits(check_matrix(name, fmt, spec.matrix_shape(operand), x))
