"""The engine: a whole library GEMM as a chain of tcsim's own instruction models.

`accumulate` runs a `Plan` over A (M, K) and B (K, N) and returns each split range's f32
result (the chain of instruction steps from zero, each step one fused addition of the tensor
core, exactly as `tcsim.mma` and `tcsim.wgmma` compute it); `reduce` adds the ranges as the
kernel does. The work is batched over whole blocks of rows (every output of a block advances
one step at a time) and blocks run on the instruction engine's thread pool: Python loops once
per step (per k for the CUDA-core "ffma" plans, which are slow in NumPy), never per output.

The f16/bf16/tf32 steps run on the mma.sync engine itself (`tcsim.isa.engine`), with the block
of outputs as one wide instruction: a step is the same fused addition whatever the output
shape, so the bits are the instruction model's by construction. When the optional compiled
engine (`tcsim.blas.compiled`, numba) is installed it takes these steps instead; a property
test holds it bit-identical to this one.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..isa.adder import WorkPlan, fused_step
from ..isa.engine import Engine, for_each_chunk
from ..isa.formats import F32, FloatFormat, format_named
from ..isa.profiles import profile
from ..isa.qualifier import parse
from ..isa.wgmma.numerics import numerics as wgmma_numerics
from ..isa.wgmma.spec import parse_wgmma
from . import compiled
from .plan import Plan

ROWS_PER_BLOCK = 64  # outputs of 64 rows x N advance together: their temporaries stay in cache


def accumulate(plan: Plan, A: np.ndarray, B: np.ndarray, init: np.ndarray | None = None,
               progress=None) -> np.ndarray:
    """Each split range's result (ranges, M, N) of ``A @ B`` under ``plan``: f32 values, or
    int32 for the "int" engine. `reduce` adds them as the kernel does.

    ``A`` (M, K) and ``B`` (K, N) are bit patterns of the instruction's input formats (f32 for
    "ffma"; int8 values for "int"). ``init``: f32 values (M, N) the first range's accumulator
    starts from instead of zero (C, for kernels that load it into the accumulator).
    ``progress``: called with each count of rows done.
    """
    M, K = A.shape
    N = B.shape[1]
    if plan.engine == "int":
        return _integer(A, B)[None]
    if plan.round_inputs == "tf32":
        A, B = _to_tf32(A), _to_tf32(B)
    if compiled.runs(plan):  # the compiled engine, when numba is there (bit-identical)
        return compiled.accumulate(plan, A, B, init, progress)
    step = {"mma": _mma_steps, "wgmma_fp8": _fp8_steps, "ffma": _ffma_steps}[plan.engine]
    ranges = plan.ranges(K)
    out = np.empty((len(ranges), M, N), np.float32)

    def block(s: int, e: int) -> None:
        for i, (start, end) in enumerate(ranges):
            start_from = None if init is None or i else init[s:e]
            out[i, s:e] = step(plan, A[s:e], B, plan.positions(start, end), start_from)
        if progress is not None:
            progress(e - s)

    for_each_chunk(M, block, ROWS_PER_BLOCK)
    return out


BATCH_ELEMENTS = 1 << 22  # operand slots per batched block: bounds the engine's temporaries


def accumulate_batch(plan: Plan, A: np.ndarray, B: np.ndarray, init: np.ndarray | None = None,
                     progress=None) -> np.ndarray:
    """`accumulate` for a batch: A (count, M, K), B (count, K, N), ``init`` (count, M, N) or
    None; returns (count, ranges, M, N). The tensor-core ("mma") chains of the whole batch
    advance together (the instruction engine's batch axis, or one compiled loop nest over
    every batch element's tiles), so a batch costs about what its outputs cost, not a call
    per element; the other engines run element by element."""
    count, M, K = A.shape
    N = B.shape[-1]
    if plan.engine != "mma" or count == 1:
        return np.stack([accumulate(plan, A[i], B[i], None if init is None else init[i],
                                    progress) for i in range(count)]) if count else \
            np.zeros((0, len(plan.ranges(K)), M, N), np.float32)
    if plan.round_inputs == "tf32":
        A, B = _to_tf32(A), _to_tf32(B)
    if compiled.runs(plan):
        return compiled.accumulate(plan, A, B, init, progress)
    ranges = plan.ranges(K)
    out = np.empty((count, len(ranges), M, N), np.float32)
    group = max(1, min(count, BATCH_ELEMENTS // max(1, (K + 1) * (ROWS_PER_BLOCK + N))))

    def block(s: int, e: int) -> None:
        for g in range(0, count, group):
            b = slice(g, min(count, g + group))
            for i, (start, end) in enumerate(ranges):
                start_from = None if init is None or i else init[b, s:e]
                out[b, i, s:e] = _mma_steps(plan, A[b, s:e], B[b], plan.positions(start, end),
                                            start_from)
        if progress is not None:
            progress(e - s)

    for_each_chunk(M, block, ROWS_PER_BLOCK)
    return out


def reduce(plan: Plan, parts: np.ndarray, out_dtype: str, epilogue) -> np.ndarray:
    """D from the ranges' results: ``epilogue`` (f32 values -> f32 values) and the rounding to
    ``out_dtype``, with the ranges added as ``plan.reduction`` says."""
    if plan.engine == "int":
        return parts.sum(axis=0, dtype=np.int64).astype(np.int32)
    if plan.reduction == "serial":
        # The first range runs the epilogue; each later one adds its result to the stored D.
        total = to_output(epilogue(parts[0]), out_dtype)
        for part in parts[1:]:
            total = to_output(np.add(part, total.astype(np.float32), dtype=np.float32),
                              out_dtype)
        return total
    total = _stored(parts[0], plan.partial)
    for part in parts[1:]:
        total = np.add(total, _stored(part, plan.partial), dtype=np.float32)
    return to_output(epilogue(total), out_dtype)


def _gather(bits: np.ndarray, positions: np.ndarray, axis: int) -> np.ndarray:
    """The K slots ``positions`` (`Plan.positions`; -1 a padding zero) along ``axis``."""
    pad = [(0, 0)] * bits.ndim
    pad[axis] = (0, 1)  # the zero that -1 reads
    return np.take(np.pad(bits, pad), positions, axis=axis)


class _Wide:
    """An instruction spec widened to a block of ``m`` rows of outputs (what `Engine` reads)."""

    def __init__(self, spec, m: int) -> None:
        self._spec, self.m, self.d_type = spec, m, spec.d_type

    def format(self, operand: str) -> FloatFormat:
        return self._spec.format(operand)


def _mma_steps(plan: Plan, A, B, slots, init) -> np.ndarray:
    """f16/bf16/tf32: one f32 accumulator from zero over the product ``slots`` of a range
    (`Plan.positions`), one instruction per step."""
    spec = parse(plan.instruction)
    rule = profile("sm_90").check(spec)
    # One instruction is one fused step of its K products (rule steps are never wider).
    rule = replace(rule, group_size=min(rule.group_size, spec.k))
    single = A.ndim == 2  # else a batch: A (count, m, K), B (count, K, n), init (count, m, n)
    A3, B3 = (A[None], B[None]) if single else (A, B)
    count, m, n = A3.shape[0], A3.shape[1], B3.shape[2]
    k = len(slots)
    # The batch is the instruction engine's own batch axis (last).
    ab = np.empty((k, m + n, count), A.dtype)
    ab[:, :m] = _gather(A3, slots, axis=2).transpose(2, 1, 0)
    ab[:, m:] = _gather(B3, slots, axis=1).transpose(1, 2, 0)
    c = np.zeros((m, n, count), np.uint32)
    if init is not None:
        start = np.broadcast_to(init, (m, n) if single else (count, m, n)).astype(np.float32)
        c[...] = (start[None] if single else start).transpose(1, 2, 0).view(np.uint32)
    d = c if k == 0 else Engine(_Wide(spec, m), rule).run(ab, c)
    d = np.ascontiguousarray(d.transpose(2, 0, 1)).view(np.float32)
    return d[0] if single else d


def _fp8_steps(plan: Plan, A, B, slots, init) -> np.ndarray:
    """fp8 wgmma k32 steps: each one fused addition of 32 products and the wgmma accumulator
    (13 fraction bits, truncated), promoted to an f32 register sum every ``plan.promotion``
    steps (or never)."""
    spec = parse_wgmma(plan.instruction)
    fa, fb = spec.format("a"), spec.format("b")
    num = wgmma_numerics("sm_90")
    rule = num.fp8_rule
    F = rule.fraction_bits
    work = WorkPlan(np.float32, np.int16, np.iinfo(np.int16).min // 2 + 4, fa.emin + fb.emin)
    a, ea = _fp8_decoded(fa, _gather(A, slots, axis=1).T, work.zero_sentinel)
    b, eb = _fp8_decoded(fb, _gather(B, slots, axis=0), work.zero_sentinel)
    steps = len(slots) // spec.k
    m, n = A.shape[0], B.shape[1]
    mask = np.uint32(num.fp8_f32_mask)
    register = np.zeros((m, n), np.float32)
    if init is not None:
        raise NotImplementedError("fp8 plans start from zero")
    if compiled.engine() == "numba":  # the compiled engine, when numba is there (bit-identical)
        result = compiled.fp8_steps(a, ea, b, eb, spec.k, rule, work.smallest_product_exponent,
                                    num.fp8_f32_mask, plan.promotion)
        return _ieee_specials(result, fa.values(A), fb.values(B))
    acc = np.zeros((m, n), np.float32)
    acc_e = np.full((m, n), work.accumulator_zero, np.int16)
    pending = 0
    for i in range(steps):
        g = slice(i * spec.k, (i + 1) * spec.k)
        total, emax = fused_step(a[g, :, None], ea[g, :, None], b[g, None, :], eb[g, None, :],
                                 acc, acc_e, F, work, None)
        bits = F32.round_scaled(total, emax - F, rule.output_rounding["f32"],
                                rule.overflow["f32"], rule.subnormal_outputs,
                                negative_zero=rule.negative_zero) & mask
        acc = bits.view(np.float32)
        acc_e = F32.exponents(bits, np.int16)
        acc_e[acc == 0] = work.accumulator_zero
        pending += 1
        if plan.promotion and (pending == plan.promotion or i == steps - 1):
            register = np.add(register, acc, dtype=np.float32)
            acc = np.zeros((m, n), np.float32)
            acc_e = np.full((m, n), work.accumulator_zero, np.int16)
            pending = 0
    result = register if plan.promotion else acc
    return _ieee_specials(result, fa.values(A), fb.values(B))


def _fp8_decoded(fmt: FloatFormat, bits: np.ndarray, zero_mark: int):
    """Exact float32 values and int16 exponents; zeros, infinities and NaN read as 0 with
    exponent ``zero_mark`` (`_ieee_specials` settles the outputs they reach)."""
    values = fmt.values(bits, np.float32)
    exponents = fmt.exponents(bits, np.int16)
    dropped = ~np.isfinite(values) | (values == 0)
    values[dropped] = 0
    exponents[dropped] = zero_mark
    return values, exponents


def _ieee_specials(result: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Outputs whose row of A or column of B holds an infinity or NaN take the IEEE outcome
    (NaN, or the infinity), which no finite part can change."""
    rows = ~np.isfinite(a).all(axis=1)
    cols = ~np.isfinite(b).all(axis=0)
    if not (rows.any() or cols.any()):
        return result
    with np.errstate(invalid="ignore", over="ignore"):
        ieee = a @ b  # float64: finite parts cannot overflow it
    special = ~np.isfinite(ieee)
    out = result.copy()
    out[special] = ieee[special]
    return out


def _ffma_steps(plan: Plan, A, B, slots, init) -> np.ndarray:
    """f32 on the CUDA cores: acc = fma(a[k], b[k], acc) for each k of ``slots`` in order, from
    zero; the instruction "fma.rn.f32.<input type>" names the format inputs are widened
    from."""
    fmt = format_named(plan.instruction.rsplit(".", 1)[1])
    a = fmt.values(A, np.float64)
    b = fmt.values(B, np.float64)
    acc = np.zeros((A.shape[0], B.shape[1]), np.float32)
    if init is not None:
        acc = np.broadcast_to(init, acc.shape).astype(np.float32)
    if plan.lanes == 1 and not plan.lane_chunk:
        for k in slots:  # one-product steps: never padded
            acc = fma_f32(a[:, k, None], b[None, k, :], acc)
        return acc
    return _ffma_lanes(plan, a, b, slots, acc)


def _ffma_lanes(plan: Plan, a, b, slots, start) -> np.ndarray:
    """`_ffma_steps` for kernels whose ``plan.lanes`` threads share each output's K: slot i
    goes to lane (i // lane_width) % lanes (width 0: ceil(slots / lanes)), each lane an FMA
    chain from zero (lane 0 from ``start``; with ``plan.lane_chunk``, a chain from zero over
    each chunk of the lane's elements, added to the lane's sum), then the lanes' sums are
    added as ``plan.lane_reduction`` says."""
    L, w = plan.lanes, plan.lane_width or max(1, -(-len(slots) // plan.lanes))
    acc = np.zeros(start.shape + (L,), np.float32)
    acc[..., 0] = start
    chunk = plan.lane_chunk
    part = np.zeros_like(acc) if chunk else acc  # the chunk's chain (the lane's, without)
    pending = np.zeros(L, bool)  # lanes whose chunk holds elements not yet added
    lane_start = np.arange(L) * w
    for r in range(0, len(slots), L * w):
        for v in range(w):
            idx = r + lane_start + v
            live = idx < len(slots)
            if not live.any():
                break
            k = slots[idx[live]]
            part[..., live] = fma_f32(a[:, k][:, None, :], b[k].T[None], part[..., live])
            if chunk:
                pending |= live
                # the lane's element count: (r // (L * w)) * w + v + 1
                if ((r // (L * w)) * w + v + 1) % chunk == 0:
                    acc[..., pending] = np.add(acc[..., pending], part[..., pending],
                                               dtype=np.float32)
                    part[..., pending] = 0
                    pending[:] = False
    if chunk and pending.any():
        acc[..., pending] = np.add(acc[..., pending], part[..., pending], dtype=np.float32)
    if plan.lane_reduction == "in_order":
        total = acc[..., 0]
        for lane in range(1, L):
            total = np.add(total, acc[..., lane], dtype=np.float32)
        return total
    # "tree": pairwise, halving, as warp shuffles add; over the next power of two of the lane
    # count, the lanes past it +0 (gemvNSP<float, ..., 1, 16, 4>'s 24 threads: measured).
    P = 1 << (L - 1).bit_length()
    if P != L:
        acc = np.concatenate([acc, np.zeros(acc.shape[:-1] + (P - L,), np.float32)], -1)
    while P > 1:
        P //= 2
        acc = np.add(acc[..., :P], acc[..., P:2 * P], dtype=np.float32)
    return acc[..., 0]


def fma_f32(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """float32 ``x * y + z`` rounded once to nearest even (IEEE fma), vectorized.

    x * y is exact in float64 (24 + 24 bits); the float64 sum is made round-to-odd from its
    exact error (Knuth's TwoSum), and rounding a round-to-odd value with 53 bits to 24 is the
    correctly rounded result.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.multiply(x, y, dtype=np.float64)
        z = z.astype(np.float64)
        s = p + z
        t = s - p
        err = (p - (s - t)) + (z - t)
        inexact = (err != 0) & np.isfinite(s)
        if inexact.any():
            bits = s.view(np.int64).copy()
            # Truncate toward zero: step one ulp toward zero when the error points that way.
            toward_zero = inexact & ((err < 0) != (s < 0))
            bits[toward_zero] -= 1
            bits[inexact] |= 1  # then make it odd
            s = bits.view(np.float64)
        return s.astype(np.float32)


def _integer(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Exact int32 sums of int8 products (wrapping as the hardware does past 2**31): float64
    holds every such sum exactly up to K = 2**38."""
    exact = np.asarray(A, np.float64) @ np.asarray(B, np.float64)
    return exact.astype(np.int64).astype(np.int32)


def _to_tf32(bits: np.ndarray) -> np.ndarray:
    """f32 bit patterns rounded to tf32 to nearest even (the low 13 bits then zero)."""
    return format_named("tf32").round(F32.values(bits), "rn", "ieee").astype(np.uint32)


def _stored(part: np.ndarray, partial: str) -> np.ndarray:
    """A range's f32 result as stored for the reduction (f16/bf16 round to nearest even)."""
    if partial == "f32":
        return part
    return to_output(part, {"f16": "float16", "bf16": "bfloat16"}[partial]).astype(np.float32)


def to_output(values: np.ndarray, dtype_name: str) -> np.ndarray:
    """f32 values rounded to nearest even into an output dtype (a numpy or ml_dtypes one)."""
    fmt = format_named(OUTPUT_FORMATS[dtype_name])
    if fmt.name == "f32":
        return values.astype(np.float32)
    # cuBLAS saturates fp8 outputs to the largest finite value (measured: e4m3, 2026-11-25).
    overflow = "saturate" if fmt.storage_bits == 8 else "ieee"
    return fmt.from_bits(fmt.round(values.astype(np.float64), "rn", overflow))


OUTPUT_FORMATS = {"float16": "f16", "bfloat16": "bf16", "float32": "f32",
                  "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
