"""Random wgmma batches for tests/hw/test_wgmma_hw.py, each reproducible from its seed, and
their check, which runs in worker processes.

The test process only plans batches (qualifier, A source, distribution, options, swizzle, count,
seed). Each worker draws a batch's inputs from its seed, runs them on the GPU and in the
simulator and returns the verdict: mismatch counts, the first mismatch described, and for fp8
the evidence to fit the rule with. So drawing, staging and simulating run on every core at once
(one process drawing for the GPU was the bottleneck: 454 s for 10^6 f16 instructions, 39 s of
them on the GPU), and no register file crosses a pipe.
"""

from __future__ import annotations

import json
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
KEEP_MISMATCHES, KEEP_MATCHES = 50_000, 20_000  # fp8 elements kept with their inputs


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


class Fp8Evidence:
    """fp8 elements with their inputs (mismatching ones and a sample of matching ones) and the
    error of each finite mismatch relative to its output's largest term: the data to fit the
    rule with, should it ever fail. A batch's evidence is small; `merge` keeps the totals."""

    def __init__(self):
        self.keep: dict[str, list[dict]] = {"mismatch": [], "match": []}
        self.log2_error: list[float] = []
        self.elements = self.mismatching = 0

    @classmethod
    def of(cls, batch: Batch, A, B, C, D_hw, D_sim, rng, matches: int) -> Fp8Evidence:
        """A batch's evidence: up to KEEP_MISMATCHES mismatching elements, ``matches``
        matching ones drawn at random."""
        spec, fd = batch.spec, batch.spec.format("d")
        evidence = cls()
        bad = D_hw != D_sim
        evidence.elements, evidence.mismatching = bad.size, int(bad.sum())
        good = np.flatnonzero(~bad)
        sample = np.zeros(bad.size, bool)
        sample[rng.choice(good, min(matches, good.size), replace=False)] = True
        for label, mask in (("mismatch", bad), ("match", sample.reshape(bad.shape))):
            i, r, c = (x[:KEEP_MISMATCHES] for x in np.nonzero(mask))
            if i.size:
                evidence.keep[label].append({
                    "qualifier": np.array([batch.qualifier] * i.size),
                    "options": np.array([json.dumps(dict(batch.options))] * i.size),
                    "distribution": np.array([batch.distribution] * i.size),
                    "a_row": A[i, r, :], "b_col": B[i, :, c], "c": C[i, r, c],
                    "hw": D_hw[i, r, c], "sim": D_sim[i, r, c]})
        i, r, c = np.nonzero(bad)
        if i.size:
            a, b = spec.format("a").values(A), spec.format("b").values(B)
            hw_v, sim_v = fd.values(D_hw[i, r, c]), fd.values(D_sim[i, r, c])
            with np.errstate(all="ignore"):
                terms = np.abs(a[i, r, :] * b[i, :, c])
                largest = np.maximum(terms.max(axis=1), np.abs(fd.values(C[i, r, c])))
                err = np.log2(np.abs(hw_v - sim_v) / largest)
            evidence.log2_error = err[np.isfinite(err)].tolist()
        return evidence

    def merge(self, other: Fp8Evidence) -> None:
        self.elements += other.elements
        self.mismatching += other.mismatching
        self.log2_error += other.log2_error
        for label, limit in (("mismatch", KEEP_MISMATCHES), ("match", KEEP_MATCHES)):
            room = limit - sum(len(x["c"]) for x in self.keep[label])
            for part in other.keep[label]:
                if room > 0:
                    self.keep[label].append({k: v[:room] for k, v in part.items()})
                    room -= len(part["c"])

    def arrays(self) -> dict[str, np.ndarray]:
        """The kept elements as flat arrays ("mismatch_hw", "match_a_row", ...)."""
        out = {}
        for label, parts in self.keep.items():
            for key in parts[0] if parts else ():
                out[f"{label}_{key}"] = np.concatenate([p[key] for p in parts])
        return out

    def summary(self) -> dict:
        err = np.array(self.log2_error)
        hist = np.histogram(err, bins=np.arange(-40, 1)) if err.size else None
        return {"elements": self.elements, "mismatching": self.mismatching,
                "rate": self.mismatching / max(1, self.elements),
                "log2_error_max": float(err.max()) if err.size else None,
                "log2_error_median": float(np.median(err)) if err.size else None,
                "log2_error_histogram": None if hist is None else
                {int(lo): int(n) for lo, n in zip(hist[1], hist[0]) if n}}


@dataclass
class Verdict:
    batch: Batch
    mismatching: int  # instructions whose D registers differ
    failure: str | None  # the first mismatching element, described
    fp8: Fp8Evidence | None
    hw_seconds: float
    sim_seconds: float


def check(batch: Batch, fp8_matches: int = 0) -> Verdict:
    """Run a batch on the GPU and in the simulator (in a worker process: both at once on
    every core) and compare D's registers bit for bit."""
    from tcsim.hw.isa import wgmma as hw_wgmma

    A, B, C = batch.matrices()
    operands = batch.operands(A, B, C)
    options = dict(batch.options)
    t0 = time.perf_counter()
    d_hw = hw_wgmma.wgmma_regs(batch.qualifier, *operands, swizzle=batch.swizzle, **options)
    t1 = time.perf_counter()
    d_sim = tcsim.wgmma_regs(batch.qualifier, *operands, **options)
    t2 = time.perf_counter()
    bad = np.flatnonzero((d_hw != d_sim).reshape(batch.count, -1).any(axis=1))
    fd = wgmma_fragment(batch.spec, "d")
    failure = fp8 = None
    if bad.size:
        i = bad[0]
        D_hw, D_sim = (fd.scatter_bits(fd.from_registers(x[i])) for x in (d_hw, d_sim))
        r, col = np.argwhere(D_hw != D_sim)[0]
        failure = (f"{batch.qualifier} A from {batch.a_source} {batch.distribution} {options} "
                   f"swizzle {batch.swizzle} (seed {batch.seed}): {bad.size} of {batch.count} "
                   f"differ; first D[{r},{col}] hw {int(D_hw[r, col]):#x} sim "
                   f"{int(D_sim[r, col]):#x}; a_row={A[i, r].tolist()} "
                   f"b_col={B[i, :, col].tolist()} c={int(C[i, r, col])}")
    if batch.spec.family == "fp8":
        D_hw, D_sim = (fd.scatter_bits(fd.from_registers(x)) for x in (d_hw, d_sim))
        fp8 = Fp8Evidence.of(batch, A, B, C, D_hw, D_sim,
                             np.random.default_rng(batch.seed + 1), fp8_matches)
    return Verdict(batch, int(bad.size), failure, fp8, t1 - t0, t2 - t1)


def single_threaded_environment() -> dict[str, str]:
    """Environment for worker processes: one thread each, as many workers as cores."""
    return {name: "1" for name in ("TCSIM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                   "MKL_NUM_THREADS")}


def worker_count() -> int:
    """``TCSIM_HW_WORKERS``, else the cores less one; 0 checks in the test's own process."""
    return int(os.environ.get("TCSIM_HW_WORKERS", max(1, (os.cpu_count() or 2) - 1)))
