"""The CUDA tcsim ships holds kernels, not experiments: no EXPLORE_ switch in tcsim/hw, and every
part hopper.cuh's timing hook names has its switch in benchmarks/cuda/explore.cuh."""

import re
from pathlib import Path

import tcsim

HW = Path(tcsim.__file__).resolve().parent / "hw"
EXPLORE = Path(__file__).resolve().parent.parent / "benchmarks" / "cuda" / "explore.cuh"


def test_shipped_cuda_has_no_experiment_switch():
    sources = [p for p in HW.rglob("*") if p.suffix in (".cu", ".cuh", ".py")]
    assert any(p.name == "hopper.cuh" for p in sources)
    found = [f"{p.relative_to(HW)}" for p in sources if "EXPLORE_" in p.read_text()]
    assert not found, f"experiment switches in the shipped sources: {found}"


def test_every_hooked_part_has_its_switch_in_the_benchmarks():
    hopper = (HW / "kernels" / "hopper.cuh").read_text()
    parts = set(re.findall(r"TIMING_KEEP\(([A-Z_]+),", hopper))
    assert parts == {"C_LOADS", "D_STORES", "EPILOGUE", "MMA"}
    explore = EXPLORE.read_text()
    defined = set(re.findall(r"#define EXPLORE_KEEP_(\w+)\(alpha\)", explore))
    assert parts == defined
    assert "#define TIMING_KEEP(part, alpha) EXPLORE_KEEP_##part(alpha)" in explore
