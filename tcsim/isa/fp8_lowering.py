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

from functools import cache

import numpy as np

from .engine import adder_bits, flatten, for_each_chunk
from .formats import F16, FloatFormat
from .profiles import ArchProfile
from .qualifier import MmaSpec, parse


def step_qualifier(spec: MmaSpec) -> str:
    """The f16 mma.sync each of the two steps runs (m16n8k16 for k32, m16n8k8 for k16)."""
    return f"m{spec.m}n{spec.n}k{spec.k // 2}.row.col.{spec.d_type}.f16.f16.{spec.d_type}"


@cache
def _widening_table(fmt: FloatFormat) -> np.ndarray:
    """f16 bits of each of the 256 fp8 bit patterns (the cast is exact; NaN stays NaN)."""
    return F16.to_bits(fmt.from_bits(np.arange(256, dtype=np.uint8)).astype(np.float16))


def widen(fmt: FloatFormat, bits: np.ndarray) -> np.ndarray:
    """fp8 bit patterns -> the f16 bit patterns of the same values (exact, as F2FP is)."""
    return _widening_table(fmt)[bits]  # indexing: several times faster than np.take here


def _step_operands(fmt: FloatFormat, bits: np.ndarray, k_axis: int):
    """The two steps' f16 operands: k % 4 in {0, 1}, then {2, 3}, widened in one pass each."""
    x = np.moveaxis(bits, k_axis, -1)
    quads = x.reshape(x.shape[:-1] + (x.shape[-1] // 4, 4))
    return [np.moveaxis(widen(fmt, quads[..., part]).reshape(x.shape[:-1] + (-1,)), -1, k_axis)
            for part in (slice(0, 2), slice(2, 4))]


def fp8_lowering_bits(spec: MmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray,
                      arch: ArchProfile) -> np.ndarray:
    """D bits (..., M, N) from fp8 A (..., M, K), B (..., K, N) and C (..., M, N) bits."""
    step = parse(step_qualifier(spec))
    fa, fb, fd = spec.format("a"), spec.format("b"), spec.format("d")
    nan = arch.rule("f16").nan_bits[spec.d_type]
    rule = arch.check(step)  # the f16 steps: one pass of the adder each
    batch, (A, B, C) = flatten([A, B, C])
    D = np.empty(C.shape, fd.uint)

    def work(s: int, e: int) -> None:
        # One chunk at a time, widening to adding: cache-sized, and the steps' adder_bits calls
        # stay within the chunk (they never wait for the thread pool this runs on).
        a1, a2 = _step_operands(fa, A[s:e], -1)
        b1, b2 = _step_operands(fb, B[s:e], -2)
        d = adder_bits(step, a1, b1, np.zeros((e - s, spec.m, spec.n), fd.uint), rule)
        d = adder_bits(step, a2, b2, d, rule)
        D[s:e] = add_nearest(fd, C[s:e], d, nan)

    for_each_chunk(A.shape[0], work)
    return D.reshape(batch + (spec.m, spec.n))


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
