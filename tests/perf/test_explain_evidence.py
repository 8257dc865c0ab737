"""explain against every logged kernel10 time on the H100 (benchmarks/bench_sweep.py --score
reads the logs of its EVIDENCE): the cases the fitted constants were fitted on (its FIT,
LOOKUP_FIT and DRIFT_FIT: every run logged before the revision of 2026-11-26's second session),
and the held-out runs logged after it, f16 and f32 accumulation apart, split-K included. The
logs are read here; nothing in them comes from tcsim."""

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest
from repo_script import load

import tcsim
from tcsim.perf import gpu

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "docs" / "evidence"
SKINNY = {"384x4096x8192", "256x4096x16384"}  # few 64 x 256 tiles, long K
# The seven runs the model was revised on (79 cases fitted on, 92 held out), and the runs
# logged since, all held out: docs/benchmarks.md's sweep (squares, skinny and ragged, bf16),
# the deeper stages' exploration, and issue 35's logged run with the deep rings (FINAL).
REVISED_ON = {"bench_sweep_kernel10.json", "bench_sweep_kernel10_heldout.json",
              "bench_sweep_splitk.json", "bench_sweep_kernel10_tiles.json",
              "bench_sweep_kernel10_skinny_ksweep.json", "bench_sweep_splitk_ksweep.json",
              "bench_sweep_splitk_first_reduction.json"}
LOGGED_SINCE = {"bench_sweep_kernel10_tiles_squares.json", "bench_sweep_kernel10_tiles_skinny.json",
                "bench_sweep_kernel10_tiles_bf16.json", "bench_sweep_kernel10_stages_clusters.json",
                "bench_sweep_kernel10_stages_bf16.json"}
FINAL = {"bench_sweep_kernel10_final_squares.json", "bench_sweep_kernel10_final_skinny.json",
         "bench_sweep_kernel10_final_bf16.json"}
# the same commands an hour later with the cluster variant
LOGGED = {"bench_sweep_kernel10_logged_squares.json", "bench_sweep_kernel10_logged_skinny.json",
          "bench_sweep_kernel10_logged_bf16.json"}
# the K sweeps the revision was made with (clusters' launch, the fixed costs)
SWEEPS = {"bench_sweep_clusters_ksweep.json", "bench_sweep_kernel10_fixed.json"}
# logged after the revision, held out: the 96-wide tiles' first timing, and issue 35's logged
# run with the 96-wide tiles (the run benchmarks.md's first tables show)
HELD_OUT = {"bench_sweep_kernel10_tile96.json"}
SESSION23 = {"bench_sweep_kernel10_session23_squares.json",
             "bench_sweep_kernel10_session23_skinny.json",
             "bench_sweep_kernel10_session23_bf16.json"}
# the same commands after the 64-byte box rows' lookups and requests were priced, held out
SESSION24 = {"bench_sweep_kernel10_session24_squares.json",
             "bench_sweep_kernel10_session24_skinny.json",
             "bench_sweep_kernel10_session24_bf16.json"}

# the last tile row hanging past M or not, and ragged shapes against padded ones (session 25)
PROBES25 = {"bench_sweep_kernel10_edge_rows.json", "bench_sweep_kernel10_padded.json",
            "bench_sweep_kernel10_edge_rows_few_sms.json"}
# the same commands after explain priced boxes hanging past the last row, held out
SESSION25 = {"bench_sweep_kernel10_session25_squares.json",
             "bench_sweep_kernel10_session25_skinny.json",
             "bench_sweep_kernel10_session25_bf16.json"}


def _wide(r) -> bool:
    """A case of kernel10's 128 x 256 or 64 x 256 tiles (wgmma m64n256k16), the tiles the model
    was revised on; the narrower tiles' cases (priced since their wgmma rates were measured)
    are held to their own, looser bar below."""
    return r["variant"].split()[0] in ("128x256", "64x256")


def _bench_sweep():
    return load("benchmarks/bench_sweep.py")


@pytest.fixture(scope="module")
def scored() -> list[dict]:
    return _bench_sweep().score()


def test_the_score_reads_every_log_and_names_what_it_cannot_price(scored):
    logs = {r["log"] for r in scored}
    assert logs == REVISED_ON | LOGGED_SINCE | FINAL | LOGGED | SWEEPS | HELD_OUT | SESSION23 \
        | SESSION24 | PROBES25 | SESSION25
    skipped = [r for r in scored if "skipped" in r]
    # split-K's first reduction is not the kernel's any more; the exploration's clusters are
    # not modeled
    assert all("6b28e02" in r["skipped"] or "CLUSTER_M" in r["skipped"] for r in skipped)
    # the runs logged since the first revision are fitted for L2's lookup factor, those before
    # the second revision for L2's drift; the runs logged after it are held out
    assert all(r["fit"] == "LOOKUP_FIT" for r in scored if r["log"] in LOGGED_SINCE)
    assert all(r["fit"] == "DRIFT_FIT" for r in scored if r["log"] in FINAL | LOGGED | SWEEPS)
    assert not any(r["fitted"] for r in scored
                   if r["log"] in HELD_OUT | SESSION23 | SESSION24 | PROBES25 | SESSION25)
    text = _bench_sweep().render_score(scored)
    assert "held out:" in text and "not priced" in text


def test_the_wide_tiles_of_the_first_seven_runs_miss_10_percent_by_2_points_at_most(scored):
    """Issue 35's bar on every logged case of kernel10's 128 x 256 and 64 x 256 tiles, split-K
    included, in the seven runs the model was first revised on: 79 cases of FIT (the sweep's
    five shapes, the two K sweeps), 92 others. Every one was within 10% before the second
    revision, which traded four of them (by at most 1.8 points) for the skinny shapes' deep
    rings: 128 x 256 at 1024x1024x512 (-10.5%) and split 2 at 1024x1024x2048 (-10.1%), 64 x 256
    at 256x4096x16384 (-11.8%) and 128 x 256 at 1536^3 (-10.2%). The model before the stage
    ring and split-K's turns missed 16 (by up to 28%)."""
    priced = [r for r in scored if "error" in r and _wide(r) and r["log"] in REVISED_ON]
    fitted = [r for r in priced if r["fit"] == "FIT"]
    assert len(fitted) == 79 and len(priced) - len(fitted) == 92
    assert sum("split" in r["variant"] for r in priced if r["fit"] != "FIT") == 6
    missed = {(r["shape"], r["variant"], r["acc"]) for r in priced if abs(r["error"]) > 0.10}
    assert len(missed) <= 4 and max(abs(r["error"]) for r in priced) <= 0.12, missed


def test_the_narrow_tiles_cases_are_priced_and_their_misses_are_counted(scored):
    """The narrower tiles of the tiles' run (128 x 128, 64 x 128, 128 x 64 and 128 x 128 split 2
    at 7 shapes, f16 and f32; 49 cases, fitted on for L2's lookup factor): 40 within 10% and
    none beyond 18% (36 and 17% before L2's drift; 30 and 18% when TMA's rate was a constant).
    Not issue 35's bar: 64 x 128 at 1024^3 and 1536^3 is predicted up to 17% slow, 128 x 64 at
    512x4096x4096 and 256x4096x16384 up to 16% fast (docs/performance.md, "Deep rings")."""
    narrow = [r for r in scored if "error" in r and not _wide(r) and r["log"] in REVISED_ON]
    assert len(narrow) == 49 and {r["log"] for r in narrow} == {"bench_sweep_kernel10_tiles.json"}
    assert all(r["fit"] == "LOOKUP_FIT" for r in narrow)
    assert sum(abs(r["error"]) <= 0.10 for r in narrow) >= 40
    assert max(abs(r["error"]) for r in narrow) <= 0.18


def test_the_runs_logged_since_are_priced_and_their_misses_named(scored):
    """docs/benchmarks.md's first logged sweep (squares, skinny and ragged, bf16 in) and the
    deeper stages' exploration, fitted on for L2's lookup factor and drift: 230 priced cases.
    The wide tiles' misses are named here: 64 x 256 at 1000x776x1000 (predicted 16% fast) and
    at 8192^3 with bf16 (10-15% slow); the narrow tiles within 10% on 128 of 161 (132 before L2's
    drift and DRAM's bytes in flight; 123 when TMA's rate was a constant); 3000^3, whose rows
    are off 128-byte lines, within 10% on every tile but 64 x 128 at 4 stages (+12%; the model
    that counted bytes alone was 24-49% fast on all 19)."""
    since = [r for r in scored if "error" in r and r["log"] in LOGGED_SINCE]
    assert len(since) == 230
    wide = [r for r in since if _wide(r)]
    assert len(wide) == 69
    missed = {(r["log"], r["shape"], r["variant"], r["acc"], round(r["error"], 2))
              for r in wide if abs(r["error"]) > 0.10}
    assert missed == {
        ("bench_sweep_kernel10_tiles_skinny.json", "1000x776x1000", "64x256", "f16", -0.16),
        ("bench_sweep_kernel10_tiles_skinny.json", "1000x776x1000", "64x256", "f32", -0.16),
        ("bench_sweep_kernel10_tiles_bf16.json", "8192x8192x8192", "64x256", "f16", 0.10),
        ("bench_sweep_kernel10_tiles_bf16.json", "8192x8192x8192", "64x256", "f32", 0.11),
        ("bench_sweep_kernel10_tiles_bf16.json", "8192x8192x8192", "64x256", "f32", 0.15)}
    narrow = [r for r in since if not _wide(r)]
    assert sum(abs(r["error"]) <= 0.10 for r in narrow) >= 128
    ragged = [r for r in since if r["shape"] == "3000x3000x3000"]
    assert len(ragged) == 19 and all(abs(r["error"]) <= 0.125 for r in ragged)
    assert sum(abs(r["error"]) <= 0.10 for r in ragged) >= 18


def test_skinny_shapes_on_64_row_tiles_wait_for_the_stage_ring(scored):
    """384x4096x8192 and 256x4096x16384 with 64 x 256 tiles: 96 or 64 tiles on as many SMs, 128
    or 256 K tiles each, 512 cycles of wgmma a K tile for each stage's round trip. The model
    that took the wgmma for the K tile was 13-20% fast on all eight logged cases (four runs);
    within 12% now (7 of 8 within 10%). At 4 stages the copies in flight from DRAM (3 stages
    ahead on 64 SMs) hold DRAM under 2 TB/s, and the explanation says so."""
    rows = [r for r in scored if "error" in r and r["shape"] in SKINNY
            and r["variant"] == "64x256" and r["log"] in REVISED_ON]
    assert len(rows) == 8 and {r["acc"] for r in rows} == {"f16", "f32"}
    errors = [(r["shape"], round(r["error"], 3)) for r in rows]
    assert all(abs(r["error"]) <= 0.12 for r in rows), errors
    assert sum(abs(r["error"]) <= 0.10 for r in rows) >= 7, errors
    e = tcsim.trace("kernel10", 256, 4096, 16384, block_m=64).explain("H100-SXM")
    assert e.limiter == "dram" and "in flight" in e.reason and "3 stages ahead" in e.reason
    assert "more stages" in e.advice
    # the ring's round trip is still what keeps the tensor pipe from its rate
    assert e.details["tensor_idle_cycles"] > 0


def test_one_warpgroup_alone_runs_wgmma_at_the_full_rate():
    """Why the ring and not the tensor pipe: wgmma_peak.cu's loop (kernel7's consumer pattern,
    no copies, no barriers) with one warpgroup per SM took 512.1 cycles per group of 4
    m64n256k16 over 2 ms, as two warpgroups do: the pipe's measured rate, on 132 and 64 SMs,
    f16 and f32 (benchmarks/wgmma_warpgroups.py on the H100)."""
    log = json.loads((EVIDENCE / "wgmma_warpgroups_h100_2026-11-25.json").read_text())
    g = gpu("H100-SXM")
    long = [r for r in log["rows"] if r["seconds"] > 1e-3]
    assert {(r["warpgroups"], r["blocks"]) for r in long} == {(1, 132), (2, 132), (1, 64),
                                                              (2, 64)}
    for r in long:
        rate = g.tensor_rate(f"wgmma.mma_async.sync.aligned.m64n256k16.{r['accumulate']}"
                             ".f16.f16")
        assert r["wgmma_per_sm_per_cycle"] == pytest.approx(rate, rel=0.002)


def test_a_stage_makes_its_round_once_in_stages_k_tiles():
    """The ring: a K tile takes at least (its wgmma + the handoff + the copies' latency) /
    stages. 64 x 256 tiles (512 cycles of wgmma) wait for it; 128 x 256 tiles (1,024) do not."""
    g = gpu("H100-SXM")
    rate = g.tensor_rate("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16")
    for block_m, wgmma in ((64, 4), (128, 8)):
        e = tcsim.trace("kernel10", 256, 4096, 16384, accumulate="f32", block_m=block_m) \
            .explain("H100-SXM")
        d = e.details
        ring = (wgmma / rate + g["tma_stage_handoff_cycles"] + d["global_latency_cycles"]) / 4
        assert d["ring_cycles"] == pytest.approx(ring)
        assert d["chain_cycles"] == pytest.approx(max(ring, wgmma / rate, d["transfer_cycles"]))
    assert d["chain_cycles"] == pytest.approx(8 / rate) and d["tensor_idle_cycles"] == 0


def test_an_idle_pipe_draws_less_power_so_the_clock_is_higher():
    """The power cap holds the busy SMs' tensor power: 64 x 256 tiles, whose pipe waits a share
    of each K tile, run at the clock of that share fewer busy SMs."""
    g = gpu("H100-SXM")
    for acc in ("f16", "f32"):
        one = tcsim.trace("kernel10", 8192, 8192, 8192, block_m=64, accumulate=acc) \
            .explain("H100-SXM")
        two = tcsim.trace("kernel10", 8192, 8192, 8192, accumulate=acc).explain("H100-SXM")
        d = one.details
        duty = d["compute_cycles"] / d["chain_cycles"]
        assert 0.7 < duty < 0.9
        assert d["clock_hz"] == pytest.approx(
            g.clock_hz(True, acc, 132 * duty, one.seconds - one.launch), rel=1e-5)
        assert d["clock_hz"] > 1.03 * two.details["clock_hz"]


def test_split_k_pays_a_turn_per_partial_after_its_k_tiles():
    """1024x1024xK (bench_sweep_splitk_ksweep.json): at K = 256 each split beyond the first
    cost 128 x 256 tiles 2.4-2.9 us more (S = 2, 3, 4), though their K tiles shrink; the model
    charges a tile S turns (one store, S - 1 loads one after another) and so grows with S as
    the measurement does (2.4-4.5 us a split)."""
    log = json.loads((EVIDENCE / "bench_sweep_splitk_ksweep.json").read_text())
    t = {r["variant"]: r["seconds"] for r in log["rows"] if r["shape"] == [1024, 1024, 256]}
    steps = [t[f"128x256 split {s + 1}"] - t[f"128x256 split {s}"] for s in (2, 3)]
    assert all(2.0e-6 < step < 3.2e-6 for step in steps)
    p = {s: tcsim.trace("kernel10", 1024, 1024, 256, accumulate="f32", splits=s)
         .explain("H100-SXM") for s in (2, 3, 4)}
    g = gpu("H100-SXM")
    for s in (2, 3, 4):
        d = p[s].details
        partial = 128 * 256 * 4 / (32 * g["l1_sectors_per_cycle"])
        assert d["reduction_cycles"] == pytest.approx(s * (partial + g["split_k_turn_cycles"]))
    for s in (2, 3):
        assert 2.0e-6 < p[s + 1].seconds - p[s].seconds < 4.5e-6


def test_f16_and_f32_accumulation_are_separate_figures_on_the_held_out_runs(scored):
    """The held-out runs (six new shapes; the tiles' run): on every pair of 40 us or more, the
    predicted f32 / f16 time ratio follows the measured one within 4 points. (Below 40 us the
    measured ratio wanders more than the clock moves it: 128 x 256 at 1024^3 measured 0.986
    in the sweep and 1.049 in the tiles' run; 64 x 256 at 1536^3, 0.951.)"""
    pairs = defaultdict(dict)
    for r in scored:
        if "error" in r and _wide(r) and r["log"] in ("bench_sweep_kernel10_heldout.json",
                                                      "bench_sweep_kernel10_tiles.json"):
            pairs[r["log"], r["shape"], r["variant"]][r["acc"]] = r
    pairs = {k: p for k, p in pairs.items() if len(p) == 2  # split-K: f32 alone
             and p["f16"]["measured_us"] >= 40}
    assert len(pairs) == 15
    for key, p in pairs.items():
        f16, f32 = p["f16"], p["f32"]
        measured = f32["measured_us"] / f16["measured_us"]
        predicted = f32["predicted_us"] / f16["predicted_us"]
        assert abs(predicted - measured) <= 0.04, (key, measured, predicted)


def test_the_choice_with_split_k_is_the_measured_best_on_every_logged_shape():
    """f32, every shape of split-K's three runs (1024x1024xK, 256x4096xK and 384x4096x4096,
    1024^3 and 256x4096x16384): choose_tile among the variants the run timed takes the
    measured best, or one within 3% of it (11 shapes; the model that charged the partials at
    L1's rate chose a split at 1024^3, 23% slower)."""
    shapes = defaultdict(dict)
    for name in ("bench_sweep_splitk_ksweep.json", "bench_sweep_kernel10_skinny_ksweep.json",
                 "bench_sweep_splitk.json"):
        for r in json.loads((EVIDENCE / name).read_text())["rows"]:
            if "params" in r and r["accumulate"] == "f32":
                shapes[name, tuple(r["shape"])][r["variant"]] = r["seconds"]
    assert len(shapes) == 11
    for (name, shape), t in shapes.items():
        choice = tcsim.choose_tile("kernel10", *shape, accumulate="f32", candidates={
            label: tcsim.perf.TILE_VARIANTS["kernel10"][label] for label in t})
        assert t[choice.label] <= 1.03 * min(t.values()), (name, shape, choice.label)


NCU_GAP = EVIDENCE / "ncu_kernel10_cublas_1536_3000_3072.csv"


def _ncu_kernel10(csv_path: Path) -> dict[int, dict[str, float]]:
    """kernel10's launches in a Nsight Compute CSV (--csv --page raw): launch size (its grid's
    problem is told by its TMA sectors) -> metric -> value."""
    import csv

    lines = [line for line in csv_path.read_text().splitlines() if line.startswith('"')]
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for row in csv.DictReader(lines):
        if row["Kernel Name"] == "kernel10":
            out[int(row["ID"])][row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    return out


def test_l2_request_constants_are_the_ncu_runs_figures():
    """gpus.json's L2 request rate and requests per box row are Nsight Compute's counts for
    kernel10 (128 x 192, f32) at 3072^3 (rows of 6144 bytes: every box row on a 128-byte
    line) and 3000^3 (rows of 6000 bytes: one row in 8 on a line), recomputed here from the
    CSV and from the box rows counted by hand: A's 3000 rows x 47 box columns, copied once
    for each of 16 tile columns; B's 3000 rows x 47 box columns, once for each of 24 tile
    rows."""
    runs = _ncu_kernel10(NCU_GAP)
    tma = "l1tex__m_xbar2l1tex_read_sectors_pipe_tma.sum"
    requests = "lts__t_requests_srcunit_tex_op_read.sum"
    aligned_run = next(r for r in runs.values() if r[tma] == 3072 * 3072 * 2 * (16 + 24) / 32)
    ragged_run = next(r for r in runs.values() if r["gpu__time_duration.sum"] > 120e3)
    g = gpu("H100-SXM")
    rows = aligned_run[tma] / 4  # 128-byte rows, 4 sectors each
    assert g["tma_requests_per_aligned_row"] == pytest.approx(aligned_run[requests] / rows)
    a_rows, b_rows = 3000 * 47 * 16, 3000 * 47 * 24
    on_a_line = (a_rows + b_rows) // 8  # 6000 * r is a multiple of 128 for r = 0 mod 8
    assert on_a_line == 705_000
    off = a_rows + b_rows - on_a_line
    per_row = (ragged_run[requests] - on_a_line * g["tma_requests_per_aligned_row"]) / off
    assert g["tma_requests_per_misaligned_row"] == pytest.approx(per_row)
    assert g["l2_tma_requests_per_s"] == pytest.approx(
        ragged_run[requests] / (ragged_run["gpu__time_duration.sum"] * 1e-9))
    # the model counts the same requests for that launch, by the rows' alignment
    e = tcsim.trace("kernel10", 3000, 3000, 3000, accumulate="f32", block_n=192, warp_n=192) \
        .explain("H100-SXM")
    assert e.details["l2_requests"] == pytest.approx(ragged_run[requests], rel=1e-9)
    assert e.limiter == "l2" and "requests" in e.reason and "128 bytes" in e.advice
    aligned = tcsim.trace("kernel10", 3072, 3072, 3072, accumulate="f32", block_n=192,
                          warp_n=192).explain("H100-SXM")
    assert aligned.details["l2_requests"] == pytest.approx(aligned_run[requests], rel=1e-9)
    assert not aligned.details["by_requests"]


def test_rows_off_128_byte_lines_wait_for_l2_requests():
    """3000^3 (rows of 6000 bytes, 16-byte aligned, not 128: docs/evidence/
    bench_sweep_kernel10_tiles_bf16.json, f16 and bf16 in, four tiles, none fitted): every case
    within 10% with L2's requests the limiter. The model that counted TMA's bytes alone was
    24-43% fast on all twelve (the requests take 4.6 times an aligned row's)."""
    log = json.loads((EVIDENCE / "bench_sweep_kernel10_tiles_bf16.json").read_text())
    rows = [r for r in log["rows"] if r["shape"] == [3000, 3000, 3000] and "params" in r]
    assert len(rows) == 12
    for r in rows:
        e = tcsim.trace("kernel10", 3000, 3000, 3000, accumulate=r["accumulate"],
                        **r["params"]).explain("H100-SXM")
        assert abs(e.seconds / r["seconds"] - 1) <= 0.10, (r["variant"], r["accumulate"])
        assert e.limiter == "l2" and e.details["by_requests"], r["variant"]


def _best_of_each_case(scored, logs=FINAL) -> dict[tuple, dict]:
    """The fastest measured variant of each (log, shape, inputs, accumulator) of ``logs``: the
    sweep table's row for that case (docs/benchmarks.md)."""
    best = {}
    for r in scored:
        if r["log"] in logs and "error" in r:
            key = r["log"], r["shape"], r["acc"]
            if key not in best or r["measured_us"] < best[key]["measured_us"]:
                best[key] = r
    return best


def _priced_with_every_wide_case_within_10(scored, logs, count: int, fit: str) -> list[dict]:
    """The priced cases of ``logs`` (``count`` of them, all of the fit set ``fit``: "" for
    held out), after checking that every 128 x 256 and 192 x 192 case of theirs (29 each) is
    within 10%."""
    cases = [r for r in scored if r["log"] in logs and "error" in r]
    assert len(cases) == count and all(r["fit"] == fit for r in cases)
    for tile in ("128x256", "192x192"):
        mine = [r for r in cases if r["variant"] == tile]
        assert len(mine) == 29 and all(abs(r["error"]) <= 0.10 for r in mine), tile
    return cases


def _fastest_rows_within_10(scored, logs) -> None:
    """The sweep table's rows, the fastest variant of each shape and accumulator (29 of
    them): every one within 10%."""
    best = _best_of_each_case(scored, logs)
    assert len(best) == 29
    missed = {(r["shape"], r["variant"], r["acc"]): round(r["error"], 3) for r in best.values()
              if abs(r["error"]) > 0.10}
    assert not missed


def test_the_final_logs_are_scored_and_their_misses_counted(scored):
    """Issue 35's first logged run (the deep rings and 192 x 192; 274 priced cases, held out
    until L2's drift was fitted on it with every run before the second revision): 228 within
    10% (223 before the revision, 213 when TMA's rate was a constant). Every case of 128 x 256
    and 192 x 192 is within 10%, and 24 of 128 x 64's 29 (9 once). The sweep table's rows,
    the fastest variant of each case, are within 10% on all 29 (25 before the revision: 128 x 64
    at 1024^3 and the deep rings at 128x8192x8192 were predicted 11% slow, DRAM at a fitted
    2.7 TB/s whatever the bytes in flight)."""
    final = _priced_with_every_wide_case_within_10(scored, FINAL, 274, "DRIFT_FIT")
    assert sum(abs(r["error"]) <= 0.10 for r in final) >= 228
    assert sum(abs(r["error"]) <= 0.10 for r in final if r["variant"] == "128x64") >= 24
    _fastest_rows_within_10(scored, FINAL)


def test_the_first_tables_run_is_scored_and_its_misses_counted(scored):
    """The same commands an hour later, with 192 x 192 in 2-block clusters (294 priced cases;
    the drift fitted on them too): 248 within 10% (235 before the revision, held out then),
    every 128 x 256 and 192 x 192 case among them, and the fastest variant of each case within
    10% on all 29 (24 before: five deep rings predicted 10-12% slow)."""
    logged = _priced_with_every_wide_case_within_10(scored, LOGGED, 294, "DRIFT_FIT")
    assert sum(abs(r["error"]) <= 0.10 for r in logged) >= 248
    _fastest_rows_within_10(scored, LOGGED)


def test_the_run_logged_after_the_revision_is_held_out_and_every_sweep_point_within_10(scored):
    """Issue 35's bar on the run logged after the revision (benchmarks.md's first tables; 352
    priced cases, no constant fitted on them): the sweep's 29 points (each shape and
    accumulator's fastest variant, f16 and bf16 in) are all within 10% of explain, f16 and f32
    accumulation priced apart; so is every case of 128 x 256, 192 x 192 and 192 x 192 in
    clusters. Over all cases 275 within 10% as logged (289 with the 64-byte box rows' lookups
    and requests priced, session 24); the misses are variants no one picks there: 192 x 96 on
    the skinny shapes, 64 x 256 at 8192^3 and 1000x776x1000, split-K on the skinny shapes."""
    held = _priced_with_every_wide_case_within_10(scored, SESSION23, 352, "")
    assert sum(abs(r["error"]) <= 0.10 for r in held) >= 275
    clustered = [r for r in held if r["variant"] == "192x192 cluster 2"]
    assert len(clustered) == 20 and all(abs(r["error"]) <= 0.10 for r in clustered)
    _fastest_rows_within_10(scored, SESSION23)
    best = _best_of_each_case(scored, SESSION23)
    assert {r["variant"] for r in best.values() if r["shape"] == "1536x1536x1536"} == {"192x96"}
    # the 96-wide tiles' first timing, held out too: 27 of its 40 within 10%
    first = [r for r in scored if r["log"] in HELD_OUT and "error" in r]
    assert len(first) == 40 and not any(r["fitted"] for r in first)
    assert sum(abs(r["error"]) <= 0.10 for r in first) >= 27



def test_the_run_logged_after_the_short_rows_is_held_out_and_every_sweep_point_within_10(scored):
    """The same commands after B's 64-byte box rows got their own L2 lookups and requests
    (session 24, 08:14-08:20 UTC; 352 priced cases, nothing fitted on them): the sweep's 29
    points within 10% (worst 9.3%), every case of 128 x 256 and 192 x 192 too, and 19 of the
    20 in clusters (256x8192x8192 with f16 accumulators at -10.0%);
    288 of all cases within 10% (275 in the run before, with the 64-byte rows priced as 128-byte
    ones), 40 of the 58 cases of the 96-wide tiles (24 before). The misses left: 192 x 96 and
    128 x 96 on the skinny shapes (copies slower than any rate the model has: the same at 3, 4
    and 5 stages), 64 x 256 at 4096^3 and 8192^3, split-K on the skinny shapes."""
    held = _priced_with_every_wide_case_within_10(scored, SESSION24, 352, "")
    assert sum(abs(r["error"]) <= 0.10 for r in held) >= 288
    clustered = [r for r in held if r["variant"] == "192x192 cluster 2"]
    assert len(clustered) == 20 and sum(abs(r["error"]) <= 0.10 for r in clustered) >= 19
    assert max(abs(r["error"]) for r in clustered) < 0.101
    _fastest_rows_within_10(scored, SESSION24)
    wide96 = [r for r in held if r["variant"] in ("192x96", "128x96")]
    assert len(wide96) == 58 and sum(abs(r["error"]) <= 0.10 for r in wide96) >= 40
    before = [r for r in scored if r["log"] in SESSION23 and "error" in r]
    assert sum(abs(r["error"]) <= 0.10 for r in before) >= 287


def test_the_run_logged_after_the_edge_rows_is_held_out_and_every_sweep_point_within_10(scored):
    """The same commands after explain priced TMA boxes hanging past the matrix's last row
    (session 25, 10:45-10:51 UTC; 352 priced cases, nothing fitted on them, the constant
    measured): the sweep's 29 points within 10% (worst 8.3%), every case of 128 x 256 and 192 x
    192 too; 293 of all cases within 10% (288 in the run before, priced as it stood then), 42 of
    the 58 cases of the 96-wide tiles. 192 x 96 at the skinny shapes whose last tile row hangs
    64 rows past M within 10% (32-35% fast in the run before, as explain stood then); where it
    hangs 128 rows past (M = 256) still about 30% fast."""
    held = _priced_with_every_wide_case_within_10(scored, SESSION25, 352, "")
    assert sum(abs(r["error"]) <= 0.10 for r in held) >= 293
    _fastest_rows_within_10(scored, SESSION25)
    wide96 = [r for r in held if r["variant"] in ("192x96", "128x96")]
    assert len(wide96) == 58 and sum(abs(r["error"]) <= 0.10 for r in wide96) >= 42
    edge = [r for r in held if r["variant"] == "192x96"
            and r["shape"] in ("128x8192x8192", "512x4096x4096")]
    assert len(edge) == 4 and all(abs(r["error"]) <= 0.10 for r in edge)

NCU_RINGS = EVIDENCE / "ncu_rings_h100_2026-11-26.json"


def _rings() -> list[dict]:
    return [r for r in json.loads(NCU_RINGS.read_text()) if r["name"] == "kernel10"]


def test_l2_looks_up_sectors_at_its_measured_read_bandwidth_at_most():
    """Nsight Compute on kernel10's narrow tiles at deep and 4-stage rings, and the wide ones, at
    seven shapes (56 launches): the L2 sectors TMA's reads look up
    (lts__t_sectors_srcunit_tex_op_read) never come faster than the L2 read bandwidth measured
    by another benchmark (gpus.json's l2_bytes_per_s), and 128 x 64 at 3072^3 meets it (its
    tensor pipe 41% busy): the L2's lookups, not TMA's bytes, are its ceiling."""
    rows = _rings()
    assert len(rows) == 56
    ceiling = gpu("H100-SXM")["l2_bytes_per_s"]
    rate = {(tuple(r["shape"]), r["who"]): r["lts__t_sectors_srcunit_tex_op_read.sum"] * 32
            / (r["gpu__time_duration.sum"] * 1e-9) for r in rows}
    assert max(rate.values()) <= ceiling * 1.01
    assert rate[(3072, 3072, 3072), "128x64"] >= 0.98 * ceiling


def test_deep_rings_move_tma_bytes_faster_than_the_models_rate_on_skinny_shapes():
    """What the model lacks (docs/performance.md, "Deep rings"): TMA's bytes arrive at
    l2_bytes_per_s over the share of them L2 looks up, and that share is not a constant. On
    the skinny shapes the narrow tiles at their deep rings (8 stages) are looked up at 0.37-0.42
    of TMA's sectors and move 12.7-14.4 TB/s over the whole launch, above the 11.19 TB/s the
    model takes for 128-row tiles in groups; at 4 stages the share is 0.44-0.58 and the rate
    8.5-9.7 TB/s. At 3072^3, 128 x 64's share is 0.75-0.84 and its rate 8.6 TB/s."""
    rows = {(tuple(r["shape"]), r["who"]): r for r in _rings()}
    model_rate = gpu("H100-SXM")["l2_tma_grouped_bytes_per_s"]

    def share(r):
        return r["lts__t_sectors_srcunit_tex_op_read.sum"] * 32 / \
            r["l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"]

    def tma_rate(r):
        return r["l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"] / \
            (r["gpu__time_duration.sum"] * 1e-9)

    for shape in ((512, 4096, 4096), (256, 4096, 16384), (256, 8192, 8192)):
        for tile in ("128x64", "64x128"):
            deep, four = rows[shape, tile], rows[shape, f"{tile} +stages=4"]
            assert share(deep) < 0.43 < share(four), (shape, tile)
            assert tma_rate(deep) > 1.1 * model_rate and tma_rate(four) < 0.9 * model_rate
    square = rows[(3072, 3072, 3072), "128x64"]
    assert share(square) > 0.8 and tma_rate(square) < 0.8 * model_rate


def test_lockstep_lookups_count_a_box_once_per_gpc():
    """The lockstep count by hand, 512x4096 in 128 x 64 tiles (4 tile rows, 64 columns, groups
    of 16 rows: column by column), 132 SMs: with one GPC, each wave looks up each of its rows'
    and columns' boxes once (wave 1: 4 rows, 33 columns; wave 2: 4 rows, 31 columns); with a GPC
    per SM nothing is shared; with 8, block b on GPC b x 8 // 132, a row's A box is asked by
    every GPC and a column's four blocks straddle a GPC's edge in 6 of wave 1's 33 columns
    (blocks 17, 33, 50, 66, 83, 99 begin GPCs; 116 begins a column too) and 6 of wave 2's 31."""
    from tcsim.perf.model import lockstep_lookups

    p = tcsim.kernels.kernel_named("kernel10").params(block_n=64, warp_n=64, group_m=16)
    total = 256 * (128 + 64)
    assert lockstep_lookups(p, 512, 4096, 132, 1) == \
        pytest.approx(((4 + 4) * 128 + (33 + 31) * 64) / total)
    assert lockstep_lookups(p, 512, 4096, 132, 132) == pytest.approx(1.0)
    a_boxes = 2 * 4 * 8  # two waves, four rows, each asked by all 8 GPCs
    b_boxes = (33 + 6) + (31 + 6)  # columns, and those straddling a GPC's edge
    expected = (a_boxes * 128 + b_boxes * 64) / total
    assert lockstep_lookups(p, 512, 4096, 132, 8) == pytest.approx(expected)



def test_lockstep_lookups_count_short_rows_once_per_block():
    """512x4096 in 128 x 96 tiles (B in 32-column boxes, 64-byte rows: 4 tile rows, 43 columns,
    172 tiles, 132 SMs): with one GPC the A boxes are looked up once per wave's row (4 + 4) and
    every block's B box on its own, as L2 serves SMs that ask together for rows shorter than a
    line hardly faster than SMs apart (the H100's evidence below)."""
    from tcsim.perf.model import lockstep_lookups

    p = tcsim.kernels.kernel_named("kernel10").params(block_n=96, warp_n=96, group_m=16)
    assert p.box_row_bytes == 64
    total = 172 * (128 + 96)
    assert lockstep_lookups(p, 512, 4096, 132, 1) == pytest.approx(((4 + 4) * 128 + 172 * 96)
                                                                    / total)
    # keeping a share of the saving: wave 1's 132 tiles ask for 33 columns, wave 2's 40 for 10
    assert lockstep_lookups(p, 512, 4096, 132, 1, 0.25) == pytest.approx(
        ((4 + 4) * 128 + (43 + 0.75 * (172 - 43)) * 96) / total)
    constants = json.loads((EVIDENCE / "gpu_constants_h100_2026-11-26_rows.json").read_text())
    rate = {k: v["value"] for k, v in constants["constants"].items()}
    long_gain = rate["l2_tma_read_rows128_bytes_per_s_share8"] / \
        rate["l2_tma_read_rows128_bytes_per_s_share1"]
    short_gain = rate["l2_tma_read_rows64_bytes_per_s_share8"] / \
        rate["l2_tma_read_rows64_bytes_per_s_share1"]
    assert long_gain > 1.4 and short_gain < 1.1
    # gpus.json's share of the gain short rows keep is this evidence's
    merge = gpu("H100-SXM")["l2_tma_short_row_merge"]
    assert merge == pytest.approx((short_gain - 1) / (long_gain - 1), abs=0.001)


def test_a_short_box_row_asks_for_one_request_unless_it_crosses_a_line():
    """128x104x8 on 128 x 96 tiles, by hand. B (8 rows of 104 f16: a 208-byte pitch) in boxes
    of 32 columns, rows of 64 bytes: the rows start 0, 80, 32, 112, 64, 16, 96, 48 bytes into a
    line; a box starting 0 or 128 bytes in keeps 5 of the 8 rows within a line (those starting
    at 0, 32, 64, 16, 48), one starting 64 or 192 bytes in keeps 5 too (64, 16, 48, 0, 32): 20
    rows at one request, 12 at a misaligned row's. A (128 rows of 8 f16, a 16-byte pitch) in
    one 128-byte box column, copied for each of the 2 tile columns: 16 rows on a line, 112 not."""
    from tcsim.perf.model import _tma_requests

    g = tcsim.perf.gpu("H100-SXM")
    kernel = tcsim.kernels.kernel_named("kernel10")
    p = kernel.params(block_n=96, warp_n=96, stages=7)
    aligned, misaligned = g["tma_requests_per_aligned_row"], g["tma_requests_per_misaligned_row"]
    expected = 2 * (16 * aligned + 112 * misaligned) + (20 * 1.0 + 12 * misaligned)
    assert _tma_requests(kernel, p, 128, 104, 8, g)[0] == pytest.approx(expected)
    # 128-byte rows (128 x 128 tiles, boxes at 0 and 128 bytes): only row 0 starts a line in
    # either box, 2 rows aligned and 14 not; A is copied for 1 tile column
    wide = kernel.params(block_n=128, warp_n=128)
    assert _tma_requests(kernel, wide, 128, 104, 8, g)[0] == \
        pytest.approx(1 * (16 * aligned + 112 * misaligned) + 2 * aligned + 14 * misaligned)


def test_every_row_of_a_box_past_the_last_row_costs_the_edge_requests():
    """192x128x8 on 128 x 128 tiles, by hand. A (192 rows of 8 f16, a 16-byte pitch: every
    8th row starts a line) in boxes of 128 rows, copied for the one tile column: rows 128-191
    lie in the box that hangs 64 rows past M, 8 of them on a line, 56 not; that box costs the
    edge's requests for each of its 128 rows in place of theirs. B (8 rows of 128 f16, every
    row on a line) in boxes of 64 rows: its one box row hangs past K = 8, in each of its two
    box columns 64 rows at the edge's cost in place of 8 aligned rows', copied for each of the
    two tile rows. M and K whole boxes: nothing beyond the rows' own requests."""
    from tcsim.perf.model import _tma_requests

    g = tcsim.perf.gpu("H100-SXM")
    kernel = tcsim.kernels.kernel_named("kernel10")
    p = kernel.params(block_n=128, warp_n=128)
    aligned, misaligned = g["tma_requests_per_aligned_row"], g["tma_requests_per_misaligned_row"]
    edge = g["tma_requests_per_edge_row"]
    counted, extra = _tma_requests(kernel, p, 192, 128, 8, g)
    assert counted == pytest.approx(24 * aligned + 168 * misaligned + 2 * 2 * 8 * aligned)
    assert extra == pytest.approx(128 * edge - (8 * aligned + 56 * misaligned)
                                  + 2 * 2 * (64 * edge - 8 * aligned))
    assert _tma_requests(kernel, p, 256, 128, 64, g)[1] == 0
    # explain reports what the edge costs apart from the rows' requests: at K = 64 (a 128-byte
    # pitch, every row on a line) the box past M replaces its 64 rows inside
    e = tcsim.trace("kernel10", 192, 128, 64, accumulate="f32", block_n=128, warp_n=128) \
        .explain("H100-SXM")
    assert e.details["edge_requests"] == pytest.approx(128 * edge - 64 * aligned)
    assert e.details["l2_requests"] == pytest.approx(192 * aligned + 2 * 2 * 64 * aligned)


def test_the_edge_rows_request_cost_is_the_measured_one():
    """gpus.json's requests per row of a box past the last row: L2's TMA request rate over the
    box rows a second that 132 SMs copying such boxes reached (the evidence's three boxes; the
    run's SMs held 1.98 GHz, as every tma_bench.cu run on this H100)."""
    constants = json.loads((EVIDENCE / "gpu_constants_h100_2026-11-26_edge_rows.json")
                           .read_text())["constants"]
    g = gpu("H100-SXM")
    clock = 1.98e9
    shares = []
    for box, height, inside in (("192x64", 192, 128), ("192x64", 192, 64), ("128x64", 128, 64)):
        cycles = constants[f"tma_box{box}_inside{inside}_sms132_cycles_per_box"]["value"]
        shares.append(g["l2_tma_requests_per_s"] / (132 * height / cycles * clock))
    assert g["tma_requests_per_edge_row"] == pytest.approx(sum(shares) / 3, abs=0.01)


def test_a_narrow_tile_limited_by_l2_names_its_lookups():
    """64 x 128 at 4096^3 (issue 35's final run: 299-304 us, predicted 23-24% fast: the
    lookups' worst case) is limited by L2's lookups, and the reason says what share of TMA's
    sectors L2 looks up; 128 x 256, whose copies keep the measured rate, says nothing of it."""
    e = tcsim.trace("kernel10", 4096, 4096, 4096, block_m=64, block_n=128, warp_n=128,
                    stages=8).explain("H100-SXM")
    assert e.limiter == "l2" and "looks up" in e.reason
    assert 0.2 < e.details["lookup_share"] < 1.0
    wide = tcsim.trace("kernel10", 4096, 4096, 4096).explain("H100-SXM")
    assert wide.details["lookup_share"] is None


def test_tma_boxes_past_the_last_row_are_slow_only_on_a_busy_gpu():
    """bench_gpu_constants.py --only tma_edge_rows: a box hanging past the matrix's last row
    takes one SM alone as long as a box inside it; on busy SMs each copying such boxes it takes
    longer the more SMs copy, about three times a box inside on all 132."""
    constants = json.loads((EVIDENCE / "gpu_constants_h100_2026-11-26_edge_rows.json")
                           .read_text())["constants"]

    def cycles(box: str, inside: int, sms: int) -> float:
        return constants[f"tma_box{box}_inside{inside}_sms{sms}_cycles_per_box"]["value"]

    for box, height in (("192x64", 192), ("128x64", 128)):
        for inside in (64, 128):
            if inside >= height:
                continue
            alone = cycles(box, inside, 1)
            assert alone == pytest.approx(cycles(box, height, 1), rel=0.02)
            busy = [cycles(box, inside, sms) for sms in (44, 88, 132)]
            assert busy == sorted(busy) and busy[-1] > 2.5 * cycles(box, height, 132)


def test_the_edge_rows_requests_close_part_of_the_96_wide_tiles_misses(scored):
    """bench_sweep_kernel10_edge_rows.json (N = 4096, K = 16384, logged before explain priced
    the edge): 192 x 96 within 10% where M is a multiple of 192; where its last tile row hangs
    past M, and 128 x 96's at M = 192, explain priced without the edge rows' requests comes out
    33-43% fast, with them at least 8 points nearer; 128 x 128 within 10% at every M, hanging
    or not (its copies have room under its wgmma)."""
    from tcsim.perf.model import EDGE

    log = json.loads((EVIDENCE / "bench_sweep_kernel10_edge_rows.json").read_text())
    g = gpu("H100-SXM")
    without = replace(g, constants={k: v for k, v in g.constants.items() if k != EDGE})
    error = {(r["shape"].split("x")[0], r["variant"]): r["error"] for r in scored
             if r["log"] == "bench_sweep_kernel10_edge_rows.json" and "error" in r}
    assert all(abs(error[m, "192x96"]) <= 0.10 for m in ("192", "384"))
    assert all(abs(error[m, "128x128"]) <= 0.10 for m in ("128", "192", "256", "384"))
    for row in log["rows"]:
        M = str(row["shape"][0])
        if (M, row["variant"]) not in (("256", "192x96"), ("192", "128x96")):
            continue
        t = tcsim.trace(log["kernel"], *row["shape"], accumulate=row["accumulate"],
                        **row["params"])
        before = t.explain(without).seconds / row["seconds"] - 1
        assert before < -0.3
        assert abs(error[M, row["variant"]]) < abs(before) - 0.08


def test_kernel10_on_a_few_sms_loses_nothing_to_a_tile_row_past_m():
    """bench_sweep_kernel10_edge_rows_few_sms.json (N = 192, K = 16384: one to four blocks):
    each tile runs as fast at the M whose last tile row hangs past it (128 and 256 for 192-row
    tiles, 192 for 128-row ones) as at the M that fills it: what slows boxes past the last row
    is the other SMs' traffic (the edge-rows evidence above)."""
    log = json.loads((EVIDENCE / "bench_sweep_kernel10_edge_rows_few_sms.json").read_text())
    seconds = defaultdict(dict)
    for row in log["rows"]:
        if "params" in row:
            seconds[row["variant"]][row["shape"][0]] = row["seconds"]
    assert set(seconds) == {"192x96", "192x192", "128x96", "128x128"}
    for variant, by_m in seconds.items():
        assert set(by_m) == {128, 192, 256, 384}
        assert max(by_m.values()) < 1.02 * min(by_m.values()), variant


def test_explain_names_what_its_l2_requests_come_from():
    """192 x 96 on the skinny shapes is limited by L2's requests: at 128x8192x8192 mostly the
    zero fill of its one tile row's boxes (M = 128, 192-row boxes: 64 rows past), and the advice
    is a tile whose rows divide M; at 256x4096x16384 mostly B's 64-byte rows, and the advice is
    a tile whose columns make 128-byte rows. 3000^3's rows off 128-byte lines are named too."""
    def explained(M, N, K, **tile):
        return tcsim.trace("kernel10", M, N, K, accumulate="f32", **tile).explain("H100-SXM")

    tile96 = dict(block_m=192, block_n=96, warp_n=96, stages=5)
    edge = explained(128, 8192, 8192, **tile96)
    assert edge.limiter == "l2" and edge.details["edge_requests"] > edge.details["l2_requests"]
    assert "zero fill" in edge.reason and "64-byte rows" in edge.reason
    assert "rows divide M" in edge.advice
    short = explained(256, 4096, 16384, **tile96)
    assert short.limiter == "l2" and short.details["edge_requests"] < short.details["l2_requests"]
    assert "64-byte rows" in short.reason and "multiple of 64" in short.advice
    ragged = explained(3000, 3000, 3000, block_n=192, warp_n=192)
    assert "off 128-byte lines" in ragged.reason and "128 bytes" in ragged.advice
