"""The GPU's speed-of-light constants: clocks, tensor and memory rates, latencies, in one table.

    python benchmarks/bench_gpu_constants.py [--json OUT.json] [--runs 5] [--only NAME ...]
    python benchmarks/bench_gpu_constants.py --describe OUT.json   # into tcsim/perf/gpus.json

Every kernel is in benchmarks/cuda/microbench.cu (compiled through NVRTC by `tcsim.hw.runtime`).
Each block's thread 0 records its SM id and clock64 / globaltimer at the start and the end of
the timed region (both behind __syncthreads). A per-SM rate is the work every block on that SM
did, summed, over that SM's own cycles (its last end minus its first start), the median over
SMs. A whole-GPU rate is bytes or FLOPs over the median CUDA-event time of ``--runs`` launches
after warm-up launches. Loop counts are calibrated at run time so that each timed launch takes
the duration given below. Measurements:

- sm_clock_ghz: SMs x 4 blocks x 256 threads run 8 independent FFMA chains each for ~50 ms;
  the longest SM's clock64 span over the event time (and, as a check, clock64 over
  globaltimer per SM). sm_clock_ghz_tensor: the same ratio in the m16n8k16 f16->f32 run.
- mma_<shape>_<in>_<acc>_per_sm_per_cycle and _tflops: register-only mma.sync loops, 8
  independent accumulator chains per warp, 8 warps per block, SMs x 8 blocks, ~20 ms each.
  TFLOP/s = 2 m n k x mma count / event time.
- mma_latency_cycles_<shape>_f16_f32: one warp, one chain (each D is the next C), clock64 span
  over the number of mma instructions.
- smem_<variant>_instructions_per_sm_per_cycle and _wavefronts_per_sm_per_cycle: SMs x 4 blocks
  x 256 threads (32 warps per SM) issue 8 independent shared accesses per iteration, XORing the
  loaded values into a register; wavefronts per instruction come from `tcsim.memory.access`
  for the lane addresses the kernel uses (ld.shared.b32 lane*4: 1; ld.shared.v4.b32 and
  ldmatrix x4 lane*16: 4; ld.shared.b32 lane*32, an 8-way conflict: 8; st.shared.v4.b32: 4).
- shared_latency_cycles: one thread chases 8192 dependent ld.shared.u32 (clock64 / loads).
- l1_latency_cycles, l2_latency_cycles, dram_latency_cycles: one thread chases 64-bit pointers
  (clock64 / loads). L1: 64 nodes 128 B apart (8 KiB) in random order, plain ld.global (and
  ld.global.ca), one untimed lap first. L2: 32768 nodes 128 B apart (4 MiB) in random order,
  ld.global.cg (L1 bypassed), one untimed lap, one timed lap. DRAM: 32768 nodes, each on its own
  random 4 KiB page of a 2 GiB buffer (random 128 B line within it), one pass after writing
  256 MiB elsewhere to flush L2, so most steps also miss the TLBs; dram_latency_cycles_64mb is
  the same within 64 MiB (32 large pages), where the TLBs should hit.
- l2_read_bytes_per_s: SMs x 8 blocks x 256 threads read a 16 MiB buffer (L2-resident after
  warm-up launches) with 16-byte ld.global.cg, many passes per launch, ~5 ms.
- dram_read_bytes_per_s: the same kernel reading a 2 GiB buffer once per launch;
  dram_copy_bytes_per_s: 1 GiB copied with 16-byte loads and stores, read + written bytes.
  The _bytes_per_cycle forms divide by the SM clock measured in the same launch.
- l1_bytes_per_sm_per_cycle: SMs x 4 blocks x 256 threads each read the same 16 KiB with 16-byte
  plain ld.global loads, many times (L1 hits); global_load_sectors_per_sm_per_cycle is the same
  rate in 32-byte sectors; l1_bytes_per_sm_per_cycle_ld_ca uses ld.global.ca instead.
- wgmma_m64n<N>k16_<in>_<acc>_per_sm_per_cycle (N 256, 128, 64, 192; f16 in with f32 or f16
  accumulators, bf16 in with f32): benchmarks/cuda/wgmma_peak.cu with random f16 (or bf16) in
  its shared tile, SMs x 1 block of 2 warpgroups (the Hopper twins' consumers), warpgroup wgmma
  over clock64 spans, ~50 ms; sm_clock_ghz_wgmma_<acc>_2ms and _50ms: the clock under the
  m64n256k16 f16 load in launches of ~2 ms (one large GEMM) and ~50 ms, as for
  sm_clock_ghz_tensor. `--only wgmma_throughput` runs these alone (8 s on the H100);
  `--describe LOG --entries NAME ...` writes only the gpus.json entries named.
- wgmma_m64n<N>k16_f16_f32_box<W>_wg<G>_per_sm_per_cycle (N 96, 128, 192): the same loop with
  B in boxes of W = 64 columns (128-byte swizzle) or 32 (64-byte swizzle, the twins' tiles 96
  wide), 1 to 3 warpgroups a block: whether B's layout or the consumers' count changes the rate
  (evidence, not gpus.json).
- l2_tma_read_bytes_per_s (and per cycle, per SM per cycle): benchmarks/cuda/tma_bench.cu, SMs x 1
  block whose one thread keeps 6 stages x 4 boxes of 64 x 64 f16 (128-byte swizzle) in flight
  from an L2-resident 16 MiB matrix, ~5 ms; tma_latency_cycles: one block, one box at a time.
  l2_tma_read_bytes_per_s_share<n>: the same with groups of n SMs asking for the same boxes at
  about the same time, as a GEMM's wave does (measured: 12.0-12.2 TB/s against 8.1 alone).
  l2_tma_read_rows<B>_bytes_per_s_share<n> (B 128 or 64 bytes a box row, n 1 or 8): boxes of 64 x
  64 and 64 x 32 f16 with the same bytes in flight, whether L2 serves SMs asking together for rows
  shorter than a line faster (evidence, not gpus.json).
  tma_box<H>x<W>_inside<R>_sms<n>_cycles_per_box: one SM's cycles per H x W box with n SMs
  busy, each walking the one box row of an H x 2048 matrix whose tensor map holds only its first
  R rows: the boxes of a GEMM's last row tile, whose rows past M TMA fills with zeros
  (evidence, not gpus.json). tma_box128x64_inside64_sms<n>_beside<m>_cycles_per_box: such boxes
  on n SMs while m other SMs copy boxes inside another matrix (a second kernel on another
  stream; m = 0: the others idle).
- l2_tma_gemm_grouped_bytes_per_s and l2_tma_gemm_rows_bytes_per_s: TMA feeding a GEMM's tiles.
  kernel8's twin at 8192^3 with its wgmma taken out (benchmarks/cuda/explore.cuh's
  EXPLORE_NO_MMA and EXPLORE_NO_EPILOGUE): one persistent block per SM whose producer thread
  copies 128 x 64 A boxes and 64 x 256 B tiles into 4 stages of 48 KiB and whose consumers
  hand each stage back as soon as it lands; tiles in groups of 16 block rows (kernel8's order)
  or along N (GROUP_M 0, kernel7's). Requested bytes / median event time, each launch behind
  a spin kernel.

Each measurement is one function; one that fails prints its error and the others still run (the
JSON's "errors" maps the function's name to the message). Needs CuPy and a GPU; the whole run
takes well under two minutes on an H100.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial

import bench_cuda  # this folder's
import numpy as np

SOURCE = "microbench.cu"
RECORD = 5  # u64 per block: smid, clock64 start, clock64 end, globaltimer start, end
THREADS = 256
MMA_CHAINS = 8  # MMA_CHAINS in microbench.cu
SMEM_U = 8  # SMEM_U in microbench.cu
CHASE_UNROLL = 8  # CHASE_UNROLL in microbench.cu
L1_BUFFER_BYTES = 16 * 1024  # 4 rows x 256 threads x 16 bytes (L1_ROW_WORDS in microbench.cu)
SECTOR_BYTES = 32
MiB = 1 << 20
GiB = 1 << 30

Entry = dict[str, object]
Constants = dict[str, Entry]


@dataclass
class Context:
    """What every measurement needs: the SM count, the timing policy and a sink buffer."""

    sms: int
    runs: int = 5
    warmup: int = 2
    sink: object = None


def entry(value: float, unit: str, method: str) -> Entry:
    """One constant; a value that is not finite is recorded as None (JSON null)."""
    value = float(value)
    return {"value": value if np.isfinite(value) else None, "unit": unit, "method": method}


# --- launching and timing ---------------------------------------------------------------------


def kernel(name: str):

    return bench_cuda.function(SOURCE, name)


def records(blocks: int):
    import cupy

    return cupy.zeros((blocks, RECORD), cupy.uint64)


def median_seconds(launch: Callable[[], None], runs: int, warmup: int) -> float:
    """Median CUDA-event time of ``runs`` launches after ``warmup`` untimed ones."""
    import cupy

    for _ in range(warmup):
        launch()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(runs):
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return statistics.median(times)


def calibrate(make: Callable[[int], Callable[[], None]], count: int, target_s: float,
              multiple: int = 8, limit: int = 2**30) -> int:
    """A loop count that makes one launch of ``make(count)`` take about ``target_s``."""
    make(count)()  # compiles and warms
    while True:
        seconds = median_seconds(make(count), runs=1, warmup=0)
        if seconds >= target_s / 10 or count >= limit:
            break
        count = min(limit, count * 10)
    scaled = int(count * target_s / max(seconds, 1e-7))
    return int(min(limit, max(multiple, scaled // multiple * multiple)))


@dataclass
class PerSM:
    """Block records grouped by SM: per-SM work over per-SM cycles."""

    rate: float  # median over SMs of work / cycles
    max_cycles: int  # the longest SM span
    sms: int  # SMs that ran at least one block
    clock_ghz: float  # median over SMs of cycles / globaltimer ns


def per_sm(rec, work_per_block: float) -> PerSM:
    r = np.asarray(rec.get() if hasattr(rec, "get") else rec).astype(np.int64)
    sm, c0, c1, g0, g1 = r.T
    rates, spans, clocks = [], [], []
    for s in np.unique(sm):
        on = sm == s
        cycles = int(c1[on].max() - c0[on].min())
        ns = int(g1[on].max() - g0[on].min())
        rates.append(work_per_block * int(on.sum()) / max(cycles, 1))
        spans.append(cycles)
        clocks.append(cycles / ns if ns > 0 else float("nan"))
    return PerSM(float(np.median(rates)), int(max(spans)), len(spans),
                 float(np.median(clocks)))


def coverage(ctx: Context, stats: PerSM) -> str:
    return "" if stats.sms == ctx.sms else f" (blocks ran on only {stats.sms} of {ctx.sms} SMs)"


def launcher(fn, grid: int, block: int, args: tuple) -> Callable[[], None]:
    def launch() -> None:
        fn((grid,), (block,), args)

    return launch


# --- a. SM clock ------------------------------------------------------------------------------


def sm_clock(ctx: Context) -> Constants:
    """SM clock under an FFMA load of ~50 ms."""
    fn = kernel("clock_ffma")
    blocks = ctx.sms * 4
    rec = records(blocks)

    def make(iters: int) -> Callable[[], None]:
        return launcher(fn, blocks, THREADS, (rec, ctx.sink, np.int32(iters), np.float32(0.999),
                                              np.float32(1e-3)))

    iters = calibrate(make, 1024, 0.05, limit=2**31 - 8)
    seconds = median_seconds(make(iters), ctx.runs, ctx.warmup)
    stats = per_sm(rec, 1.0)
    how = (f"clock_ffma, {blocks} blocks x {THREADS} threads, 8 FFMA chains, {iters} iterations"
           f" ({seconds * 1e3:.1f} ms)" + coverage(ctx, stats))
    return {
        "sm_clock_ghz": entry(stats.max_cycles / seconds / 1e9, "GHz",
                              f"longest SM's clock64 span / median event time; {how}"),
        "sm_clock_ghz_globaltimer": entry(stats.clock_ghz, "GHz",
                                          f"median over SMs of clock64 / globaltimer; {how}"),
    }


# --- b. tensor throughput ---------------------------------------------------------------------

MMA_VARIANTS = (  # (kernel suffix, m, n, k)
    ("m16n8k16_f16_f32", 16, 8, 16),
    ("m16n8k16_f16_f16", 16, 8, 16),
    ("m16n8k8_f16_f32", 16, 8, 8),
    ("m16n8k8_f16_f16", 16, 8, 8),
    ("m16n8k8_tf32_f32", 16, 8, 8),
    ("m16n8k16_bf16_f32", 16, 8, 16),
)


def tensor_throughput(ctx: Context) -> Constants:
    """mma.sync instructions per SM per cycle and TFLOP/s, ~20 ms per variant."""
    blocks, warps = ctx.sms * 8, THREADS // 32
    rec = records(blocks)
    out: Constants = {}
    clocks = {}
    for name, m, n, k in MMA_VARIANTS:
        fn = kernel(f"mma_tput_{name}")

        def make(iters: int, fn=fn) -> Callable[[], None]:
            return launcher(fn, blocks, THREADS, (rec, ctx.sink, np.int32(iters)))

        iters = calibrate(make, 256, 0.02)
        seconds = median_seconds(make(iters), ctx.runs, ctx.warmup)
        per_block = warps * iters * MMA_CHAINS
        stats = per_sm(rec, per_block)
        mmas = blocks * per_block
        clocks[name] = stats.max_cycles / seconds / 1e9
        how = (f"mma_tput_{name}: {blocks} blocks x {warps} warps x {MMA_CHAINS} chains x {iters}"
               f" iterations ({seconds * 1e3:.1f} ms)" + coverage(ctx, stats))
        out[f"mma_{name}_per_sm_per_cycle"] = entry(
            stats.rate, "mma/SM/cycle", f"median over SMs of mma count / clock64 span; {how}")
        out[f"mma_{name}_tflops"] = entry(
            mmas * 2 * m * n * k / seconds / 1e12, "TFLOP/s",
            f"2*{m}*{n}*{k} FLOP x mma count / median event time; {how}")
    lowest = min(clocks, key=clocks.get)
    out["sm_clock_ghz_tensor"] = entry(
        clocks["m16n8k16_f16_f32"], "GHz",
        "longest SM's clock64 span / median event time in the mma_tput_m16n8k16_f16_f32 run; "
        f"lowest over the variants: {clocks[lowest]:.3f} GHz ({lowest})")
    return out


# --- c. mma latency ---------------------------------------------------------------------------


def mma_latency(ctx: Context) -> Constants:
    """Dependent mma.sync chain on one warp: cycles per instruction."""
    out: Constants = {}
    iters = 2048  # x 8 unrolled = 16384 dependent mma
    rec = records(1)
    for name in ("m16n8k16_f16_f32", "m16n8k8_f16_f32"):
        fn = kernel(f"mma_lat_{name}")
        median_seconds(launcher(fn, 1, 32, (rec, ctx.sink, np.int32(iters))), ctx.runs,
                       ctx.warmup)
        count = iters * 8
        cycles = per_sm(rec, 1.0).max_cycles
        out[f"mma_latency_cycles_{name}"] = entry(
            cycles / count, "cycles",
            f"mma_lat_{name}: 1 warp, {count} mma, each D the next C; clock64 span / count "
            "(includes what ptxas pads between dependent HMMAs)")
    return out


# --- d. shared-memory throughput --------------------------------------------------------------

SMEM_VARIANTS = (  # (kernel, PTX instruction, a lane's byte offset)
    ("smem_ld32", "ld.shared.b32", 4),
    ("smem_ld128", "ld.shared.v4.b32", 16),
    ("smem_ldsm_x4", "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 16),
    ("smem_ld32_conflict8", "ld.shared.b32", 32),
    ("smem_st128", "st.shared.v4.b32", 16),
)


def wavefronts_per_instruction(instruction: str, lane_bytes: int) -> int:
    from tcsim.memory import access

    return int(access(instruction, [lane * lane_bytes for lane in range(32)]).wavefronts)


def shared_throughput(ctx: Context) -> Constants:
    """Shared-memory instructions and wavefronts per SM per cycle, ~10 ms per variant."""
    blocks, warps = ctx.sms * 4, THREADS // 32
    rec = records(blocks)
    out: Constants = {}
    best = (0.0, "")
    for name, instruction, lane_bytes in SMEM_VARIANTS:
        fn = kernel(name)

        def make(iters: int, fn=fn) -> Callable[[], None]:
            return launcher(fn, blocks, THREADS, (rec, ctx.sink, np.int32(iters)))

        iters = calibrate(make, 256, 0.01)
        median_seconds(make(iters), ctx.runs, ctx.warmup)
        stats = per_sm(rec, warps * iters * SMEM_U)
        wavefronts = wavefronts_per_instruction(instruction, lane_bytes)
        short = name.removeprefix("smem_")
        how = (f"{name}: {instruction}, lane l at {lane_bytes}*l ({wavefronts} wavefronts each, "
               f"tcsim.memory.access), {blocks} blocks x {warps} warps x {iters} iterations x "
               f"{SMEM_U}" + coverage(ctx, stats))
        out[f"smem_{short}_instructions_per_sm_per_cycle"] = entry(
            stats.rate, "instructions/SM/cycle",
            f"median over SMs of warp instructions / clock64 span; {how}")
        out[f"smem_{short}_wavefronts_per_sm_per_cycle"] = entry(
            stats.rate * wavefronts, "wavefronts/SM/cycle",
            f"instructions/SM/cycle x {wavefronts}; {how}")
        if instruction.startswith(("ld", "ldmatrix")) and stats.rate * wavefronts > best[0]:
            best = (stats.rate * wavefronts, name)
    out["shared_wavefronts_per_sm_per_cycle"] = entry(
        best[0], "wavefronts/SM/cycle",
        f"the highest over the load variants ({best[1]}); one wavefront moves up to 128 bytes")
    return out


# --- e. shared-memory latency -----------------------------------------------------------------


def shared_latency(ctx: Context) -> Constants:
    """One thread's dependent ld.shared.u32 chain: cycles per load."""
    fn = kernel("smem_chase")
    rec = records(1)
    iters = 1024
    median_seconds(launcher(fn, 1, 32, (rec, ctx.sink, np.int32(iters))), ctx.runs, ctx.warmup)
    count = iters * CHASE_UNROLL
    cycles = per_sm(rec, 1.0).max_cycles
    return {"shared_latency_cycles": entry(
        cycles / count, "cycles",
        f"smem_chase: 1 thread, {count} dependent ld.shared.u32 over 4 KiB; clock64 span / count")}


# --- f. global-memory latency -----------------------------------------------------------------


def lay_chase(buf, offsets: np.ndarray) -> int:
    """Write a pointer cycle into ``buf`` (a cupy uint64 array) through the byte ``offsets``
    in visiting order; returns the address of the first node."""
    import cupy

    base = np.uint64(buf.data.ptr)
    offsets = offsets.astype(np.uint64)
    following = np.roll(offsets, -1)
    buf[cupy.asarray((offsets // np.uint64(8)).astype(np.int64))] = cupy.asarray(base + following)
    return int(base + offsets[0])


def chase_cycles(ctx: Context, name: str, start: int, warm: int, steps: int,
                 before: Callable[[], None] | None = None, repeats: int = 3) -> tuple[float, float]:
    """(cycles, ns) per load of one chase: the median of ``repeats`` launches, each after
    ``before`` (if given) and a warm-up launch when there is no ``before``."""
    import cupy

    fn = kernel(name)
    rec = records(1)
    args = (rec, ctx.sink, np.uint64(start), np.int32(warm), np.int32(steps // CHASE_UNROLL))
    if before is None:
        fn((1,), (32,), args)
    cycles, ns = [], []
    for _ in range(repeats):
        if before is not None:
            before()
        fn((1,), (32,), args)
        cupy.cuda.Device().synchronize()
        r = rec.get().astype(np.int64)[0]
        cycles.append((r[2] - r[1]) / steps)
        ns.append((r[4] - r[3]) / steps)
    return float(np.median(cycles)), float(np.median(ns))


def global_latency(ctx: Context) -> Constants:
    """Pointer chases through L1, L2 and DRAM: cycles per dependent load."""
    rng = np.random.default_rng(1)
    return {**cache_latency(ctx, rng), **dram_latency(ctx, rng)}


def cache_latency(ctx: Context, rng: np.random.Generator) -> Constants:
    """L1 hits (plain ld.global and .ca) and L2 hits (.cg) of a one-thread chase."""
    import cupy

    out: Constants = {}
    small = cupy.zeros(8 * 1024 // 8, cupy.uint64)
    nodes = 64
    start = lay_chase(small, rng.permutation(nodes) * 128)
    for name, key, spelling in (("global_chase", "l1_latency_cycles", "ld.global.u64"),
                                ("global_chase_ca", "l1_latency_cycles_ld_ca", "ld.global.ca.u64")):
        cycles, _ = chase_cycles(ctx, name, start, warm=nodes, steps=8192)
        out[key] = entry(cycles, "cycles",
                         f"{name}: 1 thread, {spelling}, 64 nodes 128 B apart in 8 KiB, random "
                         "order, 1 untimed lap then 8192 timed loads; clock64 / loads")

    l2 = cupy.zeros(4 * MiB // 8, cupy.uint64)
    nodes = 4 * MiB // 128
    start = lay_chase(l2, rng.permutation(nodes) * 128)
    cycles, ns = chase_cycles(ctx, "global_chase_cg", start, warm=nodes, steps=nodes)
    out["l2_latency_cycles"] = entry(
        cycles, "cycles",
        f"global_chase_cg: 1 thread, ld.global.cg.u64 (L1 bypassed), {nodes} nodes 128 B apart in "
        f"4 MiB, random order, 1 untimed lap then 1 timed lap; clock64 / loads ({ns:.0f} ns)")
    return out


def dram_latency(ctx: Context, rng: np.random.Generator) -> Constants:
    """DRAM: one pass over nodes that are all cold (an L2 flush before each launch)."""
    import cupy

    out: Constants = {}
    flush = cupy.zeros(256 * MiB // 4, cupy.uint32)
    flush_l2 = partial(cupy.add, flush, 1, out=flush)  # reads and writes 256 MiB > 50 MB L2
    nodes = 32768

    big = cupy.zeros(2 * GiB // 8, cupy.uint64)
    pages = rng.choice(2 * GiB // 4096, nodes, replace=False)
    start = lay_chase(big, pages * 4096 + rng.integers(0, 32, nodes) * 128)
    cycles, ns = chase_cycles(ctx, "global_chase_cg", start, warm=0, steps=nodes, before=flush_l2)
    out["dram_latency_cycles"] = entry(
        cycles, "cycles",
        f"global_chase_cg: 1 thread, {nodes} nodes on distinct random 4 KiB pages of a 2 GiB "
        "buffer (random 128 B line in each), one pass after a 256 MiB L2 flush, median of 3; "
        "most steps also miss the TLBs; clock64 / loads")
    out["dram_latency_ns"] = entry(ns, "ns", "the same chase, globaltimer / loads")
    del big
    cupy.get_default_memory_pool().free_all_blocks()

    local = cupy.zeros(64 * MiB // 8, cupy.uint64)
    lines = rng.choice(64 * MiB // 128, nodes, replace=False)
    start = lay_chase(local, lines * 128)
    cycles, ns = chase_cycles(ctx, "global_chase_cg", start, warm=0, steps=nodes,
                              before=flush_l2)
    out["dram_latency_cycles_64mb"] = entry(
        cycles, "cycles",
        f"global_chase_cg: 1 thread, {nodes} distinct random 128 B lines of a 64 MiB buffer, one "
        f"pass after a 256 MiB L2 flush, median of 3; TLB reach should cover it ({ns:.0f} ns)")
    return out


# --- g. bandwidths ----------------------------------------------------------------------------


def read_bandwidth(ctx: Context, buf, passes: int, rec) -> tuple[float, PerSM]:
    """(median seconds, per-SM stats) of global_read_cg over all of ``buf``."""
    fn = kernel("global_read_cg")
    nvec = buf.nbytes // 16
    launch = launcher(fn, ctx.sms * 8, THREADS,
                      (rec, ctx.sink, buf, np.uint64(nvec), np.int32(passes)))
    seconds = median_seconds(launch, ctx.runs, ctx.warmup)
    return seconds, per_sm(rec, 0.0)


def bandwidth_entries(ctx: Context, key: str, total: float, seconds: float, stats: PerSM,
                      how: str) -> Constants:
    how = how + f" ({seconds * 1e3:.2f} ms)" + coverage(ctx, stats)
    return {
        f"{key}_bytes_per_s": entry(total / seconds, "B/s", f"bytes / median event time; {how}"),
        f"{key}_bytes_per_cycle": entry(
            total / stats.max_cycles, "B/cycle",
            f"whole GPU: bytes / the longest SM's clock64 span in that launch; {how}"),
    }


def l2_bandwidth(ctx: Context) -> Constants:
    """16 MiB read repeatedly from L2 by every SM, ~5 ms per launch."""
    import cupy

    buf = cupy.zeros(16 * MiB // 4, cupy.uint32)
    rec = records(ctx.sms * 8)
    fn = kernel("global_read_cg")

    def make(passes: int) -> Callable[[], None]:
        return launcher(fn, ctx.sms * 8, THREADS,
                        (rec, ctx.sink, buf, np.uint64(buf.nbytes // 16), np.int32(passes)))

    passes = calibrate(make, 16, 0.005, multiple=1, limit=2**31 - 1)
    seconds, stats = read_bandwidth(ctx, buf, passes, rec)
    total = passes * buf.nbytes
    out = bandwidth_entries(
        ctx, "l2_read", total, seconds, stats,
        f"global_read_cg: {ctx.sms * 8} blocks x {THREADS} threads, 16-byte ld.global.cg, "
        f"16 MiB x {passes} passes per launch")
    out["l2_read_bytes_per_sm_per_cycle"] = entry(
        out["l2_read_bytes_per_cycle"]["value"] / ctx.sms, "B/SM/cycle",
        "l2_read_bytes_per_cycle / SM count")
    return out


def dram_bandwidth(ctx: Context) -> Constants:
    """A 2 GiB buffer read once per launch; 1 GiB copied once per launch."""
    import cupy

    out: Constants = {}
    big = cupy.zeros(2 * GiB // 4, cupy.uint32)
    rec = records(ctx.sms * 8)
    seconds, stats = read_bandwidth(ctx, big, 1, rec)
    out.update(bandwidth_entries(
        ctx, "dram_read", big.nbytes, seconds, stats,
        f"global_read_cg: {ctx.sms * 8} blocks x {THREADS} threads, 16-byte ld.global.cg, "
        "2 GiB read once per launch"))
    src, dst = big[: GiB // 4], big[GiB // 4:]
    fn = kernel("global_copy")
    launch = launcher(fn, ctx.sms * 8, THREADS, (rec, src, dst, np.uint64(src.nbytes // 16)))
    seconds = median_seconds(launch, ctx.runs, ctx.warmup)
    stats = per_sm(rec, 0.0)
    out.update(bandwidth_entries(
        ctx, "dram_copy", 2 * src.nbytes, seconds, stats,
        f"global_copy: {ctx.sms * 8} blocks x {THREADS} threads, 16-byte ld.global.cg + "
        "st.global, 1 GiB copied per launch, read + written bytes counted"))
    del big, src, dst
    cupy.get_default_memory_pool().free_all_blocks()
    return out


def l1_bandwidth(ctx: Context) -> Constants:
    """Every block rereads the same 16 KiB: L1-hit bytes and sectors per SM per cycle."""
    import cupy

    buf = cupy.zeros(L1_BUFFER_BYTES // 4, cupy.uint32)
    blocks = ctx.sms * 4
    rec = records(blocks)
    out: Constants = {}
    for name, key, spelling in (("l1_read", "l1_bytes_per_sm_per_cycle", "ld.global.v4.u32"),
                                ("l1_read_ca", "l1_bytes_per_sm_per_cycle_ld_ca",
                                 "ld.global.ca.v4.u32")):
        fn = kernel(name)

        def make(iters: int, fn=fn) -> Callable[[], None]:
            return launcher(fn, blocks, THREADS, (rec, ctx.sink, buf, np.int32(iters)))

        iters = calibrate(make, 256, 0.01)
        median_seconds(make(iters), ctx.runs, ctx.warmup)
        stats = per_sm(rec, iters * L1_BUFFER_BYTES)
        out[key] = entry(
            stats.rate, "B/SM/cycle",
            f"{name}: {blocks} blocks x {THREADS} threads, 16-byte {spelling}, each block reads "
            f"the same 16 KiB {iters} times; median over SMs of bytes / clock64 span"
            + coverage(ctx, stats))
    out["global_load_sectors_per_sm_per_cycle"] = entry(
        out["l1_bytes_per_sm_per_cycle"]["value"] / SECTOR_BYTES, "sectors/SM/cycle",
        "l1_bytes_per_sm_per_cycle / 32 bytes per sector (L1 hits, 16-byte loads)")
    return out


# --- h. Hopper: wgmma and TMA (sm_90a) --------------------------------------------------------

WGMMA_SHARED = 40 * 1024  # wgmma_peak.cu's one stage
WGMMA_WARPGROUPS = 2  # the Hopper twins' consumers


WGMMA_N = (256, 128, 64, 192, 96)  # the N a Hopper twin's consumer may own (hopper.cuh's BN)
# wgmma_peak.cu's kernels: (its suffix, this run's key part: inputs_accumulator)
WGMMA_KINDS = (("f32", "f16_f32"), ("f16", "f16_f16"), ("bf16", "bf16_f32"))


def wgmma_throughput(ctx: Context) -> Constants:
    """wgmma m64nNk16 per SM per cycle for each N of `WGMMA_N` (2 warpgroups per SM, random f16
    or bf16 in shared memory), f16 in with f32 and f16 accumulators and bf16 in with f32; and,
    for m64n256k16 with f16 in, the clock the GPU holds under that load: in launches of ~2 ms
    (one large GEMM) and ~50 ms."""
    import cupy

    blocks = ctx.sms
    rec = records(blocks)
    out: Constants = {}
    for n in WGMMA_N:
        for suffix, kind in WGMMA_KINDS:
            fn = bench_cuda.function("wgmma_peak.cu", f"wgmma_peak_{suffix}", {"PEAK_N": n},
                                     WGMMA_SHARED, "sm_90a")
            sink = cupy.zeros(1, cupy.uint32)

            def make(iters: int, fn=fn, sink=sink) -> Callable[[], None]:
                def launch() -> None:
                    fn((blocks,), (128 * WGMMA_WARPGROUPS,),
                       (sink, np.int32(iters), np.int32(1), rec), shared_mem=WGMMA_SHARED)
                return launch

            clocks = n == 256 and suffix != "bf16"  # the clock entries gpus.json reads
            for target, label in ((0.002, "2ms"), (0.05, "50ms"))[0 if clocks else 1:]:
                iters = calibrate(make, 64, target)
                seconds = median_seconds(make(iters), ctx.runs, ctx.warmup)
                per_block = WGMMA_WARPGROUPS * iters * 4
                stats = per_sm(rec, per_block)
                how = (f"wgmma_peak_{suffix} (PEAK_N {n}): {blocks} blocks x "
                       f"{WGMMA_WARPGROUPS} warpgroups x {iters} iterations x 4 wgmma, random "
                       f"{'bf16' if suffix == 'bf16' else 'f16'} ({seconds * 1e3:.1f} ms)"
                       + coverage(ctx, stats))
                if label == "50ms":
                    out[f"wgmma_m64n{n}k16_{kind}_per_sm_per_cycle"] = entry(
                        stats.rate, "wgmma/SM/cycle",
                        f"median over SMs of warpgroup wgmma / clock64 span; {how}")
                if clocks:
                    out[f"sm_clock_ghz_wgmma_{suffix}_{label}"] = entry(
                        stats.max_cycles / seconds / 1e9, "GHz",
                        f"longest SM's clock64 span / median event time; {how}")
    return out


WGMMA_LAYOUT_N = (96, 128, 192)
WGMMA_B_BOXES = (64, 32)  # B's box columns: the 128-byte swizzle, the 64-byte one


def wgmma_b_layouts(ctx: Context) -> Constants:
    """wgmma m64nNk16 (f16 in, f32 accumulators) per SM per cycle with B in boxes of 64 or 32
    columns and 1, 2 or 3 warpgroups a block (wgmma_peak.cu's PEAK_B_BOX; 128 threads a
    warpgroup), ~20 ms each."""
    import cupy

    blocks = ctx.sms
    rec = records(blocks)
    out: Constants = {}
    for n in WGMMA_LAYOUT_N:
        for box in WGMMA_B_BOXES:
            fn = bench_cuda.function("wgmma_peak.cu", "wgmma_peak_f32",
                                     {"PEAK_N": n, "PEAK_B_BOX": box, "PEAK_THREADS": 384},
                                     WGMMA_SHARED, "sm_90a")
            sink = cupy.zeros(1, cupy.uint32)
            for groups in (1, 2, 3):
                def make(iters: int, fn=fn, sink=sink, groups=groups) -> Callable[[], None]:
                    def launch() -> None:
                        fn((blocks,), (128 * groups,), (sink, np.int32(iters), np.int32(1), rec),
                           shared_mem=WGMMA_SHARED)
                    return launch

                iters = calibrate(make, 64, 0.02)
                seconds = median_seconds(make(iters), ctx.runs, ctx.warmup)
                stats = per_sm(rec, groups * iters * 4)
                out[f"wgmma_m64n{n}k16_f16_f32_box{box}_wg{groups}_per_sm_per_cycle"] = entry(
                    stats.rate, "wgmma/SM/cycle",
                    f"median over SMs of warpgroup wgmma / clock64 span; wgmma_peak_f32 (PEAK_N "
                    f"{n}, PEAK_B_BOX {box}): {blocks} blocks x {groups} warpgroups x {iters} "
                    f"iterations x 4 wgmma, random f16 ({seconds * 1e3:.1f} ms)"
                    + coverage(ctx, stats))
    return out


TMA_MATRIX = (4096, 2048)  # f16 rows x columns: 16 MiB, L2-resident after warm-up
TMA_BOX_BYTES = 64 * 128
TMA_RING = (6, 4)  # stages x boxes of 8 KiB: 192 KiB in flight per SM


def tma_reader(rows: int = TMA_MATRIX[0], cols: int = TMA_MATRIX[1], height: int = 64,
               width: int = 64, valid: tuple[int, int] | None = None):
    """tma_bench.cu over a rows x cols f16 matrix in boxes of ``height`` x ``width`` (64
    columns under the 128-byte swizzle, 32 under the 64-byte one): make(blocks, stages, boxes,
    share, rec) gives make(iterations) for `calibrate`, each launch with the shared memory its
    ring needs (at most TMA_RING's 192 KiB). With ``valid`` (rows, columns), the tensor map
    holds only that much of the matrix: the boxes' rows and columns past it are out of bounds,
    which TMA fills with zeros."""
    import cupy

    from tcsim.hw.launch import Launch, launcher
    from tcsim.hw.memory import tma
    from tcsim.memory.tma import TensorMap

    matrix = cupy.zeros(rows * cols, cupy.uint16)
    map_rows, map_cols = valid or (rows, cols)
    encoded = tma.encode(TensorMap(map_rows, map_cols, 2, height, width,
                                   {64: "128B", 32: "64B"}[width]), matrix.data.ptr)

    def make(blocks: int, s: int, b: int, share: int, rec) -> Callable[[int], Callable[[], None]]:
        shared = s * b * height * width * 2 + 1024

        def at(iters: int, matrix=matrix) -> Callable[[], None]:  # the map's memory lives on
            return launcher(Launch(bench_cuda.source("tma_bench.cu"), "tma_read", (blocks,),
                                   (32,), [encoded, iters, s, b, height, rows // height,
                                           cols // width, share, width, rec],
                                   shared_bytes=shared, arch="sm_90a",
                                   include=(str(bench_cuda.CUDA),)))
        return at

    return make


def _tma_rate(ctx: Context, make, share: int) -> tuple[float, PerSM, str, int]:
    """Seconds per launch, per-SM stats, a description and the bytes read of a whole-GPU TMA
    read with ``share`` SMs asking for the same boxes."""
    stages, boxes = TMA_RING
    rec = records(ctx.sms)
    at = make(ctx.sms, stages, boxes, share, rec)
    iters = calibrate(at, 64, 0.005)
    seconds = median_seconds(at(iters), ctx.runs, ctx.warmup)
    stats = per_sm(rec, iters * boxes * TMA_BOX_BYTES)
    how = (f"tma_read: {ctx.sms} blocks in groups of {share} reading the same boxes, one thread "
           f"each keeping {stages} x {boxes} boxes of 64 x 64 f16 (128-byte swizzle) in flight, "
           f"{iters} stages a block, of a 16 MiB matrix ({seconds * 1e3:.2f} ms)"
           + coverage(ctx, stats))
    return seconds, stats, how, ctx.sms * iters * boxes * TMA_BOX_BYTES


def tma_read(ctx: Context) -> Constants:
    """TMA copies from L2 to shared memory: the whole GPU's bytes per second with 192 KiB in
    flight per SM, each SM reading its own boxes, and one copy's latency."""
    make = tma_reader()
    seconds, stats, how, total = _tma_rate(ctx, make, 1)
    out = bandwidth_entries(ctx, "l2_tma_read", total, seconds, stats, how)
    out["l2_tma_read_bytes_per_sm_per_cycle"] = entry(
        stats.rate, "B/SM/cycle", f"median over SMs of bytes / clock64 span; {how}")
    rec = records(1)
    iters = 4096
    median_seconds(make(1, 1, 1, 1, rec)(iters), ctx.runs, ctx.warmup)
    out["tma_latency_cycles"] = entry(
        per_sm(rec, 1.0).max_cycles / iters, "cycles",
        f"tma_read: 1 block, one 8 KiB box at a time, each waited for on its mbarrier "
        f"before the next is asked for, {iters} copies; clock64 span / copies")
    return out


TMA_SHARING = (2, 4, 8, 16, 33, 66, 132)


def tma_sharing(ctx: Context) -> Constants:
    """TMA's read rate from L2 when groups of SMs ask for the same boxes at about the same time,
    as the blocks of a GEMM's wave ask for the same A and B tiles."""
    make = tma_reader()
    out: Constants = {}
    for share in TMA_SHARING:
        seconds, stats, how, total = _tma_rate(ctx, make, share)
        out[f"l2_tma_read_bytes_per_s_share{share}"] = entry(
            total / seconds, "bytes/s", f"requested bytes / median event time; {how}")
    return out


def tma_short_rows(ctx: Context) -> Constants:
    """TMA's read rate from L2 for box rows of 128 bytes (64 x 64 f16, 128-byte swizzle) and of
    64 (64 x 32 f16, 64-byte swizzle, as the Hopper twins' B in tiles 96 wide), each SM alone
    and in groups of 8 asking for the same boxes, with the same 192 KiB in flight per SM."""
    out: Constants = {}
    stages, boxes = TMA_RING
    for width in (64, 32):
        make = tma_reader(width=width)
        ring = boxes * 64 // width  # the same bytes in flight
        for share in (1, 8):
            rec = records(ctx.sms)
            at = make(ctx.sms, stages, ring, share, rec)
            iters = calibrate(at, 64, 0.005)
            seconds = median_seconds(at(iters), ctx.runs, ctx.warmup)
            total = ctx.sms * iters * ring * 64 * width * 2
            out[f"l2_tma_read_rows{2 * width}_bytes_per_s_share{share}"] = entry(
                total / seconds, "bytes/s",
                f"tma_read: {ctx.sms} blocks in groups of {share} reading the same boxes, one "
                f"thread each keeping {stages} x {ring} boxes of 64 x {width} f16 in flight, "
                f"{iters} stages a block, of a 16 MiB matrix ({seconds * 1e3:.2f} ms); "
                "requested bytes / median event time")
    return out


# (box height, box width, rows of each box inside the matrix), stages x boxes
TMA_EDGE_BOXES = (((192, 64, 192), (4, 2)), ((192, 64, 128), (4, 2)), ((192, 64, 64), (4, 2)),
                  ((128, 64, 128), (6, 2)), ((128, 64, 64), (6, 2)))


def tma_edge_rows(ctx: Context) -> Constants:
    """TMA's time per box for boxes hanging past the matrix's last row, whose rows past it TMA
    fills with zeros (a GEMM's last row tile when M is not a multiple of the tile's rows),
    against boxes inside it: on one SM, a third, two thirds and all of the SMs, each reading its
    own boxes."""
    out: Constants = {}
    clocks = []
    for (height, width, rows), (stages, boxes) in TMA_EDGE_BOXES:
        make = tma_reader(height, 2048, height, width, valid=(rows, 2048))
        for blocks in sorted({1, ctx.sms // 3, 2 * ctx.sms // 3, ctx.sms}):
            rec = records(blocks)
            at = make(blocks, stages, boxes, 1, rec)
            iters = calibrate(at, 64, 0.005)
            median_seconds(at(iters), ctx.runs, ctx.warmup)
            stats = per_sm(rec, iters * boxes)
            out[f"tma_box{height}x{width}_inside{rows}_sms{blocks}_cycles_per_box"] = entry(
                1 / stats.rate, "cycles",
                f"tma_read: {blocks} block(s), one thread each keeping {stages} x {boxes} boxes "
                f"of {height} x {width} f16 in flight, {iters} stages a block, walking the one "
                f"box row of a {height} x 2048 matrix whose tensor map holds its first {rows} "
                "rows; median over SMs of clock64 span / boxes")
            clocks.append(stats.clock_ghz)
    out["tma_edge_rows_sm_clock_ghz"] = entry(
        float(np.median(clocks)), "GHz", "tma_edge_rows: the median over its launches of the SMs' "
        "median clock64 span / globaltimer span")
    return out


TMA_EDGE_SMS = (22, 66)  # SMs copying edge boxes while the others copy boxes inside


def tma_edge_beside_traffic(ctx: Context) -> Constants:
    """TMA's time per box for boxes hanging past the matrix's last row (128 x 64, 64 rows
    inside) on a few SMs, with the other SMs idle and with them copying boxes inside another
    matrix (64 x 64, 6 x 4 in flight): two kernels on two streams, the one inside launched first
    and longer, so that it runs beside the whole of the other."""
    import cupy

    out: Constants = {}
    edge = tma_reader(128, 2048, 128, 64, valid=(64, 2048))
    inside = tma_reader()
    streams = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    for sms in TMA_EDGE_SMS:
        for beside in (0, ctx.sms - sms):
            rec = records(sms)
            at = edge(sms, 6, 2, 1, rec)
            iters = calibrate(at, 64, 0.004)
            go = at(iters)
            other = None
            if beside:
                at_other = inside(beside, *TMA_RING, 1, records(beside))
                other = at_other(calibrate(at_other, 64, 0.012))
            for _ in range(ctx.runs + ctx.warmup):
                if other is not None:
                    with streams[1]:
                        other()
                with streams[0]:
                    go()
                cupy.cuda.Device().synchronize()
            stats = per_sm(rec, iters * 2)
            out[f"tma_box128x64_inside64_sms{sms}_beside{beside}_cycles_per_box"] = entry(
                1 / stats.rate, "cycles",
                f"tma_read: {sms} blocks each keeping 6 x 2 boxes of 128 x 64 f16 in flight, "
                f"{iters} stages a block, of a 128 x 2048 matrix whose tensor map holds its first "
                f"64 rows, {beside} other SMs meanwhile reading boxes of 64 x 64 inside a 16 MiB "
                "matrix (a second kernel on another stream); median over SMs of clock64 span / "
                "boxes, the last of the launches")
    return out


TMA_GEMM = 8192  # M = N = K of the GEMM whose tiles tma_gemm_feed copies
TMA_GEMM_ORDERS = {"grouped": 16, "rows": 0}  # GROUP_M of each tile order


def tma_copies(spec, group_m: int):
    """kernel8's twin launch ``spec`` with its wgmma and epilogue taken out (EXPLORE_NO_MMA,
    EXPLORE_NO_EPILOGUE of this folder's cuda/explore.cuh) and its tiles in groups of
    ``group_m`` block rows: its TMA copies alone."""
    from explore import explore  # this folder's

    return explore(spec, EXPLORE_NO_MMA=1, EXPLORE_NO_EPILOGUE=1, GROUP_M=group_m)


def tma_gemm_feed(ctx: Context) -> Constants:
    """TMA copying a GEMM's A and B tiles with nothing computed: kernel8's twin without its
    wgmma or epilogue, its tiles in groups of 16 block rows (kernel8) or along N (kernel7)."""
    import cupy
    from bench_gpu import interleaved_medians  # this folder's: a spin kernel ahead of each launch

    import tcsim
    from tcsim.hw.kernels import device_launch
    from tcsim.hw.launch import launcher

    kernel = tcsim.kernels.kernel_named("kernel8")
    p = kernel.params(accumulate="f16")
    S = TMA_GEMM
    A, B = (cupy.random.uniform(-1, 1, (S, S), dtype=cupy.float32).astype(cupy.float16)
            for _ in range(2))
    C, D = cupy.zeros((S, S), cupy.float16), cupy.empty((S, S), cupy.float16)
    base = device_launch(kernel, p, A, B, C, D)
    tiles = (S // p.block_m) * (S // p.block_n)
    total = tiles * (p.block_m + p.block_n) * S * 2
    out: Constants = {}
    launches = {order: launcher(tma_copies(base, group))
                for order, group in TMA_GEMM_ORDERS.items()}
    # ~1 ms launches: each behind a spin kernel, so that the launch's own CPU time is not timed
    medians = interleaved_medians({k: (lambda i, go=go: go()) for k, go in launches.items()},
                                  max(ctx.runs, 10), ctx.warmup)
    for order, group in TMA_GEMM_ORDERS.items():
        seconds = medians[order]
        out[f"l2_tma_gemm_{order}_bytes_per_s"] = entry(
            total / seconds, "B/s",
            f"tma_gemm_feed: kernel8's twin at {S}^3 without wgmma or epilogue, GROUP_M {group}: "
            f"{total / 1e9:.1f} GB of A and B tiles requested / median event time "
            f"({seconds * 1e3:.3f} ms, each launch behind a spin kernel as bench_gpu.py times)")
    return out


MEASUREMENTS: tuple[Callable[[Context], Constants], ...] = (
    sm_clock, tensor_throughput, mma_latency, shared_throughput, shared_latency,
    global_latency, l2_bandwidth, dram_bandwidth, l1_bandwidth, wgmma_throughput, tma_read,
    tma_sharing, tma_gemm_feed, wgmma_b_layouts, tma_short_rows, tma_edge_rows,
    tma_edge_beside_traffic,
)


# --- the GPU description ------------------------------------------------------------------------

# tcsim/perf/gpus.json's measured H100 constants: (its key, this run's key or keys (their mean),
# unit, what it is). Tensor rates go under "tensor" by their family.
DESCRIPTION = (
    ("sms", ("sm_count",), "SMs", "sm_count"),
    ("clock_ghz", ("sm_clock_ghz_tensor",), "GHz",
     "the SM clock under an mma.sync load (sm_clock_ghz_tensor)"),
    ("clock_ghz_wgmma", ("sm_clock_ghz_wgmma_f32_2ms", "sm_clock_ghz_wgmma_f16_2ms"), "GHz",
     "the SM clock under a wgmma load of random f16 in ~2 ms launches, the mean of the f32 and "
     "f16 accumulator runs"),
    ("shared_wavefronts_per_cycle", ("shared_wavefronts_per_sm_per_cycle",),
     "wavefronts/SM/cycle", "shared_wavefronts_per_sm_per_cycle"),
    ("l1_sectors_per_cycle", ("global_load_sectors_per_sm_per_cycle",), "sectors/SM/cycle",
     "global_load_sectors_per_sm_per_cycle"),
    ("l2_bytes_per_s", ("l2_read_bytes_per_s",), "bytes/s", "l2_read_bytes_per_s"),
    ("l2_tma_rows_bytes_per_s", ("l2_tma_gemm_rows_bytes_per_s",), "bytes/s",
     "l2_tma_gemm_rows_bytes_per_s (TMA copying a GEMM's tiles taken along N, nothing computed)"),
    ("l2_tma_grouped_bytes_per_s", ("l2_tma_gemm_grouped_bytes_per_s",), "bytes/s",
     "l2_tma_gemm_grouped_bytes_per_s (TMA copying a GEMM's tiles taken in groups of 16 block "
     "rows, nothing computed)"),
    ("dram_bytes_per_s", ("dram_read_bytes_per_s",), "bytes/s", "dram_read_bytes_per_s"),
    ("l2_latency_cycles", ("l2_latency_cycles",), "cycles", "l2_latency_cycles"),
    ("dram_latency_cycles", ("dram_latency_cycles",), "cycles", "dram_latency_cycles"),
    ("shared_latency_cycles", ("shared_latency_cycles",), "cycles", "shared_latency_cycles"),
    ("mma_latency_cycles", ("mma_latency_cycles_m16n8k16_f16_f32",), "cycles",
     "mma_latency_cycles_m16n8k16_f16_f32"),
    ("tma_latency_cycles", ("tma_latency_cycles",), "cycles",
     "tma_latency_cycles (one 8 KiB box, L2 to shared memory, to its mbarrier)"),
)
TENSOR_DESCRIPTION = (
    ("m16n8k16.f16.f16", "mma_m16n8k16_f16_f16_per_sm_per_cycle"),
    ("m16n8k16.f32.f16", "mma_m16n8k16_f16_f32_per_sm_per_cycle"),
    ("m16n8k16.f32.bf16", "mma_m16n8k16_bf16_f32_per_sm_per_cycle"),
    ("m16n8k8.f16.f16", "mma_m16n8k8_f16_f16_per_sm_per_cycle"),
    ("m16n8k8.f32.f16", "mma_m16n8k8_f16_f32_per_sm_per_cycle"),
    ("m16n8k8.f32.tf32", "mma_m16n8k8_tf32_f32_per_sm_per_cycle"),
    *((f"wgmma.m64n{n}k16.{acc}.{a}", f"wgmma_m64n{n}k16_{a}_{acc}_per_sm_per_cycle")
      for n in WGMMA_N for a, acc in (("f16", "f32"), ("f16", "f16"), ("bf16", "f32"))),
)


def update_description(log: str, path: str, key: str = "H100-SXM",
                       entries: Collection[str] | None = None) -> list[str]:
    """Write this run's constants (the JSON ``log``) into GPU ``key`` of ``path`` (gpus.json),
    each with its source: the log's file name and the measurement's key. A run of some
    measurements (``--only``) writes the entries it measured and leaves the others as they
    were; ``entries`` (gpus.json names such as ``wgmma.m64n128k16.f32.f16``) writes those
    alone. Returns the gpus.json entries it left, with why."""
    run = json.load(open(log))
    measured = run["constants"]
    table = json.load(open(path))
    desc = table[key]
    where = f"benchmarks/bench_gpu_constants.py on the project's H100, {run['date'][:10]} ({log})"
    left = []
    for name, keys, unit, what in DESCRIPTION:
        if entries is not None and name not in entries:
            left.append(f"{name} (not asked for)")
            continue
        if any(k not in measured for k in keys):
            left.append(f"{name} (no {', '.join(k for k in keys if k not in measured)})")
            continue
        value = statistics.mean(measured[k]["value"] for k in keys)
        desc["constants"][name] = {"value": value, "unit": unit, "source": f"{where}: {what}"}
    for family, k in TENSOR_DESCRIPTION:
        if entries is not None and family not in entries:
            left.append(f"{family} (not asked for)")
            continue
        if k not in measured:
            left.append(f"{family} (no {k})")
            continue
        desc["tensor"][family] = {"value": measured[k]["value"], "unit": "instructions/SM/cycle",
                                  "source": f"{where}: {k}"}
    if "mma_m16n8k8_tf32_f32_per_sm_per_cycle" in measured and \
            (entries is None or "m16n8k4.f32.tf32" in entries):
        m16n8k8 = desc["tensor"]["m16n8k8.f32.tf32"]["value"]
        desc["tensor"]["m16n8k4.f32.tf32"] = {
            "value": 2 * m16n8k8, "unit": "instructions/SM/cycle",
            "source": f"{where}: twice mma_m16n8k8_tf32_f32_per_sm_per_cycle (half the "
                      "products; assumed, not measured alone)"}
    with open(path, "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    return left


# --- driver -----------------------------------------------------------------------------------


def gpu_identity() -> tuple[str, str]:
    """(name, driver version) from nvidia-smi, or from the CUDA runtime if that fails."""
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30).stdout.strip().splitlines()[0]
        name, driver = (s.strip() for s in smi.split(",", 1))
        return name, driver
    except Exception:
        import cupy

        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return name, str(cupy.cuda.runtime.driverGetVersion())


def run(names: list[str] | None, runs: int, warmup: int) -> dict:
    import cupy

    sms = int(cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"])
    ctx = Context(sms=sms, runs=runs, warmup=warmup, sink=cupy.zeros(4, cupy.uint32))
    name, driver = gpu_identity()
    constants: Constants = {"sm_count": entry(sms, "SMs", "multiProcessorCount")}
    errors: dict[str, str] = {}
    for measure in MEASUREMENTS:
        if names and measure.__name__ not in names:
            continue
        began = time.perf_counter()
        try:
            constants.update(measure(ctx))
            print(f"[{measure.__name__}: {time.perf_counter() - began:.1f} s]", file=sys.stderr)
        except Exception as exc:
            errors[measure.__name__] = f"{type(exc).__name__}: {exc}"
            print(f"[{measure.__name__} FAILED]", file=sys.stderr)
            traceback.print_exc()
    return {"gpu": name, "driver": driver,
            "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "constants": constants,
            "errors": errors}


def print_table(result: dict) -> None:
    print(f"GPU: {result['gpu']}; driver {result['driver']}; {result['date']}")
    print(f"{'name':52s} {'value':>12s}  {'unit':22s} method")
    for key, e in result["constants"].items():
        value = e["value"]
        shown = "-" if value is None else f"{value:.4g}" if abs(value) < 1e6 else f"{value:.4e}"
        print(f"{key:52s} {shown:>12s}  {e['unit']:22s} {e['method'][:110]}")
    for key, message in result["errors"].items():
        print(f"{key:52s} {'ERROR':>12s}  {message}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--runs", type=int, default=5, help="timed launches per measurement")
    p.add_argument("--warmup", type=int, default=2, help="untimed launches before them")
    p.add_argument("--only", nargs="*", default=None,
                   choices=[m.__name__ for m in MEASUREMENTS], help="run only these")
    p.add_argument("--describe", metavar="LOG.json", default=None,
                   help="no GPU: write that run's constants into tcsim/perf/gpus.json's H100")
    p.add_argument("--entries", nargs="*", default=None, metavar="NAME",
                   help="with --describe: write only these gpus.json entries "
                        "(e.g. wgmma.m64n128k16.f32.f16)")
    args = p.parse_args()
    if args.describe:
        for entry_left in update_description(args.describe, "tcsim/perf/gpus.json",
                                             entries=args.entries):
            print(f"left as it was: {entry_left}")
        return
    from tcsim.hw import runtime

    reason = runtime.unavailable_reason()
    if reason is not None:
        sys.exit(f"bench_gpu_constants.py needs an NVIDIA GPU with CuPy: {reason}")
    began = time.perf_counter()
    result = run(args.only, args.runs, args.warmup)
    print_table(result)
    print(f"[total {time.perf_counter() - began:.1f} s]", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
