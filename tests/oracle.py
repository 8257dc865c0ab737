"""An independent, scalar reference of the documented tensor-core model, in Python integers.

It shares no code with tcsim's engine: it decodes bit patterns by hand, adds with Python's
unbounded integers and rounds with Fractions, one output element at a time. It is slow (a few
thousand dot products a second) and exists so that the vectorized engine can be checked against
the model as docs/numerics.md writes it; the GPU tests check the model itself.
"""

from __future__ import annotations

from fractions import Fraction

# name: (exponent bits, fraction bits, low ignored bits, storage bits)
FORMATS = {"f16": (5, 10, 0, 16), "bf16": (8, 7, 0, 16), "tf32": (8, 10, 13, 32),
           "f32": (8, 23, 0, 32)}


def decode(name: str, bits: int):
    """-> (kind, sign, significand, exponent) with value sign * sig * 2**(exp - frac_bits)."""
    eb, fb, low, storage = FORMATS[name]
    bits = int(bits) >> low << low
    sign = -1 if bits >> (storage - 1) & 1 else 1
    field = bits >> (low + fb) & ((1 << eb) - 1)
    frac = bits >> low & ((1 << fb) - 1)
    bias = (1 << (eb - 1)) - 1
    if field == (1 << eb) - 1:
        return ("nan" if frac else "inf"), sign, 0, 0
    if field == 0:
        return "finite", sign, frac, 1 - bias
    return "finite", sign, frac | (1 << fb), field - bias


def value(name: str, bits: int) -> Fraction:
    kind, sign, sig, exp = decode(name, bits)
    assert kind == "finite"
    return sign * Fraction(sig) * Fraction(2) ** (exp - FORMATS[name][1])


def encode(name: str, x: Fraction, rounding: str, overflow_to_inf: bool = True) -> int:
    """Round an exact value into a format; zero results are +0 (the sm_90 rule)."""
    eb, fb, low, storage = FORMATS[name]
    bias = (1 << (eb - 1)) - 1
    if x == 0:
        return 0
    sign = 1 if x < 0 else 0
    m = abs(x)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    e = max(e, 1 - bias)
    q = Fraction(2) ** (e - fb)
    n, rem = divmod(m, q)
    n = int(n)
    if rounding == "rn" and (rem > q / 2 or (rem == q / 2 and n % 2 == 1)):
        n += 1
    if n == 0:
        return 0
    if n >> (fb + 1):
        n >>= 1
        e += 1
    field = e + bias if n >> fb else 0
    if field >= (1 << eb) - 1:
        if overflow_to_inf:
            return (sign << (storage - 1)) | (((1 << eb) - 1) << (fb + low))
        field, n = (1 << eb) - 2, (2 << fb) - 1
    return (sign << (storage - 1)) | (field << (fb + low)) | ((n & ((1 << fb) - 1)) << low)


def dot(in_type, out_type, acc_type, a_row, b_col, c, *, group, F, zero_exp, nan_bits):
    """One output element: c + sum a_row[k] * b_col[k] under the documented model."""
    acc_name, acc_bits = acc_type, int(c)
    rounding = "rz" if out_type == "f32" else "rn"
    for start in range(0, len(a_row), group):
        terms, specials = [], []
        for a, b in zip(a_row[start:start + group], b_col[start:start + group]):
            ka, sa, ma, ea = decode(in_type, a)
            kb, sb, mb, eb_ = decode(in_type, b)
            if "nan" in (ka, kb):
                specials.append("nan")
            elif "inf" in (ka, kb):
                zero_factor = (ka == "finite" and ma == 0) or (kb == "finite" and mb == 0)
                specials.append("nan" if zero_factor else sa * sb)
            else:
                terms.append((sa * sb * ma * mb, ea + eb_, 2 * FORMATS[in_type][1]))
        kc, sc, mc, ec = decode(acc_name, acc_bits)
        if kc == "nan":
            specials.append("nan")
        elif kc == "inf":
            specials.append(sc)
        else:
            terms.append((sc * mc, ec, FORMATS[acc_name][1]))
        if specials:
            if "nan" in specials or (1 in specials and -1 in specials):
                acc_bits = nan_bits
            else:
                sign = specials[0]
                eb, fb, low, storage = FORMATS[out_type]
                acc_bits = ((sign < 0) << (storage - 1)) | (((1 << eb) - 1) << (fb + low))
            acc_name = out_type
            continue
        nonzero = [e for s, e, _ in terms if s != 0]
        exps = nonzero + ([zero_exp] if len(nonzero) < len(terms) else [])
        emax = max(exps)
        total = 0
        for s, e, fb in terms:
            # s * 2**(e - fb) truncated toward zero to a multiple of 2**(emax - F)
            shift = (e - fb) - (emax - F)
            mag = abs(s) << shift if shift >= 0 else abs(s) >> -shift
            total += mag if s >= 0 else -mag
        acc_bits = encode(out_type, Fraction(total) * Fraction(2) ** (emax - F), rounding)
        acc_name = out_type
    return acc_bits
