"""The Hopper rungs (kernel7 .. kernel10) on any M, N, K and on bf16 (issue 34).

Ragged shapes: M anything, N and K multiples of 8 but not of the tiles, down to 8 x 8 x 8. The
bits are checked against `tcsim.wgmma` chained by hand below (no executor, no TMA, no roles:
the matrices zero-padded to whole tiles, as TMA's fill pads them, one m64nNk16 per 16 of K,
then the BLAS epilogue), and the result against an f64 GEMM within the accumulation's error.
The H100 checks the twins against tcsim.run (tests/hw/test_hopper_hw.py).
"""

import ml_dtypes
import numpy as np
import pytest

import tcsim
from tcsim.kernels import HOPPER_KERNELS, ProblemSizeError
from tcsim.kernels.checks import GlobalMemoryError

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"f16": np.dtype(np.float16), "bf16": BF16}
# (M, N, K): nothing divides (K not a multiple of block_k 64, nor of 16), one 8 x 8 x 8,
# several tiles with a ragged last row and column, one row of the last tile
RAGGED = [(200, 264, 104), (8, 8, 8), (136, 520, 72), (129, 256, 64)]


def operands(rng, M, N, K, inputs="f16", output="f16"):
    """A, B of ``inputs``, C of ``output`` (never all zeros), alpha, beta; a few A and B
    entries subnormal in f16 and large, so rounding and cancellation are exercised."""
    A = rng.standard_normal((M, K)) * rng.choice([0.25, 1, 4], (M, 1))
    B = rng.standard_normal((K, N)) * rng.choice([0.25, 1, 4], (1, N))
    A[rng.random(A.shape) < 0.02] *= 2.0**-14
    C = rng.standard_normal((M, N))
    alpha, beta = (float(np.float32(x)) for x in rng.uniform(-2, 2, 2))
    return (A.astype(DTYPES[inputs]), B.astype(DTYPES[inputs]), C.astype(DTYPES[output]),
            alpha, beta)


def by_hand(A, B, C, alpha, beta, inputs, output, block_n, accumulate="f32", block_k=64):
    """D's bits by `tcsim.wgmma` chained by hand: A and B padded with zeros to whole 64-row,
    block_k and block_n tiles (what TMA's fill gives the kernel), one m64nNk16 per 16 of K,
    then f(alpha * acc + beta * C) in f32 steps, rounded to the output type (NaN 0x7fff)."""
    M, K = A.shape
    N = B.shape[1]
    pm, pk, pn = (-(-x // t) * t for x, t in ((M, 64), (K, block_k), (N, block_n)))
    a = np.zeros((pm, pk), A.dtype)
    a[:M, :K] = A
    b = np.zeros((pk, pn), B.dtype)
    b[:K, :N] = B
    q = f"m64n{block_n}k16.{accumulate}.{inputs}.{inputs}"
    acc = np.zeros((pm, pn), np.float32)
    for n0 in range(0, pn, block_n):
        d = np.zeros((pm // 64, 64, block_n), np.float32 if accumulate == "f32" else np.float16)
        for k0 in range(0, pk, 16):
            d = tcsim.wgmma(q, a.reshape(pm // 64, 64, pk)[:, :, k0:k0 + 16],
                            b[k0:k0 + 16, n0:n0 + block_n], d)
        acc[:, n0:n0 + block_n] = d.reshape(pm, block_n).astype(np.float32)
    acc = acc[:M, :N]
    alpha, beta = np.float32(alpha), np.float32(beta)
    with np.errstate(over="ignore", invalid="ignore"):
        x = alpha * acc if beta == 0 else alpha * acc + beta * C.astype(np.float32)
        d = x.astype(DTYPES[output])
    bits = d.view(np.uint16).copy()
    bits[np.isnan(d.astype(np.float32))] = 0x7FFF
    return bits


def within_error(D, A, B, C, alpha, beta, accumulate, output):
    """|D - exact| within K / 16 accumulation roundings (the tensor core truncates) and the
    output's rounding."""
    a, b = A.astype(np.float64), B.astype(np.float64)
    exact = alpha * (a @ b) + beta * C.astype(np.float64)
    unit = 2.0**-10 if accumulate == "f16" else 2.0**-20
    out_unit = 2.0**-7 if output == "bf16" else 2.0**-10
    bound = (A.shape[1] // 16 + 3) * unit * abs(alpha) * (np.abs(a) @ np.abs(b)) \
        + out_unit * np.abs(exact) + 2.0**-24 + (2.0**-133 if output == "bf16" else 0)
    got = D.astype(np.float64)
    return bool((np.abs(got - exact) <= bound).all())


@pytest.mark.parametrize("name", list(HOPPER_KERNELS))
@pytest.mark.parametrize("shape", RAGGED)
@pytest.mark.parametrize("accumulate", ["f32", "f16"])
def test_ragged_shapes(name, shape, accumulate, rng):
    M, N, K = shape
    A, B, C, alpha, beta = operands(rng, M, N, K)
    D = tcsim.run(name, A, B, C, alpha, beta, accumulate=accumulate)
    assert D.shape == (M, N) and D.dtype == np.float16
    assert within_error(D, A, B, C, alpha, beta, accumulate, "f16")
    if shape in ((200, 264, 104), (8, 8, 8)):  # small enough to chain by hand
        assert np.array_equal(D.view(np.uint16),
                              by_hand(A, B, C, alpha, beta, "f16", "f16", 256, accumulate))


@pytest.mark.parametrize("name", list(HOPPER_KERNELS))
@pytest.mark.parametrize("output", ["bf16", "f16"])
@pytest.mark.parametrize("shape", [(200, 264, 104), (128, 256, 128), (8, 16, 24)])
def test_bf16_inputs(name, output, shape, rng):
    M, N, K = shape
    A, B, C, alpha, beta = operands(rng, M, N, K, "bf16", output)
    D = tcsim.run(name, A, B, C, alpha, beta, accumulate="f32", inputs="bf16", output=output)
    assert D.dtype == DTYPES[output]
    assert np.array_equal(D.view(np.uint16), by_hand(A, B, C, alpha, beta, "bf16", output, 256))
    assert within_error(D, A, B, C, alpha, beta, "f32", output)


# persistent blocks with unequal tile counts, groups of block rows cut short by a ragged M,
# narrower tiles, every mix of types
@pytest.mark.parametrize("name, shape, params", [
    ("kernel8", (275, 480, 176), {"block_n": 64, "persistent_blocks": 5, "inputs": "bf16"}),
    ("kernel9", (531, 552, 112), {"block_n": 64, "persistent_blocks": 5, "group_m": 1,
                                  "inputs": "bf16", "output": "bf16"}),
    ("kernel10", (573, 16, 8), {"block_n": 128, "persistent_blocks": 4, "group_m": 2,
                                "output": "bf16"}),
    ("kernel7", (684, 272, 320), {"block_n": 192, "inputs": "bf16", "output": "bf16"}),
])
def test_ragged_tile_orders(name, shape, params, rng):
    inputs, output = params.get("inputs", "f16"), params.get("output", "f16")
    A, B, C, alpha, beta = operands(rng, *shape, inputs, output)
    D = tcsim.run(name, A, B, C, alpha, beta, accumulate="f32", warp_n=params["block_n"],
                  **params)
    assert np.array_equal(D.view(np.uint16),
                          by_hand(A, B, C, alpha, beta, inputs, output, params["block_n"]))


def test_bf16_differs_from_f16_where_it_should(rng):
    """bf16 keeps f16's overflows finite (8 exponent bits): a product past 65504."""
    A = np.full((64, 16), 300, BF16)
    B = np.full((16, 64), 300, BF16)
    D = tcsim.run("kernel7", A, B, None, block_n=64, warp_n=64, accumulate="f32",
                  inputs="bf16", output="bf16")
    assert (D.astype(np.float32) == np.float32(ml_dtypes.bfloat16(16 * 300.0 * 300.0))).all()
    D16 = tcsim.run("kernel7", A.astype(np.float16), B.astype(np.float16), None, block_n=64,
                    warp_n=64, accumulate="f32")
    assert np.isinf(D16).all()


def test_bf16_beta_zero_reads_no_c(rng):
    A, B, _, _, _ = operands(rng, 72, 64, 40, "bf16", "bf16")
    C = np.full((72, 64), np.nan, BF16)
    for name in HOPPER_KERNELS:
        D = tcsim.run(name, A, B, C, -1.5, 0.0, inputs="bf16", output="bf16", accumulate="f32")
        assert np.array_equal(D.view(np.uint16),
                              by_hand(A, B, C, -1.5, 0.0, "bf16", "bf16", 256))


@pytest.mark.parametrize("name", list(HOPPER_KERNELS))
def test_refusals_name_the_problem(name, rng):
    A, B, C, _, _ = operands(rng, 64, 64, 64)
    with pytest.raises(ProblemSizeError, match=r"K=60 is not a multiple of 8.*16 bytes"):
        tcsim.run(name, A[:, :60], B[:60], C)
    with pytest.raises(ProblemSizeError, match=r"N=60 is not a multiple of 8"):
        tcsim.run(name, A, B[:, :60], C[:, :60])
    with pytest.raises(ProblemSizeError, match=r"K=60"):
        tcsim.trace(name, 64, 64, 60)
    with pytest.raises(ValueError, match=r"bf16 inputs accumulate in f32.*accumulate='f16'"):
        tcsim.run(name, A.astype(BF16), B.astype(BF16), C, inputs="bf16", accumulate="f16")
    with pytest.raises(TypeError, match=r"A must be bfloat16.*float16"):
        tcsim.run(name, A, B, C, inputs="bf16", accumulate="f32")
    with pytest.raises(TypeError, match=r"C must be bfloat16"):
        tcsim.run(name, A, B, C, output="bf16", accumulate="f32")
    with pytest.raises(ValueError, match=r"inputs must be 'f16', 'bf16' or 'f32'"):
        tcsim.run(name, A, B, C, inputs="e4m3")


def test_the_simt_rungs_keep_their_rule(rng):
    A, B, C, _, _ = operands(rng, 200, 128, 64)
    with pytest.raises(ProblemSizeError, match=r"M=200 is not a multiple of block_m=\d+"):
        tcsim.run("kernel2", A, B, C)
    with pytest.raises(ValueError, match=r"bf16 inputs and outputs run on the Hopper rungs"):
        tcsim.run("kernel2", A.astype(BF16), B.astype(BF16), C, inputs="bf16",
                  accumulate="f32")


def test_a_box_past_the_maps_edge_is_caught(rng):
    """The planted kernel7-no-edge-fill describes A and B padded to whole tiles: on a ragged
    shape its edge boxes read past the matrices (no fill), caught as a bad address at the
    first such box; on a shape the tiles divide it is kernel7."""
    A, B, C, alpha, beta = operands(rng, 200, 256, 1000)
    with pytest.raises(GlobalMemoryError, match=r"A_tma.*block \(1, 0\).*A\[200, 0\], past "
                       r"the 200x1000 matrix.*256x1000"):
        tcsim.run("kernel7-no-edge-fill", A, B, C, alpha, beta)
    with pytest.raises(GlobalMemoryError, match="past the"):
        tcsim.trace("kernel7-no-edge-fill", 128, 256, 1000)  # B's rows only
    A, B, C, alpha, beta = operands(rng, 128, 256, 192)
    assert np.array_equal(tcsim.run("kernel7-no-edge-fill", A, B, C, alpha, beta),
                          tcsim.run("kernel7", A, B, C, alpha, beta))


def test_zero_filled_bytes_count_as_written(rng):
    """TMA writes a whole box, zeros past the edge: reading them is no uninitialized read, on
    the first round of the stages (K = 8: one K tile, 56 of its 64 columns zeros)."""
    A, B, C, alpha, beta = operands(rng, 8, 8, 8)
    tcsim.run("kernel7", A, B, C, alpha, beta, checks="raise")
    assert not tcsim.trace("kernel10", 8, 8, 8, exhaustive=True, checks="collect",
                           beta=1.0).problems


@pytest.mark.parametrize("name", list(HOPPER_KERNELS))
@pytest.mark.parametrize("shape", [(200, 264, 104), (136, 520, 72), (8, 8, 8)])
def test_the_trace_counts_edge_tiles_as_an_exhaustive_trace(name, shape):
    M, N, K = shape
    fast = tcsim.trace(name, M, N, K, beta=1.0, accumulate="f32").totals
    every = tcsim.trace(name, M, N, K, beta=1.0, accumulate="f32", exhaustive=True).totals
    assert fast == every


@pytest.mark.parametrize("name", list(HOPPER_KERNELS))
def test_tma_loads_count_whole_boxes_and_stores_the_part_inside(name):
    """With 32-byte rows (K and N multiples of 16) each TMA load counts its whole box, the
    zero fill included, as the H100 counts it (docs/kernels.md, "Any shape"): 2 x 2 tiles of
    2 K tiles, each one 128 x 64 box of A and four 64 x 64 of B (kernel10: and 32 boxes of C
    of 16 x 64 per tile); kernel10's TMA stores write D once, nothing past the edge."""
    M, N, K = 200, 272, 96
    totals = tcsim.trace(name, M, N, K, beta=1.0).totals
    tiles, k_tiles = 2 * 2, 2
    boxes = tiles * k_tiles * (128 * 64 + 4 * 64 * 64) * 2
    c_boxes = tiles * 32 * 16 * 64 * 2 if name == "kernel10" else 0
    assert totals["l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"] == boxes + c_boxes
    written = totals["l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum"]
    assert written == (2 * M * N if name == "kernel10" else 0)
    if name == "kernel7":  # the predicated epilogue: 8 rows of 16 bytes a request
        stores = totals["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"]
        assert stores == -(-M // 8) * (N // 8)


def test_explain_takes_ragged_bf16_traces():
    """The speed model has a rate for wgmma .bf16 (f16's) and counts the padded work."""
    ragged = tcsim.trace("kernel10", 1000, 776, 1000, beta=1.0, accumulate="f32",
                         inputs="bf16", output="bf16")
    whole = tcsim.trace("kernel10", 1024, 1024, 1024, beta=1.0, accumulate="f32")
    assert ragged.explain().seconds == pytest.approx(whole.explain().seconds, rel=0.2)


@pytest.mark.parametrize("tile", [{}, {"block_m": 64},
                                  {"block_m": 192, "block_n": 192, "warp_n": 192, "stages": 3},
                                  {"block_m": 256, "block_n": 128, "warp_n": 128, "stages": 3}])
@pytest.mark.parametrize("name", ["kernel7", "kernel10"])
def test_setmaxnreg_requests_fit_the_register_file(name, tile):
    # setmaxnreg.inc waits until the SM can grant it: the producer's and every consumer's
    # requests must fit 64K registers together, or the twin hangs (three consumers of 232
    # registers hung the H100). One or two consumers keep the 232 the rungs were tuned with.
    kernel = tcsim.kernels.kernel_named(name)
    p = kernel.params(accumulate="f32", **tile)
    d = kernel.defines(p)
    producer, consumer = d["PRODUCER_REGISTERS"], d["CONSUMER_REGISTERS"]
    assert 128 * (producer + p.consumers * consumer) <= 65536
    assert consumer % 8 == 0 and producer % 8 == 0
    if p.consumers <= 2:
        assert consumer == 232


# Tiles a multiple of 32 but not of 64 wide (B in boxes of 32 columns under the 64-byte
# swizzle, the epilogues in chunks of 32 columns): 192 x 96 (cuBLAS's at 1536^3), 128 x 96,
# 128 x 160, 64 x 224.
WIDTHS = [(192, 96), (128, 96), (128, 160), (64, 224)]
# (M, N, K, accumulate, inputs, output, persistent blocks): ragged M, N and K (N not a
# multiple of the tile nor of 32), one 8 x 8 x 8, bf16, blocks of several tiles each
WIDE_CASES = [(200, 184, 136, "f32", "f16", "f16", 0), (331, 296, 72, "f16", "f16", "f16", 2),
              (8, 8, 8, "f16", "f16", "f16", 0), (130, 488, 200, "f32", "bf16", "bf16", 3),
              (200, 184, 136, "f32", "bf16", "f16", 0)]


@pytest.mark.parametrize("name", list(HOPPER_KERNELS))
@pytest.mark.parametrize("tile", WIDTHS, ids=lambda t: f"{t[0]}x{t[1]}")
def test_tiles_a_multiple_of_32_wide_give_the_chained_wgmma(name, tile, rng):
    bm, bn = tile
    for M, N, K, accumulate, inputs, output, persistent in WIDE_CASES:
        A, B, C, alpha, beta = operands(rng, M, N, K, inputs, output)
        options = {"block_m": bm, "block_n": bn, "warp_n": bn, "stages": 3,
                   "accumulate": accumulate, "inputs": inputs, "output": output}
        if persistent and name != "kernel7":
            options["persistent_blocks"] = persistent
        D = tcsim.run(name, A, B, C, alpha, beta, **options)
        want = by_hand(A, B, C, alpha, beta, inputs, output, bn, accumulate)
        assert np.array_equal(D.view(np.uint16), want), (name, tile, M, N, K, options)
        assert within_error(D, A, B, C, alpha, beta, accumulate, output)


@pytest.mark.parametrize("name", ["kernel9", "kernel10"])
def test_a_96_wide_tile_with_beta_zero_reads_no_c(name, rng):
    A, B, _, alpha, _ = operands(rng, 200, 184, 136)
    C = np.full((200, 184), np.nan, np.float16)
    D = tcsim.run(name, A, B, C, alpha, 0.0, block_m=192, block_n=96, warp_n=96, stages=5,
                  accumulate="f32", persistent_blocks=2)
    assert np.array_equal(D.view(np.uint16), by_hand(A, B, C, alpha, 0.0, "f16", "f16", 96))


@pytest.mark.parametrize("name", list(HOPPER_KERNELS))
def test_a_96_wide_tile_copies_b_in_32_column_boxes(name):
    """192 x 96 tiles at 200 x 176 x 96 (rows of whole 32-byte sectors): 2 x 2 tiles of 2 K
    tiles. Each K tile is one box of A (192 x 64 f16, 24 KiB) and three of B (64 rows x 32
    columns, 4 KiB each), counted whole past the edge; each consumer warp (3 x 4 of them)
    issues 4 wgmma m64n96k16 a K tile. kernel10 asks for C in 16 x 32 boxes (1 KiB), 12 warps
    x 3 of them a tile, and stores D once; kernel9 stages 32 columns at a time: per warp and
    chunk, two st.shared.v4 of C (8 rows of 64 bytes: 4 wavefronts each), two ldmatrix.x4 and
    two stmatrix.x4. A wgmma reads its operands in wavefronts of 128 bytes, B's 64-byte
    swizzled rows too: (64 x 16 + 16 x 96) x 2 / 128 = 40 a warpgroup's wgmma (the H100 counted
    76,800 op_gmma wavefronts for 1,920 of them at 768x384x640, 2026-11-26)."""
    M, N, K = 200, 176, 96
    t = tcsim.trace(name, M, N, K, beta=1.0, accumulate="f32", block_m=192, block_n=96,
                    warp_n=96, stages=5)
    tiles, k_tiles, warps = 4, 2, 12
    assert t.sites["A_tma"].executions == tiles * k_tiles
    assert t.sites["B_tma"].executions == tiles * k_tiles * 3
    assert t.sites["wgmma"].instruction.endswith("m64n96k16.f32.f16.f16")
    assert t.sites["wgmma"].executions == tiles * k_tiles * 4 * warps
    assert t.sites["wgmma"].wavefronts == tiles * k_tiles * 4 * 3 * 40
    c_boxes = tiles * warps * 3 * 16 * 32 * 2 if name == "kernel10" else 0
    assert t.totals["l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"] == \
        tiles * k_tiles * (192 * 64 * 2 + 3 * 64 * 32 * 2) + c_boxes
    assert t.totals["l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum"] == \
        (2 * M * N if name == "kernel10" else 0)
    if name == "kernel9":
        for site in ("C_smem_store", "C_ldmatrix", "D_stmatrix"):
            assert t.sites[site].executions == tiles * warps * 3 * 2, site
            assert t.sites[site].wavefronts == 4 * t.sites[site].executions, site


@pytest.mark.parametrize("name", list(HOPPER_KERNELS))
@pytest.mark.parametrize("block_n", [80, 32, 272, 200])
def test_tile_widths_off_the_32_column_boxes_are_refused(name, block_n):
    """kernel9's and kernel10's epilogues refuse a width off 32 columns first."""
    with pytest.raises(ValueError, match=rf"multiple of 32.*block_n={block_n}"):
        tcsim.trace(name, 256, 256, 128, block_n=block_n, warp_n=block_n)


@pytest.mark.parametrize("columns", [0, 16, 48, 96, 128, "64", None])
def test_a_box_width_off_the_two_swizzles_is_refused(columns):
    from tcsim.kernels.params import box_swizzle

    with pytest.raises(ValueError, match=r"64 or 32 columns wide"):
        box_swizzle(columns)
    assert box_swizzle(64).name != box_swizzle(32).name  # 128-byte and 64-byte rows
