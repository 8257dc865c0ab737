"""kernel10 in the simulator: kernel8 whose epilogue moves C in and D out by TMA.

Its bits are checked against `tests/wgmma_chain.py` (here, and with kernel9's in
tests/kernels/test_kernel9.py) on inputs with subnormals, overflow,
cancellation, inf and NaN; its TMA store against the 128-byte swizzle written out by hand;
its planted bugs in tests/kernels/test_checks.py. The H100 checks the twin against tcsim.run
(tests/hw/test_hopper_hw.py)."""

import numpy as np
import pytest
from gemm_inputs import gemm_inputs
from wgmma_chain import chained_wgmma

import tcsim
from tcsim.kernels import kernel_named
from tcsim.kernels.executor import Executor

kernel10 = kernel_named("kernel10")


@pytest.mark.parametrize("block_n, buffers", [(64, 2), (128, 2), (192, 2), (256, 1), (256, 4)])
def test_every_column_passes_whatever_the_buffers(block_n, buffers, rng):
    """Fewer chunks than buffers (64), buffers that alternate between tiles (192: three
    chunks), one buffer, four (a whole tile's C asked for early, with fewer stages)."""
    stages = 3 if buffers == 4 else 4
    A, B, C, alpha, beta = gemm_inputs(rng, 256, 2 * block_n, 192)
    D = tcsim.run(kernel10, A, B, C, alpha, beta, block_n=block_n, warp_n=block_n,
                  accumulate="f32", store_buffers=buffers, stages=stages, persistent_blocks=2)
    assert np.array_equal(D.view(np.uint16), chained_wgmma(A, B, C, alpha, beta, "f32", block_n))


def test_buffers_sit_after_the_barriers_on_a_swizzle_pattern():
    p = kernel10.defaults
    assert p.barrier_bytes == 16 * p.stages + 8 * 8 * 2  # and one per warp and buffer
    assert p.staging_offset >= p.stages * p.stage_bytes + p.barrier_bytes
    assert p.staging_offset % 1024 == 0
    assert p.shared_bytes == p.staging_offset + 2 * 8 * 2048 <= 227 * 1024
    defines = kernel10.defines(p)
    assert defines["TMA_STORE_EPILOGUE"] == 1 and defines["STORE_BUFFERS"] == 2
    assert [name for name, _ in kernel10.tensor_maps(p, 256, 512, 64)] == ["A", "B", "C", "D"]
    with pytest.raises(ValueError, match="store_buffers > 0 .* needs a warp-specialized"):
        tcsim.trace("kernel6", 256, 256, 256, store_buffers=2)
    with pytest.raises(ValueError, match="and no staged_epilogue"):
        tcsim.trace("kernel10", 256, 512, 256, staged_epilogue=1)
    with pytest.raises(ValueError, match="exceed"):
        tcsim.trace("kernel10", 256, 512, 256, store_buffers=4)  # with 4 stages: too much


def test_tma_store_writes_the_swizzled_box_where_the_map_says(rng):
    """A box at shared byte s holds element (r, c) at s + 128 r + 16 ((2c // 16) ^ (r % 8)) +
    2c % 16 (the 128-byte swizzle); the store writes it to D[row + r, col + c], and nothing
    else of D."""
    p = kernel10.defaults
    M, N = 128, 256
    A, B, C = np.zeros((M, 64), np.uint16), np.zeros((64, N), np.uint16), \
        np.zeros((M, N), np.uint16)
    D = np.zeros((M, N), np.uint16)
    m = Executor("kernel10", p, A, B, C, D, 1.0, 0.0, checks="off")
    m.tensor_maps = dict(kernel10.tensor_maps(p, M, N, 64))
    m.begin_blocks(np.zeros(1, int), np.zeros(1, int))
    source = p.staging_offset + 3 * 2048
    box = rng.integers(1, 2**16, (16, 64), dtype=np.uint16)
    r, c = np.indices(box.shape)
    where = source + 128 * r + 16 * ((2 * c // 16) ^ (r % 8)) + 2 * c % 16
    m.shared[0].view(np.uint16)[where // 2] = box
    m.tma_store("D_tma", "D", source, 32, 128)
    want = np.zeros_like(D)
    want[32:48, 128:192] = box
    assert np.array_equal(D, want)


def test_trace_moves_c_and_d_as_tma_boxes_without_conflicts():
    M, N, K = 512, 1024, 256
    trace = tcsim.trace(kernel10, M, N, K, beta=1)  # beta 0, the default, reads no C
    boxes = M * N // (16 * 64)
    for site in ("C_tma", "D_tma"):
        s = trace.sites[site]
        assert s.executions == boxes and s.sectors * 32 == M * N * 2
    for site in ("C_ldmatrix", "D_stmatrix"):
        s = trace.sites[site]
        assert s.executions == M * N * 2 // 512  # 512 bytes a warp instruction
        assert s.wavefronts == s.ideal == 4 * s.executions  # 128 bytes a wavefront
    totals = trace.totals
    assert totals["smsp__inst_executed_op_tma_st.sum"] == boxes
    assert totals["l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum"] == M * N * 2
    main_loop = tcsim.trace("kernel8", M, N, K).totals["smsp__inst_executed_op_tma_ld.sum"]
    assert totals["smsp__inst_executed_op_tma_ld.sum"] == main_loop + boxes
    assert "D_gmem_store" not in trace.sites and "C_gmem_load" not in trace.sites


def test_with_beta_zero_no_c_moves(rng):
    """BLAS, as cuBLAS: with beta 0 no C box is asked for and no ldmatrix issued; D's boxes
    and the main loop's copies stay. The bits follow C-free arithmetic whatever C holds."""
    M, N, K = 512, 1024, 256
    trace = tcsim.trace(kernel10, M, N, K, beta=0)
    assert "C_tma" not in trace.sites and "C_ldmatrix" not in trace.sites
    assert trace.sites["D_tma"].executions == M * N // (16 * 64)
    assert trace.sites["D_stmatrix"].executions == M * N * 2 // 512
    tiles, k_tiles = M // 128 * (N // 256), K // 64
    totals = trace.totals
    assert totals["smsp__inst_executed_op_tma_ld.sum"] == tiles * k_tiles * (1 + 256 // 64)
    assert totals["l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"] == \
        tiles * k_tiles * (128 + 256) * 64 * 2
    assert totals["smsp__inst_executed_op_ldsm.sum"] == 0
    A, B, C, alpha, _ = gemm_inputs(rng, 256, 512, 192)
    C[::3] = np.nan
    D = tcsim.run(kernel10, A, B, C, alpha, 0.0, persistent_blocks=1, accumulate="f32")
    assert np.array_equal(D.view(np.uint16), chained_wgmma(A, B, C, alpha, 0.0, "f32"))
