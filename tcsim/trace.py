"""`tcsim.trace`: a kernel's schedule run on addresses only, counted per instruction site.

The tracer is symbolic. Shared-memory addresses do not depend on the block's position, and
global sector counts do not either while every block and K-tile shift is a multiple of 32
bytes (checked), so it runs one block (on a ragged shape of a TMA kernel, one of each kind:
inside, on the last row or column of tiles, in the corner, each weighed by how many there
are). The K loop repeats itself: the tracer visits its first, one middle and its last
iteration and weighs the middle one by the iterations it stands for.
Within an instruction, the warps' and tiles' address patterns are deduplicated up to a shift
by 128 bytes (which moves no access to another bank) before they are counted. So the cost of
a trace does not grow with M * N * K.

`Trace` holds per-site counters and their totals under the names of the Nsight Compute metrics
they predict, so a trace and a profile compare key by key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import numpy as np

from .isa.validate import integer, real_scalar
from .isa.wmma.lowering import element_offsets, hmma_per_wmma, lower
from .isa.wmma.spec import parse_wmma
from .kernels import Kernel, kernel_named
from .kernels.checks import check_mode
from .kernels.hopper import TMA_LOAD, TMA_MULTICAST, TMA_STORE, WGMMA
from .kernels.machine import CP_ASYNC, LD_SHARED, OFF, ST_SHARED, Machine
from .kernels.params import GemmParams
from .kernels.roles import run_in_turn
from .memory.access import access, parse_instruction
from .memory.descriptors import MatrixDescriptor, SwizzleMode
from .memory.local import SECTOR, local_requests, local_sectors
from .progress import progress

# ptxas (nvcc 13.0, sm_90) opens every straight-line run of cp.async (LDGSTS) with three
# ``@!PT LDS RZ, [RZ]``: predicated off, so no thread loads, but each warp issues them and
# Nsight Compute counts them among shared-load instructions (docs/seeds.md).
CP_ASYNC_PADDING_LDS = 3
CP_ASYNC_PADDING = "ptxas: @!PT LDS before cp.async"
LINE = 128  # bytes: an L1 cache line
BANK_PERIOD = 128  # bytes: shifting a warp's addresses by this keeps every bank

# Trace totals, keyed by the Nsight Compute (2025.3) metric each predicts.
SHARED_LD_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SHARED_LD_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SHARED_ST_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
SHARED_ST_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
LDSM = "smsp__inst_executed_op_ldsm.sum"
SHARED_LD_INST = "smsp__inst_executed_op_shared_ld.sum"
SHARED_ST_INST = "smsp__inst_executed_op_shared_st.sum"
HMMA = "smsp__inst_executed_pipe_tensor_op_hmma.sum"
GLOBAL_LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
GLOBAL_LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
GLOBAL_ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
GLOBAL_ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
# cp.async.cg (LDGSTS.BYPASS) is counted apart from loads and stores, by SASS-level metrics.
LDGSTS_INST = "smsp__sass_inst_executed_op_ldgsts_cache_bypass.sum"
LDGSTS_REQUESTS = "smsp__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum"
LDGSTS_SECTORS = "smsp__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum"
LDGSTS_WAVEFRONTS = \
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts_cache_bypass.sum"
LDGSTS_CONFLICTS = \
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts_cache_bypass.sum"
LOCAL_LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum"
LOCAL_LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"
LOCAL_ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum"
LOCAL_ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"
# Hopper's sites (kernel7, kernel8): wgmma as warp instructions on the tensor pipe and as the
# shared-memory wavefronts of its operand reads, TMA loads as instructions and as the bytes
# they bring from L2.
GMMA = "smsp__inst_executed_pipe_tensor_op_gmma.sum"
TMA_LD_INST = "smsp__inst_executed_op_tma_ld.sum"
TMA_LD_BYTES = "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"
GMMA_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum"
GMMA_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum"
TMA_ST_INST = "smsp__inst_executed_op_tma_st.sum"
TMA_ST_BYTES = "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum"
HOPPER_METRICS = (GMMA, TMA_LD_INST, TMA_LD_BYTES, GMMA_WAVEFRONTS, GMMA_CONFLICTS, TMA_ST_INST,
                  TMA_ST_BYTES)
METRICS = (LDSM, SHARED_LD_WAVEFRONTS, SHARED_LD_CONFLICTS, SHARED_ST_INST, SHARED_ST_WAVEFRONTS,
           SHARED_ST_CONFLICTS, HMMA, GLOBAL_LD_REQUESTS, GLOBAL_LD_SECTORS, GLOBAL_ST_REQUESTS,
           GLOBAL_ST_SECTORS)
ASYNC_METRICS = (LDGSTS_INST, LDGSTS_REQUESTS, LDGSTS_SECTORS, LDGSTS_WAVEFRONTS, LDGSTS_CONFLICTS)
LOCAL_METRICS = (LOCAL_LD_REQUESTS, LOCAL_LD_SECTORS, LOCAL_ST_REQUESTS, LOCAL_ST_SECTORS)


@dataclass
class Site:
    """Counters of one instruction site, summed over every block, warp and iteration."""

    name: str
    instruction: str
    executions: int = 0  # warp-level instructions
    wavefronts: int = 0  # shared memory
    ideal: int = 0
    requests: int = 0  # global memory
    sectors: int = 0
    lines: int = 0  # global loads and stores: 128-byte lines a request touches, summed
    l2_sectors: int = 0  # the sectors that go on to L2: all but L1's hits
    mma: int = 0  # tensor-core instructions
    ptx: str = ""  # the PTX instruction when ptxas makes ``instruction`` of it (wmma)
    # A cluster's multicast seen from a block it lands in but that did not issue it
    # (`Machine.tma_received`): no instruction, no L2 read of its own; its bytes arrive.
    received: bool = False

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    @property
    def space(self) -> str:
        inst = self.instruction
        if self.received:
            return "tma_received"
        if inst.startswith("cp.async.bulk"):
            return "tma_store" if ".global.shared" in inst else "tma"
        if inst.startswith("wgmma"):
            return "wgmma"
        return "async" if inst.startswith("cp.async") else "global" if ".global" in inst else \
            "local" if ".local" in inst else "tensor" if inst.startswith("mma") else "shared"

    def metrics(self) -> dict[str, int]:
        """This site's contribution to the Nsight Compute totals."""
        inst = self.instruction
        if self.space == "wgmma":  # ncu's hmma-pipe count includes HGMMA (measured)
            return {GMMA: self.executions, HMMA: self.executions,
                    GMMA_WAVEFRONTS: self.wavefronts, GMMA_CONFLICTS: self.conflicts}
        if self.space == "tma":
            return {TMA_LD_INST: self.executions, TMA_LD_BYTES: self.sectors * SECTOR}
        if self.space == "tma_received":
            # Nsight Compute counts a multicast's bytes in every SM they reach: cuBLAS's
            # 192x192 kernels in clusters of 2 counted exactly the bytes of unshared tiles
            # (docs/kernels.md, "Clusters"); the L2 read is the issuer's alone
            return {TMA_LD_BYTES: self.sectors * SECTOR}
        if self.space == "tma_store":
            return {TMA_ST_INST: self.executions, TMA_ST_BYTES: self.sectors * SECTOR}
        if self.space == "tensor":
            return {HMMA: self.mma}
        if self.space == "async":  # its global side also counts among global loads (measured)
            return {LDGSTS_INST: self.executions, LDGSTS_REQUESTS: self.requests,
                    LDGSTS_SECTORS: self.sectors, LDGSTS_WAVEFRONTS: self.wavefronts,
                    LDGSTS_CONFLICTS: self.conflicts, GLOBAL_LD_REQUESTS: self.requests,
                    GLOBAL_LD_SECTORS: self.sectors}
        if self.space == "global":
            side = "ld" if inst.startswith("ld") else "st"
            return {GLOBAL_LD_REQUESTS if side == "ld" else GLOBAL_ST_REQUESTS: self.requests,
                    GLOBAL_LD_SECTORS if side == "ld" else GLOBAL_ST_SECTORS: self.sectors}
        if self.space == "local":
            side = "ld" if inst.startswith("ld") else "st"
            return {LOCAL_LD_REQUESTS if side == "ld" else LOCAL_ST_REQUESTS: self.requests,
                    LOCAL_LD_SECTORS if side == "ld" else LOCAL_ST_SECTORS: self.sectors}
        if parse_instruction(inst).is_store:
            out = {SHARED_ST_WAVEFRONTS: self.wavefronts, SHARED_ST_CONFLICTS: self.conflicts}
            if inst.startswith("st."):
                out[SHARED_ST_INST] = self.executions
            return out
        out = {SHARED_LD_WAVEFRONTS: self.wavefronts, SHARED_LD_CONFLICTS: self.conflicts}
        out[LDSM if inst.startswith("ldmatrix") else SHARED_LD_INST] = self.executions
        return out


@dataclass
class Trace:
    """Per-site counters of one kernel on one problem size; see the module docstring."""

    kernel: str
    problem: tuple[int, int, int]
    params: dict
    sites: dict[str, Site] = field(default_factory=dict)
    problems: list = field(default_factory=list)  # SimulationErrors, with checks="collect"
    # What the speed model needs of the K loop: "k_tiles", "prefetch" (how many K tiles ahead
    # of the one computed a global load or copy reads), "barriers" (per K tile) and
    # "fragments_ahead" (1 when fragments are loaded a warp_k step before their mma) and
    # "local_bytes_per_thread".
    pipeline: dict = field(default_factory=dict)
    beta: float = 0.0  # the epilogue's: with 0, kernel10 reads no C
    # The Kernel traced (a user's too): what `explain` reads its parameters and shared memory
    # from. None for a trace made by hand: then ``kernel`` is looked up by name.
    kernel_object: Kernel | None = field(default=None, repr=False, compare=False)

    def explain(self, gpu: str = "H100-SXM", registers: int | None = None):
        """Why this kernel takes the time it does on ``gpu``: `tcsim.perf.Explanation`
        (predicted seconds, the limiter, the time each unit needs)."""
        from .perf.model import explain

        return explain(self, gpu, registers)

    @property
    def totals(self) -> dict[str, int]:
        """Predicted Nsight Compute counters (the cp.async and local-memory ones only when the
        kernel has any)."""
        return totals(self.sites.values())

    def to_dict(self) -> dict:
        return {"kernel": self.kernel, "problem": list(self.problem), "params": self.params,
                "beta": self.beta,
                "sites": [dict(asdict(s), conflicts=s.conflicts) for s in self.sites.values()],
                "totals": self.totals}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        M, N, K = self.problem
        head = ("site", "instruction", "executed", "wavefronts", "ideal", "conflicts", "sectors",
                "mma")
        rows = [(s.name, f"{s.ptx} -> {s.instruction}" if s.ptx else s.instruction,
                 s.executions,
                 *((s.wavefronts, s.ideal, s.conflicts) if s.space in ("shared", "async")
                   else ("",) * 3),
                 s.sectors if s.space in ("global", "async", "local") else "", s.mma or "")
                for s in self.sites.values()]
        p = self.params
        tiles = f"{p['block_m']}x{p['block_n']}x{p['block_k']} tiles"  # overrides show here
        lines = [f"{self.kernel} on M={M} N={N} K={K}, {tiles}", *_table(head, rows), "",
                 "totals:"]
        width = max(len(k) for k in self.totals)
        lines += [f"  {k:<{width}}  {v:>14,}" for k, v in self.totals.items()]
        return "\n".join(lines)

    def compare(self, other: Trace) -> str:
        """Two traces side by side: each site's wavefronts and conflicts, then the totals."""
        if not isinstance(other, Trace):
            raise TypeError(f"compare takes another Trace (tcsim.trace(kernel, M, N, K)), "
                            f"got {other!r}")
        head = ("site", f"{self.kernel} wavefronts", "conflicts", f"{other.kernel} wavefronts",
                "conflicts")
        rows = []
        for name in dict.fromkeys([*self.sites, *other.sites]):
            a, b = self.sites.get(name), other.sites.get(name)
            if (a or b).space not in ("shared", "async", "wgmma"):  # those with wavefronts
                continue
            rows.append((name, *_pair(a), *_pair(b)))
        mine, theirs = self.totals, other.totals
        totals = [(key, f"{mine.get(key, 0):,}", f"{theirs.get(key, 0):,}")
                  for key in dict.fromkeys([*mine, *theirs])]
        problems = (f"M, N, K = {self.problem}" if self.problem == other.problem
                    else f"M, N, K = {self.problem} and {other.problem}")
        return "\n".join([f"{self.kernel} vs {other.kernel} on {problems}",
                          *_table(head, rows), "", *_table(("metric", self.kernel, other.kernel),
                                                           totals)])


def totals(sites) -> dict[str, int]:
    """The Nsight Compute totals of ``sites`` (`Site`s): `METRICS`, and the cp.async,
    local-memory and Hopper ones when a site has any."""
    sites = list(sites)
    spaces = {s.space for s in sites}
    out = dict.fromkeys(METRICS + (ASYNC_METRICS if "async" in spaces else ()) +
                        (LOCAL_METRICS if "local" in spaces else ()) +
                        (HOPPER_METRICS if spaces & {"tma", "tma_store", "wgmma"} else ()), 0)
    for site in sites:
        for key, value in site.metrics().items():
            out[key] = out.get(key, 0) + value
    return out


def _pair(site: Site | None) -> tuple:
    return (f"{site.wavefronts:,}", f"{site.conflicts:,}") if site else ("-", "-")


def _table(head: tuple, rows: list[tuple]) -> list[str]:
    cells = [tuple(f"{c:,}" if isinstance(c, int) else str(c) for c in row) for row in rows]
    widths = [max([len(str(h)), *(len(r[i]) for r in cells)]) for i, h in enumerate(head)]
    text = ("site", "instruction", "metric")  # left-aligned columns; numbers go right
    fmt = "  ".join(f"{{:<{w}}}" if h in text else f"{{:>{w}}}" for h, w in zip(head, widths))
    return [fmt.format(*head), fmt.format(*("-" * w for w in widths)),
            *(fmt.format(*r) for r in cells)]


def _distinct(sorted_lanes: np.ndarray) -> int:
    """Distinct values per row of ``sorted_lanes`` (each row sorted), summed over the rows."""
    return int((1 + (np.diff(sorted_lanes, axis=1) != 0).sum(axis=1)).sum())


class Counter:
    """Per-site counters of warp-wide memory instructions: what the tracer counts with, and
    `count_wmma` alone. ``times`` is how many executions one counted instruction stands for."""

    def __init__(self) -> None:
        self.sites: dict[str, Site] = {}
        self.blocks = 1
        self.weight = 1
        self.local_bytes = 0  # a thread's local memory: the highest byte it touches, plus one
        self.l1_held: dict[str, set] = {}  # per site, the sectors L1-cached loads brought in

    def _site(self, name: str, instruction: str, ptx: str = "") -> Site:
        site = self.sites.setdefault(name, Site(name, instruction, ptx=ptx))
        if site.instruction != instruction:
            raise ValueError(f"site {name!r} issues {site.instruction}, not {instruction}")
        return site

    @property
    def times(self) -> int:
        """How many executions one traced instruction stands for."""
        return self.blocks * self.weight

    def _count_global(self, site, spelling, addresses, ptx: str = "", active=None) -> None:
        """Count a global access's requests, 32-byte sectors and 128-byte lines (``addresses``
        in bytes; no lane's access crosses a sector). L1's data pipe moves one line of a request
        per wavefront: the lines are its work (measured, docs/performance.md). ``active``
        (like ``addresses``): the lanes not predicated off; a warp with none makes no request
        (an assumption the hw tests check: docs/kernels.md, "Any shape")."""
        lanes = addresses.reshape(-1, 32)
        if active is not None:
            on = np.asarray(active).reshape(-1, 32)
            lanes = np.where(on, lanes, lanes[np.arange(len(lanes)), on.argmax(axis=1)][:, None])
            lanes = lanes[on.any(axis=1)]
        lanes = lanes // SECTOR
        lanes.sort(axis=1)
        sectors = _distinct(lanes)
        s = self._site(site, spelling, ptx)
        if not spelling.startswith("cp.async"):  # cp.async's executions count on its shared side
            s.executions += lanes.shape[0] * self.times
            s.lines += _distinct(lanes // (LINE // SECTOR)) * self.times
        s.requests += lanes.shape[0] * self.times
        s.sectors += sectors * self.times
        if spelling.startswith("ld.global") and ".cg" not in spelling:  # cached in L1
            held = self.l1_held.setdefault(site, set())
            new = set(np.unique(lanes).tolist()) - held
            held |= new
            s.l2_sectors += len(new) * self.times
        else:
            s.l2_sectors += sectors * self.times

    def _count_shared(self, site: str, spelling: str, addresses: np.ndarray,
                      sources: np.ndarray | None = None, ptx: str = "", active=None) -> None:
        """``active`` (bools, shaped like ``addresses`` with the blocks axis in front): the
        lanes not predicated off; a warp with none issues nothing (measured with kernel9's
        staged epilogue, docs/kernels.md "Any shape")."""
        lanes = addresses.reshape(-1, 32)
        on = np.ones(lanes.shape, bool)
        if active is not None:
            on = np.asarray(active).reshape(-1, 32)
            lanes = np.broadcast_to(addresses, np.shape(active)).reshape(-1, 32)[on.any(axis=1)]
            on = on[on.any(axis=1)]
        lowest = np.where(on, lanes, lanes.max(initial=0)).min(axis=1, keepdims=True)
        shifted = np.where(on, lanes - lowest // BANK_PERIOD * BANK_PERIOD, -1)
        if sources is not None:  # cp.async: where in global memory matters too (access())
            src = np.asarray(sources).reshape(-1, 32)
            src = src - src.min(axis=1, keepdims=True) // BANK_PERIOD * BANK_PERIOD
            shifted = np.concatenate([shifted, src], 1)
        patterns, counts = np.unique(shifted, axis=0, return_counts=True)
        s = self._site(site, spelling, ptx)
        for pattern, count in zip(patterns, counts):
            lanes_of = [None if x < 0 else int(x) for x in pattern[:32]]
            a = access(spelling, lanes_of, sources=None if sources is None else pattern[32:])
            s.wavefronts += a.wavefronts * int(count) * self.times
            s.ideal += a.ideal * int(count) * self.times
        s.executions += lanes.shape[0] * self.times

    def _count_local(self, site, spelling, offsets, width) -> None:
        self.local_bytes = max(self.local_bytes, int(np.max(offsets)) + width)
        lanes = offsets.reshape(-1, 32)
        s = self._site(site, spelling)
        s.executions += lanes.shape[0] * self.times
        s.requests += lanes.shape[0] * local_requests(width) * self.times
        sectors = int(local_sectors(lanes, width).sum()) * self.times
        s.sectors += sectors
        s.l2_sectors += sectors  # local memory's hits in L1 are not modelled

    def _count_lowered(self, site, spec, operand, layout, space, stride, addresses) -> None:
        """Count the memory instructions a wmma.load or wmma.store becomes (docs/wmma.md);
        ``addresses``: the byte addresses (..., 32, elements) of each lane's elements."""
        size = spec.element_bytes(operand)
        ptx = spec.load_ptx(operand, layout, space)
        origin = addresses[..., 0, :1] - element_offsets(spec, operand, layout, stride)[0, 0] * size
        count = self._count_global if space == "global" else self._count_shared
        for inst in lower(spec, operand, layout, space, stride):
            count(site, inst.spelling, origin + inst.offsets * size, ptx=ptx)


def count_wmma(qualifier: str, operand: str, layout: str, space: str, stride: int,
               origin: int = 0) -> dict[str, int]:
    """Predicted Nsight Compute totals of one warp's ``wmma.load.<operand>`` (``"d"``:
    ``wmma.store.d``) of ``qualifier``, in ``layout`` ("row"/"col") from or to ``space``
    ("global"/"shared"), rows ``stride`` elements apart, the fragment's element (0, 0) at byte
    ``origin`` (of a 128-byte-aligned allocation)."""
    spec = parse_wmma(qualifier)
    size = spec.element_bytes(operand) if operand in ("a", "b", "c", "d") else 1
    # CUDA's rules for wmma's ldm and pointer: 16-byte multiples, a 256-bit aligned address.
    stride = integer(stride, "count_wmma stride (ldm, in elements)", minimum=1)
    origin = integer(origin, "count_wmma origin (bytes)", minimum=0)
    if stride * size % 16:
        raise ValueError(f"count_wmma: stride {stride} ({stride * size} bytes) must be a "
                         f"multiple of 16 bytes (wmma's ldm rule)")
    if origin % 32:
        raise ValueError(f"count_wmma: origin {origin} must be a multiple of 32 bytes (wmma "
                         f"takes a 256-bit aligned pointer)")
    counter = Counter()
    offsets = element_offsets(spec, operand, layout, stride)
    counter._count_lowered("wmma", spec, operand, layout, space, stride,
                           origin + offsets * spec.element_bytes(operand))
    return totals(counter.sites.values())


def _row_addresses(addresses: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """ldmatrix/stmatrix: the lanes that supply rows keep their addresses; the others' are
    ignored (they repeat lane 0's, which adds no wavefront)."""
    return np.where(np.arange(32) < rows.shape[-1], addresses, addresses[..., :1])


class Tracer(Counter, Machine):
    """A machine that runs block (0, 0) on zero-valued registers and counts each site.

    Race and initialization checks need every K iteration, so they run only when the trace is
    exhaustive (``checks`` other than "off"); address checks run always."""

    def __init__(self, kernel: str, params: GemmParams, M: int, N: int, K: int,
                 exhaustive: bool = False, checks: str = "raise", beta: float = 0.0,
                 shared_bytes: int | None = None) -> None:
        self.exhaustive = exhaustive
        Counter.__init__(self)
        Machine.__init__(self, kernel, params, M, N, K, checks if exhaustive else "off",
                         shared_bytes)
        self.beta = np.float32(beta)  # what the schedule sees: with 0 kernel10 reads no C
        self.report.mode = check_mode(checks)  # address errors follow it in either case
        for name, elements in (("block_k", params.block_k), ("block_n", params.block_n)):
            if elements * params.element_bytes("A") % SECTOR:
                raise ValueError(f"tcsim.trace counts one block: {name}={elements} must be a "
                                 f"multiple of {SECTOR // params.element_bytes('A')} so every "
                                 f"block sees the same sectors")
        grid_n, grid_m = params.grid(self.M, self.N)  # checked ints, numpy's converted
        self.grid = (grid_m, grid_n)
        self.blocks = 1 if exhaustive else grid_m * grid_n
        self.copying = False  # in a run of cp.async (see _copy_async)
        self.k = None  # the K tile of the loop iteration being traced
        self.prefetch = 0
        self.barriers = 0  # barriers inside the K loop, weighted like everything else
        self.fragments_early = 0  # 1: fragments are loaded a warp_k step ahead of their mma

    def begin_blocks(self, rows, cols, split: int = 0) -> None:
        if self.report.mode == "off" or self.exhaustive:
            super().begin_blocks(rows, cols, split)
        else:  # representative iterations: no race or initialization bookkeeping
            Machine.begin_blocks(self, rows, cols, split)
            self.checker = None

    def k_tiles(self, start: int = 0, stop: int | None = None) -> Iterator[int]:
        stop = self.k_tile_count if stop is None else stop
        n = stop - start
        visits = [(start, 1), (start + 1, n - 2), (stop - 1, 1)] \
            if n >= 3 and not self.exhaustive else [(k, 1) for k in range(start, stop)]
        for k, weight in visits:
            self.weight, self.k = weight, k
            self.l1_held.clear()  # a K tile's loads hit L1 in that tile only
            yield k
        self.weight, self.k = 1, None
        self.l1_held.clear()

    def global_elements(self, site, operand, rows, cols, k_tile, vector, clip=False):
        if self.k is not None and operand in ("A", "B"):
            self.prefetch = max(self.prefetch, k_tile - self.k)
        return super().global_elements(site, operand, rows, cols, k_tile, vector, clip)

    def _site(self, name: str, instruction: str, ptx: str = "") -> Site:
        if not instruction.startswith("cp.async"):
            self.copying = False
        return super()._site(name, instruction, ptx)

    def fragments_ahead(self) -> None:
        self.fragments_early = 1

    def sync(self) -> None:
        self.copying = False
        if self.k is not None:
            self.barriers += self.weight
        super().sync()

    def wait_group(self, pending: int) -> None:
        self.copying = False
        super().wait_group(pending)

    def _bytes(self, operand: str, offsets: np.ndarray) -> np.ndarray:
        return offsets * self.params.element_bytes(operand)

    def _load_global(self, site, spelling, operand, offsets, vector):
        self._count_global(site, spelling, self._bytes(operand, offsets), active=offsets != OFF)
        return np.zeros(offsets.shape + (vector * self.params.element_bytes(operand) // 4,),
                        np.uint32)

    def _store_global(self, site, spelling, operand, offsets, registers):
        self._count_global(site, spelling, self._bytes(operand, offsets), active=offsets != OFF)

    def _load_shared(self, site, spelling, addresses, width, active=None):
        self._count_shared(site, spelling, addresses, active=active)
        return np.zeros((1,) + addresses.shape + (width // 4,), np.uint32)

    def _load_local(self, site, spelling, offsets, width):
        self._count_local(site, spelling, offsets, width)
        return np.zeros((1,) + offsets.shape + (width // 4,), np.uint32)

    def _store_local(self, site, spelling, offsets, registers):
        self._count_local(site, spelling, offsets, 4 * registers.shape[-1])

    def _wmma_load(self, site, spec, operand, layout, space, stride, matrix, offsets):
        self._count_lowered(site, spec, operand, layout, space, stride,
                            self._fragment_bytes(spec, operand, space, offsets))
        blocks = (1,) if space == "shared" else ()  # global offsets have the blocks axis
        return np.zeros(blocks + offsets.shape[:-1] + (spec.registers(operand),), np.uint32)

    def _wmma_store(self, site, spec, layout, space, stride, matrix, offsets, registers):
        self._count_lowered(site, spec, "d", layout, space, stride,
                            self._fragment_bytes(spec, "d", space, offsets))

    @staticmethod
    def _fragment_bytes(spec, operand, space, offsets):
        """Byte addresses of fragment elements: global offsets are in elements."""
        return offsets * spec.element_bytes(operand) if space == "global" else offsets

    def _wmma_mma(self, site, spec, a, b, c):
        batch = np.broadcast_shapes(*(np.shape(x)[:-2] for x in (a, b, c)))
        hmma, qualifier = hmma_per_wmma(spec)
        s = self._site(site, "mma.sync.aligned." + qualifier, spec.ptx)
        count = int(np.prod(batch[1:], dtype=np.int64)) * hmma * self.times
        s.executions += count
        s.mma += count
        return np.zeros(np.broadcast_shapes(np.shape(c), batch + np.shape(c)[-2:]), np.uint32)

    def _store_shared(self, site, addresses, registers):
        self._count_shared(site, ST_SHARED, addresses)

    def _copy_async(self, site, operand, offsets, addresses):
        if not self.copying:  # docs/seeds.md: three LDS that no thread executes
            pad = self._site(f"{site} padding", LD_SHARED, CP_ASYNC_PADDING)
            pad.executions += CP_ASYNC_PADDING_LDS * addresses.shape[0] * self.times
            self.copying = True
        source = self._bytes(operand, offsets)
        self._count_global(site, CP_ASYNC, source)
        self._count_shared(site, CP_ASYNC, addresses, source)

    def _ldmatrix(self, site, spelling, addresses, rows):
        self._count_shared(site, spelling, _row_addresses(addresses, rows))
        return np.zeros((1,) + addresses.shape + (rows.shape[-1] // 8,), np.uint32)

    def _stmatrix(self, site, spelling, addresses, rows, registers):
        self._count_shared(site, spelling, _row_addresses(addresses, rows))

    def _tma_load(self, site, operand, tensor_map, destination, rows, cols, barriers, index,
                  multicast=False):
        self._count_box(self._site(site, TMA_MULTICAST if multicast else TMA_LOAD),
                        tensor_map.load_sectors(rows, cols))

    def _tma_received(self, site, operand, tensor_map, destination, rows, cols, barriers,
                      index):
        s = self._site(site, TMA_MULTICAST)
        s.received = True
        s.sectors += tensor_map.load_sectors(rows, cols) * self.times

    def _tma_store(self, site, operand, tensor_map, source, rows, cols):
        self._count_box(self._site(site, TMA_STORE), tensor_map.store_sectors(rows, cols))

    def _count_box(self, s: Site, sectors: int) -> None:
        """One TMA copy, issued by one thread: one warp instruction and its sectors."""
        s.executions += self.times
        s.requests += self.times
        s.sectors += sectors * self.times

    def _wait(self, barriers, index, parity):
        return iter(())  # waits are free to count

    def _wgmma(self, site, spec, desc_a, desc_b, acc, trans_b):
        s = self._site(site, WGMMA + spec.qualifier)
        s.executions += 4 * desc_a.size * self.times  # each warp of the warpgroup issues it
        modes = {MatrixDescriptor.decode(int(d)).swizzle for d in desc_a}
        b_modes = {MatrixDescriptor.decode(int(d)).swizzle for d in desc_b}
        if modes == {SwizzleMode.B128} and (b_modes == modes or (
                trans_b and b_modes == {SwizzleMode.B64})):
            # Measured (docs/kernels.md): 128-byte swizzled operands are read in wavefronts of
            # 128 bytes, without conflicts, and so is an MN-major B under the 64-byte swizzle
            # (the 96-wide tiles); other layouts are not modeled.
            operand_bytes = sum(rows * spec.k * spec.format(op).storage_bits // 8
                                for op, rows in (("a", spec.m), ("b", spec.n)))
            s.wavefronts += desc_a.size * operand_bytes // BANK_PERIOD * self.times
            s.ideal = s.wavefronts
        return np.zeros((1,) + np.shape(acc)[1:], np.uint32)

    def _run_roles(self, roles):
        run_in_turn(roles)

    def _mma(self, site, a, b, c):
        batch = np.broadcast_shapes(*(np.shape(x)[:-2] for x in (a, b, c)))
        s = self._site(site, "mma.sync.aligned." + self.params.qualifier)
        count = int(np.prod(batch[1:], dtype=np.int64)) * self.times
        s.executions += count
        s.mma += count
        return np.zeros(np.broadcast_shapes(np.shape(c), batch + np.shape(c)[-2:]), np.uint32)


def _tile_kinds(size: int, tile: int, tiles: int, ranks: int = 1) -> list[tuple[int, int]]:
    """(a tile index, how many tiles it stands for) along one dimension: the tiles inside
    count alike; a last tile that the size does not fill (a ragged TMA kernel) apart. Along
    M with clusters (``ranks`` = cluster_m > 1, which divides ``tiles``), the tiles of each
    cluster rank apart too: which of B's boxes a block copies itself depends on its rank."""
    if size % tile == 0 or tiles == 1:
        return [(r, tiles // ranks) for r in range(ranks)]
    inside = [(r, tiles // ranks - (r == ranks - 1)) for r in range(ranks)]
    return [k for k in inside if k[1]] + [(tiles - 1, 1)]


def trace(kernel: Kernel | str, M: int, N: int, K: int, *, exhaustive: bool = False,
          checks: str = "raise", beta: float = 0.0, **params) -> Trace:
    """Count what ``kernel`` costs on an (M, N, K) problem, per instruction site.

    ``params`` override the kernel's tile parameters (block_m, ..., accumulate). ``beta`` is
    the epilogue's, 0 as in `tcsim.run`: only whether it is 0 counts, for kernel10 reads no C
    then (BLAS); give beta=1 for the cost of reading C.
    ``exhaustive=True`` visits every block and every K iteration instead of one block and
    three representative iterations: the same counts, at a cost that grows with the problem;
    it also runs the race and initialization checks (docs/checks.md), which ``checks``
    ("raise", "warn", "collect" into ``Trace.problems``, "off") governs."""
    kernel = kernel_named(kernel)
    if not isinstance(exhaustive, (bool, np.bool_)):
        raise TypeError(f"exhaustive must be True or False, got {exhaustive!r}")
    p = kernel.params(**params)
    tracer = Tracer(kernel.name, p, M, N, K, exhaustive, checks,
                    real_scalar(beta, "beta", dtype=np.float32), kernel.shared_bytes(p))
    if exhaustive:
        blocks = [(r, c, 1) for r in range(tracer.grid[0]) for c in range(tracer.grid[1])]
    else:  # one block of each kind: inside, and on a ragged last row or column of tiles
        blocks = [(r, c, rn * cn)
                  for r, rn in _tile_kinds(tracer.M, p.block_m, tracer.grid[0], p.cluster_m)
                  for c, cn in _tile_kinds(tracer.N, p.block_n, tracer.grid[1])]
    label = f"tcsim.trace {kernel.name} M={tracer.M} N={tracer.N} K={tracer.K}"
    with progress(len(blocks), label) as tick:  # exhaustive traces of large problems take long
        for row, col, count in blocks:
            for split in range(p.splits):  # split-K: each split of the tile, in order
                tracer.blocks = count
                tracer.begin_blocks(np.array([row]), np.array([col]), split)
                kernel.issue(tracer)
                tracer.end_blocks()
            tick(1)
    tiles = tracer.k_tile_count
    pipeline = {"k_tiles": tiles, "prefetch": tracer.prefetch,
                "barriers": tracer.barriers / len(blocks) / max(tiles, 1),
                "fragments_ahead": tracer.fragments_early,
                "local_bytes_per_thread": tracer.local_bytes}
    return Trace(kernel.name, (tracer.M, tracer.N, tracer.K), p.as_dict(), tracer.sites,
                 tracer.report.problems, pipeline, float(tracer.beta), kernel)
