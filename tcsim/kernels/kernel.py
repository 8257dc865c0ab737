"""`Kernel`: one rung of the ladder (or a seed's kernel), its schedule, default tiles and what
its CUDA twin needs (the schedule the twin calls, its defines and its launch)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..isa.validate import integer
from .allocation import block_bytes, check_tiles
from .blocks import SharedTile
from .machine import Machine
from .params import GemmParams


@dataclass(frozen=True)
class Kernel:
    """A GEMM kernel ``D = alpha * A @ B + beta * C`` (f16 in and out; bf16 too on the Hopper
    rungs) as a schedule.

    ``program(machine, params, *tiles)`` issues the kernel's instructions on the
    shared-memory tiles that ``tiles(params)`` gives (none for a kernel without shared
    tiles: then ``program(machine, params)``); ``source`` names its CUDA twin, which `tcsim.hw`
    writes from ``twin_schedule`` or, for a seed's kernel, keeps hand-written; ``requires``
    checks what this kernel asks of the tile sizes beyond `GemmParams`' own rules. The block's
    shared memory is sized from the tiles (`shared_bytes`); docs/own-kernel.md writes one from
    scratch.
    """

    name: str
    summary: str
    program: Callable[..., None]
    tiles: Callable[[GemmParams], tuple[SharedTile, ...]]
    defaults: GemmParams
    # nothing beyond GemmParams' rules unless the kernel says (a user's kernel need not)
    requires: Callable[[GemmParams], None] = lambda p: None
    twin: str = ""  # the CUDA kernel this one compiles from, when not its own name
    # The twin's __launch_bounds__ minimum blocks per SM, by accumulator type: the compiler
    # keeps registers to fit that many (too many spills, too few starves the tensor cores).
    blocks_per_sm: tuple[tuple[str, int], ...] = (("f16", 1), ("f32", 1))
    plants: tuple[str, ...] = ()  # planted bugs: PLANT_<name> macros of the twin
    options: tuple[tuple[str, int], ...] = ()  # other compile-time constants of the twin
    # Bytes of local memory each thread of the schedule uses (an array the compiler cannot
    # keep in registers, as seed 004's accumulator tile).
    local_bytes: Callable[[GemmParams], int] = lambda p: 0
    # False for the seeds' kernels, which store A @ B and read no C (no alpha, beta).
    takes_c: bool = True
    # The twin's launch: (grid, block) for (params, M, N); default (N / block_n, M / block_m)
    # blocks of `threads` threads.
    launch_shape: Callable[[GemmParams, int, int], tuple[tuple[int, ...], tuple[int, ...]]] = \
        lambda p, M, N: (p.grid(M, N), (p.threads,))
    # The GPU architecture the twin needs beyond the device's own ("sm_90a": wgmma and TMA).
    arch: str = ""
    # The tensor maps the twin takes after the ladder's parameters, for (params, M, N, K):
    # (operand, TensorMap) pairs, encoded by the host (tcsim.hw.memory.tma) in this order.
    tensor_maps: Callable[[GemmParams, int, int, int], tuple] = lambda p, M, N, K: ()
    # The block's shared memory in bytes, for a kernel that states it; None: sized from the
    # tiles (`shared_bytes`).
    shared: Callable[[GemmParams], int] | None = None
    # The CUDA schedule the twin calls (a template in gemm.cuh, or hopper.cuh for sm_90a,
    # scaled.cuh for a scaled kernel), from which tcsim.hw writes the twin; "" for a
    # hand-written twin (the seeds').
    twin_schedule: str = ""
    # True for a scaled GEMM (kernel11, fp8): `tcsim.run` takes scale_a, scale_b and out_dtype
    # (`tcsim.kernels.scaled`) and no C, alpha or beta.
    scaled: bool = False

    def __post_init__(self) -> None:
        # arguments of the wrong kind are refused here, naming the argument, rather than as
        # an AttributeError deep in a run
        for field in ("name", "summary"):
            if not isinstance(getattr(self, field), str):
                raise TypeError(f"Kernel {field} must be a string, got {getattr(self, field)!r}")
        functions = {"program": "the schedule, program(m, params, *tiles)",
                     "tiles": "tiles(params) -> a tuple of SharedTiles (lambda p: () for none)",
                     "requires": "requires(params), raising ValueError for params it refuses",
                     "local_bytes": "local_bytes(params)", "launch_shape": "launch_shape(p, M, N)",
                     "tensor_maps": "tensor_maps(params, M, N, K)"}
        for field, what in functions.items():
            if not callable(getattr(self, field)):
                raise TypeError(f"Kernel {self.name!r}: {field} must be a function, {what}; got "
                                f"{getattr(self, field)!r}")
        if not isinstance(self.defaults, GemmParams):
            raise TypeError(f"Kernel {self.name!r}: defaults must be a tcsim.GemmParams "
                            f"(GemmParams(block_m=64, ...)), got {self.defaults!r}")
        if not isinstance(self.takes_c, bool):
            raise TypeError(f"Kernel {self.name!r}: takes_c must be True or False, got "
                            f"{self.takes_c!r}")

    @property
    def entry(self) -> str:
        """The twin's ``extern "C"`` kernel name."""
        return self.twin or self.name

    @property
    def source(self) -> str:
        return f"{self.entry}.cu"

    def params(self, params: GemmParams | None = None, **overrides) -> GemmParams:
        """The defaults with ``overrides`` applied (or ``params``), checked for this kernel."""
        p = (params or self.defaults).with_overrides(**overrides)
        self.requires(p)
        # layouts check their own requirements (a swizzle needs powers of two); the tiles
        # must not overlap and must fit the block (`tcsim.kernels.allocation`)
        check_tiles(self.name, self.tiles(p), self.shared_bytes(p), self.shared is not None)
        return p

    def shared_bytes(self, p: GemmParams) -> int:
        """The block's shared memory: ``shared(p)`` when the kernel states it, else the larger
        of what the tiles span (padding and swizzles included) and `GemmParams.shared_bytes`
        (the stages and barriers a schedule places beyond its tiles)."""
        stated = None if self.shared is None else integer(
            self.shared(p), f"{self.name}: shared(params), the block's bytes,", minimum=0,
            type_error=ValueError)
        return block_bytes(self.name, self.tiles(p), p.shared_bytes, stated)

    def issue(self, machine: Machine) -> None:
        """Run the schedule on ``machine`` (an executor or a tracer)."""
        machine.allocate_local(self.local_bytes(machine.params))
        machine.tensor_maps = dict(self.tensor_maps(machine.params, machine.M, machine.N,
                                                    machine.K))
        machine.shared_tiles = tiles = self.tiles(machine.params)
        machine.takes_c = self.takes_c
        self.program(machine, machine.params, *tiles)

    def check_epilogue(self, C, alpha, beta) -> None:
        """A kernel that stores A @ B refuses a C, alpha or beta it would ignore."""
        if not self.takes_c and (C is not None or alpha != 1 or beta != 0):
            raise ValueError(f"{self.name} stores A @ B as its seed does: it reads no C and has "
                             f"no alpha or beta (got C={'given' if C is not None else None}, "
                             f"alpha={alpha}, beta={beta})")

    def defines(self, p: GemmParams) -> dict[str, int]:
        """The CUDA twin's compile-time constants for ``p``: tiles, accumulator, swizzles."""
        out = {"BM": p.block_m, "BN": p.block_n, "BK": p.block_k, "WM": p.warp_m,
               "WN": p.warp_n, "WK": p.warp_k, "ACC_F32": int(p.accumulate == "f32"),
               "MMA_K": p.mma_k, "STAGES": p.stages,
               "MIN_BLOCKS": dict(self.blocks_per_sm)[p.accumulate]}
        if p.producers:
            out["CONSUMERS"] = p.consumers
            out["IN_BF16"] = int(p.inputs == "bf16")
            out["OUT_BF16"] = int(p.output == "bf16")
            out["GROUP_M"] = p.group_m
            out["STAGED_EPILOGUE"] = p.staged_epilogue
            if p.store_buffers:
                out["TMA_STORE_EPILOGUE"] = 1
                out["STORE_BUFFERS"] = p.store_buffers
            if p.splits > 1:  # split-K (tcsim.kernels.split_k)
                out["SPLITS"] = p.splits
            if p.cluster_m > 1:  # clusters sharing B by TMA multicast (kernel7.program)
                out["CLUSTER_M"] = p.cluster_m
        if p.fp8:  # kernel11's twin (scaled.cuh): operand types, output, scales, promotion
            out.update(A_E5M2=int(p.inputs == "e5m2"), B_E5M2=int(p.b_inputs == "e5m2"),
                       OUT_F32=int(p.output == "f32"), ROW_SCALES=p.row_scales,
                       PROMOTION=p.promotion)
        out.update({f"PLANT_{plant.upper()}": 1 for plant in self.plants})
        out.update(self.options)
        if p.producers and "CONSUMER_REGISTERS" in out:
            out["CONSUMER_REGISTERS"] = consumer_registers(p, out["CONSUMER_REGISTERS"],
                                                           out.get("PRODUCER_REGISTERS", 0))
        for tile in self.tiles(p):  # none for a kernel without shared tiles
            s = tile.swizzle
            out.update({f"{tile.operand}_SWZ_BITS": s.bits, f"{tile.operand}_SWZ_BASE": s.base,
                        f"{tile.operand}_SWZ_SHIFT": s.shift})
        return out

    def __repr__(self) -> str:
        return f"<Kernel {self.name}: {self.summary}>"


REGISTERS_PER_SM = 65536  # sm_90's register file, 32-bit registers
WARPGROUP_THREADS = 128


def consumer_registers(p: GemmParams, wanted: int, producer: int) -> int:
    """The registers each consumer thread asks with setmaxnreg.inc: ``wanted``, or less where
    the producer's and the consumers' warpgroups would not fit the register file together
    (a request the SM cannot grant waits forever: three consumers of 232 hung the H100). A
    multiple of 8, as setmaxnreg takes."""
    fit = (REGISTERS_PER_SM // WARPGROUP_THREADS - producer * p.producers) // p.consumers
    return min(wanted, fit // 8 * 8)


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def one_stage_m16n8k8(p: GemmParams) -> None:
    """kernel1 .. kernel5: one shared buffer and m16n8k8, as their twins are written."""
    require(p.mma_k == 8, f"this kernel issues m16n8k8: mma_k must be 8, got {p.mma_k}")
    require(p.stages == 1, f"this kernel has one shared buffer: stages must be 1, got {p.stages}")
