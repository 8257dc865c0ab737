"""The seeds' kernels on the GPU: tcsim.run against each CUDA twin bit for bit, and
tcsim.trace against Nsight Compute counter for counter (bash scripts/gpu_check.sh seeds).

Shapes are non-square, one has K >= 4096, and seed 004's own 1024^3 is among them.
"""

import numpy as np
import pytest
from gemm_inputs import seed_inputs
from hw_log import log_hw

import tcsim
from tcsim import hw
from tcsim.hw.kernels import twin_launch
from tcsim.hw.ncu import profile
from tcsim.kernels import SEED_KERNELS
from tcsim.trace import ASYNC_METRICS, LOCAL_METRICS, METRICS, SHARED_LD_INST

pytestmark = pytest.mark.hw

BIT_SHAPES = {"tf32_puzzle": [(256, 128, 4096), (384, 192, 96), (1024, 1024, 1024)]}
DEFAULT_SHAPES = [(128, 192, 4096), (192, 320, 96), (512, 256, 512)]
COUNTER_SHAPES = [(512, 512, 512), (256, 768, 1024)]


def _dtype(kernel):
    return np.float32 if kernel.defaults.inputs == "f32" else np.float16


@pytest.mark.parametrize("name", list(SEED_KERNELS))
def test_run_matches_the_cuda_twin_bit_for_bit(name, rng):
    kernel = SEED_KERNELS[name]
    for M, N, K in BIT_SHAPES.get(name, DEFAULT_SHAPES):
        A, B = seed_inputs(rng, M, N, K, _dtype(kernel))
        with np.errstate(all="ignore"):
            sim = tcsim.run(kernel, A, B).view(np.uint32)
        gpu = hw.run(kernel, A, B).view(np.uint32)
        bad = np.argwhere(sim != gpu)
        out = gpu.view(np.float32)
        log_hw({"test": "seed_bits", "kernel": name, "shape": [M, N, K],
                "elements": int(sim.size), "mismatches": len(bad),
                "nan": int(np.isnan(out).sum()), "inf": int(np.isinf(out).sum())})
        assert not len(bad), (
            f"{name} {M}x{N}x{K}: {len(bad)} of {sim.size} elements differ; first at "
            f"{tuple(bad[0])}: tcsim {sim[tuple(bad[0])]:#010x}, GPU {gpu[tuple(bad[0])]:#010x}")


def test_trace_matches_nsight_compute(rng):
    cases = [(name, shape) for name in SEED_KERNELS for shape in COUNTER_SHAPES]
    launches = []
    for name, (M, N, K) in cases:
        A, B = seed_inputs(rng, M, N, K, _dtype(SEED_KERNELS[name]), edge=False)
        launches.append(twin_launch(name, A, B, label=f"{name} {M}x{N}x{K}"))
    counters = profile(launches, METRICS + ASYNC_METRICS + LOCAL_METRICS + (SHARED_LD_INST,))
    bad = []
    for (name, (M, N, K)), measured in zip(cases, counters):
        predicted = tcsim.trace(name, M, N, K).totals
        log_hw({"test": "seed_counters", "kernel": name, "shape": [M, N, K],
                "trace": predicted, "ncu": measured})
        for metric in measured:  # what the trace leaves out, it predicts to be 0
            if predicted.get(metric, 0) != measured[metric]:
                bad.append(f"{name} {M}x{N}x{K} {metric}: trace {predicted.get(metric, 0):,}, "
                           f"ncu {measured[metric]:,.0f}")
    assert not bad, f"{len(bad)} counters differ:\n" + "\n".join(bad)
