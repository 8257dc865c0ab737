"""wmma.store.d to shared memory in a schedule (Machine.wmma_store_shared): seed 003's shared
kernel with its result staged through shared memory, one 16x16 fragment per warp at a time,
stored in one layout and read back as C in another."""

import dataclasses

import numpy as np
import pytest
from gemm_inputs import seed_inputs

import tcsim
from tcsim.kernels.wmma_basic import blockwise_transposed
from tcsim.kernels.wmma_shared import QUALIFIER, accumulate, wmma_shared
from tcsim.trace import SHARED_ST_INST, SHARED_ST_WAVEFRONTS, count_wmma

FRAGMENT_BYTES = 16 * 16 * 4  # an f32 16x16 fragment


def staged(store_layout: str, load_layout: str):
    """wmma_shared whose every D fragment goes to global memory by way of shared memory."""

    def program(m, p, A_smem, B_smem):
        rows, cols, acc = accumulate(m, p, A_smem, B_smem)
        stage = m.warp.ravel() * FRAGMENT_BYTES  # A's tile is free after the last barrier
        for i in range(acc.shape[2]):
            for j in range(acc.shape[3]):
                m.wmma_store_shared("D_stage", QUALIFIER, store_layout, stage, 16,
                                    acc[:, :, i, j])
                c = m.wmma_load_shared("C_reload", QUALIFIER, "c", load_layout, stage, 16)
                m.wmma_store_global("D_store", QUALIFIER, "row", "D", rows[:, i],
                                    cols[:, j], c)

    return dataclasses.replace(wmma_shared, name=f"staged_{store_layout}_{load_layout}",
                               program=program)


@pytest.mark.parametrize("layout", ["row", "col"])
def test_a_store_and_load_in_one_layout_give_the_kernels_bits(layout, rng):
    A, B = seed_inputs(rng, 128, 64, 64, np.float16)
    want = tcsim.run(wmma_shared, A, B).view(np.uint32)
    got = tcsim.run(staged(layout, layout), A, B, checks="raise").view(np.uint32)
    assert np.array_equal(got, want)


def test_a_col_store_read_back_row_transposes_each_fragment(rng):
    A, B = seed_inputs(rng, 128, 64, 64, np.float16, edge=False)
    want = blockwise_transposed(tcsim.run(wmma_shared, A, B)).view(np.uint32)
    got = tcsim.run(staged("col", "row"), A, B).view(np.uint32)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("layout", ["row", "col"])
def test_the_staging_stores_are_counted_as_their_lowering(layout):
    M = N = K = 128
    t = tcsim.trace(staged(layout, layout), M, N, K)
    one = count_wmma(QUALIFIER, "d", layout, "shared", 16)
    stores = (M // 64) * (N // 64) * 4 * 4  # blocks x warps x fragments per warp
    assert t.sites["D_stage"].executions == stores * one[SHARED_ST_INST]
    assert t.sites["D_stage"].wavefronts == stores * one[SHARED_ST_WAVEFRONTS]
    # row: four 64-bit stores of 2 wavefronts each; col: eight 32-bit stores, 1 wavefront
    # each if the 8 rows of a register pair are on distinct banks (16 f32 apart: they are not)
    assert one[SHARED_ST_INST] == {"row": 4, "col": 8}[layout]
