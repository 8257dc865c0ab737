"""Races between the roles of a warp-specialized kernel, found by happens-before (`tcsim.run`).

In the ladder every warp passes the same barriers, so a race is two accesses in one barrier
interval (`tcsim.kernels.checks.SharedChecker`). Roles pass no common barrier once they start:
they order their shared-memory accesses only through mbarrier phases, and two accesses race
unless a chain of phases orders them. `PhaseChecker` decides that with *vector clocks*, one
counter per agent, so it finds a race whichever interleaving the executor happened to run:

- the agents are each role, each role's wgmma (its reads run on after the instruction issues,
  until a ``wgmma.wait_group`` retires their group), each role's TMA stores (they read shared
  memory until a ``cp.async.bulk.wait_group.read`` retires their bulk group) and each mbarrier
  (TMA copies write in the background and are seen once the barrier's phase completes);
- an arrival *releases* its role's clock into the barrier's current phase, and so does a TMA
  copy, whose bytes are stamped with (barrier, phase); a wait that succeeds *acquires* the
  clock of the phase that completed;
- each 16-byte chunk of shared memory keeps its last write (agent and stamp) and each agent's
  latest read; an access is ordered after an earlier one once the accessing role's clock has
  reached the earlier stamp. A write orders every read before it, so it clears them.

A consumer reading a stage before its phase completes, a producer refilling a stage whose
wgmma group has not retired, and a buffer written again while a TMA store may still read it
are `StageRaceError`s the first time both accesses happen. A role's own loads and stores
(ld/st.shared, ldmatrix, stmatrix) take part too, stamped with the role's clock.

Shared memory has two proxies: a role's own stores (st.shared, stmatrix) go through the generic
one, TMA and wgmma read through the async one. An async read of bytes a role stored must follow
that role's ``fence.proxy.async`` after the store, or it may read stale bytes: a TMA store or
wgmma that reads a chunk whose last store no fence followed is a `ProxyFenceError`.

It also checks that a wgmma descriptor reads what the copies wrote: every chunk a TMA copy
writes is tagged with the matrix coordinates of its first element, and the elements one
descriptor reads must be one tile of one matrix, each element where its (row, k) says. A
descriptor whose swizzle, LBO or SBO does not match the tensor map reads scrambled elements
(`DescriptorLayoutError`), which on the GPU is wrong bits and no fault.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..memory.descriptors import MatrixDescriptor
from .checks import CHUNK, Report, SimulationError, UninitializedReadError, first_index
from .roles import Barriers

Clock = dict[str, int]  # agent -> stamp; a missing agent is 0
# An agent: (name, kind, role): kind "copy" (a barrier's TMA copies; no role), "wgmma" or
# "store" (a role's asynchronous readers), "role" (the role's own accesses).
Agent = tuple[str, str, str]


class StageRaceError(SimulationError):
    """Two roles touch the same shared bytes, at least one writing, and no chain of mbarrier
    phases (or wgmma.wait_group) orders the two accesses."""


class ProxyFenceError(SimulationError):
    """The async proxy (a TMA store, a wgmma) reads shared bytes that a role stored through the
    generic proxy with no ``fence.proxy.async`` between the store and the read."""


class DescriptorLayoutError(SimulationError):
    """A wgmma descriptor reads shared memory in a layout other than the one its bytes were
    written in (its swizzle, LBO or SBO does not match the TMA tensor map's)."""


def _join(a: Clock, b: Clock) -> Clock:
    return {k: max(a.get(k, 0), b.get(k, 0)) for k in a.keys() | b.keys()}


def _wgmma_agent(role: str) -> str:
    return f"{role}' wgmma" if role.endswith("s") else f"{role}'s wgmma"


def _store_agent(role: str) -> str:
    return f"{role}' TMA stores" if role.endswith("s") else f"{role}'s TMA stores"


class PhaseChecker:
    """Happens-before between the roles of one group of blocks (they all run one schedule, so
    one state serves them). ``who()`` names the blocks for a message."""

    def __init__(self, report: Report, shared_bytes: int, who: Callable[[], str]) -> None:
        chunks = shared_bytes // CHUNK
        self.report, self.who = report, who
        self.role = ""
        self.clocks: dict[str, Clock] = {}
        self.open: dict[tuple[str, int], Clock] = {}  # released into a phase still running
        self.done: dict[tuple[str, int], Clock] = {}  # the last completed phase's clock
        self.committed: dict[str, int] = {}  # wgmma groups committed, per role
        self.bulk_committed: dict[str, int] = {}  # bulk groups (TMA stores), per role
        self.agents: list[Agent] = []
        self.sites: list[str] = []
        self.write_agent = np.full(chunks, -1, np.int32)
        self.write_stamp = np.zeros(chunks, np.int64)
        self.write_site = np.full(chunks, -1, np.int32)
        self.unfenced = np.full(chunks, -1, np.int32)  # role agent of a store no fence followed
        self.reads: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # agent -> (stamp, site)
        # What a TMA copy put in each chunk: matrix, row and column of its first element.
        self.matrices: list[str] = []
        self.tag_matrix = np.full(chunks, -1, np.int32)
        self.tag_row = np.zeros(chunks, np.int64)
        self.tag_col = np.zeros(chunks, np.int64)

    # ---- roles and phases ----------------------------------------------------------------------

    def switch(self, role: str) -> None:
        """``role`` runs from now on (its clock starts at 1 on its own counter)."""
        self.role = role
        self.clocks.setdefault(role, {role: 1})

    @property
    def clock(self) -> Clock:
        return self.clocks[self.role]

    def release(self, barriers: Barriers, index: int) -> None:
        """The running role arrives on ``barriers[index]`` (or a copy it issued will)."""
        key = (barriers.name, index)
        self.open[key] = _join(self.open.get(key, {}), self.clock)
        self.clock[self.role] += 1

    def complete(self, barriers: Barriers, index: int) -> None:
        """``barriers[index]``'s phase just completed: its clock is what waiters acquire."""
        key = (barriers.name, index)
        stamp = {barriers.label(index): int(barriers.phase[index])}
        self.done[key] = _join(self.open.pop(key, {}), stamp)

    def acquire(self, barriers: Barriers, index: int) -> None:
        """The running role's wait on ``barriers[index]`` succeeded."""
        self.clocks[self.role] = _join(self.clock, self.done.get((barriers.name, index), {}))

    def commit(self) -> None:
        """``wgmma.commit_group`` by the running role."""
        self.committed[self.role] = self.committed.get(self.role, 0) + 1

    def retire(self, pending: int) -> None:
        """``wgmma.wait_group pending``: the role's older groups no longer read."""
        self._retire(_wgmma_agent(self.role), self.committed, pending)

    def bulk_commit(self) -> None:
        """``cp.async.bulk.commit_group`` by the running role."""
        self.bulk_committed[self.role] = self.bulk_committed.get(self.role, 0) + 1

    def bulk_retire(self, pending: int) -> None:
        """``cp.async.bulk.wait_group.read pending``: the role's older TMA stores no longer
        read shared memory."""
        self._retire(_store_agent(self.role), self.bulk_committed, pending)

    def _retire(self, agent: str, committed: dict[str, int], pending: int) -> None:
        retired = max(committed.get(self.role, 0) - pending, 0)
        self.clock[agent] = max(self.clock.get(agent, 0), retired)

    # ---- accesses ------------------------------------------------------------------------------

    def tma_write(self, site: str, operand: str, offsets: np.ndarray, row: int, col: int,
                  barriers: Barriers, index: int) -> None:
        """A TMA copy of the box whose element (i, j) is ``operand[row + i, col + j]`` lands
        at byte ``offsets[i, j]``; it completes on ``barriers[index]``'s current phase."""
        first = offsets % CHUNK == 0
        chunks = offsets[first] // CHUNK
        phase = int(barriers.phase[index])
        self._write(site, chunks, (barriers.label(index), "copy", ""), phase + 1)
        self.unfenced[chunks] = -1
        self.release(barriers, index)
        i, j = np.nonzero(first)
        if operand not in self.matrices:
            self.matrices.append(operand)
        self.tag_matrix[chunks] = self.matrices.index(operand)
        self.tag_row[chunks], self.tag_col[chunks] = row + i, col + j

    def wgmma_read(self, site: str, operand: str, descriptor: int, addresses: np.ndarray,
                   element_bytes: int, major: str) -> None:
        """A wgmma of the running role reads its ``operand`` ("a" or "b") at byte
        ``addresses`` (rows, K) through ``descriptor``, until its group retires."""
        chunks = np.unique(addresses // CHUNK)
        self._check_fenced(site, chunks, "wgmma")
        self._read(site, chunks, (_wgmma_agent(self.role), "wgmma", self.role),
                   self.committed.get(self.role, 0) + 1)
        self._check_layout(site, operand, descriptor, addresses, element_bytes, major)

    def bulk_read(self, site: str, addresses: np.ndarray) -> None:
        """A TMA store of the running role reads shared bytes ``addresses`` until its bulk
        group retires."""
        chunks = np.unique(addresses // CHUNK)
        self._check_fenced(site, chunks, "TMA store")
        self._read(site, chunks, (_store_agent(self.role), "store", self.role),
                   self.bulk_committed.get(self.role, 0) + 1)

    def access(self, site: str, addresses: np.ndarray, write: bool) -> None:
        """The running role's own load or store of shared bytes ``addresses``."""
        chunks = np.unique(np.asarray(addresses) // CHUNK)
        agent, stamp = (self.role, "role", self.role), self.clock[self.role]
        (self._write if write else self._read)(site, chunks, agent, stamp)
        if write:
            self.unfenced[chunks] = self._agent(agent)

    def fence_proxy(self) -> None:
        """``fence.proxy.async`` by the running role: the async proxy sees its stores."""
        mine = self.unfenced == self._agent((self.role, "role", self.role))
        self.unfenced[mine] = -1

    def _check_fenced(self, site: str, chunks: np.ndarray, reader: str) -> None:
        stale = self.unfenced[chunks] >= 0
        if stale.any():
            c = int(chunks[first_index(stale)])
            _, _, role = self.agents[self.unfenced[c]]
            self.report(ProxyFenceError(
                f"{self.report.kernel}: {self.who()}: the {reader} at site {site!r} of role "
                f"{self.role!r} reads shared bytes {c * CHUNK:#x}..{c * CHUNK + CHUNK - 1:#x}, "
                f"which role {role!r} stored at site {self.sites[self.write_site[c]]!r} with no "
                "fence.proxy.async since: the async proxy may read them stale",
                site=site, role=self.role, address=c * CHUNK,
                other_site=self.sites[self.write_site[c]]))

    def _agent(self, agent: Agent) -> int:
        if agent not in self.agents:
            self.agents.append(agent)
        return self.agents.index(agent)

    def _site(self, site: str) -> int:
        if site not in self.sites:
            self.sites.append(site)
        return self.sites.index(site)

    def _seen(self) -> np.ndarray:
        """The running role's clock as an array over the agents."""
        return np.array([self.clock.get(name, 0) for name, _, _ in self.agents] or [0],
                        np.int64)

    def _read(self, site: str, chunks: np.ndarray, agent: Agent, stamp: int) -> None:
        written = self.write_agent[chunks] >= 0
        if not written.all():
            c = int(chunks[first_index(~written)])
            self.report(UninitializedReadError(
                f"{self.report.kernel}: {self.who()}: role {self.role!r} reads shared bytes "
                f"{c * CHUNK:#x}..{c * CHUNK + CHUNK - 1:#x} at site {site!r}, which nothing "
                "wrote since the block started", site=site, role=self.role, address=c * CHUNK))
            chunks = chunks[written]
        self._check_write_seen(site, chunks, "reads")
        a = self._agent(agent)
        stamps, sites = self.reads.setdefault(
            a, (np.zeros_like(self.write_stamp), np.full_like(self.write_site, -1)))
        stamps[chunks] = stamp
        sites[chunks] = self._site(site)

    def _write(self, site: str, chunks: np.ndarray, agent: Agent, stamp: int) -> None:
        self._check_write_seen(site, chunks[self.write_agent[chunks] >= 0], "overwrites")
        seen = self.clock
        for a, (stamps, sites) in self.reads.items():
            unordered = stamps[chunks] > seen.get(self.agents[a][0], 0)
            if unordered.any():
                c = int(chunks[first_index(unordered)])
                self._race(site, "overwrites", c, self.agents[a], int(stamps[c]),
                           self.sites[sites[c]], "reading")
            stamps[chunks] = 0
        self.write_agent[chunks] = self._agent(agent)
        self.write_stamp[chunks] = stamp
        self.write_site[chunks] = self._site(site)

    def _check_write_seen(self, site: str, chunks: np.ndarray, verb: str) -> None:
        unordered = self.write_stamp[chunks] > self._seen()[self.write_agent[chunks]]
        if unordered.any():
            c = int(chunks[first_index(unordered)])
            self._race(site, verb, c, self.agents[self.write_agent[c]], int(self.write_stamp[c]),
                       self.sites[self.write_site[c]], "writing")

    def _race(self, site: str, verb: str, chunk: int, agent: Agent, stamp: int,
              other_site: str, other: str) -> None:
        """Report an access at ``site`` that no phase orders after ``agent``'s ``other`` (read
        or write) stamped ``stamp`` at ``other_site``."""
        name, kind, role = agent
        wait = {"wgmma": "wgmma.wait_group", "store": "cp.async.bulk.wait_group.read"}.get(kind)
        if kind == "copy":  # a barrier's: a TMA copy completing on one of its phases
            earlier = f"the TMA copy at site {other_site!r}"
            missing = (f"the copy completes on {name} phase {stamp - 1}, which role "
                       f"{self.role!r} did not wait for")
        elif kind == "role":  # another role's own access
            earlier = f"role {role!r} at site {other_site!r}"
            missing = f"no mbarrier phase that role {self.role!r} waited for follows it"
        else:  # a role's wgmma or TMA stores
            earlier = f"{name} at site {other_site!r} (group {stamp})"
            missing = (f"role {role!r} did not retire that group ({wait}) before the "
                       f"arrival that lets role {self.role!r} in" if role != self.role else
                       f"that group has not retired ({wait})")
        self.report(StageRaceError(
            f"{self.report.kernel}: {self.who()}: role {self.role!r} {verb} shared bytes "
            f"{chunk * CHUNK:#x}..{chunk * CHUNK + CHUNK - 1:#x} at site {site!r} while "
            f"{earlier} may still be {other} them: {missing}",
            site=site, role=self.role, address=chunk * CHUNK, other_site=other_site))

    # ---- descriptors ---------------------------------------------------------------------------

    def _check_layout(self, site: str, operand: str, descriptor: int, addresses: np.ndarray,
                      element_bytes: int, major: str) -> None:
        """The elements read at ``addresses`` (rows, K) must be one tile of one matrix: element
        (i, j) is matrix[r0 + i, c0 + j] (K-major) or matrix[r0 + j, c0 + i] (MN-major, the
        matrix stored K by MN)."""
        chunks = addresses // CHUNK
        matrix = self.tag_matrix[chunks]
        if (matrix < 0).any():  # bytes no TMA copy wrote: their layout is not known
            return
        row = self.tag_row[chunks]
        col = self.tag_col[chunks] + addresses % CHUNK // element_bytes
        i, j = np.indices(addresses.shape)
        if major == "MN":
            i, j = j, i
        r0, c0 = row[0, 0], col[0, 0]
        wrong = (matrix != matrix[0, 0]) | (row - i != r0) | (col - j != c0)
        if not wrong.any():
            return
        x, y = first_index(wrong)
        name, expected = self.matrices[matrix[0, 0]], (r0 + i[x, y], c0 + j[x, y])
        found = f"{self.matrices[matrix[x, y]]}[{row[x, y]}, {col[x, y]}]"
        self.report(DescriptorLayoutError(
            f"{self.report.kernel}: {self.who()}: the wgmma at site {site!r} reads operand "
            f"{operand} through {MatrixDescriptor.decode(int(descriptor))} as a {major}-major "
            f"tile, but the bytes there were written in another layout: its element (0, 0) is "
            f"{name}[{r0}, {c0}], so element ({x}, {y}) should be {name}[{expected[0]}, "
            f"{expected[1]}], and it reads {found} (the swizzle, LBO or SBO does not match "
            "the TMA tensor map's)", site=site, role=self.role,
            address=int(addresses[x, y])))
