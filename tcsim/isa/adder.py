"""The tensor core's fused multi-term adder, in exact arithmetic, vectorized.

One step adds G exact products and an accumulator term in a single operation: every term is
aligned to the largest exponent among them, truncated toward zero to ``fraction_bits`` bits
below that exponent, and the truncated terms are added exactly. This module owns that step
and the rules for infinities and NaN; `tcsim.isa.mma` chains steps and rounds the result.

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

from .formats import FloatFormat

# Exponent given to zero operands when zeros do not take part in alignment: far below any
# real exponent, so the max over terms ignores them.
ZERO_EXPONENT = -16000


@dataclass(frozen=True)
class WorkPlan:
    """Dtypes that make a step exact for one operand format and fraction width."""

    work: type  # float dtype products are formed in
    exponent: type  # int dtype of exponent sums
    smallest_product_exponent: int  # lowest ea + eb of a nonzero product


def work_plan(operand: FloatFormat, fraction_bits: int) -> WorkPlan:
    """Pick the narrowest float dtype in which the product terms are exact (see module doc)."""
    sig_bits = 2 * (operand.fraction_bits + 1)
    lowest = 2 * operand.emin  # exponent-field sum of two subnormals
    smallest = 2 * (operand.emin - operand.fraction_bits)  # smallest nonzero product
    largest = 2 * operand.emax + 2  # products are below 2**(2 emax + 2)
    f32 = np.finfo(np.float32)
    fits32 = (
        sig_bits <= f32.nmant + 1
        and smallest >= f32.minexp
        and largest <= f32.maxexp
        and fraction_bits - lowest < f32.maxexp  # largest inverse quantum
    )
    work = np.float32 if fits32 else np.float64
    assert sig_bits <= 53 and largest < 1000 and smallest > -1000
    return WorkPlan(work, np.int16, lowest)


def fused_step(
    products: np.ndarray,
    product_exponents: np.ndarray,
    acc_significand: np.ndarray,
    acc_exponent: np.ndarray,
    acc_fraction_bits: int,
    fraction_bits: int,
    plan: WorkPlan,
    zero_exponent: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """One fused addition of G products and an accumulator.

    ``products``: (G, ...) exact product values in ``plan.work``; ``product_exponents``: (G, ...)
    their exponents ea + eb (`ZERO_EXPONENT` marks a zero product when ``zero_exponent`` is
    set). The accumulator is ``acc_significand * 2**(acc_exponent - acc_fraction_bits)`` with a
    signed int64 significand. ``zero_exponent``: None when zeros align with their operands'
    exponent fields; otherwise the exponent a zero term brings to the alignment.

    Returns ``(total, emax)``: the exact sum is ``total * 2**(emax - fraction_bits)``.
    """
    if zero_exponent is None:
        emax = np.maximum(product_exponents.max(axis=0), acc_exponent).astype(np.int32)
    else:
        acc_zero = acc_significand == 0
        emax = np.maximum(
            product_exponents.max(axis=0), np.where(acc_zero, ZERO_EXPONENT, acc_exponent)
        ).astype(np.int32)
        has_zero = (product_exponents.min(axis=0) <= ZERO_EXPONENT // 2) | acc_zero
        emax = np.where(has_zero, np.maximum(emax, zero_exponent), emax)
    # Products are all zero when emax is below the smallest nonzero product's exponent, so the
    # scale may be clamped there; that keeps it finite in float32.
    scale_exp = fraction_bits - np.maximum(emax, plan.smallest_product_exponent)
    inv_quantum = np.ldexp(plan.work(1), scale_exp).astype(plan.work, copy=False)
    scaled = products * inv_quantum
    total = _sum_truncated(scaled, fraction_bits)
    total += _align_accumulator(
        acc_significand, acc_exponent, acc_fraction_bits, emax, fraction_bits
    )
    return total, emax


def _sum_truncated(scaled: np.ndarray, fraction_bits: int) -> np.ndarray:
    """Sum over axis 0 of the terms truncated toward zero, exactly, as int64."""
    groups = scaled.shape[0]
    # int32 holds up to 2**31 / 2**(F+2) terms; sum blocks of that many, then widen.
    block = max(1, min(groups, (1 << 31) // (1 << (fraction_bits + 2)) - 1))
    small = np.int32 if block >= 2 else np.int64
    ints = np.empty(scaled.shape, small)
    np.copyto(ints, scaled, casting="unsafe")  # float -> int truncates toward zero
    total = np.zeros(scaled.shape[1:], np.int64)
    for start in range(0, groups, block):
        part = ints[start]
        if block > 1:
            part = part.copy()
            for g in range(start + 1, min(start + block, groups)):
                part += ints[g]
        total += part
    return total


def _align_accumulator(sig, exp, fb, emax, fraction_bits) -> np.ndarray:
    """The accumulator term truncated toward zero to the step's quantum, in quanta."""
    shift = (emax - exp).astype(np.int64) + (fb - fraction_bits)
    mag = np.abs(sig)
    mag = (mag << np.clip(-shift, 0, 62)) >> np.clip(shift, 0, 62)
    return np.where(sig < 0, -mag, mag)


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
