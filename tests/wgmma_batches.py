"""Random wgmma batches for tests/hw/test_wgmma_hw.py, each reproducible from its seed, and the
simulator's side of the comparison, which runs in worker processes.

The GPU process draws a batch, runs it on the hardware and sends a worker only the batch (its
seed and options) and one 64-bit digest of each instruction's D registers; the worker draws the
same inputs again, simulates them and returns the instructions whose digests differ, with their
simulated registers. So the simulator runs on every core while the GPU process stays free, and
no register file crosses a pipe (a million m64n256 instructions are 64 GB of D registers).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

import tcsim
from tcsim.isa import samples
from tcsim.isa.wgmma import parse_wgmma, supported_wgmma_qualifiers, wgmma_fragment

A_SOURCES = ("smem", "registers")
SWIZZLES = ("128B", "128B", "128B", "none", "64B", "32B")
SWIZZLE_BYTES = {"128B": 128, "64B": 64, "32B": 32}
# Odd 64-bit weights: the digest is sum(weight[i] * register[i]) mod 2**64.
_WEIGHTS = np.random.default_rng(20261123).integers(0, 2**63, 128 * 128, np.uint64) * 2 + 1
KEEP_BAD = 4  # simulated registers returned per batch for the report


def kernels(family: str) -> list[tuple[str, str]]:
    """(qualifier, A source) of every probe kernel of a family: every legal N and type
    combination, with A from shared memory and from registers."""
    return [(q, a) for q in supported_wgmma_qualifiers() if parse_wgmma(q).family == family
            for a in A_SOURCES]


@dataclass(frozen=True)
class Batch:
    qualifier: str
    a_source: str
    distribution: str
    options: tuple  # sorted (name, value) pairs
    swizzle: str | None
    count: int
    seed: int

    @property
    def spec(self):
        return parse_wgmma(self.qualifier)

    def matrices(self):
        """A, B, C bit patterns, the same on every call."""
        return samples.draw(self.spec, self.distribution, self.count,
                            np.random.default_rng(self.seed))

    def operands(self, A, B, C):
        """tcsim.wgmma_regs's operands: A's registers or values, B's values, C's registers."""
        spec = self.spec
        fa, fc = wgmma_fragment(spec, "a"), wgmma_fragment(spec, "c")
        a = fa.to_registers(fa.gather_bits(A)) if self.a_source == "registers" \
            else spec.format("a").from_bits(A)
        return a, spec.format("b").from_bits(B), fc.to_registers(fc.gather_bits(C))


def random_options(spec, a_source: str, rng) -> tuple[dict, str | None]:
    """A random legal option set and swizzle for one batch."""
    opts = {"scale_d": int(rng.random() < 0.8)}
    if spec.scalable:
        opts["scale_a"], opts["scale_b"] = (int(x) for x in rng.choice([1, 1, -1], 2))
    if spec.transposable:
        opts["trans_b"] = bool(rng.random() < 0.5)
        if a_source == "smem":
            opts["trans_a"] = bool(rng.random() < 0.5)
    swizzle: str | None = str(rng.choice(SWIZZLES))
    for flag, rows in (("trans_a", spec.m), ("trans_b", spec.n)):  # MN-major: whole atoms
        if opts.get(flag) and swizzle != "none" and (rows * 2) % SWIZZLE_BYTES[swizzle]:
            swizzle = None  # tcsim.hw picks the widest swizzle each tile fills
    return opts, swizzle


def plan(family: str, count: int, rng) -> list[Batch]:
    """About ``count`` instructions over every kernel of the family and every operand
    distribution, in batches with fresh random options."""
    probes = kernels(family)
    per_kernel = -(-count // len(probes))
    batches = []
    for qualifier, a_source in probes:
        spec = parse_wgmma(qualifier)
        dists = list(samples.distributions(spec))
        for dist in dists:
            opts, swizzle = random_options(spec, a_source, rng)
            batches.append(Batch(qualifier, a_source, dist, tuple(sorted(opts.items())),
                                 swizzle, -(-per_kernel // len(dists)),
                                 int(rng.integers(2**63))))
    order = rng.permutation(len(batches))  # mix small and wide N across the workers
    return [batches[i] for i in order]


def digest(regs: np.ndarray) -> np.ndarray:
    """One uint64 per instruction of registers (n, 128, R)."""
    flat = regs.reshape(regs.shape[0], -1).astype(np.uint64)
    return (flat * _WEIGHTS[: flat.shape[1]]).sum(axis=1, dtype=np.uint64)


@dataclass
class Verdict:
    bad: np.ndarray  # indices of instructions whose registers differ
    sim_regs: np.ndarray  # the simulator's registers of the first KEEP_BAD of them
    seconds: float


def simulate(batch: Batch, hw_digest: np.ndarray) -> Verdict:
    """The simulator's D registers for the batch, compared with the hardware's digests."""
    start = time.perf_counter()
    A, B, C = batch.matrices()
    d_sim = tcsim.wgmma_regs(batch.qualifier, *batch.operands(A, B, C), **dict(batch.options))
    bad = np.flatnonzero(digest(d_sim) != hw_digest)
    return Verdict(bad, d_sim[bad[:KEEP_BAD]], time.perf_counter() - start)


def single_threaded_environment() -> dict[str, str]:
    """Environment for worker processes: one thread each, as many workers as cores."""
    return {name: "1" for name in ("TCSIM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                   "MKL_NUM_THREADS")}


def worker_count() -> int:
    return int(os.environ.get("TCSIM_HW_WORKERS", max(1, (os.cpu_count() or 2) - 2)))
