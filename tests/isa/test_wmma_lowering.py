"""What wmma.load and wmma.store become on sm_90 (tcsim.isa.wmma.lowering): every variant's SASS
as ptxas emits it, and accesses that reach exactly the fragment's bytes. The counts these
accesses give are proven against Nsight Compute in tests/hw/test_wmma_hw.py."""

from collections import Counter

import numpy as np
import pytest
from sass import ToolkitMissing, kernel_opcodes

from tcsim.hw.isa.wmma_probes import counter_cases, counter_kernel_name
from tcsim.isa.wmma.lowering import element_offsets, lower, sass
from tcsim.isa.wmma.spec import case_qualifier, parse_wmma

MEMORY_OPS = ("LDG", "STG", "LDS", "STS", "LDSM", "STSM", "MOVM", "LD", "ST")


@pytest.fixture(scope="module")
def probe_sass() -> dict[str, list[str]]:
    """Each counter probe's memory and MOVM instructions, compiled here by nvcc for sm_90."""
    try:
        kernels = kernel_opcodes("wmma_counters.cu")
    except ToolkitMissing as missing:
        pytest.skip(str(missing))
    return {name: [op for op in ops if op.split(".")[0] in MEMORY_OPS]
            for name, ops in kernels.items()}


def test_every_load_and_store_lowers_to_the_sass_ptxas_emits(probe_sass):
    differ = []
    for case in counter_cases():
        shape, op, type_, layout, space = case
        got = probe_sass[counter_kernel_name(*case)]
        if op != "d":  # the probe writes a load's registers out with global stores
            got = [x for x in got if not x.startswith("STG")]
        want = sass(case_qualifier(shape, op, type_), op, layout, space)
        if Counter(got) != Counter(want):
            differ.append(f"{case}: ptxas {got}, tcsim {want}")
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("stride_pad", [0, 8, 24])
def test_the_accesses_reach_exactly_the_fragments_bytes(stride_pad):
    """Every byte of the fragment's elements, once per distinct register element; no other."""
    for shape, op, type_, layout, space in counter_cases():
        spec = parse_wmma(case_qualifier(shape, op, type_))
        size = spec.element_bytes(op)
        offsets = element_offsets(spec, op, layout, 64 + stride_pad)
        want = np.unique((offsets[..., None] * size + np.arange(size)).ravel())
        reached = []
        for access in lower(spec, op, layout, space, 64 + stride_pad):
            width = 16 if access.spelling.startswith("ldmatrix") else \
                8 if ".v2." in access.spelling else 4
            lanes = access.offsets[:len(access.offsets) if width != 16 else
                                   8 * int(access.spelling.split(".x")[1][0])]
            reached.append((lanes[:, None] * size + np.arange(width)).ravel())
        reached = np.concatenate(reached)
        assert np.unique(reached).size == reached.size, f"{shape} {op} {layout}: bytes twice"
        assert np.array_equal(np.sort(reached), want), f"{shape} {op} {type_} {layout} {space}"
