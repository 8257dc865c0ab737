"""Hand-derived wgmma facts: single outputs whose bits tell tcsim's fp8 hypothesis (MMA-Sim's
13-bit model) apart from the alternatives, worked out by hand, not by tcsim.

Each fact puts a few nonzero values in row 0 of A, column 0 of B and C[0, 0] of an m64n8
instruction (everything else zero) and states D[0, 0]: ``d_bits`` under tcsim's model and
``alternative`` under the model it rules out. tests/isa/test_wgmma.py checks the simulator and
the scalar oracle against ``d_bits``; tests/hw/test_wgmma_hw.py logs what the H100 gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class WgmmaFact:
    name: str
    qualifier: str
    a: dict[int, int]  # k -> bits of A[0, k]
    b: dict[int, int]  # k -> bits of B[k, 0]
    c: int  # bits of C[0, 0]
    d_bits: int
    alternative: int
    why: str
    options: dict = field(default_factory=dict)


E4M3_ONE, F32_ONE = 0x38, 0x3F800000
FACTS = [
    WgmmaFact(
        "fp8_terms_keep_13_bits", "m64n8k32.f32.e4m3.e4m3", {0: E4M3_ONE}, {0: E4M3_ONE},
        0x38800000, F32_ONE, 0x3F800200,
        "1 + C with C = 2**-14: aligned to the product's exponent 0 and truncated to 13 "
        "fraction bits, C vanishes (fp8 mma.sync's 25-bit rule keeps it: 1 + 2**-14)"),
    WgmmaFact(
        "fp8_f32_result_keeps_13_bits", "m64n8k32.f32.e4m3.e4m3",
        {0: 0x3E, 1: 0x30, 2: 0x01}, {0: E4M3_ONE, 1: E4M3_ONE, 2: 0x18}, 0,
        0x40100000, 0x40100200,
        "1.75 + 0.5 + 2**-9 * 2**-4: every term is on the 2**-13 grid of exponent 0, the sum "
        "2.25 + 2**-13 lies in [2, 4), where 13 fraction bits are steps of 2**-12: 2.25"),
    WgmmaFact(
        "fp8_f16_rounds_after_13_bit_alignment", "m64n8k32.f16.e4m3.e4m3", {0: E4M3_ONE},
        {0: E4M3_ONE}, 0x1080, 0x3C00, 0x3C01,
        "1 + C with C = 2**-11 + 2**-14 (f16): C truncated to 2**-11 leaves the tie 1 + 2**-11, "
        "which rounds to even, 1.0 (exact rounding would give 1 + 2**-10)"),
    WgmmaFact(
        "fp8_subnormal_aligns_at_its_exponent_field", "m64n8k32.f32.e4m3.e4m3", {0: 0x01},
        {0: E4M3_ONE}, 0x35000000, 0x3B000000, 0x3B000800,
        "2**-9 (e4m3 subnormal, exponent field -6) + C = 2**-21: aligned at -6, C is below "
        "2**-19 and vanishes; aligned at the true exponent -9 it would survive"),
    WgmmaFact(
        "fp8_scale_d_0_ignores_a_nan_c", "m64n8k32.f32.e4m3.e4m3", {0: E4M3_ONE},
        {0: E4M3_ONE}, 0x7FC00000, F32_ONE, 0x7FFFFFFF,
        "scale-d = 0: D = A @ B, so a NaN in C does not reach D", {"scale_d": 0}),
    WgmmaFact(
        "fp8_scale_a_negates", "m64n8k32.f32.e4m3.e4m3", {0: 0x3C}, {0: 0x40}, F32_ONE,
        0xC0000000, 0x40800000, "-(1.5 * 2) + 1 = -2 with scale-a = -1 (not 1.5 * 2 + 1 = 4)",
        {"scale_a": -1}),
    WgmmaFact(
        "fp8_inf_times_zero_is_nan", "m64n8k32.f32.e5m2.e5m2", {0: 0x7C}, {0: 0x00}, 0,
        0x7FFFFFFF, 0x00000000, "inf * 0 is NaN, written as the canonical 0x7fffffff"),
    WgmmaFact(
        "f16_scale_d_0_ignores_a_nan_c", "m64n8k16.f32.f16.f16", {0: 0x3C00}, {0: 0x3C00},
        0x7FC00000, F32_ONE, 0x7FFFFFFF,
        "scale-d = 0 for f16 inputs: D = A @ B = 1, the NaN in C ignored", {"scale_d": 0}),
    WgmmaFact(
        "f16_scale_b_negates", "m64n8k16.f16.f16.f16", {0: 0x3E00}, {0: 0x4000}, 0x3C00,
        0xC000, 0x4400, "1.5 * -(2) + 1 = -2 with scale-b = -1", {"scale_b": -1}),
]


def fact_matrices(fact: WgmmaFact, spec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B, C bit patterns (64 x K, K x N, 64 x N) of a fact."""
    fa, fb, fc = (spec.format(op) for op in "abc")
    A = np.zeros(spec.matrix_shape("a"), fa.uint)
    B = np.zeros(spec.matrix_shape("b"), fb.uint)
    C = np.zeros(spec.matrix_shape("c"), fc.uint)
    for k, bits in fact.a.items():
        A[0, k] = bits
    for k, bits in fact.b.items():
        B[k, 0] = bits
    C[0, 0] = fact.c
    return A, B, C


def fact_result(fact: WgmmaFact, spec, run) -> np.ndarray:
    """D's bits from ``run(qualifier, A, B, C, **options)`` (tcsim.wgmma or tcsim.hw.wgmma)."""
    A, B, C = (spec.format(op).from_bits(x) for op, x in zip("abc", fact_matrices(fact, spec)))
    D = run(fact.qualifier, A, B, C, **fact.options)
    return spec.format("d").to_bits(np.asarray(D))
