"""wmma.mma at matrix level (`wmma`) and over a warp's fragments (`wmma_regs`), bit-exact as
the H100 computes it, any batch."""

from __future__ import annotations

import numpy as np

from ..fragments import check_batch, check_matrix
from ..profiles import ArchProfile, profile
from .arithmetic import wmma_bits
from .fragments import wmma_fragment
from .spec import WmmaSpec, parse_wmma

SUPPORTED_ARCH = "sm_90"  # the fragment maps and the lowering were read off sm_90


def _arch(arch: str | ArchProfile) -> ArchProfile:
    prof = profile(arch)
    if prof.name != SUPPORTED_ARCH:
        raise ValueError(f"tcsim models wmma as sm_90 runs it (fragments read off the H100, "
                         f"ptxas's lowering); {prof.name} is not modelled")
    return prof


def wmma(qualifier: str, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None, *,
         arch: str | ArchProfile = "sm_90") -> np.ndarray:
    """``D = A @ B + C`` for one wmma.mma, bit-exact.

    A is (..., M, K), B (..., K, N), C (..., M, N) in the dtypes of the qualifier's types
    (float16, ml_dtypes.bfloat16, float32 for tf32 and f32); any broadcastable batch. The layouts
    in the qualifier say how A and B sit in memory and change no value; C None: zeros.
    Returns D (..., M, N).
    """
    spec = parse_wmma(qualifier)
    C = spec.zero_c(A, B) if C is None else C
    prof = _arch(arch)
    bits = [_matrix_bits(spec, op, x) for op, x in zip("abc", (A, B, C))]
    check_batch(spec, bits)
    return spec.format("d").from_bits(wmma_bits(spec, *bits, prof))


def wmma_regs(qualifier: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, *,
              arch: str | ArchProfile = "sm_90") -> np.ndarray:
    """The instruction on a warp's registers, uint32 (..., 32, n) each, laid out by
    ``wmma_fragment(qualifier, operand)``; returns D's registers. Of an element held twice or
    four times (f16 A and B), the first copy is read, as on the H100."""
    spec = parse_wmma(qualifier)
    prof = _arch(arch)
    frags = [wmma_fragment(spec, op) for op in "abcd"]
    regs = [f.check_registers(x) for f, x in zip(frags, (a, b, c))]
    check_batch(spec, regs)
    A, B, C = (f.scatter_bits(f.from_registers(x)) for f, x in zip(frags, regs))
    D = wmma_bits(spec, A, B, C, prof)
    return frags[3].to_registers(frags[3].gather_bits(D))


def _matrix_bits(spec: WmmaSpec, operand: str, x) -> np.ndarray:
    fmt = spec.format(operand)
    name = f"{spec.qualifier} {operand.upper()}"
    return fmt.to_bits(check_matrix(name, fmt, spec.matrix_shape(operand), x))
