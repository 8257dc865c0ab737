"""tcsim.blas against output bits an H100 gave (tests/blas/gpu_outputs.npz), without a GPU.

The file holds (scripts/blas_test_data.py) the sampled rows and columns of calls of every kind
and kernel family from the plan sweeps, and rows and columns of whole outputs around the
elements an earlier model got wrong (row-wise fp8 scales, alpha/beta epilogues) from the
hardware test's dumps. Each record's plan is the table's plan for the call's full shape (or,
for a held-out shape the table's rule missed, the plan identify found from the GPU's kernels);
the oracle is the GPU's bits, element for element.

The plans were identified from GPU outputs like these (the sweep records from these very
samples), so this holds the engine and the table to the hardware's bits as a regression test;
the independent proof is tests/hw/test_blas_hw.py on fresh inputs.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import tcsim.blas as blas
from tcsim.blas import Plan
from tcsim.blas.evaluate import evaluate
from tcsim.blas.sweep import getter, operands
from tcsim.blas.table import key_of_sweep_call

DATA = np.load(Path(__file__).with_name("gpu_outputs.npz"))
CALLS = json.loads(str(DATA["calls"]))


def test_the_records_cover_every_family():
    ops = {c["op"] for c in CALLS}
    assert ops >= {"matmul", "bmm", "addmm", "addmm_bias", "linear", "scaled_mm", "int_mm"}
    assert len(CALLS) >= 200


@pytest.mark.parametrize("i", range(len(CALLS)))
def test_every_bit_the_gpu_gave(i):
    call = CALLS[i]
    if "plan" in call:  # a held-out shape: the plan identify found from the GPU's kernels
        plan, how = Plan(**call["plan"]), "identified"
    else:
        plan, how = blas.table("H100").choose(key_of_sweep_call(call))
    ops, D = operands(call, getter(DATA, f"r{i}_"))
    got = evaluate(plan, ops)
    want = np.ascontiguousarray(D)
    got = np.ascontiguousarray(got.reshape(want.shape))
    wrong = np.count_nonzero(got.view(f"u{got.itemsize}") != want.view(f"u{want.itemsize}"))
    assert wrong == 0, f"{wrong} of {want.size} elements differ for {call} ({how}: {plan})"
