"""The engine every floating-point tensor-core instruction runs on: the fused adder over
chunks of instructions laid out batch-last, on a thread pool.

`adder_bits` is one pass of the adder over matrices of bit patterns; `execute` runs the engine
over any load/store layout (`tcsim.isa.mma.mma_regs` loads registers straight); `flatten` and
`for_each_chunk` are the batching every family shares. Chunks run on a thread pool (numpy
releases the GIL in its loops).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from .adder import fused_step, special_step, work_plan
from .formats import at_least
from .fragments import store_batch_last
from .profiles import AdderRule
from .qualifier import MmaSpec

# Instructions per chunk: long numpy inner loops and a working set near L2. Not 2,048: batch-last
# rows must not be a multiple of 1 KiB long, or the batch-first copies thrash a few cache sets
# (see store_batch_last).
CHUNK = 2032


def flatten(arrays: list[np.ndarray]) -> tuple[tuple, list[np.ndarray]]:
    """Broadcast the leading (batch) axes and flatten them into one."""
    batch = np.broadcast_shapes(*(x.shape[:-2] for x in arrays))
    n = int(np.prod(batch, dtype=np.int64))
    return batch, [np.broadcast_to(x, batch + x.shape[-2:]).reshape((n,) + x.shape[-2:])
                   for x in arrays]


def adder_bits(spec: MmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray,
               rule: AdderRule) -> np.ndarray:
    """D bits (..., M, N) of one pass of the fused adder under ``rule``, from A (..., M, K),
    B (..., K, N) and C (..., M, N) bit patterns."""
    batch, (A, B, C) = flatten([A, B, C])
    D = np.empty((A.shape[0], spec.m, spec.n), spec.format("d").uint)

    def load(s: int, e: int):
        ab = stacked_inputs(spec, e - s, A.dtype)
        np.copyto(ab[:, :spec.m], A[s:e].transpose(2, 1, 0))
        np.copyto(ab[:, spec.m:], B[s:e].transpose(1, 2, 0))
        return ab, _batch_last(C[s:e])

    def store(s: int, e: int, bits: np.ndarray) -> None:
        store_batch_last(D[s:e], bits)

    execute(spec, rule, A.shape[0], load, store)
    return D.reshape(batch + (spec.m, spec.n))


def _batch_last(x: np.ndarray, block: int = CHUNK // 4) -> np.ndarray:
    """(n, rows, cols) -> (rows, cols, n), a block of instructions at a time: a whole chunk of
    f32 matrices and its copy overflow L2, which makes one big copy 30% slower."""
    out = np.empty(x.shape[1:] + x.shape[:1], x.dtype)
    for s in range(0, x.shape[0], block):
        np.copyto(out[..., s:s + block], x[s:s + block].transpose(1, 2, 0))
    return out


def stacked_inputs(spec: MmaSpec, count: int, dtype) -> np.ndarray:
    """Room for a chunk's A (K, M, count) and B (K, N, count) bits, stacked along the rows:
    one array, so that both are decoded by the same numpy calls."""
    return np.empty((spec.k, spec.m + spec.n, count), dtype)


def execute(spec: MmaSpec, rule: AdderRule, n: int, load, store) -> None:
    """Run the engine over ``n`` instructions in cache-sized chunks, on the thread pool.

    ``load(s, e)`` gives chunk [s, e) as bits laid out batch-last: A and B as one
    `stacked_inputs` array, C as (M, N, c); ``store(s, e, d)`` takes D as (M, N, c).
    """
    engine = Engine(spec, rule)
    for_each_chunk(n, lambda s, e: store(s, e, engine.run(*load(s, e))))


def for_each_chunk(n: int, work, chunk: int = CHUNK) -> None:
    """``work(s, e)`` for the chunks [s, e) of ``n`` instructions, on the thread pool when
    there are four chunks or more (so a call on at most three chunks, as a worker makes it,
    never waits for the pool)."""
    starts = range(0, n, chunk)
    pool = _pool()
    if pool is None or len(starts) < 4:
        for s in starts:
            work(s, min(n, s + chunk))
    else:
        list(pool.map(lambda s: work(s, min(n, s + chunk)), starts))


# Default thread cap: every numpy call passes the GIL, and past about 8 threads the handoffs
# cost more than the cores add (16-core Xeon: 16 threads 0.50-0.69 x 10^6 instructions a
# second, 8 threads 0.76-1.35 x 10^6; docs/benchmarks.md).
MAX_DEFAULT_THREADS = 8


def thread_count() -> int:
    """Threads the engine runs chunks on: ``TCSIM_THREADS``, else the cores up to 8."""
    default = min(os.cpu_count() or 1, MAX_DEFAULT_THREADS)
    return int(os.environ.get("TCSIM_THREADS", default))


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor | None:
    threads = thread_count()
    return ThreadPoolExecutor(threads) if threads > 1 else None


class Engine:
    """One instruction's arithmetic on a chunk laid out batch-last. `tcsim.blas` runs it with
    a whole block of a GEMM's outputs as one wide instruction (``spec`` then needs only
    ``m``, ``d_type`` and ``format``)."""

    def __init__(self, spec: MmaSpec, rule: AdderRule) -> None:
        self.spec = spec
        self.rule = rule
        self.fin = spec.format("a")
        self.fc = spec.format("c")
        self.fd = spec.format("d")
        self.plan = work_plan(self.fin, rule.fraction_bits, (self.fc, self.fd))
        zero = (rule.zero_exponent or {}).get(spec.d_type)
        # Zeros drop out of the alignment max when the rule gives them an exponent of their
        # own; that exponent matters only if it can exceed some nonzero term's exponent.
        self.mark_zeros = zero is not None
        lowest_term = min(self.plan.smallest_product_exponent, self.fc.emin, self.fd.emin)
        self.zero_exponent = zero if zero is not None and zero > lowest_term else None

    def _operand(self, fmt, bits: np.ndarray, work, zero_mark: int | None):
        """Exact values in ``work``, exponent fields in ``plan.exponent`` with zeros at
        ``zero_mark`` (unless it is None), and the mask of infinities and NaNs (None when there
        are none)."""
        exponent = self.plan.exponent
        field = fmt.exponent_field(bits)
        all_ones = (1 << fmt.exponent_bits) - 1
        special = field == all_ones if field.max(initial=0) == all_ones else None
        # In the unsigned type of the same width, where ``field - bias`` wraps around to the
        # signed value (`work_plan` checks that it fits; all-ones fields may wrap).
        exps = field.astype(np.dtype(f"u{np.dtype(exponent).itemsize}"))
        at_least(exps, 1, out=exps)
        exps -= exps.dtype.type(fmt.bias)
        exps = exps.view(exponent)
        values = fmt.values(bits, work, special if special is not None else False)
        if zero_mark is not None:
            np.copyto(exps, exponent(zero_mark), where=values == 0)
        return values, exps, special

    def _input(self, fmt, bits: np.ndarray):
        zero_mark = self.plan.zero_sentinel if self.mark_zeros else None
        return self._operand(fmt, bits, self.plan.work, zero_mark)

    def _accumulator(self, fmt, bits: np.ndarray):
        # An unmarked zero accumulator aligns at its format's emin. That is harmless when no
        # nonzero product lies below it (f32 accumulators of f16 products) and no zero floor
        # needs to see it: then the max only ever picks it for an all-zero sum.
        needed = self.mark_zeros and (self.zero_exponent is not None
                                      or fmt.emin > self.plan.smallest_product_exponent)
        return self._operand(fmt, bits, np.float32,
                             self.plan.accumulator_zero if needed else None)

    def run(self, ab_bits: np.ndarray, c_bits: np.ndarray) -> np.ndarray:
        """D bits (M, N, n) from A and B stacked (K, M + N, n) and C (M, N, n), all bits."""
        rule, F, fd = self.rule, self.rule.fraction_bits, self.fd
        rounding, overflow = rule.output_rounding[self.spec.d_type], rule.overflow[self.spec.d_type]
        rows = slice(0, self.spec.m), slice(self.spec.m, None)
        values, exps, special = self._input(self.fin, ab_bits)
        a, b = (values[:, r] for r in rows)  # (K, M, n), (K, N, n)
        ea, eb = (exps[:, r] for r in rows)
        a_special, b_special = (None, None) if special is None else (special[:, r] for r in rows)
        acc, acc_e, acc_special = self._accumulator(self.fc, c_bits)  # (M, N, n)
        k = a.shape[0]
        for start in range(0, k, rule.group_size):
            g = slice(start, min(start + rule.group_size, k))
            with np.errstate(invalid="ignore", over="ignore"):
                total, emax = fused_step(
                    a[g, :, None], ea[g, :, None], b[g, None], eb[g, None], acc, acc_e, F,
                    self.plan, self.zero_exponent)
            special = _special_outputs(a_special, b_special, acc_special, g, total.shape)
            if special is not None:
                total[special] = 0
            bits = fd.round_scaled(total, emax - F, rounding, overflow, rule.subnormal_outputs,
                                   negative_zero=rule.negative_zero)
            if special is not None:
                bits = self._specials(bits, special, a[g], b[g], acc)
            if g.stop < k:
                acc, acc_e, acc_special = self._accumulator(fd, bits)
        return bits

    def _specials(self, bits, special, a, b, acc):
        """Outputs whose inputs include inf or NaN get the IEEE outcome in the rule's bits."""
        finite_acc = np.where(np.isfinite(acc), 0.0, acc)  # finite parts cannot matter
        with np.errstate(invalid="ignore"):  # signaling NaNs warn when widened
            is_nan, negative = special_step(a.astype(np.float64), b.astype(np.float64), finite_acc)
        nan = self.rule.nan_bits[self.spec.d_type]
        inf = np.where(negative, self.fd.inf_bits(True), self.fd.inf_bits(False))
        fixed = np.where(is_nan, nan, inf).astype(bits.dtype)
        return np.where(special, fixed, bits)


def _special_outputs(a_special, b_special, acc_special, g: slice, shape) -> np.ndarray | None:
    """Mask (M, N, n) of the outputs of step ``g`` that have an infinity or NaN among their
    inputs, or None when none has; the operand masks are None when their operand has none."""
    if a_special is None and b_special is None and acc_special is None:
        return None
    special = np.zeros(shape, bool) if acc_special is None else acc_special.copy()
    if a_special is not None:
        special |= a_special[g].any(axis=0)[:, None, :]
    if b_special is not None:
        special |= b_special[g].any(axis=0)[None, :, :]
    return special if special.any() else None
