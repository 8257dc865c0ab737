"""Bugs the simulator catches while a schedule runs: races, uninitialized reads, bad addresses,
misused warp-wide instructions. Every error is a `SimulationError`.

`SharedChecker` watches one group of blocks' shared memory at 16-byte granularity (every
shared access of the ladder moves aligned 16-byte rows or vectors):

- a race: between two barriers, two warps touch the same bytes and at least one writes
  (``__syncthreads`` missing); a ``cp.async`` copy counts as a write when issued and again
  when ``cp.async.wait_group`` completes it, and reading or overwriting its bytes while it is
  still in flight is an `AsyncCopyRaceError`;
- a read of bytes nothing wrote since the block started (`UninitializedReadError`).

Races are order-independent within a barrier interval, so the checker records which warp
last read and wrote each 16-byte chunk (with site and lane) and looks for conflicts at each
barrier and at the end. The address checks (range, alignment) live in the machine; the
warp-wide checks (`DivergentWarpError`) in its ``.sync.aligned`` instructions.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..memory.access import SharedMemoryError

CHUNK = 16  # bytes


class SimulationError(Exception):
    """A bug in a kernel schedule, found by the simulator. ``where`` holds the details."""

    def __init__(self, message: str, **where) -> None:
        super().__init__(message)
        self.where = where


class SharedRaceError(SimulationError):
    """Two warps touch the same shared bytes between barriers, at least one writing."""


class AsyncCopyRaceError(SimulationError):
    """Shared bytes read or overwritten while a cp.async into them is still in flight."""


class UninitializedReadError(SimulationError):
    """A shared-memory read of bytes nothing wrote since the block started."""


class SharedAddressError(SimulationError, SharedMemoryError):
    """A shared address outside the block's allocation or misaligned for its access."""


class GlobalMemoryError(SimulationError, ValueError):
    """A global-memory access outside its array or misaligned for its width."""


class DivergentWarpError(SimulationError):
    """A ``.sync.aligned`` instruction issued with fewer than 32 active lanes."""


class UnwrittenOutputError(SimulationError):
    """Elements of D that no instruction of the schedule stored (they would hold whatever
    the GPU's memory held)."""


MODES = ("raise", "warn", "collect", "off")


def check_mode(mode: str) -> str:
    """``mode`` if it is one of MODES (ValueError otherwise)."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"checks must be one of {MODES}, got {mode!r}")
    return mode


def first_index(mask: np.ndarray) -> tuple[int, ...]:
    """The first True position of ``mask`` as an index tuple (the lane a debugger stops at)."""
    return tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(mask)[0]), mask.shape))


@dataclass
class Access:
    """One side of a conflict: who touched the bytes, where in the schedule."""

    site: str
    instruction: str
    warp: int
    lane: int

    def __str__(self) -> str:
        return f"warp {self.warp} lane {self.lane} ({self.instruction} at site {self.site!r})"


@dataclass
class Report:
    """Where errors go: raised, warned or collected (``mode`` is one of MODES)."""

    kernel: str
    mode: str = "raise"
    problems: list[SimulationError] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_mode(self.mode)

    def __call__(self, error: SimulationError) -> None:
        if self.mode == "raise":
            raise error
        if self.mode == "warn":
            warnings.warn(str(error), RuntimeWarning, stacklevel=3)
        self.problems.append(error)


class SharedChecker:
    """Race and initialization state of the shared memory of ``blocks`` blocks."""

    def __init__(self, report: Report, blocks: int, warps: int, size: int, who) -> None:
        chunks = size // CHUNK
        self.report, self.who = report, who  # who(block, warp, lane) -> "block (m, n) ..."
        self.written = np.zeros((blocks, chunks), bool)
        self.pending = np.full((blocks, chunks), -1, np.int64)  # cp.async group in flight
        # site * 32 + lane of each warp's last write / read of a chunk in this interval, or -1
        self.writes = np.full((blocks, warps, chunks), -1, np.int32)
        self.reads = np.full((blocks, warps, chunks), -1, np.int32)
        self.sites: list[tuple[str, str]] = []
        self.groups: list[list[tuple]] = []  # committed cp.async groups, oldest first
        self.open_group: list[tuple] = []
        self.completed = 0  # groups completed so far
        self.interval = 0

    # ---- bookkeeping ---------------------------------------------------------------------------

    def _code(self, site: str, instruction: str, lanes: np.ndarray) -> np.ndarray:
        if (site, instruction) not in self.sites:
            self.sites.append((site, instruction))
        return self.sites.index((site, instruction)) * 32 + lanes

    def _access(self, code: int, warp: int) -> Access:
        site, instruction = self.sites[code // 32]
        return Access(site, instruction, warp, code % 32)

    @staticmethod
    def _indices(addresses: np.ndarray, blocks: int):
        """(block, warp, chunk, lane) index arrays of shape (blocks, *addresses.shape)."""
        shape = (blocks,) + addresses.shape
        block = np.arange(blocks).reshape((-1,) + (1,) * addresses.ndim)
        warp = np.arange(addresses.shape[0]).reshape((-1,) + (1,) * (addresses.ndim - 1))
        chunk = addresses // CHUNK
        lane = np.arange(addresses.shape[-1])
        return (np.broadcast_to(block, shape), np.broadcast_to(warp, shape[1:]),
                np.broadcast_to(chunk, shape[1:]), np.broadcast_to(lane, shape[1:]))

    def _flag(self, error: type[SimulationError], mask: np.ndarray, indices, what: str,
              site: str) -> None:
        """Report ``error`` for the first access where ``mask`` holds: '<who> <what>'."""
        if not mask.any():
            return
        block, warp, chunk, lane = indices
        i = first_index(mask)
        b, w, c, ln = i[0], int(warp[i[1:]]), int(chunk[i[1:]]), int(lane[i[1:]])
        self.report(error(
            f"{self.report.kernel}: {self.who(b, w, ln)} "
            f"{what.format(c * CHUNK, c * CHUNK + CHUNK - 1)}",
            site=site, block=b, warp=w, lane=ln, address=c * CHUNK))

    # ---- accesses ------------------------------------------------------------------------------

    def read(self, site: str, instruction: str, addresses: np.ndarray) -> None:
        indices = block, warp, chunk, lane = self._indices(addresses, self.written.shape[0])
        self._flag(AsyncCopyRaceError, self.pending[block, chunk] >= 0, indices,
                   f"reads shared bytes {{:#x}}..{{:#x}} at site {site!r} while a cp.async into "
                   f"them is in flight (no cp.async.wait_group covers it)", site)
        self._flag(UninitializedReadError, ~self.written[block, chunk], indices,
                   f"reads shared bytes {{:#x}}..{{:#x}} at site {site!r} ({instruction}), which "
                   f"nothing wrote since the block started", site)
        self.reads[block, warp, chunk] = self._code(site, instruction, lane)

    def write(self, site: str, instruction: str, addresses: np.ndarray,
              asynchronous: bool = False) -> None:
        indices = block, warp, chunk, lane = self._indices(addresses, self.written.shape[0])
        self._flag(AsyncCopyRaceError, self.pending[block, chunk] >= 0, indices,
                   f"writes shared bytes {{:#x}}..{{:#x}} at site {site!r} while an earlier "
                   f"cp.async into them is in flight", site)
        code = self._code(site, instruction, lane)
        self.writes[block, warp, chunk] = code
        self.written[block, chunk] = True
        if asynchronous:
            self.pending[block, chunk] = self.completed + len(self.groups)
            self.open_group.append((block, warp, chunk, code))

    def fill(self, addresses: np.ndarray) -> None:
        """Bytes a TMA copy writes: initialized from now on (the copy's ordering is the
        mbarriers' business, `tcsim.kernels.happens_before`)."""
        self.written[:, np.unique(np.asarray(addresses) // CHUNK)] = True

    def commit_group(self) -> None:
        self.groups.append(self.open_group)
        self.open_group = []

    def wait_group(self, pending: int) -> None:
        """Complete all committed groups but the newest ``pending``: their bytes land now."""
        while len(self.groups) > pending:
            for block, warp, chunk, code in self.groups.pop(0):
                self.pending[block, chunk] = -1
                self.writes[block, warp, chunk] = code
            self.completed += 1

    # ---- barriers ------------------------------------------------------------------------------

    def barrier(self) -> None:
        """End of a barrier interval: report a conflict in it, then start the next."""
        writers = self.writes >= 0
        count = writers.sum(axis=1)  # (blocks, chunks)
        readers_elsewhere = (self.reads >= 0) & ~writers
        conflict = (count >= 2) | ((count == 1) & readers_elsewhere.any(axis=1))
        if conflict.any():
            b, c = (int(x) for x in np.argwhere(conflict)[0])
            ws = np.flatnonzero(writers[b, :, c])
            first = self._access(int(self.writes[b, ws[0], c]), int(ws[0]))
            if ws.size >= 2:
                second, verb = self._access(int(self.writes[b, ws[1], c]), int(ws[1])), "wrote"
            else:
                r = int(np.flatnonzero(readers_elsewhere[b, :, c])[0])
                second, verb = self._access(int(self.reads[b, r, c]), r), "read"
            self.report(SharedRaceError(
                f"{self.report.kernel}: shared-memory race in {self.who(b, None, None)}: "
                f"{first} wrote bytes {c * CHUNK:#x}..{c * CHUNK + CHUNK - 1:#x} and {second} "
                f"{verb} them with no barrier between (barrier interval {self.interval})",
                site=first.site, block=b, warp=first.warp, lane=first.lane, address=c * CHUNK,
                other=second))
        self.writes.fill(-1)
        self.reads.fill(-1)
        self.interval += 1
