"""Properties of tcsim.blas over generated calls: a typed error or the right answer, inputs
untouched, memory order that torch would copy away changes nothing, and small-integer products
(exact in every mode) come out exact."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tcsim.blas as blas

DTYPES = [np.float16, ml_dtypes.bfloat16]
dims = st.integers(1, 48)


@settings(max_examples=40, deadline=None)
@given(M=dims, N=dims, K=dims, dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1))
def test_small_integer_products_are_exact_and_inputs_untouched(M, N, K, dtype, seed):
    rng = np.random.default_rng(seed)
    A = rng.integers(-3, 4, (M, K)).astype(dtype)
    B = rng.integers(-3, 4, (K, N)).astype(dtype)
    a, b = A.copy(), B.copy()
    try:
        D = blas.matmul(A, B)
    except blas.UnsupportedCallError:
        return  # a kernel family tcsim has no model of (gemv shapes): refused, not guessed
    exact = A.astype(np.float64) @ B.astype(np.float64)  # |sums| <= 9 K: exact in f32 and out
    assert D.dtype == np.dtype(dtype) and D.shape == (M, N)
    assert np.array_equal(D.astype(np.float64), exact)
    assert np.array_equal(A.view(np.uint16), a.view(np.uint16))
    assert np.array_equal(B.view(np.uint16), b.view(np.uint16))


@settings(max_examples=25, deadline=None)
@given(M=st.integers(16, 64), N=st.integers(16, 64), K=st.integers(16, 96),
       seed=st.integers(0, 2**32 - 1))
def test_a_strided_view_gives_the_bits_of_its_row_major_copy(M, N, K, seed):
    """torch copies an operand with other strides to row-major: so does the plan."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, 2 * K)).astype(np.float16)[:, ::2]  # neither C nor F order
    B = rng.standard_normal((K, N)).astype(np.float16)
    try:
        strided = blas.matmul(A, B)
    except blas.UnsupportedCallError:
        return
    copied = blas.matmul(np.ascontiguousarray(A), B)
    assert np.array_equal(strided.view(np.uint16), copied.view(np.uint16))


junk = st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=3),
                 st.lists(st.integers(), max_size=3),
                 st.builds(lambda s: np.zeros(s, np.float64), st.tuples(dims, dims)),
                 st.builds(lambda s: np.zeros(s, np.int32), st.tuples(dims, dims)),
                 st.builds(lambda s: np.zeros(s, np.float16), st.tuples(dims)))


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(["matmul", "linear", "int_mm"]), x=junk, y=junk)
def test_bad_operands_get_a_typed_error(op, x, y):
    with pytest.raises((TypeError, ValueError)):
        getattr(blas, op)(x, y)


def _round_f32(x):
    """An exact rational rounded to float32 to nearest even (normal and subnormal range)."""
    from fractions import Fraction
    from math import floor, log2

    if x == 0:
        return Fraction(0)
    e = max(floor(log2(abs(x))), -126)
    while abs(x) >= Fraction(2) ** (e + 1):  # log2's float rounding, corrected
        e += 1
    while e > -126 and abs(x) < Fraction(2) ** e:
        e -= 1
    quantum = Fraction(2) ** (e - 23)
    return round(x / quantum) * quantum  # Fraction's round(): half to even


def _lanes_by_hand(a, b, lanes, width, joined, chunk=0):
    """One output of a lane plan, in exact rationals: slot i to lane (i // width) % lanes,
    each lane an FMA chain (one rounding per step) from zero, then the lanes' sums added."""
    from fractions import Fraction

    K = len(a)
    width = width or max(1, -(-K // lanes))
    acc = [Fraction(0)] * lanes
    part = [Fraction(0)] * lanes  # with a chunk: the chunk's chain, added to acc when full
    count = [0] * lanes
    for i in range(K):
        lane = (i // width) % lanes
        product = Fraction(float(a[i])) * Fraction(float(b[i]))
        if not chunk:
            acc[lane] = _round_f32(acc[lane] + product)
            continue
        part[lane] = _round_f32(part[lane] + product)
        count[lane] += 1
        if count[lane] % chunk == 0:
            acc[lane], part[lane] = _round_f32(acc[lane] + part[lane]), Fraction(0)
    for lane in range(lanes):
        if chunk and count[lane] % chunk:
            acc[lane] = _round_f32(acc[lane] + part[lane])
    if joined == "in_order":
        total = acc[0]
        for v in acc[1:]:
            total = _round_f32(total + v)
        return total
    acc += [Fraction(0)] * ((1 << (lanes - 1).bit_length()) - lanes)  # a tree: zero lanes
    while len(acc) > 1:
        half = len(acc) // 2
        acc = [_round_f32(acc[i] + acc[i + half]) for i in range(half)]
    return acc[0]


@settings(max_examples=40, deadline=None)
@given(M=st.integers(1, 3), N=st.integers(1, 3), K=st.integers(1, 40),
       lanes=st.sampled_from([1, 2, 3, 4, 5, 8, 24, 32]),
       width=st.sampled_from([0, 1, 2, 4, 8]),
       joined=st.sampled_from(["tree", "in_order"]), seed=st.integers(0, 2**32 - 1),
       inputs=st.sampled_from(["f32", "f16", "bf16"]), chunk=st.sampled_from([0, 1, 2, 3]))
def test_lane_plans_are_fma_chains_added_as_the_plan_says(M, N, K, lanes, width, joined, seed,
                                                          inputs, chunk):
    """gemv/gemmSN lane plans (CUDA-core FMA chains per lane, then the lanes added pairwise or
    in order) give, on both engines, the bits of the same arithmetic in exact rationals."""
    dtype = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[inputs]
    rng = np.random.default_rng(seed)
    scale = np.exp2(rng.integers(-6, 7, (M, K)))  # spread exponents: rounding shows
    A = (rng.standard_normal((M, K)) * scale).astype(dtype)
    B = rng.standard_normal((K, N)).astype(dtype)
    plan = blas.Plan("ffma", f"fma.rn.f32.{inputs}", 1, lanes=lanes, lane_width=width,
                     lane_reduction=joined, lane_chunk=chunk)
    from tcsim.blas import compiled
    from tcsim.blas.evaluate import Operands, evaluate

    uint = np.dtype(f"u{A.dtype.itemsize}")
    ops = Operands(A.view(uint), B.view(uint), "float32")
    got = {}
    for engine in ("numpy", "numba" if compiled.available() else "numpy"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(compiled.ENGINE_VARIABLE, engine)
            got[engine] = evaluate(plan, ops)
    for D in got.values():
        for i in range(M):
            for j in range(N):
                want = _lanes_by_hand(A[i], B[:, j], lanes, width, joined, chunk)
                assert D[i, j] == float(want), (i, j, D[i, j], float(want), plan)
