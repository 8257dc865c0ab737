"""The CUDA-core kernels' lane plans against the H100's rounding residues.

tests/blas/gpu_outputs.npz holds, besides sampled sweep calls, rows and columns of order probes
(scripts/blas_sweep.py --set orders): calls whose products cancel in pairs, so every exact
result is zero and the GPU's output is the rounding residue of its order of additions. Each
record carries the plan identified for it, the kernels the profiler showed and their launch.
test_blas_gpu_outputs.py checks that plan's bits; here: that reading the kernels' names gives
that plan among its candidates, that the table gives it for the probe's shape, and that the
residues tell the lane layouts apart (a plan with the lanes taken away gets them wrong).
"""

import json
from pathlib import Path

import numpy as np
import pytest
from blas_probe_plans import gpu_kernel_plans

import tcsim.blas as blas
from tcsim.blas import Plan
from tcsim.blas.evaluate import evaluate
from tcsim.blas.sweep import getter, operands
from tcsim.blas.table import key_of_sweep_call

DATA = np.load(Path(__file__).with_name("gpu_outputs.npz"))
CALLS = json.loads(str(DATA["calls"]))
PROBES = [i for i, c in enumerate(CALLS) if c.get("cancel")]


def _bits(x):
    x = np.ascontiguousarray(x)
    return x.view(f"u{x.itemsize}")


def test_the_probes_cover_the_cuda_core_families():
    kernels = " ".join(CALLS[i]["kernels"][0] for i in PROBES)
    for family in ("gemvx", "gemvNSP", "gemv2N", "gemmSN_NN", "simt_sgemm", "_ffma_"):
        assert family in kernels, family
    assert len(PROBES) >= 60


@pytest.mark.parametrize("i", PROBES)
def test_the_kernel_names_give_the_measured_plan(i):
    call = CALLS[i]
    assert Plan(**call["plan"]) in gpu_kernel_plans(call)


@pytest.mark.parametrize("i", PROBES)
def test_the_table_gives_the_probes_plan_for_its_shape(i):
    plan, how = blas.table("H100").choose(key_of_sweep_call(CALLS[i]))
    assert how == "measured" and plan == Plan(**CALLS[i]["plan"])


def test_the_residues_tell_lane_layouts_apart():
    """Taking the lanes away (one FMA chain per output) or swapping strided lanes for
    contiguous pieces changes the bits of nearly every probe with lanes: the data would
    catch a wrong layout."""
    told, tried = 0, 0
    for i in PROBES:
        call = CALLS[i]
        plan = Plan(**call["plan"])
        if plan.lanes == 1 or call["K"] < 32:
            continue
        ops, D = operands(call, getter(DATA, f"r{i}_"))
        others = [plan.with_(lanes=1, lane_width=1, lane_reduction="tree"),
                  plan.with_(lane_width=0 if plan.lane_width else 1)]
        for other in others:
            tried += 1
            told += not np.array_equal(_bits(evaluate(other, ops)), _bits(D))
    assert tried >= 40 and told >= 0.95 * tried, (told, tried)
