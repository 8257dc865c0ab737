"""explain against every logged kernel10 time on the H100 (benchmarks/bench_sweep.py --score
reads the logs of its EVIDENCE): the cases the fitted constants were fitted on, and the held-out
ones, f16 and f32 accumulation apart. The logs are read here; nothing in them comes from tcsim."""

import importlib.util
from collections import defaultdict
from pathlib import Path

import pytest

import tcsim
from tcsim.perf import gpu

ROOT = Path(__file__).resolve().parents[2]
SKINNY = {"384x4096x8192", "256x4096x16384"}  # few 64 x 256 tiles, long K


def _bench_sweep():
    spec = importlib.util.spec_from_file_location("bench_sweep",
                                                  ROOT / "benchmarks" / "bench_sweep.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


@pytest.fixture(scope="module")
def scored() -> list[dict]:
    return _bench_sweep().score()


def _unsplit(rows):
    return [r for r in rows if "error" in r and "split" not in r["variant"]]


def test_the_score_reads_every_log_and_names_what_it_cannot_price(scored):
    logs = {r["log"] for r in scored}
    assert {"bench_sweep_kernel10.json", "bench_sweep_kernel10_heldout.json",
            "bench_sweep_splitk.json", "bench_sweep_kernel10_tiles.json"} <= logs
    assert sum(r["fitted"] for r in scored) == 20
    skipped = [r for r in scored if "skipped" in r]
    # the tiles log's narrower tiles wait for their wgmma's measured rate; split-K's first
    # reduction is not the kernel's any more
    assert all("no tensor rate for 'wgmma.m64n" in r["skipped"] or "6b28e02" in r["skipped"]
               for r in skipped)
    text = _bench_sweep().render_score(scored)
    assert "held out:" in text and "not priced" in text


def test_every_unsplit_case_is_within_10_percent_fitted_or_held_out(scored):
    """Issue 35's bar on kernel10's 128 x 256 and 64 x 256 tiles: every logged case, in four
    runs (the sweep, its six held-out shapes, split-K's run, the tiles' run), within 10%. The
    model before the one-warpgroup gap missed 12 of them, by up to 20%."""
    rows = _unsplit(scored)
    held = [r for r in rows if not r["fitted"]]
    assert len(rows) == 106 and len(held) == 86
    missed = {(r["log"], r["shape"], r["variant"], r["acc"]): f"{r['error']:+.1%}"
              for r in rows if abs(r["error"]) > 0.10}
    assert not missed


def test_skinny_shapes_on_64_row_tiles_are_held_by_one_consumer_warpgroup(scored):
    """384x4096x8192 and 256x4096x16384 with 64 x 256 tiles: 96 or 64 tiles on as many SMs, 128
    or 256 K tiles each. One consumer warpgroup issues every wgmma of a tile and leaves the
    tensor pipe idle after each; the model that ignored it was 13-20% fast on all ten logged
    cases. Now each is within 10%, and the explanation says why."""
    rows = [r for r in _unsplit(scored) if r["shape"] in SKINNY and r["variant"] == "64x256"]
    assert len(rows) >= 8 and {r["acc"] for r in rows} == {"f16", "f32"}
    assert all(abs(r["error"]) <= 0.10 for r in rows), [(r["shape"], r["error"]) for r in rows]
    e = tcsim.trace("kernel10", 256, 4096, 16384, block_m=64).explain("H100-SXM")
    assert e.limiter == "tensor" and "one consumer warpgroup" in e.reason
    assert "second consumer warpgroup" in e.advice


def test_one_warpgroup_idles_the_pipe_after_each_wgmma_and_two_hide_it():
    """A K tile of 64 x 256 (one consumer warpgroup, 4 wgmma m64n256k16) takes 4 x (1 / rate +
    the gap); one of 128 x 256 (two warpgroups, 8 wgmma) takes 8 / rate: each warpgroup's
    wgmma run in the other's gaps."""
    g = gpu("H100-SXM")
    rate = g.tensor_rate("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16")
    gap = g["wgmma_one_warpgroup_gap_cycles"]
    assert 0 < gap < 0.5 / rate  # smaller than a wgmma: a second warpgroup hides it
    one, two = (tcsim.trace("kernel10", 4096, 4096, 4096, accumulate="f32", block_m=block_m)
                .explain("H100-SXM") for block_m in (64, 128))
    assert one.details["compute_cycles"] == pytest.approx(4 * (1 / rate + gap))
    assert one.details["tensor_idle_cycles"] == pytest.approx(4 * gap)
    assert two.details["compute_cycles"] == pytest.approx(8 / rate)
    assert two.details["tensor_idle_cycles"] == 0


def test_an_idle_pipe_draws_less_power_so_the_clock_is_higher():
    """The power cap holds the busy SMs' tensor power: 64 x 256 tiles, whose pipe idles a share
    of each K tile, run at the clock of that share fewer busy SMs."""
    g = gpu("H100-SXM")
    for acc in ("f16", "f32"):
        one = tcsim.trace("kernel10", 8192, 8192, 8192, block_m=64, accumulate=acc) \
            .explain("H100-SXM")
        two = tcsim.trace("kernel10", 8192, 8192, 8192, accumulate=acc).explain("H100-SXM")
        d = one.details
        duty = 1 - d["tensor_idle_cycles"] / d["compute_cycles"]
        assert 0.75 < duty < 0.9
        assert d["clock_hz"] == pytest.approx(
            g.clock_hz(True, acc, 132 * duty, one.seconds - one.launch), rel=1e-5)
        assert d["clock_hz"] > 1.03 * two.details["clock_hz"]


def test_f16_and_f32_accumulation_are_separate_figures_on_the_held_out_runs(scored):
    """The held-out runs (six new shapes; the tiles' run): the predicted f32 / f16 time ratio
    follows the measured one within 4 points on every pair of a run. (A pair's two times come
    from one run, but the measured ratio wanders too: f32 ran 2-3% faster than f16 on two
    pairs, which no clock under a power cap gives.)"""
    pairs = defaultdict(dict)
    for r in _unsplit(scored):
        if r["log"] in ("bench_sweep_kernel10_heldout.json", "bench_sweep_kernel10_tiles.json"):
            pairs[r["log"], r["shape"], r["variant"]][r["acc"]] = r
    assert len(pairs) >= 26
    for key, p in pairs.items():
        f16, f32 = p["f16"], p["f32"]
        measured = f32["measured_us"] / f16["measured_us"]
        predicted = f32["predicted_us"] / f16["predicted_us"]
        assert abs(predicted - measured) <= 0.04, (key, measured, predicted)
