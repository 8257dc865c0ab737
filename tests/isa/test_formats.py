"""Bit-level formats: decoding every pattern, and rounding against exact rational arithmetic."""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from oracle import encode

from tcsim.isa.formats import BF16, F16, F32, TF32

ALL16 = np.arange(1 << 16, dtype=np.uint16)
# Widening signaling NaNs raises numpy's "invalid value" warning; that is expected here.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered")


@pytest.mark.parametrize("fmt, dtype", [(F16, np.float16), (BF16, ml_dtypes.bfloat16)])
def test_values_of_every_16_bit_pattern(fmt, dtype):
    got = fmt.values(ALL16)
    want = ALL16.view(dtype).astype(np.float64)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint64), want[~nan].view(np.uint64))  # signed zeros


@pytest.mark.parametrize("fmt", [F16, BF16])
def test_exponent_fields_of_every_16_bit_pattern(fmt):
    finite = fmt.is_finite(ALL16)
    v = np.abs(ALL16.view(fmt.dtype).astype(np.float64))[finite]
    normal = v >= 2.0 ** fmt.emin
    want = np.where(normal, np.floor(np.log2(np.where(normal, v, 1.0))), fmt.emin)
    assert np.array_equal(fmt.exponents(ALL16)[finite], want)
    values = ALL16.view(fmt.dtype)
    assert np.array_equal(~finite, np.isinf(values) | np.isnan(values))


def test_tf32_ignores_low_13_bits(rng):
    bits = rng.integers(0, 1 << 32, 10000, dtype=np.uint64).astype(np.uint32)
    bits = bits[F32.is_finite(bits)]
    assert np.array_equal(TF32.values(bits), F32.values(bits & np.uint32(0xFFFFE000)))


def _tricky_values(rng, fmt, n=4000):
    """Values around the format's grid: ties, just off ties, subnormals, overflow edges."""
    exps = rng.integers(fmt.emin - fmt.fraction_bits - 3, fmt.emax + 2, n)
    sig = rng.integers(1 << 20, 1 << 21, n).astype(np.float64)
    x = np.ldexp(sig, exps - 20)
    quantum = np.ldexp(1.0, np.maximum(exps, fmt.emin) - fmt.fraction_bits)
    tie = np.floor(x / quantum) * quantum + quantum / 2
    x = np.where(rng.random(n) < 0.3, tie, x)
    x = np.where(rng.random(n) < 0.1, tie + np.ldexp(quantum, -30) * rng.choice([-1, 1], n), x)
    return x * rng.choice([-1.0, 1.0], n)


@pytest.mark.parametrize("fmt", [F16, BF16, TF32, F32])
@pytest.mark.parametrize("rounding", ["rn", "rz"])
def test_round_matches_exact_rounding(fmt, rounding, rng):
    x = _tricky_values(rng, fmt)
    got = fmt.round(x, rounding, overflow="inf")
    for xi, gi in zip(x, got):
        want = encode(fmt.name, Fraction(float(xi)), rounding, overflow_to_inf=True)
        if want == 0:  # the oracle writes +0; IEEE rounding keeps the sign
            want = int(np.signbit(xi)) << (fmt.storage_bits - 1)
        assert int(gi) == want, f"{fmt.name} {rounding} {xi!r}: got {int(gi):#x}, want {want:#x}"


def test_round_overflow_rules():
    big = np.array([1e6, -1e6])
    assert list(F16.round(big, "rn")) == [0x7C00, 0xFC00]
    assert list(F16.round(big, "rz")) == [0x7BFF, 0xFBFF]  # IEEE: toward zero saturates
    assert list(F16.round(big, "rz", overflow="inf")) == [0x7C00, 0xFC00]
    assert list(F16.round(big, "rn", overflow="saturate")) == [0x7BFF, 0xFBFF]
    assert list(F32.round(np.array([np.inf, -np.inf]), "rz")) == [0x7F800000, 0xFF800000]
    assert F32.round(np.array([np.nan]))[0] == 0x7FC00000


def test_round_flushes_subnormals_when_asked():
    tiny = np.array([2.0**-20, -(2.0**-20)])
    assert list(F16.round(tiny)) == [0x0010, 0x8010]
    assert list(F16.round(tiny, subnormals=False)) == [0x0000, 0x8000]


def test_round_rejects_unknown_modes():
    with pytest.raises(ValueError, match="rounding"):
        F16.round(np.ones(1), "ru")
    with pytest.raises(ValueError, match="overflow"):
        F16.round(np.ones(1), "rn", overflow="wrap")


def test_to_bits_checks_dtype():
    with pytest.raises(TypeError, match="float16"):
        F16.to_bits(np.ones(3, np.float32))
