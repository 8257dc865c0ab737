"""Simulator against the GPU, bit for bit: random instructions and the hand-derived facts.

Run on a GPU machine with ``pytest -m hw``. ``TCSIM_HW_COUNT`` sets the random instructions per
qualifier (default 10**6, spread over every distribution in tcsim.isa.samples);
``TCSIM_HW_QUALIFIERS`` (comma-separated) runs a subset;
``TCSIM_HW_LOG`` names a JSON file that receives the counts and timings for the docs.
"""

import json
import os
import time

import numpy as np
import pytest
from facts import FACTS, result_bits

import tcsim
from tcsim import hw
from tcsim.isa import samples

pytestmark = pytest.mark.hw

COUNT = int(os.environ.get("TCSIM_HW_COUNT", 10**6))
# A comma-separated subset of qualifiers to run (default: every supported one).
QUALIFIERS = [q for q in os.environ.get("TCSIM_HW_QUALIFIERS", "").split(",") if q] \
    or tcsim.supported_qualifiers()
BATCH = 100_000


def _log(record: dict) -> None:
    path = os.environ.get("TCSIM_HW_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


@pytest.mark.parametrize("qualifier", QUALIFIERS)
def test_random_instructions_agree_bit_for_bit(qualifier, rng):
    spec = tcsim.parse(qualifier)
    frags = [tcsim.fragment(qualifier, op) for op in "abcd"]
    dists = list(samples.distributions(spec))
    per_dist = -(-COUNT // len(dists))
    tried, t_hw, t_sim, failures = 0, 0.0, 0.0, []
    for dist in dists:
        left = per_dist
        while left > 0:
            n = min(BATCH, left)
            left -= n
            regs = [f.to_registers(f.gather_bits(x))
                    for f, x in zip(frags, samples.draw(spec, dist, n, rng))]
            t0 = time.perf_counter()
            d_hw = hw.mma_regs(qualifier, *regs)
            t1 = time.perf_counter()
            d_sim = tcsim.mma_regs(qualifier, *regs)
            t2 = time.perf_counter()
            t_hw, t_sim, tried = t_hw + t1 - t0, t_sim + t2 - t1, tried + n
            bad = np.flatnonzero((d_hw != d_sim).reshape(n, -1).any(axis=1))
            if bad.size:
                i = bad[0]
                failures.append(f"{dist}: {bad.size} of {n} differ; first instruction "
                                f"a={regs[0][i].tolist()} b={regs[1][i].tolist()} "
                                f"c={regs[2][i].tolist()} hw={d_hw[i].tolist()} "
                                f"sim={d_sim[i].tolist()}")
    _log({"test": "random", "qualifier": qualifier, "instructions": tried,
          "mismatching": sum(int(f.split(" of ")[0].split(": ")[1]) for f in failures),
          "hw_seconds": round(t_hw, 3), "sim_seconds": round(t_sim, 3),
          "gpu": hw.device_name()})
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f.name)
def test_hand_derived_fact_on_hardware(fact):
    on_gpu = result_bits(fact, hw.mma)
    got = int(on_gpu[0, 0])
    _log({"test": "fact", "fact": fact.name, "qualifier": fact.qualifier, "d_bits": hex(got)})
    assert got == fact.d_bits, f"{fact.why}: the GPU gives {got:#x}, not {fact.d_bits:#x}"
    assert np.array_equal(on_gpu, result_bits(fact, tcsim.mma))


@pytest.mark.parametrize("qualifier", [q for q in QUALIFIERS
                                       if tcsim.parse(q).family in ("fp8", "int8")])
def test_hardware_close_to_float64_at_matrix_level(qualifier, rng):
    """Guards against a fragment-map error shared by the probe packing and the model: the
    GPU's D, through tcsim's pack/unpack, must be A @ B + C up to rounding."""
    spec = tcsim.parse(qualifier)
    n = 2000
    if spec.integer:
        A, B = (rng.integers(np.iinfo(spec.format(o).dtype).min, np.iinfo(spec.format(o).dtype)
                             .max + 1, (n,) + spec.matrix_shape(o)).astype(spec.format(o).dtype)
                for o in "ab")
        C = rng.integers(-(2**30), 2**30, (n, spec.m, spec.n)).astype(np.int32)
        want = A.astype(np.int64) @ B.astype(np.int64) + C
        assert np.array_equal(hw.mma(qualifier, A, B, C).astype(np.int64), want)
        return
    A, B = (rng.standard_normal((n,) + spec.matrix_shape(o)).astype(spec.format(o).dtype)
            for o in "ab")
    C = rng.standard_normal((n, spec.m, spec.n)).astype(spec.format("c").dtype)
    a, b, c = (x.astype(np.float64) for x in (A, B, C))
    exact = a @ b + c
    scale = np.abs(a) @ np.abs(b) + np.abs(c)
    err = np.abs(hw.mma(qualifier, A, B, C).astype(np.float64) - exact)
    # f32: two truncations and a rounding, each within a few 2**-23 of the terms' size;
    # f16 outputs: within a few 2**-10.
    bound = (2.0**-20 if spec.d_type == "f32" else 2.0**-8) * scale
    assert np.all(err <= bound), f"max error / scale {np.max(err / scale):.3g}"


def test_harness_reports_the_gpu():
    assert "NVIDIA" in hw.device_name()
