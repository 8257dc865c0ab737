"""The Hopper part of a generated twin (`tcsim.hw.kernels.schedule_twin`): roles, mbarriers,
TMA copies and wgmma, recorded from a schedule and written as calls of ``hopper.cuh``'s device
helpers (and ``wgmma_issue.cuh``'s wgmma).

What the twin does with each, as the hand-written Hopper twins do:

- **roles** (`Machine.run_roles`): two, in order: the producer warpgroup (threads 0..127) and
  the consumer warpgroups after it (`GemmParams(producers=1)`). A role whose every instruction
  is one thread's (TMA copies, arrivals of count 1, waits) runs on its first thread only; the
  other runs on all its threads. With the kernel's options ``PRODUCER_REGISTERS`` and
  ``CONSUMER_REGISTERS`` (kernel7's), each role starts with its ``setmaxnreg``;
- **mbarriers**: initialized by thread 0 outside the roles (then ``fence.mbarrier_init``);
  an arrival of count 1 is one thread's, of count *warps* lane 0's of each issuing warp, of
  count *threads* every thread's; a wait is ``try_wait.parity`` in a loop by every thread of
  its scope, on the schedule's parity;
- **TMA loads**: ``cp.async.bulk.tensor.2d`` from the producer's thread, at the box the
  schedule names (relative to the block's tile and K tile, as the schedule gives it) in the
  tensor map the kernel's ``tensor_maps`` encodes (the launcher passes them after the ladder's
  parameters, ``tensor_<operand>``);
- **wgmma**: m64nNk16 (N a multiple of 32 from 64 to 256; f16 inputs with f16 or f32
  accumulators, bf16 with f32), A K-major and B MN-major from shared memory, each
  warpgroup's descriptors the schedule's own values with the block's shared-memory base
  added (its 1024-byte alignment keeps the swizzle's phase). Accumulators are arrays updated
  in place, as on the GPU: a wgmma takes zeros (`Machine.zeros`) or the D of the last wgmma
  on the same accumulators;
  ``wgmma.fence``, ``commit_group`` and ``wait_group`` where the schedule issues them, each
  fence and wait keeping the compiler from moving the accumulators across it.

Refused, naming the site: TMA stores and bulk groups, TMA copies outside a producer role of
one thread, more or fewer than two roles, mbarriers initialized inside a role or a loop, a
``bar.sync`` inside a role, arrivals by other counts of threads, wgmma of other shapes and
types or with B K-major.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...isa.wgmma import wgmma_fragment
from ...kernels.hopper import BARRIER_BYTES, TMA_LOAD, WGMMA
from ..isa.wgmma_probes import ISSUE_N
from .twin_stream import WARP, Op, Role, flatten

WARPGROUP = 128
# wgmma_issue.cuh's helpers, by (accumulator type, input type): the name's suffix
WGMMA_HELPERS = {("f16", "f16"): "f16", ("f32", "f16"): "f32", ("f32", "bf16"): "bf16"}
ROLE_REGISTERS = (("dec", "PRODUCER_REGISTERS"), ("inc", "CONSUMER_REGISTERS"))


@dataclass
class Accumulators:
    """One wgmma accumulator array of the twin: its registers, their C type, the role that
    holds it (its first thread; None outside roles) and the variables of its current D."""

    registers: int
    ctype: str  # "uint32_t" (f16 pairs) or "float"
    role: int | None
    current: np.ndarray


class HopperRecorder:
    """The Hopper instructions of `schedule_twin.Recorder` (a mixin before `Machine`)."""

    def _hopper_init(self) -> None:
        self.role: Role | None = None
        self.arrays: list[Accumulators] = []
        self.accumulator_of: dict[int, tuple[int, int]] = {}  # variable -> (array, register)
        self._tma_at = (0, 0, 0)

    # ---- roles -----------------------------------------------------------------------------

    def _run_roles(self, roles) -> None:
        p = self.params
        if self.role is not None or self.k is not None:
            raise self._refuse("", "roles inside a role or a K loop")
        if not p.producers:
            raise self._refuse("", "roles in a block without a producer warpgroup (the twin "
                                   "runs them on GemmParams(producers=1)'s warpgroups)")
        if len(roles) != 2:
            raise self._refuse("", f"{len(roles)} roles: the twin runs two, the producer "
                                   f"warpgroup (warps 0-3) and then the consumer warpgroups")
        options = dict(self.kernel_object.options)
        places = ((0, 4 * p.producers), (WARPGROUP * p.producers, 4 * p.consumers))
        for (name, role), (first, warps), (way, option) in zip(roles, places, ROLE_REGISTERS):
            record = Role(str(name), first, warps)
            if option in options:
                record.registers = (way, int(options[option]))
            self.body.append(record)
            self._enter(record)
            try:
                for _ in role:
                    pass
            finally:
                self._enter(None)
            ops = list(flatten(record.body))
            if all(op.issuer == "thread" or op.kind == "mbarrier_wait" for op in ops):
                record.scope = "thread"
                _one_thread(record.body)
            for op in ops:
                if op.kind == "tma_load" and record.scope != "thread":
                    raise self._refuse(op.site, f"a TMA copy in role {record.name!r}, which "
                                                f"also issues warp-wide instructions: the "
                                                f"twin issues TMA copies from a producer role "
                                                f"of one thread (its copies, arrivals of "
                                                f"count 1 and waits)")

    def _enter(self, role: Role | None) -> None:
        """Record into ``role`` (None: back to the block) with its threads issuing."""
        p = self.params
        self.role = role
        self.body = role.body if role else self.stream
        self.first = role.first if role else 0
        self.issuing_warps = role.warps if role else p.warps
        self.thread = self.first + np.arange(self.issuing_warps)[:, None] * WARP + \
            np.arange(WARP)

    # ---- mbarriers -------------------------------------------------------------------------

    def _mbarrier_init(self, name, barriers) -> None:
        if self.role is not None or self.k is not None:
            raise self._refuse(name, "mbarriers initialized inside a role or a K loop (the "
                                     "twin initializes them from thread 0, before the roles)")
        self.body.extend(Op("mbarrier_init", name, "mbarrier.init.shared::cta.b64",
                            args=(barriers.address + BARRIER_BYTES * i, barriers.arrivals),
                            issuer="thread", warps=1) for i in range(barriers.count))
        self.body.append(Op("mbarrier_fence", name, "fence.mbarrier_init.release.cluster",
                            issuer="thread", warps=1))

    def _arrive(self, barriers, index, count, expect_tx) -> None:
        w = self.issuing_warps
        issuer = {1: "thread", w: "lane0", w * WARP: ""}.get(int(count))
        if issuer is None:
            raise self._refuse(barriers.name, f"an arrival of count {count}: the twin arrives "
                                              f"from one thread (1), lane 0 of each of the "
                                              f"{w} issuing warps ({w}) or every thread "
                                              f"({w * WARP})")
        if expect_tx and issuer != "thread":
            raise self._refuse(barriers.name, f"arrive.expect_tx with count {count} (the twin "
                                              f"announces bytes from one thread)")
        spelling = "mbarrier.arrive" + (".expect_tx" if expect_tx else "") + ".shared::cta.b64"
        self.body.append(Op("arrive", barriers.name, spelling,
                            args=(barriers.address + BARRIER_BYTES * index, int(expect_tx)),
                            issuer=issuer, warps=1 if issuer == "thread" else w))

    def _wait(self, barriers, index, parity):
        self.body.append(Op("mbarrier_wait", barriers.name,
                            "mbarrier.try_wait.parity.shared::cta.b64",
                            args=(barriers.address + BARRIER_BYTES * index, int(parity)),
                            warps=self.issuing_warps))
        return iter(())

    # ---- TMA -------------------------------------------------------------------------------

    def tma_load(self, site, operand, destination, rows, cols, k_tile, barriers, index,
                 multicast=False):
        if multicast:
            raise self._refuse(site, "a multicast TMA copy (clusters are hopper.cuh's, "
                                     "cluster_m; a generated twin launches no clusters)")
        try:
            self._tma_at = (int(rows), int(cols), int(k_tile) if operand in ("A", "B") else 0)
        except TypeError:
            raise self._refuse(site, "a TMA box whose origin is not one number per "
                                     "coordinate") from None
        super().tma_load(site, operand, destination, rows, cols, k_tile, barriers, index)

    def tma_received(self, site, operand, destination, rows, cols, k_tile, barriers, index):
        raise self._refuse(site, "a box multicast by another block of a cluster (clusters "
                                 "are hopper.cuh's, cluster_m; a generated twin launches "
                                 "no clusters)")

    def _tma_load(self, site, operand, tensor_map, destination, rows, cols, barriers, index,
                  multicast=False):
        if self.role is None:
            raise self._refuse(site, "a TMA copy outside a role (the twin issues TMA copies "
                                     "from a producer role of one thread)")
        self.body.append(Op("tma_load", site, TMA_LOAD, glob=(operand, *self._tma_at),
                            args=(int(destination), barriers.address + BARRIER_BYTES * index),
                            issuer="thread", warps=1))

    def _fence_proxy_async(self) -> None:
        self.body.append(Op("fence_proxy_async", "", "fence.proxy.async.shared::cta",
                            warps=self.issuing_warps))

    # ---- wgmma -----------------------------------------------------------------------------

    def _warpgroups(self, site: str, what: str) -> int:
        if self.issuing_warps % 4:
            raise self._refuse(site, f"{what} from {self.issuing_warps} warps, not whole "
                                     f"warpgroups")
        return self.issuing_warps // 4

    def wgmma_fence(self) -> None:
        self._warpgroups("", "wgmma.fence")
        self.body.append(Op("wgmma_fence", "", "wgmma.fence.sync.aligned",
                            warps=self.issuing_warps))

    def _wgmma_commit(self) -> None:
        self._warpgroups("", "wgmma.commit_group")
        self.body.append(Op("wgmma_commit", "", "wgmma.commit_group.sync.aligned",
                            warps=self.issuing_warps))

    def _wgmma_wait(self, pending) -> None:
        self._warpgroups("", "wgmma.wait_group")
        self.body.append(Op("wgmma_wait", "", "wgmma.wait_group.sync.aligned",
                            count=int(pending), warps=self.issuing_warps))

    def _wgmma(self, site, spec, desc_a, desc_b, acc, trans_b):
        groups = self._warpgroups(site, "wgmma")
        suffix = WGMMA_HELPERS.get((spec.d_type, spec.a_type))
        if (spec.m, spec.k) != (64, 16) or spec.n not in ISSUE_N or suffix is None or \
                spec.b_type != spec.a_type or spec.saturate:
            raise self._refuse(site, f"wgmma {spec.qualifier}: the twin issues m64nNk16 (N "
                                     f"{', '.join(map(str, ISSUE_N))}) on f16 inputs with f16 "
                                     f"or f32 accumulators, or bf16 inputs with f32")
        if not trans_b:
            raise self._refuse(site, "wgmma with B K-major (trans_b=False): the twin's wgmma "
                                     "(wgmma_issue.cuh) reads B MN-major, B being K x N "
                                     "row-major")
        ctype = "uint32_t" if spec.d_type == "f16" else "float"
        registers = wgmma_fragment(spec.qualifier, "d").registers
        array, ids = self._accumulate(site, acc, groups, registers, ctype)
        descriptors = tuple(self._per_warpgroup(site, x, d, groups)
                            for x, d in (("A", desc_a), ("B", desc_b)))
        self.body.append(Op("wgmma", site, WGMMA + spec.qualifier,
                            args=(array, f"wgmma_m64n{spec.n}k16_{suffix}", *descriptors),
                            warps=self.issuing_warps))
        return ids

    def _per_warpgroup(self, site: str, operand: str, values, groups: int) -> tuple[int, ...]:
        values = tuple(int(v) for v in values)
        if len(values) == 1:
            values *= groups
        if len(values) != groups:
            raise self._refuse(site, f"{len(values)} descriptors of {operand} for {groups} "
                                     f"warpgroups (one, or one per warpgroup)")
        return values

    def _accumulate(self, site, acc, groups, registers, ctype):
        """The accumulator array a wgmma updates (a new one for zeros) and the ids of its D,
        (1, groups, 128, registers)."""
        ids = np.asarray(acc)
        if ids.dtype.kind not in "ui":
            raise self._refuse(site, f"wgmma accumulators of dtype {ids.dtype} (registers "
                                     f"computed on)")
        try:
            ids = np.broadcast_to(ids, (1, groups, WARPGROUP, registers))[0]
        except ValueError:
            raise self._refuse(site, f"wgmma accumulators of shape {np.shape(acc)}, not (1, "
                                     f"warpgroups={groups}, 128, {registers})") from None
        ids = ids.reshape(groups * WARPGROUP, registers).astype(np.int64)
        threads = self.first + np.arange(groups * WARPGROUP)
        first = self.role.first if self.role else None
        if not ids.any():
            array = len(self.arrays)
            self.arrays.append(Accumulators(registers, ctype, first, np.zeros(0, np.int64)))
        else:
            array = next((i for i, a in enumerate(self.arrays)
                          if a.role == first and a.current.size == registers and
                          (ids == a.current * self.threads + threads[:, None]).all()), None)
            if array is None:
                raise self._refuse(site, "wgmma accumulators that are neither zeros "
                                         "(m.zeros) nor the D of the last wgmma on them (the "
                                         "twin accumulates in place)")
            if self.arrays[array].ctype != ctype:
                raise self._refuse(site, "one accumulator array under two accumulator types")
        if (self.next_var + registers) * self.threads >= 2**32:
            raise self._refuse(site, "more registers than the generator can number")
        current = self.next_var + np.arange(registers)
        self.next_var += registers
        self.arrays[array].current = current
        self.accumulator_of.update({int(v): (array, j) for j, v in enumerate(current)})
        out = current[None, :] * self.threads + threads[:, None]
        return array, out.reshape(1, groups, WARPGROUP, registers).astype(np.uint32)

    def _fresh(self, site: str, what: str, variables: np.ndarray) -> None:
        """Refuse reading a wgmma D that a later wgmma on the same array overwrote."""
        for v in np.unique(variables):
            at = self.accumulator_of.get(int(v))
            if at and self.arrays[at[0]].current[at[1]] != v:
                raise self._refuse(site, f"{what}: a wgmma accumulator read after a later "
                                         f"wgmma updated it (the twin accumulates in place)")


def _one_thread(stream: list) -> None:
    """The instructions of a role of one thread, each issued by one warp (its waits too)."""
    for i, item in enumerate(stream):
        if isinstance(item, Op):
            stream[i] = replace(item, warps=1)
        else:
            for body in item.iterations:
                _one_thread(body)


class HopperWriter:
    """The CUDA of the Hopper instructions (a mixin of `schedule_twin._Writer`)."""

    def hopper_statement(self, op: Op, k_start) -> str:
        kind, args = op.kind, op.args
        if kind == "mbarrier_init":
            return f"mbarrier_init(smem + {args[0]}u, {args[1]});"
        if kind == "mbarrier_fence":  # the inits become visible to TMA's complete_tx
            return "fence_barrier_init();"
        if kind == "arrive":
            address, expect = args
            if expect:
                return f"mbarrier_arrive_expect_tx(smem + {address}u, {expect}u);"
            return f"mbarrier_arrive(smem + {address}u);"
        if kind == "mbarrier_wait":
            return f"mbarrier_wait(smem + {args[0]}u, {args[1]}u);"
        if kind == "tma_load":
            return self.tma_load(op, k_start)
        if kind == "fence_proxy_async":
            return "fence_proxy_async_shared();"
        if kind == "wgmma":
            array, helper, desc_a, desc_b = args
            return (f"{helper}(acc{array}, {self.descriptor(desc_a)}, "
                    f"{self.descriptor(desc_b)}, 1);")
        holds = " ".join(f"tcsim_hold(acc{a});" for a in self.scope_arrays())
        if kind == "wgmma_fence":
            return f"{holds} wgmma_fence();".strip()
        if kind == "wgmma_commit":
            return "wgmma_commit();"
        if kind == "wgmma_wait":
            return f"wgmma_wait<{op.count}>(); {holds}".strip()
        raise AssertionError(kind)

    def tma_load(self, op: Op, k_start) -> str:
        p = self.p
        operand, rows, cols, k_tile = op.glob
        destination, barrier = op.args
        k = str(k_tile) if k_start is None else \
            f"(k + {k_tile - k_start})" if k_tile != k_start else "k"
        along_k = f"{k} * {p.block_k}"
        tile_m, tile_n = f"blockIdx.y * {p.block_m}", f"blockIdx.x * {p.block_n}"
        b = (tile_n, along_k) if p.b_k_major else (along_k, tile_n)
        row, col = {"A": (tile_m, along_k), "B": b}.get(operand, (tile_m, tile_n))
        return (f"tma_load_2d(smem + {destination}u, &tensor_{operand}, {col} + {cols}, "
                f"{row} + {rows}, smem + {barrier}u);")

    def descriptor(self, values: tuple[int, ...]) -> str:
        """A warpgroup's descriptor: the schedule's value with the shared base's address
        added (its field holds address / 16, and the sum stays below 2^14)."""
        terms = [f"0x{v:016x}ull" for v in values]
        if len(set(terms)) == 1:
            return f"(desc_base + {terms[0]})"
        first = self.scope_first()
        pick = terms[-1]
        for g in range(len(terms) - 2, -1, -1):
            pick = f"((t - {first}) / {WARPGROUP} == {g} ? {terms[g]} : {pick})"
        return f"(desc_base + {pick})"


# Keeps the compiler from moving an accumulator's reads or writes across a wgmma fence or
# wait (as hopper.cuh's fence_registers does for its kernels' arrays).
HOLD = """template <int N>
__device__ __forceinline__ void tcsim_hold(uint32_t (&acc)[N]) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+r"(acc[i]) : : "memory");
}
template <int N>
__device__ __forceinline__ void tcsim_hold(float (&acc)[N]) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(acc[i]) : : "memory");
}"""

# hopper.cuh sizes its own kernel (gemm_warp_specialized, compiled but never called by a
# generated twin) from these; the values are the guide's Hopper kernel's, known to compile,
# and are undefined again after the include: the twin's own code reads none of them.
HOPPER_CONSTANTS = (("BM", 64), ("BN", 256), ("BK", 64), ("STAGES", 2), ("CONSUMERS", 1),
                    ("ACC_F32", 0), ("PRODUCER_REGISTERS", 40), ("CONSUMER_REGISTERS", 232))


def hopper_head(output_bf16: bool) -> list[str]:
    """The include of hopper.cuh (and through it wgmma_issue.cuh) and the twin's helper."""
    return [f"#define OUT_BF16 {int(output_bf16)}",
            *(f"#define {name} {value}" for name, value in HOPPER_CONSTANTS),
            '#include "hopper.cuh"',
            *(f"#undef {name}" for name, _ in HOPPER_CONSTANTS),
            "#ifdef TCSIM_HOPPER", HOLD, "#endif", ""]


HOPPER_KINDS = ("mbarrier_init", "mbarrier_fence", "arrive", "mbarrier_wait", "tma_load",
                "wgmma", "wgmma_fence", "wgmma_commit", "wgmma_wait", "fence_proxy_async")


def is_hopper(op: Op) -> bool:
    return op.kind in HOPPER_KINDS
