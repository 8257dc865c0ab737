"""The tensor core's fused multi-term adder, in exact arithmetic, vectorized.

One step adds G exact products and an accumulator term in a single operation: every term is
aligned to the largest exponent among them, truncated toward zero to ``fraction_bits`` bits
below that exponent, and the truncated terms are added exactly. This module owns that step
and the rules for infinities and NaN; `tcsim.isa.engine` chains steps and rounds the result.

Exactness. A step works on integers: each truncated term is an integer multiple of the
quantum ``2**(emax - fraction_bits)`` and the sum is an int64 count of quanta. Product terms are
formed by multiplying exact operand values in a float "work" dtype, scaling by the inverse
quantum (a power of two) and converting to an integer, which truncates toward zero. That is
exact because a product has at most 22 significant bits (11 x 11 for f16 and tf32, 8 x 8 for
bf16), the work dtype is chosen by `work_dtype` so that every nonzero product and every scale
is a normal number in it, and a scaled term is below ``2**(fraction_bits + 2)``. A value that
underflows only when it is below one quantum truncates to zero either way. The accumulator term
is aligned with integer shifts of its significand. Layout: the batch is the last (contiguous)
axis, so every numpy loop runs over long vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .formats import FloatFormat, at_most


@dataclass(frozen=True)
class WorkPlan:
    """Dtypes that make a step exact and fast for one operand format and fraction width."""

    work: type  # float dtype products are formed in
    exponent: type  # int dtype of operand exponent fields and their pairwise sums
    zero_sentinel: int  # exponent given to zero operands so that the max ignores them
    smallest_product_exponent: int  # lowest ea + eb of a nonzero product

    def is_zero(self, exponents: np.ndarray) -> np.ndarray:
        return exponents == self.zero_sentinel

    @property
    def accumulator_zero(self) -> int:
        """Exponent given to zero accumulators: below every product's, so the max ignores it."""
        return int(np.iinfo(self.exponent).min)


def work_plan(
    operand: FloatFormat, fraction_bits: int, accumulators: tuple[FloatFormat, ...]
) -> WorkPlan:
    """Pick the narrowest dtypes in which a step is exact (see module doc).

    ``accumulators``: the formats the accumulator term can have (C's and D's). Operand
    exponents, their pairwise sums and the accumulators' exponents share the narrowest int
    dtype that holds them: int8 for f16 products (twice as fast as int16), whose sums lie in
    [-28, 30], even with f32 accumulators (an f32 exponent field minus its bias fits int8, but
    for the all-ones field of infinities and NaNs, whose outputs are patched anyway).
    """
    sig_bits = 2 * (operand.fraction_bits + 1)
    lowest = 2 * operand.emin  # exponent-field sum of two subnormals
    smallest = 2 * (operand.emin - operand.fraction_bits)  # smallest nonzero product
    largest = 2 * operand.emax + 2  # products are below 2**(2 emax + 2)
    highest_term = max([2 * operand.emax] + [acc.emax for acc in accumulators])
    f32 = np.finfo(np.float32)
    fits32 = (
        sig_bits <= f32.nmant + 1
        and smallest >= f32.minexp
        and largest <= f32.maxexp
        and fraction_bits - lowest < f32.maxexp  # largest inverse quantum
    )
    work = np.float32 if fits32 else np.float64
    assert sig_bits <= 53 and largest < 1000 and smallest > -1000
    # The smallest inverse quantum is a normal number, so `_power_of_two` needs no lower clamp.
    assert fraction_bits - highest_term >= np.finfo(work).minexp
    # The sentinel must stay below every real product exponent, even with the largest exponent
    # on the other factor, and twice it must not wrap around.
    for exponent in (np.int8, np.int16):
        info = np.iinfo(exponent)
        sentinel = info.min // 2 + 4
        fits = (2 * operand.emax <= info.max
                and all(info.min < acc.emin and acc.emax <= info.max for acc in accumulators))
        if fits and sentinel + operand.emax < lowest:
            return WorkPlan(work, exponent, sentinel, lowest)
    raise AssertionError(f"no exponent dtype fits {operand.name}")


def fused_step(
    a: np.ndarray,
    a_exponent: np.ndarray,
    b: np.ndarray,
    b_exponent: np.ndarray,
    acc: np.ndarray,
    acc_exponent: np.ndarray,
    fraction_bits: int,
    plan: WorkPlan,
    zero_exponent: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """One fused addition of the G products ``a[g] * b[g]`` and an accumulator.

    ``a`` (G, ...) and ``b`` (G, ...) hold exact values in ``plan.work`` with their exponent
    fields ``a_exponent``, ``b_exponent`` (``plan.exponent``, zeros at ``plan.zero_sentinel``);
    each ``a[g]`` and ``b[g]`` broadcast together to the shape of the outputs, so the caller
    picks the memory order (batch-last ``a[:, :, None, :]`` with ``b[:, None, :, :]`` for many
    small instructions, batch-first rows and columns for wide ones). ``acc`` has the outputs'
    shape: exact float32 values with exponent fields ``acc_exponent`` (``plan.exponent``, zeros
    at ``plan.accumulator_zero``). When
    ``zero_exponent`` is set, any zero term brings ``zero_exponent`` to the alignment (callers
    pass None when that floor can never exceed a nonzero term's exponent); otherwise zeros drop
    out of it.

    Returns ``(total, emax)`` in the outputs' shape: the exact sum is
    ``total * 2**(emax - fraction_bits)``.
    """
    # emax[m, n] = max over g of a_exponent[g, m] + b_exponent[g, n], and the accumulator's.
    products = np.add(a_exponent[0], b_exponent[0])
    pair = np.empty_like(products)
    for g in range(1, a.shape[0]):
        np.add(a_exponent[g], b_exponent[g], out=pair)
        np.maximum(products, pair, out=products)
    # A pair with a zero factor sums to at most zero_sentinel + the largest exponent field,
    # below every real product but not below every accumulator (f32 C reaches -149): a max
    # below the smallest real product means all G products are zero, and then only the
    # accumulator (and the zero floor) may set the alignment.
    only_zeros = products < plan.smallest_product_exponent
    emax = np.maximum(acc_exponent, products, out=products)
    if only_zeros.any():
        np.copyto(emax, np.broadcast_to(acc_exponent, emax.shape), where=only_zeros)
    emax = emax.astype(np.int32)
    if zero_exponent is not None:
        # A zero product needs a zero factor, so "any zero term" separates into rows,
        # columns and the accumulator.
        has_zero = (
            plan.is_zero(a_exponent).any(axis=0)
            | plan.is_zero(b_exponent).any(axis=0)
            | (acc_exponent == plan.accumulator_zero)
        )
        np.maximum(emax, zero_exponent, out=emax, where=has_zero)
    # The accumulator has at most 24 significant bits and its scaled value is below 2**(F + 1),
    # so np.ldexp is exact in float32 (what underflows is below 1 and truncates to 0); the
    # cast to an integer truncates toward zero.
    inverse_quantum = fraction_bits - emax  # exponent of 1 / 2**(emax - F)
    acc_term = np.ldexp(acc, inverse_quantum).astype(np.int32)
    # Products are all zero when emax is below the smallest nonzero product's exponent, so
    # their scale may be clamped there.
    scale = _power_of_two(inverse_quantum, fraction_bits - plan.smallest_product_exponent,
                          plan.work)
    return _sum_truncated_products(a, b, scale, fraction_bits, acc_term), emax


def _power_of_two(exponent: np.ndarray, highest: int, dtype: type) -> np.ndarray:
    """``2.0**min(exponent, highest)`` in a float dtype, built from bits.

    `work_plan` keeps every such power a normal number of the dtype.
    """
    info = np.finfo(dtype)
    bias = info.maxexp - 1
    biased = exponent + bias
    at_most(biased, highest + bias, out=biased)
    if dtype == np.float32:
        return np.left_shift(biased, 23, out=biased).view(np.float32)
    return (biased.astype(np.uint64) << np.uint64(info.nmant)).view(dtype)


def _sum_truncated_products(a, b, scale, fraction_bits, acc_term) -> np.ndarray:
    """acc_term + sum over g of trunc(a[g] * b[g] * scale), exactly, as ints (outputs' shape).

    ``scale`` is a power of two in a's dtype, per output element.

    One product slice at a time, so the working set stays in cache. A term is below
    2**(F + 2) and the accumulator term below 2**(F + 1); the sum stays in int32 when that
    bound allows, otherwise int32 partial sums are widened to int64.
    """
    groups = a.shape[0]
    term_bound = 1 << (fraction_bits + 2)
    term = np.empty(scale.shape, a.dtype)
    if a.dtype == np.float32 and (groups + 1) * term_bound <= 1 << 24:
        # Narrow sums (fp8): every partial sum is an integer below 2**24, exact in float32,
        # and truncating in float32 is faster than a converting add.
        part = acc_term.astype(np.float32)
        for g in range(groups):
            np.multiply(a[g], b[g], out=term)
            term *= scale
            np.trunc(term, out=term)
            part += term
        return part.astype(np.int32)
    block = max(1, ((1 << 31) - term_bound // 2) // term_bound)
    part = acc_term
    total = part if groups <= block else np.zeros(scale.shape, np.int64)
    for g in range(groups):
        np.multiply(a[g], b[g], out=term)
        term *= scale  # exact: a power of two, and no scaled product is subnormal unless < 1
        # The cast to int32 truncates toward zero.
        np.add(part, term, out=part, dtype=np.int32, casting="unsafe")
        if total is not part and ((g + 1) % block == 0 or g + 1 == groups):
            total += part
            part[...] = 0
    return total


def special_step(
    a: np.ndarray, b: np.ndarray, acc: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """IEEE outcome of a step whose inputs include an infinity or NaN.

    ``a``: (G, M, n), ``b``: (G, N, n), ``acc``: (M, N, n) as float64 values. Returns
    ``(is_nan, negative)`` of the result, which is NaN when any input is NaN, a product is
    inf * 0, or infinities of both signs meet, and otherwise an infinity of the infinities' sign.
    Finite parts cannot matter: they cannot reach infinity in float64.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        total = (a[:, :, None, :] * b[:, None, :, :]).sum(axis=0) + acc
    return np.isnan(total), total < 0
