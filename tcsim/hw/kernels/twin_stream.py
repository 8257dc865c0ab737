"""What a generated twin is made of: the instructions a schedule issues, as recorded
(`tcsim.hw.kernels.schedule_twin`), in K loops and roles; and what the generator refuses."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

WARP = 32
HAND_WRITTEN = ("write its CUDA by hand and compare it with the schedule through "
                "tcsim.hw.verify(kernel, 'my_kernel.cu', M, N, K)")


class UnsupportedScheduleError(ValueError):
    """A schedule the twin generator cannot mirror instruction for instruction; the message
    names the site and why."""


@dataclass(frozen=True)
class Op:
    """One instruction as every block issues it: warp-wide by the issuing warps, or by one
    thread (a TMA copy, an mbarrier's init or an arrival), or by lane 0 of each warp."""

    kind: str  # ld_global st_global ld_shared st_shared cp_async ldmatrix stmatrix mma
    #            epilogue sync commit wait; Hopper: mbarrier_init mbarrier_fence arrive
    #            mbarrier_wait tma_load wgmma wgmma_fence wgmma_commit wgmma_wait
    #            fence_proxy_async
    site: str = ""
    spelling: str = ""
    outs: tuple[int, ...] = ()  # variables written (0: none)
    ins: tuple[int, ...] = ()  # variables read (0: the zero register)
    shared: tuple[int, int] | None = None  # (pattern, literal byte address)
    # (operand, pattern, literal, k_tile); a TMA copy's: (operand, rows, cols, k_tile)
    glob: tuple | None = None
    count: int = 0  # wait_group's pending groups
    args: tuple = ()  # the Hopper instructions' operands (`tcsim.hw.kernels.hopper_twin`)
    issuer: str = ""  # "" every issuing thread, "thread" the first one, "lane0" each warp's
    warps: int = 0  # warps that issue it (0: every warp of the block)


@dataclass
class Loop:
    """A K loop (`Machine.k_tiles`): the instructions of each iteration, K tile start + i."""

    start: int
    iterations: list[list] = field(default_factory=list)


@dataclass
class Role:
    """A role of a warp-specialized block (`Machine.run_roles`): its threads ``first`` ..
    ``first + 32 * warps - 1`` run ``body``; ``scope`` "thread" when one thread issues all of
    it (a producer: TMA copies, arrivals, waits), else "warps"."""

    name: str
    first: int
    warps: int
    body: list = field(default_factory=list)
    scope: str = "warps"
    registers: tuple[str, int] | None = None  # setmaxnreg: ("inc" or "dec", count)


def flatten(stream) -> Iterator[Op]:
    """The instructions of a stream, loops and roles opened, in order."""
    for item in stream:
        if isinstance(item, Loop):
            for body in item.iterations:
                yield from flatten(body)
        elif isinstance(item, Role):
            yield from flatten(item.body)
        else:
            yield item
