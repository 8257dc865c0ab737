"""fp8 mma.sync on sm_90, as ptxas lowers it: f16 tensor-core steps and one rounding add.

Hopper's legacy tensor-core path (HMMA) has no fp8 inputs. For ``mma.sync`` with .e4m3/.e5m2
operands, ptxas (CUDA 13, sm_90) emits, per instruction (SASS in docs/numerics.md):

1. ``F2FP.F16.E4M3.UNPACK_B`` / ``.E5M2``: every fp8 operand widened to f16, which is exact;
2. two ``HMMA.16816`` (for k32) or ``HMMA.1688`` (for k16) steps with f16 inputs, the first
   from a zero accumulator (RZ), the second accumulating onto it. The first step takes the
   k indices with ``k % 4`` in {0, 1} (the low halves of the fp8 registers), the second
   ``k % 4`` in {2, 3};
3. ``FADD`` (f32) or ``HADD2`` (f16) of C and that sum, rounding to nearest even.

So the numerics are the f16 rule of the profile twice, then one IEEE addition of C.
"""

from __future__ import annotations

import numpy as np

from .formats import F16, FloatFormat
from .profiles import ArchProfile
from .qualifier import MmaSpec, parse


def step_qualifier(spec: MmaSpec) -> str:
    """The f16 mma.sync each of the two steps runs (m16n8k16 for k32, m16n8k8 for k16)."""
    return f"m{spec.m}n{spec.n}k{spec.k // 2}.row.col.{spec.d_type}.f16.f16.{spec.d_type}"


def step_columns(k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k indices of the first and of the second step."""
    index = np.arange(k)
    return index[index % 4 < 2], index[index % 4 >= 2]


def widen(fmt: FloatFormat, bits: np.ndarray) -> np.ndarray:
    """fp8 bit patterns -> the f16 bit patterns of the same values (exact, as F2FP is)."""
    return F16.to_bits(fmt.from_bits(bits).astype(np.float16))


def fp8_lowering_bits(spec: MmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray,
                      arch: ArchProfile) -> np.ndarray:
    """D bits (..., M, N) from fp8 A (..., M, K), B (..., K, N) and C (..., M, N) bits."""
    from .mma import mma_bits  # the f16 engine; imported here as mma imports this module

    step = parse(step_qualifier(spec))
    first, second = step_columns(spec.k)
    a, b = widen(spec.format("a"), A), widen(spec.format("b"), B)
    fd = spec.format("d")
    zero = np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (spec.m, spec.n), fd.uint)
    d = mma_bits(step, a[..., first], b[..., first, :], zero, arch)
    d = mma_bits(step, a[..., second], b[..., second, :], d, arch)
    return add_nearest(fd, C, d, arch.rule("f16").nan_bits[spec.d_type])


def add_nearest(fmt: FloatFormat, x: np.ndarray, y: np.ndarray, nan_bits: int) -> np.ndarray:
    """Bits of ``x + y`` rounded to nearest even, as FADD and HADD2 give it: subnormals kept,
    overflow to infinity, and every NaN result the canonical ``nan_bits``."""
    with np.errstate(over="ignore", invalid="ignore"):
        if fmt.name == "f32":  # numpy's float32 addition is IEEE's
            total = fmt.from_bits(x) + fmt.from_bits(y)
        else:  # two f16 values add exactly in float64; the cast then rounds once
            total = (fmt.from_bits(x).astype(np.float64) + fmt.from_bits(y)).astype(fmt.dtype)
    bits = fmt.to_bits(np.asarray(total, fmt.dtype)).copy()
    bits[np.isnan(total)] = nan_bits
    return bits
