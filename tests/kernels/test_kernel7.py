"""kernel7 in the simulator: its bits, its trace, and the roles and mbarriers it runs on.

The bits are checked against `tests/wgmma_chain.py` (the same instructions written out without
TMA, descriptors, stages or roles) on inputs with subnormals, overflow, cancellation, inf and
NaN; the H100 checks the twin against tcsim.run (tests/hw/test_hopper_hw.py)."""

import numpy as np
import pytest
from gemm_inputs import gemm_inputs
from wgmma_chain import chained_wgmma

import tcsim
from tcsim.kernels import kernel_named
from tcsim.kernels.kernel7 import ROW_BYTES, descriptors, tensor_maps
from tcsim.kernels.roles import (
    Barriers,
    DeadlockError,
    PhaseError,
    TransactionError,
    Waiting,
    interleave,
)
from tcsim.memory import MatrixDescriptor

kernel7 = kernel_named("kernel7")


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


@pytest.mark.parametrize("block_n", [64, 128, 192])
def test_narrower_tiles_run_too(block_n, rng):
    A, B, C, alpha, beta = gemm_inputs(rng, 128, 2 * block_n, 128)
    D = tcsim.run(kernel7, A, B, C, alpha, beta, block_n=block_n, warp_n=block_n,
                  accumulate="f32")
    assert np.array_equal(D.view(np.uint16), chained_wgmma(A, B, C, alpha, beta, "f32", block_n))


def test_tma_boxes_land_where_the_descriptors_read():
    """Every element a consumer's wgmma reads through its descriptors is the element the TMA
    box put there: A's box of 128 rows and B's four 64-column boxes, 128-byte swizzled."""
    p = kernel7.defaults
    a_map, b_map = (t for _, t in tensor_maps(p, 256, 512, 128))
    for stage in range(p.stages):
        base = stage * p.stage_bytes
        a_box = a_map.box_offsets(base)  # (128 rows, 64 k)
        b_boxes = [b_map.box_offsets(base + p.a_tile_bytes + i * p.block_k * ROW_BYTES)
                   for i in range(p.block_n // 64)]
        b_tile = np.concatenate(b_boxes, axis=1)  # (64 k, 256 n)
        for kk in range(p.block_k // 16):
            a_desc, b_desc = descriptors(p, stage, kk)
            for consumer, value in enumerate(a_desc):
                read = MatrixDescriptor.decode(int(value)).layout(2, "K", 64).addresses()
                rows = slice(64 * consumer, 64 * consumer + 64)
                assert np.array_equal(read, a_box[rows, 16 * kk:16 * kk + 16])
            read = MatrixDescriptor.decode(int(b_desc)).layout(2, "MN", 256).addresses()
            assert np.array_equal(read, b_tile[16 * kk:16 * kk + 16].T)


def test_trace_counts_one_copy_per_box_and_one_wgmma_per_k_step():
    M, N, K = 1024, 2048, 4096
    p = kernel7.defaults
    trace = tcsim.trace(kernel7, M, N, K)
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
