"""Generated CUDA twins of Hopper schedules (tcsim.hw.kernels.hopper_twin), on the CPU: what
they issue against what the trace counts, their structure (roles, barriers' phases,
descriptors), that nvcc compiles them for sm_90a, and what the generator refuses, naming the
site. tests/hw/test_own_kernel_twin.py runs them on the H100.

The guide's mine_hopper is user code (examples/own_kernel.py); kernel7's schedule is put in a
Kernel of the user's (one block per tile, no template twin) to cover two consumer warpgroups,
setmaxnreg and the ladder's epilogue."""

import importlib
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import tcsim
from tcsim import Kernel
from tcsim.hw import include_dirs
from tcsim.hw.kernels import schedule_twin, twin
from tcsim.hw.kernels.schedule_twin import UnsupportedScheduleError
from tcsim.kernels import kernel_named
from tcsim.memory import MatrixDescriptor

ROOT = Path(__file__).resolve().parents[2]
RUNG = importlib.import_module("tcsim.kernels.kernel7")  # the module, not its Kernel
NVCC = shutil.which("nvcc")


def own(name: str) -> Kernel:
    return kernel_named(f"{ROOT / 'examples' / 'own_kernel.py'}:{name}")


def kernel7_as_user_code() -> Kernel:
    return Kernel("kernel7_as_user_code", "kernel7's schedule, twin generated", RUNG.program,
                  RUNG.tiles, RUNG.kernel7.defaults, RUNG.requires, arch="sm_90a",
                  tensor_maps=RUNG.tensor_maps, options=RUNG.REGISTERS)


def traced(kernel, M, N, K, **params) -> dict[str, int]:
    out: dict[str, int] = {}
    for site in tcsim.trace(kernel, M, N, K, beta=1.0, **params).sites.values():
        out[site.instruction] = out.get(site.instruction, 0) + site.executions
    return out


CASES = [
    pytest.param(own("mine_hopper"), (320, 512, 1024), {}, id="mine_hopper"),
    pytest.param(own("mine_hopper"), (64, 768, 64), {}, id="mine_hopper-one-k-tile"),
    pytest.param(kernel7_as_user_code(), (256, 512, 768), {"accumulate": "f16"},
                 id="kernel7-f16"),
    pytest.param(kernel7_as_user_code(), (256, 256, 512), {"accumulate": "f32"},
                 id="kernel7-f32"),
    pytest.param(kernel7_as_user_code(), (128, 256, 192),
                 {"accumulate": "f32", "inputs": "bf16", "output": "bf16"}, id="kernel7-bf16"),
    # 96 wide: B in 32-column boxes under the 64-byte swizzle, three consumers, m64n96k16
    pytest.param(kernel7_as_user_code(), (384, 192, 192),
                 {"accumulate": "f32", "block_m": 192, "block_n": 96, "warp_n": 96,
                  "stages": 3}, id="kernel7-192x96"),
]


@pytest.mark.parametrize("kernel, shape, params", CASES)
def test_the_hopper_twin_issues_what_the_trace_counts(kernel, shape, params):
    """The TMA copies, wgmma and global accesses the twin executes (the program's count, and
    the calls in its unrolled text times the blocks and the warps each issues them from)
    are those the tracer counts from the schedule."""
    expected = traced(kernel, *shape, **params)
    executed = schedule_twin.program(kernel, *shape, beta=1.0, **params).executed()
    assert {k: executed.get(k, 0) for k in expected} == expected
    p = kernel.params(**params)
    blocks = int(np.prod(p.grid(*shape[:2])))
    text = schedule_twin.source(kernel, *shape, beta=1.0, loops=False, **params)
    tma = next(v for k, v in expected.items() if k.startswith("cp.async.bulk.tensor"))
    wgmma = next(v for k, v in expected.items() if k.startswith("wgmma"))
    assert text.count("tma_load_2d(") * blocks == tma  # one thread, one warp instruction
    assert len(re.findall(r"wgmma_m64n\d+k16_\w+\(acc", text)) * blocks * 4 * p.consumers == \
        wgmma  # every warp of each consumer warpgroup


def test_the_guides_hopper_twin_mirrors_its_roles_barriers_and_descriptors():
    kernel = own("mine_hopper")
    p = kernel.defaults
    text = schedule_twin.source(kernel, 128, 512, 1024)
    assert twin.generated(kernel)
    # the producer warpgroup runs on its first thread; the consumer warpgroup on all of it
    assert "if (t < 128) {  // role producer" in text
    assert "if (t == 0) {  // one thread issues all of it" in text
    assert "if (t >= 128 && t < 256) {  // role consumer" in text
    # the barriers follow the stages: two full (1 arrival), two empty (4 arrivals)
    full, empty = 2 * p.stage_bytes, 2 * p.stage_bytes + 16
    for address, arrivals in ((full, 1), (full + 8, 1), (empty, 4), (empty + 8, 4)):
        assert f"if (t == 0) mbarrier_init(smem + {address}u, {arrivals});" in text
    assert f"mbarrier_arrive_expect_tx(smem + {full}u, {p.stage_bytes}u);" in text
    assert f"if (t % 32 == 0) mbarrier_arrive(smem + {empty}u);" in text  # a warp's lane 0
    # 16 K tiles: the producer fills two stages, then loops over four K tiles at a time (the
    # phases' parities repeat every 2 x stages); the consumer loops from the first
    assert "for (int k = 2; k < 14; k += 4) {" in text
    assert "for (int k = 0; k < 16; k += 4) {" in text
    for stage in (full, full + 8):  # in the consumer's loop body of 4 K tiles: each stage's
        # two phases
        assert re.findall(rf"mbarrier_wait\(smem \+ {stage}u, (\d)u\)", text) == ["0", "1"]
    # the schedule's own descriptors, the block's shared base added to the address field
    desc_a = MatrixDescriptor(32, 16, 8 * 128, 0, "128B").encode()  # stage 0, K step 1
    assert f"(desc_base + 0x{desc_a:016x}ull)" in text
    assert "wgmma_m64n256k16_f16(acc0, " in text and "uint32_t acc0[64] = {};" in text
    assert "__grid_constant__ TensorMap tensor_A, const __grid_constant__ TensorMap " \
           "tensor_B" in text
    assert "tcsim_hold(acc0); wgmma_fence();" in text and "wgmma_wait<0>(); tcsim_hold(acc0);" \
        in text


def test_kernel7s_twin_gives_each_consumer_its_descriptor_and_its_registers():
    kernel = kernel7_as_user_code()
    text = schedule_twin.source(kernel, 256, 512, 512, accumulate="f32")
    assert "setmaxnreg_dec<40>();" in text and "setmaxnreg_inc<232>();" in text
    assert "float acc0[128] = {};" in text
    first, second = RUNG.descriptors(kernel.defaults, 0, 0)[0]
    assert f"((t - 128) / 128 == 0 ? 0x{int(first):016x}ull : 0x{int(second):016x}ull)" in text
    assert "wgmma_wait<1>();" in text  # one group in flight, as the schedule waits
    assert text.count("epilogue_pair(") == 128 // 2 // 4 * 4  # per thread: its f32 pairs


def test_the_launch_passes_the_kernels_tensor_maps_and_arch():
    kernel = own("mine_hopper")
    A = np.ones((128, 128), np.float16)
    B = np.ones((128, 512), np.float16)
    spec = twin.twin_launch(kernel, A, B)
    assert spec.kernel == "twin_mine_hopper" and spec.arch == "sm_90a"
    assert [name for name, _ in spec.tensor_maps] == ["A", "B"]
    assert spec.tensor_maps == tuple(kernel.tensor_maps(kernel.defaults, 128, 512, 128))
    assert spec.grid == (2, 2) and spec.block == (256,)
    assert spec.shared_bytes == kernel.shared_bytes(kernel.defaults)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
@pytest.mark.parametrize("kernel, shape, params", CASES)
def test_nvcc_compiles_the_generated_hopper_twin(kernel, shape, params, tmp_path):
    for arch, loops in (("sm_90a", True), ("sm_90a", False), ("sm_80", True)):
        source = tmp_path / f"{kernel.name}_{loops}.cu"
        source.write_text(schedule_twin.source(kernel, *shape, beta=1.0, loops=loops,
                                               **params))
        run = subprocess.run([NVCC, f"-arch={arch}", "-cubin",
                              *(f"-I{d}" for d in include_dirs()), "-o",
                              str(tmp_path / "out.cubin"), str(source)],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "warning" not in run.stderr.lower(), run.stderr[-3000:]


# ---- refusals ---------------------------------------------------------------------------------


def hopper(**change):
    """mine_hopper's schedule (the guide's), with one thing changed: ``change`` names what,
    see ``program`` below."""
    guide = own("mine_hopper")
    g = guide.program.__globals__  # the example module's helpers
    BOX, ROW = g["BOX"], g["ROW"]

    def program(m, p):
        stages = p.stages * p.stage_bytes
        full = m.mbarriers("full", stages, p.stages, arrivals=1)
        empty = m.mbarriers("empty", stages + 8 * p.stages, p.stages, arrivals=4)
        m.sync()
        qualifier = change.get("qualifier", f"m64n{p.block_n}k16.f16.f16.f16")

        def producer():
            if change.get("init_in_role"):
                m.mbarriers("late", stages, 1, arrivals=1)
            for k in m.k_tiles():
                s = k % p.stages
                if k >= p.stages:
                    yield from m.wait(empty, s, (k // p.stages - 1) & 1)
                a = s * p.stage_bytes
                m.arrive(full, s, expect_tx=p.stage_bytes)
                m.tma_load("A_tma", "A", a, 0, 0, k, full, s)
                for box in range(p.block_n // BOX):
                    m.tma_load("B_tma", "B", a + p.a_tile_bytes + box * p.block_k * ROW,
                               0, box * BOX, k, full, s)

        def consumer():
            registers = tcsim.wgmma_fragment(qualifier, "d").registers
            acc = m.zeros(1, 128, registers)
            first = None
            for k in m.k_tiles():
                s = k % p.stages
                yield from m.wait(full, s, (k // p.stages) & 1)
                if change.get("sync_in_role"):
                    m.sync()
                if change.get("tma_in_consumer"):
                    m.tma_load("stray_tma", "A", s * p.stage_bytes, 0, 0, k, full, s)
                m.wgmma_fence()
                for kk in range(p.block_k // 16):
                    da, db = g["hopper_descriptors"](p, s, kk)
                    new = m.wgmma("wgmma", qualifier, da, db,
                                  first if change.get("stale") and first is not None else acc,
                                  trans_b=not change.get("k_major_b"))
                    first = new if first is None else first
                    acc = new
                m.wgmma_commit()
                m.wgmma_wait(0)
                m.arrive(empty, s, count=change.get("arrivals", 4))
            g["hopper_store_d"](m, p, acc)

        roles = [("producer", producer()), ("consumer", consumer())]
        if change.get("third_role"):
            roles.append(("spare", iter(())))
        m.run_roles(*roles)

    return replace(guide, name="hopper_variant", program=program)


def test_the_variant_helper_is_the_guides_kernel_unchanged():
    """The refusals below change one thing each of a schedule that generates."""
    text = schedule_twin.source(hopper(), 64, 256, 256)
    assert text.count("tma_load_2d(") == 4 * 5 and "wgmma_m64n256k16_f16(acc0" in text


@pytest.mark.parametrize("change, site, message", [
    ({"k_major_b": True}, "wgmma", "B K-major"),
    ({"qualifier": "m64n40k16.f16.f16.f16"}, "wgmma", "the twin issues m64nNk16"),
    ({"tma_in_consumer": True}, "stray_tma", "also issues warp-wide instructions"),
    ({"arrivals": 2}, "empty", "an arrival of count 2"),
    ({"init_in_role": True}, "late", "mbarriers initialized inside a role"),
    ({"stale": True}, "wgmma", "neither zeros"),
    ({"third_role": True}, None, "3 roles"),
    ({"sync_in_role": True}, None, "bar.sync \\(m.sync\\) inside role 'consumer'"),
])
def test_what_the_hopper_generator_does_not_mirror_is_refused_naming_the_site(change, site,
                                                                              message):
    with pytest.raises(UnsupportedScheduleError, match=message) as error:
        schedule_twin.source(hopper(**change), 64, 256, 256)
    text = str(error.value)
    assert text.startswith("hopper_variant")
    if site:
        assert f"site {site!r}" in text
    assert "tcsim.hw.verify" in text  # the way for a twin written by hand


def test_tma_stores_and_persistent_blocks_are_refused_by_name():
    stores = tcsim.kernels.kernel_named("kernel10")
    user = replace(stores, name="kernel10_as_user_code", twin_schedule="",
                   launch_shape=lambda p, M, N: (p.grid(M, N), (p.threads,)))
    with pytest.raises(UnsupportedScheduleError, match="bulk groups"):
        schedule_twin.source(user, 256, 512, 512)

    def store(m, p):
        m.tma_store("D_tma", "D", 0, 0, 0)

    maps = lambda p, M, N, K: RUNG.tensor_maps(p, M, N, K) + (  # noqa: E731
        ("D", tcsim.TensorMap(M, N, 2, 64, 64, "128B")),)
    with pytest.raises(UnsupportedScheduleError, match="site 'D_tma'.*TMA stores"):
        schedule_twin.source(replace(kernel7_as_user_code(), program=store, tensor_maps=maps),
                             256, 512, 512)
    with pytest.raises(UnsupportedScheduleError, match="persistent"):
        schedule_twin.source(kernel7_as_user_code(), 256, 512, 512, persistent_blocks=2)


def test_a_hopper_schedule_launches_for_sm_90a_even_when_its_kernel_does_not_say():
    kernel = replace(own("mine_hopper"), name="mine_hopper_no_arch", arch="")
    spec = twin.twin_launch(kernel, np.ones((64, 64), np.float16), np.ones((64, 256), np.float16))
    assert spec.arch == "sm_90a"
    assert twin.twin_launch(own("mine"), np.ones((128, 32), np.float16),
                            np.ones((32, 128), np.float16)).arch == ""


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_explain_takes_the_generated_twins_registers_from_ptxas(tmp_path):
    """schedule_twin.registers: ptxas's count for the twin tcsim.hw.run compiles, which
    explain takes as registers= (a user's kernel has no twin of tcsim's to ask ptxas about)."""
    for kernel in (own("mine"), own("mine_hopper")):
        shape = (256, 512, 256)
        found = schedule_twin.registers(kernel, *shape)
        path = tmp_path / "twin.cu"
        path.write_text(schedule_twin.source(kernel, *shape))
        arch = "sm_90a" if kernel.arch else "sm_90"
        run = subprocess.run([NVCC, f"-arch={arch}", "-cubin", "-Xptxas", "-v",
                              *(f"-I{d}" for d in include_dirs()), "-o",
                              str(tmp_path / "out.cubin"), str(path)],
                             capture_output=True, text=True)
        assert f"Used {found} registers" in run.stderr
        occupancy = tcsim.trace(kernel, *shape).explain(registers=found).occupancy
        assert occupancy.registers_per_thread == found and 32 <= found <= 255
