"""An independent, scalar reference of tcsim's wgmma model (docs/wgmma.md), one output at a time.

It shares no code with tcsim's engine: bit patterns are decoded and results encoded by
tests/oracle.py (Python integers and Fractions), and each rule is written out as docs/wgmma.md
states it:

- f16, bf16, tf32: sm_90's mma.sync rule over the whole K (one fused step, 25 fraction bits,
  zero terms at the rule's zero exponent), per output element: `oracle.dot`;
- e4m3/e5m2: MMA-Sim's model (the hypothesis): one fused step of all 32 products and C, each
  term truncated toward zero to 13 fraction bits below the largest exponent of a nonzero term,
  the exact sum rounded toward zero into f32 and then truncated to 13 fraction bits, or
  rounded to nearest even into f16; NaN for a NaN, inf * 0 or inf - inf;
- s8/u8: `oracle.integer_dot`;
- options: scale_d = 0 replaces C by +0; scale_a / scale_b = -1 flip every sign bit.
"""

from __future__ import annotations

from fractions import Fraction

from oracle import FORMATS, decode, dot, encode, integer_dot

SM90_F32_ZERO, SM90_F16_ZERO = -133, -21  # sm_90's mma.sync rule (docs/numerics.md)
NAN_BITS = {"f32": 0x7FFFFFFF, "f16": 0x7FFF}
FP8_FRACTION_BITS = 13


def _sign_bit(name: str) -> int:
    return 1 << (FORMATS[name][3] - 1) if name in FORMATS else 0x80


def negate(name: str, bits) -> list[int]:
    return [int(x) ^ _sign_bit(name) for x in bits]


def fp8_fused_dot(a_type: str, b_type: str, d_type: str, a_row, b_col, c) -> int:
    """One output of MMA-Sim's fp8 wgmma model, as bits of ``d_type``."""
    terms, infinite_signs, nan = [], set(), False
    for a, b in zip(a_row, b_col):
        ka, sa, ma, ea = decode(a_type, a)
        kb, sb, mb, eb = decode(b_type, b)
        if "nan" in (ka, kb):
            nan = True
        elif "inf" in (ka, kb):
            zero_factor = (ka == "finite" and ma == 0) or (kb == "finite" and mb == 0)
            nan |= zero_factor
            infinite_signs.add(sa * sb)
        elif ma and mb:  # products of zero drop out of the alignment
            terms.append((sa * sb * ma * mb, ea + eb, FORMATS[a_type][1] + FORMATS[b_type][1]))
    kc, sc, mc, ec = decode(d_type, c)
    if kc == "nan":
        nan = True
    elif kc == "inf":
        infinite_signs.add(sc)
    elif mc:
        terms.append((sc * mc, ec, FORMATS[d_type][1]))
    if nan or len(infinite_signs) == 2:
        return NAN_BITS[d_type]
    if infinite_signs:
        eb_, fb, low, storage = FORMATS[d_type]
        return ((infinite_signs.pop() < 0) << (storage - 1)) | (((1 << eb_) - 1) << (fb + low))
    if not terms:
        return 0
    emax = max(e for _, e, _ in terms)
    total = 0
    for s, e, frac in terms:  # s * 2**(e - frac), truncated to a multiple of 2**(emax - 13)
        shift = (e - frac) - (emax - FP8_FRACTION_BITS)
        magnitude = abs(s) << shift if shift >= 0 else abs(s) >> -shift
        total += magnitude if s > 0 else -magnitude
    value = Fraction(total) * Fraction(2) ** (emax - FP8_FRACTION_BITS)
    bits = encode(d_type, value, "rz" if d_type == "f32" else "rn")
    if d_type == "f32" and (bits >> 23) & 0xFF != 0xFF:
        bits &= ~((1 << (23 - FP8_FRACTION_BITS)) - 1) & 0xFFFFFFFF
    return bits


def wgmma_dot(spec, a_row, b_col, c, scale_d: int = 1, scale_a: int = 1,
              scale_b: int = 1) -> int:
    """Output bits of one element of a wgmma (``spec`` a WgmmaSpec) under tcsim's model."""
    a_row, b_col, c = [int(x) for x in a_row], [int(x) for x in b_col], int(c)
    if not scale_d:
        c = 0
    if scale_a == -1:
        a_row = negate(spec.a_type, a_row)
    if scale_b == -1:
        b_col = negate(spec.b_type, b_col)
    if spec.integer:
        return integer_dot(spec.a_type, spec.b_type, a_row, b_col, c, spec.saturate)
    if spec.family == "fp8":
        return fp8_fused_dot(spec.a_type, spec.b_type, spec.d_type, a_row, b_col, c)
    zero = SM90_F32_ZERO if spec.d_type == "f32" else SM90_F16_ZERO
    return dot(spec.a_type, spec.d_type, spec.d_type, a_row, b_col, c, group=spec.k, F=25,
               zero_exp=zero, nan_bits=NAN_BITS[spec.d_type])
