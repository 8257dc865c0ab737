"""The speed-of-light model: from a `Trace`'s exact counts to a predicted time and a limiter.

Per SM, ``B`` blocks run at once (`occupancy`). For one block tile the trace gives the work each
unit must do, in cycles at that unit's full rate (GPU description, `tcsim.perf.gpus`):

- tensor: mma.sync instructions, or warpgroup wgmma instructions, / the SM's rate for them;
- shared: shared-memory wavefronts (loads, stores, wgmma operands) / rate; cp.async.cg's writes
  into shared memory do not use this pipe (measured: Nsight Compute's wavefront counts leave
  them out);
- l1: L1's data pipe, which moves shared memory's wavefronts and global memory's alike: the
  shared wavefronts plus one wavefront per 128-byte line of each global load and store, at the
  shared-memory rate (measured: Nsight Compute's l1tex throughput is this pipe's);
- (L2's bytes are the sectors L1 misses: a load cached in L1 hits the sectors its site already
  brought in during the same K tile, as the trace counts them; measured: wmma_basic's 87.5%
  equals Nsight Compute's 87.8%);
- issue: the warp instructions the trace counts / the SM's schedulers (a lower bound: address
  arithmetic is not counted).

and the block's chain per K tile, what one block waits for when it is alone on the SM:

- its global loads: a latency (L2's, or DRAM's for the share the reuse model below sends
  there; TMA's for a TMA copy) and a transfer at this SM's share of the L2 bandwidth (TMA's
  own rate for TMA copies, which depends on the tile order: see below). Loads issued
  ``prefetch`` K tiles ahead (register staging, cp.async stages, a producer's TMA stages) hide
  their latency behind that many tiles of compute; with none, the block waits for both. A
  TMA producer's ring of ``stages`` stages turns at its own pace: a stage is consumed, released
  once its wgmma are done, handed back to the producer (``tma_stage_handoff_cycles``) and
  copied again (TMA's latency), once in ``stages`` K tiles; a K tile takes at least that round
  over ``stages`` (measured: 64 x 256 tiles, 512 cycles of wgmma a K tile, keep the tensor pipe
  81% busy, while one warpgroup alone runs wgmma at the full rate).
- its compute: the mma work, plus the fragment loads from shared memory that it waits for. The
  warps of a block leave each barrier together, so a warp_k step's fragment wavefronts and its
  mma do not overlap: both count, unless the schedule loads the next step's fragments ahead
  (``fragments_ahead``), when only the first step's loads are exposed.
- after each barrier, the refill: the barrier, a shared-memory and an mma latency, and the
  shared-memory stores of the next tile (synchronous stores happen between the barriers, while
  no warp of the block computes).
- split-K (``splits`` > 1): a block is a (tile, split) pair over its split's K tiles; after
  them a tile waits S turns, one partial stored then S - 1 loaded one after another, each at
  one SM's L1 rate plus a fixed cost (`_reduction_cycles`), and only the reducing block runs
  the epilogue. The blocks run split-major, so a wave before the last only stores, and the last
  wave's reduction follows the last data however that was limited (L2, DRAM).
- after the last K tile, the epilogue (the C and D sites): a global latency when it reads C,
  its L1 sectors and its shared wavefronts. A TMA store is asynchronous and not waited for.
  A TMA-fed kernel's blocks run in step, so they reach their epilogues together: each waits
  for the D tiles of every busy SM to go through L2 at L2's rate (the epilogue's burst).

An SM finishes a wave of ``B`` blocks in ``B x W + max(L - W, 0)``, W the busiest unit's work of
one block and L one block's chain: the unit does every block's work, and one block's waits
beyond its own work stay exposed (the blocks of an SM leave their barriers and refill their
pipelines at the same moments; the form of Hong and Kim's analytical model, ISCA 2009). With one
block per SM that is the chain. The kernel takes ``ceil(tiles / (B x SMs))`` waves (persistent
blocks: tiles over the blocks launched); the last may be partly empty (the tail), and its
blocks' chain is figured on its own SMs (fewer share L2; fewer D tiles meet in it). A TMA
pipeline is filled once: the first K tile's latency and transfer (once per wave where blocks are
launched wave after wave, split-K's). Chip-wide, the L2 bytes over the L2 bandwidth (TMA copies
at TMA's rate) and the DRAM bytes over the DRAM bandwidth bound the time too, a TMA kernel's
DRAM bytes at the rate its copies in flight sustain (the busy SMs' stages ahead times the first
wave's DRAM share of their bytes, on a saturating curve up to the measured bandwidth), and a
launch adds its fixed cost (more for a launch in clusters). TMA's rate is the one measured for a
GEMM's tiles copied in the same order with nothing computed: when the tiles in flight are taken
in groups of block rows, SMs ask for the same lines at about the same time, and the L2 serves
them with fewer lookups (measured: Nsight Compute's L2 lookups are 0.59 of TMA's bytes in
kernel8's order, 0.97 along N), so the copies run faster; 64-row tiles in groups have a rate of
their own, per SM cycle. For tiles 128 wide or narrower in groups, where the GPU description has
L2's lookup factor, TMA's rate is L2's read bandwidth over the share of TMA's sectors L2 looks
up (`lookup_share`): a GPC's L2 request coalescer sends one request for its SMs that ask for a
line together, so the share is counted per (box, GPC) for a wave in lockstep and scaled by a
factor for SMs out of step (measured with Nsight Compute: 0.33-0.90 of the sectors looked up,
1.1-2.1 times the lockstep count, and the lookups never faster than L2's read bandwidth; the
factor is fitted), and of the lookups that saves, a share growing with the log of the K tiles
each block works through is lost as the SMs drift out of step; B's boxes of 64-byte rows (tiles
96 wide) keep only a measured share of the saving (`l2_tma_short_row_merge`: L2 merges such
rows for SMs asking together hardly at all). An SM's copies take its share of
that rate among the busy SMs, up to what one SM alone reaches. L2 also serves TMA's read
requests at a rate of its own, and a box row that does not start on a 128-byte line (a row pitch
that is a multiple of 16 bytes but not of 128: 3000 f16 elements) costs 4.6 times the requests
of one that does (measured with Nsight Compute: kernel10 at 3000^3 asks for 13.7M against 3.4M
at 3072^3 and runs at that rate), while a 64-byte row within one line asks for one, so such
rows bound the copies by their requests; so do boxes hanging past the matrix's last row (a
last tile row where M is not a multiple of the tile's rows), every row of which costs a measured
share of that request rate, as TMA fills the rows past the edge with zeros at a chip-wide rate
(one SM alone copies such a box as fast as one inside, 132 SMs three to four times slower):
chip-wide, and as the busy SMs' shares in a block's chain (`_tma_requests`). DRAM bytes come
from an L2 reuse model: the tiles of one wave (in the kernel's tile order) read each A
row-panel and B column-panel they share once; the next wave reads them again unless A and B fit
in L2. Local memory goes to DRAM when the resident threads' local bytes do not fit in half of L2.

Cycles become seconds at the clock the GPU holds under the kernel's tensor load: the clock
measured under an mma.sync load; for a wgmma kernel, the clock the power cap allows a wgmma
GEMM (`Gpu.clock_hz`): lower with f32 accumulators than with f16 (more power), higher when
fewer SMs are busy, and higher for a short kernel, as the cap pulls the clock down from the
uncapped one over tens of microseconds (the kernel's time and its mean clock are found
together); the power is the tensor pipes', so SMs whose pipe waits part of each K tile count
for that share of a busy SM. The largest term is the limiter; a unit busy less than 60% of the
predicted time is not, and latency is (Nsight Compute's rule); latency whose launch and fill
make a quarter of the time is a small problem's. When L1's data pipe limits and
most of its wavefronts are shared memory's, the limiter is named "shared". Every constant comes
from the GPU description, with its source; eight of them (the launch's cost, 64-row tiles' TMA
rate, L2's lookup factor and its drift (two), DRAM's bytes in flight, the stage handoff,
split-K's turn) are fitted on named cases of issue 35's runs (`benchmarks/bench_sweep.py
--fit`; the runs logged after the fit held out), the others measured; none is fitted to one
kernel.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from ..memory.local import SECTOR
from .gpus import Gpu
from .gpus import gpu as gpu_named
from .occupancy import Occupancy, occupancy, twin_registers


@dataclass
class Explanation:
    """What `Trace.explain` returns: ``seconds`` (predicted), ``limiter`` (a short name) and
    the per-unit breakdown ``units`` (seconds each would need alone)."""

    kernel: str
    problem: tuple[int, int, int]
    gpu: str
    occupancy: Occupancy
    units: dict[str, float]  # seconds at full rate: tensor, shared, l1, issue, l2, dram
    latency: float  # seconds: one block's waits beyond its busiest unit's work, every wave
    waves: int
    full_waves: float  # tiles / tiles in flight at once: the tail is waves - full_waves
    seconds: float
    limiter: str
    reason: str  # the limiter in words
    advice: str  # what the next rung should change
    details: dict = field(default_factory=dict)
    launch: float = 0.0  # seconds: the launch's fixed cost, before any block runs

    @property
    def tflops(self) -> float:
        M, N, K = self.problem
        return 2 * M * N * K / self.seconds / 1e12

    def __str__(self) -> str:
        M, N, K = self.problem
        o = self.occupancy
        lines = [f"{self.kernel} on M={M} N={N} K={K}, {self.gpu}: predicted "
                 f"{self.seconds * 1e3:.3f} ms ({self.tflops:.0f} TFLOP/s), limited by "
                 f"{self.limiter}",
                 f"  {self.reason}",
                 f"  occupancy: {o.blocks_per_sm} block(s) of {o.warps_per_block} warps per SM "
                 f"({o.limiter}; {o.registers_per_thread} registers a thread from "
                 f"{o.registers_source}); {self.waves} waves ({self.full_waves:.2f} full)",
                 "  unit      seconds     share of predicted time"]
        for unit, seconds in [*self.units.items(), ("latency", self.latency),
                              ("launch", self.launch)]:
            lines.append(f"  {unit:<8} {seconds * 1e3:9.3f} ms  {seconds / self.seconds:6.0%}")
        lines.append(f"  next: {self.advice}")
        return "\n".join(lines)


def explain(trace, gpu: str | Gpu = "H100-SXM", registers: int | None = None) -> Explanation:
    """Predict ``trace``'s kernel's time on ``gpu`` (see the module docstring): the `Kernel`
    the trace was made of (a user's too), or for a trace made by hand, the built-in kernel of
    its name."""
    from ..kernels import kernel_named
    from ..kernels.allocation import check_tiles
    from ..kernels.params import tile_count
    from ..kernels.scheduler import blocks_launched

    _check_trace(trace)
    g = gpu_named(gpu)
    kernel = trace.kernel_object or kernel_named(trace.kernel)
    p = kernel.params(**trace.params)
    if kernel.arch and not kernel.arch.startswith(g.arch):
        raise ValueError(f"{kernel.name} needs {kernel.arch}; {g.key} is {g.arch}")
    shared = kernel.shared_bytes(p)
    # the tiles must fit what a block of this GPU may have (an SM's, less its reservation)
    check_tiles(kernel.name, kernel.tiles(p), shared, kernel.shared is not None,
                int(g["shared_bytes_per_sm"]) - int(g["shared_reserved_per_block"]), g.key)
    M, N, K = trace.problem
    sites = list(trace.sites.values())
    wgmma = any(s.space == "wgmma" for s in sites)
    occ = occupancy(g, p.warps, *_registers(kernel, p, g, registers), shared)
    B, sms = occ.blocks_per_sm, int(g["sms"])
    tiles = tile_count(M, p.block_m) * tile_count(N, p.block_n)  # ragged: a partial last tile
    splits = p.splits  # split-K: a block per (tile, split), each over its split's K tiles
    blocks = tiles * splits
    concurrent = min(B * sms, blocks_launched(p, M, N))
    busy = min(sms, concurrent)  # SMs with a block (spread one a SM first); the others idle
    k_tiles = max(trace.pipeline.get("k_tiles", K // p.block_k), 1)

    # One tile's work per unit, in SM cycles; the mainloop's alone (A, B and the mma) for the chain.
    work = _work(sites, g)
    per_block = {u: c / blocks for u, c in work.items()}
    mainloop = [s for s in sites if not _epilogue(s) and not _partial(s)]
    main = {u: c / blocks for u, c in _work(mainloop, g).items()}

    # Chip-wide: L2 and DRAM bytes.
    tma = any(s.space == "tma" for s in mainloop)  # the main loop's tiles arrive by TMA
    l1_misses = sum(s.l2_sectors for s in sites if s.space in L1_SPACES)
    tma_sectors = sum(s.sectors for s in sites if s.space in TMA_SPACES)
    l2_bytes = (l1_misses + tma_sectors) * SECTOR
    # L2's read requests for the main loop's copies: a ceiling of their own where rows are
    # not 128-byte aligned, and what boxes hanging past the last row cost of their rate
    counted, edge = _tma_requests(kernel, p, M, N, K, g) if tma and REQUESTS in g.constants \
        else (0.0, 0.0)
    requests = counted + edge
    dram_bytes, dram_share, first_share = _dram_bytes(p, M, N, K, max(concurrent // splits, 1),
                                                      g)
    local = trace.pipeline.get("local_bytes_per_thread", 0) * concurrent * p.threads
    if local > g["l2_bytes"] / 2:  # the resident threads' local memory does not stay in L2
        dram_bytes += sum(s.sectors for s in sites if s.space == "local") * SECTOR

    # One block's chain per K tile (module docstring), in cycles of the clock ``hz``.
    latency_global = g["tma_latency_cycles" if tma else "l2_latency_cycles"] + \
        dram_share * (g["dram_latency_cycles"] - g["l2_latency_cycles"])
    # a producer's stages but the one being computed are in flight
    prefetch = p.stages - 1 if tma else trace.pipeline.get("prefetch", 0)
    load_bytes = sum(s.l2_sectors if s.space in L1_SPACES else s.sectors
                     for s in mainloop if s.space in L1_SPACES + TMA_SPACES) \
        * SECTOR / blocks / k_tiles
    shared_rate = g["shared_wavefronts_per_cycle"]
    fragments = sum(s.wavefronts for s in mainloop if _fragment_load(s)) / blocks / k_tiles \
        / shared_rate
    steps = max(p.block_k // p.warp_k, 1)
    fragment_wait = fragments / steps if trace.pipeline.get("fragments_ahead") else fragments
    compute = max(max(main.values()) / k_tiles, main["tensor"] / k_tiles + fragment_wait)
    barriers = trace.pipeline.get("barriers", 0)
    stores = sum(s.wavefronts for s in mainloop if _shared_store(s)) / blocks / k_tiles \
        / shared_rate
    refill = barriers * (g["barrier_cycles"] + g["shared_latency_cycles"]
                         + g["mma_latency_cycles"]) + (stores if barriers else 0)
    epilogue = _epilogue_cycles(sites, tiles, g)
    waves = math.ceil(blocks / concurrent)
    busiest = max(per_block, key=per_block.get)
    per_sm = math.ceil(concurrent / sms)  # tiles in flight on the busiest SM
    dram_rate = g["dram_bytes_per_s"]
    launch = g["launch_seconds"] if "launch_seconds" in g.constants else 0.0
    if p.cluster_m > 1 and CLUSTER_LAUNCH in g.constants:
        launch += g[CLUSTER_LAUNCH]  # clusters' launch, and their start and end barriers

    # the last wave may be partly empty: its blocks spread over that many SMs (one a SM first)
    busy_last = min(sms, blocks - (waves - 1) * concurrent)

    def at(hz: float) -> dict:
        """The time at SM clock ``hz``: what is counted in cycles and what in bytes/s meet."""
        tma_rate = _tma_rate(p, g, hz, M, N, K) if tma or tma_sectors else 0.0

        def wave(busy: int, last: bool) -> dict:
            """One block's chain in a wave of ``busy`` SMs (the ``last`` wave or one before),
            and what of it stays exposed."""
            if tma:  # the busy SMs share TMA's rate; one SM alone reaches its own limit
                rate = min(tma_rate / busy, g["tma_sm_bytes_per_s"]) / hz \
                    if "tma_sm_bytes_per_s" in g.constants else tma_rate / sms / hz
            else:
                rate = g["l2_bytes_per_s"] / sms / hz
            transfer = load_bytes / rate
            if requests:  # the busy SMs share L2's request rate too
                transfer = max(transfer, requests / blocks / k_tiles * busy * hz / g[REQUESTS])
            ring = 0.0
            if prefetch == 0:
                chain = max(latency_global, transfer) + compute + refill
            elif tma and HANDOFF in g.constants:
                # A producer's ring of stages: a stage is consumed, released when its wgmma
                # are done, handed back to the producer and copied again; every stage makes
                # that round once in `stages` K tiles.
                ring = (compute + g[HANDOFF] + latency_global) / p.stages
                chain = max(ring, transfer, compute) + refill
            else:
                chain = max(latency_global / prefetch, transfer, compute) + refill
            # TMA-fed blocks of a wave run in step and reach their epilogues together: the D
            # tiles of every busy SM go through L2 at once (module docstring).
            burst = _epilogue_burst(sites, tiles, busy / splits, hz, g) if tma else 0.0
            # split-K: the reducing block of a tile waits for the others' partials, reads them
            reduction = _reduction_cycles(sites, tiles, splits, busy, hz, g, last)
            latency_block = chain * k_tiles + reduction + epilogue + burst
            # The pipe does every block's work; one block's waits beyond its own work stay
            # exposed, as the blocks leave their barriers and refill their pipelines together.
            return {"transfer": transfer, "chain": chain, "burst": burst,
                    "reduction": reduction, "ring": ring,
                    "exposed": max(latency_block - per_block[busiest], 0.0)}

        full = wave(busy, waves == 1)
        last = wave(busy_last, True) if waves > 1 else full
        # the pipeline's fill: the first K tile's copies' latency, and the K tile's transfer or
        # its compute, whichever the steady K tile (the larger of them) does not already count
        fill = latency_global + min(full["transfer"], compute) if tma else 0.0
        units = {u: waves * per_sm * c / hz for u, c in per_block.items()}
        units["l2"] = l1_misses * SECTOR / g["l2_bytes_per_s"] + \
            max(tma_sectors * SECTOR / tma_rate if tma_sectors else 0.0,
                requests / g[REQUESTS] if requests else 0.0)
        streamed, in_flight = dram_rate, 0.0
        if tma and IN_FLIGHT in g.constants:
            # DRAM streams a TMA kernel's boxes as fast as the copies in flight let it: the
            # busy SMs' stages ahead, the DRAM's share of their bytes while it streams (the
            # first wave's: operands that fit in L2 come from DRAM then; a saturating curve)
            in_flight = busy * prefetch * load_bytes * first_share
            streamed *= -math.expm1(-in_flight / g[IN_FLIGHT])
        units["dram"] = dram_bytes / streamed
        latency = ((waves - 1) * full["exposed"] + last["exposed"] + fill) / hz
        # split-K's last reduction follows the last K tile's data, however that was limited
        tail = last["reduction"] / hz
        # blocks launched wave after wave (split-K's; not persistent): each wave's copies
        # stream only once its blocks have filled their pipelines
        restarts = (waves - 1) * fill / hz if tma and blocks_launched(p, M, N) == blocks else 0.0
        seconds = launch + max(units[busiest] + latency, units["l2"] + tail + restarts,
                               units["dram"] + tail + restarts)
        return {**full, "fill": fill, "units": units, "latency": latency, "seconds": seconds,
                "dram_rate": streamed, "in_flight": in_flight}

    # The clock under the power cap falls while the kernel runs (`Gpu.clock_hz`): a short
    # kernel runs faster, so its time and its clock are found together.
    # The power the cap holds is the busy SMs' tensor pipes': one that waits part of each K
    # tile (for its stage ring) draws that much less.
    def powered(chain: float) -> float:
        return busy * min(main["tensor"] / k_tiles / chain, 1.0) if chain else busy

    hz = g.clock_hz(wgmma, p.accumulate, powered(compute))
    for _ in range(CLOCK_ROUNDS):
        t = at(hz)
        hz, before = g.clock_hz(wgmma, p.accumulate, powered(t["chain"]),
                                t["seconds"] - launch), hz
        if abs(hz - before) <= 1e-6 * before:
            break
    t = at(hz)
    units, latency, seconds, chain = t["units"], t["latency"], t["seconds"], t["chain"]
    transfer, burst, fill, reduction = t["transfer"], t["burst"], t["fill"], t["reduction"]
    tensor_idle = max(chain - main["tensor"] / k_tiles, 0.0) \
        if wgmma and t["ring"] > max(transfer, compute) else 0.0  # waiting for the stage ring
    candidates = {**units, "latency": latency + launch}
    limiter = max(candidates, key=candidates.get)
    if candidates[limiter] < BUSY * seconds:  # Nsight Compute's rule: no unit 60% busy
        limiter = "latency"
    elif limiter == "l1" and units["shared"] >= SHARED_SHARE * units["l1"]:
        limiter = "shared"
    full = blocks / concurrent
    # L2 limits through its read requests rather than TMA's bytes: rows not 128-byte aligned
    by_requests = bool(requests) and requests / g[REQUESTS] > \
        tma_sectors * SECTOR / _tma_rate(p, g, hz, M, N, K)
    details = {"tiles": tiles, "splits": splits, "blocks": blocks,
               "reduction_cycles": reduction, "per_block_cycles": per_block,
               "chain_cycles": chain, "tensor_idle_cycles": tensor_idle,
               "ring_cycles": t["ring"],
               "global_latency_cycles": latency_global, "transfer_cycles": transfer,
               "compute_cycles": compute, "refill_cycles": refill,
               "epilogue_cycles": epilogue, "epilogue_burst_cycles": burst,
               "fill_cycles": fill, "busy_sms": busy, "dram_share": dram_share,
               "l2_bytes": l2_bytes, "l2_requests": counted, "edge_requests": edge,
               "by_requests": by_requests, "request_causes": _request_causes(kernel, p, M, N, K)
               if by_requests else (),
               "dram_bytes": dram_bytes, "prefetch": prefetch,
               "dram_bytes_per_s": t["dram_rate"], "dram_in_flight_bytes": t["in_flight"],
               "lookup_share": lookup_share(p, M, N, K, g) if tma and p.group_m > 1
               and p.block_n <= NARROW and LOOKUPS in g.constants else None,
               "clock_hz": hz, "k_tiles": k_tiles, "launch_seconds": launch, "sms": sms,
               "fixed_share": (launch + fill / hz) / seconds}
    reason = _reason(limiter, trace, occ, details, g)
    advice = _advice(limiter, occ, prefetch, wgmma, _conflicted(trace))
    if limiter == "l2" and by_requests:
        causes = details["request_causes"]
        if edge > counted:
            advice = ("a tile whose rows divide M (or M padded to a multiple of them): TMA "
                      "fills boxes hanging past the last row at a chip-wide rate")
        elif "short" in causes and "off lines" not in causes:
            advice = ("a tile whose columns are a multiple of 64: B in 128-byte box rows, which "
                      "SMs asking together share")
        else:
            advice = ("rows on 128-byte lines: a leading dimension padded to a multiple of 128 "
                      "bytes (64 f16 elements) takes a request a line")
    if limiter == "dram" and details["dram_in_flight_bytes"]:
        advice = ("more copies in flight from DRAM: more stages in the ring, or tiles that keep "
                  "more SMs busy")
    if limiter == "latency" and details["fixed_share"] >= SMALL:
        advice = ("more, smaller tiles to busy every SM (tcsim.choose_tile compares a kernel's) "
                  "or split-K; several problems in one launch share its fixed cost")
    elif limiter == "tensor" and tensor_idle:
        advice = ("more work a K tile for each stage's round trip (a taller tile, two consumer "
                  "warpgroups) or more stages in the ring")
    return Explanation(trace.kernel, (M, N, K), g.key, occ, units, latency, waves, full,
                       seconds, limiter, reason, advice, details, launch)


CLOCK_ROUNDS = 8  # the clock and the time agree to 1e-6 within a few rounds
SMALL = 0.25  # latency, and the launch and the fill are this share of it: a small problem
BUSY = 0.6  # a unit busy this share of the time limits the kernel; below it, latency does
SHARED_SHARE = 0.5  # L1's data pipe limits and this share of it is shared memory's: "shared"
L1_SPACES = ("global", "async", "local")
TMA_SPACES = ("tma", "tma_store")


def _work(sites, g: Gpu) -> dict[str, float]:
    """Cycles each unit needs, at its full rate, for ``sites``."""
    tensor = sum(s.mma / g.tensor_rate(s.instruction) for s in sites if s.space == "tensor")
    tensor += sum(s.executions / WARPGROUP_WARPS / g.tensor_rate(s.instruction)
                  for s in sites if s.space == "wgmma")
    shared = sum(s.wavefronts for s in sites if s.space != "async")  # cp.async.cg: its own path
    return {"tensor": tensor,
            "shared": shared / g["shared_wavefronts_per_cycle"],
            "l1": (shared + sum(s.lines for s in sites)) / g["shared_wavefronts_per_cycle"],
            "issue": sum(s.executions for s in sites) / g["schedulers_per_sm"]}


WARPGROUP_WARPS = 4  # a wgmma site counts warp instructions; the pipe's rate is per warpgroup


def _epilogue(site) -> bool:
    """The C and D operands' sites: the epilogue, after the last K tile."""
    return site.name.startswith(("C_", "D_"))


def _partial(site) -> bool:
    """Split-K's partial stores and loads (`tcsim.kernels.split_k`): after the main loop,
    before the epilogue."""
    return site.name.startswith("partial_")


def _reduction_cycles(sites, tiles: int, splits: int, busy: float, hz: float, g: Gpu,
                      last: bool = True) -> float:
    """Split-K's wait at the end of a tile's K tiles (`tcsim.kernels.split_k`): the blocks of a
    wave finish their K ranges together; S - 1 of each tile's S store their f32 partial,
    fence and count it written, then the reducing block, once the counter says so, loads the
    S - 1 partials one after another. Each of those S turns moves one partial at one SM's L1
    rate (``l1_sectors_per_cycle``) and waits ``split_k_turn_cycles`` besides (the fence, the
    counter's add and poll, the first access's trip to L2: measured, a turn costs about the
    same for partials of 64 and 128 KiB), unless the wave's partials through L2 at L2's rate
    take longer. Blocks run split-major (the reducers last), so in a wave before the ``last``
    the blocks only store: one turn. Without a turn cost in the GPU description: four L2 round
    trips in all."""
    moved = sum(s.sectors for s in sites if _partial(s)) * SECTOR / tiles  # stored + loaded
    if not moved:
        return 0.0
    turns = splits if last else 1
    partial = moved / 2 / (splits - 1)
    one_sm = turns * partial / (SECTOR * g["l1_sectors_per_cycle"])
    wave = moved / splits * busy / g["l2_bytes_per_s"] * hz  # busy / S tiles in a wave
    if SPLIT_TURN in g.constants:
        return max(one_sm + turns * g[SPLIT_TURN], wave)
    return max(one_sm, wave) + 4 * g["l2_latency_cycles"]


SPLIT_TURN = "split_k_turn_cycles"


def _fragment_load(site) -> bool:
    return site.space == "shared" and site.instruction.startswith(("ldmatrix", "ld.shared",
                                                                   "wmma.load"))


def _shared_store(site) -> bool:
    return site.space == "shared" and site.instruction.startswith("st.shared")


def _epilogue_cycles(sites, tiles: int, g: Gpu) -> float:
    """One tile's epilogue as the block waits for it: a global latency when it reads C (from
    DRAM: C is read once), its L1 sectors and its shared wavefronts."""
    epilogue = [s for s in sites if _epilogue(s)]
    reads_c = any(s.name.startswith("C_") and s.instruction.startswith(("ld", "cp", "wmma.load"))
                  for s in epilogue)
    sectors = sum(s.sectors for s in epilogue if s.space in L1_SPACES) / tiles
    wavefronts = sum(s.wavefronts for s in epilogue) / tiles
    return (g["dram_latency_cycles"] if reads_c else 0.0) + sectors / g["l1_sectors_per_cycle"] \
        + wavefronts / g["shared_wavefronts_per_cycle"]


def _epilogue_burst(sites, tiles: int, busy: int, hz: float, g: Gpu) -> float:
    """Cycles a wave's epilogues wait for L2 when its blocks reach them together (TMA-fed
    blocks run in step): the D tiles of ``busy`` SMs written at L2's rate at once."""
    stored = sum(s.sectors for s in sites if _epilogue(s) and s.name.startswith("D_")
                 and s.space in ("global", "tma_store")) * SECTOR / tiles
    return stored * busy / g["l2_bytes_per_s"] * hz


def _check_trace(trace) -> None:
    # What explain reads of a Trace, asked of the object (importing tcsim.trace here would
    # close a circle: Trace.explain calls this module).
    if not all(hasattr(trace, a) for a in ("kernel", "problem", "params", "sites", "pipeline")):
        raise TypeError(f"explain takes a Trace (tcsim.trace(kernel, M, N, K)), got {trace!r}")


def _registers(kernel, p, g: Gpu, registers: int | None) -> tuple[int, str]:
    if registers is not None:
        return registers, "the caller"  # occupancy() checks it
    found = twin_registers(kernel.source, kernel.entry, kernel.defines(p), kernel.arch or g.arch)
    if found is not None:
        return found, "ptxas"
    min_blocks = dict(kernel.blocks_per_sm).get(p.accumulate, 1)
    budget = int(g["registers_per_sm"]) // (p.threads * min_blocks)
    return min(int(g["max_registers_per_thread"]), budget // 8 * 8), "declared budget"


def _tma_rate(p, g: Gpu, hz: float, M: int, N: int, K: int) -> float:
    """Bytes per second TMA copies a GEMM's tiles at: faster when the tiles in flight come in
    groups of block rows (their SMs ask for the same lines together) than along N. In groups,
    tiles up to `NARROW` wide, where the GPU description has L2's lookup factor (`LOOKUPS`):
    L2's read bandwidth over the share of TMA's sectors it looks up (`lookup_share`; with it
    for the wider tiles too, 64 x 256 came out 8-12% fast on the squares' many waves).
    Otherwise the measured rate of a GEMM's copies; 64-row tiles in groups have a rate of their
    own (`GROUPED_64`), in bytes per SM cycle."""
    if p.group_m <= 1:
        return g["l2_tma_rows_bytes_per_s"]
    if LOOKUPS in g.constants and p.block_n <= NARROW:
        return g["l2_bytes_per_s"] / lookup_share(p, M, N, K, g)
    if p.block_m == 64 and GROUPED_64 in g.constants:
        return g[GROUPED_64] * hz
    return g["l2_tma_grouped_bytes_per_s"]


def lookup_share(p, M: int, N: int, K: int, g: Gpu) -> float:
    """The share of TMA's sectors the L2 looks up: the GPC's L2 request coalescer sends one
    request for the SMs of a GPC that ask for the same line together (Nsight Compute: L2
    looks up 0.33-0.90 of kernel10's TMA sectors, lts__t_sectors_srcunit_tex_op_read against
    l1tex__m_xbar2l1tex_read_bytes, docs/evidence/ncu_rings_h100_2026-11-26.json). Counted in
    lockstep (`lockstep_lookups`) and scaled by a factor for SMs that do not ask for a line at
    quite the same moment (`LOOKUPS`). The blocks drift further out of step the more K tiles
    each works through (`DRIFT`): of the lookups the lockstep count saves, a share
    ``drift x ln(k_tiles / from)`` is lost, ``k_tiles`` a block's K tiles over all its tiles
    (Nsight Compute, docs/evidence/ncu_waves_h100_2026-11-26.json: 64 x 128 at 3072^3, 4096^3
    and 8192^3 looks up 0.57, 0.68 and 0.75 of its sectors, lockstep 0.40). Both fitted on
    the logged runs' times."""
    merge = g[SHORT_ROW_MERGE] if SHORT_ROW_MERGE in g.constants else 0.0
    share = min(1.0, g[LOOKUPS] * lockstep_lookups(p, M, N, int(g["sms"]), int(g["gpcs"]),
                                                   merge))
    if DRIFT in g.constants:
        from ..kernels.params import tile_count
        from ..kernels.scheduler import blocks_launched

        tiles = tile_count(M, p.block_m) * tile_count(N, p.block_n)
        k_tiles = tiles / blocks_launched(p, M, N) * tile_count(K, p.block_k)
        drift = min(max(g[DRIFT] * math.log(k_tiles / g[DRIFT_FROM]), 0.0), 1.0)
        share += (1.0 - share) * drift
    return share


@functools.lru_cache(maxsize=4096)
def lockstep_lookups(p, M: int, N: int, sms: int, gpcs: int, merge: float = 0.0) -> float:
    """L2 lookups over TMA's box rows when every busy SM asks for its K tile's boxes at once and
    a GPC's SMs asking for the same box are served by one lookup: the tiles of each wave (the
    tile order of ``p``, a kernel's `GemmParams`, clusters included; one tile a SM) on GPCs in
    block order (block b of a wave on GPC b x gpcs // sms; an assumption: the hardware's block
    placement is not documented, and no other simple placement fits Nsight Compute's counts
    better), an A box per (tile row, GPC) and a B box per (tile column, GPC). B's boxes of rows
    shorter than a line (32 columns under the 64-byte swizzle, tiles 96 wide) are looked up for
    nearly every block that asks for them: L2 serves such rows to SMs asking together hardly
    faster than to SMs apart (measured, docs/evidence/gpu_constants_h100_2026-11-26_rows.json:
    132 SMs in groups of 8 read boxes of 64 rows x 64 bytes at 8.6 TB/s against 7.9 apart,
    boxes of 64 x 128 bytes at 12.7 against 8.1: the short rows keep
    ``l2_tma_short_row_merge`` of the long rows' gain, and as much of the lockstep count's
    saving on B; Nsight Compute counts 0.60-0.94 of 96-wide tiles' TMA sectors looked up)."""
    from ..kernels.scheduler import tile_order

    rows, cols = tile_order(p, M, N)
    tiles = rows.size
    wave = min(sms, tiles)
    gpc = np.arange(tiles) % wave * gpcs // sms
    first = np.arange(tiles) // wave  # each wave's lookups apart
    looked = np.unique(np.stack([first, rows, gpc]), axis=1).shape[1] * p.block_m
    together = np.unique(np.stack([first, cols, gpc]), axis=1).shape[1]
    if p.box_row_bytes < LINE:  # short rows: most of what SMs asking together save is lost
        together += (1.0 - merge) * (tiles - together)
    return (looked + together * p.block_n) / (tiles * (p.block_m + p.block_n))


GROUPED_64 = "l2_tma_grouped_64_bytes_per_cycle"
LOOKUPS = "l2_tma_lookup_factor"
SHORT_ROW_MERGE = "l2_tma_short_row_merge"
DRIFT = "l2_tma_drift"
DRIFT_FROM = "l2_tma_drift_from_k_tiles"
NARROW = 128  # tiles this wide or narrower: TMA's rate from L2's lookups
HANDOFF = "tma_stage_handoff_cycles"
CLUSTER_LAUNCH = "cluster_launch_seconds"
IN_FLIGHT = "dram_tma_in_flight_bytes"
REQUESTS = "l2_tma_requests_per_s"
LINE = 128  # bytes: an L2 line, and a box row of the 128-byte swizzle


def _tma_requests(kernel, p, M: int, N: int, K: int, g: Gpu) -> tuple[float, float]:
    """L2 read requests of the main loop's TMA copies of A and B, and what boxes hanging past
    the matrix's last row cost beyond them, in requests of the same rate.

    Each box row inside the matrix asks for ``tma_requests_per_aligned_row`` when it starts on
    a 128-byte line and ``tma_requests_per_misaligned_row`` when it does not (a pitch that is a
    multiple of 16 bytes but not of 128: the row spans two lines, and the L2 serves it in more,
    smaller requests: measured, 2.68 a row against 0.58, gpus.json). A box row shorter than a
    line (64 bytes: B in tiles 96 wide) asks for one request when it lies within one line, as
    L2 does not merge such rows of SMs asking together (`lockstep_lookups`), and a misaligned
    row's when it crosses into the next (Nsight Compute, docs/evidence/
    ncu_gap_kernel10_session24.json: the 96-wide tiles' requests within -16% to +31% of this
    count; 0.63-1.26 a short row). A's boxes are copied once per tile column, B's once per tile
    row (split-K's splits share a tile's K range), or with clusters once per cluster of
    ``cluster_m`` tile rows (TMA multicast: L2 serves it once).

    A box hanging past the last row (A's last tile row where M is not a multiple of the tile's
    rows, B's last K tile where K is not one of its box rows) costs ``tma_requests_per_edge_row``
    for each of its rows, inside or not, in place of its rows' own: TMA fills the rows past the
    edge with zeros at a chip-wide rate (one SM alone copies such a box as fast as one inside,
    132 SMs three to four times slower, whatever share of it lies inside: docs/evidence/
    gpu_constants_h100_2026-11-26_edge_rows.json)."""
    from ..kernels.params import tile_count

    maps = dict(kernel.tensor_maps(p, M, N, K))
    loads = {"A": tile_count(N, p.block_n), "B": tile_count(M, p.block_m) // p.cluster_m}
    counted = edge = 0.0
    for name, times in loads.items():
        m = maps.get(name)
        if m is None:
            continue
        starts = np.arange(m.rows) * (m.cols * m.element_bytes) % LINE
        row_bytes = m.box_cols * m.element_bytes
        inside = m.rows % m.box_rows  # the rows inside the box that hangs past the last row
        for column in range(0, m.cols, m.box_cols):
            offset = (starts + column * m.element_bytes) % LINE
            if row_bytes < LINE:
                cheap = offset + row_bytes <= LINE
                per_row = SHORT_ROW_REQUESTS
            else:
                cheap = offset == 0
                per_row = g["tma_requests_per_aligned_row"]
            cost = np.where(cheap, per_row, g["tma_requests_per_misaligned_row"])
            counted += times * float(cost.sum())
            if inside and EDGE in g.constants:
                edge += times * (m.box_rows * g[EDGE] - float(cost[m.rows - inside:].sum()))
    return counted, edge


def _request_causes(kernel, p, M: int, N: int, K: int) -> tuple[str, ...]:
    """What makes the main loop's copies ask L2 for many requests: "off lines" where A's or
    B's rows do not start on 128-byte lines, "short" where B's box rows are shorter than one."""
    maps = [m for name, m in kernel.tensor_maps(p, M, N, K) if name in ("A", "B")]
    causes = ("off lines",) if any(m.cols * m.element_bytes % LINE for m in maps) else ()
    return causes + (("short",) if any(m.box_cols * m.element_bytes < LINE for m in maps)
                     else ())


SHORT_ROW_REQUESTS = 1.0  # a box row within one line, not merged with other SMs': one request
EDGE = "tma_requests_per_edge_row"


def _dram_bytes(p, M: int, N: int, K: int, concurrent: int,
                g: Gpu) -> tuple[float, float, float]:
    """(DRAM bytes, the share of global-load bytes they are, that share in the first wave).
    Tiles run in the kernel's tile order (`tcsim.kernels.scheduler.tile_order`), ``concurrent``
    at a time; a wave reads each A row-panel and B column-panel it touches once; A and B that
    fit in L2 together are read once for the whole kernel (by the first wave that touches
    them)."""
    from ..kernels.params import tile_count
    from ..kernels.scheduler import tile_order

    a_bytes, b_bytes = p.element_bytes("A"), p.element_bytes("B")
    out = M * N * p.element_bytes("D")
    rows_of, cols_of = tile_order(p, M, N)
    tiles = rows_of.size
    row_bytes, col_bytes = p.block_m * K * a_bytes, p.block_n * K * b_bytes

    def panels(first: int, last: int) -> float:  # distinct panels of each wave, tiles [first, last)
        wave = np.arange(first, last) // concurrent
        rows = np.unique(wave * tile_count(M, p.block_m) + rows_of[first:last]).size
        cols = np.unique(wave * tile_count(N, p.block_n) + cols_of[first:last]).size
        return rows * row_bytes + cols * col_bytes

    if (M * K * a_bytes + K * N * b_bytes) <= g["l2_bytes"] / 2:
        reads = M * K * a_bytes + K * N * b_bytes
    else:
        reads = panels(0, tiles)
    loaded = tiles * (row_bytes + col_bytes)
    first = min(concurrent, tiles)
    return reads + out, reads / loaded, panels(0, first) / (first * (row_bytes + col_bytes))


def _reason(limiter: str, trace, occ: Occupancy, d: dict, g: Gpu) -> str:
    t = trace.totals
    if limiter == "shared":
        wave = sum(s.wavefronts for s in trace.sites.values())
        ideal = sum(s.ideal for s in trace.sites.values())
        if not _conflicted(trace):
            return (f"shared-memory wavefronts on L1's data pipe: {wave / 1e6:,.1f}M, no bank "
                    "conflicts (as many as the ideal)")
        return (f"shared-memory bank conflicts: {wave / 1e6:,.1f}M wavefronts, "
                f"{wave / max(ideal, 1):.1f}x the ideal {ideal / 1e6:,.1f}M")
    if limiter == "latency" and d["fixed_share"] >= SMALL:
        blocks = f" in {d['blocks']} blocks" if d["splits"] > 1 else ""
        return (f"a small problem: {d['tiles']} tile(s){blocks} keep {d['busy_sms']} of "
                f"{d['sms']} SMs "
                f"busy; the launch's fixed cost ({d['launch_seconds'] * 1e6:.1f} us) and the "
                f"pipeline's fill ({d['fill_cycles']:.0f} cycles) are {d['fixed_share']:.0%} "
                "of the time")
    if limiter == "latency":
        return (f"latency: one block's K tile takes ~{d['chain_cycles']:.0f} cycles alone "
                f"(global loads {d['global_latency_cycles']:.0f} cycles of latency behind "
                f"{d['prefetch']} tile(s) of prefetch and {d['transfer_cycles']:.0f} of transfer;"
                f" compute {d['compute_cycles']:.0f}; refill after barriers "
                f"{d['refill_cycles']:.0f}), with {occ.warps_per_sm} warps per SM "
                f"({occ.blocks_per_sm} block(s), limited by {occ.limiter}) to overlap it")
    if limiter == "tensor":
        wgmma = sum(s.executions for s in trace.sites.values() if s.space == "wgmma")
        if wgmma and d["tensor_idle_cycles"]:
            return (f"the tensor pipe: {wgmma / WARPGROUP_WARPS / 1e6:,.2f}M warpgroup wgmma "
                    f"at {d['clock_hz'] / 1e9:.2f} GHz, idle {d['tensor_idle_cycles']:.0f} of "
                    f"every {d['chain_cycles']:.0f} cycles of a K tile: the ring of "
                    f"{d['prefetch'] + 1} stages, each consumed, released, handed to the "
                    "producer and copied again, turns slower than the K tiles' wgmma")
        if wgmma:
            return (f"the tensor pipe: {wgmma / WARPGROUP_WARPS / 1e6:,.2f}M warpgroup wgmma "
                    f"at {d['clock_hz'] / 1e9:.2f} GHz, the clock under a wgmma load")
        return f"the tensor pipe: {sum(s.mma for s in trace.sites.values()) / 1e6:,.1f}M mma"
    if limiter == "l1":
        lines = sum(s.lines for s in trace.sites.values())
        shared = sum(s.wavefronts for s in trace.sites.values())
        return (f"L1's data pipe: {lines / 1e6:,.1f}M wavefronts of global loads and stores "
                f"(one per 128-byte line a request touches) and {shared / 1e6:,.1f}M of shared "
                "memory")
    if limiter == "l2" and d["by_requests"]:
        words = {"off lines": "rows off 128-byte lines, a row pitch not a multiple of 128 "
                              "bytes, several each",
                 "short": "B's 64-byte rows one each, as SMs asking together do not share them"}
        said = [words[c] for c in d["request_causes"] if c in words]
        if d["edge_requests"]:
            said.append(f"the zero fill of boxes hanging past the matrix's last row worth "
                        f"{d['edge_requests'] / 1e6:,.2f}M more")
        because = f" ({'; '.join(said)})" if said else ""
        return (f"L2's read requests: {d['l2_requests'] / 1e6:,.2f}M for TMA's box rows"
                f"{because}, at {g[REQUESTS] / 1e9:.0f}G a second")
    if limiter == "l2" and d.get("lookup_share"):
        return (f"L2's lookups: {d['l2_bytes'] / 1e9:,.2f} GB of TMA copies, of which L2 looks "
                f"up {d['lookup_share']:.0%} (the SMs of a GPC that ask for a line together "
                f"share a request), at its read bandwidth; {d['dram_bytes'] / 1e9:,.2f} GB "
                "from DRAM")
    if limiter == "dram" and d["dram_in_flight_bytes"]:
        return (f"DRAM's stream: {d['dram_bytes'] / 1e9:,.2f} GB at "
                f"{d['dram_bytes_per_s'] / 1e12:.2f} TB/s, the rate "
                f"{d['dram_in_flight_bytes'] / 1e6:.1f} MB of copies in flight from DRAM keep up "
                f"(the busy SMs' {d['prefetch']} stages ahead)")
    if limiter in ("l2", "dram"):
        return (f"{limiter} bandwidth: {d['l2_bytes'] / 1e9:,.2f} GB through L2, "
                f"{d['dram_bytes'] / 1e9:,.2f} GB from DRAM")
    return f"instruction issue: {sum(s.executions for s in trace.sites.values()) / 1e6:,.1f}M " \
           f"warp instructions counted ({len(t)} counters)"


def _conflicted(trace) -> bool:
    """Whether bank conflicts add a tenth or more to the shared-memory wavefronts."""
    sites = trace.sites.values()
    return sum(s.wavefronts for s in sites) >= 1.1 * sum(s.ideal for s in sites)


def _advice(limiter: str, occ: Occupancy, prefetch: int, wgmma: bool, conflicted: bool) -> str:
    if limiter == "tensor" and wgmma:
        return ("the tensor pipe runs at its rate: smaller types (fp8) or a higher clock (less "
                "power spent moving data: cluster multicast) go further")
    if limiter == "shared" and not conflicted:
        return ("fewer shared-memory reads per mma: larger warp tiles reuse each fragment, "
                "or wgmma reads its operands from shared memory itself")
    if limiter == "l2" and wgmma:
        return "one copy of a tile for several blocks (cluster multicast), or larger tiles"
    return {
        "shared": "remove the bank conflicts (a swizzled or padded shared layout)",
        "latency": ("overlap the next tile's global loads with this one's compute (prefetch)"
                    if prefetch == 0 else
                    f"more tiles in flight (a deeper cp.async pipeline) or more warps per SM "
                    f"(fewer registers: {occ.limiter} limits occupancy)"),
        "tensor": "the tensor pipe is the limit: a larger mma shape or wgmma",
        "issue": "fewer instructions per mma (ldmatrix.x4, larger warp tiles)",
        "l1": "fewer, wider global accesses (128-bit, coalesced)",
        "l2": "more reuse per block (larger block tiles)",
        "dram": "more reuse in L2 (block order) or less data (smaller types)",
    }[limiter]
