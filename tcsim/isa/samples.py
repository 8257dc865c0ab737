"""Operand distributions chosen to break a wrong model of tensor-core arithmetic.

`draw(qualifier, name, count, rng)` returns bit-pattern matrices A (count, M, K), B (count, K, N)
and C (count, M, N) for an instruction. Each distribution aims at one part of the model:
normal values, the full exponent range with subnormals, heavy cancellation, an accumulator much
larger or much smaller than the products, zeros and tiny values (how zeros align), infinities
and NaNs, sums that overflow, operands in a narrow exponent window (carries), and uniformly
random bits (every pattern, NaN payloads included). tf32 operands get random low 13 bits, which
the hardware must ignore. Integer instructions have their own set (`distributions(spec)`):
uniform bits, extreme values, and accumulators at the edge of s32 where sums wrap or saturate.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .formats import FloatFormat
from .qualifier import MmaSpec, parse

Matrices = tuple[np.ndarray, np.ndarray, np.ndarray]


def to_bits(fmt: FloatFormat, x: np.ndarray) -> np.ndarray:
    """float64 values -> bit patterns, rounded to nearest (generation only: fp8 goes through
    ml_dtypes' cast from float32, which is fast but may round twice; any bits will do here)."""
    if fmt.storage_bits == 8:
        return fmt.to_bits(np.asarray(x, np.float32).astype(fmt.dtype))
    return fmt.round(np.asarray(x, np.float64), "rn")


def random_bits(fmt: FloatFormat, shape, rng, exponent_fields=None) -> np.ndarray:
    """Random sign and fraction; exponent fields uniform over finite values unless given."""
    top = (1 << fmt.exponent_bits) - 1
    field = rng.integers(0, top, shape) if exponent_fields is None else exponent_fields
    frac = rng.integers(0, 1 << fmt.fraction_bits, shape)
    sign = rng.integers(0, 2, shape)
    low = fmt.ignored_low_bits
    bits = (
        (sign << (low + fmt.fraction_bits + fmt.exponent_bits))
        | (field << (low + fmt.fraction_bits))
        | (frac << low)
    )
    if low:
        bits |= rng.integers(0, 1 << low, shape)
    return bits.astype(fmt.uint)


def _scatter_low_bits(fmt: FloatFormat, bits: np.ndarray, rng) -> np.ndarray:
    """tf32 containers carry random low bits the tensor core must ignore."""
    if fmt.ignored_low_bits:
        bits = bits | rng.integers(0, 1 << fmt.ignored_low_bits, bits.shape).astype(fmt.uint)
    return bits


def _values(spec: MmaSpec, count: int, rng, gen: Callable) -> Matrices:
    out = []
    for op in "abc":
        fmt = spec.format(op)
        x = gen(op, (count,) + spec.matrix_shape(op))
        out.append(_scatter_low_bits(fmt, to_bits(fmt, x), rng))
    return tuple(out)


def _normal(spec, count, rng) -> Matrices:
    return _values(spec, count, rng, lambda op, s: rng.standard_normal(s))


def _wide(spec, count, rng) -> Matrices:
    return tuple(random_bits(spec.format(op), (count,) + spec.matrix_shape(op), rng)
                 for op in "abc")


def _wide_finite(spec, count, rng) -> Matrices:
    """Random bits with exponents spread as far as the output type allows without overflow."""
    out_emax = spec.format("d").emax
    out = []
    for op in "abc":
        fmt = spec.format(op)
        shape = (count,) + spec.matrix_shape(op)
        hi = fmt.bias + (out_emax - 3 if op == "c" else (out_emax - 6) // 2)
        hi = min(hi, (1 << fmt.exponent_bits) - 2)
        out.append(random_bits(fmt, shape, rng, rng.integers(0, hi + 1, shape)))
    return tuple(out)


def _log_uniform(rng, shape, lo: float, hi: float) -> np.ndarray:
    sign = rng.choice([-1.0, 1.0], shape)
    return sign * np.exp2(rng.uniform(lo, hi, shape))


def _cancel(spec, count, rng) -> Matrices:
    """Products in +- pairs of nearly equal magnitude, C near minus their sum."""
    a = rng.standard_normal((count, spec.m, spec.k))
    b = rng.standard_normal((count, spec.k, spec.n))
    a[:, :, 1::2] = a[:, :, 0::2]
    fa, fb, fc = (spec.format(op) for op in "abc")
    nudge = rng.choice([-1, 0, 1], b[:, 0::2, :].shape) * 2.0 ** -fb.fraction_bits
    b[:, 1::2, :] = -b[:, 0::2, :] * (1 + nudge)
    A = to_bits(fa, a)
    B = to_bits(fb, b)
    exact = fa.values(A) @ fb.values(B)
    c = -exact + rng.standard_normal(exact.shape) * np.abs(exact) * 2.0 ** rng.integers(-30, 0)
    C = to_bits(fc, c)
    return tuple(_scatter_low_bits(f, x, rng) for f, x in ((fa, A), (fb, B), (fc, C)))


def _c_large(spec, count, rng) -> Matrices:
    shift = 30 if spec.c_type == "f32" else 10
    return _values(spec, count, rng, lambda op, s: rng.standard_normal(s) if op != "c"
                   else _log_uniform(rng, s, 2, shift))


def _c_small(spec, count, rng) -> Matrices:
    lo = -40 if spec.c_type == "f32" else -20
    return _values(spec, count, rng, lambda op, s: rng.standard_normal(s) if op != "c"
                   else _log_uniform(rng, s, lo, -2))


def _zeros_and_tiny(spec, count, rng) -> Matrices:
    """Many exact zeros among tiny and subnormal values: how do zeros align?"""
    fin = spec.format("a")

    def gen(op, s):
        if op == "c":  # about as small as the products
            x = _log_uniform(rng, s, 2 * (fin.emin - fin.fraction_bits), 2 * fin.emin + 6)
        else:
            x = _log_uniform(rng, s, fin.emin - fin.fraction_bits, fin.emin + 4)
        x = np.where(rng.random(s) < 0.1, _log_uniform(rng, s, -4, 4), x)
        return np.where(rng.random(s) < 0.3, 0.0, x)
    return _values(spec, count, rng, gen)


def _specials(spec, count, rng) -> Matrices:
    """Wide values with infinities, NaNs (random payloads, quiet and signaling) and zeros."""
    out = []
    for op in "abc":
        fmt = spec.format(op)
        shape = (count,) + spec.matrix_shape(op)
        bits = random_bits(fmt, shape, rng).astype(np.int64)
        pick = rng.random(shape)
        # e4m3 has no infinity: its "infinities" are its largest values, its NaN S.1111.111.
        inf = fmt.quiet_nan_bits() - 1 if fmt.nan_only else fmt.inf_bits()
        sign = (1 << (fmt.storage_bits - 1)) * rng.integers(0, 2, shape)
        payload = rng.integers(1, 1 << fmt.fraction_bits, shape) << fmt.ignored_low_bits
        bits = np.where(pick < 0.02, inf | sign, bits)
        bits = np.where((pick >= 0.02) & (pick < 0.03), inf | sign | payload, bits)
        bits = np.where((pick >= 0.03) & (pick < 0.08), sign, bits)
        out.append(bits.astype(fmt.uint))
    return tuple(out)


def _overflow(spec, count, rng) -> Matrices:
    """Products and accumulator near the output type's largest value, mostly of one sign."""
    fd = spec.format("d")
    top = fd.emax
    c_top = min(top, spec.format("c").emax)
    sign = rng.choice([-1.0, 1.0], (count, 1, 1))

    def gen(op, s):
        if op == "c":
            return sign * np.exp2(rng.uniform(c_top - 3, c_top + 0.99, s))
        half = (top - 2) / 2
        fin = spec.format(op)
        return (sign if op == "a" else 1.0) * np.exp2(
            np.minimum(rng.uniform(half - 2, half + 1, s), fin.emax))
    return _values(spec, count, rng, gen)


def _narrow(spec, count, rng) -> Matrices:
    """All values in [1, 4): many equal exponents, long carry chains."""
    return _values(spec, count, rng,
                   lambda op, s: rng.choice([-1.0, 1.0], s) * rng.uniform(1, 4, s))


def _uniform_bits(spec, count, rng) -> Matrices:
    """Every bit pattern equally likely: NaN payloads, infinities, subnormals, -0."""
    out = []
    for op in "abc":
        fmt = spec.format(op)
        shape = (count,) + spec.matrix_shape(op)
        out.append(rng.integers(0, 1 << fmt.storage_bits, shape, dtype=np.uint64)
                   .astype(fmt.uint))
    return tuple(out)


def _int_extremes(spec, count, rng) -> Matrices:
    """Integer operands at their extremes (-128, 127, 255, 0, +-1) and C anywhere."""
    out = []
    for op in "ab":
        fmt = spec.format(op)
        info = np.iinfo(fmt.dtype)
        picks = np.array(sorted({info.min, info.max, 0, 1, info.min + 1, info.max - 1}
                                | ({-1} if fmt.signed else set())), np.int64)
        x = rng.choice(picks, (count,) + spec.matrix_shape(op))
        out.append(x.astype(fmt.dtype).view(fmt.uint))
    c = rng.integers(-(2**31), 2**31, (count, spec.m, spec.n))
    return out[0], out[1], c.astype(np.int32).view(np.uint32)


def _int_edge(spec, count, rng) -> Matrices:
    """C within a few million of s32's limits, so that C + A @ B wraps (or saturates)."""
    a, b, _ = _uniform_bits(spec, count, rng)
    shape = (count, spec.m, spec.n)
    near = rng.integers(0, 1 << 22, shape)
    c = np.where(rng.random(shape) < 0.5, 2**31 - 1 - near, -(2**31) + near)
    return a, b, c.astype(np.int32).view(np.uint32)


DISTRIBUTIONS: dict[str, Callable[[MmaSpec, int, np.random.Generator], Matrices]] = {
    "normal": _normal,
    "wide": _wide,
    "wide_finite": _wide_finite,
    "cancel": _cancel,
    "c_large": _c_large,
    "c_small": _c_small,
    "zeros_tiny": _zeros_and_tiny,
    "specials": _specials,
    "overflow": _overflow,
    "narrow": _narrow,
    "uniform_bits": _uniform_bits,
}
INTEGER_DISTRIBUTIONS: dict[str, Callable[[MmaSpec, int, np.random.Generator], Matrices]] = {
    "uniform_bits": _uniform_bits,
    "extremes": _int_extremes,
    "s32_edge": _int_edge,
}


def distributions(qualifier: str | MmaSpec) -> dict[str, Callable]:
    """The distributions that make sense for an instruction's operand types."""
    spec = parse(qualifier) if isinstance(qualifier, str) else qualifier
    return INTEGER_DISTRIBUTIONS if spec.integer else DISTRIBUTIONS


def draw(qualifier: str | MmaSpec, distribution: str, count: int,
         rng: np.random.Generator) -> Matrices:
    """Bit-pattern matrices (A, B, C) for ``count`` instructions from a named distribution.

    For m8n8k4 one instruction is a warp's four quad-pair products, stacked as the fragment
    maps stack them: A (count, 32, 4), B (count, 16, 8), C (count, 32, 8).
    """
    spec = parse(qualifier) if isinstance(qualifier, str) else qualifier
    known = distributions(spec)
    try:
        gen = known[distribution]
    except KeyError:
        raise ValueError(
            f"unknown distribution {distribution!r} for {spec.qualifier}; choose from "
            f"{', '.join(known)}"
        ) from None
    per = spec.products_per_warp
    mats = gen(spec, count * per, rng)
    return tuple(m.reshape((count, per * m.shape[-2], m.shape[-1])) for m in mats)
