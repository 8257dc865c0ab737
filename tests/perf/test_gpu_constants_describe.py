"""bench_gpu_constants.py --describe: a run's constants into gpus.json, each with its source. A
run of some measurements (--only wgmma_throughput) writes what it measured and nothing else."""

import json
import shutil
from pathlib import Path

import numpy as np
from repo_script import load

import tcsim.perf

# the GPU descriptions of the tcsim being tested (the installed wheel's too, not the tree's)
GPUS = Path(tcsim.perf.__file__).resolve().parent / "gpus.json"


def _bench():
    return load("benchmarks/bench_gpu_constants.py")


def test_a_wgmma_only_run_writes_its_rates_and_leaves_every_other_entry(tmp_path):
    bench = _bench()
    table = tmp_path / "gpus.json"
    shutil.copy(GPUS, table)
    before = json.loads(table.read_text())
    rng = np.random.default_rng()
    shapes = [(n, a, acc) for n in bench.WGMMA_N
              for a, acc in (("f16", "f32"), ("f16", "f16"), ("bf16", "f32"))]
    rates = {f"wgmma_m64n{n}k16_{a}_{acc}_per_sm_per_cycle": float(rng.uniform(0.005, 0.04))
             for n, a, acc in shapes}
    log = tmp_path / "run.json"
    log.write_text(json.dumps({"date": "2026-11-25 23:50:00 UTC", "constants": {
        k: {"value": v, "unit": "wgmma/SM/cycle", "method": "m"} for k, v in rates.items()}}))
    left = bench.update_description(str(log), str(table))
    after = json.loads(table.read_text())
    for n, a, acc in shapes:
        entry = after["H100-SXM"]["tensor"][f"wgmma.m64n{n}k16.{acc}.{a}"]
        assert entry["value"] == rates[f"wgmma_m64n{n}k16_{a}_{acc}_per_sm_per_cycle"]
        assert str(log) in entry["source"] and entry["unit"] == "instructions/SM/cycle"
    # nothing else moved: the constants, the mma.sync rates, the other GPUs
    assert after["H100-SXM"]["constants"] == before["H100-SXM"]["constants"]
    assert {k: v for k, v in after["H100-SXM"]["tensor"].items() if not k.startswith("wgmma")} \
        == {k: v for k, v in before["H100-SXM"]["tensor"].items() if not k.startswith("wgmma")}
    assert {k: v for k, v in after.items() if k != "H100-SXM"} == \
        {k: v for k, v in before.items() if k != "H100-SXM"}
    # and it says which entries it left, by the key the run lacked
    assert "clock_ghz_wgmma (no sm_clock_ghz_wgmma_f32_2ms, sm_clock_ghz_wgmma_f16_2ms)" in left
    assert "m16n8k16.f32.f16 (no mma_m16n8k16_f16_f32_per_sm_per_cycle)" in left
    assert not [x for x in left if x.startswith("wgmma.")]
