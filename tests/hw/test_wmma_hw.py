"""The WMMA instructions on the GPU against tcsim, bit for bit (bash scripts/gpu_check.sh wmma).

- Every wmma.load (shape, operand, type, layout) and wmma.store.d, from global and from shared
  memory, with the tight stride and a padded one: the map read off the GPU must be tcsim's
  (tcsim/isa/wmma/maps_sm90.json, first captured by scripts/capture_wmma.py).
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

pytestmark = pytest.mark.hw
COUNT = int(os.environ.get("TCSIM_HW_WMMA_COUNT", 20_000))



@pytest.fixture(scope="module")
def hw():
    from tcsim.hw import runtime
    from tcsim.hw import wmma as runner

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
