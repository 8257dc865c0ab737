"""kernel10's tile variants on the H100 (issue 35): the wgmma rates that price the narrower
tiles, and tcsim.choose_tile against two logged runs of them. The logs are read here; nothing
in them comes from tcsim.

- docs/evidence/gpu_constants_wgmma_shapes.json: wgmma m64nNk16 for N 256, 128, 64, 192, f16 in
  with f32 or f16 accumulators, bf16 in (bench_gpu_constants.py --only wgmma_throughput);
- docs/evidence/bench_sweep_kernel10_tiles.json: the first run of the narrower tiles
  (hopper.cuh's K loop before its uniform registers), 7 shapes;
- docs/evidence/bench_sweep_kernel10_uniform_loop.json: six tiles, 128 x 192 included, with
  the new K loop, 1024^3 to 3072^3;
- the docs' logged run (`LOGGED`): 12 shapes, f16 and bf16 in, up to eight variants."""

import json
from collections import defaultdict
from pathlib import Path

import pytest

import tcsim
from tcsim.perf import TILE_VARIANTS, choose_tile, gpu

EVIDENCE = Path(__file__).resolve().parents[2] / "docs" / "evidence"


def _rows(name: str) -> list[dict]:
    log = json.loads((EVIDENCE / name).read_text())
    assert log["kernel"] == "kernel10" and "H100" in log["gpu"]
    return log["rows"]


def test_every_wgmma_n_does_the_same_flops_per_cycle_and_gpus_json_holds_the_run():
    """The tensor core's rate in FLOPs per SM per cycle does not depend on N (nor on the
    accumulator or bf16): an m64n128k16 takes half an m64n256k16's cycles. A narrower tile
    costs no tensor throughput, only more L2 and shared-memory traffic per FLOP."""
    run = json.loads((EVIDENCE / "gpu_constants_wgmma_shapes.json").read_text())["constants"]
    h100 = gpu("H100-SXM")
    for n in (256, 192, 128, 64):
        for a, acc in (("f16", "f32"), ("f16", "f16"), ("bf16", "f32")):
            rate = run[f"wgmma_m64n{n}k16_{a}_{acc}_per_sm_per_cycle"]["value"]
            assert 2 * 64 * n * 16 * rate == pytest.approx(4096, rel=1e-4), (n, a, acc)
            if n != 256 or a == "bf16":  # the ones this run put in gpus.json
                assert h100.tensor[f"wgmma.m64n{n}k16.{acc}.{a}"].value == rate


def test_every_tile_of_the_variants_is_one_the_twin_runs():
    """Each variant is kernel10's parameters as they stand (block_n one wgmma's N, a consumer
    warpgroup per 64 rows) and fits shared memory; split-K's only on f32 accumulators."""
    kernel = tcsim.kernels.kernel_named("kernel10")
    for label, v in TILE_VARIANTS["kernel10"].items():
        p = kernel.params(accumulate="f32", **v)
        assert label.split()[0] == f"{p.block_m}x{p.block_n}" and p.warp_n == p.block_n
        assert kernel.shared_bytes(p) <= 227 * 1024
    for name in ("kernel8", "kernel9"):
        assert set(TILE_VARIANTS[name]) == {label for label, v in TILE_VARIANTS["kernel10"]
                                            .items() if "splits" not in v}
    # kernel7 launches a block per tile: no persistent pairs to cluster
    assert set(TILE_VARIANTS["kernel7"]) == {label for label, v in TILE_VARIANTS["kernel8"]
                                             .items() if "cluster_m" not in v}


def _chosen_against_measured(rows) -> dict[tuple, float]:
    """For each (shape, accumulator, inputs) of the log: how much slower the variant
    choose_tile takes (among the logged ones) ran than the measured fastest (0.0 when it is the
    fastest)."""
    times, params = defaultdict(dict), {}
    for r in rows:
        if "params" in r:
            case = tuple(r["shape"]), r["accumulate"], r.get("inputs", "f16")
            times[case][r["variant"]] = r["seconds"]
            params[case[2], r["variant"]] = r["params"]
    out = {}
    for (shape, acc, inputs), t in times.items():
        c = choose_tile("kernel10", *shape, accumulate=acc,
                        candidates={label: params[inputs, label] for label in t})
        out[shape, acc, inputs] = t[c.label] / min(t.values()) - 1
    return out


LOGGED = ("bench_sweep_kernel10_tiles_squares.json", "bench_sweep_kernel10_tiles_skinny.json",
          "bench_sweep_kernel10_tiles_bf16.json")  # docs/benchmarks.md's logged run


def test_on_the_logged_run_the_choice_is_within_2_at_every_square_and_5_on_30_of_32():
    """The docs' sweep (three files, one device call; narrow tiles at 4 stages): 32 shape x
    accumulator x input cases. Every square (1024^3 to 4096^3 and 3000^3, f16 and bf16 in) gets
    its measured best but 8192^3 (128 x 192 for 128 x 256, 1-2% slower); the misses beyond 5%
    are 128x8192x8192 with f32 accumulators (64 x 256, 10% slower than 64 x 256 split 2) and,
    since L2's lookups price the narrow tiles, 256x4096x16384 with f16 accumulators (10%)."""
    slower = {(name, *case): s for name in LOGGED
              for case, s in _chosen_against_measured(_rows(name)).items()}
    assert len(slower) == 32
    squares = {case: s for case, s in slower.items() if len(set(case[1])) == 1}
    assert len(squares) == 22 and all(s <= 0.02 for s in squares.values()), squares
    assert sum(s == 0.0 for s in squares.values()) == 19  # 8192^3: 128 x 192, 1-2% slower
    assert sum(s <= 0.05 for s in slower.values()) >= 30, slower


def test_the_choice_is_the_measured_best_at_every_square_with_the_new_loop():
    """1024^3: 64 x 128 (128 tiles); 1536^3 and 3072^3: 128 x 192 (96 and 384 tiles);
    2048^3: 128 x 256 (128 tiles), each with both accumulators."""
    slower = _chosen_against_measured(_rows("bench_sweep_kernel10_uniform_loop.json"))
    assert len(slower) == 8 and all(s == 0.0 for s in slower.values()), slower


def test_on_the_first_narrow_run_the_choice_is_within_5_percent_on_13_of_14():
    """The first run of the narrower tiles: the choice is within 5% of the measured fastest on
    13 of 14 shape x accumulator cases. The miss: 128x8192x8192 with f32 accumulators, where
    explain overprices 128 x 128 split 2 (the fastest) and takes 64 x 256, 14% slower.
    docs/benchmarks.md, "Narrower tiles"."""
    slower = _chosen_against_measured(_rows("bench_sweep_kernel10_tiles.json"))
    assert len(slower) == 14
    assert sum(s <= 0.05 for s in slower.values()) >= 13, slower


FINAL = ("bench_sweep_kernel10_final_squares.json", "bench_sweep_kernel10_final_skinny.json",
         "bench_sweep_kernel10_final_bf16.json")  # issue 35's logged run: deep rings, 192 x 192


def test_on_the_final_logs_the_choice_is_within_5_percent_on_23_of_29():
    """Issue 35's logged run (seven tiles with their deep rings, split-K): 29 shape x
    accumulator x input cases. The choice is within 5% of the measured fastest on 23 (25 when
    TMA's rate was a constant) and within 14% on all. It misses 512x4096x4096 (f16 +12%, f32
    +14%: 128 x 64 predicted as fast as 128 x 128, 0.1% apart, and 15-17% fast), 128x8192x8192
    (f16 +7%, f32 +8%: explain prices its DRAM too slow) and 256x8192x8192 (+5-6%). Every
    square, 1024^3 included (128 x 64: 64 x 128 before, 7% slower with f16), within 2%."""
    slower = {(name, *case): s for name in FINAL
              for case, s in _chosen_against_measured(_rows(name)).items()}
    assert len(slower) == 29
    assert sum(s <= 0.05 for s in slower.values()) >= 23, slower
    assert max(slower.values()) <= 0.14, slower
    # every square gets its measured best or one within 2% (3072^3 and 8192^3, f32)
    assert all(s <= 0.02 for (name, shape, *_), s in slower.items() if len(set(shape)) == 1), \
        slower


# the final logs' commands an hour later, with clusters: the run benchmarks.md's tables show
TABLES_RUN = ("bench_sweep_kernel10_logged_squares.json",
              "bench_sweep_kernel10_logged_skinny.json", "bench_sweep_kernel10_logged_bf16.json")


def test_on_the_tables_run_the_choice_is_within_5_percent_on_24_of_29():
    """The run benchmarks.md's tables show (the final logs' commands with 192 x 192 cluster 2
    among the candidates): within 5% of the measured fastest on 24 of 29, within 17% on all.
    It misses 512x4096x4096 (128 x 64 for 128 x 128: +16%), 128x8192x8192 (64 x 256 for
    64 x 128: +7.5-9%) and 256x8192x8192 with f16 accumulators (+8%); 3000^3 gets the
    cluster variant, its measured best, and 3072^3 gets it too, 1.7-3.5% slower than
    192 x 192 without clusters: every square within 4%."""
    slower = {(name, *case): s for name in TABLES_RUN
              for case, s in _chosen_against_measured(_rows(name)).items()}
    assert len(slower) == 29
    assert sum(s <= 0.05 for s in slower.values()) >= 24, slower
    assert max(slower.values()) <= 0.17, slower
    assert all(s == 0.0 for (name, shape, *_), s in slower.items() if shape == (3000, 3000, 3000))
    assert all(s <= 0.04 for (name, shape, *_), s in slower.items() if len(set(shape)) == 1), \
        slower
