"""wgmma's arithmetic on matrices of bit patterns: ``D = scale_d * C + (sa A) @ (sb B)``.

`wgmma_bits` takes A (..., 64, K), B (..., K, N) and C (..., 64, N) as bit patterns and returns
D's. Options first: ``scale_d = 0`` replaces C by +0 (as the H100 does:
tests/hw/test_wgmma_hw.py); ``scale_a = -1`` / ``scale_b = -1`` flip the sign bit of every
element of A / B, which negates exactly. Then one of three engines
(`tcsim.isa.wgmma.numerics` says what each rests on):

- f16, bf16, tf32: the mma.sync engine (`tcsim.isa.arithmetic.mma_bits`) on the equivalent
  m16n8k16 or m16n8k8 instructions, one per 16 rows and 8 columns;
- e4m3/e5m2: one fused step of the K = 32 products and C by `tcsim.isa.adder.fused_step`, with
  the numerics' fp8 rule, laid out batch-last and run in chunks on the engine's thread pool;
  infinities and NaN are settled separately by counting infinite products with matrix products;
- s8/u8: `tcsim.isa.integer_mma`.
"""

from __future__ import annotations

import numpy as np

from ..adder import WorkPlan, fused_step
from ..allocator import tune_allocator
from ..arithmetic import mma_bits
from ..engine import for_each_chunk
from ..formats import FloatFormat
from ..integer_mma import integer_mma_bits
from ..qualifier import parse
from .numerics import WgmmaNumerics
from .spec import WgmmaSpec

# Equivalent m16n8 mma.sync instructions per engine call, and output elements per fp8 chunk:
# bounds on the temporaries, which stay near L2's size.
MMA_SYNC_BATCH = 1 << 16
FP8_CHUNK_ELEMENTS = 1 << 16
BATCH_LAST_BELOW_N = 32


def wgmma_bits(spec: WgmmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray,
               numerics: WgmmaNumerics, scale_d: int = 1, scale_a: int = 1,
               scale_b: int = 1) -> np.ndarray:
    """D bits (..., 64, N) from A (..., 64, K), B (..., K, N), C (..., 64, N) bits; the
    options as `tcsim.isa.wgmma.api.check_options` returns them."""
    tune_allocator()
    A, B, C = (np.asarray(x) for x in (A, B, C))
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
    n = int(np.prod(batch, dtype=np.int64))
    A, B, C = (np.broadcast_to(x, batch + x.shape[-2:]).reshape((n,) + x.shape[-2:])
               for x in (A, B, C))
    if not scale_d:
        C = np.zeros_like(C)
    if scale_a == -1:
        A = _negated(spec.format("a"), A)
    if scale_b == -1:
        B = _negated(spec.format("b"), B)
    if spec.integer:
        D = integer_mma_bits(spec, A, B, C)
    elif spec.family == "fp8":
        D = _fused_bits(spec, A, B, C, numerics)
    else:
        D = _per_warp_bits(spec, A, B, C, numerics)
    return D.reshape(batch + (spec.m, spec.n))


def _negated(fmt: FloatFormat, bits: np.ndarray) -> np.ndarray:
    """Every element's sign bit flipped: exact negation, infinities and NaN included."""
    return bits ^ fmt.uint(1 << (fmt.storage_bits - 1))


def equivalent_mma_sync(spec: WgmmaSpec) -> str:
    """The mma.sync each 16 x 8 block of an f16, bf16 or tf32 wgmma computes."""
    return f"m16n8k{spec.k}.row.col.{spec.d_type}.{spec.a_type}.{spec.b_type}.{spec.d_type}"


def _per_warp_bits(spec: WgmmaSpec, A, B, C, numerics: WgmmaNumerics) -> np.ndarray:
    """f16, bf16, tf32: the mma.sync engine on 4 x N/8 blocks per instruction."""
    step = parse(equivalent_mma_sync(spec))
    n, blocks, k = A.shape[0], spec.n // 8, spec.k
    D = np.empty((n, spec.m, spec.n), spec.format("d").uint)
    per_call = max(1, MMA_SYNC_BATCH // (4 * blocks))
    for s in range(0, n, per_call):
        e = min(n, s + per_call)
        a = A[s:e].reshape(e - s, 4, 1, 16, k)
        b = B[s:e].reshape(e - s, k, blocks, 8).transpose(0, 2, 1, 3)[:, None]
        c = C[s:e].reshape(e - s, 4, 16, blocks, 8).transpose(0, 1, 3, 2, 4)
        d = mma_bits(step, a, b, c, numerics.mma_sync)  # (c, 4, blocks, 16, 8)
        D[s:e] = d.transpose(0, 1, 3, 2, 4).reshape(e - s, spec.m, spec.n)
    return D


# ---- fp8: one fused step -----------------------------------------------------------------

def _plan(spec: WgmmaSpec) -> WorkPlan:
    """Exact dtypes for fp8 products: float32 holds every product (at most 4 x 4 significant
    bits) and scale; int16 exponents with a zero sentinel so low that a zero product, whatever
    its other factor, stays below every accumulator's exponent too."""
    fa, fb = spec.format("a"), spec.format("b")
    sentinel = np.iinfo(np.int16).min // 2 + 4
    return WorkPlan(np.float32, np.int16, sentinel, fa.emin + fb.emin)


def _decoded(fmt: FloatFormat, bits: np.ndarray, zero_mark: int):
    """(exact float32 values, int16 exponents) of bits; zeros, infinities and NaN read as 0
    with exponent ``zero_mark`` (the special ones are settled by `_special_bits`)."""
    values = fmt.values(bits, np.float32)
    if np.may_share_memory(values, bits):  # f32 values are a view of the bits
        values = values.copy()
    exponents = fmt.exponents(bits, np.int16)
    dropped = ~np.isfinite(values) | (values == 0)
    values[dropped] = 0
    exponents[dropped] = zero_mark
    return values, exponents


def _fused_bits(spec: WgmmaSpec, A, B, C, numerics: WgmmaNumerics) -> np.ndarray:
    """e4m3/e5m2: ``numerics.fp8_rule``, one fused step over K, then the f32 truncation."""
    rule, plan = numerics.fp8_rule, _plan(spec)
    fa, fb, fd = spec.format("a"), spec.format("b"), spec.format("d")
    F = rule.fraction_bits
    n = A.shape[0]
    D = np.empty((n, spec.m, spec.n), fd.uint)
    chunk = max(1, FP8_CHUNK_ELEMENTS // (spec.m * spec.n))
    # numpy's inner loops run along the last axis: N when it is wide, else the batch.
    batch_last = spec.n < BATCH_LAST_BELOW_N

    def work(s: int, e: int) -> None:
        # Contiguous operands, so that every loop of the fused step runs at unit stride.
        if batch_last:  # a (K, M, 1, c), b (K, 1, N, c), acc (M, N, c)
            order_a, order_b, order_c = (2, 1, 0), (1, 2, 0), (1, 2, 0)
        else:  # a (K, c, M, 1), b (K, c, 1, N), acc (c, M, N)
            order_a, order_b, order_c = (2, 0, 1), (1, 0, 2), (0, 1, 2)
        a, ea = _decoded(fa, np.ascontiguousarray(A[s:e].transpose(order_a)), plan.zero_sentinel)
        b, eb = _decoded(fb, np.ascontiguousarray(B[s:e].transpose(order_b)), plan.zero_sentinel)
        acc, eacc = _decoded(fd, np.ascontiguousarray(C[s:e].transpose(order_c)),
                             plan.accumulator_zero)
        if batch_last:
            a, ea, b, eb = a[:, :, None], ea[:, :, None], b[:, None], eb[:, None]
        else:
            a, ea, b, eb = a[..., None], ea[..., None], b[:, :, None], eb[:, :, None]
        total, emax = fused_step(a, ea, b, eb, acc, eacc, F, plan, None)
        bits = fd.round_scaled(total, emax - F, rule.output_rounding[spec.d_type],
                               rule.overflow[spec.d_type], rule.subnormal_outputs,
                               negative_zero=rule.negative_zero)
        if spec.d_type == "f32":
            bits &= np.uint32(numerics.fp8_f32_mask)
        D[s:e] = bits.transpose(2, 0, 1) if batch_last else bits

    for_each_chunk(n, work, chunk)
    _special_bits(spec, A, B, C, D, rule.nan_bits[spec.d_type])
    return D


def _special_bits(spec: WgmmaSpec, A, B, C, D, nan_bits: int) -> None:
    """Outputs with an infinity or NaN among their inputs get the IEEE outcome, in place: NaN
    for a NaN, an infinity times zero or infinities of both signs, else the infinity."""
    fa, fb, fc = spec.format("a"), spec.format("b"), spec.format("c")
    rows = np.flatnonzero(~fa.is_finite(A).all(axis=(1, 2)) | ~fb.is_finite(B).all(axis=(1, 2))
                          | ~fc.is_finite(C).all(axis=(1, 2)))
    if rows.size == 0:
        return
    a, b = fa.values(A[rows]), fb.values(B[rows])  # float64, exact
    c = fc.values(C[rows])

    def kinds(x):
        inf, zero, finite = np.isinf(x), x == 0, np.isfinite(x) & (x != 0)
        return (np.isnan(x), inf & (x > 0), inf & (x < 0), zero, finite & (x > 0),
                finite & (x < 0))

    a_nan, a_pinf, a_ninf, a_zero, a_pos, a_neg = kinds(a)
    b_nan, b_pinf, b_ninf, b_zero, b_pos, b_neg = kinds(b)

    def some(x, y):  # (r, 64, N): some k has x[m, k] and y[k, n]
        return np.matmul(x.astype(np.float32), y.astype(np.float32)) > 0

    nan = (a_nan.any(axis=2)[:, :, None] | b_nan.any(axis=1)[:, None, :] | np.isnan(c)
           | some(a_pinf | a_ninf, b_zero) | some(a_zero, b_pinf | b_ninf))
    positive = (some(a_pinf, b_pos | b_pinf) | some(a_ninf, b_neg | b_ninf)
                | some(a_pos, b_pinf) | some(a_neg, b_ninf) | (np.isinf(c) & (c > 0)))
    negative = (some(a_pinf, b_neg | b_ninf) | some(a_ninf, b_pos | b_pinf)
                | some(a_pos, b_ninf) | some(a_neg, b_pinf) | (np.isinf(c) & (c < 0)))
    nan |= positive & negative
    fd = spec.format("d")
    fixed = np.where(nan, nan_bits, np.where(negative, fd.inf_bits(True), fd.inf_bits(False)))
    d = D[rows]
    np.copyto(d, fixed.astype(d.dtype), where=nan | positive | negative)
    D[rows] = d
