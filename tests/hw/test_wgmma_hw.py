"""wgmma.mma_async on the GPU (sm_90a) against the simulator, bit for bit.

Run on an H100 with ``pytest -m hw tests/hw/test_wgmma_hw.py`` (``bash scripts/gpu_check.sh
wgmma``). ``TCSIM_HW_WGMMA_COUNT`` sets the random instructions per family (default 20,000),
spread over a probe kernel for every qualifier of the family (every legal N and type
combination; tcsim/hw/wgmma_probes.py generates them) with A from shared memory and from
registers, every operand distribution of tcsim.isa.samples, and per batch a random choice of
swizzle (128B mostly, 64B, 32B, none), scale-d, negations and, for f16/bf16, transposes. The GPU
runs here; the simulator runs in ``TCSIM_HW_WORKERS`` processes (default: the cores less two;
tests/wgmma_batches.py). ``TCSIM_HW_LOG`` (JSON lines) receives the counts, timings and the
facts; for fp8 the test logs the mismatch rate and the error distribution before it asserts,
and writes mismatching elements (those of the first few mismatching instructions of each batch)
and a sample of matching ones, with their inputs, to ``wgmma_fp8_elements.npz`` beside the log:
the data to fit the rule with, should it ever fail.
"""

import json
import multiprocessing
import os
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import wgmma_batches
from wgmma_facts import FACTS, fact_result

import tcsim
from tcsim.isa.wgmma import parse_wgmma, wgmma_fragment

pytestmark = pytest.mark.hw

COUNT = int(os.environ.get("TCSIM_HW_WGMMA_COUNT", 20_000))
FAMILIES = ("f16", "bf16", "tf32", "fp8", "int8")
KEEP_MISMATCHES, KEEP_MATCHES = 50_000, 20_000


def _log(record: dict) -> None:
    path = os.environ.get("TCSIM_HW_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


@pytest.fixture(scope="module")
def hw():
    from tcsim import hw
    from tcsim.hw import warpgroup as runner

    try:
        runner.require_wgmma()
    except hw.HardwareUnavailable as error:
        pytest.skip(str(error))
    return runner


class _Fp8Record:
    """Mismatching fp8 elements with their inputs, a sample of matching ones, error stats."""

    def __init__(self):
        self.keep = {"mismatch": [], "match": []}
        self.log2_error = []  # log2(|hw - sim| / largest |term|) of finite mismatches
        self.elements = self.mismatching = 0

    def add(self, spec, opts, dist, A, B, C, D_hw, D_sim, rng):
        fd = spec.format("d")
        bad = D_hw != D_sim
        self.elements += bad.size
        self.mismatching += int(bad.sum())
        a = spec.format("a").values(A)
        b = spec.format("b").values(B)
        for label, mask, limit in (("mismatch", bad, KEEP_MISMATCHES),
                                   ("match", ~bad & (rng.random(bad.shape) < 0.002),
                                    KEEP_MATCHES)):
            i, r, c = np.nonzero(mask)
            room = limit - sum(len(x["c"]) for x in self.keep[label])
            i, r, c = i[:room], r[:room], c[:room]
            if i.size:
                self.keep[label].append({
                    "qualifier": np.array([spec.qualifier] * i.size),
                    "options": np.array([json.dumps(opts)] * i.size),
                    "distribution": np.array([dist] * i.size),
                    "a_row": A[i, r, :], "b_col": B[i, :, c], "c": C[i, r, c],
                    "hw": D_hw[i, r, c], "sim": D_sim[i, r, c]})
        i, r, c = np.nonzero(bad)
        if i.size:
            hw_v, sim_v = fd.values(D_hw[i, r, c]), fd.values(D_sim[i, r, c])
            with np.errstate(all="ignore"):
                terms = np.abs(a[i, r, :] * b[i, :, c])
                largest = np.maximum(terms.max(axis=1), np.abs(fd.values(C[i, r, c])))
                err = np.log2(np.abs(hw_v - sim_v) / largest)
            self.log2_error.extend(err[np.isfinite(err)].tolist())

    def save(self, qualifiers):
        log = os.environ.get("TCSIM_HW_LOG")
        if log:
            out = {}
            for label, parts in self.keep.items():
                for key in parts[0] if parts else ():
                    out[f"{label}_{key}"] = np.concatenate([p[key] for p in parts])
            np.savez_compressed(Path(log).parent / "wgmma_fp8_elements.npz", **out)
        err = np.array(self.log2_error)
        hist = np.histogram(err, bins=np.arange(-40, 1)) if err.size else None
        _log({"test": "wgmma_fp8_errors", "elements": self.elements,
              "mismatching": self.mismatching,
              "rate": self.mismatching / max(1, self.elements), "qualifiers": qualifiers,
              "log2_error_max": float(err.max()) if err.size else None,
              "log2_error_median": float(np.median(err)) if err.size else None,
              "log2_error_histogram": None if hist is None else
              {int(lo): int(n) for lo, n in zip(hist[1], hist[0]) if n}})


def _drawn(batches):
    """(batch, A, B, C, operands) for each batch, each drawn on a helper thread while the
    previous one runs."""
    def draw(batch):
        A, B, C = batch.matrices()
        return batch, A, B, C, batch.operands(A, B, C)

    with ThreadPoolExecutor(1) as pool:
        ahead = [pool.submit(draw, b) for b in batches[:1]]
        for i in range(len(batches)):
            done = ahead.pop(0).result()
            if i + 1 < len(batches):
                ahead.append(pool.submit(draw, batches[i + 1]))
            yield done


class _Tally:
    """Counts, timings and the first failures of a family's random test."""

    def __init__(self, fp8: _Fp8Record | None, rng):
        self.fp8, self.rng = fp8, rng
        self.tried = self.mismatching = 0
        self.t_hw = self.t_sim = 0.0
        self.failures: list[str] = []
        self.by = {"distribution": {}, "qualifier": {}}  # name -> [instructions, mismatching]

    def add(self, batch, A, B, C, d_hw, verdict) -> None:
        spec, n, bad = batch.spec, batch.count, verdict.bad
        self.tried += n
        self.mismatching += bad.size
        self.t_sim += verdict.seconds
        for kind, name in (("distribution", batch.distribution), ("qualifier", batch.qualifier)):
            counts = self.by[kind].setdefault(name, [0, 0])
            counts[0] += n
            counts[1] += int(bad.size)
        fd = wgmma_fragment(spec, "d")
        if self.fp8 is not None:
            D_hw = fd.scatter_bits(fd.from_registers(d_hw))
            d_sim = d_hw.copy()
            d_sim[bad[: len(verdict.sim_regs)]] = verdict.sim_regs
            self.fp8.add(spec, dict(batch.options), batch.distribution, A, B, C, D_hw,
                         fd.scatter_bits(fd.from_registers(d_sim)), self.rng)
        if bad.size and len(self.failures) < 20:
            i = bad[0]
            D_hw, D_sim = (fd.scatter_bits(fd.from_registers(x))
                           for x in (d_hw[i], verdict.sim_regs[0]))
            r, col = np.argwhere(D_hw != D_sim)[0]
            self.failures.append(
                f"{batch.qualifier} A from {batch.a_source} {batch.distribution} "
                f"{dict(batch.options)} swizzle {batch.swizzle} (seed {batch.seed}): {bad.size}"
                f" of {n} differ; first D[{r},{col}] hw {int(D_hw[r, col]):#x} sim "
                f"{int(D_sim[r, col]):#x}; a_row={A[i, r].tolist()} "
                f"b_col={B[i, :, col].tolist()} c={int(C[i, r, col])}")


@pytest.mark.parametrize("family", FAMILIES)
def test_random_instructions_agree_bit_for_bit(family, hw, rng, monkeypatch):
    """COUNT random instructions over every kernel of the family (every legal N and type
    combination, A from shared memory and from registers); the GPU runs them here, the
    simulator in worker processes (tests/wgmma_batches.py)."""
    kernels = wgmma_batches.kernels(family)
    start = time.perf_counter()
    hw.prepare(kernels)
    compile_seconds = time.perf_counter() - start
    batches = wgmma_batches.plan(family, COUNT, rng)
    tally = _Tally(_Fp8Record() if family == "fp8" else None,
                   np.random.default_rng(int(rng.integers(2**32))))
    for name, value in wgmma_batches.single_threaded_environment().items():
        monkeypatch.setenv(name, value)  # inherited by the workers only
    workers = wgmma_batches.worker_count()
    pending: deque = deque()
    start = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for batch, A, B, C, operands in _drawn(batches):
            t0 = time.perf_counter()
            d_hw = hw.wgmma_regs(batch.qualifier, *operands, swizzle=batch.swizzle,
                                 **dict(batch.options))
            tally.t_hw += time.perf_counter() - t0
            future = pool.submit(wgmma_batches.simulate, batch, wgmma_batches.digest(d_hw))
            pending.append((batch, A, B, C, d_hw, future))
            while pending and (len(pending) > 3 * workers or pending[0][-1].done()):
                *item, future = pending.popleft()
                tally.add(*item, future.result())
        while pending:
            *item, future = pending.popleft()
            tally.add(*item, future.result())
    _log({"test": "wgmma_random", "family": family, "instructions": tally.tried,
          "mismatching": tally.mismatching, "kernels": len(kernels),
          "qualifiers": len({q for q, _ in kernels}), "batches": len(batches),
          "workers": workers, "compile_seconds": round(compile_seconds, 2),
          "wall_seconds": round(time.perf_counter() - start, 2),
          "hw_seconds": round(tally.t_hw, 2), "sim_seconds": round(tally.t_sim, 2),
          "instructions_mismatching_by": tally.by})
    if tally.fp8 is not None:
        tally.fp8.save(sorted({q for q, _ in kernels}))
    assert tally.tried >= COUNT, f"only {tally.tried} instructions"
    assert not tally.failures, "\n".join(tally.failures)


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f.name)
def test_hand_derived_fact_on_hardware(fact, hw):
    spec = parse_wgmma(fact.qualifier)
    got = int(fact_result(fact, spec, hw.wgmma)[0, 0])
    verdict = ("model" if got == fact.d_bits else
               "alternative" if got == fact.alternative else "neither")
    _log({"test": "wgmma_fact", "fact": fact.name, "qualifier": fact.qualifier,
          "d_bits": hex(got), "model": hex(fact.d_bits), "alternative": hex(fact.alternative),
          "verdict": verdict})
    assert got == fact.d_bits, f"{fact.why}: the GPU gives {got:#x} ({verdict})"


MATRIX_CASES = [("m64n8k16.f32.f16.f16", "smem"), ("m64n256k16.f16.f16.f16", "registers"),
                ("m64n200k16.f32.bf16.bf16", "smem"), ("m64n24k8.f32.tf32.tf32", "registers"),
                ("m64n128k32.f32.e4m3.e4m3", "smem"), ("m64n24k32.f16.e5m2.e5m2", "registers"),
                ("m64n208k32.s32.s8.s8", "smem"), ("m64n64k32.satfinite.s32.u8.u8", "registers")]


@pytest.mark.parametrize("qualifier, a_source", MATRIX_CASES)
def test_hardware_close_to_float64_at_matrix_level(qualifier, a_source, hw, rng):
    """Guards against an error shared by the probe's packing and the model (fragment maps,
    shared-memory layouts): D through tcsim's maps must be A @ B + C up to rounding."""
    spec = parse_wgmma(qualifier)
    n = 64
    fa, fb, fc = (spec.format(op) for op in "abc")
    if spec.integer:
        A, B = (rng.integers(np.iinfo(f.dtype).min, np.iinfo(f.dtype).max + 1,
                             (n,) + spec.matrix_shape(op)).astype(f.dtype)
                for f, op in ((fa, "a"), (fb, "b")))
        C = rng.integers(-(2**30), 2**30, (n, spec.m, spec.n)).astype(np.int32)
        want = A.astype(np.int64) @ B.astype(np.int64) + C
        got = hw.wgmma(qualifier, A, B, C, a_source=a_source)
        assert np.array_equal(got.astype(np.int64), want)
        return
    A = rng.standard_normal((n,) + spec.matrix_shape("a")).astype(fa.dtype)
    B = rng.standard_normal((n,) + spec.matrix_shape("b")).astype(fb.dtype)
    C = rng.standard_normal((n, spec.m, spec.n)).astype(fc.dtype)
    a, b, c = (f.values(f.to_bits(x)) for f, x in ((fa, A), (fb, B), (fc, C)))  # tf32 cut
    exact = a @ b + c
    scale = np.abs(a) @ np.abs(b) + np.abs(c)
    for opts in ({}, {"scale_d": 0, "trans_b": spec.transposable}):
        got = hw.wgmma(qualifier, A, B, C, a_source=a_source, **opts).astype(np.float64)
        want = exact if opts.get("scale_d", 1) else a @ b
        # f32: a few 2**-23 of the terms' size (fp8: 13-bit terms, 2**-13); f16 out 2**-10
        bound = {"f16": 2.0**-8, "f32": 2.0**-11 if spec.family == "fp8" else 2.0**-20}
        err = np.abs(got - want)
        assert np.all(err <= bound[spec.d_type] * scale), \
            f"{opts}: max error / scale {np.max(err / scale):.3g}"


def test_harness_reports_the_gpu(hw):
    assert "NVIDIA" in tcsim.hw.device_name()
