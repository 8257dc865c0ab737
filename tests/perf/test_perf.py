"""tcsim.perf: GPU descriptions, occupancy and the speed model's bookkeeping. How well the
model predicts the H100 is benchmarks/bench_explain.py's table (docs/performance.md)."""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import tcsim
from tcsim.perf import explain, gpu, gpu_names, occupancy
from tcsim.perf.occupancy import twin_registers

BREAKDOWN = Path(__file__).resolve().parents[2] / "docs" / "evidence" / \
    "ncu_breakdown_h100_2026-11-24.json"
EVIDENCE = BREAKDOWN.parent
UNITS = {"tensor", "shared", "l1", "issue", "l2", "dram", "latency"}


def test_every_constant_has_a_unit_and_a_source():
    for name in gpu_names():
        g = gpu(name)
        for key, c in {**g.constants, **g.tensor}.items():
            assert c.unit and c.source, f"{name} {key}"
            assert c.value > 0 or key == "shared_reserved_per_block", f"{name} {key}"
        for key in ("sms", "clock_ghz", "registers_per_sm", "max_warps_per_sm",
                    "shared_bytes_per_sm", "l2_bytes_per_s", "dram_bytes_per_s"):
            assert g[key] > 0


def test_an_unknown_gpu_or_constant_is_named():
    with pytest.raises(ValueError, match="unknown GPU 'V100'"):
        gpu("V100")
    with pytest.raises(KeyError, match="no constant 'warp_size'"):
        gpu("H100-SXM")["warp_size"]


@pytest.mark.parametrize("warps, registers, shared, blocks, limiter", [
    (4, 244, 65536, 2, "registers"),   # kernel6 f16: 7,936 registers a warp, 31,744 a block
    (4, 168, 16384, 3, "registers"),   # kernel5 f16: 5,376 a warp (already a multiple of 256)
    (8, 195, 49152, 1, "registers"),
    (4, 32, 120 * 1024, 1, "shared memory"),  # 1 KB reserved per block on top
    (32, 16, 0, 2, "warps"),
    (1, 16, 0, 32, "blocks"),
])
def test_blocks_per_sm_follow_the_occupancy_rules(warps, registers, shared, blocks, limiter):
    o = occupancy(gpu("H100-SXM"), warps, registers, "test", shared)
    assert (o.blocks_per_sm, o.limiter) == (blocks, limiter)


def test_a_block_that_cannot_fit_is_refused():
    with pytest.raises(ValueError, match="does not fit"):
        occupancy(gpu("H100-SXM"), 32, 255, "test", 0)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (ptxas) to read registers")
def test_ptxas_registers_are_what_nsight_compute_reported_on_the_h100():
    """launch__registers_per_thread of the twins at 4096^3 (docs/benchmarks.md, 2026-11-22).
    kernel6 has 254 since its epilogue selects beta 0's addend (244 before): ptxas's count,
    which tests/hw/test_kernels_hw.py held equal to Nsight Compute's on the H100 on
    2026-11-24 (docs/evidence/hw_beta0_2026-11-24_mended.jsonl)."""
    measured = {"kernel1": 186, "kernel2": 195, "kernel3": 209, "kernel4": 210,
                "kernel5": 168, "kernel6": 254}
    for name, registers in measured.items():
        k = tcsim.kernels.kernel_named(name)
        p = k.params(accumulate="f16")
        assert twin_registers(k.source, k.entry, k.defines(p), "sm_90") == registers, name


def test_the_explanation_is_consistent_with_its_parts():
    for name in ("kernel1", "kernel6", "wmma_shared", "kernel10"):
        e = tcsim.trace(name, 2048, 1024, 1024).explain("H100-SXM", registers=128)
        assert e.limiter in UNITS and set(e.units) | {"latency"} == UNITS
        per_sm = max(e.units[u] for u in ("tensor", "shared", "l1", "issue"))
        assert math.isclose(e.seconds, e.launch + max(per_sm + e.latency, e.units["l2"],
                                                      e.units["dram"]), rel_tol=1e-9)
        bounds = {**e.units, "latency": e.latency + e.launch}
        busiest = max(bounds, key=bounds.get)
        if e.limiter == "shared":  # L1's data pipe, mostly shared memory's wavefronts
            assert busiest == "l1" and e.units["shared"] >= 0.5 * e.units["l1"]
        else:
            assert e.limiter in (busiest, "latency")
        assert e.waves >= e.full_waves > e.waves - 1
        assert e.tflops == pytest.approx(2 * 2048 * 1024 * 1024 / e.seconds / 1e12)
        assert e.limiter in str(e) and "<table>" in e._repr_html_()


def test_a_wave_is_every_blocks_work_plus_one_blocks_exposed_chain():
    """kernel6 holds 2 blocks per SM: a wave is 2 W + (L - W), W a block's work on its busiest
    unit and L its chain, so the exposed latency is the chain less one block's work."""
    e = tcsim.trace("kernel6", 4096, 4096, 4096).explain("H100-SXM", registers=254)
    d, B = e.details, e.occupancy.blocks_per_sm
    assert B == 2
    busiest = max(d["per_block_cycles"], key=d["per_block_cycles"].get)
    W = d["per_block_cycles"][busiest]
    L = d["chain_cycles"] * (4096 // 32) + d["epilogue_cycles"]
    assert e.latency * d["clock_hz"] / e.waves == pytest.approx(L - W)
    assert e.units[busiest] * d["clock_hz"] / e.waves == pytest.approx(B * W)


def test_the_tensor_bound_is_the_mma_count_over_the_rate():
    """A block's tensor time is its mma count over the SM's rate: a 128 x 128 block of kernel6
    issues 128 * 128 * 4096 / (16 * 8 * 16) m16n8k16 at K = 4096, whatever the trace says."""
    t = tcsim.trace("kernel6", 4096, 4096, 4096)
    e = explain(t, "H100-SXM", registers=128)
    g = gpu("H100-SXM")
    per_block = 128 * 128 * 4096 // (16 * 8 * 16)
    B = e.occupancy.blocks_per_sm
    want = e.waves * B * per_block / g.tensor_rate("m16n8k16.row.col.f16.f16.f16.f16") \
        / g.clock_hz(wgmma=False)
    assert e.units["tensor"] == pytest.approx(want)


def test_a_bank_conflicted_kernel_is_blamed_on_shared_memory():
    """kernel1's unswizzled tiles: 8x the ideal shared-load wavefronts."""
    e = tcsim.trace("kernel1", 4096, 4096, 4096).explain("H100-SXM", registers=186)
    assert e.units["shared"] > e.units["tensor"]
    assert e.units["shared"] > 2 * e.units["l2"]


def test_the_cli_explains(capsys):
    from tcsim.cli import main

    assert main(["explain", "kernel2", "1024", "1024", "1024", "--registers", "195"]) == 0
    out = capsys.readouterr().out
    assert "predicted" in out and "limited by" in out and "occupancy" in out
    with pytest.raises(SystemExit):
        main(["explain", "kernel2", "1024", "1024", "1024", "--gpu", "nope"])


def test_a_wgmma_kernel_is_bound_by_its_warpgroup_instructions_at_the_gemm_clock():
    """kernel10 at 8192^3: 8192^3 / (64 * 256 * 16) warpgroup wgmma over 132 SMs, each at the
    measured wgmma rate, in 16 waves of 128 x 256 tiles, at the clock of a wgmma GEMM with
    every SM busy over the kernel's own duration (f32 accumulators draw more power)."""
    g = gpu("H100-SXM")
    per_tile = 128 * 256 * 8192 // (64 * 256 * 16)
    clocks = {}
    for acc in ("f16", "f32"):
        rate = g.tensor_rate(f"wgmma.mma_async.sync.aligned.m64n256k16.{acc}.f16.f16")
        e = tcsim.trace("kernel10", 8192, 8192, 8192, accumulate=acc).explain("H100-SXM")
        assert e.waves == 16 and e.occupancy.blocks_per_sm == 1
        clock = clocks[acc] = e.details["clock_hz"]
        assert clock == pytest.approx(g.clock_hz(True, acc, 132, e.seconds - e.launch),
                                      rel=1e-5)
        assert g[f"clock_ghz_wgmma_gemm_{acc}"] * 1e9 < clock \
            < g["clock_ghz_tensor_uncapped"] * 1e9
        assert e.units["tensor"] == pytest.approx(16 * per_tile / rate / clock)
        assert e.details["prefetch"] == 3  # the producer's stages but the one computed on
        assert e.details["busy_sms"] == 132
    assert clocks["f32"] < 0.98 * clocks["f16"]


def test_the_clock_model_gives_back_the_clocks_nsight_compute_measured():
    """gpus.json's capped clocks and time constant were derived from kernel10's mean clocks
    under Nsight Compute at two durations per accumulator type; the model gives them back."""
    g = gpu("H100-SXM")
    rows = json.loads((EVIDENCE / "explain_h100_2026-11-24.json").read_text())["rows"]
    seen = 0
    for row in rows:
        if row["kernel"] == "kernel10":
            ncu = row["ncu"]
            seconds = ncu["gpu__time_duration.sum"] * 1e-9
            assert g.clock_hz(True, row["accumulate"], 132, seconds) == pytest.approx(
                ncu["sm__cycles_elapsed.avg.per_second"], rel=0.003)
            seen += 1
    assert seen == 4


def test_fewer_busy_sms_and_shorter_kernels_run_at_a_higher_clock():
    """The power cap holds the busy SMs' power (about the clock cubed): fewer busy SMs run
    faster, never above the clock of a tensor load the cap does not hold; and the cap acts
    over tens of microseconds, so a short kernel runs faster than a long one."""
    g = gpu("H100-SXM")
    capped = g.clock_hz(True, "f16", 132)
    assert g.clock_hz(True, "f16", 128) == pytest.approx(capped * (132 / 128) ** (1 / 3))
    assert g.clock_hz(True, "f16", 32) == g.clock_hz(True, "f32", 32) \
        == pytest.approx(g["clock_ghz_tensor_uncapped"] * 1e9)
    assert g.clock_hz(False, "f16", 32) == g["clock_ghz"] * 1e9  # mma.sync: as before
    short, long = (g.clock_hz(True, "f32", 132, s) for s in (20e-6, 2e-3))
    assert capped > g.clock_hz(True, "f32", 132) and short > 1.08 * long > long > \
        g.clock_hz(True, "f32", 132)
    e = tcsim.trace("kernel10", 128, 8192, 8192).explain("H100-SXM")  # 32 tiles, 32 SMs
    assert e.details["busy_sms"] == 32 and e.details["clock_hz"] == g.clock_hz(True, "f16", 32)


def test_a_waves_d_tiles_go_through_l2_together():
    """TMA-fed blocks reach their epilogues together: each tile waits for the D tiles of all
    busy SMs at L2's rate, so 64-row tiles (half the D bytes a wave) wait half as long."""
    g = gpu("H100-SXM")
    for block_m in (128, 64):
        e = tcsim.trace("kernel10", 8192, 8192, 8192, block_m=block_m).explain("H100-SXM")
        d_bytes = 132 * block_m * 256 * 2
        assert e.details["epilogue_burst_cycles"] == pytest.approx(
            d_bytes / g["l2_bytes_per_s"] * e.details["clock_hz"])


def test_the_grouped_tile_order_reads_less_from_dram():
    """kernel8 walks tiles in groups of 16 block rows, kernel7 along N: at 8192^3 kernel8's
    waves share their panels of A and B, and the reuse model sends far fewer bytes to DRAM
    (Nsight Compute measured 1.40 against 4.17 GB read, docs/benchmarks.md)."""
    dram = {k: tcsim.trace(k, 8192, 8192, 8192).explain().details["dram_bytes"]
            for k in ("kernel7", "kernel8")}
    assert dram["kernel8"] < dram["kernel7"] / 1.5


def test_tma_copies_move_at_the_rate_measured_for_the_kernels_tile_order():
    """TMA's rate is measured for a GEMM's own copies with nothing computed, per tile order
    (bench_gpu_constants.py's tma_gemm_feed): groups of block rows (kernel8) are faster than
    along N (kernel7), because the L2 serves SMs that ask for the same lines together with fewer
    lookups (Nsight Compute: docs/evidence/ncu_tma_h100_2026-11-24.json). Each kernel's TMA
    bytes take the L2 time of its order's rate, and gpus.json holds the logged run's rates."""
    g = gpu("H100-SXM")
    run = json.loads((EVIDENCE / "gpu_constants_h100_2026-11-24_tma_feed.json").read_text())
    logged = {k: run["constants"][f"l2_tma_gemm_{k}_bytes_per_s"]["value"]
              for k in ("grouped", "rows")}
    assert g["l2_tma_grouped_bytes_per_s"] == logged["grouped"]
    assert g["l2_tma_rows_bytes_per_s"] == logged["rows"]
    lookups = {r["launch"]: r["l2_lookup_bytes_per_tma_byte"]
               for r in json.loads((EVIDENCE / "ncu_tma_h100_2026-11-24.json").read_text())}
    assert lookups["copies, groups of 16 rows"] < 0.7 and lookups["copies, along N"] > 0.9
    for name, rate in (("kernel8", logged["grouped"]), ("kernel7", logged["rows"])):
        t = tcsim.trace(name, 8192, 8192, 8192)
        sites = t.sites.values()
        tma = sum(s.sectors for s in sites if s.space in ("tma", "tma_store")) * 32
        other = sum(s.l2_sectors for s in sites if s.space in ("global", "async", "local")) * 32
        e = t.explain("H100-SXM")
        assert e.units["l2"] == pytest.approx(tma / rate + other / g["l2_bytes_per_s"])


def test_local_memory_that_overflows_l2_goes_to_dram():
    """tf32_puzzle keeps 4 KiB of accumulators per thread in local memory: thousands of resident
    threads hold far more than L2, so every local sector is DRAM traffic."""
    t = tcsim.trace("tf32_puzzle", 1024, 1024, 1024)
    assert t.pipeline["local_bytes_per_thread"] == 4096
    local = sum(s.sectors for s in t.sites.values() if s.space == "local") * 32
    e = t.explain("H100-SXM", registers=58)
    assert e.details["dram_bytes"] > local
    assert tcsim.trace("kernel6", 1024, 1024, 1024).pipeline["local_bytes_per_thread"] == 0


def test_the_trace_says_which_kernels_load_fragments_ahead():
    """kernel6 loads the next warp_k step's fragments before this step's mma; kernel4 does not,
    so all its fragment loads wait in its chain, and only the first step's wait in kernel6's."""
    assert tcsim.trace("kernel6", 512, 512, 512).pipeline["fragments_ahead"] == 1
    assert tcsim.trace("kernel4", 512, 512, 512).pipeline["fragments_ahead"] == 0


def test_a_hopper_kernel_on_an_older_gpu_is_refused():
    with pytest.raises(ValueError, match="kernel7 needs sm_90a; T4 is sm_75"):
        tcsim.trace("kernel7", 1024, 1024, 1024).explain("T4")


def test_a_wave_is_never_shorter_than_one_blocks_chain():
    """Fewer tiles than SMs: each busy SM still runs a whole block, chain and all."""
    for name, shape in (("kernel10", (512, 512, 8192)), ("kernel6", (256, 256, 16384))):
        e = tcsim.trace(name, *shape).explain("H100-SXM", registers=128)
        d = e.details
        L = d["chain_cycles"] * d["k_tiles"] + d["epilogue_cycles"]
        assert e.seconds >= L / d["clock_hz"] * (1 - 1e-9), name


def test_l1s_data_pipe_moves_one_wavefront_per_line_and_cached_loads_hit_in_l1():
    """Counted from the lane addresses alone: 32 lanes 4 bytes apart touch one 128-byte line
    (4 sectors), 256 bytes apart 32 lines, 16-byte lanes side by side 4 lines. A second
    identical cached load hits L1; ld.global.cg and stores always go on to L2."""
    from tcsim.trace import Counter

    lane = np.arange(32)
    c = Counter()
    for site, spelling, addresses in (("near", "ld.global.b32", lane * 4),
                                      ("far", "ld.global.b32", lane * 256 + 8),
                                      ("wide", "ld.global.v4.b32", lane * 16),
                                      ("bypass", "ld.global.cg.b32", lane * 4),
                                      ("store", "st.global.b32", lane * 4)):
        for _ in range(2):
            c._count_global(site, spelling, addresses.astype(np.int64))
    got = {n: (s.lines, s.sectors, s.l2_sectors) for n, s in c.sites.items()}
    assert got == {"near": (2, 8, 4), "far": (64, 64, 32), "wide": (8, 32, 16),
                   "bypass": (2, 8, 8), "store": (2, 8, 8)}


@pytest.mark.parametrize("case", json.loads(BREAKDOWN.read_text()),
                         ids=lambda c: f"{c['kernel']}-{c['accumulate']}")
def test_l1_wavefronts_and_hits_are_what_nsight_compute_counted_on_the_h100(case):
    """At 4096^3 (docs/evidence/ncu_breakdown_h100_2026-11-24.json): the trace's L1 data-pipe
    wavefronts (shared memory's but cp.async.cg's, plus one per line of each global request)
    within 7% of l1tex__data_pipe_lsu_wavefronts.sum (kernel6 is 6.7% short: ncu's shared-memory
    total has 1.7M wavefronts more than its load and store counts, which the trace equals), and
    its L1 hits of global loads within 1% of
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum."""
    params = {"accumulate": case["accumulate"]} if case["accumulate"] else {}
    t = tcsim.trace(case["kernel"], 4096, 4096, 4096, **params)
    sites = t.sites.values()
    wavefronts = sum(s.wavefronts for s in sites if s.space != "async") + \
        sum(s.lines for s in sites)
    hits = sum(s.sectors - s.l2_sectors for s in sites if s.space == "global")
    ncu = case["counters"]
    assert wavefronts == pytest.approx(ncu["l1tex__data_pipe_lsu_wavefronts.sum"], rel=0.07)
    assert hits == pytest.approx(
        ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum"], rel=0.01, abs=1)


def test_a_conflict_free_shared_limit_is_not_blamed_on_bank_conflicts():
    """kernel5's shared-memory wavefronts are the ideal (Nsight Compute: no conflicts on the
    H100, tests/hw/test_kernels_hw.py); its limit is their number, and the advice says so."""
    e = tcsim.trace("kernel5", 4096, 4096, 4096, accumulate="f16").explain("H100-SXM",
                                                                           registers=168)
    assert e.limiter == "shared"
    assert "no bank conflicts" in e.reason and "bank conflicts" not in e.advice


def test_a_wgmma_shape_without_a_measured_rate_is_refused_clearly():
    """A description without a measured m64n192k16 rate (gpus.json's H100 has one): kernel10
    with 192-column tiles issues it, and its rate is not assumed from another shape's."""
    from dataclasses import replace

    h100 = gpu("H100-SXM")
    without = replace(h100, tensor={k: v for k, v in h100.tensor.items() if "n192" not in k})
    t = tcsim.trace("kernel10", 1536, 1536, 1024, block_n=192, warp_n=192)
    t.explain(h100, registers=168)
    with pytest.raises(ValueError, match="no tensor rate for 'wgmma.m64n192k16"):
        t.explain(without, registers=168)
