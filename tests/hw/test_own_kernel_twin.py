"""The guide's kernels (docs/own-kernel.md) on the GPU through their generated twins: D's bits
against tcsim.run and Nsight Compute's counters against tcsim.trace, as the ladder's twins are
proven; kernel4 through its generated twin too, a control beside its hand-written one.

The kernels are user code outside tcsim/ (examples/own_kernel.py), loaded as a user would.
``TCSIM_HW_LOG`` names a JSON-lines file that receives every comparison."""

from pathlib import Path

import pytest
from hw_log import log_hw

import tcsim
from tcsim.hw import assert_twin_matches, check_twin, runtime
from tcsim.kernels.resolve import resolve

pytestmark = pytest.mark.hw

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "own_kernel.py"
SHAPES = [(128, 128, 64), (256, 384, 128), (384, 256, 320)]


def _user(name):
    return resolve(f"{EXAMPLES}:{name}")


@pytest.mark.parametrize("name", ["mine", "mine_swizzled", "mine_padded"])
def test_the_guides_kernels_match_their_generated_twins(name):
    kernel = _user(name)
    for M, N, K in SHAPES:
        result = assert_twin_matches(kernel, M, N, K)
        assert result.twin == "generated"
        log_hw({"test": "own_kernel_twin", "kernel": name, "shape": [M, N, K],
                "mismatches": result.mismatch_count, "elements": result.elements,
                "counters": result.counters, "device": runtime.device_name()})


@pytest.mark.parametrize("accumulate", ["f16", "f32"])
def test_kernel4s_generated_twin_matches_the_simulator(accumulate):
    for M, N, K in [(256, 128, 64), (512, 256, 320)]:
        result = check_twin(tcsim.kernel4, M, N, K, generated=True, accumulate=accumulate)
        log_hw({"test": "generated_twin_control", "kernel": "kernel4", "shape": [M, N, K],
                "accumulate": accumulate, "mismatches": result.mismatch_count,
                "counters": result.counters, "device": runtime.device_name()})
        assert result.ok, str(result)


def test_a_pipelines_generated_twin_loops_over_its_stages_and_matches():
    """kernel6 (cp.async, four stages): its generated twin's steady state is a loop over four
    K tiles at a time (tests/kernels/test_schedule_twin.py), checked here on the GPU."""
    for M, N, K in [(256, 256, 832), (128, 384, 256)]:
        result = check_twin(tcsim.kernel6, M, N, K, generated=True)
        log_hw({"test": "generated_twin_pipeline", "kernel": "kernel6", "shape": [M, N, K],
                "mismatches": result.mismatch_count, "counters": result.counters,
                "device": runtime.device_name()})
        assert result.ok, str(result)


def test_hw_run_takes_a_users_kernel():
    import numpy as np

    rng = np.random.default_rng()
    A = rng.standard_normal((256, 128)).astype(np.float16)
    B = rng.standard_normal((128, 256)).astype(np.float16)
    kernel = _user("mine_swizzled")
    gpu = tcsim.hw.run(kernel, A, B)
    assert np.array_equal(gpu.view(np.uint16), tcsim.run(kernel, A, B).view(np.uint16))


# ---- Hopper: roles, TMA on mbarriers, wgmma -------------------------------------------------

# one K tile (fewer than the two stages), a producer whose steady state loops (16 K tiles), and
# blocks along both M and N
HOPPER_SHAPES = [(64, 768, 64), (320, 512, 1024), (128, 256, 448)]


def _hopper_or_skip(kernel):
    try:
        runtime.require_arch(kernel.arch)
    except runtime.HardwareUnavailable as exc:
        pytest.skip(str(exc))


def test_the_guides_hopper_kernel_matches_its_generated_twin():
    """mine_hopper (a producer warpgroup's TMA copies on mbarriers, a consumer warpgroup's wgmma
    m64n256k16) through the twin generated from its schedule: D bit for bit on every element,
    and every counter of the trace (the wgmma and TMA ones included) equal to Nsight
    Compute's."""
    from tcsim.trace import GMMA, TMA_LD_INST

    kernel = _user("mine_hopper")
    _hopper_or_skip(kernel)
    for M, N, K in HOPPER_SHAPES:
        result = assert_twin_matches(kernel, M, N, K)
        assert result.twin == "generated"
        assert result.counters[GMMA][0] > 0 and result.counters[TMA_LD_INST][0] > 0
        log_hw({"test": "own_kernel_twin", "kernel": "mine_hopper", "shape": [M, N, K],
                "mismatches": result.mismatch_count, "elements": result.elements,
                "counters": result.counters, "device": runtime.device_name()})


def test_hw_run_takes_the_guides_hopper_kernel(rng):
    kernel = _user("mine_hopper")
    _hopper_or_skip(kernel)
    import numpy as np

    A = rng.standard_normal((192, 256)).astype(np.float16)
    B = rng.standard_normal((256, 512)).astype(np.float16)
    gpu = tcsim.hw.run(kernel, A, B)
    assert np.array_equal(gpu.view(np.uint16), tcsim.run(kernel, A, B).view(np.uint16))


@pytest.mark.parametrize("params", [
    {"accumulate": "f16"}, {"accumulate": "f32"},
    {"accumulate": "f32", "inputs": "bf16", "output": "bf16"},  # wgmma .bf16, D in bf16
    {"accumulate": "f32", "block_n": 128, "warp_n": 128},  # m64n128k16, two B boxes
    {"accumulate": "f16", "staged_epilogue": 1},  # kernel9's epilogue
], ids=["f16", "f32", "bf16", "n128", "staged"])
def test_kernel7s_schedule_as_user_code_matches_its_generated_hopper_twin(params):
    """kernel7's schedule in a Kernel of the user's (one block per tile, no template twin):
    two consumer warpgroups with their per-warpgroup descriptors, setmaxnreg from its
    options, one wgmma group in flight, and the ladder's epilogue reading C (alpha and beta
    drawn)."""
    import importlib

    rung = importlib.import_module("tcsim.kernels.kernel7")  # the module, not its Kernel
    kernel = tcsim.Kernel("kernel7_as_user_code", "kernel7's schedule, twin generated",
                          rung.program, rung.tiles, rung.kernel7.defaults, rung.requires,
                          arch="sm_90a", tensor_maps=rung.tensor_maps, options=rung.REGISTERS)
    _hopper_or_skip(kernel)
    # kernel9's staged epilogue (lanes trade C and D through shared memory): bits only, as
    # Nsight Compute counts its shared wavefronts with contention (tests/hw/test_hopper_hw.py)
    staged = bool(params.get("staged_epilogue"))
    result = check_twin(kernel, 256, 512, 768, counters=not staged, **params)
    log_hw({"test": "generated_twin_hopper", "kernel": "kernel7", "shape": [256, 512, 768],
            "params": params, "mismatches": result.mismatch_count,
            "counters": result.counters, "device": runtime.device_name()})
    assert result.ok, str(result)
