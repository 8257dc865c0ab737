"""Floating-point formats at the bit level: f16, bf16, tf32 and f32.

This module owns the encoding of every format the tensor cores read or write: splitting bit
patterns into sign, exponent and significand, exact values, and rounding an exact scaled
integer back to bits (to nearest even or toward zero, with subnormals and overflow). All of it is
vectorized over arrays of any shape and works in integers, so no step depends on float luck.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import ml_dtypes
import numpy as np

Rounding = Literal["rn", "rz"]
Overflow = Literal["ieee", "inf", "saturate"]


@dataclass(frozen=True)
class Decoded:
    """A format's bit patterns split into fields.

    A finite value is ``(-1)**sign * significand * 2**(exponent - fraction_bits)``, where
    ``exponent`` is the unbiased exponent the format's exponent field gives (``emin`` for zeros
    and subnormals, as the hardware's datapath sees them) and ``significand`` includes the
    implicit leading bit of normal numbers.
    """

    sign: np.ndarray  # bool
    exponent: np.ndarray  # int32
    significand: np.ndarray  # int64
    is_nan: np.ndarray  # bool
    is_inf: np.ndarray  # bool

    @property
    def is_zero(self) -> np.ndarray:
        return (self.significand == 0) & ~self.is_nan & ~self.is_inf


@dataclass(frozen=True, eq=False)
class FloatFormat:
    """A binary floating-point format as stored in a register slot.

    ``ignored_low_bits`` is for tf32: the value sits in an f32 container and the tensor core
    ignores the container's low 13 bits.
    """

    name: str
    exponent_bits: int
    fraction_bits: int
    storage_bits: int
    dtype: np.dtype
    ignored_low_bits: int = 0

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
        return self.bias

    @property
    def uint(self) -> type:
        return np.uint16 if self.storage_bits == 16 else np.uint32

    @property
    def _layout(self) -> tuple[int, int, int]:
        """(sign shift, exponent shift, fraction mask) within the storage word."""
        frac_shift = self.ignored_low_bits
        exp_shift = frac_shift + self.fraction_bits
        sign_shift = exp_shift + self.exponent_bits
        return sign_shift, exp_shift, (1 << self.fraction_bits) - 1

    def inf_bits(self, negative: bool = False) -> int:
        sign_shift, exp_shift, _ = self._layout
        return (int(negative) << sign_shift) | (((1 << self.exponent_bits) - 1) << exp_shift)

    def max_finite(self) -> float:
        return float(
            ((2 << self.fraction_bits) - 1) * 2.0 ** (self.emax - self.fraction_bits)
        )

    # ---- arrays <-> bit patterns -------------------------------------------------------------

    def to_bits(self, values: np.ndarray) -> np.ndarray:
        """Bit patterns of an array of this format's numpy dtype (tf32: float32, bits as given)."""
        values = np.asarray(values)
        if values.dtype != self.dtype:
            raise TypeError(
                f"{self.name} operand must have dtype {self.dtype.name}, got {values.dtype.name}"
            )
        return values.view(self.uint)

    def from_bits(self, bits: np.ndarray) -> np.ndarray:
        return np.asarray(bits).astype(self.uint, copy=False).view(self.dtype)

    # ---- decoding ----------------------------------------------------------------------------

    def decode(self, bits: np.ndarray) -> Decoded:
        b = np.asarray(bits).astype(np.int64)
        sign_shift, exp_shift, frac_mask = self._layout
        field = (b >> exp_shift) & ((1 << self.exponent_bits) - 1)
        frac = (b >> self.ignored_low_bits) & frac_mask
        top = (1 << self.exponent_bits) - 1
        normal = (field > 0) & (field < top)
        significand = np.where(normal, frac | (1 << self.fraction_bits), frac)
        significand = np.where(field == top, 0, significand)
        exponent = (np.maximum(field, 1) - self.bias).astype(np.int32)
        return Decoded(
            sign=((b >> sign_shift) & 1).astype(bool),
            exponent=exponent,
            significand=significand,
            is_nan=(field == top) & (frac != 0),
            is_inf=(field == top) & (frac == 0),
        )

    def values(self, bits: np.ndarray) -> np.ndarray:
        """Exact float64 values of bit patterns (every format here fits float64 exactly)."""
        b = np.asarray(bits)
        if self.ignored_low_bits:
            b = b & np.array(~((1 << self.ignored_low_bits) - 1) & 0xFFFFFFFF, dtype=b.dtype)
        with np.errstate(invalid="ignore"):  # NaN payloads convert to float64 NaN
            return self.from_bits(b).astype(np.float64)

    def exponents(self, bits: np.ndarray, dtype: type = np.int32) -> np.ndarray:
        """The exponent field as an unbiased exponent (``emin`` for zeros and subnormals)."""
        b = np.asarray(bits)
        _, exp_shift, _ = self._layout
        field = (b >> exp_shift) & ((1 << self.exponent_bits) - 1)
        return (np.maximum(field, 1).astype(dtype) - dtype(self.bias)).astype(dtype)

    def is_finite(self, bits: np.ndarray) -> np.ndarray:
        _, exp_shift, _ = self._layout
        top = (1 << self.exponent_bits) - 1
        return ((np.asarray(bits) >> exp_shift) & top) != top

    # ---- encoding ----------------------------------------------------------------------------

    def round(
        self,
        negative: np.ndarray,
        magnitude: np.ndarray,
        scale: np.ndarray,
        rounding: Rounding,
        overflow: Overflow = "ieee",
        subnormals: bool = True,
    ) -> np.ndarray:
        """Bits of ``(-1)**negative * magnitude * 2**scale`` rounded into this format.

        ``magnitude`` is a non-negative integer below 2**53; the value is exact, so there is
        exactly one rounding. ``overflow``: "ieee" (to nearest gives inf, toward zero gives the
        largest finite), "inf" (always inf) or "saturate" (always the largest finite).
        ``subnormals=False`` flushes results below the smallest normal to zero (after rounding).
        """
        mag = np.asarray(magnitude, dtype=np.int64)
        scale = np.asarray(scale, dtype=np.int64)
        if np.any(mag < 0) or np.any(mag >= 1 << 53):
            raise ValueError("round() takes magnitudes in [0, 2**53)")
        fb = self.fraction_bits
        # Bit length of an integer below 2**53 is exact through float64's exponent.
        bit_length = np.frexp(mag.astype(np.float64))[1].astype(np.int64)
        lead = bit_length - 1 + scale  # exponent of the leading bit
        quantum = np.maximum(lead, self.emin) - fb  # exponent of the last kept bit
        drop = quantum - scale  # low bits of `mag` that fall off (negative: exact widening)
        up = np.clip(-drop, 0, 62)
        down = np.clip(drop, 0, 62)
        kept = (mag << up) >> down
        if rounding == "rn":
            rest = mag & ((np.int64(1) << down) - 1)
            half = np.where(down > 0, np.int64(1) << np.maximum(down - 1, 0), 0)
            round_up = (down > 0) & ((rest > half) | ((rest == half) & (kept & 1 == 1)))
            kept = kept + round_up
        elif rounding != "rz":
            raise ValueError(f"unknown rounding {rounding!r}; expected 'rn' or 'rz'")
        # A carry out of the significand moves the exponent up by one.
        carry = kept >> (fb + 1)
        kept = kept >> carry
        quantum = quantum + carry
        normal = kept >= (1 << fb)
        field = np.where(normal, quantum + fb + self.bias, 0)
        frac = np.where(normal, kept - (1 << fb), kept)
        top = (1 << self.exponent_bits) - 1
        too_big = field >= top
        if overflow == "ieee":
            to_inf = too_big & (rounding == "rn")
        elif overflow == "inf":
            to_inf = too_big
        elif overflow == "saturate":
            to_inf = np.zeros_like(too_big)
        else:
            raise ValueError(f"unknown overflow rule {overflow!r}")
        field = np.where(too_big, np.where(to_inf, top, top - 1), field)
        frac = np.where(too_big, np.where(to_inf, 0, (1 << fb) - 1), frac)
        if not subnormals:
            frac = np.where(field == 0, 0, frac)
        sign_shift, exp_shift, _ = self._layout
        bits = (
            (np.asarray(negative, dtype=np.int64) << sign_shift)
            | (field << exp_shift)
            | (frac << self.ignored_low_bits)
        )
        return bits.astype(self.uint)


F16 = FloatFormat("f16", 5, 10, 16, np.dtype(np.float16))
BF16 = FloatFormat("bf16", 8, 7, 16, np.dtype(ml_dtypes.bfloat16))
TF32 = FloatFormat("tf32", 8, 10, 32, np.dtype(np.float32), ignored_low_bits=13)
F32 = FloatFormat("f32", 8, 23, 32, np.dtype(np.float32))

FORMATS: dict[str, FloatFormat] = {f.name: f for f in (F16, BF16, TF32, F32)}


def format_named(name: str) -> FloatFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(
            f"unknown float format {name!r}; tcsim knows {', '.join(FORMATS)}"
        ) from None
