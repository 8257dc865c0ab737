"""The kernel ladder on the CPU: tcsim.run's bits, tcsim.trace's counts, and clear errors.

Bits are checked two independent ways: small-integer inputs, whose product every kernel must
give exactly, and a reference that chains matrix-level m16n8k8 products (`tcsim.mma`, proven
against the GPU on its own) over K in order, then applies the epilogue written out in numpy.
The second catches a kernel that moves data wrongly through shared memory and registers
(ldmatrix maps, swizzles, fragment order), which the first might miss for symmetric inputs.
"""

import re
from pathlib import Path

import numpy as np
import pytest
from gemm_inputs import beta_zero_inputs, blas_epilogue, gemm_inputs
from wgmma_chain import chained_wgmma

import tcsim
from tcsim.kernels import HOPPER_KERNELS, KERNELS, GemmParams, ProblemSizeError, kernel_named
from tcsim.kernels.blocks import shared_tiles
from tcsim.kernels.kernel import Kernel
from tcsim.kernels.machine import (
    LD_GLOBAL,
    LD_SHARED_V4,
    LDMATRIX,
    ST_GLOBAL,
    STMATRIX,
    GlobalMemoryError,
)
from tcsim.memory import SharedMemoryError

HW = Path(tcsim.__file__).parent / "hw"
# Small tiles every kernel accepts: 4 warps, two K tiles at K=64, x4 loads possible.
SMALL = dict(block_m=64, block_n=64, block_k=32, warp_m=32, warp_n=32, warp_k=16)


def reference(A, B, C, alpha, beta, accumulate, mma_k=8):
    """Chain of m16n8k{mma_k} products over K in order (one per 16x8 tile), then the epilogue."""
    M, K = A.shape
    N = B.shape[1]
    q = f"m16n8k{mma_k}.row.col.{accumulate}.f16.f16.{accumulate}"
    At = A.reshape(M // 16, 16, K // mma_k, mma_k).transpose(2, 0, 1, 3)[:, :, None]
    Bt = B.reshape(K // mma_k, mma_k, N // 8, 8).transpose(0, 2, 1, 3)[:, None]
    acc = np.zeros((M // 16, N // 8, 16, 8), np.float16 if accumulate == "f16" else np.float32)
    for k in range(K // mma_k):
        acc = tcsim.mma(q, At[k], Bt[k], acc)
    acc = acc.transpose(0, 2, 1, 3).reshape(M, N).astype(np.float32)
    return blas_epilogue(acc, C, alpha, beta)


@pytest.mark.parametrize("accumulate", ["f16", "f32"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_small_integers_give_the_exact_product(name, accumulate, rng):
    M, N, K = 128, 128, 96
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, N)).astype(np.float16)
    C = rng.integers(-100, 101, (M, N)).astype(np.float16)
    A[0, 0] = 3  # never all zeros
    D = tcsim.run(name, A, B, C, 1.0, -2.0, accumulate=accumulate, **SMALL)
    expected = A.astype(np.int64) @ B.astype(np.int64) - 2 * C.astype(np.int64)
    assert np.array_equal(D.astype(np.int64), expected)


@pytest.mark.parametrize("accumulate", ["f16", "f32"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_run_equals_the_chain_of_products(name, accumulate, rng):
    for params, (M, N, K) in ((SMALL, (128, 192, 96)), ({}, (256, 256, 128))):
        A, B, C, alpha, beta = gemm_inputs(rng, M, N, K)
        D = tcsim.run(name, A, B, C, alpha, beta, accumulate=accumulate, **params)
        mma_k = KERNELS[name].params(**params).mma_k
        expected = reference(A, B, C, alpha, beta, accumulate, mma_k)
        bad = np.argwhere(D.view(np.uint16) != expected)
        assert not len(bad), f"{len(bad)} elements differ, first at {tuple(bad[0])}"


def test_c_defaults_to_zero(rng):
    A, B, _, _, _ = gemm_inputs(rng, 64, 64, 32, edge=False)
    D = tcsim.run("kernel2", A, B, alpha=0.5, **SMALL)
    assert np.array_equal(D.view(np.uint16), reference(A, B, np.zeros((64, 64), np.float16),
                                                       0.5, 0.0, "f16"))


# ---- trace -------------------------------------------------------------------------------------


def test_trace_counts_follow_from_the_tiling_by_hand():
    """Counts derived on paper for the default tiles (256x128x64 blocks, 64x64x32 warps)."""
    M, N, K = 1024, 512, 256
    blocks, k_tiles = (M // 256) * (N // 128), K // 64
    t1, t2 = tcsim.trace("kernel1", M, N, K), tcsim.trace("kernel2", M, N, K)
    a, b = t1.sites["A_smem_ldmatrix"], t1.sites["B_smem_ldmatrix"]
    # per block and K tile: 8 warps x 2 warp_k steps x 4 m-tiles x 4 k-steps (A), 4 x 8 (B)
    assert a.executions == blocks * k_tiles * 8 * 2 * 16
    assert b.executions == blocks * k_tiles * 8 * 2 * 32
    # kernel1: an .x2 reads 2 matrices of 8 rows 128 B apart: 8 wavefronts each; B's rows are
    # 256 B apart: 8 wavefronts for the .x1. Swizzled (kernel2): one wavefront per matrix.
    assert (a.wavefronts, a.conflicts) == (16 * a.executions, 14 * a.executions)
    assert (b.wavefronts, b.conflicts) == (8 * b.executions, 7 * b.executions)
    assert t2.sites["A_smem_ldmatrix"].wavefronts == 2 * a.executions
    assert t2.sites["B_smem_ldmatrix"].conflicts == 0
    assert t1.totals[tcsim.trace.__globals__["HMMA"]] == M * N * K // (16 * 8 * 8)
    # Every block reads its A rows (K * 2 bytes each) once per block column: 32-byte sectors.
    assert t1.sites["A_gmem_load"].sectors == M * K * 2 // 32 * (N // 128)
    assert t1.sites["B_gmem_load"].sectors == K * N * 2 // 32 * (M // 256)
    # C and D: each lane quad covers 16 contiguous bytes of a row, one sector.
    assert t1.sites["C_gmem_load"].sectors == M * N * 2 // 16
    for t in (t1, t2):
        for site in ("A_smem_store", "B_smem_store"):
            assert t.sites[site].conflicts == 0


@pytest.mark.parametrize("name", list(KERNELS))
def test_symbolic_trace_equals_the_exhaustive_one(name):
    for shape in ((512, 512, 320), (256, 768, 128)):
        fast = tcsim.trace(name, *shape).to_dict()
        slow = tcsim.trace(name, *shape, exhaustive=True).to_dict()
        assert fast == slow


def test_trace_reports():
    t1, t2 = tcsim.trace("kernel1", 512, 256, 128), tcsim.trace(tcsim.kernel2, 512, 256, 128)
    text = str(t1)
    assert "A_smem_ldmatrix" in text and "ldmatrix.sync.aligned.m8n8.x2.shared.b16" in text
    d = t1.to_dict()
    assert set(d["totals"]) == set(tcsim.trace.__globals__["METRICS"])
    assert d["sites"][0]["name"] == "A_gmem_load" and "conflicts" in d["sites"][0]
    side = t1.compare(t2)
    assert "kernel1" in side and "kernel2" in side
    line = next(x for x in side.splitlines() if x.startswith("A_smem_ldmatrix"))
    assert f"{t1.sites['A_smem_ldmatrix'].conflicts:,}" in line
    assert "<table>" in t2._repr_html_()


# ---- errors ------------------------------------------------------------------------------------


def test_sizes_the_tiles_do_not_divide_name_the_multiples():
    A = np.zeros((250, 64), np.float16)
    B = np.ones((64, 128), np.float16)
    with pytest.raises(ProblemSizeError, match=r"M=250 is not a multiple of block_m=256.*"
                                               r"M % 256 == 0, N % 128 == 0, K % 64 == 0"):
        tcsim.run("kernel1", A, B)
    with pytest.raises(ProblemSizeError, match="K=100 is not a multiple of block_k=32"):
        tcsim.trace("kernel5", 128, 256, 100)


def test_bad_operands_and_parameters():
    A, B = np.ones((256, 64), np.float16), np.ones((64, 128), np.float16)
    with pytest.raises(TypeError, match="A must be float16"):
        tcsim.run("kernel1", A.astype(np.float32), B)
    with pytest.raises(ValueError, match="B needs 64 rows"):
        tcsim.run("kernel1", A, B[:32])
    with pytest.raises(ValueError, match=r"C must be 256x128"):
        tcsim.run("kernel1", A, B, np.ones((128, 128), np.float16))
    with pytest.raises(TypeError, match="unknown kernel parameter"):
        tcsim.trace("kernel1", 256, 128, 64, block_z=3)
    with pytest.raises(ValueError, match="warp_m=24 must be a multiple of 16"):
        tcsim.trace("kernel1", 256, 128, 64, warp_m=24)
    with pytest.raises(ValueError, match="accumulate must be 'f16' or 'f32'"):
        GemmParams(accumulate="bf16")
    with pytest.raises(ValueError, match="multiple of 32 .ldmatrix.x4 on B"):
        tcsim.trace("kernel4", 256, 128, 64, warp_n=16, block_n=64)
    with pytest.raises(ValueError, match="no kernel named 'kernel99'"):
        tcsim.trace("kernel99", 256, 128, 64)


def _broken(program) -> Kernel:
    return Kernel("broken", "a planted bug", program, lambda p: shared_tiles(p, False),
                  GemmParams(**SMALL))


def test_a_misaligned_shared_store_names_the_site_and_lane():
    def program(m, p, A_smem, B_smem):
        addresses = np.broadcast_to(np.arange(32) * 16, (p.warps, 32)).copy()
        addresses[1, 5] += 8
        m.store_shared("A_smem_store", addresses, m.zeros(p.warps, 32, 4))

    A, B = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16)
    for engine in (lambda k: tcsim.run(k, A, B), lambda k: tcsim.trace(k, 64, 64, 32)):
        with pytest.raises(SharedMemoryError, match=r"broken site 'A_smem_store' .*warp 1 "
                                                    r"lane 5: address 0x58 is not aligned to 16"):
            engine(_broken(program))


def test_an_out_of_range_global_load_names_the_element():
    def program(m, p, A_smem, B_smem):
        m.load_global("A_gmem_load", "A", np.full((p.warps, 32), 64), np.zeros((p.warps, 32), int))

    A, B = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16)
    with pytest.raises(GlobalMemoryError, match=r"A elements \[64, 0:8\] are outside the 64x32"):
        tcsim.run(_broken(program), A, B)


# ---- the CUDA twins ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*KERNELS, *HOPPER_KERNELS])
def test_each_twin_is_written_from_its_kernels_parameters(name):
    from tcsim.hw.kernels.sources import twin_source

    kernel = kernel_named(name)
    source = twin_source(kernel)
    defaults = {k: int(v) for k, v in re.findall(r"#define (\w+) (-?\d+)", source)}
    assert defaults == kernel.defines(kernel.defaults)


def test_the_twins_spell_the_traced_tile_load():
    header = (HW / "kernels" / "gemm_common.cuh").read_text()
    assert f'#define TILE_LOAD "{LD_GLOBAL[16]}"' in header


def test_the_staged_epilogue_spells_the_traced_instructions():
    header = (HW / "kernels" / "hopper.cuh").read_text()
    for spelling in (ST_GLOBAL[16], LD_SHARED_V4, STMATRIX.format("x4")):
        assert f'"{spelling} ' in header, spelling
    assert f'"{LDMATRIX.format("x4")} ' in (HW / "kernels" / "gemm_common.cuh").read_text()


def test_float_coordinates_and_addresses_in_a_schedule_are_refused():
    def program(m, p, A_smem, B_smem):  # a column computed with / instead of //
        m.load_global("A_gmem_load", "A", np.zeros((p.warps, 32), int), np.arange(32) / 1)

    def store(m, p, A_smem, B_smem):
        m.store_shared("A_smem_store", np.arange(32) * 16.0, m.zeros(p.warps, 32, 4))

    A, B = np.ones((64, 32), np.float16), np.ones((32, 64), np.float16)
    with pytest.raises(TypeError, match=r"broken site 'A_gmem_load' A columns must be integers: "
                                        r"element 0 0\.0 is a float"):
        tcsim.run(_broken(program), A, B)
    with pytest.raises(TypeError, match=r"site 'A_smem_store' shared addresses must be integers"):
        tcsim.trace(_broken(store), 64, 64, 32)


@pytest.mark.parametrize("beta", [0.0, -0.0])
@pytest.mark.parametrize("name", list(KERNELS) + list(HOPPER_KERNELS))
def test_beta_zero_reads_no_c(name, beta, rng):
    """BLAS: with beta 0, of either sign, C is not read. C full of NaN and infinities leaves
    D finite, and alpha * acc keeps its zero sign: a zero row of A times a negative alpha
    gives -0, where adding beta * C (+0 for C's positive entries) would give +0."""
    hopper = name in HOPPER_KERNELS
    M, N, K = (128, 256, 64) if hopper else (128, 128, 96)
    A, B, C = beta_zero_inputs(rng, M, N, K)
    D = tcsim.run(name, A, B, C, -1.5, beta, **({} if hopper else SMALL))
    expected = chained_wgmma(A, B, C, -1.5, beta, "f16") if hopper else \
        reference(A, B, C, -1.5, beta, "f16", KERNELS[name].params(**SMALL).mma_k)
    assert np.array_equal(D.view(np.uint16), expected)
    assert (expected[5] == 0x8000).all()
    assert not np.isnan(D[:5]).any()  # rows whose products are finite
