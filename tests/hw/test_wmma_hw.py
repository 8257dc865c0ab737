"""The WMMA instructions on the GPU against tcsim, bit for bit (bash scripts/gpu_check.sh wmma).

- Every wmma.load (shape, operand, type, layout) and wmma.store.d, from global and from shared
  memory, with the tight stride and a padded one: the map read off the GPU must be tcsim's
  (tcsim/isa/wmma/maps_sm90.json, first captured by scripts/capture_wmma.py).
- Every wmma.load and wmma.store.d alone (``wmma_counters.cu``, generated) under Nsight Compute,
  from and to global and shared memory, with the tight, a padded and a 128-byte stride: every
  counter equals `tcsim.trace.count_wmma` (the lowering of tcsim.isa.wmma.lowering). The
  tensor-pipe counter counts ``HFMA2.MMA``, a move ptxas sometimes issues on that pipe: it
  must equal their number in the kernel's SASS (docs/wmma.md).
- Every wmma.mma qualifier: ``TCSIM_HW_WMMA_COUNT`` random instructions (default 20,000) over
  every distribution of tcsim.isa.samples (uniform register bits, NaN, infinities,
  subnormals, cancellation, overflow...), A's and B's repeated f16 elements given different
  random bits, against `tcsim.isa.wmma.wmma_regs`.
"""

import os
import time

import numpy as np
import pytest
from hw_log import log_hw
from sass import ToolkitMissing, kernel_opcodes

from tcsim.isa import samples
from tcsim.isa.wmma import (
    load_cases,
    matrix_dims,
    parse_wmma,
    store_cases,
    supported_wmma_qualifiers,
    wmma_fragment,
    wmma_regs,
)
from tcsim.isa.wmma.fragments import fragment_map
from tcsim.isa.wmma.spec import case_qualifier
from tcsim.trace import (
    GLOBAL_ST_REQUESTS,
    GLOBAL_ST_SECTORS,
    HMMA,
    METRICS,
    SHARED_LD_INST,
    count_wmma,
)

pytestmark = pytest.mark.hw
COUNT = int(os.environ.get("TCSIM_HW_WMMA_COUNT", 20_000))



@pytest.fixture(scope="module")
def hw():
    from tcsim.hw import runtime
    from tcsim.hw.isa import wmma as runner

    try:
        runtime.require()
    except runtime.HardwareUnavailable as error:
        pytest.skip(str(error))
    return runner


def _strides(shape, operand, type_, layout):
    rows, cols = matrix_dims(shape, operand)
    tight = cols if layout == "row" else rows
    return tight, tight + (8 if type_ in ("f16", "bf16") else 4)  # padded by 16 bytes


@pytest.mark.parametrize("space", ["global", "shared"])
def test_fragment_maps_are_the_gpus(space, hw):
    differ = []
    for shape, op, type_, layout in load_cases():
        want = fragment_map(shape, op, type_).coords
        for stride in _strides(shape, op, type_, layout):
            if not np.array_equal(hw.capture_load(shape, op, type_, layout, space, stride), want):
                differ.append(f"load {shape} {op} {type_} {layout} stride {stride}")
    for shape, type_, layout in store_cases():
        want = fragment_map(shape, "d", type_).coords
        for stride in _strides(shape, "d", type_, layout):
            if not np.array_equal(hw.capture_store(shape, type_, layout, space, stride), want):
                differ.append(f"store {shape} {type_} {layout} stride {stride}")
    log_hw({"test": "wmma_maps", "space": space, "cases": 2 * (len(load_cases())
                                                              + len(store_cases())),
          "differ": differ})
    assert not differ


def _counter_strides(shape, operand, type_, layout):
    """The tight and padded strides, and rows 128 bytes apart (every row on the same banks)."""
    return sorted({*_strides(shape, operand, type_, layout),
                   max(_strides(shape, operand, type_, layout)[0],
                       128 // (2 if type_ in ("f16", "bf16") else 4))})


def test_load_and_store_counters_match_nsight_compute(hw, rng):
    from tcsim.hw.isa.wmma_probes import counter_cases, counter_kernel_name
    from tcsim.hw.launch import Launch
    from tcsim.hw.ncu import profile
    from tcsim.isa.wmma.spec import fragment_registers

    cases = [(case, stride) for case in counter_cases() for stride in _counter_strides(*case[:4])]
    launches = []
    for (shape, op, type_, layout, space), stride in cases:
        matrix = rng.integers(1, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
        regs = np.zeros(32 * fragment_registers(shape, op, type_), np.uint32)
        launches.append(Launch("wmma_counters.cu", counter_kernel_name(shape, op, type_, layout,
                                                                       space),
                               (1,), (32,), [matrix, regs, stride]))
    try:  # ptxas's moves on the tensor pipe, where its SASS can be read
        kernels = kernel_opcodes("wmma_counters.cu")
    except ToolkitMissing:
        kernels = None
    metrics = METRICS + (SHARED_LD_INST,)
    measured = profile(launches, metrics)
    differ = []
    for ((shape, op, type_, layout, space), stride), got in zip(cases, measured):
        want = count_wmma(case_qualifier(shape, op, type_), op, layout, space, stride)
        name = counter_kernel_name(shape, op, type_, layout, space)
        want[HMMA] = kernels[name].count("HFMA2.MMA") if kernels else got[HMMA]
        for metric in metrics:
            if op != "d" and metric in (GLOBAL_ST_REQUESTS, GLOBAL_ST_SECTORS):
                continue  # the load's registers written out
            if want.get(metric, 0) != got[metric]:
                differ.append(f"{shape} {op} {type_} {layout} {space} stride {stride} {metric}: "
                              f"tcsim {want.get(metric, 0)}, ncu {got[metric]:.0f}")
    log_hw({"test": "wmma_counters", "cases": len(cases), "metrics": len(metrics),
            "differ": differ, "hfma2_mma_read_from_sass": kernels is not None,
            "hfma2_mma": sum(int(got[HMMA]) for got in measured)})
    assert not differ, f"{len(differ)} counters differ:\n" + "\n".join(differ)


@pytest.mark.parametrize("qualifier", supported_wmma_qualifiers())
def test_random_instructions_agree_bit_for_bit(qualifier, hw, rng):
    spec = parse_wmma(qualifier)
    frags = [wmma_fragment(spec, op) for op in "abcd"]
    dists = list(samples.distributions(spec))
    per = -(-COUNT // len(dists))
    tried = bad = 0
    t_hw = t_sim = 0.0
    first = None
    for dist in dists:
        mats = samples.draw(spec, dist, per, rng)
        a, b, c = (f.to_registers(f.gather_bits(m)) for f, m in zip(frags, mats))
        for f, regs in ((frags[0], a), (frags[1], b)):  # repeated elements: other bits
            if f.copies > 1:
                half = f.registers // f.copies
                regs[:, :, half:] = rng.integers(0, 2**32, regs[:, :, half:].shape,
                                                 dtype=np.uint64).astype(np.uint32)
        t0 = time.perf_counter()
        d_hw = hw.wmma_regs(qualifier, a, b, c)
        t1 = time.perf_counter()
        with np.errstate(all="ignore"):
            d_sim = wmma_regs(qualifier, a, b, c)
        t_hw, t_sim = t_hw + t1 - t0, t_sim + time.perf_counter() - t1
        wrong = np.flatnonzero((d_hw != d_sim).any(axis=(1, 2)))
        tried, bad = tried + per, bad + wrong.size
        if wrong.size and first is None:
            i = wrong[0]
            D_hw, D_sim = (frags[3].scatter_bits(frags[3].from_registers(x[i]))
                           for x in (d_hw, d_sim))
            r, col = np.argwhere(D_hw != D_sim)[0]
            first = (f"{dist}: D[{r},{col}] hw {int(D_hw[r, col]):#x} sim "
                     f"{int(D_sim[r, col]):#x}; A row {mats[0][i, r].tolist()}, B column "
                     f"{mats[1][i, :, col].tolist()}, C {int(mats[2][i, r, col])}")
    log_hw({"test": "wmma_random", "qualifier": spec.qualifier, "instructions": tried,
          "mismatching": bad, "hw_seconds": round(t_hw, 2), "sim_seconds": round(t_sim, 2)})
    assert bad == 0, f"{bad} of {tried} differ; first: {first}"
