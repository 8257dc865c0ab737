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
           "f32": (8, 23, 0, 32), "e4m3": (4, 3, 0, 8), "e5m2": (5, 2, 0, 8)}


def decode(name: str, bits: int):
    """-> (kind, sign, significand, exponent) with value sign * sig * 2**(exp - frac_bits)."""
    eb, fb, low, storage = FORMATS[name]
    bits = int(bits) >> low << low
    sign = -1 if bits >> (storage - 1) & 1 else 1
    field = bits >> (low + fb) & ((1 << eb) - 1)
    frac = bits >> low & ((1 << fb) - 1)
    bias = (1 << (eb - 1)) - 1
    if name == "e4m3":  # OCP E4M3: no infinity; only S.1111.111 is NaN
        if field == 15 and frac == 7:
            return "nan", sign, 0, 0
        if field:
            return "finite", sign, frac | (1 << fb), field - bias
        return "finite", sign, frac, 1 - bias
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


def widen_to_f16(name: str, bits: int) -> int:
    """An fp8 value as the f16 bit pattern of the same value (every fp8 value is an f16 one)."""
    kind, sign, sig, exp = decode(name, bits)
    if kind == "nan":
        return 0x7E00
    if kind == "inf":
        return 0xFC00 if sign < 0 else 0x7C00
    if sig == 0:
        return 0x8000 if sign < 0 else 0
    return encode("f16", value(name, bits), "rn")


def ieee_add_nearest(name: str, x_bits: int, y_bits: int, nan_bits: int) -> int:
    """x + y rounded to nearest even (FADD / HADD2 without flush-to-zero)."""
    kx, sx, _, _ = decode(name, x_bits)
    ky, sy, _, _ = decode(name, y_bits)
    eb, fb, low, storage = FORMATS[name]
    inf = ((1 << eb) - 1) << (fb + low)
    if "nan" in (kx, ky) or (kx == ky == "inf" and sx != sy):
        return nan_bits
    if "inf" in (kx, ky):
        sign = sx if kx == "inf" else sy
        return ((sign < 0) << (storage - 1)) | inf
    total = value(name, x_bits) + value(name, y_bits)
    if total == 0:  # +0 unless both are -0
        both_negative = (int(x_bits) >> (storage - 1)) & (int(y_bits) >> (storage - 1)) & 1
        return both_negative << (storage - 1)
    return encode(name, total, "rn")


def fp8_lowered_dot(a_type, b_type, out_type, a_row, b_col, c, *, group, F, zero_exp, nan_bits):
    """One output of sm_90's fp8 mma.sync: f16 steps over k % 4 in {0, 1}, then {2, 3}, from
    +0, then C added to nearest."""
    a16 = [widen_to_f16(a_type, x) for x in a_row]
    b16 = [widen_to_f16(b_type, x) for x in b_col]
    acc = 0
    for part in ((0, 1), (2, 3)):
        ks = [k for k in range(len(a16)) if k % 4 in part]
        acc = dot("f16", out_type, out_type, [a16[k] for k in ks], [b16[k] for k in ks], acc,
                  group=group, F=F, zero_exp=zero_exp, nan_bits=nan_bits)
    return ieee_add_nearest(out_type, c, acc, nan_bits)


def integer_dot(a_type, b_type, a_row, b_col, c, saturate: bool) -> int:
    """One output of an integer mma.sync, as s32 bits."""
    def signed(bits, width, is_signed):
        bits = int(bits) & ((1 << width) - 1)
        return bits - (1 << width) if is_signed and bits >> (width - 1) else bits
    total = signed(c, 32, True) + sum(
        signed(a, 8, a_type == "s8") * signed(b, 8, b_type == "s8") for a, b in zip(a_row, b_col))
    if saturate:
        total = max(-(2**31), min(2**31 - 1, total))
    return total & 0xFFFFFFFF
