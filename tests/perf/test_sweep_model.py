"""The speed model and the tile choice against issue 35's sweep on the H100
(docs/evidence/bench_sweep_kernel10.json: kernel10 in 128x256 and 64x256 tiles, f16 and f32
accumulation, 11 shapes, one run). The log is read here; nothing in it comes from tcsim."""

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from repo_script import load

import tcsim
from tcsim.kernels import ProblemSizeError
from tcsim.perf import TILE_VARIANTS, choose_tile
from tcsim.perf.choose import WGMMA_TILES

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "docs" / "evidence" / "bench_sweep_kernel10.json"


def _bench_sweep():
    return load("benchmarks/bench_sweep.py")


@pytest.fixture(scope="module")
def measured() -> list[dict]:
    """The log's kernel rows (cuBLAS's rows have no tile parameters)."""
    log = json.loads(LOG.read_text())
    assert log["kernel"] == "kernel10" and "H100" in log["gpu"]
    return [r for r in log["rows"] if "params" in r]


@pytest.fixture(scope="module")
def predicted(measured) -> list[float]:
    return [tcsim.trace("kernel10", *r["shape"], accumulate=r["accumulate"], **r["params"])
            .explain("H100-SXM").seconds for r in measured]


def test_the_log_covers_both_tiles_both_accumulators_and_eleven_shapes(measured):
    assert len(measured) == 44
    assert {r["variant"] for r in measured} == set(WGMMA_TILES)  # logged before split-K
    assert {r["accumulate"] for r in measured} == {"f16", "f32"}
    assert len({tuple(r["shape"]) for r in measured}) == 11
    assert all(r["seconds"] > 0 and "bit-exact" in r["check"] for r in measured)


def test_explain_is_within_10_percent_on_every_case_of_the_sweep(measured, predicted):
    """Issue 35's bar: every case within 10%, the six shapes the fitted constants did not see
    (all but FIT_SHAPES, benchmarks/bench_sweep.py) included."""
    fit_shapes = set(_bench_sweep().FIT_SHAPES)
    errors = {(tuple(r["shape"]), r["variant"], r["accumulate"]): p / r["seconds"] - 1
              for r, p in zip(measured, predicted)}
    assert len(fit_shapes) == 5 and len({k[0] for k in errors} - fit_shapes) == 6
    missed = {k: f"{e:+.1%}" for k, e in errors.items() if abs(e) > 0.10}
    assert not missed


def test_f16_and_f32_accumulation_are_separate_figures(measured, predicted):
    """The power cap holds the clock lower for f32 accumulators (more power), and acts over
    tens of microseconds: long kernels on every SM take 2-3% longer with f32, short ones and
    those on 64 SMs or fewer about the same. The predicted f32 / f16 ratio follows the
    measured one within 3 points on every pair, and is at least 1.015 wherever the measured
    one is at least 1.02."""
    by = defaultdict(dict)
    for r, p in zip(measured, predicted):
        by[tuple(r["shape"]), r["variant"]][r["accumulate"]] = (r["seconds"], p)
    slower = 0
    for (shape, variant), t in by.items():
        (m16, p16), (m32, p32) = t["f16"], t["f32"]
        assert abs(p32 / p16 - m32 / m16) <= 0.03, (shape, variant)
        if m32 >= 1.02 * m16:
            assert p32 >= 1.015 * p16, (shape, variant)
            slower += 1
        tiles = shape[0] // (64 if variant == "64x256" else 128) * (shape[1] // 256)
        if tiles <= 64:  # the cap does not bind: the same clock (the rates differ by 1e-5)
            assert p32 == pytest.approx(p16, rel=1e-4), (shape, variant)
    assert slower >= 7


def test_the_choice_is_the_measured_best_wherever_the_gap_exceeds_3_percent(measured):
    """tcsim.choose_tile picks the variant the log measured fastest, for each shape and
    accumulator whose two variants differ by more than 3%."""
    assert _choices_match_where_the_gap_exceeds_3_percent(measured) >= 20


def _choices_match_where_the_gap_exceeds_3_percent(rows) -> int:
    """Assert that choose_tile picks the measured best of each shape and accumulator whose
    variants differ by more than 3%; return how many such cases there were."""
    times = defaultdict(dict)
    for r in rows:
        times[tuple(r["shape"]), r["accumulate"]][r["variant"]] = r["seconds"]
    decided = 0
    for (shape, acc), t in times.items():
        best, other = sorted(t, key=t.get)
        if t[other] > 1.03 * t[best]:
            # the logs measured the tiles without split-K: the choice among those
            assert choose_tile("kernel10", *shape, accumulate=acc,
                               candidates=WGMMA_TILES).label == best, (shape, acc)
            decided += 1
    return decided


def test_a_choice_explains_every_candidate_in_words():
    c = choose_tile(tcsim.kernel10, 1024, 1024, 1024)
    tiles = {label for label, v in TILE_VARIANTS["kernel10"].items() if "splits" not in v}
    # a tile whose wgmma (kernel10's default f16 accumulation) has no measured rate in
    # gpus.json is listed as refused, saying so (96 wide, until m64n96k16 is measured)
    rates = tcsim.perf.gpu("H100-SXM").tensor
    priced = {label for label in tiles
              if f"wgmma.m64n{label.split()[0].split('x')[1]}k16.f16.f16" in rates}
    assert len(tiles) == 10 and {"128x256", "192x192", "192x96", "128x96"} <= tiles
    assert set(c.explanations) == priced and set(c.refused) == tiles - priced
    assert all("no tensor rate" in why for why in c.refused.values())
    assert c.params == TILE_VARIANTS["kernel10"][c.label]
    assert c.explanation.seconds == min(e.seconds for e in c.explanations.values())
    text = str(c)
    assert "32 tiles over 32 SMs" in text and "64 tiles over 64 SMs" in text
    assert "128 tiles over 128 SMs" in text  # 64 x 128 and 128 x 64
    assert f"-> {c.label}" in text and "limited by" in text


def test_a_candidate_that_cannot_run_the_problem_is_refused_and_says_why():
    # The Hopper rungs take any M (a partial last tile row): 192 rows run on both tiles, and
    # 128-row tiles leave half of their second row of tiles empty.
    c = choose_tile("kernel10", 192, 8192, 8192, candidates=WGMMA_TILES)
    assert c.label == "64x256" and not c.refused
    # A candidate the problem cannot take is listed with the reason, the others still compete.
    c = choose_tile("kernel5", 192, 256, 256,
                    candidates={"64x128": {"block_m": 64, "warp_m": 32}, "128x128": {}})
    assert c.label == "64x128" and set(c.refused) == {"128x128"}
    assert "M=192 is not a multiple of block_m=128" in c.refused["128x128"]
    assert "cannot run or explain this problem" in str(c)
    assert "6 tiles over 6 SMs" in str(c)  # the GPU spreads blocks over SMs before doubling up
    with pytest.raises(ProblemSizeError,
                       match="no candidate tile fits and can be explained at M=100 N=8190"):
        choose_tile("kernel10", 100, 8190, 8192)


def test_candidates_are_a_parameter_and_bad_ones_are_named():
    c = choose_tile("kernel10", 4096, 4096, 4096, candidates={"3 stages": {"stages": 3},
                                                                 "4 stages": {}})
    assert set(c.explanations) == {"3 stages", "4 stages"}
    with pytest.raises(ValueError, match="non-empty mapping"):
        choose_tile("kernel10", 1024, 1024, 1024, candidates={})
    with pytest.raises(TypeError, match="must be a mapping"):
        choose_tile("kernel10", 1024, 1024, 1024, candidates={"64": 64})
    with pytest.raises(TypeError):
        choose_tile("kernel10", 1024, 1024, 1024, candidates={"x": {"block_q": 64}})


def test_a_kernel_without_variants_has_its_own_tiles_as_the_one_candidate():
    c = choose_tile("kernel2", 1024, 1024, 1024)
    assert list(c.explanations) == ["256x128"] and c.params == {}
    assert "kernel2 has no tile variants of its own: give them as" in str(c)  # the way on
    two = choose_tile("kernel2", 1024, 1024, 1024, candidates={"a": {}, "b": {"block_m": 128}})
    assert "no tile variants" not in str(two)


def test_the_cli_chooses(capsys):
    from tcsim.cli import main

    # 256x4096x16384: 64 x 128 at 8 stages, the measured fastest with f16 accumulators in
    # issue 35's final run (56.7 us; 128 x 64 61.4, 128 x 128 81.6)
    assert main(["explain", "kernel10", "256", "4096", "16384", "--choose"]) == 0
    out = capsys.readouterr().out
    assert "-> 64x128" in out and "128x256:" in out and "predicted" in out


def test_the_fitted_constants_are_labelled_and_are_the_fit_on_the_named_shapes(capsys):
    """gpus.json labels exactly the constants bench_sweep.py fits, and holds what its fit finds
    on FIT's cases alone: a change to the model that moves the fit must refit them."""
    from tcsim.perf import gpu

    bench = _bench_sweep()
    g = gpu("H100-SXM")
    fitted = {k for k, c in g.constants.items() if c.source.startswith("FITTED")}
    assert fitted == set(bench.FITTED)
    assert bench.FIT[bench.FIT_LOG] == bench.FIT_SHAPES  # the sweep's other shapes held out
    found = bench.fit()
    assert found == pytest.approx({k: g[k] for k in fitted}, rel=1e-9)
    assert "held out" in capsys.readouterr().out


def test_the_sweep_tables_in_benchmarks_md_are_the_logs_predicted_now():
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    found = re.findall(r"<!-- sweep-table (\S+) -->\n(.*?)\n<!-- end sweep-table -->", text, re.S)
    assert len(found) >= 4, "docs/benchmarks.md lost its sweep-table markers"
    bench = _bench_sweep()
    for log, table in found:
        assert table.strip() == bench.render(bench.table(str(ROOT / log))).strip(), \
            f"docs/benchmarks.md is stale: python benchmarks/bench_sweep.py --table {log}"


def test_a_candidate_without_a_measured_rate_is_set_aside_not_fatal():
    # a description without a measured rate for wgmma m64n128k16: that candidate is listed
    # with the reason, and the others still compete
    from dataclasses import replace

    from tcsim.perf import gpu

    h100 = gpu("H100-SXM")
    without = replace(h100, tensor={k: v for k, v in h100.tensor.items()
                                    if not k.startswith("wgmma.m64n128k16")})
    c = choose_tile("kernel10", 4096, 4096, 4096, gpu=without,
                    candidates={"128x256": {}, "128x128": {"block_n": 128, "warp_n": 128}})
    assert c.label == "128x256" and set(c.refused) == {"128x128"}
    assert "no tensor rate for 'wgmma.m64n128k16" in c.refused["128x128"]
    assert "measured rates only" in c.refused["128x128"]


HELD_OUT = ROOT / "docs" / "evidence" / "bench_sweep_kernel10_heldout.json"


def test_on_six_held_out_shapes_the_choice_is_the_best_and_explain_within_10():
    """The second H100 run, on shapes chosen and predicted before they ran: the chosen tile is
    the measured best wherever the two differ by more than 3% (all 12 cases), and explain is
    within issue 35's 10% on every case (before the stage ring: 17.2%, the skinny shapes on
    64-row tiles)."""
    log = json.loads(HELD_OUT.read_text())
    rows = [r for r in log["rows"] if "params" in r]
    assert not {tuple(r["shape"]) for r in rows} & set(_bench_sweep().FIT_SHAPES)
    worst = 0.0
    for r in rows:
        p = tcsim.trace("kernel10", *r["shape"], accumulate=r["accumulate"], **r["params"])
        worst = max(worst, abs(p.explain("H100-SXM").seconds / r["seconds"] - 1))
    assert worst <= 0.10
    assert _choices_match_where_the_gap_exceeds_3_percent(rows) == 12
