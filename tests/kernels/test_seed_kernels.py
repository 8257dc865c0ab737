"""The seeds' kernels (tcsim.kernels.SEED_KERNELS) on the CPU: what they compute, what they
count, what they refuse. tests/hw/test_seeds_hw.py proves bits and counters on the GPU."""

import numpy as np
import pytest
from gemm_inputs import seed_inputs

import tcsim
from tcsim.kernels import ProblemSizeError
from tcsim.kernels.wmma_basic import blockwise_transposed
from tcsim.trace import HMMA, LDSM, SHARED_LD_CONFLICTS, SHARED_LD_WAVEFRONTS


def _f64(x):
    return np.asarray(x, np.float64)


def test_the_basic_kernels_bug_multiplies_by_transposed_blocks_of_B(rng):
    A, B = seed_inputs(rng, 128, 192, 64, np.float16, edge=False)
    exact = _f64(A) @ _f64(B)
    fixed = tcsim.run("wmma_basic_fixed", A, B)
    as_written = tcsim.run("wmma_basic", A, B)
    scale = np.abs(_f64(A)) @ np.abs(_f64(B))
    assert np.all(np.abs(fixed - exact) <= 1e-5 * scale + 1e-30)  # f32 accumulation
    assert np.median(np.abs(as_written - exact) / scale) > 0.1  # the comparison catches it
    # What it computes: A times B with each 16x16 block transposed, bit for bit.
    same = tcsim.run("wmma_basic_fixed", A, blockwise_transposed(B))
    assert np.array_equal(same.view(np.uint32), as_written.view(np.uint32))


def test_the_shared_memory_kernel_gives_the_basic_fixed_kernels_bits(rng):
    """Both add the 16-wide K steps in order into the same f32 fragments."""
    A, B = seed_inputs(rng, 128, 128, 96, np.float16)
    shared = tcsim.run("wmma_shared", A, B).view(np.uint32)
    assert np.array_equal(shared, tcsim.run("wmma_basic_fixed", A, B).view(np.uint32))


def test_tf32_puzzle_ignores_the_13_bits_tf32_drops(rng):
    A, B = seed_inputs(rng, 256, 128, 64, np.float32, edge=False)
    D = tcsim.run("tf32_puzzle", A, B)
    cut = [(x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32) for x in (A, B)]
    assert np.array_equal(D.view(np.uint32), tcsim.run("tf32_puzzle", *cut).view(np.uint32))
    scale = np.abs(_f64(cut[0])) @ np.abs(_f64(cut[1]))
    assert np.all(np.abs(D - _f64(cut[0]) @ _f64(cut[1])) <= 1e-5 * scale)


def test_tf32_puzzle_counts_the_seeds_tensor_instructions():
    """Seed 004's Nsight Compute profile: 1,048,576 tensor instructions at SIZE = 1024."""
    assert tcsim.trace("tf32_puzzle", 1024, 1024, 1024).totals[HMMA] == 1_048_576


def test_bank_conflicts_follow_from_the_unpadded_tiles():
    # wmma_shared: As rows 64 bytes apart (4 per bank group), Bs rows 128 (all 8): per 8x8
    # matrix 4 and 8 wavefronts, 2 A and 2 B ldmatrix.x4 per warp and 16-wide K step.
    t = tcsim.trace("wmma_shared", 256, 256, 256).totals
    steps = (256 // 64) ** 2 * 4 * (256 // 16)  # blocks x warps x K steps
    assert t[LDSM] == 4 * steps
    assert t[SHARED_LD_WAVEFRONTS] == steps * 2 * 4 * (4 + 8)
    # tf32_puzzle: A's 8 rows 128 bytes apart, B's 4 rows 256 bytes apart: 8 and 4 wavefronts
    t = tcsim.trace("tf32_puzzle", 256, 128, 64).totals
    per_k = 4 * 8 * 2  # blocks x warps x K tiles
    lds = per_k * 4 * (2 * 4 + 4 * 2)  # mma_k steps x (A: 2 fragments x 4, B: 4 x 2)
    assert t[SHARED_LD_WAVEFRONTS] == per_k * 4 * (2 * 4 * 8 + 4 * 2 * 4)
    assert t[SHARED_LD_CONFLICTS] == t[SHARED_LD_WAVEFRONTS] - lds


@pytest.mark.parametrize("name", list(tcsim.kernels.SEED_KERNELS))
def test_the_symbolic_trace_equals_the_exhaustive_one(name):
    p = tcsim.kernels.SEED_KERNELS[name].defaults
    M, N, K = 2 * p.block_m, 3 * p.block_n, 4 * p.block_k
    fast = tcsim.trace(name, M, N, K)
    full = tcsim.trace(name, M, N, K, exhaustive=True)  # also runs the race checks
    assert fast.totals == full.totals and not full.problems


def test_seed_kernels_refuse_what_they_cannot_do(rng):
    A16, B16 = seed_inputs(rng, 64, 64, 32, np.float16, edge=False)
    with pytest.raises(TypeError, match="float32"):
        tcsim.run("tf32_puzzle", A16, B16)
    with pytest.raises(ValueError, match="reads no C"):
        tcsim.run("wmma_shared", A16, B16, np.zeros((64, 64), np.float32))
    with pytest.raises(ValueError, match="reads no C"):
        tcsim.run("wmma_basic", A16, B16, beta=1.0)
    with pytest.raises(ProblemSizeError, match="M=48"):
        tcsim.trace("wmma_basic", 48, 64, 32)
    with pytest.raises(ValueError, match="warp_m"):
        tcsim.run("wmma_basic", A16, B16, warp_m=32)
