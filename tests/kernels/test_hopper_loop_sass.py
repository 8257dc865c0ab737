"""What the Hopper twins' consumer K loop costs in SASS (hopper.cuh, kernel10's twin for sm_90a).

A K tile is four wgmma per consumer warpgroup; everything else the loop issues is overhead,
which at small shapes (few, short K tiles) is not hidden. Nsight Compute showed kernel11's
twin (the same loop) at ~70 integer instructions per K tile per warp against cuBLAS's ~25: the
stage as `it % STAGES`, descriptors built in ordinary registers from the warpgroup index and
moved to uniform ones (R2UR) before each wgmma. The loop now keeps the stage and barrier phase
as wrapping counters, the warpgroup index from lane 0 (uniform) and adds to descriptors built
once: 82-96 instructions per K tile before, 40-43 after (nvcc 13)."""

import re

import pytest
from sass import ToolkitMissing, kernel_sass, opcode

from tcsim.kernels import kernel_named
from tcsim.perf.choose import TILE_VARIANTS


def k_loop(params: dict) -> tuple[list[str], int]:
    """The instructions one pass of kernel10's consumer K loop executes (the innermost loop
    holding HGMMA, less the block that asks TMA for C once a tile), and how many K tiles a
    pass covers (ptxas may unroll it)."""
    kernel = kernel_named("kernel10")
    defines = tuple(sorted(kernel.defines(kernel.params(**params)).items()))
    try:
        body = kernel_sass(kernel.source, "sm_90a", defines)["kernel10"]
    except ToolkitMissing as missing:
        pytest.skip(str(missing))
    loops = []
    for address, text in body:
        jump = re.search(r"BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)", text)
        if jump and int(jump.group(1), 16) < address:
            inside = [(a, t) for a, t in body if int(jump.group(1), 16) <= a <= address]
            if any(opcode(t).startswith("HGMMA") for _, t in inside):
                loops.append(inside)
    loop = min(loops, key=len)
    skipped = set()
    for address, text in loop:  # a forward branch over the C request's TMA loads
        jump = re.match(r"@!?U?P\w+\s+BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)", text)
        if jump and address < int(jump.group(1), 16) <= loop[-1][0]:
            over = {a for a, t in loop if address < a < int(jump.group(1), 16)}
            if any("UTMALDG" in t for a, t in loop if a in over):
                skipped |= over
    executed = [t for a, t in loop if a not in skipped]
    wgmma = sum(opcode(t).startswith("HGMMA") for t in executed)
    assert wgmma % 4 == 0 and wgmma, executed  # 4 wgmma (BK 64 / 16) per K tile
    return executed, wgmma // 4


CASES = [(label, acc) for label, v in TILE_VARIANTS["kernel10"].items()
         if v.get("splits", 1) <= 2 for acc in (("f32",) if "splits" in v else ("f16", "f32"))]


@pytest.mark.parametrize("label, accumulate", CASES)
def test_the_consumer_k_loop_spends_few_instructions_per_k_tile(label, accumulate):
    params = {**TILE_VARIANTS["kernel10"][label], "accumulate": accumulate}
    executed, tiles = k_loop(params)
    ops = [opcode(t) for t in executed]
    assert len(executed) / tiles <= 48, (label, accumulate, len(executed) / tiles, executed)
    # descriptors and stage addresses stay in uniform registers: no move into them per wgmma,
    # and no division of the K tile count
    assert not [op for op in ops if op.startswith(("R2UR", "IMAD.HI", "UIMAD.WIDE"))], executed
