"""Properties of the kernel entry points: tcsim.run, tcsim.trace and GemmParams.

- D does not depend on the memory layout of A, B and C, and they are never modified.
- alpha and beta are real numbers (TypeError otherwise), rounded to float32 as the twin
  receives them.
- Problem sizes and tile parameters are checked where they enter: ProblemSizeError for M, N,
  K (and a problem larger than memory, refused before anything is allocated), ValueError or
  TypeError for tile parameters, and never another exception.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prop_inputs import FEW, SOME, bits, in_layout, random_values, refused_quickly

import tcsim
from tcsim.kernels import (
    FP8_KERNELS,
    HOPPER_KERNELS,
    KERNELS,
    SEED_KERNELS,
    GemmParams,
    ProblemSizeError,
)
from tcsim.kernels.planted import PLANTED

SMALL = dict(block_m=64, block_n=64, block_k=32, warp_m=32, warp_n=32, warp_k=16)
LAYOUTS = ("contiguous", "fortran", "transposed", "strided", "reversed", "readonly")
kernels = st.sampled_from(sorted(KERNELS))
# every name kernel_named takes (short texts drawn as "no kernel" must avoid them)
NAMED = {*KERNELS, *HOPPER_KERNELS, *FP8_KERNELS, *SEED_KERNELS, *PLANTED}
seeds = st.integers(0, 2**32 - 1)


def problem(seed: int, M=64, N=64, K=128):  # K: kernel6's 4 stages need 3 tiles of 32
    rng = np.random.default_rng(seed)
    return (random_values(np.float16, (M, K), rng) / 8, random_values(np.float16, (K, N), rng) / 8,
            random_values(np.float16, (M, N), rng) / 8)


@FEW
@given(kernels, seeds, st.tuples(*[st.sampled_from(LAYOUTS)] * 3))
def test_run_does_not_depend_on_layout_and_keeps_its_inputs(name, seed, kinds):
    pairs = [in_layout(x, kind) for x, kind in zip(problem(seed), kinds)]
    before = [bits(p[1]).copy() for p in pairs]
    expected = tcsim.run(name, *(p[0] for p in pairs), 1.5, 0.5, **SMALL)
    got = tcsim.run(name, *(p[1] for p in pairs), 1.5, 0.5, **SMALL)
    assert got.dtype == np.float16 and got.shape == (64, 64)
    assert np.array_equal(bits(got), bits(expected))
    for p, b in zip(pairs, before):
        assert np.array_equal(bits(p[1]), b)


@FEW
@given(st.one_of(st.integers(-4, 4), st.floats(-4, 4), st.sampled_from(
    [np.float16(0.75), np.int8(3), np.float64(-1.25), np.array(2.5), np.uint16(2)])), seeds)
def test_real_alpha_and_beta_are_rounded_to_float32(scalar, seed):
    A, B, C = problem(seed)
    as_f32 = float(np.float32(float(scalar)))
    got = tcsim.run("kernel1", A, B, C, alpha=scalar, beta=scalar, **SMALL)
    assert np.array_equal(bits(got), bits(tcsim.run("kernel1", A, B, C, as_f32, as_f32, **SMALL)))


@SOME
@given(st.one_of(st.text(max_size=4), st.none(), st.booleans(), st.complex_numbers(),
                 st.lists(st.floats(), min_size=1, max_size=2), st.just(np.array([1.0, 2.0])),
                 st.just(np.bool_(True)), st.just(object())),
       st.sampled_from(["alpha", "beta"]))
def test_other_alpha_and_beta_are_type_errors(bad, which):
    A, B, C = problem(0)
    with pytest.raises(TypeError, match=f"{which} must be a real number"):
        tcsim.run("kernel1", A, B, C, **{which: bad}, **SMALL)


size = st.one_of(st.integers(-2, 2**33), st.sampled_from([0, 64, 2**31, 2**40]),
                 st.floats(0, 512), st.text(max_size=3), st.booleans(), st.none(),
                 st.sampled_from([np.int64(64), np.uint32(128), np.float64(64.0)]))


@SOME
@given(kernels, size, size, size)
def test_trace_sizes_are_problem_size_errors_or_fine(name, M, N, K):
    try:
        t = tcsim.trace(name, M, N, K, **SMALL)
    except ProblemSizeError as error:
        assert str(error)
        return
    assert all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and 0 < x < 2**31
               for x in (M, N, K))
    assert all(type(v) is int and v >= 0 for v in t.totals.values())
    assert all(type(x) is int for x in t.problem)
    t.to_json()  # plain ints: JSON takes them


@FEW
@given(kernels, st.sampled_from([np.int16, np.int64, np.uint32, int]),
       st.sampled_from([(256, 256, 128), (512, 256, 256), (1024, 1024, 2048)]))
def test_traces_do_not_depend_on_the_integer_type_of_the_sizes(name, kind, mnk):
    expected = tcsim.trace(name, *mnk)
    got = tcsim.trace(name, *(kind(x) for x in mnk))
    assert got.totals == expected.totals and got.problem == mnk
    assert got.to_json() == expected.to_json()


@FEW
@given(kernels, st.sampled_from([(2**20, 2**20, 2**20), (2**16, 2**16, 2**17),
                                 (2**21, 2**17, 256)]))
def test_a_problem_larger_than_memory_is_refused_before_allocating(name, mnk):
    M, N, K = mnk
    A = np.broadcast_to(np.float16(1), (M, K))  # views: nothing behind them
    B = np.broadcast_to(np.float16(1), (K, N))
    with refused_quickly(), pytest.raises(ProblemSizeError, match="more than this machine's"):
        tcsim.run(name, A, B)


@FEW
@given(st.sampled_from([(0, 64), (64, 0), (0, 0)]))
def test_empty_problems_are_refused(shape):
    A = np.zeros((shape[0], 64), np.float16)
    B = np.zeros((64, shape[1]), np.float16)
    with pytest.raises(ProblemSizeError, match="must be a positive integer"):
        tcsim.run("kernel1", A, B, **SMALL)


fields = st.sampled_from(["block_m", "block_n", "block_k", "warp_m", "warp_n", "warp_k",
                          "mma_k", "stages", "accumulate", "cluster_m", "persistent_blocks"])
values = st.one_of(st.integers(-2, 2**40), st.sampled_from([8, 16, 32, 64, 128, 256]),
                   st.floats(0, 64), st.text(max_size=3), st.none(), st.booleans(),
                   st.sampled_from([np.int32(64), "f16", "f32", ["f16"]]))


@SOME
@given(st.dictionaries(fields, values, max_size=3), kernels)
def test_tile_parameters_are_checked(overrides, name):
    try:
        p = tcsim.kernels.kernel_named(name).params(**overrides)
    except (ValueError, TypeError) as error:
        assert str(error)
        return
    assert all(type(getattr(p, f)) is int for f in ("block_m", "block_n", "block_k", "warp_m",
                                                     "warp_n", "warp_k", "mma_k", "stages",
                                                     "cluster_m", "persistent_blocks"))
    assert p == GemmParams(**p.as_dict())


@FEW
@given(st.one_of(st.integers(), st.none(), st.just(["kernel1"]),
                 # text that names no kernel (hypothesis found "kernel1" itself once)
                 st.text(max_size=8).filter(lambda s: s not in NAMED)),
       st.sampled_from(["run", "trace"]))
def test_kernels_are_named_or_given(kernel, entry):
    A, B, C = problem(0)
    with pytest.raises((TypeError, ValueError), match="kernel"):
        if entry == "run":
            tcsim.run(kernel, A, B, C, **SMALL)
        else:
            tcsim.trace(kernel, 64, 64, 128, **SMALL)


@FEW
@given(st.one_of(st.text(max_size=6), st.none(), st.integers(), st.just(["raise"])),
       st.sampled_from(["run", "trace"]))
def test_checks_modes_are_checked(mode, entry):
    if mode in ("raise", "warn", "off", "collect"):
        return
    A, B, C = problem(0)
    with pytest.raises(ValueError, match="checks must be one of"):
        if entry == "run":
            tcsim.run("kernel1", A, B, C, checks=mode, **SMALL)
        else:
            tcsim.trace("kernel1", 64, 64, 128, checks=mode, **SMALL)
