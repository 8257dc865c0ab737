"""The guide's kernels (docs/own-kernel.md) as a user has them: schedules in
examples/own_kernel.py, loaded by path, and their CUDA written by hand in examples/*.cu, proven
on the GPU with tcsim.hw.verify: D's bits equal to tcsim.run's on fresh random inputs, and the
shared-memory counters Nsight Compute reads equal to tcsim.trace's, at two shapes each. Each is
also traced and explained as user code. And the errors of the GPU's own compile path (NVRTC):
a compile error names the user's file and line, a missing kernel lists the file's kernels.

``TCSIM_HW_LOG`` names a JSON-lines file that receives every verification (all the counters).
"""

from pathlib import Path

import numpy as np
import pytest
from hw_log import log_hw

import tcsim
from tcsim import hw
from tcsim.hw import runtime
from tcsim.kernels import kernel_named

pytestmark = pytest.mark.hw

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# kernel -> (CUDA file, verify's options, two shapes): mine's three layouts share one file,
# the padding its own -D; the Hopper shapes include one K tile (fewer than its two stages)
CASES = {
    "mine": ("own_kernel.cu", {}, [(256, 512, 256), (384, 128, 1024)]),
    "mine_swizzled": ("own_kernel.cu", {"entry": "mine"}, [(256, 512, 256), (128, 384, 992)]),
    "mine_padded": ("own_kernel.cu", {"entry": "mine", "defines": {"PAD": 8}},
                    [(256, 512, 256), (512, 256, 64)]),
    "mine_hopper": ("own_kernel_hopper.cu", {}, [(64, 768, 64), (320, 512, 1024)]),
}


def own(name: str):
    return kernel_named(f"{EXAMPLES / 'own_kernel.py'}:{name}")


@pytest.mark.parametrize("name", list(CASES))
def test_the_guides_cuda_gives_the_schedules_bits_and_shared_counters(name):
    kernel = own(name)
    if kernel.arch:
        try:
            runtime.require_arch(kernel.arch)
        except runtime.HardwareUnavailable as exc:
            pytest.skip(str(exc))
    file, options, shapes = CASES[name]
    for M, N, K in shapes:
        v = hw.verify(kernel, EXAMPLES / file, M, N, K, **options)
        log_hw({"test": "own_kernel_verify", "kernel": name, "shape": [M, N, K],
                "seed": v.seed, "differ": len(v.differing), "counters": v.counters,
                "device": v.device})
        assert v.bits_equal, f"\n{v}"
        assert v.shared_counters_equal, f"\n{v}"
        # the trace has something to say: the counters are not all zeros
        assert any(trace for trace, _ in v.counters.values())


@pytest.mark.parametrize("name", list(CASES))
def test_the_guides_kernels_trace_run_and_explain_as_user_code(name, rng):
    kernel = own(name)
    assert "examples" in kernel.program.__code__.co_filename  # user code, not tcsim's
    M, N, K = CASES[name][2][0]
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    D = tcsim.run(kernel, A, B)
    assert D.shape == (M, N) and np.isfinite(D).all() and (D != 0).any()
    trace = tcsim.trace(kernel, M, N, K)
    explanation = trace.explain()
    assert explanation.seconds > 0 and explanation.limiter


def test_nvrtc_compile_errors_name_the_users_file_and_line(tmp_path):
    path = tmp_path / "broken.cu"
    path.write_text('#include "gemm_common.cuh"\n\n'
                    'extern "C" __global__ void mine(GEMM_PARAMS) {\n'
                    '  D[0] = undeclared_value;\n'
                    '}\n')
    with pytest.raises(hw.CompileError) as caught:
        hw.verify(own("mine"), path, 128, 128, 32, counters=False)
    message = str(caught.value)
    assert f"{path}(4)" in message and "undeclared_value" in message, message


def test_a_missing_kernel_on_the_gpu_lists_the_files_kernels():
    with pytest.raises(hw.CompileError, match=r"no kernel named 'mine_swizzled' \(its kernels: "
                                              r"mine\)"):
        hw.verify(own("mine_swizzled"), EXAMPLES / "own_kernel.cu", 128, 128, 32,
                  counters=False)
