"""The speed-of-light model: from a `Trace`'s exact counts to a predicted time and a limiter.

Per SM, ``B`` blocks run at once (`occupancy`). For one block the trace gives the work each
unit must do, in cycles at that unit's full rate (GPU description, `tcsim.perf.gpus`):

- tensor: mma instructions / the SM's rate for their shape and types;
- shared: shared-memory wavefronts (loads, stores, cp.async writes) / wavefronts per cycle;
- l1: global and local sectors through L1 / sectors per cycle;
- issue: the warp instructions the trace counts / the SM's schedulers (a lower bound: address
  arithmetic is not counted).

and the block's latency chain per K tile: a global load's latency (L2 or DRAM, by the reuse
model below) that the schedule hides behind ``prefetch`` tiles of compute, plus after each
barrier the refill of the shared-load -> mma pipeline. An SM finishes a wave of ``B`` blocks in

    max(B x the busiest unit's work, one block's latency chain)

and the kernel takes ``ceil(blocks / (B x SMs))`` waves (the last one may be partly empty: the
tail). Chip-wide, L2 bytes / L2 bandwidth and DRAM bytes / DRAM bandwidth bound the time too.
DRAM bytes come from an L2 reuse model: the blocks of one wave read each A row-panel and B
column-panel they share once; successive waves read theirs again unless A and B fit in L2.

The largest term is the limiter. Every constant comes from the GPU description; nothing is
fitted to a kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .gpus import Gpu
from .gpus import gpu as gpu_named
from .occupancy import Occupancy, occupancy, twin_registers

SECTOR = 32


@dataclass
class Explanation:
    """What `Trace.explain` returns: ``seconds`` (predicted), ``limiter`` (a short name) and
    the per-unit breakdown ``units`` (seconds each would need alone)."""

    kernel: str
    problem: tuple[int, int, int]
    gpu: str
    occupancy: Occupancy
    units: dict[str, float]  # seconds at full rate: tensor, shared, l1, issue, l2, dram
    latency: float  # seconds: the latency chains of every wave
    waves: int
    full_waves: float  # blocks / (B x SMs): the tail is waves - full_waves
    seconds: float
    limiter: str
    reason: str  # the limiter in words
    advice: str  # what the next rung should change
    details: dict = field(default_factory=dict)

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
        for unit, seconds in [*self.units.items(), ("latency", self.latency)]:
            lines.append(f"  {unit:<8} {seconds * 1e3:9.3f} ms  {seconds / self.seconds:6.0%}")
        lines.append(f"  next: {self.advice}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{u}</td><td>{s * 1e3:.3f} ms</td>"
                       f"<td>{s / self.seconds:.0%}</td></tr>"
                       for u, s in [*self.units.items(), ("latency", self.latency)])
        return (f"<b>{self.kernel}</b> {self.problem} on {self.gpu}: "
                f"<b>{self.seconds * 1e3:.3f} ms</b>, limited by <b>{self.limiter}</b><br>"
                f"{self.reason}<table><tr><th>unit</th><th>time</th><th>share</th></tr>{rows}"
                f"</table>next: {self.advice}")


def explain(trace, gpu: str | Gpu = "H100-SXM", registers: int | None = None) -> Explanation:
    """Predict ``trace``'s kernel's time on ``gpu`` (see the module docstring)."""
    from ..kernels import kernel_named

    g = gpu_named(gpu)
    kernel = kernel_named(trace.kernel)
    p = kernel.params(**trace.params)
    if p.producers:  # wgmma, TMA and roles: their rates are not in the GPU description yet
        raise NotImplementedError(
            f"{trace.kernel}: the speed model does not cover warp-specialized wgmma + TMA "
            "kernels yet (issue 17); docs/kernels.md gives their measured speeds and counters")
    M, N, K = trace.problem
    occ = occupancy(g, p.warps, *_registers(kernel, p, g, registers), p.shared_bytes)
    B, sms, hz = occ.blocks_per_sm, int(g["sms"]), g.cycles_per_second
    grid_m, grid_n = M // p.block_m, N // p.block_n
    blocks = grid_m * grid_n
    k_tiles = trace.pipeline.get("k_tiles", K // p.block_k)
    sites = list(trace.sites.values())

    # One block's work per unit, in SM cycles.
    tensor = sum(s.mma / g.tensor_rate(s.instruction) for s in sites if s.space == "tensor")
    shared = sum(s.wavefronts for s in sites) / g["shared_wavefronts_per_cycle"]
    sectors = sum(s.sectors for s in sites if s.space in ("global", "async", "local"))
    l1 = sectors / g["l1_sectors_per_cycle"]
    issue = sum(s.executions for s in sites) / g["schedulers_per_sm"]
    per_block = {u: c / blocks for u, c in
                 (("tensor", tensor), ("shared", shared), ("l1", l1), ("issue", issue))}

    # Chip-wide: L2 and DRAM bytes.
    l2_bytes = sectors * SECTOR
    dram_bytes, dram_share = _dram_bytes(p, M, N, K, B * sms, g)
    # One block's K tile as a chain: its global loads (latency, or this SM's share of L2
    # bandwidth when every SM loads at once) hidden behind `prefetch` tiles of compute, the
    # compute (the block alone: its busiest unit), and after each barrier the refill of the
    # shared-load -> mma pipeline.
    latency_global = g["l2_latency_cycles"] + dram_share * (g["dram_latency_cycles"]
                                                            - g["l2_latency_cycles"])
    tile_bytes = l2_bytes / blocks / max(k_tiles, 1)
    load = max(latency_global, tile_bytes / (g["l2_bytes_per_s"] / sms / hz))
    compute = max(per_block.values()) / max(k_tiles, 1)
    refill = trace.pipeline.get("barriers", 1) * (g["barrier_cycles"]
                                                   + g["shared_latency_cycles"]
                                                   + g["mma_latency_cycles"])
    prefetch = trace.pipeline.get("prefetch", 0)
    chain = (load + compute if prefetch == 0 else max(load / prefetch, compute)) + refill
    latency_block = chain * k_tiles

    waves = math.ceil(blocks / (B * sms))
    busiest = max(per_block, key=per_block.get)
    wave = max(B * per_block[busiest], latency_block)
    units = {u: waves * B * c / hz for u, c in per_block.items()}
    units["l2"] = l2_bytes / g["l2_bytes_per_s"]
    units["dram"] = dram_bytes / g["dram_bytes_per_s"]
    latency = waves * latency_block / hz
    seconds = max(waves * wave / hz, units["l2"], units["dram"])
    candidates = {**units, "latency": latency}
    limiter = max(candidates, key=candidates.get)
    full = blocks / (B * sms)
    details = {"blocks": blocks, "per_block_cycles": per_block, "chain_cycles": chain,
               "global_latency_cycles": latency_global, "load_cycles": load,
               "dram_share": dram_share, "l2_bytes": l2_bytes, "dram_bytes": dram_bytes,
               "prefetch": prefetch}
    reason = _reason(limiter, trace, occ, details, g)
    return Explanation(trace.kernel, (M, N, K), g.key, occ, units, latency, waves, full,
                       seconds, limiter, reason, _advice(limiter, occ, prefetch), details)


def _registers(kernel, p, g: Gpu, registers: int | None) -> tuple[int, str]:
    if registers is not None:
        return int(registers), "the caller"
    found = twin_registers(kernel.source, kernel.entry, kernel.defines(p), g.arch)
    if found is not None:
        return found, "ptxas"
    min_blocks = dict(kernel.blocks_per_sm).get(p.accumulate, 1)
    budget = int(g["registers_per_sm"]) // (p.threads * min_blocks)
    return min(int(g["max_registers_per_thread"]), budget // 8 * 8), "declared budget"


def _dram_bytes(p, M: int, N: int, K: int, concurrent: int, g: Gpu) -> tuple[float, float]:
    """(DRAM bytes, the share of global-load bytes they are). Blocks run in order x (along N)
    first; a wave of ``concurrent`` blocks reads each A row-panel and B column-panel it touches
    once; A and B that fit in L2 together are read once for the whole kernel."""
    a_bytes, b_bytes = p.element_bytes("A"), p.element_bytes("B")
    out = M * N * p.element_bytes("D")
    grid_n, grid_m = N // p.block_n, M // p.block_m
    blocks = grid_m * grid_n
    if (M * K * a_bytes + K * N * b_bytes) <= g["l2_bytes"] / 2:
        reads = M * K * a_bytes + K * N * b_bytes
    else:  # per wave, the distinct (wave, row) and (wave, column) panels
        ids = np.arange(blocks)
        wave = ids // concurrent
        rows = np.unique(wave * grid_m + ids // grid_n).size
        cols = np.unique(wave * grid_n + ids % grid_n).size
        reads = rows * p.block_m * K * a_bytes + cols * p.block_n * K * b_bytes
    loaded = blocks * (p.block_m * K * a_bytes + p.block_n * K * b_bytes)
    return reads + out, reads / loaded


def _reason(limiter: str, trace, occ: Occupancy, d: dict, g: Gpu) -> str:
    t = trace.totals
    if limiter == "shared":
        wave = sum(s.wavefronts for s in trace.sites.values())
        ideal = sum(s.ideal for s in trace.sites.values())
        return (f"shared-memory bank conflicts: {wave / 1e6:,.1f}M wavefronts, "
                f"{wave / max(ideal, 1):.1f}x the ideal {ideal / 1e6:,.1f}M")
    if limiter == "latency":
        return (f"latency: each K tile waits ~{d['load_cycles']:.0f} cycles for its global "
                f"loads behind {d['prefetch']} tile(s) of prefetch, with "
                f"{occ.warps_per_sm} warps per SM ({occ.blocks_per_sm} block(s), limited by "
                f"{occ.limiter}) to cover it")
    if limiter == "tensor":
        return f"the tensor pipe: {sum(s.mma for s in trace.sites.values()) / 1e6:,.1f}M mma"
    if limiter in ("l2", "dram", "l1"):
        return (f"{limiter} bandwidth: {d['l2_bytes'] / 1e9:,.2f} GB through L2, "
                f"{d['dram_bytes'] / 1e9:,.2f} GB from DRAM")
    return f"instruction issue: {sum(s.executions for s in trace.sites.values()) / 1e6:,.1f}M " \
           f"warp instructions counted ({len(t)} counters)"


def _advice(limiter: str, occ: Occupancy, prefetch: int) -> str:
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
