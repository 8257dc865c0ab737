"""Number formats at the bit level: f16, bf16, tf32, f32, the fp8 formats e4m3 and e5m2, and the
integers s8, u8 and s32.

This module owns the encoding of every format the tensor cores read or write: exponent fields,
exact values of bit patterns, and rounding exact values back to bits (to nearest even or toward
zero, with subnormals and overflow). All of it is vectorized over arrays of any shape; rounding
works on the integer bit patterns, so no step depends on float luck.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import ml_dtypes
import numpy as np

Rounding = Literal["rn", "rz"]
Overflow = Literal["ieee", "inf", "saturate"]


def native_order(values: np.ndarray) -> np.ndarray:
    """``values`` in this machine's byte order: big-endian input (``'>f2'``) holds the same
    numbers, which the registers (little-endian) hold as bits. A copy only when it is not."""
    return values if values.dtype.isnative else values.astype(values.dtype.newbyteorder("="))


def same_type(dtype: np.dtype, wanted: np.dtype) -> bool:
    """Whether ``dtype`` is ``wanted`` in either byte order."""
    return dtype.newbyteorder("=") == wanted


class _Stored:
    """How a format's values sit in a register slot: its numpy dtype and unsigned storage type.

    Needs ``name``, ``storage_bits`` and ``dtype``.
    """

    @property
    def uint(self) -> type:
        return _UINT[self.storage_bits]

    def to_bits(self, values: np.ndarray) -> np.ndarray:
        """Bit patterns of an array of this format's numpy dtype (tf32: float32, bits as given)."""
        values = np.asarray(values)
        if not same_type(values.dtype, self.dtype):
            raise TypeError(
                f"{self.name} operand must have dtype {self.dtype.name}, got {values.dtype.name}"
            )
        return native_order(values).view(self.uint)

    def from_bits(self, bits: np.ndarray) -> np.ndarray:
        return np.asarray(bits).astype(self.uint, copy=False).view(self.dtype)


@dataclass(frozen=True, eq=False)
class FloatFormat(_Stored):
    """A binary floating-point format as stored in a register slot.

    ``ignored_low_bits`` is for tf32: the value sits in an f32 container and the tensor core
    ignores the container's low 13 bits. ``nan_only`` is for e4m3 (OCP's E4M3, ml_dtypes'
    float8_e4m3fn): it has no infinity, the all-ones exponent field holds finite numbers, and
    only S.1111.111 is NaN.
    """

    name: str
    exponent_bits: int
    fraction_bits: int
    storage_bits: int
    dtype: np.dtype
    ignored_low_bits: int = 0
    nan_only: bool = False

    def __repr__(self) -> str:
        return f"FloatFormat({self.name})"

    @property
    def bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number (and the exponent subnormals are read with)."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        return self.bias + int(self.nan_only)

    @property
    def _layout(self) -> tuple[int, int, int]:
        """(sign shift, exponent shift, fraction mask) within the storage word."""
        frac_shift = self.ignored_low_bits
        exp_shift = frac_shift + self.fraction_bits
        sign_shift = exp_shift + self.exponent_bits
        return sign_shift, exp_shift, (1 << self.fraction_bits) - 1

    def inf_bits(self, negative: bool = False) -> int:
        if self.nan_only:
            raise ValueError(f"{self.name} has no infinity")
        sign_shift, exp_shift, _ = self._layout
        return (int(negative) << sign_shift) | (((1 << self.exponent_bits) - 1) << exp_shift)

    def quiet_nan_bits(self) -> int:
        sign_shift, exp_shift, _ = self._layout
        if self.nan_only:
            return (1 << sign_shift) - 1
        return self.inf_bits() | (1 << (exp_shift - 1))

    def max_finite(self) -> float:
        # e4m3: the all-ones significand of the top binade is NaN, so one step below it.
        top = (2 << self.fraction_bits) - 1 - int(self.nan_only)
        return float(top * 2.0 ** (self.emax - self.fraction_bits))

    # ---- decoding ----------------------------------------------------------------------------

    def values(self, bits: np.ndarray, dtype: type = np.float64,
               special: np.ndarray | bool | None = None) -> np.ndarray:
        """Exact values of bit patterns as ``dtype`` (float64 holds every format here exactly).

        ``special``: the mask of infinities and NaNs when the caller already has it, or False
        when the caller knows there are none.
        """
        b = np.asarray(bits)
        with np.errstate(invalid="ignore"):  # NaN payloads convert to NaN
            if self.name == "f16":
                if special is None:
                    special = ~self.is_finite(b)
                return _f16_values(b, special).astype(dtype, copy=False)
            if self.name == "bf16":  # bf16 is the top half of an f32
                return (b.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(dtype)
            if self.storage_bits == 8:  # ml_dtypes' fp8 casts are exact
                return self.from_bits(b).astype(dtype)
            if self.ignored_low_bits:
                b = b & b.dtype.type(~((1 << self.ignored_low_bits) - 1) & 0xFFFFFFFF)
            return self.from_bits(b).astype(dtype, copy=False)

    def exponent_field(self, bits: np.ndarray) -> np.ndarray:
        """The raw biased exponent field, in the storage's unsigned type."""
        b = np.asarray(bits)
        _, exp_shift, _ = self._layout
        return (b >> b.dtype.type(exp_shift)) & b.dtype.type((1 << self.exponent_bits) - 1)

    def exponents(self, bits: np.ndarray, dtype: type = np.int32) -> np.ndarray:
        """The exponent field as an unbiased exponent (``emin`` for zeros and subnormals)."""
        field = at_least(self.exponent_field(bits), 1)
        return field.astype(dtype) - dtype(self.bias)

    def is_finite(self, bits: np.ndarray) -> np.ndarray:
        if self.nan_only:
            nan = self.quiet_nan_bits()
            return (np.asarray(bits) & np.asarray(bits).dtype.type(nan)) != nan
        return self.exponent_field(bits) != (1 << self.exponent_bits) - 1

    # ---- encoding ----------------------------------------------------------------------------

    def _round_fast(self, x, rounding, overflow, subnormals) -> np.ndarray | None:
        """The common cases through a cast that implements exactly the same rounding, or None.

        numpy's float64 -> float16 and -> float32 casts round to nearest even with gradual
        underflow and overflow to inf (ml_dtypes' bfloat16 cast does not: it rounds twice, via
        float32). Toward zero into f32 is a mask of the low 29 significand bits whenever no
        value lands below f32's normal range.
        """
        if not subnormals or self.ignored_low_bits:
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            if rounding == "rn" and overflow in ("ieee", "inf") and self.name in ("f16", "f32"):
                bits = self.to_bits(x.astype(self.dtype))
            elif rounding == "rz" and overflow == "inf" and self.name == "f32":
                u = x.view(np.uint64)
                # Nonzero magnitudes below 2**-126 (f32's subnormal range) take the general
                # path: shifting out the sign and subtracting one sends zeros to the top.
                smallest_normal = np.uint64(1023 - 126) << np.uint64(53)
                if np.any((u << np.uint64(1)) - np.uint64(1) < smallest_normal - np.uint64(1)):
                    return None
                truncated = (u & np.uint64(0xFFFF_FFFF_E000_0000)).view(np.float64)
                bits = self.to_bits(truncated.astype(np.float32))
            else:
                return None
        nan = np.isnan(x)
        if nan.any():
            bits = np.where(nan, self.uint(self.quiet_nan_bits()), bits)
        return bits

    def round_scaled(
        self,
        total: np.ndarray,
        exponent: np.ndarray,
        rounding: Rounding = "rn",
        overflow: Overflow = "ieee",
        subnormals: bool = True,
        negative_zero: bool = True,
    ) -> np.ndarray:
        """Bit patterns of ``total * 2**exponent`` rounded once, as `round` rounds it.

        ``total``: integers below 2**53 in magnitude; ``exponent``: an int32 array.
        ``negative_zero=False``: results that round to -0 are written as +0.
        """
        if self.name == "f32" and rounding == "rz" and overflow == "inf" and (
            exponent.size == 0 or exponent.min() >= self.emin
        ):
            # Every nonzero result is then at least 2**emin, a normal number or beyond: toward
            # zero is keeping the integer's top 24 significant bits, and scaling that in
            # float32 is exact (or overflows to inf, as the rule says). Only a zero total gives
            # a zero, and it is +0.
            x = total.astype(np.float64)
            x.view(np.uint64)[...] &= np.uint64(0xFFFF_FFFF_E000_0000)
            y = x.astype(np.float32)
            with np.errstate(over="ignore"):
                np.ldexp(y, exponent, out=y)
            return y.view(np.uint32)
        # |total| < 2**53 and the scale keeps it a normal float64, so this is exact.
        exact = np.ldexp(total.astype(np.float64), exponent)
        bits = self.round(exact, rounding, overflow, subnormals)
        if not negative_zero:
            bits[bits == self.uint(1 << (self.storage_bits - 1))] = 0
        return bits

    def round(
        self,
        x: np.ndarray,
        rounding: Rounding = "rn",
        overflow: Overflow = "ieee",
        subnormals: bool = True,
    ) -> np.ndarray:
        """Bit patterns of float64 values rounded once into this format.

        Rounding works on the integer bit pattern of each float64, so it is exact for any
        float64 input; callers that round an exact sum first make it a float64 exactly (an
        integer below 2**53 times a power of two in range). ``rounding``: "rn" (to nearest
        even) or "rz" (toward zero). ``overflow``: "ieee" (to nearest gives inf, toward zero
        the largest finite), "inf" or "saturate". ``subnormals=False`` flushes results below
        the smallest normal number to zero. Infinities stay infinite; NaN inputs give the format's
        default quiet NaN.
        """
        if rounding not in ("rn", "rz"):
            raise ValueError(f"unknown rounding {rounding!r}; expected 'rn' or 'rz'")
        if overflow not in ("ieee", "inf", "saturate"):
            raise ValueError(f"unknown overflow rule {overflow!r}")
        x = np.asarray(x, np.float64)
        fast = self._round_fast(x, rounding, overflow, subnormals)
        if fast is not None:
            return fast
        u = x.view(np.uint64)
        negative = (u >> np.uint64(63)).astype(bool)
        u = u & np.uint64(0x7FFF_FFFF_FFFF_FFFF)
        exponent = (u >> np.uint64(52)).astype(np.int64) - 1023
        # Low bits of the float64 significand that fall below this format's last place.
        drop = 52 - self.fraction_bits + np.maximum(self.emin - exponent, 0)
        inside = drop <= 52  # otherwise the value is below one unit in the last place
        d = np.minimum(drop, 52).astype(np.uint64)
        mask = (np.uint64(1) << d) - np.uint64(1)
        if rounding == "rn":
            half = mask >> np.uint64(1)
            # The last kept bit; at d == 52 only the implicit leading 1 is kept.
            lsb = np.where(d == 52, np.uint64(1), (u >> d) & np.uint64(1))
            # A carry out of the significand correctly bumps the exponent field.
            r = (u + half + lsb) & ~mask
            # drop == 53: the value is in [ulp/2, ulp); above the tie it rounds up to one ulp.
            ulp = np.float64(2.0 ** (self.emin - self.fraction_bits)).view(np.uint64)
            tie = np.float64(2.0 ** (self.emin - self.fraction_bits - 1)).view(np.uint64)
            r = np.where(inside, r, np.where((drop == 53) & (u > tie), ulp, np.uint64(0)))
        else:
            r = np.where(inside, u & ~mask, np.uint64(0))
        value = r.view(np.float64)
        finite = np.isfinite(np.asarray(x, np.float64))
        too_big = finite & (value > self.max_finite())
        if overflow == "saturate" or (overflow == "ieee" and rounding == "rz"):
            value = np.where(too_big, self.max_finite(), value)
        else:  # e4m3 has no infinity: its overflow (and an infinite input) is NaN
            value = np.where(too_big, np.nan if self.nan_only else np.inf, value)
        if self.nan_only:
            value = np.where(np.isinf(np.asarray(x, np.float64)), np.nan, value)
        if not subnormals:
            value = np.where(value < 2.0 ** self.emin, 0.0, value)
        with np.errstate(over="ignore", invalid="ignore"):
            bits = self.to_bits(np.where(negative, -value, value).astype(self.dtype))
        bits = np.where(np.isnan(np.asarray(x, np.float64)), self.uint(self.quiet_nan_bits()), bits)
        if self.ignored_low_bits:
            bits = bits & self.uint(~((1 << self.ignored_low_bits) - 1) & 0xFFFFFFFF)
        return bits


def at_least(x: np.ndarray, low: int, out: np.ndarray | None = None) -> np.ndarray:
    """``np.maximum(x, low)`` for an integer array, several times faster.

    numpy's integer maximum against a scalar runs element by element; against a row broadcast
    over the leading axes it runs its vectorized loop.
    """
    return np.maximum(x, _row(x, low), out=out)


def at_most(x: np.ndarray, high: int, out: np.ndarray | None = None) -> np.ndarray:
    """``np.minimum(x, high)`` for an integer array, the fast way `at_least` takes."""
    return np.minimum(x, _row(x, high), out=out)


def _row(x: np.ndarray, value: int) -> np.ndarray:
    return np.full(x.shape[-1:], value, x.dtype)


def _f16_values(h: np.ndarray, special: np.ndarray | bool) -> np.ndarray:
    """f16 bits -> exact float32 values, much faster than numpy's element-by-element cast.

    The f16 word, sign-extended to int32 and shifted left by 13, has the exponent and fraction
    in f32's fields and copies of the sign in bits 31..28 (the three lower copies are masked
    off); the result times 2**112 (the difference of the biases) is the value, subnormals
    included. Infinities and NaNs (``special``) are patched from numpy's cast.
    """
    w = h.view(np.int16).astype(np.int32)
    w <<= np.int32(13)
    w &= np.int32(-0x70000001)  # clear bits 30..28
    out = w.view(np.float32)
    out *= np.float32(2.0**112)
    if special is not False and special.any():
        out[special] = h[special].view(np.float16).astype(np.float32)
    return out


_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32}

F16 = FloatFormat("f16", 5, 10, 16, np.dtype(np.float16))
BF16 = FloatFormat("bf16", 8, 7, 16, np.dtype(ml_dtypes.bfloat16))
TF32 = FloatFormat("tf32", 8, 10, 32, np.dtype(np.float32), ignored_low_bits=13)
F32 = FloatFormat("f32", 8, 23, 32, np.dtype(np.float32))
E4M3 = FloatFormat("e4m3", 4, 3, 8, np.dtype(ml_dtypes.float8_e4m3fn), nan_only=True)
E5M2 = FloatFormat("e5m2", 5, 2, 8, np.dtype(ml_dtypes.float8_e5m2))


@dataclass(frozen=True, eq=False)
class IntFormat(_Stored):
    """A two's-complement or unsigned integer as stored in a register slot (s8, u8, s32)."""

    name: str
    storage_bits: int
    dtype: np.dtype

    def __repr__(self) -> str:
        return f"IntFormat({self.name})"

    @property
    def signed(self) -> bool:
        return self.dtype.kind == "i"

    def values(self, bits: np.ndarray, dtype: type = np.int64) -> np.ndarray:
        return self.from_bits(bits).astype(dtype)


S8 = IntFormat("s8", 8, np.dtype(np.int8))
U8 = IntFormat("u8", 8, np.dtype(np.uint8))
S32 = IntFormat("s32", 32, np.dtype(np.int32))

FORMATS: dict[str, FloatFormat | IntFormat] = {
    f.name: f for f in (F16, BF16, TF32, F32, E4M3, E5M2, S8, U8, S32)
}


def format_named(name: str) -> FloatFormat | IntFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(
            f"unknown float format {name!r}; tcsim knows {', '.join(FORMATS)}"
        ) from None
