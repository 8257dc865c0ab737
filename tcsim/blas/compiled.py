"""The compiled engine (optional, numba): the step chains of `tcsim.blas.chain`, bit for bit.

`tcsim.blas.chain` runs a plan's f16/bf16/tf32 steps on the mma.sync engine of
`tcsim.isa.mma`: every output advances one fused addition at a time, as NumPy array operations
over a block of rows. This module runs the same chain as one compiled loop nest (numba, the
``fast`` extra: ``pip install tcsim[fast]``) over tiles of outputs, in parallel over the cores.
It computes what the adder computes (`tcsim.isa.adder.fused_step`, see its module doc): per
step, the largest exponent among the products (exponent fields added) and the accumulator,
the zero floor of the rule, every term truncated toward zero to ``fraction_bits`` below it
and added exactly as integers, the sum rounded toward zero to f32 (subnormals kept, overflow to
infinity, -0 written as +0). Outputs that meet an infinity or NaN take the IEEE outcome, as
`tcsim.isa.mma` gives it. `fp8_steps` runs the fp8 wgmma steps of `chain._fp8_steps` the
same way (13 fraction bits, promotion to an f32 register sum). tests/blas/test_compiled.py
holds both bit-identical to the NumPy engine.

Which engine runs: ``TCSIM_ENGINE=numpy`` forces the NumPy engine, ``TCSIM_ENGINE=numba``
requires this one (an `EngineUnavailableError` says how to install numba when it is missing),
and unset (or ``auto``) takes this one whenever numba imports. The first call in a fresh
environment compiles the kernels (numba caches them on disk: later processes load them).
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache

import numpy as np

from ..isa.adder import work_plan
from ..isa.formats import F32
from ..isa.profiles import profile
from ..isa.qualifier import parse
from .plan import Plan

ENGINE_VARIABLE = "TCSIM_ENGINE"
ENGINES = ("auto", "numpy", "numba")
ROWS_PER_CALL = 256  # rows per call of the loop nest: progress is reported between calls
# One parallel call at a time: numba's "workqueue" threads (where no OpenMP or TBB is
# installed) abort the process when two Python threads enter them at once.
_PARALLEL = threading.Lock()


class EngineUnavailableError(ImportError, ValueError):
    """``TCSIM_ENGINE=numba`` was asked for and numba cannot be imported (an ImportError), or
    the variable holds a name that is no engine (a ValueError)."""


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether numba imports here (the compiled engine can run)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def engine() -> str:
    """The engine the chain runs on now: "numba" or "numpy" (from ``TCSIM_ENGINE``)."""
    asked = os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() or "auto"
    if asked not in ENGINES:
        raise EngineUnavailableError(
            f"{ENGINE_VARIABLE}={os.environ[ENGINE_VARIABLE]!r} names no engine; "
            f"use one of {', '.join(ENGINES)}")
    if asked == "numba" and not available():
        raise EngineUnavailableError(
            f"{ENGINE_VARIABLE}=numba, but numba is not installed: pip install 'tcsim[fast]' "
            f"(or pip install numba), or unset {ENGINE_VARIABLE}")
    if asked == "numpy" or not available():
        return "numpy"
    return "numba"


def runs(plan: Plan) -> bool:
    """Whether the chain of ``plan`` runs here (numba chosen, and the plan's steps covered)."""
    chosen = engine()  # first: a bad TCSIM_ENGINE is refused whatever the plan
    return chosen == "numba" and plan.engine == "mma" and covers(plan.instruction)


def covers(instruction: str) -> bool:
    """Whether this engine runs the steps of a plan's mma instruction (f32 accumulators of
    f16, bf16 or tf32 products, one fused addition per instruction)."""
    spec = parse(instruction)
    return (spec.input_type in ("f16", "bf16", "tf32") and spec.d_type == "f32"
            and spec.c_type == "f32" and spec.products_per_warp == 1)


def accumulate(plan: Plan, A: np.ndarray, B: np.ndarray, init: np.ndarray | None = None,
               progress=None) -> np.ndarray:
    """`tcsim.blas.chain.accumulate` for an "mma" plan that `covers`: each split range's f32
    results (ranges, M, N), every range a chain of ``plan.instruction`` steps from zero (the
    first from ``init`` when given). ``A`` (M, K) and ``B`` (K, N): bit patterns of the
    instruction's input format (already rounded as the plan says). ``progress``: called with
    each count of rows done. A batch (A (count, M, K), B (count, K, N), ``init`` (count, M,
    N)) gives (count, ranges, M, N): one loop nest runs every element's tiles."""
    from . import compiled_loops as loops  # imports numba: only once this engine runs

    single = A.ndim == 2  # else a batch: A (count, M, K), B (count, K, N), init (count, M, N)
    if single:
        A, B = A[None], B[None]
        init = None if init is None else np.broadcast_to(init, (A.shape[1], B.shape[2]))[None]
    spec = parse(plan.instruction)
    rule = profile("sm_90").check(spec)
    fmt = spec.format("a")
    group = min(rule.group_size, spec.k)  # one instruction is one fused step, never wider
    if spec.k % group or group % loops.UNROLL:
        raise ValueError(f"{plan.instruction}: steps of {group} products are not covered")
    work = work_plan(fmt, rule.fraction_bits, (spec.format("c"), spec.format("d")))
    # The choices `tcsim.isa.mma._Engine` makes: zeros bring an exponent of their own to the
    # alignment only where it can exceed a nonzero term's (bf16, tf32; not f16's products),
    # and a zero accumulator is then marked as zero, not aligned at f32's emin.
    zero = (rule.zero_exponent or {}).get(spec.d_type)
    zero_rule = zero is not None and zero > min(work.smallest_product_exponent, F32.emin)
    mark_zero_acc = zero is not None and (zero_rule or F32.emin > work.smallest_product_exponent)
    hi = rule.fraction_bits - work.smallest_product_exponent
    dtype = np.float32 if work.work == np.float32 else np.float64
    a = _Operand(fmt, A, -1, dtype, loops.ZERO)
    b = _Operand(fmt, B, -2, dtype, loops.ZERO)
    count, M, N = A.shape[0], A.shape[1], B.shape[2]
    ranges = plan.ranges(A.shape[2])
    out = np.empty((count, len(ranges), M, N), np.float32)
    start_acc = np.zeros((count, M, N), np.float32)
    if init is not None:
        start_acc[...] = np.broadcast_to(init, (count, M, N))
    # Each range's product positions in step order: K indices, -1 for the padding's zeros.
    positions = [plan.positions(s, e) for s, e in ranges]
    b_parts = [b.gathered(p) for p in positions]
    for s in range(0, M, ROWS_PER_CALL):
        rows = slice(s, min(M, s + ROWS_PER_CALL))
        for i, (p, (bv, eb, bo)) in enumerate(zip(positions, b_parts)):
            acc = start_acc[:, rows] if i == 0 else np.zeros_like(start_acc[:, rows])
            if p.size == 0:  # no steps: the accumulator as it started
                out[:, i, rows] = acc
                continue
            av, ea, ao = a.gathered(p, rows)
            specials = ao is not None or bo is not None or not np.isfinite(acc).all()
            if specials:  # the IEEE outcomes need both operands' exact values
                ao = a.exact(p, rows) if ao is None else ao
                bo = b.exact(p) if bo is None else bo
            else:
                ao = bo = np.zeros((count, 0, 0))
            bits = np.empty(acc.shape, np.int32)
            with _PARALLEL:
                loops.chain(av, ea, bv, eb, group, rule.fraction_bits, zero_rule,
                            np.float32(zero if zero_rule else 0), mark_zero_acc, hi, specials,
                            ao, bo, np.ascontiguousarray(acc).view(np.int32), bits)
            out[:, i, rows] = bits.view(np.float32)
        if progress is not None:
            progress((rows.stop - s) * (1 if single else count))
    return out[0] if single else out


def fp8_steps(a: np.ndarray, ea: np.ndarray, b: np.ndarray, eb: np.ndarray, group: int,
              rule, smallest_product_exponent: int, mask: int,
              promotion: int | None) -> np.ndarray:
    """The f32 results (M, N) of `tcsim.blas.chain._fp8_steps`'s loop: wgmma fp8 steps of
    ``group`` products from decoded operands, as that function decodes them: ``a`` (P, M) and
    ``b`` (P, N) exact float32 values (zeros, infinities and NaN as 0) in step order, ``ea``
    and ``eb`` their exponent fields (those as a sentinel far below every real exponent).
    ``rule``: the wgmma fp8 `AdderRule` (its fraction bits; the loops round as sm_90's does);
    ``smallest_product_exponent``: the lowest exponent-field sum of a nonzero product;
    ``mask``: the f32 bits the wgmma accumulator keeps; ``promotion``: steps between
    promotions to the f32 register sum (None: never)."""
    from . import compiled_loops as loops  # imports numba: only once this engine runs

    if (rule.output_rounding["f32"], rule.overflow["f32"], rule.subnormal_outputs,
            rule.negative_zero) != ("rz", "inf", True, False):
        raise ValueError(f"the compiled engine rounds as sm_90 does, not as {rule}")
    if group % loops.UNROLL:
        raise ValueError(f"steps of {group} products are not covered")
    F = rule.fraction_bits
    M, N = a.shape[1], b.shape[1]
    out = np.zeros((M, N), np.float32)
    if a.shape[0] == 0 or M == 0 or N == 0:
        return out
    loops.fp8_chain(np.ascontiguousarray(a.T), np.ascontiguousarray(ea.T, np.float32),
                    np.ascontiguousarray(b), np.ascontiguousarray(eb, np.float32), group,
                    F, F - smallest_product_exponent, np.uint32(mask).view(np.int32),
                    promotion or 0, out)
    return out


class _Operand:
    """One operand (a batch of them: a leading axis) as the loop nest reads it, K along
    ``axis`` (-1 for A, -2 for B): exact values
    (infinities and NaN read as 0) in the work dtype and exponent fields as the adder reads
    them (emin for subnormals; zeros, infinities and NaN at ``zero_mark``), as float32 (see
    the loops), gathered into step order with the padding's zeros."""

    def __init__(self, fmt, bits: np.ndarray, axis: int, dtype, zero_mark: int) -> None:
        finite = fmt.is_finite(bits)
        self.special = None if finite.all() else ~finite
        values = fmt.values(bits, dtype, self.special if self.special is not None else False)
        exponents = fmt.exponents(bits, np.int32).astype(np.float32)
        dropped = values == 0
        if self.special is not None:
            values[self.special] = 0
            dropped |= self.special
        exponents[dropped] = zero_mark
        # One more index along K for the padding: a zero.
        self.values = _padded(values, axis, 0)
        self.exponents = _padded(exponents, axis, zero_mark)
        self.fmt, self.bits, self.axis = fmt, bits, axis

    def gathered(self, positions: np.ndarray, rows: slice = slice(None)):
        """Values and exponents at ``positions`` along K (of ``rows`` across it) and, where
        that part holds an infinity or NaN, its exact float64 values (else None)."""
        exact = None
        if self.special is not None and self._cut(self.special, rows).any():
            exact = self.exact(positions, rows)
        return (self._take(self.values, positions, rows),
                self._take(self.exponents, positions, rows), exact)

    def exact(self, positions: np.ndarray, rows: slice = slice(None)) -> np.ndarray:
        """float64 values at ``positions`` along K, infinities and NaN as they are."""
        values = _padded(self.fmt.values(self._cut(self.bits, rows)), self.axis, 0)
        return self._take(values, positions)

    def _cut(self, x: np.ndarray, rows: slice) -> np.ndarray:
        return x[..., rows, :] if self.axis == -1 else x

    def _take(self, x: np.ndarray, positions: np.ndarray, rows: slice = slice(None)):
        return np.ascontiguousarray(np.take(self._cut(x, rows), positions, axis=self.axis))


def _padded(x: np.ndarray, axis: int, value) -> np.ndarray:
    """``x`` with one more index along ``axis`` that holds ``value`` (at position -1)."""
    shape = list(x.shape)
    shape[axis] = 1
    return np.concatenate([x, np.full(shape, value, x.dtype)], axis=axis)
