"""Hopper's own path on the GPU (sm_90a): kernel7's twin against tcsim.run, bit for bit, on
inputs with subnormals, overflow, cancellation, inf and NaN, at non-square shapes and K >= 4096.

``TCSIM_HW_LOG`` names a JSON-lines file that receives every comparison for the docs.
"""

import numpy as np
import pytest
from gemm_inputs import gemm_inputs
from hw_log import log_hw

import tcsim
from tcsim import hw
from tcsim.hw import runtime
from tcsim.kernels import HOPPER_KERNELS

pytestmark = pytest.mark.hw

# multiples of kernel7's 128 x 256 x 64 tiles; one with K >= 4096, one K tile fewer than stages
SHAPES = [(256, 512, 4096), (384, 256, 192), (128, 768, 320), (512, 1024, 1024)]


@pytest.fixture(autouse=True)
def _sm90a():
    try:
        runtime.require_arch("sm_90a")
    except runtime.HardwareUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("accumulate", ["f16", "f32"])
@pytest.mark.parametrize("name", list(HOPPER_KERNELS))
def test_run_matches_the_cuda_twin_bit_for_bit(name, accumulate, rng):
    for M, N, K in SHAPES:
        A, B, C, alpha, beta = gemm_inputs(rng, M, N, K)
        sim = tcsim.run(name, A, B, C, alpha, beta, accumulate=accumulate).view(np.uint16)
        got = hw.run(name, A, B, C, alpha, beta, accumulate=accumulate).view(np.uint16)
        differ = int((sim != got).sum())
        log_hw({"kernel": name, "accumulate": accumulate, "shape": [M, N, K], "differ": differ,
             "elements": M * N, "device": runtime.device_name()})
        assert differ == 0, f"{name} {accumulate} {M}x{N}x{K}: {differ} of {M * N} differ"
