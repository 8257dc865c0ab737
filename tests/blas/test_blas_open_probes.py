"""tcsim.blas against whole H100 outputs of the kernels the plan table once left open.

tests/blas/gpu_open_outputs.npz (scripts/blas_test_data.py --probes) holds the whole outputs of
``scripts/blas_sweep.py --set open`` (H100, torch 2.11, CUDA 13, 2026-11-25): calls whose inputs
cancel in pairs, so every exact result is zero and each output is the rounding residue of the
kernel's order of additions. The inputs are not stored: `tcsim.blas.sweep.probe_operands`
rebuilds them from each call's seed (the sweep recorded their SHA-256, and checked rows and
columns of them against the GPU's). Each call carries the kernels the profiler showed, their
launch, and the plan identified for it, or why none is.

Explained calls: the table's plan gives every element the GPU gave. Unexplained ones
(dot_kernel + reduce_1Block, an sm80_xmma FFMA split without its second launch, a gemv2T addmm
whose epilogue the probe's zero C cannot show): the table refuses them, naming
the kernel, never answering with other bits.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from blas_probe_plans import gpu_kernel_plans

import tcsim.blas as blas
from tcsim.blas import Plan
from tcsim.blas.evaluate import evaluate
from tcsim.blas.sweep import DTYPES, probe_operands
from tcsim.blas.table import key_of_sweep_call

DATA = np.load(Path(__file__).with_name("gpu_open_outputs.npz"))
CALLS = json.loads(str(DATA["calls"]))
EXPLAINED = [i for i, c in enumerate(CALLS) if "plan" in c]
REFUSED = [i for i, c in enumerate(CALLS) if "plan" not in c]


def _bits(x):
    x = np.ascontiguousarray(x)
    return x.view(f"u{x.itemsize}")


def _gpu(i):
    call = CALLS[i]
    return DATA[f"r{i}_D"].view(np.dtype(DTYPES[call["dtype"]]))


def _gemm(call):
    return next(n for n in call["kernels"] if "at::native::" not in n)


def test_the_probes_cover_the_open_kernels():
    names = " ".join(_gemm(CALLS[i]) for i in EXPLAINED)
    assert "gemvNSP_kernel<float, float, float, float, 1, 16, 4" in names
    assert any("gemvx" in _gemm(CALLS[i]) and CALLS[i]["plan"]["splits"] > 1
               and CALLS[i]["dtype"] == "float16" for i in EXPLAINED)
    assert any("gemv2T" in _gemm(CALLS[i]) and CALLS[i]["plan"]["splits"] > 1
               for i in EXPLAINED)
    refused = " ".join(_gemm(CALLS[i]) for i in REFUSED)
    assert any("gemmSN_TN" in _gemm(CALLS[i]) and CALLS[i]["K"] > 3000 for i in EXPLAINED)
    for family in ("dot_kernel", "sm80_xmma"):
        assert family in refused, family


@pytest.mark.parametrize("i", EXPLAINED)
def test_every_element_the_gpu_gave(i):
    call = CALLS[i]
    plan, how = blas.table("H100").choose(key_of_sweep_call(call))
    assert how == "measured" and plan == Plan(**call["plan"])
    got = evaluate(plan, probe_operands(call))
    want = _gpu(i)
    got = got.reshape(want.shape)
    wrong = np.count_nonzero(_bits(got) != _bits(want))
    assert wrong == 0, f"{wrong} of {want.size} elements differ for {call} ({plan})"


@pytest.mark.parametrize("i", EXPLAINED)
def test_the_kernel_names_and_launch_give_the_plan(i):
    call = CALLS[i]
    assert Plan(**call["plan"]) in gpu_kernel_plans(call)


@pytest.mark.parametrize("i", REFUSED)
def test_the_unexplained_are_refused_naming_the_kernel(i):
    call = CALLS[i]
    with pytest.raises(blas.UnsupportedCallError, match="no model") as e:
        blas.table("H100").choose(key_of_sweep_call(call))
    assert _gemm(call)[:40] in str(e.value)


def test_gemv_nsp_16_4_is_24_lanes_not_the_templates_16():
    """The residues tell the layouts apart: the template's reading (16 lanes) and the 32 lanes
    of <1, 32, 4> get most elements wrong where the block's 24 get every one."""
    i = next(i for i in EXPLAINED if "1, 16, 4" in _gemm(CALLS[i]) and CALLS[i]["K"] == 360)
    plan, ops, want = Plan(**CALLS[i]["plan"]), probe_operands(CALLS[i]), _gpu(i)
    assert (plan.lanes, plan.lane_width, plan.lane_reduction) == (24, 4, "tree")
    for lanes in (16, 32):
        got = evaluate(plan.with_(lanes=lanes), ops).reshape(want.shape)
        assert np.count_nonzero(_bits(got) != _bits(want)) > want.size // 2, lanes


def test_gemv2t_sums_its_lanes_in_chunks_of_32():
    """gemv2T: 16 strided lanes, each summing 32 of its elements at a time from zero into its
    running sum; one chain per lane (no chunks) gets most residues wrong."""
    i = next(i for i in EXPLAINED if "gemv2T" in _gemm(CALLS[i]) and CALLS[i]["K"] == 2048)
    plan, ops, want = Plan(**CALLS[i]["plan"]), probe_operands(CALLS[i]), _gpu(i)
    assert (plan.lanes, plan.lane_width, plan.lane_reduction, plan.lane_chunk) == (
        16, 1, "in_order", 32)
    got = evaluate(plan.with_(lane_chunk=0), ops).reshape(want.shape)
    assert np.count_nonzero(_bits(got) != _bits(want)) > want.size // 2
