"""Hand-derived sm_90 facts: one instruction each, with the bits worked out on paper.

Each fact fills row 0 of A, column 0 of B and C[0, 0] (everything else is +0) and states the
bits of D[0, 0]. The CPU tests check that tcsim reproduces them; the hw tests check that the
H100 does. docs/numerics.md explains each one.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

import tcsim

NAN32, NAN16 = 0x7FFFFFFF, 0x7FFF


@dataclass(frozen=True)
class Fact:
    name: str
    qualifier: str
    a_row: tuple
    b_col: tuple
    c: float
    d_bits: int
    why: str


def _dtype(t):
    return {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32,
            "f32": np.float32, "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
            "s8": np.int8, "u8": np.uint8, "s32": np.int32}[t]


def operands(fact: Fact):
    spec = tcsim.parse(fact.qualifier)
    A = np.zeros((spec.m, spec.k), _dtype(spec.a_type))
    B = np.zeros((spec.k, spec.n), _dtype(spec.b_type))
    C = np.zeros((spec.m, spec.n), _dtype(spec.c_type))
    A[0, : len(fact.a_row)] = fact.a_row
    B[: len(fact.b_col), 0] = fact.b_col
    C[0, 0] = fact.c
    return A, B, C


def result_bits(fact: Fact, mma) -> np.ndarray:
    """D's bit patterns when ``mma`` (tcsim.mma or tcsim.hw.mma) runs the fact's instruction."""
    D = mma(fact.qualifier, *operands(fact))
    return tcsim.parse(fact.qualifier).format("d").to_bits(D)


K8_F32 = "m16n8k8.row.col.f32.f16.f16.f32"
K8_F16 = "m16n8k8.row.col.f16.f16.f16.f16"
K16_BF16 = "m16n8k16.row.col.f32.bf16.bf16.f32"
K8_TF32 = "m16n8k8.row.col.f32.tf32.tf32.f32"
QP_F32 = "m8n8k4.row.col.f32.f16.f16.f32"
QP_F16 = "m8n8k4.col.row.f16.f16.f16.f16"
F32_NAN_LOW_PAYLOAD = np.uint32(0x7F800001).view(np.float32)  # f32 NaN, tf32 +inf
TINY = 2.0**-24
E5_K32 = "m16n8k32.row.col.f32.e5m2.e5m2.f32"
E4_K32 = "m16n8k32.row.col.f32.e4m3.e4m3.f32"
E4_K32_F16 = "m16n8k32.row.col.f16.e4m3.e4m3.f16"
E4E5_K16 = "m16n8k16.row.col.f32.e4m3.e5m2.f32"
S8_K32 = "m16n8k32.row.col.s32.s8.s8.s32"
S8_K32_SAT = "m16n8k32.row.col.satfinite.s32.s8.s8.s32"
U8S8_K16 = "m16n8k16.row.col.s32.u8.s8.s32"
E4M3_NAN = np.uint8(0x7F).view(ml_dtypes.float8_e4m3fn)

FACTS = [
    Fact("sum_exact_where_fma_chain_rounds", K8_F32, (1.5 * 2**-12,) * 8, (2.0**-12,) * 8, 1.0,
         0x3F800006,
         "1 + 8 * 1.5 * 2**-24 = 1 + 6 ulp exactly; eight f32 FMAs would give 1 + 8 ulp"),
    Fact("small_products_truncated", K8_F32, (2.0**-13,) * 8, (2.0**-13,) * 8, 1.0,
         0x3F800000, "each 2**-26 product is below 2**-25, the last of F=25 bits kept: 1.0, "
         "where exact rounding gives 1 + 2**-23"),
    Fact("f32_result_truncated_toward_zero", K8_F32, (1.0, 2.0**-23 * 1.5), (1.0, 1.0), 0.0,
         0x3F800001, "1 + 1.5 ulp rounds toward zero to 1 + 1 ulp"),
    Fact("f16_result_to_nearest_even", K8_F16, (1.0, 2.0**-11), (1.0, 1.0), 0.0, 0x3C00,
         "1 + half an f16 ulp is a tie and rounds to even, 1.0"),
    Fact("zero_term_sets_alignment_floor", K8_F16, (2.0**-12,) + (TINY,) * 7,
         (2.0**-13,) + (TINY,) * 7, 0.0, 0x0000,
         "C = +0 brings exponent -21: the 2**-48 products (exponent fields -14 - 14) truncate "
         "away, leaving the tie 2**-25 that rounds to +0; exact rounding gives 2**-24"),
    Fact("negative_zeros_sum_to_plus_zero", K8_F32, (-0.0,) * 8, (1.0,) * 8, -0.0, 0x00000000,
         "IEEE gives -0 for a sum of -0s; the tensor core writes +0"),
    Fact("cancellation_gives_plus_zero", K8_F32, (1.0, -1.0), (3.0, 3.0), -0.0, 0x00000000,
         "3 - 3 + (-0) is +0"),
    Fact("nan_input_gives_canonical_nan", K8_F32, (float("nan"),), (1.0,), 1.0, NAN32,
         "any NaN operand gives 0x7fffffff whatever its sign and payload"),
    Fact("negative_nan_in_c", K8_F16, (1.0,), (1.0,), -float("nan"), NAN16,
         "a NaN accumulator gives the f16 default NaN 0x7fff"),
    Fact("inf_times_zero_is_nan", K8_F32, (float("inf"),), (0.0,), 1.0, NAN32,
         "inf * 0 is invalid"),
    Fact("inf_minus_inf_is_nan", K8_F32, (float("inf"), float("inf")), (1.0, -1.0), 0.0, NAN32,
         "+inf and -inf among the terms"),
    Fact("inf_plus_finite_is_inf", K8_F32, (float("inf"), 3.0), (-2.0, 1.0), 5.0, 0xFF800000,
         "an infinite product wins over finite terms"),
    Fact("bf16_overflow_gives_inf_despite_rz", K16_BF16, (2.0**127,) * 4, (1.5,) * 4, 0.0,
         0x7F800000, "4 * 1.5 * 2**127 overflows f32; round-toward-zero would saturate but the "
         "tensor core writes +inf"),
    Fact("bf16_huge_products_cancel_exactly", K16_BF16, (2.0**127, 2.0**127),
         (2.0**127, -(2.0**127)), 1.0, 0x00000000,
         "products of 2**254 are held exactly (no overflow) and cancel; C = 1 lies 254 binades "
         "below the alignment exponent and truncates away: +0 where exact arithmetic gives 1"),
    Fact("tf32_ignores_nan_payload_in_low_bits", K8_TF32, (F32_NAN_LOW_PAYLOAD,), (2.0,), 1.0,
         0x7F800000, "0x7f800001 is an f32 NaN whose payload sits in the 13 bits tf32 drops: the "
         "tensor core reads +inf"),
    Fact("tf32_low_bits_truncated", K8_TF32, (np.uint32(0x3F801FFF).view(np.float32),), (1.0,),
         0.0, 0x3F800000, "1 + 8191 * 2**-23 reads as tf32 1.0: the low 13 bits are dropped, "
         "not rounded"),
    Fact("zero_products_keep_a_tiny_accumulator", "m16n8k16.row.col.f32.f16.f16.f32",
         (0.0,) * 16, (2.0**15,) * 16, 2.0**-100, 0x0D800000,
         "every product is 0 (zero A, large B): zeros leave the alignment, whose floor is -133, "
         "so C = 2**-100 sets it and passes exactly (the engine once let the zero products' "
         "placeholder exponent, near -45, align C away to +0)"),
    # m8n8k4 on sm_90 is an FFMA sequence (tcsim.isa.quad_pair, notes/m8n8k4-sass.md).
    Fact("quad_pair_f32_adds_c_last", QP_F32, (2.0**-12,) * 4, (2.0**-12,) * 4, 1.0,
         0x3F800002, "the products chain from +0 to 4 * 2**-24 = 2**-22 before C = 1 joins: "
         "1 + 2**-22; a chain starting from C would round each 2**-24 away (1.0), and so would "
         "Volta's tensor cores"),
    Fact("quad_pair_f16_adds_c_to_the_first_pair", QP_F16, (3 * 2.0**-12, 0.0, -1.0, 0.0),
         (2.0**-12, 0.0, 1.0, 0.0), 1.0, 0x0004,
         "fl(1 + 3 * 2**-24) = 1 + 2**-22 (a tie rounded to even), then - 1: 2**-22; exact "
         "arithmetic, or C added last, gives 3 * 2**-24 (0x0003)"),
    # fp8 on sm_90: widened to f16, two f16 mma.sync steps (k % 4 in {0, 1}, then {2, 3}) from
    # +0, then C added with round-to-nearest (tcsim.isa.fp8_lowering).
    Fact("fp8_c_added_last_to_nearest", E4_K32, (1.0,), (1.0,), 1.5 * 2.0**-24, 0x3F800001,
         "1 + 1.5 * 2**-24: FADD rounds to nearest, 1 + 2**-23; one fused sum rounding toward "
         "zero (the f16 rule) would give 1.0"),
    Fact("fp8_steps_split_k_by_k_mod_4", E5_K32, (1.0, 2.0**-12, 2.0**-12), (1.0, 2.0**-12,
         2.0**-12), 0.0, 0x3F800000,
         "k = 1 joins the first step (1 + 2**-24 rounds toward zero to 1), k = 2 the second "
         "(again 1): 1.0; summed in one step, 1 + 2 * 2**-24 = 1 + 2**-23 exactly"),
    Fact("fp8_same_step_sums_exactly", E5_K32, (1.0, 2.0**-12, 0.0, 0.0, 2.0**-12),
         (1.0, 2.0**-12, 0.0, 0.0, 2.0**-12), 0.0, 0x3F800001,
         "k = 1 and k = 4 are both in the first step: 1 + 2 * 2**-24 = 1 + 2**-23, exact"),
    Fact("fp8_f16_steps_and_add_round_to_even", E4_K32_F16, (1.0, 0.0, 2.0**-9), (1.0, 0.0,
         0.25), 2.0**-11, 0x3C00,
         "e4m3 subnormal 2**-9 times 0.25 is 2**-11 (k = 2, second step): 1 + 2**-11 is a tie "
         "(to 1.0), then + C = 2**-11 ties again: 1.0; one sum would give 1 + 2**-10"),
    Fact("fp8_nan_operand_gives_canonical_nan", E4_K32, (E4M3_NAN,), (1.0,), 1.0, NAN32,
         "e4m3 S.1111.111 is NaN: 0x7fffffff"),
    Fact("fp8_inf_product_minus_inf_c_is_nan", E4E5_K16, (1.0,), (float("inf"),),
         -float("inf"), NAN32, "the f16 steps give +inf; FADD(-inf, +inf) is NaN"),
    Fact("fp8_c_subnormal_kept", E4_K32, (0.0,), (1.0,), 2.0**-149, 0x00000001,
         "zero products, C the smallest f32 subnormal: FADD keeps it"),
    Fact("s8_wraps_around", S8_K32, (1,), (1,), 2**31 - 1, 0x80000000,
         "2**31 - 1 + 1 wraps to -2**31 without .satfinite"),
    Fact("s8_satfinite_clamps", S8_K32_SAT, (1,), (1,), 2**31 - 1, 0x7FFFFFFF,
         ".satfinite clamps 2**31 to the largest s32"),
    Fact("u8_times_s8_exact", U8S8_K16, (255,) * 16, (-128,) * 16, -7, 0xFFF807F9,
         "16 * 255 * -128 - 7 = -522247 exactly"),
]
