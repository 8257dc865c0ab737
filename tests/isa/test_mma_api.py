"""tcsim.mma / mma_regs / Warp: facts worked out by hand, API contracts and errors."""

import numpy as np
import pytest
from facts import FACTS, result_bits

import tcsim
from tcsim import Warp, fragment
from tcsim.isa import samples


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f.name)
def test_hand_derived_fact(fact):
    bits = result_bits(fact, tcsim.mma)
    got = int(bits[0, 0])
    assert got == fact.d_bits, f"{fact.why}: got {got:#x}, want {fact.d_bits:#x}"
    if all(np.isfinite(fact.a_row)) and all(np.isfinite(fact.b_col)):
        # Every other element sums zero terms only: +0.
        assert not np.any(bits.ravel()[1:])


@pytest.mark.parametrize("qualifier", tcsim.supported_qualifiers())
def test_matrix_level_is_unpack_of_register_level(qualifier, rng):
    spec = tcsim.parse(qualifier)
    A, B, C = (spec.format(o).from_bits(x)
               for o, x in zip("abc", samples.draw(
                   spec, "uniform_bits" if spec.integer else "wide_finite", 50, rng)))
    fa, fb, fc, fd = (fragment(qualifier, o) for o in "abcd")
    via_regs = fd.unpack(tcsim.mma_regs(qualifier, fa.pack(A), fb.pack(B), fc.pack(C)))
    # m8n8k4: a warp holds four products; at matrix level each is its own instruction.
    per = spec.products_per_warp
    A, B, C = (x.reshape(50, per, x.shape[-2] // per, x.shape[-1]) for x in (A, B, C))
    direct = tcsim.mma(qualifier, A, B, C).reshape(via_regs.shape)
    assert np.array_equal(fd.format.to_bits(via_regs), fd.format.to_bits(direct))


def test_close_to_float64_for_normal_inputs(rng):
    q = "m16n8k16.row.col.f32.f16.f16.f32"
    A = rng.standard_normal((200, 16, 16)).astype(np.float16)
    B = rng.standard_normal((200, 16, 8)).astype(np.float16)
    C = rng.standard_normal((200, 16, 8)).astype(np.float32)
    D = tcsim.mma(q, A, B, C).astype(np.float64)
    exact = A.astype(np.float64) @ B.astype(np.float64) + C
    assert np.max(np.abs(D - exact) / np.maximum(np.abs(exact), 1)) < 2.0**-20


def test_batch_shapes_broadcast(rng):
    q = "m16n8k8.row.col.f32.f16.f16.f32"
    A = rng.standard_normal((4, 1, 16, 8)).astype(np.float16)
    B = rng.standard_normal((3, 8, 8)).astype(np.float16)
    C = np.ones((16, 8), np.float32)
    D = tcsim.mma(q, A, B, C)
    assert D.shape == (4, 3, 16, 8) and D.dtype == np.float32
    one = tcsim.mma(q, A[2, 0], B[1], C)
    assert np.array_equal(D[2, 1].view(np.uint32), one.view(np.uint32))


def test_bad_inputs_are_named():
    q = "m16n8k8.row.col.f32.f16.f16.f32"
    with pytest.raises(TypeError, match="A: expected dtype float16"):
        tcsim.mma(q, np.zeros((16, 8), np.float32), np.zeros((8, 8), np.float16),
                  np.zeros((16, 8), np.float32))
    with pytest.raises(ValueError, match=r"B: expected a matrix of shape \(\.\.\., 8, 8\)"):
        tcsim.mma(q, np.zeros((16, 8), np.float16), np.zeros((8, 16), np.float16),
                  np.zeros((16, 8), np.float32))
    with pytest.raises(ValueError, match="unsupported architecture 'sm_100'"):
        tcsim.mma(q, np.zeros((16, 8), np.float16), np.zeros((8, 8), np.float16),
                  np.zeros((16, 8), np.float32), arch="sm_100")
    with pytest.raises(TypeError, match="uint32"):
        tcsim.mma_regs(q, np.zeros((32, 2), np.int32), np.zeros((32, 1), np.uint32),
                       np.zeros((32, 4), np.uint32))


def test_warp_executes_the_same_bits(rng):
    q = "m16n8k16.row.col.f32.bf16.bf16.f32"
    spec = tcsim.parse(q)
    A, B, C = (spec.format(o).from_bits(x)
               for o, x in zip("abc", samples.draw(q, "normal", 5, rng)))
    w = Warp(batch=5, registers=16)
    w.load_fragment(q, "a", A, [0, 1, 2, 3])
    w.load_fragment(q, "b", B, [4, 5])
    w.load_fragment(q, "c", C, [6, 7, 8, 9])
    w.mma(q, d=[10, 11, 12, 13], a=[0, 1, 2, 3], b=[4, 5], c=[6, 7, 8, 9])
    D = w.store_fragment(q, "d", [10, 11, 12, 13])
    assert np.array_equal(D.view(np.uint32), tcsim.mma(q, A, B, C).view(np.uint32))
    # in place: D may overwrite C's registers, as in PTX
    w.mma(q, d=[6, 7, 8, 9], a=[0, 1, 2, 3], b=[4, 5], c=[6, 7, 8, 9])
    assert np.array_equal(w.read([6, 7, 8, 9]), w.read([10, 11, 12, 13]))


def test_warp_register_errors():
    w = Warp(registers=8)
    with pytest.raises(ValueError, match="takes 4 register"):
        w.mma("m16n8k8.row.col.f32.f16.f16.f32", d=[0, 1], a=[2, 3], b=[4], c=[5, 6, 7, 0])
    with pytest.raises(IndexError, match="r9 is outside r0..r7"):
        w.read([9])
