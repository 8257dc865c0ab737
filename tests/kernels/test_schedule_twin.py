"""Generated CUDA twins (tcsim.hw.kernels.schedule_twin), on the CPU: what they issue, that nvcc
compiles them, and what the generator refuses. tests/hw/test_own_kernel_twin.py runs them.

The instruction counts are checked against `tcsim.trace`, which counts the schedule with its
own engine (the tracer); the twin's are read from the CUDA text itself."""

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import tcsim
from tcsim import GemmParams, Kernel
from tcsim.hw import HardwareUnavailable, available, check_twin, include_dirs
from tcsim.hw.kernels import schedule_twin, twin
from tcsim.hw.kernels.schedule_twin import UnsupportedScheduleError
from tcsim.kernels import kernel_named
from tcsim.trace import CP_ASYNC_PADDING

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ("mine", "mine_swizzled", "mine_padded")


def own(name: str) -> Kernel:
    return kernel_named(f"{ROOT / 'examples' / 'own_kernel.py'}:{name}")


def trace_executions(kernel, M, N, K, **params) -> dict[str, int]:
    """Warp instructions by PTX spelling, as the tracer counts them (but the LDS that ptxas
    adds before a run of cp.async, which no twin writes)."""
    out: dict[str, int] = {}
    for site in tcsim.trace(kernel, M, N, K, beta=1.0, **params).sites.values():
        if site.ptx == CP_ASYNC_PADDING:
            continue
        out[site.instruction] = out.get(site.instruction, 0) + site.executions
    return out


def text_executions(text: str, kernel, M, N, **params) -> dict[str, int]:
    """Warp instructions by PTX spelling in an unrolled twin's text, times its warps and
    blocks."""
    p = kernel.params(**params)
    times = p.warps * int(np.prod(p.grid(M, N)))
    out: dict[str, int] = {}
    for spelling in re.findall(r'asm volatile\("([a-z][\w.:]*)', text):
        if spelling in ("trap", "cp.async.commit_group", "cp.async.wait_group"):
            continue
        spelling = "cp.async.cg.shared.global.16" if spelling == "cp.async.cg.shared.global" \
            else spelling
        out[spelling] = out.get(spelling, 0) + times
    return out


CASES = [pytest.param(own(name), (256, 384, 128), {}, id=name) for name in GUIDE] + [
    pytest.param(tcsim.kernel2, (256, 256, 128), {"accumulate": "f32"}, id="kernel2"),
    pytest.param(tcsim.kernel4, (512, 256, 320), {}, id="kernel4"),
    pytest.param(tcsim.kernel6, (256, 256, 256), {}, id="kernel6"),
]


@pytest.mark.parametrize("kernel, shape, params", CASES)
def test_the_twin_issues_what_the_trace_counts(kernel, shape, params):
    traced = trace_executions(kernel, *shape, **params)
    text = schedule_twin.source(kernel, *shape, beta=1.0, loops=False, **params)
    assert text_executions(text, kernel, *shape[:2], **params) == traced
    program = schedule_twin.program(kernel, *shape, beta=1.0, **params)
    expected = {k: v for k, v in traced.items() if not k.startswith("cp.async")}
    got = {k: v for k, v in program.executed().items()
           if k in expected or not k.startswith(("cp.", "bar", "epilogue"))}
    assert got == expected


def test_a_uniform_k_loop_stays_a_loop():
    mine = own("mine")
    looped = schedule_twin.source(mine, 128, 128, 1024)
    unrolled = schedule_twin.source(mine, 128, 128, 1024, loops=False)
    assert "for (int k = 0; k < 32; k++)" in looped
    assert looped.count("ldmatrix") * 20 < unrolled.count("ldmatrix")
    assert "for (int k" not in unrolled


def test_a_pipeline_loops_over_its_stages():
    """kernel6's four stages rotate: its steady state repeats every four K tiles."""
    text = schedule_twin.source(tcsim.kernel6, 128, 128, 32 * 26)
    assert "for (int k = 0; k < 20; k += 4) {" in text  # 23 steady iterations: 5 steps of 4
    assert text.count("// K tile") == 3 + 3  # the 3 left over, and the drain's 3
    unrolled = schedule_twin.source(tcsim.kernel6, 128, 128, 32 * 26, loops=False)
    assert text_executions(unrolled, tcsim.kernel6, 128, 128) == \
        trace_executions(tcsim.kernel6, 128, 128, 32 * 26)


def test_the_epilogue_is_one_epilogue_pair_per_f16_pair_of_a_thread():
    p = tcsim.kernel4.defaults
    text = schedule_twin.source(tcsim.kernel4, 512, 256, 320, beta=0.5)
    assert text.count("epilogue_pair(") == p.tiles_m * p.tiles_n * 2
    assert text.count("ld.global.b32") == text.count("st.global.b32") == p.tiles_m * p.tiles_n * 2


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("kernel, shape, params", CASES[:4])
def test_nvcc_compiles_the_generated_twin(kernel, shape, params, arch, tmp_path):
    for loops in (True, False):
        source = tmp_path / f"{kernel.name}_{loops}.cu"
        source.write_text(schedule_twin.source(kernel, *shape, beta=1.0, loops=loops,
                                               **params))
        # the installed package's headers (CI runs these tests outside the source tree)
        run = subprocess.run([NVCC, f"-arch={arch}", "-cubin",
                              *(f"-I{d}" for d in include_dirs()), "-o",
                              str(tmp_path / "out.cubin"), str(source)],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "warning" not in run.stderr, run.stderr[-3000:]


def test_hw_run_takes_a_users_kernel_through_the_generated_twin():
    mine, padded = own("mine"), own("mine_padded")
    assert twin.generated(mine) and twin.generated(padded)
    assert not any(twin.generated(k) for k in (tcsim.kernel4, tcsim.kernel7,
                                               kernel_named("wmma_basic")))
    A = np.ones((128, 64), np.float16)
    B = np.ones((64, 128), np.float16)
    spec = twin.twin_launch(padded, A, B)
    assert "__global__" in spec.source and spec.kernel == "twin_mine_padded"
    assert spec.kernel in spec.source
    # the block's shared memory is the padded tiles', not GemmParams' count
    assert spec.shared_bytes == padded.shared_bytes(padded.defaults) > \
        padded.defaults.shared_bytes
    assert spec.grid == (1, 1) and spec.block == (128,)


def test_the_helper_needs_a_gpu_and_draws_inputs_that_are_never_zero():
    from tcsim.hw.check import _inputs

    if not available():
        with pytest.raises(HardwareUnavailable):
            check_twin(own("mine"), 128, 128, 32)
    p = tcsim.kernel4.defaults
    for seed in range(3):
        A, B, C, alpha, beta = _inputs(np.random.default_rng(seed), p, 256, 128, 64, True)
        assert A.any() and B.any() and C.any() and alpha and beta


# ---- refusals ---------------------------------------------------------------------------------

PARAMS = GemmParams(block_m=128, block_n=128, block_k=32, warp_m=64, warp_n=64, warp_k=32)


def copying(mutate):
    """A kernel that copies A's tile to shared memory and back out to D's first columns,
    with ``mutate(m, registers)`` applied to the registers on the way."""
    from tcsim import RowMajor, SharedTile

    def tiles(p):
        return (SharedTile("A", RowMajor(p.block_m, p.block_k), base=0),)

    def program(m, p, A_smem):
        thread = m.warp * 32 + m.lane
        vector = np.arange(4)[:, None] * p.threads + thread[:, None, :]
        row, col = vector // 4, vector % 4 * 8
        regs = m.load_global("A_load", "A", row, col)
        m.store_shared("A_store", A_smem.address(row, col), mutate(m, regs))
        m.sync()
        m.store_global("D_store", "D", row, col, mutate(m, regs))

    return Kernel("copying", "a test copy", program, tiles, PARAMS, takes_c=False)


@pytest.mark.parametrize("mutate, message", [
    (lambda m, r: np.roll(r, 1, axis=-2), "another thread"),
    (lambda m, r: r + np.uint32(1), "arithmetic"),
])  # registers that are not uint32, lane 0's in every lane, or that do not fit the lanes: the
# Machine's own refusal (tests/kernels/test_schedule_refusals.py)
def test_moving_data_between_threads_or_computing_on_it_is_refused(mutate, message):
    with pytest.raises(UnsupportedScheduleError, match=message) as error:
        schedule_twin.source(copying(mutate), 128, 128, 32)
    assert "tcsim.hw.verify" in str(error.value)


def test_a_plain_copy_is_accepted():
    text = schedule_twin.source(copying(lambda m, r: r), 128, 256, 64)
    assert text.count("st.shared.v4.b32") == 4 and text.count("st.global.v4.b32") == 4


def test_blocks_that_issue_differently_are_refused():
    def program(m, p, A_smem):
        regs = m.load_global("A_load", "A", m.warp * 0 + m.lane // 4, m.lane % 4 * 8)
        if int(m.block_rows[0]) == 0:  # only the first row of blocks stores twice
            m.store_global("D_store", "D", m.warp * 0 + m.lane // 4, m.lane % 4 * 8, regs)
        m.store_global("D_store", "D", m.warp * 0 + m.lane // 4, m.lane % 4 * 8, regs)

    kernel = replace(copying(lambda m, r: r), program=program)
    with pytest.raises(UnsupportedScheduleError, match="block \\(1, 0\\)"):
        schedule_twin.source(kernel, 256, 128, 32)


def test_warps_must_all_issue_and_lanes_all_take_part():
    def no_warps(m, p, A_smem):
        m.load_global("A_load", "A", m.lane // 4, m.lane % 4 * 8)  # (32,): one warp's worth

    def masked(m, p, A_smem):
        with m.lanes(m.lane < 16):
            m.load_global("A_load", "A", m.warp * 0 + m.lane // 4, m.lane % 4 * 8)

    base = copying(lambda m, r: r)
    # (the Machine itself refuses values without the warp axis, for every engine)
    with pytest.raises(ValueError, match=r"site 'A_load'.*shape \(32,\).*warps first"):
        schedule_twin.source(replace(base, program=no_warps), 128, 128, 32)
    with pytest.raises(UnsupportedScheduleError, match="idle lanes"):
        schedule_twin.source(replace(base, program=masked), 128, 128, 32)


@pytest.mark.parametrize("name, family", [("wmma_basic", "WMMA"),
                                          ("tf32_puzzle", "local memory")])
def test_other_instruction_families_are_refused_by_name(name, family):
    kernel = own(name) if name.startswith("mine") else kernel_named(name)
    p = kernel.defaults
    M, N, K = p.block_m * 2, p.block_n, p.block_k * 2
    with pytest.raises(UnsupportedScheduleError, match=family) as error:
        schedule_twin.source(kernel, M, N, K)
    assert "tcsim.hw.verify" in str(error.value)
