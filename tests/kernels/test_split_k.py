"""Split-K on kernel10 (`tcsim.kernels.split_k`): the documented reduction order checked
against references built without the simulator's reduction, ragged K ranges, the workspace
traffic the trace counts, and the bad inputs.

Two independent references (tests/split_k_inputs.py):

- *order*: inputs whose per-split partials are exact in f32 (integers; one K column of split
  0 gives +-2^24, one of split 1 -+2^24), so each partial is numpy's exact dot product, and
  their f32 sum in the documented order ((p[S-1] + p0) + p1 ... rounds near 2^24) then the
  epilogue in numpy gives D; another order gives other bits;
- *composition*: kernel10 without split-K on each split's K slice, with partials small
  integers that f16 holds exactly, summed in f32 in the documented order: the same D.
"""

import numpy as np
import pytest
from split_k_inputs import (
    BK,
    in_order,
    kernel10,
    order_inputs,
    reference,
    reversed_order,
    split_slices,
)

import tcsim
from tcsim.kernels import ProblemSizeError
from tcsim.kernels.split_k import k_range


@pytest.mark.parametrize("shape,splits,tile", [
    ((100, 264, 328), 3, {}),    # ragged M, N; K 6 tiles
    ((64, 256, 448), 4, {}),     # 7 K tiles: 1, 2, 2, 2
    ((130, 512, 320), 5, {}),    # one K tile each
    # 96-wide tiles (B in 32-column boxes; 48 f32 registers a thread, 12 workspace rows)
    ((200, 264, 328), 3, {"block_m": 192, "block_n": 96, "warp_n": 96, "stages": 5}),
    ((100, 176, 448), 4, {"block_n": 96, "warp_n": 96, "stages": 7})])
def test_the_partials_are_summed_in_split_order_in_f32(rng, shape, splits, tile):
    M, N, K = shape
    A, B, ranges = order_inputs(rng, M, N, K, splits)
    C = rng.integers(-8, 9, (M, N)).astype(np.float16)
    want = reference(A, B, C, 1.0, 0.5, ranges)
    got = tcsim.run(kernel10, A, B, C, 1.0, 0.5, accumulate="f32", splits=splits, **tile)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    # the order shows: the exact sum (no split) differs on some elements
    exact = A.astype(np.float64) @ B.astype(np.float64) + 0.5 * C
    assert not np.array_equal(got.astype(np.float64), exact.astype(np.float16))


def test_summing_in_another_order_is_caught(rng):
    """The planted bug (the twin's PLANT_SPLIT_ORDER): the reference sees it."""
    A, B, ranges = order_inputs(rng, 100, 264, 328, 3)
    C = np.zeros((100, 264), np.float16)
    want = reference(A, B, C, 1.0, 0.0, ranges)
    got = tcsim.run(reversed_order, A, B, C, accumulate="f32", splits=3)
    assert not np.array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("splits", [2, 3, 5])
def test_split_k_equals_kernel10_on_each_k_slice_summed_in_order(rng, splits):
    """The composition: each split's partial is kernel10 (no split) on its K slice (small
    integers: f16 holds them exactly), summed in f32 in split order, then the epilogue."""
    M, N, K = 72, 264, 5 * BK + 40  # 6 K tiles, the last ragged
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, N)).astype(np.float16)
    C = rng.standard_normal((M, N)).astype(np.float16)
    alpha, beta = 0.75, -1.25
    parts = [tcsim.run(kernel10, A[:, r], B[r, :], accumulate="f32")
             for r in split_slices(K, splits)]
    want = (np.float32(alpha) * in_order(parts) + np.float32(beta) * C.astype(np.float32)) \
        .astype(np.float16)
    got = tcsim.run(kernel10, A, B, C, alpha, beta, accumulate="f32", splits=splits)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_random_inputs_stay_close_to_the_exact_product(rng):
    M, N, K = 128, 256, 1024
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    for splits in (1, 2, 16):
        got = tcsim.run(kernel10, A, B, accumulate="f32", splits=splits, block_m=64)
        assert np.abs(got - exact).max() <= 2 ** -9 * np.abs(exact).max()


def test_k_ranges_cover_k_once_and_differ_by_at_most_one_tile():
    for n in range(1, 40):
        for splits in range(1, n + 1):
            ranges = [k_range(n, splits, s) for s in range(splits)]
            assert ranges[0][0] == 0 and ranges[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
            sizes = {stop - first for first, stop in ranges}
            assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("block_m,splits", [(128, 2), (64, 3), (64, 4)])
def test_the_trace_counts_the_workspace_traffic(block_m, splits):
    """S - 1 partial stores and S - 1 partial loads per tile, each the tile's f32 bytes in
    whole 32-byte sectors, 512 bytes (16 sectors) a warp instruction; one block per (tile,
    split) launched."""
    M, N, K = 200, 520, 1024
    tiles = -(-M // block_m) * -(-N // 256)
    t = tcsim.trace(kernel10, M, N, K, accumulate="f32", splits=splits, block_m=block_m,
                    beta=1.0)
    partial_bytes = block_m * 256 * 4
    for site in ("partial_store", "partial_load"):
        s = t.sites[site]
        assert s.sectors == (splits - 1) * tiles * partial_bytes // 32
        assert s.executions == s.sectors // 16
    one = tcsim.trace(kernel10, M, N, K, accumulate="f32", block_m=block_m, beta=1.0)
    for site in ("wgmma", "A_tma", "B_tma"):  # the main loop's work is split, not repeated
        assert t.sites[site].executions == one.sites[site].executions
    for site in ("C_tma", "D_tma", "D_stmatrix"):  # one epilogue per tile
        assert t.sites[site].executions == one.sites[site].executions
    p = kernel10.params(accumulate="f32", splits=splits, block_m=block_m)
    assert kernel10.launch_shape(p, M, N)[0] == (tiles * splits,)
    assert kernel10.defines(p)["SPLITS"] == splits
    assert "SPLITS" not in kernel10.defines(kernel10.params(accumulate="f32"))


def test_the_exhaustive_checks_find_nothing_wrong(rng):
    t = tcsim.trace(kernel10, 136, 264, 456, accumulate="f32", splits=3, exhaustive=True,
                    beta=1.0)
    assert not t.problems


def test_bad_splits_are_refused_and_named(rng):
    A = rng.standard_normal((64, 192)).astype(np.float16)
    B = rng.standard_normal((192, 256)).astype(np.float16)
    with pytest.raises(ValueError, match="splits must be"):
        tcsim.run(kernel10, A, B, accumulate="f32", splits=0)
    with pytest.raises(ValueError, match="splits"):
        tcsim.run(kernel10, A, B, accumulate="f32", splits=1.5)
    with pytest.raises(ProblemSizeError, match="splits=4 exceeds K's 3 K tiles"):
        tcsim.run(kernel10, A, B, accumulate="f32", splits=4)
    with pytest.raises(ProblemSizeError, match="splits=4 exceeds"):
        tcsim.trace(kernel10, 64, 256, 192, accumulate="f32", splits=4)
    with pytest.raises(ValueError, match=r"sums f32 partials: it needs accumulate='f32'"):
        tcsim.run(kernel10, A, B, accumulate="f16", splits=2)
    with pytest.raises(ValueError, match="runs on kernel10's TMA epilogue"):
        tcsim.run("kernel9", A, B, accumulate="f32", splits=2)
    # splits=1 is today's kernel: the same bits as without the parameter
    assert np.array_equal(tcsim.run(kernel10, A, B, accumulate="f32", splits=1).view(np.uint16),
                          tcsim.run(kernel10, A, B, accumulate="f32").view(np.uint16))


def test_choose_tile_weighs_split_k_with_f32_accumulators():
    c = tcsim.choose_tile(kernel10, 1024, 1024, 1024, accumulate="f32")
    assert any("split" in label for label in c.explanations)
    split = c.explanations["64x256 split 2"]
    assert split.details["blocks"] == 128 and split.details["reduction_cycles"] > 0
    assert "64 tiles x 2 splits of K = 128 blocks" in str(c)
    # f16 accumulators: split-K is not a candidate, and the choice says so
    f16 = tcsim.choose_tile(kernel10, 1024, 1024, 1024)
    assert not any("split" in label for label in f16.explanations)
    assert len(f16.set_aside) == 9 and "9 split-K variants not weighed" in str(f16)  # 3 tiles x 3
    assert not tcsim.choose_tile("kernel9", 1024, 1024, 1024).set_aside
    # a long K on few tiles: a split of the 256-wide tiles is predicted faster than none (the
    # narrower tiles' own miss there: tests/perf/test_tile_variants.py)
    wide = {label: v for label, v in tcsim.perf.TILE_VARIANTS["kernel10"].items()
            if label.startswith(("128x256", "64x256"))}
    c = tcsim.choose_tile(kernel10, 256, 4096, 16384, accumulate="f32", candidates=wide)
    assert "split" in c.label


def test_a_reducer_that_finds_partials_missing_is_a_deadlock(rng, monkeypatch):
    """Run the splits out of order (the reducer first): on the GPU it would wait forever; the
    simulator names it."""
    from tcsim.kernels import executor

    original = executor.block_units
    monkeypatch.setattr(executor, "block_units",
                        lambda p, M, N: original(p, M, N)[::-1])
    A = rng.standard_normal((64, 192)).astype(np.float16)
    B = rng.standard_normal((192, 256)).astype(np.float16)
    with pytest.raises(tcsim.SimulationError, match="waits for 2 partials written and finds 0"):
        tcsim.run(kernel10, A, B, accumulate="f32", splits=3)
