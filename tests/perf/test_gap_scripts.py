"""The sweep's variant syntax, ncu_gap.py's attribution of Nsight Compute's rows, and the narrow
tiles' stage counts against the H100 run that chose them
(docs/evidence/bench_sweep_kernel10_stages_clusters.json)."""

import json
from pathlib import Path

import pytest
from repo_script import load

import tcsim
from tcsim.perf.choose import NARROW_TILES, WGMMA_TILES

ROOT = Path(__file__).resolve().parents[2]
STAGES_LOG = ROOT / "docs" / "evidence" / "bench_sweep_kernel10_stages_clusters.json"


def test_a_variant_takes_parameter_overrides_and_exploratory_defines():
    variant = load("benchmarks/bench_sweep.py").variant
    label, overrides, defines = variant("64x128 +stages=8")
    assert label == "64x128 +stages=8" and defines == {}
    assert overrides == {"block_m": 64, "block_n": 128, "warp_n": 128, "stages": 8}
    _, overrides, defines = variant("128x256 +CLUSTER_M=2")
    assert overrides == {} and defines == {"CLUSTER_M": 2}
    _, overrides, _ = variant("64x256 split 2")
    assert overrides == {**tcsim.perf.TILE_VARIANTS["kernel10"]["64x256"], "splits": 2}


@pytest.mark.parametrize("spec", ["96x96", "64x128 +stages=eight", "64x128 +stages"])
def test_a_variant_that_is_not_one_is_refused_by_name(spec):
    variant = load("benchmarks/bench_sweep.py").variant
    with pytest.raises(SystemExit, match="96x96|stages"):
        variant(spec)


def _csv(rows):
    head = '"ID","Kernel Name","Metric Name","Metric Value"'
    return "\n".join([head, *(f'"{i}","{name}","gpu__time_duration.sum","{v:,}"'
                              for i, name, v in rows)])


def test_ncu_gap_gives_every_cublas_kernel_to_its_shape_and_each_variant_one_launch():
    gap = load("benchmarks/ncu_gap.py")
    order = [{"shape": [1, 2, 3], "who": "64x128", "kernel": "gemm"},
             {"shape": [1, 2, 3], "who": "128x64", "kernel": "gemm"},
             {"shape": [1, 2, 3], "who": "cuBLAS"},
             {"shape": [4, 5, 6], "who": "128x128", "kernel": "gemm"},
             {"shape": [4, 5, 6], "who": "cuBLAS"}]
    text = _csv([(0, "gemm", 10), (1, "gemm", 11), (2, "nvjet_splitK", 1200),
                 (3, "splitKreduce", 30), (4, "gemm", 40), (5, "nvjet", 5000)])
    rows = gap.attribute("==PROF== noise\n" + text, order)
    assert [(r["shape"], r["who"], r["name"]) for r in rows] == [
        ([1, 2, 3], "64x128", "gemm"), ([1, 2, 3], "128x64", "gemm"),
        ([1, 2, 3], "cuBLAS", "nvjet_splitK"), ([1, 2, 3], "cuBLAS", "splitKreduce"),
        ([4, 5, 6], "128x128", "gemm"), ([4, 5, 6], "cuBLAS", "nvjet")]
    assert rows[2]["gpu__time_duration.sum"] == 1200.0


@pytest.mark.parametrize("label", ["128x128", "64x128", "128x64", "64x256", "192x192"])
def test_narrow_tiles_run_the_deepest_ring_that_fits(label):
    kernel = tcsim.kernels.kernel_named("kernel10")
    tile = {**NARROW_TILES, **WGMMA_TILES}[label]
    kernel.params(accumulate="f32", **tile)
    with pytest.raises(ValueError, match="shared memory"):
        kernel.params(accumulate="f32", **{**tile, "stages": tile["stages"] + 1})


def test_the_deeper_ring_was_at_least_as_fast_on_the_h100_where_tiles_fill_the_gpu():
    """Skinny shapes, where narrow tiles fill the GPU: the chosen stage count against 4."""
    log = json.loads(STAGES_LOG.read_text())
    assert "H100" in log["gpu"]
    seconds = {(tuple(r["shape"]), r["variant"]): r["seconds"] for r in log["rows"]}
    for shape in ((256, 8192, 8192), (512, 4096, 4096)):
        for label in ("128x128", "64x128", "128x64"):
            deeper = seconds[shape, f"{label} +stages={NARROW_TILES[label]['stages']}"]
            assert deeper < seconds[shape, label], (shape, label)
