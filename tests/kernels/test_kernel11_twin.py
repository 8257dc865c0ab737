"""kernel11's CUDA twin on the CPU: what its launch carries (the operands as the twin reads them,
the scales, the constants), and that nvcc compiles every variant for sm_90a without spilling
and without ptxas serializing or draining the wgmma pipeline, and for sm_80 (a trap); with
cuobjdump, that the K-tile loop's SASS keeps its integer work small and uniform. The bits and
counters are checked on the H100 by tests/hw/test_kernel11_hw.py."""

import re
import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest
from fp8_inputs import OUTS, inputs, row_scales

from tcsim.hw.generate import HEADERS, write
from tcsim.hw.kernels import twin_launch
from tcsim.hw.runtime import options, source_text
from tcsim.kernels import kernel_named

kernel11 = kernel_named("kernel11")
NVCC = shutil.which("nvcc")
CUOBJDUMP = shutil.which("cuobjdump")


def test_the_launch_carries_the_operands_as_the_twin_reads_them(rng):
    M, N, K = 200, 272, 656
    A, B, sa, sb = inputs(rng, M, N, K, "e5m2", "e4m3")
    spec = twin_launch(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=np.float16)
    a, b, d, va, vb, scale, *sizes = spec.args
    assert np.array_equal(a, A.view(np.uint8))
    assert b.shape == (N, K) and np.array_equal(b, B.view(np.uint8).T)  # K-major: N rows of K
    assert d.shape == (M, N) and d.dtype == np.uint16  # f16 bits
    assert scale == np.float32(sa) * np.float32(sb) and isinstance(scale, np.float32)
    assert va.size == vb.size == 1  # per tensor: nothing to read
    assert sizes == [M, N, K]
    assert spec.defines["A_E5M2"] == 1 and spec.defines["B_E5M2"] == 0
    assert spec.defines["OUT_F32"] == spec.defines["OUT_BF16"] == spec.defines["ROW_SCALES"] == 0
    assert [name for name, _ in spec.tensor_maps] == ["A", "B"]
    assert spec.tensor_maps[1][1].rows == N and spec.tensor_maps[1][1].cols == K

    A, B, _, _ = inputs(rng, M, N, K)
    sa, sb = row_scales(rng, M, N)
    spec = twin_launch(kernel11, A, B, scale_a=sa, scale_b=sb, out_dtype=OUTS["bf16"])
    _, _, d, va, vb, scale, *_ = spec.args
    assert np.array_equal(va, sa[:, 0]) and np.array_equal(vb, sb[0])
    assert scale == 1 and spec.defines["ROW_SCALES"] == 1 and spec.defines["OUT_BF16"] == 1
    spec = twin_launch(kernel11, A, B, scale_a=sa[0, 0], scale_b=sb[0, 0], out_dtype=np.float32)
    assert spec.args[2].dtype == np.float32 and spec.defines["OUT_F32"] == 1


def test_the_launch_refuses_what_tcsim_run_refuses(rng):
    A, B, sa, sb = inputs(rng, 64, 64, 64, specials=False)
    with pytest.raises(ValueError, match="reads no C"):
        twin_launch(kernel11, A, B, np.zeros((64, 64), np.float16), scale_a=sa, scale_b=sb,
                    out_dtype=np.float16)
    with pytest.raises(TypeError, match="out_dtype missing"):
        twin_launch(kernel11, A, B, scale_a=sa, scale_b=sb)
    with pytest.raises(TypeError, match="float32"):
        twin_launch(kernel11, A, B, scale_a=np.float64(1), scale_b=sb, out_dtype=np.float16)
    with pytest.raises(TypeError, match="A must be"):
        twin_launch(kernel11, A.astype(np.float16), B, scale_a=sa, scale_b=sb,
                    out_dtype=np.float16)
    with pytest.raises(ValueError, match="e5m2 x e5m2"):
        twin_launch(kernel11, A.astype(np.float32).astype(ml_dtypes.float8_e5m2),
                    B.astype(np.float32).astype(ml_dtypes.float8_e5m2), scale_a=sa,
                    scale_b=sb, out_dtype=np.float16)
    with pytest.raises(ValueError, match="not a scaled GEMM"):
        twin_launch("kernel8", A, B, scale_a=sa, scale_b=sb, out_dtype=np.float16)


def compile_twin(name: str, arch: str, tmp_path, more: dict | None = None, **params) -> str:
    """nvcc's messages compiling ``name``'s twin with ``params``' constants (and ``more``),
    ptxas verbose."""
    kernel = kernel_named(name)
    source = tmp_path / kernel.source
    source.write_text(source_text(kernel.source))
    defines = {**kernel.defines(kernel.params(**params)), **(more or {}),
               **({"TCSIM_SM90A": 1} if arch == "sm_90a" else {})}
    # this checkout's generated headers first (the user cache may hold another version's)
    write(tmp_path, HEADERS)
    run = subprocess.run([NVCC, "-cubin", "-Xptxas", "-v",
                          *options(defines, arch, (str(tmp_path),)), "-o",
                          str(tmp_path / "out.cubin"), str(source)], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stderr


VARIANTS = [("kernel11", {}), ("kernel11", {"inputs": "e4m3", "inputs_b": "e5m2",
                                             "output": "f32"}),
            ("kernel11", {"inputs": "e5m2", "inputs_b": "e4m3", "output": "f16"}),
            ("kernel11", {"row_scales": 1}), ("kernel11-scale-a-first", {"row_scales": 1}),
            ("kernel11", {"block_n": 64, "warp_n": 64}),
            ("kernel11", {"block_n": 192, "warp_n": 192, "stages": 5, "group_m": 3}),
            # scaled.cuh's exploratory two partials (FP8_PARTIALS), with and without clusters
            ("kernel11", {"more": {"FP8_PARTIALS": 2}}),
            ("kernel11", {"more": {"FP8_PARTIALS": 2, "CLUSTER_M": 2}, "output": "f32"}),
            # cuBLAS's order: wait for K tile k's stage, then retire and add up K tile k - 1's
            ("kernel11", {"more": {"FP8_WAIT_FIRST": 1}}),
            ("kernel11", {"more": {"FP8_WAIT_FIRST": 2}, "block_n": 192, "warp_n": 192,
                          "stages": 5}),
            ("kernel11", {"more": {"FP8_WAIT_FIRST": 2}, "row_scales": 1}),
            ("kernel11", {"output": "f16", "block_n": 192, "warp_n": 192, "stages": 5}),
            # clusters of 2 sharing B's tile, or A's (FP8_MULTICAST_A)
            ("kernel11", {"more": {"CLUSTER_M": 2, "FP8_WAIT_FIRST": 2}}),
            ("kernel11", {"more": {"CLUSTER_M": 2, "FP8_MULTICAST_A": 1}})]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name, params", VARIANTS)
def test_ptxas_keeps_the_wgmma_pipelined_without_spills(name, params, tmp_path):
    """No C7514 (wgmma serialized), C7517 / C7519 (a wait or arrive injected to guard
    registers): the K tile's four wgmma issue back to back, and one wait retires them."""
    messages = compile_twin(name, "sm_90a", tmp_path, **params)
    injected = re.findall(r"\((C75\d\d)\)", messages)
    assert not injected, messages[-3000:]
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", messages), messages[-3000:]


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_the_plants_and_other_targets_compile(tmp_path):
    """The off-by-one interval leaves partials open across K tiles (ptxas guards those
    registers itself: slower, not wrong); sm_80 gets the trap."""
    compile_twin("kernel11-promotion-off-by-one", "sm_90a", tmp_path)
    compile_twin("kernel11", "sm_80", tmp_path)


def sass(cubin) -> list[tuple[int, str]]:
    """(address, instruction) of every SASS instruction in ``cubin`` (cuobjdump -sass)."""
    text = subprocess.run([CUOBJDUMP, "-sass", str(cubin)], capture_output=True, text=True,
                          check=True).stdout
    return [(int(a, 16), op) for a, op in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]+?)\s*;", text)]


def loops(code: list[tuple[int, str]]) -> tuple[list[str], list[str]]:
    """The K-tile loop (from the target of the first backward branch after the first QGMMA to
    that branch) and what follows up to the tile loop's backward branch (the epilogue and the
    next tile's coordinates)."""
    def back(start: int, before: int) -> tuple[int, int]:
        for i in range(start, len(code)):
            to = re.search(r"BRA (?:\S+, )?0x([0-9a-f]+)", code[i][1])
            if to and int(to.group(1), 16) <= before:
                return i, int(to.group(1), 16)
        raise AssertionError("no backward branch")
    first = next(i for i, (_, op) in enumerate(code) if "QGMMA" in op)
    end, target = back(first, code[first][0])
    start = next(i for i, (a, _) in enumerate(code) if a == target)
    tile_end, _ = back(end + 1, target - 1)
    return ([op for _, op in code[start:end + 1]], [op for _, op in code[end + 1:tile_end + 1]])


@pytest.mark.skipif(NVCC is None or CUOBJDUMP is None, reason="nvcc or cuobjdump is not installed")
@pytest.mark.parametrize("more", [{}, {"FP8_WAIT_FIRST": 1}, {"FP8_WAIT_FIRST": 2}])
def test_the_k_tile_loop_keeps_its_integer_work_uniform(more, tmp_path):
    """The consumer's K tile in SASS: 4 QGMMA, 64 FADD and at most 40 other instructions
    (cuBLAS's loop: 36; the twin's first form: 69, its descriptors built in ordinary registers
    and moved by R2UR before each QGMMA, `it % STAGES` a multiply-high by 0x2aaaaaab); the
    epilogue's 16 bf16 stores of 8 bytes (the lanes' words swapped in pairs) predicated,
    without a branch around each."""
    compile_twin("kernel11", "sm_90a", tmp_path, more=more)
    loop, epilogue = loops(sass(tmp_path / "out.cubin"))
    kinds = [op.split()[1 if op.startswith("@") else 0].split(".")[0] for op in loop]
    assert kinds.count("QGMMA") == 4 and kinds.count("FADD") == 64, kinds
    others = [op for op, kind in zip(loop, kinds) if kind not in ("QGMMA", "FADD")]
    assert len(others) <= 40, "\n".join(others)
    assert not [op for op in others if op.startswith(("R2UR", "UIMAD.WIDE", "IMAD.WIDE"))], others
    stores = [op for op in epilogue if "STG" in op]
    assert len(stores) == 16 and all(op.startswith("@") and "STG.E.64" in op for op in stores), \
        stores
    assert sum("SHFL.BFLY" in op for op in epilogue) == 16, epilogue
    assert not [op for op in epilogue if op.startswith("BSSY")], epilogue
