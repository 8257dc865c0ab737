"""kernel9 in the simulator: kernel8 with C and D through a per-warp shared staging.

Its bits are checked against `tests/wgmma_chain.py` on inputs with subnormals, overflow,
cancellation, inf and NaN; its stmatrix and ld.shared.v4 against `tcsim.memory.SharedMemory`,
whose maps the H100 checked instruction by instruction (tests/hw/test_smem_hw.py); the H100
checks the twin against tcsim.run (tests/hw/test_hopper_hw.py)."""

import numpy as np
import pytest
from gemm_inputs import gemm_inputs
from wgmma_chain import chained_wgmma

import tcsim
from tcsim.kernels import kernel_named
from tcsim.kernels.executor import Executor
from tcsim.kernels.machine import LD_SHARED_V4, STMATRIX
from tcsim.memory import SharedMemory

kernel9 = kernel_named("kernel9")


@pytest.mark.parametrize("name", ["kernel9", "kernel10"])  # kernel10's TMA epilogue too
@pytest.mark.parametrize("accumulate", ["f32", "f16"])
@pytest.mark.parametrize("shape, persistent", [((128, 256, 64), 0), ((384, 512, 320), 4),
                                                ((256, 768, 1024), 5)])
def test_run_equals_the_wgmma_chain(name, shape, persistent, accumulate, rng):
    M, N, K = shape
    A, B, C, alpha, beta = gemm_inputs(rng, M, N, K)
    D = tcsim.run(name, A, B, C, alpha, beta, accumulate=accumulate,
                  persistent_blocks=persistent)
    assert np.array_equal(D.view(np.uint16), chained_wgmma(A, B, C, alpha, beta, accumulate))


@pytest.mark.parametrize("block_n", [64, 128, 192])
def test_narrower_tiles_stage_every_column(block_n, rng):
    A, B, C, alpha, beta = gemm_inputs(rng, 256, 2 * block_n, 128)
    D = tcsim.run(kernel9, A, B, C, alpha, beta, block_n=block_n, warp_n=block_n,
                  accumulate="f32")
    assert np.array_equal(D.view(np.uint16), chained_wgmma(A, B, C, alpha, beta, "f32", block_n))


def test_staging_sits_after_the_barriers_inside_the_block():
    p = kernel9.defaults
    assert p.staging_offset >= p.stages * p.stage_bytes + p.barrier_bytes
    assert p.staging_offset % 128 == 0
    assert p.shared_bytes == p.staging_offset + 8 * 16 * 128 <= 227 * 1024
    assert kernel9.defines(p)["STAGED_EPILOGUE"] == 1
    with pytest.raises(ValueError, match="staged_epilogue is 0 or 1, and 1 only for a "
                                         "warp-specialized kernel"):
        tcsim.trace("kernel6", 256, 256, 256, staged_epilogue=1)


def test_machine_stmatrix_and_vector_loads_equal_the_shared_memory_model(rng):
    """The executor's stmatrix.x4 and ld.shared.v4 move the bytes that SharedMemory moves."""
    p = kernel9.defaults
    A, B, C = (np.zeros(s, np.float16) for s in ((128, 64), (64, 256), (128, 256)))
    m = Executor("kernel9", p, A, B, C, C.copy(), 1.0, 0.0, checks="off")
    m.begin_blocks(np.zeros(1, int), np.zeros(1, int))
    model = SharedMemory(p.shared_bytes)
    rows = rng.permutation(np.arange(p.staging_offset, p.shared_bytes, 16))[:32]
    registers = rng.integers(0, 2**32, (32, 4), dtype=np.uint32)
    m.stmatrix("s", "x4", rows[None], registers[None, None])
    model.stmatrix(STMATRIX.format("x4"), rows, registers)
    assert np.array_equal(m.shared[0].view(np.uint8), model.data)
    lanes = rng.choice(np.arange(p.staging_offset, p.shared_bytes, 16), 32)
    got = m.load_shared("l", lanes[None], 16)[0, 0]
    want = model.load(LD_SHARED_V4, lanes).view(np.uint32)
    assert np.array_equal(got, want)


def test_trace_moves_c_and_d_as_whole_lines_without_conflicts():
    M, N, K = 512, 1024, 256
    trace = tcsim.trace(kernel9, M, N, K)
    lines = M * N * 2 // 128  # 128-byte lines of C, and of D
    per_line = {"C_gmem_load": 4, "D_gmem_store": 4}  # sectors of a line
    for site, sectors in per_line.items():
        s = trace.sites[site]
        assert s.executions * 32 * 16 == M * N * 2  # 16 bytes a lane
        assert s.sectors == lines * sectors
    for site in ("C_smem_store", "C_ldmatrix", "D_stmatrix", "D_smem_load"):
        s = trace.sites[site]
        assert s.executions == M * N * 2 // 512  # 512 bytes a warp instruction
        assert s.wavefronts == s.ideal == 4 * s.executions  # 128 bytes a wavefront
    assert "D_gmem_store" in tcsim.trace("kernel8", M, N, K).sites
    assert tcsim.trace("kernel8", M, N, K).sites["D_gmem_store"].sectors == 2 * lines * 4
