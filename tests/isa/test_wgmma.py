"""wgmma.mma_async: qualifiers, warpgroup fragment maps, the engine against the scalar oracle
(tests/wgmma_oracle.py) on every operand distribution, hand-derived facts, options and errors."""

import ml_dtypes
import numpy as np
import pytest
from wgmma_facts import FACTS, fact_matrices, fact_result
from wgmma_oracle import wgmma_dot

import tcsim
from tcsim import QualifierError, parse_wgmma, wgmma, wgmma_fragment, wgmma_regs
from tcsim.isa import samples
from tcsim.isa.wgmma import check_options, is_wgmma_qualifier, supported_wgmma_qualifiers
from tcsim.isa.wgmma.spec import INT8_N

# ---- qualifiers ----------------------------------------------------------------------------


def test_parse_fields():
    s = parse_wgmma("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16")
    assert (s.m, s.n, s.k, s.d_type, s.a_type, s.b_type) == (64, 128, 16, "f32", "bf16", "bf16")
    assert s.qualifier == "m64n128k16.f32.bf16.bf16" and s.c_type == "f32"
    assert s.matrix_shape("a") == (64, 16) and s.matrix_shape("b") == (16, 128)
    assert s.ptx == "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"
    t = parse_wgmma("m64n64k32.satfinite.s32.s8.u8")
    assert t.saturate and t.integer and not t.scalable and not t.transposable
    assert parse_wgmma("m64n8k32.f16.e5m2.e4m3").family == "fp8"


def test_supported_list_parses_and_counts():
    quals = supported_wgmma_qualifiers()
    # f16: 32 N x 2 D; bf16, tf32: 32 each; fp8: 32 x 4 pairs x 2 D; int8: 18 x 4 x 2 (sat)
    assert len(quals) == len(set(quals)) == 64 + 32 + 32 + 256 + 144
    for q in quals:
        assert parse_wgmma(q).qualifier == q


def test_integer_n_are_the_ptx_list():
    ns = sorted({parse_wgmma(q).n for q in supported_wgmma_qualifiers()
                 if parse_wgmma(q).integer})
    assert ns == [8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240,
                  256] == list(INT8_N)


@pytest.mark.parametrize("bad, message", [
    ("m64n128k16.f32.f16", "expected shape"),
    ("m64n128k16.row.col.f32.f16.f16", "expected shape"),
    ("m32n128k16.f32.f16.f16", "M = 64"),
    ("m64n12k16.f32.f16.f16", "N = 12 is not a wgmma N"),
    ("m64n264k16.f32.f16.f16", "N = 264"),
    ("m64n40k32.s32.s8.s8", r"N = 40 is not a wgmma N for \.s8 inputs \(N is one of 8, 16"),
    ("m64n64k32.f32.f16.f16", "K = 16"),
    ("m64n64k16.f32.tf32.tf32", "K = 8"),
    ("m64n64k16.f32.f16.bf16", "same type"),
    ("m64n64k32.f32.e4m3.s8", "same type"),
    ("m64n64k16.f16.bf16.bf16", "D type .f16 is not allowed"),
    ("m64n64k32.s32.e4m3.e4m3", "D type .s32"),
    ("m64n64k32.satfinite.f32.e4m3.e4m3", "integer inputs only"),
    ("m64n64k16.f32.f64.f64", "unsupported input type"),
    ("m64nXk16.f32.f16.f16", "not a shape"),
    ("wgmma.m64n64k16.f32.f16.f16", "wgmma.mma_async.sync.aligned."),
])
def test_bad_qualifiers_name_the_problem(bad, message):
    with pytest.raises(QualifierError, match=message):
        parse_wgmma(bad)


def test_qualifier_must_be_a_string():
    with pytest.raises(QualifierError, match="string"):
        parse_wgmma(["m64n8k16.f32.f16.f16"])


def test_tcsim_mma_dispatches_wgmma_qualifiers(rng):
    A = rng.standard_normal((3, 64, 16)).astype(np.float16)
    B = rng.standard_normal((3, 16, 24)).astype(np.float16)
    C = rng.standard_normal((3, 64, 24)).astype(np.float32)
    want = wgmma("m64n24k16.f32.f16.f16", A, B, C)
    for q in ("m64n24k16.f32.f16.f16", "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16"):
        assert is_wgmma_qualifier(q)
        assert np.array_equal(tcsim.mma(q, A, B, C).view(np.uint32), want.view(np.uint32))
    assert not is_wgmma_qualifier("m16n8k16.row.col.f32.f16.f16.f32")
    with pytest.raises(QualifierError, match="N = 20"):
        tcsim.mma("m64n20k16.f32.f16.f16", A, B, C)


# ---- fragment maps -------------------------------------------------------------------------

ACCUMULATOR_CASES = [f"m64n{n}k16.{d}.f16.f16" for n in (8, 24, 64, 136, 256)
                     for d in ("f32", "f16")] + ["m64n240k32.s32.s8.u8", "m64n8k8.f32.tf32.tf32"]


@pytest.mark.parametrize("qualifier", ACCUMULATOR_CASES)
def test_accumulator_map_is_the_ptx_formula(qualifier):
    """PTX ISA, wgmma register fragments: lane t of warp w, element i at row 16w + (t>>2) +
    8((i>>1)&1), column 8(i>>2) + 2(t&3) + (i&1); N/2 elements per lane."""
    spec = parse_wgmma(qualifier)
    frag = wgmma_fragment(qualifier, "d")
    lane = np.arange(128)[:, None]
    i = np.arange(spec.n // 2)[None, :]
    w, t = lane // 32, lane % 32
    row = 16 * w + (t >> 2) + 8 * ((i >> 1) & 1)
    col = 8 * (i >> 2) + 2 * (t & 3) + (i & 1)
    assert frag.coords.shape == (128, spec.n // 2, 2)
    assert np.array_equal(frag.coords[..., 0], np.broadcast_to(row, frag.coords.shape[:2]))
    assert np.array_equal(frag.coords[..., 1], np.broadcast_to(col, frag.coords.shape[:2]))
    assert frag.registers == spec.n // (4 if spec.d_type == "f16" else 2)
    assert wgmma_fragment(qualifier, "c").coords is not None


@pytest.mark.parametrize("qualifier, lane, register, elements", [
    # f16 A (k16): like mma.sync m16n8k16's A per warp, rows moved down 16 per warp.
    ("m64n8k16.f32.f16.f16", 0, 0, [(0, 0), (0, 1)]),
    ("m64n8k16.f32.f16.f16", 37, 1, [(17 + 8, 2), (17 + 8, 3)]),
    ("m64n8k16.f32.f16.f16", 127, 3, [(63, 14), (63, 15)]),
    # tf32 A (k8): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4).
    ("m64n8k8.f32.tf32.tf32", 70, 2, [(32 + 1, 2 + 4)]),
    ("m64n8k8.f32.tf32.tf32", 70, 1, [(32 + 9, 2)]),
    # 8-bit A (k32): a0..a3 (g, 4t..4t+3), a4..a7 (g+8, ...), a8.. (g, 16 + 4t ..).
    ("m64n8k32.f32.e4m3.e4m3", 97, 2, [(48 + 0, 16 + 4), (48, 21), (48, 22), (48, 23)]),
    ("m64n8k32.s32.u8.s8", 2, 1, [(8, 8), (8, 9), (8, 10), (8, 11)]),
])
def test_a_register_maps(qualifier, lane, register, elements):
    frag = wgmma_fragment(qualifier, "a")
    assert frag.registers == 4
    for part, (row, col) in enumerate(elements):
        assert frag.locate(row, col) == (lane, register, part if frag.per_register > 1 else 0)


@pytest.mark.parametrize("qualifier", ["m64n200k16.f16.f16.f16", "m64n24k32.f32.e5m2.e4m3",
                                       "m64n16k32.satfinite.s32.u8.u8", "m64n40k8.f32.tf32.tf32",
                                       "m64n8k16.f32.bf16.bf16"])
@pytest.mark.parametrize("operand", "acd")
def test_pack_unpack_round_trip(qualifier, operand, rng):
    spec = parse_wgmma(qualifier)
    frag = wgmma_fragment(qualifier, operand)
    fmt = spec.format(operand)
    bits = rng.integers(0, 1 << fmt.storage_bits, (3,) + spec.matrix_shape(operand),
                        dtype=np.uint64).astype(fmt.uint)
    regs = frag.pack(fmt.from_bits(bits))
    assert regs.shape == (3, 128, frag.registers) and regs.dtype == np.uint32
    assert np.array_equal(fmt.to_bits(frag.unpack(regs)), bits)
    # each element exactly once (the map checks it when built), in the lanes PTX names
    assert sorted(set(map(int, frag.lane_of.ravel()))) == list(range(128))


def test_tcsim_fragment_answers_for_wgmma_qualifiers():
    assert tcsim.fragment("m64n24k16.f16.f16.f16", "d") is wgmma_fragment(
        "m64n24k16.f16.f16.f16", "d")


def test_b_has_no_register_fragment():
    with pytest.raises(ValueError, match="shared memory"):
        wgmma_fragment("m64n8k16.f32.f16.f16", "b")


# ---- the engine against the scalar oracle ---------------------------------------------------

ORACLE_CASES = ["m64n8k16.f32.f16.f16", "m64n24k16.f16.f16.f16", "m64n16k16.f32.bf16.bf16",
                "m64n8k8.f32.tf32.tf32", "m64n8k32.f32.e4m3.e4m3", "m64n16k32.f16.e5m2.e4m3",
                "m64n8k32.f32.e4m3.e5m2", "m64n8k32.f16.e5m2.e5m2", "m64n24k32.s32.s8.u8",
                "m64n8k32.satfinite.s32.u8.s8"]
OPTIONS = [{}, {"scale_d": 0}, {"scale_a": -1}, {"scale_b": -1, "scale_a": -1}]


def _check_against_oracle(spec, A, B, C, options, rng, elements=48):
    got = tcsim.isa.wgmma.wgmma_bits(spec, A, B, C, tcsim.isa.wgmma.numerics("sm_90"),
                                     **options)
    for i in range(A.shape[0]):
        rows = rng.integers(0, spec.m, elements)
        cols = rng.integers(0, spec.n, elements)
        for r, c in zip(rows, cols):
            want = wgmma_dot(spec, A[i, r, :], B[i, :, c], C[i, r, c], **options)
            assert int(got[i, r, c]) == want, (
                f"instruction {i} element ({r}, {c}): engine {int(got[i, r, c]):#x}, model "
                f"{want:#x}; a={A[i, r].tolist()} b={B[i, :, c].tolist()} c={int(C[i, r, c])}")


@pytest.mark.parametrize("qualifier", ORACLE_CASES)
def test_engine_matches_scalar_model_on_every_distribution(qualifier, rng):
    spec = parse_wgmma(qualifier)
    for j, dist in enumerate(samples.distributions(spec)):
        options = OPTIONS[j % len(OPTIONS)] if spec.scalable else OPTIONS[j % 2]
        A, B, C = samples.draw(spec, dist, 3, rng)
        _check_against_oracle(spec, A, B, C, options, rng)


def test_fp8_uniform_bits_with_many_specials_match_the_model(rng):
    """Random bits everywhere: NaN, infinities (e5m2) and zeros in every mix."""
    spec = parse_wgmma("m64n32k32.f32.e5m2.e5m2")
    A, B, C = samples.draw(spec, "uniform_bits", 4, rng)
    _check_against_oracle(spec, A, B, C, {}, rng, elements=200)


def test_fp8_chunks_on_the_thread_pool_match_one_by_one(rng):
    spec = parse_wgmma("m64n8k32.f32.e4m3.e4m3")
    A, B, C = samples.draw(spec, "wide", 300, rng)  # several chunks
    bits = tcsim.isa.wgmma.wgmma_bits
    prof = tcsim.isa.wgmma.numerics("sm_90")
    whole = bits(spec, A, B, C, prof)
    one = np.stack([bits(spec, A[i], B[i], C[i], prof) for i in range(0, 300, 37)])
    assert np.array_equal(whole[::37], one)


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f.name)
def test_hand_derived_fact(fact):
    spec = parse_wgmma(fact.qualifier)
    got = fact_result(fact, spec, wgmma)
    assert int(got[0, 0]) == fact.d_bits, fact.why
    A, B, C = fact_matrices(fact, spec)
    assert wgmma_dot(spec, A[0], B[:, 0], C[0, 0], **fact.options) == fact.d_bits
    assert not got[1:].any()  # rows of A other than row 0 are zero


def test_f16_family_is_four_m16n8k16_mma_sync_per_8_columns(rng):
    """The measured fact the f16/bf16 engine rests on, restated through the public API."""
    q = "m64n16k16.f32.bf16.bf16"
    A = rng.standard_normal((2, 64, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((2, 16, 16)).astype(ml_dtypes.bfloat16)
    C = rng.standard_normal((2, 64, 16)).astype(np.float32)
    D = wgmma(q, A, B, C)
    for r in range(0, 64, 16):
        for c in range(0, 16, 8):
            d = tcsim.mma("m16n8k16.row.col.f32.bf16.bf16.f32", A[:, r:r + 16],
                          B[:, :, c:c + 8], C[:, r:r + 16, c:c + 8])
            assert np.array_equal(d.view(np.uint32), D[:, r:r + 16, c:c + 8].view(np.uint32))


def test_fp8_differs_from_fp8_mma_sync():
    """1 + 2**-14: fp8 mma.sync (f16 steps, then an f32 add) keeps it; the wgmma model not."""
    e4m3 = ml_dtypes.float8_e4m3fn
    A = np.zeros((64, 32), e4m3)
    B = np.zeros((32, 8), e4m3)
    A[0, 0] = B[0, 0] = 1
    C = np.zeros((64, 8), np.float32)
    C[0, 0] = 2.0**-14
    assert wgmma("m64n8k32.f32.e4m3.e4m3", A, B, C)[0, 0] == 1
    mma = tcsim.mma("m16n8k32.row.col.f32.e4m3.e4m3.f32", A[:16], B, C[:16])
    assert mma[0, 0] == 1 + 2.0**-14


# ---- matrices and registers ----------------------------------------------------------------

@pytest.mark.parametrize("qualifier", ["m64n24k16.f16.f16.f16", "m64n56k8.f32.tf32.tf32",
                                       "m64n16k32.f32.e4m3.e5m2", "m64n32k32.s32.s8.s8"])
def test_register_level_agrees_with_matrix_level(qualifier, rng):
    spec = parse_wgmma(qualifier)
    A, B, C = samples.draw(spec, "uniform_bits" if spec.integer else "wide", 5, rng)
    A, B, C = (spec.format(op).from_bits(x) for op, x in zip("abc", (A, B, C)))
    options = {"scale_a": -1} if spec.scalable else {"scale_d": 0}
    fa, fc, fd = (wgmma_fragment(spec, op) for op in "acd")
    want = wgmma(qualifier, A, B, C, **options)
    rs = wgmma_regs(qualifier, fa.pack(A), B, fc.pack(C), **options)  # A from registers
    ss = wgmma_regs(qualifier, A, B, fc.pack(C), **options)  # A from shared memory
    fmt = spec.format("d")
    assert np.array_equal(fmt.to_bits(fd.unpack(rs)), fmt.to_bits(want))
    assert np.array_equal(rs, ss)


def test_batches_broadcast(rng):
    q = "m64n8k16.f32.f16.f16"
    A = rng.standard_normal((64, 16)).astype(np.float16)
    B = rng.standard_normal((4, 1, 16, 8)).astype(np.float16)
    C = rng.standard_normal((3, 64, 8)).astype(np.float32)
    D = wgmma(q, A, B, C)
    assert D.shape == (4, 3, 64, 8)
    assert np.array_equal(D[2, 1].view(np.uint32), wgmma(q, A, B[2, 0], C[1]).view(np.uint32))


# ---- options and errors --------------------------------------------------------------------

def test_transposes_change_no_value(rng):
    q = "m64n8k16.f32.f16.f16"
    A = rng.standard_normal((64, 16)).astype(np.float16)
    B = rng.standard_normal((16, 8)).astype(np.float16)
    C = np.zeros((64, 8), np.float32)
    plain = wgmma(q, A, B, C)
    assert np.array_equal(wgmma(q, A, B, C, trans_a=True, trans_b=True), plain)


@pytest.mark.parametrize("qualifier, options, message", [
    ("m64n8k32.s32.s8.s8", {"scale_a": -1}, "integer wgmma has no imm-scale-a"),
    ("m64n8k16.f32.f16.f16", {"scale_b": 2}, "scale_b must be 1 or -1"),
    ("m64n8k16.f32.f16.f16", {"scale_d": 2}, "scale_d must be at most 1"),
    ("m64n8k8.f32.tf32.tf32", {"trans_a": True}, r"imm-trans-a exists for \.f16 and \.bf16"),
    ("m64n8k32.f32.e4m3.e4m3", {"trans_b": 1}, "imm-trans-b"),
])
def test_bad_options_name_the_problem(qualifier, options, message):
    spec = parse_wgmma(qualifier)
    with pytest.raises(ValueError, match=message):
        check_options(spec, **options)


def test_a_in_registers_cannot_be_transposed():
    spec = parse_wgmma("m64n8k16.f32.f16.f16")
    with pytest.raises(ValueError, match="A in registers has no transpose"):
        check_options(spec, trans_a=True, a_in_registers=True)
    assert check_options(spec, scale_d=False, trans_b=True).trans_b


def test_scale_must_be_an_integer():
    with pytest.raises(TypeError, match="scale_a must be an integer"):
        check_options(parse_wgmma("m64n8k16.f32.f16.f16"), scale_a=-1.0)


def test_wrong_dtype_shape_and_arch_are_refused():
    q = "m64n8k16.f32.f16.f16"
    A, B, C = np.zeros((64, 16), np.float16), np.zeros((16, 8), np.float16), np.zeros((64, 8))
    with pytest.raises(TypeError, match="float32"):
        wgmma(q, A, B, C)
    with pytest.raises(ValueError, match=r"\(\.\.\., 16, 8\)"):
        wgmma(q, A, np.zeros((8, 16), np.float16), C.astype(np.float32))
    with pytest.raises(ValueError, match="needs sm_90a"):
        wgmma(q, A, B, C.astype(np.float32), arch="sm_80")
    with pytest.raises(ValueError, match="do not broadcast"):
        wgmma(q, np.zeros((2, 64, 16), np.float16), np.zeros((3, 16, 8), np.float16),
              C.astype(np.float32))
