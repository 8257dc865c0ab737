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
