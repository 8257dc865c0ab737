"""tcsim.blas's calls: torch's rules, shapes, dtypes, and what tcsim refuses."""

import ml_dtypes
import numpy as np
import pytest

import tcsim.blas as blas

E4M3, E5M2, BF16 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.bfloat16


def rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def test_shapes_and_dtypes_follow_torch(rng):
    A, B = rand(rng, (40, 72), np.float16), rand(rng, (72, 24), np.float16)
    assert blas.matmul(A, B).shape == (40, 24) and blas.matmul(A, B).dtype == np.float16
    assert blas.matmul(rand(rng, (3, 40, 72), BF16), rand(rng, (3, 72, 24), BF16)).shape \
        == (3, 40, 24)
    assert blas.matmul(rand(rng, (2, 3, 40, 72), BF16), rand(rng, (72, 24), BF16)).shape \
        == (2, 3, 40, 24)
    assert blas.linear(rand(rng, (5, 7, 72), np.float16), rand(rng, (24, 72), np.float16),
                       rand(rng, (24,), np.float16)).shape == (5, 7, 24)
    assert blas.addmm(rand(rng, (24,), np.float16), A, B).shape == (40, 24)
    out = blas.scaled_mm(rand(rng, (32, 64), E4M3, 4), rand(rng, (64, 48), E5M2, 4),
                         np.float32(0.5), np.float32(2.0), out_dtype=np.float32)
    assert out.dtype == np.float32 and out.shape == (32, 48)


def test_int_mm_is_the_exact_integer_product(rng):
    A = rng.integers(-128, 128, (64, 256)).astype(np.int8)
    B = rng.integers(-128, 128, (256, 40)).astype(np.int8)
    D = blas.int_mm(A, B)
    assert D.dtype == np.int32
    assert np.array_equal(D, A.astype(np.int64) @ B.astype(np.int64))


def test_tf32_rounds_inputs_to_nearest_even_first(rng):
    """With allow_tf32, an input and its tf32 rounding give the same bits; its truncation
    (what the instruction alone would read) does not, for some elements."""
    A = rand(rng, (32, 256), np.float32)
    B = rand(rng, (256, 32), np.float32)
    bits = A.view(np.uint32)
    half = np.uint32(1 << 12)
    nearest = ((bits + half - 1 + ((bits >> 13) & 1)) & np.uint32(0xFFFFE000)).view(np.float32)
    truncated = (bits & np.uint32(0xFFFFE000)).view(np.float32)
    D = blas.matmul(A, B, allow_tf32=True)
    assert np.array_equal(D.view(np.uint32), blas.matmul(nearest, B, allow_tf32=True)
                          .view(np.uint32))
    assert not np.array_equal(D.view(np.uint32), blas.matmul(truncated, B, allow_tf32=True)
                              .view(np.uint32))


def test_memory_order_is_torch_s_layout():
    """A transposed (Fortran-order) B is what torch calls b.t(): cuBLAS runs another kernel
    for it (measured: NN and NT at 512^3 run different nvjet kernels)."""
    A = np.ones((512, 512), np.float16)
    row = blas.plan("matmul", A, np.ones((512, 512), np.float16))
    col = blas.plan("matmul", A, np.asfortranarray(np.ones((512, 512), np.float16)))
    assert row.kernel != col.kernel and row.kernel.endswith("NNT") and "TN" in col.kernel[-4:]


@pytest.mark.parametrize("call, error, words", [
    (lambda A, B: blas.matmul(A, B[:-1]), ValueError, "cannot be multiplied"),
    (lambda A, B: blas.matmul(A, B.astype(BF16)), TypeError, "same dtype"),
    (lambda A, B: blas.matmul(A.astype(np.float64), B.astype(np.float64)), TypeError,
     "not float64"),
    (lambda A, B: blas.matmul(A[0], B), blas.UnsupportedCallError, "gemv"),
    (lambda A, B: blas.matmul(A.tolist(), B), TypeError, "numpy array"),
    (lambda A, B: blas.matmul(A.astype(">f2"), B), TypeError, "byte order"),
    (lambda A, B: blas.matmul(A, B, allow_tf32=1), TypeError, "allow_tf32"),
    (lambda A, B: blas.addmm(np.ones((3, 3), np.float16), A, B), ValueError, "broadcast"),
    (lambda A, B: blas.addmm(np.ones(24, np.float16), A, B, alpha="2"), TypeError, "alpha"),
    (lambda A, B: blas.linear(A, B), ValueError, "cannot be multiplied"),
    (lambda A, B: blas.scaled_mm(A, B, 1.0, 1.0, out_dtype="bfloat16"), TypeError,
     "float8"),
    (lambda A, B: blas.scaled_mm(A.astype(E5M2), B.astype(E5M2), np.float32(1),
                                 np.float32(1), out_dtype="bfloat16"), TypeError, "e5m2"),
    (lambda A, B: blas.scaled_mm(A.astype(E4M3), B[:, :20].astype(E4M3), np.float32(1),
                                 np.float32(1), out_dtype="bfloat16"), ValueError, "16"),
    (lambda A, B: blas.scaled_mm(A.astype(E4M3), B.astype(E4M3), 1.0, np.float32(1),
                                 out_dtype="bfloat16"), TypeError, "float32"),
    (lambda A, B: blas.scaled_mm(A.astype(E4M3), B.astype(E4M3), np.float32(1),
                                 np.float32(1), out_dtype="float64"), TypeError, "out_dtype"),
    (lambda A, B: blas.int_mm(A.astype(np.int8)[:16], B.astype(np.int8)), ValueError, "M > 16"),
    (lambda A, B: blas.int_mm(np.ones((24, 64), np.int8), np.ones((64, 40), np.int8)),
     blas.UnsupportedCallError, "refuses"),
    (lambda A, B: blas.plan("gemm", A, B), ValueError, "unknown op"),
    (lambda A, B: blas.matmul(A, B, gpu="A100"), blas.UnsupportedCallError, "H100"),
    (lambda A, B: blas.matmul(A, B, plan="split"), TypeError, "Plan"),
])
def test_bad_calls_are_refused_with_a_clear_message(rng, call, error, words):
    A, B = rand(rng, (40, 64), np.float16), rand(rng, (64, 48), np.float16)
    with pytest.raises(error, match=words):
        call(A, B)


def test_inputs_are_not_modified(rng):
    A, B = rand(rng, (40, 64), np.float16), rand(rng, (64, 48), np.float16)
    a, b = A.copy(), B.copy()
    blas.matmul(A, B)
    assert np.array_equal(A.view(np.uint16), a.view(np.uint16))
    assert np.array_equal(B.view(np.uint16), b.view(np.uint16))


def test_a_plan_override_changes_the_split_and_the_bits(rng):
    """plan= is honoured: the same call split 2 and 8 ways gives different bits for some
    element, and splitting cannot change an exactly representable result (small integers)."""
    # f16 outputs hide most f32 differences: 64 x 64 outputs show some, whatever the seed.
    A, B = rand(rng, (64, 4096), np.float16), rand(rng, (4096, 64), np.float16)
    base = blas.plan("matmul", A, B)
    two, eight = (blas.matmul(A, B, plan=base.with_(splits=s)) for s in (2, 8))
    assert not np.array_equal(two.view(np.uint16), eight.view(np.uint16))
    ints = rng.integers(-2, 3, (16, 4096)).astype(np.float16)
    exact = (ints.astype(np.float64) @ ints.T.astype(np.float64)).astype(np.float16)
    for s in (1, 2, 8):
        got = blas.matmul(ints, np.ascontiguousarray(ints.T), plan=base.with_(splits=s))
        assert np.array_equal(got, exact)


def test_empty_problems_give_what_torch_gives():
    """K = 0: zeros (torch.matmul's answer); M or N = 0: an empty result."""
    zeros = blas.matmul(np.zeros((4, 0), np.float16), np.zeros((0, 5), np.float16))
    assert zeros.shape == (4, 5) and not zeros.any()
    assert blas.matmul(np.zeros((0, 8), np.float16), np.ones((8, 4), np.float16)).shape == (0, 4)
    assert blas.matmul(np.ones((3, 8), BF16), np.ones((8, 0), BF16)).shape == (3, 0)


def test_identify_refuses_a_wrong_d_and_grid(rng):
    A, B = rand(rng, (32, 64), np.float16), rand(rng, (64, 48), np.float16)
    D = blas.matmul(A, B)
    with pytest.raises(TypeError, match="dtype float32"):
        blas.identify("matmul", A, B, D=D.astype(np.float32))
    with pytest.raises(ValueError, match="shape"):
        blas.identify("matmul", A, B, D=D[:-1])
    with pytest.raises(ValueError, match="grid"):
        blas.identify("matmul", A, B, D=D, grid=(1, 2))
    found = blas.identify("matmul", A, B, D=D)
    assert found and found[0].splits == 1


@pytest.mark.parametrize("plan, words", [
    (dict(instruction="m16n8k16.row.col.f32.bf16.bf16.f32"), "bf16 inputs"),
    (dict(engine="int", instruction="int8", k_tile=32), "int8 inputs"),
    (dict(epilogue="add"), "needs C"),
])
def test_a_plan_that_cannot_compute_the_call_is_refused(rng, plan, words):
    A, B = rand(rng, (32, 64), np.float16), rand(rng, (64, 32), np.float16)
    base = blas.plan("matmul", A, B)
    with pytest.raises(blas.PlanError, match=words):
        blas.matmul(A, B, plan=base.with_(**plan))


def test_c_first_takes_a_bias_row_and_refuses_alpha(rng):
    """C loaded into the accumulator: a bias row is broadcast; with alpha or beta the epilogue
    cannot express the call."""
    A, B = rand(rng, (24, 64), np.float16), rand(rng, (64, 16), np.float16)
    bias = rand(rng, (16,), np.float16)
    base = blas.plan("addmm", bias, A, B)
    got = blas.addmm(bias, A, B, plan=base.with_(epilogue="c_first"))
    ref = A.astype(np.float64) @ B.astype(np.float64) + bias.astype(np.float64)
    assert np.abs(got.astype(np.float64) - ref).max() <= 2e-3 * np.abs(ref).max()
    with pytest.raises(blas.PlanError, match="alpha"):
        blas.addmm(bias, A, B, alpha=2.0, plan=base.with_(epilogue="c_first"))


def test_alpha_that_overflows_float32_is_refused(rng):
    A, B = rand(rng, (24, 64), np.float16), rand(rng, (64, 16), np.float16)
    with pytest.raises(ValueError, match="overflows float32"):
        blas.addmm(rand(rng, (24, 16), np.float16), A, B, alpha=1e40)


@pytest.mark.parametrize("fast", [False, True])
def test_scaled_mm_f32_nan_is_the_gpus(fast, rng):
    """An e5m2 inf and -inf meeting in one output's sum: the H100's f32 NaN is 0x7fffffff
    (kernel11's twin against _scaled_mm, docs/kernels.md), not the CPU's 0xffc00000; every
    other element stays finite."""
    M, N, K = 32, 16, 64
    A = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e5m2)
    B = rng.standard_normal((K, N)).astype(ml_dtypes.float8_e4m3fn)
    row, k = rng.integers(M), rng.integers(K - 1)
    A[row, k], A[row, k + 1] = np.inf, -np.inf
    B[k, :], B[k + 1, :] = 1, 1
    D = blas.scaled_mm(A, B, np.float32(0.5), np.float32(2), out_dtype=np.float32,
                       use_fast_accum=fast)
    bits = D.view(np.uint32)
    assert (bits[row] == 0x7FFFFFFF).all(), [hex(b) for b in bits[row][:4]]
    assert np.isfinite(np.delete(D, row, axis=0)).all()
