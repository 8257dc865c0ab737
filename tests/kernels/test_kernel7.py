"""kernel7 and kernel8 in the simulator: their bits, traces, tile scheduler, and the roles and
mbarriers they run on.

The bits are checked against `tests/wgmma_chain.py` (the same instructions written out without
TMA, descriptors, stages or roles) on inputs with subnormals, overflow, cancellation, inf and
NaN; the H100 checks the twin against tcsim.run (tests/hw/test_hopper_hw.py)."""

import re
import shutil
import subprocess

import numpy as np
import pytest
from gemm_inputs import gemm_inputs
from wgmma_chain import chained_wgmma

import tcsim
from tcsim.kernels import kernel_named
from tcsim.kernels.kernel7 import descriptors, tensor_maps
from tcsim.kernels.roles import (
    Barriers,
    DeadlockError,
    PhaseError,
    TransactionError,
    Waiting,
    interleave,
)
from tcsim.kernels.scheduler import block_tiles, tile_order
from tcsim.memory import MatrixDescriptor

kernel7 = kernel_named("kernel7")
kernel8 = kernel_named("kernel8")


@pytest.mark.parametrize("accumulate", ["f32", "f16"])
@pytest.mark.parametrize("shape", [(128, 256, 64), (256, 512, 320), (384, 256, 1024)])
def test_run_equals_the_wgmma_chain(shape, accumulate, rng):
    M, N, K = shape
    A, B, C, alpha, beta = gemm_inputs(rng, M, N, K)
    D = tcsim.run(kernel7, A, B, C, alpha, beta, accumulate=accumulate)
    want = chained_wgmma(A, B, C, alpha, beta, accumulate)
    assert np.array_equal(D.view(np.uint16), want)
    # and it is a GEMM: within the rounding of K / 16 accumulations and of the f16 output
    a, b = A.astype(np.float64), B.astype(np.float64)
    exact = alpha * (a @ b) + beta * C.astype(np.float64)
    unit = 2.0**-10 if accumulate == "f16" else 2.0**-20  # and the tensor core truncates
    bound = (K // 16 + 2) * unit * abs(alpha) * (np.abs(a) @ np.abs(b)) \
        + 2.0**-10 * np.abs(exact) + 2.0**-24
    finite = np.isfinite(exact) & (np.abs(exact) < 6e4) & (np.abs(a) @ np.abs(b) < 6e4)
    assert (np.abs(D[finite] - exact[finite]) <= bound[finite]).all()


# (persistent blocks, group_m): blocks with 2 or 3 tiles each, unequal counts, a last group of
# block rows shorter than the others; K = 192 is fewer K tiles than stages, so the ring of
# stages wraps around inside a tile and the producer runs into the next tile early.
@pytest.mark.parametrize("persistent, group", [(3, 2), (5, 0), (4, 3)])
@pytest.mark.parametrize("K", [192, 640])
def test_persistent_blocks_compute_every_tile(persistent, group, K, rng):
    A, B, C, alpha, beta = gemm_inputs(rng, 640, 512, K)  # 5 x 2 tiles
    D = tcsim.run(kernel8, A, B, C, alpha, beta, accumulate="f32",
                  persistent_blocks=persistent, group_m=group)
    assert np.array_equal(D.view(np.uint16), chained_wgmma(A, B, C, alpha, beta, "f32"))


def test_tile_order_walks_groups_of_block_rows_down_m_first():
    p = kernel8.params(group_m=2)
    rows, cols = tile_order(p, 3 * 128, 3 * 256)  # 3 x 3 tiles: groups of rows {0, 1}, {2}
    assert list(zip(rows.tolist(), cols.tolist())) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 0), (2, 1), (2, 2)]
    rows, cols = tile_order(kernel7.defaults, 2 * 128, 3 * 256)  # group_m 0: along N first
    assert list(zip(rows.tolist(), cols.tolist())) == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]


@pytest.mark.parametrize("persistent", [1, 4, 7, 9, 100])
def test_each_persistent_block_takes_every_blocks_th_tile(persistent):
    p = kernel8.params(persistent_blocks=persistent, group_m=2)
    M, N = 3 * 128, 3 * 256
    order = list(zip(*(x.tolist() for x in tile_order(p, M, N))))
    blocks = min(persistent, 9)
    got = [list(zip(r, c)) for rows, cols in block_tiles(p, M, N)
           for r, c in zip(rows.tolist(), cols.tolist())]
    assert got == [order[b::blocks] for b in range(blocks)]


def test_a_role_may_not_wait_inside_a_tile():
    m = tcsim.kernels.executor.Executor(
        "kernel8", kernel8.defaults, *(np.zeros((128, 256), np.uint16),) * 2,
        np.zeros((128, 256), np.uint16), np.zeros((128, 256), np.uint16), 1, 0)
    barriers = m.mbarriers("full", 0, 1, 1)
    with m.tile(0), pytest.raises(PhaseError, match="inside `with m.tile"):
        m.wait(barriers, 0, 0)


@pytest.mark.parametrize("block_n", [64, 128, 192])
def test_narrower_tiles_run_too(block_n, rng):
    A, B, C, alpha, beta = gemm_inputs(rng, 128, 2 * block_n, 128)
    D = tcsim.run(kernel7, A, B, C, alpha, beta, block_n=block_n, warp_n=block_n,
                  accumulate="f32")
    assert np.array_equal(D.view(np.uint16), chained_wgmma(A, B, C, alpha, beta, "f32", block_n))


# (tile overrides, B's box columns, its swizzle): 64-column boxes (128-byte rows) where the
# width is a multiple of 64, else 32-column boxes (64-byte rows) under the 64-byte swizzle
B_BOXES = [({}, 64, "128B"), ({"block_m": 192, "block_n": 96, "warp_n": 96}, 32, "64B"),
           ({"block_n": 160, "warp_n": 160}, 32, "64B"),
           ({"block_m": 64, "block_n": 224, "warp_n": 224}, 32, "64B"),
           ({"block_n": 192, "warp_n": 192}, 64, "128B")]


@pytest.mark.parametrize("tile, columns, swizzle", B_BOXES)
def test_tma_boxes_land_where_the_descriptors_read(tile, columns, swizzle):
    """Every element a consumer's wgmma reads through its descriptors is the element the TMA
    box put there: A's box of block_m rows (128-byte swizzled) and B's boxes of 64 K rows x
    ``columns`` (rows of 2 * columns bytes under ``swizzle``), one after the other. B's
    descriptor is MN-major: LBO the bytes of one box, SBO those of 8 of its rows."""
    p = kernel7.params(stages=2, **tile)
    a_map, b_map = (t for _, t in tensor_maps(p, 256, 512, 128))
    assert (b_map.box_rows, b_map.box_cols, str(b_map.swizzle)) == (64, columns, swizzle)
    box_bytes = 64 * columns * 2
    for stage in range(p.stages):
        base = stage * p.stage_bytes
        a_box = a_map.box_offsets(base)  # (block_m rows, 64 k)
        b_boxes = [b_map.box_offsets(base + p.a_tile_bytes + i * box_bytes)
                   for i in range(p.block_n // columns)]
        b_tile = np.concatenate(b_boxes, axis=1)  # (64 k, block_n)
        for kk in range(p.block_k // 16):
            a_desc, b_desc = descriptors(p, stage, kk)
            for consumer, value in enumerate(a_desc):
                read = MatrixDescriptor.decode(int(value)).layout(2, "K", 64).addresses()
                rows = slice(64 * consumer, 64 * consumer + 64)
                assert np.array_equal(read, a_box[rows, 16 * kk:16 * kk + 16])
            b = MatrixDescriptor.decode(int(b_desc))
            assert (b.leading_byte_offset, b.stride_byte_offset, str(b.swizzle)) == \
                (box_bytes, 8 * 2 * columns, swizzle)
            read = b.layout(2, "MN", p.block_n).addresses()
            assert np.array_equal(read, b_tile[16 * kk:16 * kk + 16].T)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("width", [96, 160, 224, 256])
def test_the_twins_direct_epilogue_moves_only_the_tiles_words(width, tmp_path):
    """kernel7's twin loads C and stores D word by word in batches of 16 (hopper.cuh's
    epilogue_tile): each thread moves 2 words per 8 columns, 24 for a 96-wide tile, and a
    partial last batch must not reach into the next tile (the first H100 run of 192 x 96 had
    it store 32, and 27% of D differed). Counted in the PTX: one ld and one st.global.b32 a
    word, all unrolled."""
    from tcsim.hw import runtime

    p = kernel7.params(block_n=width, warp_n=width, accumulate="f32", stages=3)
    source = tmp_path / "kernel7.cu"
    source.write_text(runtime.source_text(kernel7.source))
    options = runtime.options(runtime._target_defines(kernel7.defines(p), "sm_90a"), "sm_90a")
    subprocess.run(["nvcc", "-ptx", *options, "-o", str(tmp_path / "k.ptx"), str(source)],
                   check=True, capture_output=True)
    ptx = (tmp_path / "k.ptx").read_text()
    words = width // 8 * 2
    assert len(re.findall(r"\bst\.global\.b32\b", ptx)) == words
    assert len(re.findall(r"\bld\.global\.b32\b", ptx)) == words


@pytest.mark.parametrize("kernel", [kernel7, kernel8])
def test_trace_counts_one_copy_per_box_and_one_wgmma_per_k_step(kernel):
    M, N, K = 1024, 2048, 4096
    p = kernel.defaults
    trace = tcsim.trace(kernel, M, N, K)
    blocks, k_tiles = (M // 128) * (N // 256), K // 64
    assert trace.sites["A_tma"].executions == blocks * k_tiles
    assert trace.sites["B_tma"].executions == blocks * k_tiles * 4
    # each of the 2 consumers' 4 warps issues 4 wgmma m64n256k16 per K tile
    assert trace.sites["wgmma"].executions == blocks * k_tiles * 4 * 2 * 4
    assert trace.sites["wgmma"].executions * 64 * 256 * 16 // 4 == 2 * M * N * K // 2
    assert trace.sites["B_tma"].sectors * 32 == K * N * (M // p.block_m) * 2


# ---- roles and mbarriers -------------------------------------------------------------------------


def _pipeline(announce: int, copies: int, box: int = 1024):
    """One producer and one consumer over a 2-stage ring of ``copies`` boxes per phase."""
    full, empty = Barriers("full", 0, 2, 1), Barriers("empty", 16, 2, 1)
    log = []

    def producer():
        for k in range(4):
            s = k % 2
            if k >= 2:
                if not empty.completed(s, (k // 2 - 1) & 1):
                    yield Waiting(empty, s, (k // 2 - 1) & 1)
            full.arrive(s, announce, "producer")
            for _ in range(copies):
                full.pay(s, box, "copy")
            log.append(("load", k))

    def consumer():
        for k in range(4):
            s = k % 2
            if not full.completed(s, (k // 2) & 1):
                yield Waiting(full, s, (k // 2) & 1)
            log.append(("use", k))
            empty.arrive(s, 0, "consumer")

    interleave([("producer", producer()), ("consumer", consumer())], "test")
    return log


def test_a_pipeline_runs_each_stage_after_its_copy_and_before_its_reuse():
    log = _pipeline(4096, 4)
    assert [e for e in log if e[0] == "use"] == [("use", k) for k in range(4)]
    for k in range(4):
        assert log.index(("load", k)) < log.index(("use", k))
        if k >= 2:
            assert log.index(("use", k - 2)) < log.index(("load", k))


def test_announcing_too_many_bytes_hangs_and_says_where():
    with pytest.raises(DeadlockError, match=r"full\[0\].*1024 bytes of transactions"):
        _pipeline(4096 + 1024, 4)


def test_announcing_too_few_bytes_is_an_error():
    with pytest.raises(TransactionError, match=r"full\[0\].*1024 bytes too few"):
        _pipeline(4096 - 1024, 4)


def test_a_phase_takes_no_more_arrivals_than_it_expects():
    b = Barriers("empty", 0, 1, 2)
    b.arrive(0, 0, "a")
    b.arrive(0, 0, "b")  # the phase completes and the next begins
    assert b.phase[0] == 1 and b.completed(0, 0) and not b.completed(0, 1)
    b.arrive(0, 0, "c")
    b.arrive(0, 0, "d")
    waiting = Barriers("x", 0, 1, 1)
    waiting.arrive(0, 5, "e")  # its one arrival is in; the phase waits for 5 bytes
    with pytest.raises(PhaseError):
        waiting.arrive(0, 0, "f")
