"""kernel11, the fp8 rung, in the simulator.

Its bits are checked two ways: against `tcsim.blas.scaled_mm` (torch._scaled_mm on the H100,
promoted accumulation), and against the promoted chain written out here by hand with
`tcsim.wgmma` m64n256k32 (partial sums of 4 k32 steps from zero, each added to f32
registers, then the scale). Inputs are random fp8 bits with subnormals, NaN, e5m2
infinities (and inf x 0), zero rows and outputs that overflow f16 drawn on purpose
(tests/fp8_inputs.py). Its CUDA twin is checked on the H100 by tests/hw/test_kernel11_hw.py.
"""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from fp8_inputs import FP8, MIXES, OUTS, assert_same_bits, inputs, row_scales

import tcsim
from tcsim import blas
from tcsim.kernels import ProblemSizeError, kernel_named
from tcsim.kernels.kernel11 import measured_tile
from tcsim.kernels.planted import PLANTED

kernel11 = kernel_named("kernel11")


def scaled_mm(A, B, sa, sb, out: str) -> np.ndarray:
    """cuBLAS's answer: torch takes B column-major."""
    return blas.scaled_mm(A, np.asfortranarray(B), sa, sb, out_dtype=OUTS[out],
                          use_fast_accum=False)


def promoted_chain(A, B, sa, sb, out: str, promotion: int = 4) -> np.ndarray:
    """The promoted accumulation by hand: per 64 rows of A and 256 columns of B, wgmma
    m64n256k32 k32 steps in K order; every ``promotion`` steps (and after the last) the
    partial sum, started from zero, is added to f32 registers; D = out(total * (sa * sb) + 0),
    or with row-wise sa (M, 1), sb (1, N) out((total * sb) * sa); NaN 0x7fff for f16/bf16
    (cvt.rn)."""
    (M, K), N = A.shape, B.shape[1]
    Mp, Np, Kp = -(-M // 64) * 64, -(-N // 256) * 256, -(-K // 32) * 32
    a = np.zeros((Mp, Kp), A.dtype)
    a[:M, :K] = A
    b = np.zeros((Kp, Np), B.dtype)
    b[:K, :N] = B
    q = f"m64n256k32.f32.{_name(A.dtype)}.{_name(B.dtype)}"
    a = a.reshape(Mp // 64, 1, 64, Kp)
    b = b.reshape(Kp, Np // 256, 256).transpose(1, 0, 2)  # (N groups, K, 256)
    total = np.zeros((Mp // 64, Np // 256, 64, 256), np.float32)
    part, pending, steps = None, 0, Kp // 32
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(steps):
            k = slice(32 * i, 32 * i + 32)
            part = tcsim.wgmma(q, a[..., k], b[:, k], part)
            pending += 1
            if pending == promotion or i == steps - 1:
                total = np.add(total, part, dtype=np.float32)
                part, pending = None, 0
        total = total.transpose(0, 2, 1, 3).reshape(Mp, Np)[:M, :N]
        if np.size(sa) == 1:  # + 0: a zero is +0 (cuBLAS's beta 0, measured on the H100)
            d = np.multiply(total, np.multiply(sa, sb, dtype=np.float32), dtype=np.float32)
            d = np.add(d, np.float32(0), dtype=np.float32)
        else:
            d = np.multiply(np.multiply(total, sb, dtype=np.float32), sa, dtype=np.float32)
        d = d.astype(OUTS[out])
    if out != "f32":
        d.view(np.uint16)[np.isnan(d)] = 0x7FFF
    return d


def _name(dtype) -> str:
    return next(k for k, v in FP8.items() if np.dtype(v) == dtype)


@pytest.mark.parametrize("mix", MIXES)
@pytest.mark.parametrize("out", list(OUTS))
def test_bits_equal_scaled_mm(mix, out, rng):
    """Random shapes (any M; N and K multiples of 16, torch's rule), both mixes, each
    output type: D is cuBLAS's, bit for bit."""
    M = int(rng.integers(1, 300))
    N = 16 * int(rng.integers(1, 21))
    K = 16 * int(rng.integers(1, 45))
    A, B, sa, sb = inputs(rng, M, N, K, *mix)
    D = tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS[out])
    assert D.dtype == OUTS[out] and D.shape == (M, N)
    assert_same_bits(D, scaled_mm(A, B, sa, sb, out))


@pytest.mark.parametrize("mix", MIXES)
def test_bits_equal_the_promoted_chain_by_hand(mix, rng):
    """Several K tiles and tiles of 256 columns, a ragged edge: the kernel's TMA boxes,
    K-major descriptors, stages, its partial sums and its epilogue map give the
    chain's bits."""
    A, B, sa, sb = inputs(rng, 192, 272, 656, *mix)
    for out in OUTS:
        D = tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS[out],
                      block_n=256, warp_n=256, stages=4, persistent_blocks=3)
        assert_same_bits(D, promoted_chain(A, B, sa, sb, out))


@pytest.mark.parametrize("specials", [True, False])
def test_row_wise_scales_equal_scaled_mm_and_the_chain(specials, rng):
    """scale_a per row of A, scale_b per column of B (e4m3 x e4m3, bf16 out, torch's rule):
    D = bf16((acc * scale_b) * scale_a), cuBLAS's order, on a ragged shape."""
    M, N, K = int(rng.integers(1, 260)), 16 * int(rng.integers(1, 20)), 16 * int(
        rng.integers(1, 40))
    A, B, _, _ = inputs(rng, M, N, K, specials=specials)
    sa, sb = row_scales(rng, M, N)
    D = tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=ml_dtypes.bfloat16)
    assert_same_bits(D, scaled_mm(A, B, sa, sb, "bf16"))
    assert_same_bits(D, promoted_chain(A, B, sa, sb, "bf16"))


def test_the_planted_scale_order_is_caught(rng):
    """The plant multiplies by scale_a first: double rounding in the other order differs
    in some elements, which the bits show (and nothing else does)."""
    A, B, _, _ = inputs(rng, 256, 256, 256, specials=False)
    sa, sb = row_scales(rng, 256, 256)
    D = tcsim.run(PLANTED["kernel11-scale-a-first"], A, B, scale_a=sa, scale_b=sb,
                  out_dtype=ml_dtypes.bfloat16)
    with pytest.raises(AssertionError, match="elements differ"):
        assert_same_bits(D, scaled_mm(A, B, sa, sb, "bf16"))


def test_promotion_is_a_parameter(rng):
    """promotion=2 or 8: the chain with that interval (not the one of 4)."""
    A, B, sa, sb = inputs(rng, 64, 256, 1024, specials=False)
    for promotion in (2, 8):
        D = tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=np.float32,
                      promotion=promotion)
        assert_same_bits(D, promoted_chain(A, B, sa, sb, "f32", promotion))
    assert not np.array_equal(D.view(np.uint32), promoted_chain(A, B, sa, sb, "f32")
                              .view(np.uint32))


def test_the_planted_promotion_off_by_one_is_caught(rng):
    """The plant promotes every 5 k32 steps: no check of the simulator sees it (the schedule
    is well ordered), D's bits do."""
    planted = PLANTED["kernel11-promotion-off-by-one"]
    A, B, sa, sb = inputs(rng, 128, 256, 1024)
    D = tcsim.run(planted, A, B, scale_a=sa, scale_b=sb, out_dtype=np.float32)
    R = scaled_mm(A, B, sa, sb, "f32")
    with pytest.raises(AssertionError, match="elements differ"):
        assert_same_bits(D, R)
    assert_same_bits(D, promoted_chain(A, B, sa, sb, "f32", promotion=5))
    assert_same_bits(tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=np.float32),
                     R)


def test_b_is_read_k_major():
    """fp8 wgmma reads B K-major only: the executor lays B out N rows of K (cuBLAS's TN),
    and a B whose columns differ gives D's columns in order."""
    A = np.ones((64, 32), FP8["e4m3"])
    B = np.zeros((32, 16), FP8["e4m3"])
    B[0] = np.arange(16)
    D = tcsim.run(kernel11, A, B, scale_a=np.float32(1), scale_b=np.float32(1),
                  out_dtype=np.float32)
    assert np.array_equal(D, np.broadcast_to(np.arange(16, dtype=np.float32), (64, 16)))


def test_refusals_name_the_problem(rng):
    A, B, sa, sb = inputs(rng, 64, 64, 64, specials=False)
    one = np.float32(1)
    e5 = B.astype(np.float32).astype(FP8["e5m2"])
    with pytest.raises(ValueError, match=r"e5m2 x e5m2 is refused as torch._scaled_mm"):
        tcsim.run(kernel11, A.astype(np.float32).astype(FP8["e5m2"]), e5, scale_a=sa,
                  scale_b=sb, out_dtype=np.float32)
    with pytest.raises(ProblemSizeError, match=r"K=40 is not a multiple of 16"):
        tcsim.run(kernel11, A[:, :40], B[:40], scale_a=sa, scale_b=sb, out_dtype=np.float32)
    with pytest.raises(ProblemSizeError, match=r"N=60 is not a multiple of 8"):
        tcsim.run(kernel11, A, B[:, :60], scale_a=sa, scale_b=sb, out_dtype=np.float32)
    with pytest.raises(ValueError, match=r"fp8 inputs accumulate in f32.*accumulate='f16'"):
        tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=np.float32,
                  accumulate="f16")
    with pytest.raises(TypeError, match=r"A must be ml_dtypes.float8_e4m3fn or float8_e5m2"):
        tcsim.run(kernel11, A.astype(np.float16), B, scale_a=sa, scale_b=sb,
                  out_dtype=np.float32)
    with pytest.raises(TypeError, match=r"scale_a must be float32"):
        tcsim.run(kernel11, A, B, scale_a=1.0, scale_b=sb, out_dtype=np.float32)
    rows, cols = np.ones((64, 1), np.float32), np.ones((1, 64), np.float32)
    with pytest.raises(ValueError, match=r"one value \(per tensor\) or \(64, 1\) and \(1, 64\)"):
        tcsim.run(kernel11, A, B, scale_a=rows, scale_b=cols.T, out_dtype=ml_dtypes.bfloat16)
    with pytest.raises(ValueError, match=r"row_scales is 0 or 1, and 1 only with e4m3 x e4m3 "
                                         r"inputs and bf16 output"):
        tcsim.run(kernel11, A, B, scale_a=rows, scale_b=cols, out_dtype=np.float32)
    with pytest.raises(TypeError, match=r"needs scale_a, scale_b and out_dtype.*out_dtype"):
        tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb)
    with pytest.raises(ValueError, match=r"out_dtype must be float16, bfloat16.*float32"):
        tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=FP8["e4m3"])
    with pytest.raises(ValueError, match=r"reads no C and has no alpha or beta"):
        tcsim.run(kernel11, A, B, np.zeros((64, 64), np.float32), scale_a=sa, scale_b=sb,
                  out_dtype=np.float32)
    with pytest.raises(ValueError, match=r"kernel10 is not a scaled GEMM"):
        tcsim.run("kernel10", A, B, scale_a=one, scale_b=one, out_dtype=np.float16)
    with pytest.raises(ValueError, match=r"promotion must be >= 1"):
        tcsim.run(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=np.float32, promotion=0)
    with pytest.raises(ValueError, match=r"promotion .* needs fp8 inputs"):
        tcsim.kernel10.params(promotion=4)
    with pytest.raises(ValueError, match=r"fp8 output \(e4m3, e5m2\) is not offered yet"):
        tcsim.kernel7.params(output="e5m2")
    with pytest.raises(ValueError, match=r"fp8 inputs \('e4m3', 'e5m2'\) run on kernel11"):
        tcsim.kernel1.params(inputs="e4m3")


def test_trace_counts_what_the_schedule_issues():
    """M=N=256, K=512 on 128 x 128 tiles: 4 tiles of 4 K tiles; each K tile is 4 k32 steps
    issued by 4 warps of 2 consumers; each tile reads 128 x 512 bytes of A and of B; each
    consumer warp stores 16 rows x 128 columns of D in 16 instructions (bf16: pairs of lanes
    swap words, 8 bytes a lane) or 32 (f32, .v2), each writing 32 bytes of 8 rows: 8 whole
    sectors."""
    tiles, k_tiles = 4, 4
    for out, stores in (("bf16", 16), ("f32", 32)):
        t = tcsim.trace(kernel11, 256, 256, 512, output=out)
        assert t.sites["wgmma"].executions == tiles * k_tiles * 4 * 2 * 4
        assert t.sites["wgmma"].instruction.endswith("m64n128k32.f32.e4m3.e4m3")
        assert t.sites["A_tma"].executions + t.sites["B_tma"].executions == 2 * tiles * k_tiles
        assert t.totals["l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"] == \
            tiles * 2 * 128 * 512
        store = t.sites["D_gmem_store"]
        assert store.executions == tiles * 8 * stores
        assert store.sectors == store.executions * 8
        assert store.sectors * 32 == 256 * 256 * (2 if out == "bf16" else 4)  # no half sector


def test_zero_signs_and_nan_bits_are_the_h100s():
    """Measured on the H100 (tests/hw/test_kernel11_hw.py, docs/kernels.md): per tensor a zero
    result is +0 whatever the scales' signs (cuBLAS adds beta 0 x C), row-wise it keeps the
    product's sign; an f32 NaN is 0x7fffffff, also where the promotion adds +inf and -inf
    (the CPU's inf - inf is 0xffc00000)."""
    M, N, K = 64, 16, 256
    A = np.zeros((M, K), FP8["e5m2"])
    B = np.ones((K, N), FP8["e4m3"])
    A[1, 0], A[1, 128] = np.inf, -np.inf  # two partial sums: +inf, then -inf
    minus = np.float32(-0.5)
    D = tcsim.run(kernel11, A, B, scale_a=minus, scale_b=np.float32(2), out_dtype=np.float32)
    bits = D.view(np.uint32)
    assert (bits[0] == 0).all() and (bits[2:] == 0).all()  # +0, not -0
    assert (bits[1] == 0x7FFFFFFF).all()
    for out in ("bf16", "f16"):
        D = tcsim.run(kernel11, A, B, scale_a=minus, scale_b=np.float32(2), out_dtype=OUTS[out])
        assert (D.view(np.uint16)[0] == 0).all() and (D.view(np.uint16)[1] == 0x7FFF).all()
    A = np.zeros((M, K), FP8["e4m3"])
    B = np.ones((K, N), FP8["e4m3"])
    rows = np.full((M, 1), -1, np.float32)
    D = tcsim.run(kernel11, A, B, scale_a=rows, scale_b=np.ones((1, N), np.float32),
                  out_dtype=OUTS["bf16"])
    assert (D.view(np.uint16) == 0x8000).all()  # (+0 * 1) * -1 = -0


def test_the_measured_tile_is_the_faster_one_in_the_logged_run():
    """`measured_tile` picks, at each size of the logged H100 run
    (docs/evidence/bench_fp8_kernel11_whole_sectors.json), the faster of the two tiles timed
    there with the default groups; and its overrides are a valid kernel11."""
    log = Path(__file__).resolve().parents[2] / "docs" / "evidence" / \
        "bench_fp8_kernel11_whole_sectors.json"
    if not log.is_file():
        pytest.skip("no docs/evidence beside the tests (source tree absent)")
    rows = json.loads(log.read_text())["rows"]
    tiles = {"kernel11": {}, "kernel11 block_n=192,warp_n=192,stages=5":
             {"block_n": 192, "warp_n": 192, "stages": 5}}
    shapes = {tuple(r["shape"]) for r in rows}
    assert len(shapes) >= 2
    for M, N, K in shapes:
        speed = {r["variant"]: r["tflops"] for r in rows if tuple(r["shape"]) == (M, N, K)}
        fastest = max(tiles, key=lambda label: speed[label])
        assert measured_tile(M, N) == tiles[fastest], (M, N, K, speed)
        kernel11.params(**measured_tile(M, N))


@pytest.mark.parametrize("M, N, error", [(0, 4096, ValueError), (4096, -8, ValueError),
                                         ("8192", 8192, TypeError), (8192, 8192.5, TypeError)])
def test_the_measured_tile_refuses_what_is_no_size(M, N, error):
    with pytest.raises(error, match="measured_tile: [MN] must be"):
        measured_tile(M, N)
