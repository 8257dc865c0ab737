"""Warp specialization: roles that run apart and meet on mbarrier phases (sm_90).

In the ladder every warp issues the same instruction at once. A Hopper kernel splits its block
into *roles*: a producer warpgroup issues TMA copies, consumer warpgroups issue wgmma, and they
hand shared-memory stages to each other through mbarriers. A role is a Python generator
function of the machine; it is suspended only where it waits (``yield from m.wait(...)``), so
the engines decide the interleaving:

- the executor (`tcsim.run`) runs the roles as coroutines: each runs until it waits on a phase
  that has not completed, then the next runnable role goes on. That is one legal interleaving,
  and a kernel without races gives the same bits under every legal interleaving. If every role
  waits on a phase that can no longer complete, the kernel would hang on the GPU: a
  `DeadlockError` names each role's barrier and what its phase still lacks (a wrong
  expect-tx byte count ends here);
- the tracer (`tcsim.trace`) runs each role to its end in turn: waits cost nothing to count.

An mbarrier (PTX "mbarrier") has a *phase* that completes when its expected arrivals have
arrived and its transaction count (bytes announced by ``arrive.expect_tx``, paid off by the
copies that complete on it) is back to zero; then the next phase begins. ``wait(parity)``
returns once the phase of that parity has completed, so a loop waits on parity ``(k / stages)
& 1``. A barrier's state is the same in every block of a group (they run the same schedule),
so it is kept once per barrier, not per block.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field

import numpy as np

from .checks import SimulationError

Role = Generator[None, None, None]


class DeadlockError(SimulationError):
    """Every role waits on an mbarrier phase that can no longer complete: the kernel hangs."""


class TransactionError(SimulationError):
    """An mbarrier's transaction count went below zero: copies brought more bytes than the
    phase's ``arrive.expect_tx`` announced."""


class PhaseError(SimulationError):
    """An mbarrier used as it cannot be: more arrivals than a phase expects, a parity that is
    not 0 or 1."""


@dataclass
class Barriers:
    """``count`` mbarriers at shared byte ``address`` (8 bytes each), each expecting
    ``arrivals`` arrivals per phase; ``name`` is what messages call them ("full")."""

    name: str
    address: int
    count: int
    arrivals: int
    pending: np.ndarray = field(init=False)  # arrivals still expected in the current phase
    transactions: np.ndarray = field(init=False)  # bytes announced and not yet copied
    phase: np.ndarray = field(init=False)  # phases completed so far

    def __post_init__(self) -> None:
        self.pending = np.full(self.count, self.arrivals, np.int64)
        self.transactions = np.zeros(self.count, np.int64)
        self.phase = np.zeros(self.count, np.int64)

    def label(self, index: int) -> str:
        return f"{self.name}[{index}]"

    def arrive(self, index: int, expect: int, who: str) -> bool:
        """One arrival, announcing ``expect`` transaction bytes; True if the phase completed."""
        if self.pending[index] == 0:
            raise PhaseError(f"{who}: arrival on {self.label(index)}, whose phase "
                             f"{self.phase[index]} already has its {self.arrivals} arrivals")
        self.pending[index] -= 1
        self.transactions[index] += expect
        return self._complete(index)

    def pay(self, index: int, nbytes: int, who: str) -> bool:
        """A copy's ``nbytes`` land; True if the phase completed."""
        self.transactions[index] -= nbytes
        if self.transactions[index] < 0:
            # No arrival yet in this phase: the copy belonged to the last one, which completed
            # (its expected bytes paid) before this copy landed.
            late = self.pending[index] == self.arrivals and self.phase[index] > 0
            raise TransactionError(
                f"{who}: the copy's {nbytes} bytes take {self.label(index)}'s transaction "
                f"count to {self.transactions[index]}: the arrive.expect_tx of phase "
                f"{self.phase[index] - late} announced {-self.transactions[index]} bytes too few"
                + (", so that phase completed before this copy landed" if late else ""))
        return self._complete(index)

    def _complete(self, index: int) -> bool:
        if self.pending[index] or self.transactions[index]:
            return False
        self.phase[index] += 1
        self.pending[index] = self.arrivals
        return True

    def completed(self, index: int, parity: int) -> bool:
        """Whether ``try_wait.parity`` succeeds: the phase of this parity has completed
        (the current phase has the other parity)."""
        return self.phase[index] % 2 != parity

    def lacks(self, index: int) -> str:
        """What the current phase still needs, for a deadlock message."""
        needs = []
        if self.pending[index]:
            needs.append(f"{self.pending[index]} of {self.arrivals} arrivals")
        if self.transactions[index] > 0:
            needs.append(f"{self.transactions[index]} bytes of transactions")
        return f"phase {self.phase[index]} lacks " + (" and ".join(needs) or "nothing")


@dataclass
class Waiting:
    """Where a suspended role waits."""

    barriers: Barriers
    index: int
    parity: int


def interleave(roles: Iterable[tuple[str, Role]], kernel: str,
               resume: Callable[[str], None] = lambda name: None) -> None:
    """Run ``roles`` as coroutines until all end: each goes on until it waits on a phase that
    has not completed (it yields a `Waiting`); a waiting role resumes once its phase has.
    ``resume(name)`` is called before a role runs again."""
    live = {name: (role, None) for name, role in roles}
    while live:
        progressed = False
        for name in list(live):
            role, waiting = live[name]
            while waiting is None or waiting.barriers.completed(waiting.index, waiting.parity):
                progressed = True
                resume(name)
                try:
                    waiting = next(role)
                except StopIteration:
                    del live[name]
                    break
            else:
                live[name] = (role, waiting)
        if not progressed:
            raise DeadlockError(
                f"{kernel}: every role waits on a phase that cannot complete (the kernel "
                "would hang): " + "; ".join(
                    f"{name} waits for {w.barriers.label(w.index)} parity {w.parity}, whose "
                    f"{w.barriers.lacks(w.index)}" for name, (_, w) in live.items()),
                roles=sorted(live))


def run_in_turn(roles: Iterable[tuple[str, Role]]) -> None:
    """Run each role to its end, one after the other, waits being free (the tracer)."""
    for _, role in roles:
        for _ in role:
            pass


RoleFunction = Callable[..., Role]
