"""mma.sync semantics: ``D = A @ B + C`` with the tensor core's exact arithmetic.

`mma_regs` is the instruction as the warp sees it (per-lane 32-bit registers in, registers out);
`mma` is the same at matrix level and gives exactly ``unpack(mma_regs(pack(A), pack(B),
pack(C)))``. Both run on any leading batch shape. Internally the batch is moved to the last
axis and cut into chunks; chunks run on a thread pool (numpy releases the GIL in its loops).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from .adder import fused_step, special_step, work_plan
from .allocator import tune_allocator
from .formats import at_least
from .fp8_lowering import fp8_lowering_bits
from .fragments import check_batch, check_matrix, mma_fragment, store_batch_last
from .integer_mma import integer_mma_bits
from .profiles import AdderRule, ArchProfile, profile
from .quad_pair import ffma_lowering_bits
from .qualifier import MmaSpec, parse

# Instructions per chunk: long numpy inner loops and a working set near L2. Not 2,048: batch-last
# rows must not be a multiple of 1 KiB long, or the batch-first copies thrash a few cache sets
# (see store_batch_last).
CHUNK = 2032


def mma(
    qualifier: str,
    A: np.ndarray,
    B: np.ndarray,
    C: np.ndarray | None = None,
    arch: str | ArchProfile = "sm_90",
) -> np.ndarray:
    """``D = A @ B + C`` for one mma.sync instruction, bit-exact, over any batch shape.

    A is (..., M, K), B is (..., K, N), C is (..., M, N) (None: zeros, for D = A @ B); dtypes
    as the qualifier's types say:
    float16, ml_dtypes.bfloat16, float32 (f32, and tf32, whose low 13 bits the hardware
    ignores), ml_dtypes.float8_e4m3fn / float8_e5m2, int8, uint8 or int32 (s32).
    Returns D (..., M, N) in D's dtype. A wgmma qualifier ("m64n128k16.f32.f16.f16") runs
    `tcsim.isa.wgmma.wgmma` with its default options.
    """
    from .wgmma import is_wgmma_qualifier, wgmma  # imported here: tcsim.isa.wgmma imports mma

    if is_wgmma_qualifier(qualifier):
        return wgmma(qualifier, A, B, C, arch=arch)
    spec = parse(qualifier)
    C = spec.zero_c(A, B) if C is None else C
    bits = [_matrix_bits(spec, op, x) for op, x in zip("abc", (A, B, C))]
    check_batch(spec, bits)
    # Same bits as unpack(mma_regs(pack(A), pack(B), pack(C))), without the register shuffles.
    return spec.format("d").from_bits(mma_bits(spec, *bits, profile(arch)))


def mma_regs(
    qualifier: str,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    arch: str | ArchProfile = "sm_90",
) -> np.ndarray:
    """The instruction at register level: uint32 arrays (..., 32, n) in PTX operand order.

    Each of a, b, c holds, lane by lane, the operand registers exactly as the instruction reads
    them (two 16-bit values per register with the lower-indexed element in the low half; f32
    values as bit patterns). Returns d (..., 32, n_d) as the instruction writes it.
    """
    spec = parse(qualifier)
    tune_allocator()
    fa, fb, fc, fd = (mma_fragment(spec, op) for op in "abcd")
    regs = [f.check_registers(x) for f, x in zip((fa, fb, fc), (a, b, c))]
    check_batch(spec, regs)
    if spec.products_per_warp > 1 or not _runs_on_adder(spec):
        return _via_matrices(spec, regs, profile(arch))
    batch, (a, b, c) = _flatten(regs)
    d = np.empty((a.shape[0], 32, fd.registers), np.uint32)
    d_elements = fd.from_registers(d)  # a view: (n, 32, elements) in D's storage type

    def load(s: int, e: int):
        ab = _stacked_inputs(spec, e - s, fa.format.uint)
        fa.registers_to_batch_last(a[s:e], out=ab[:, :spec.m], transpose=True)
        fb.registers_to_batch_last(b[s:e], out=ab[:, spec.m:])
        return ab, fc.registers_to_batch_last(c[s:e])

    def store(s: int, e: int, bits: np.ndarray) -> None:
        store_batch_last(d_elements[s:e], fd.batch_last_elements(bits))

    _execute(spec, profile(arch).check(spec), a.shape[0], load, store)
    return d.reshape(batch + d.shape[1:])


def _matrix_bits(spec: MmaSpec, operand: str, x) -> np.ndarray:
    """Bit patterns of one product's operand matrix (..., rows, cols), checked."""
    fmt = spec.format(operand)
    name = f"{spec.qualifier} {operand.upper()}"
    return fmt.to_bits(check_matrix(name, fmt, spec.matrix_shape(operand), x))


def _runs_on_adder(spec: MmaSpec) -> bool:
    """Whether the instruction is one pass of the fused adder (not a lowering or integers)."""
    return spec.family not in ("fp8", "int8")


def _via_matrices(spec: MmaSpec, regs, arch: ArchProfile) -> np.ndarray:
    """Registers through matrices: for m8n8k4, a warp's four stacked quad-pair products one
    product at a time; for lowered and integer instructions, their matrix-level engines."""
    frags = [mma_fragment(spec, op) for op in "abcd"]
    per = spec.products_per_warp
    mats = []
    for frag, r in zip(frags, regs):
        m = frag.scatter_bits(frag.from_registers(r))  # (..., 4 * rows, cols)
        mats.append(m.reshape(m.shape[:-2] + (per, frag.rows // per, frag.cols)))
    D = mma_bits(spec, *mats, arch)  # (..., 4, 8, 8)
    D = D.reshape(D.shape[:-3] + (frags[3].rows, frags[3].cols))
    return frags[3].to_registers(frags[3].gather_bits(D))


def _flatten(arrays: list[np.ndarray]) -> tuple[tuple, list[np.ndarray]]:
    """Broadcast the leading (batch) axes and flatten them into one."""
    batch = np.broadcast_shapes(*(x.shape[:-2] for x in arrays))
    n = int(np.prod(batch, dtype=np.int64))
    return batch, [np.broadcast_to(x, batch + x.shape[-2:]).reshape((n,) + x.shape[-2:])
                   for x in arrays]


# ---- the engine on matrices of bit patterns ---------------------------------------------------


def mma_bits(
    spec: MmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray, arch: ArchProfile
) -> np.ndarray:
    """D bit patterns (..., M, N) from A (..., M, K), B (..., K, N), C (..., M, N) bit patterns."""
    tune_allocator()
    rule = arch.check(spec)
    A, B, C = (np.asarray(x) for x in (A, B, C))
    if spec.integer:
        return integer_mma_bits(spec, A, B, C)
    if spec.family == "fp8":  # as ptxas lowers it on sm_90
        return fp8_lowering_bits(spec, A, B, C, arch)
    if rule is None:  # m8n8k4 as ptxas lowers it (sm_90)
        return ffma_lowering_bits(spec, A, B, C)
    batch, (A, B, C) = _flatten([A, B, C])
    D = np.empty((A.shape[0], spec.m, spec.n), spec.format("d").uint)

    def load(s: int, e: int):
        ab = _stacked_inputs(spec, e - s, A.dtype)
        np.copyto(ab[:, :spec.m], A[s:e].transpose(2, 1, 0))
        np.copyto(ab[:, spec.m:], B[s:e].transpose(1, 2, 0))
        return ab, _batch_last(C[s:e])

    def store(s: int, e: int, bits: np.ndarray) -> None:
        store_batch_last(D[s:e], bits)

    _execute(spec, rule, A.shape[0], load, store)
    return D.reshape(batch + (spec.m, spec.n))


def _batch_last(x: np.ndarray, block: int = CHUNK // 4) -> np.ndarray:
    """(n, rows, cols) -> (rows, cols, n), a block of instructions at a time: a whole chunk of
    f32 matrices and its copy overflow L2, which makes one big copy 30% slower."""
    out = np.empty(x.shape[1:] + x.shape[:1], x.dtype)
    for s in range(0, x.shape[0], block):
        np.copyto(out[..., s:s + block], x[s:s + block].transpose(1, 2, 0))
    return out


def _stacked_inputs(spec: MmaSpec, count: int, dtype) -> np.ndarray:
    """Room for a chunk's A (K, M, count) and B (K, N, count) bits, stacked along the rows:
    one array, so that both are decoded by the same numpy calls."""
    return np.empty((spec.k, spec.m + spec.n, count), dtype)


def _execute(spec: MmaSpec, rule: AdderRule, n: int, load, store) -> None:
    """Run the engine over ``n`` instructions in cache-sized chunks, on the thread pool.

    ``load(s, e)`` gives chunk [s, e) as bits laid out batch-last: A and B as one
    `_stacked_inputs` array, C as (M, N, c); ``store(s, e, d)`` takes D as (M, N, c).
    """
    engine = _Engine(spec, rule)
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


class _Engine:
    """One instruction's arithmetic on a chunk laid out batch-last."""

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
