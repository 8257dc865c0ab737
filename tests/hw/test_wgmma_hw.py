"""wgmma.mma_async on the GPU (sm_90a) against the simulator, bit for bit.

Run on an H100 with ``pytest -m hw tests/hw/test_wgmma_hw.py`` (``bash scripts/gpu_check.sh
wgmma``). ``TCSIM_HW_WGMMA_COUNT`` sets the random instructions per family (default 20,000;
``TCSIM_HW_WGMMA_FAMILIES`` picks the families, all five by default),
spread over a probe kernel for every qualifier of the family (every legal N and type
combination; tcsim/hw/isa/wgmma_probes.py generates them) with A from shared memory and from
registers, every operand distribution of tcsim.isa.samples, and per batch a random choice of
swizzle (128B mostly, 64B, 32B, none), scale-d, negations and, for f16/bf16, transposes. The GPU
runs here; the simulator runs in ``TCSIM_HW_WORKERS`` processes (default: the cores less two;
tests/wgmma_batches.py). ``TCSIM_HW_LOG`` (JSON lines) receives the counts, timings and the
facts; for fp8 the test logs the mismatch rate and the error distribution before it asserts,
and writes mismatching elements (those of the first few mismatching instructions of each batch)
and a sample of matching ones, with their inputs, to ``wgmma_fp8_elements.npz`` beside the log:
the data to fit the rule with, should it ever fail.
"""

import contextlib
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import wgmma_batches
from hw_log import log_hw
from wgmma_facts import FACTS, fact_result

import tcsim
from tcsim.isa.wgmma import parse_wgmma

pytestmark = pytest.mark.hw

COUNT = int(os.environ.get("TCSIM_HW_WGMMA_COUNT", 20_000))
# TCSIM_HW_WGMMA_FAMILIES (comma list) splits the random test across device calls.
FAMILIES = tuple(os.environ.get("TCSIM_HW_WGMMA_FAMILIES", "f16,bf16,tf32,fp8,int8").split(","))



@pytest.fixture(scope="module")
def hw():
    from tcsim import hw
    from tcsim.hw.isa import wgmma as runner

    try:
        runner.require_wgmma()
    except hw.HardwareUnavailable as error:
        pytest.skip(str(error))
    return runner


@pytest.mark.parametrize("family", FAMILIES)
def test_random_instructions_agree_bit_for_bit(family, hw, rng, monkeypatch):
    """COUNT random instructions over every kernel of the family (every legal N and type
    combination, A from shared memory and from registers), checked in worker processes that
    each run their batches on the GPU and in the simulator (tests/wgmma_batches.py)."""
    kernels = wgmma_batches.kernels(family)
    start = time.perf_counter()
    hw.prepare(kernels)  # into CuPy's kernel cache, where the workers find them
    compile_seconds = time.perf_counter() - start
    batches = wgmma_batches.plan(family, COUNT, rng)
    for name, value in wgmma_batches.single_threaded_environment().items():
        monkeypatch.setenv(name, value)  # inherited by the workers only
    workers = wgmma_batches.worker_count()
    fp8 = wgmma_batches.Fp8Evidence() if family == "fp8" else None
    matches = -(-wgmma_batches.KEEP_MATCHES // len(batches))
    tried = mismatching = 0
    t_hw = t_sim = 0.0
    failures: list[str] = []
    by = {"distribution": {}, "qualifier": {}}  # name -> [instructions, mismatching]
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        run = map  # TCSIM_HW_WORKERS=0: in this process (the host test's dry run)
        if workers:
            run = stack.enter_context(ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn"))).map
        for verdict in run(wgmma_batches.check, batches, [matches] * len(batches)):
            batch = verdict.batch
            tried += batch.count
            mismatching += verdict.mismatching
            t_hw, t_sim = t_hw + verdict.hw_seconds, t_sim + verdict.sim_seconds
            for kind, name in (("distribution", batch.distribution),
                               ("qualifier", batch.qualifier)):
                counts = by[kind].setdefault(name, [0, 0])
                counts[0] += batch.count
                counts[1] += verdict.mismatching
            if verdict.failure and len(failures) < 20:
                failures.append(verdict.failure)
            if fp8 is not None:
                fp8.merge(verdict.fp8)
    log_hw({"test": "wgmma_random", "family": family, "instructions": tried,
          "mismatching": mismatching, "kernels": len(kernels),
          "qualifiers": len({q for q, _ in kernels}), "batches": len(batches),
          "workers": workers, "compile_seconds": round(compile_seconds, 2),
          "wall_seconds": round(time.perf_counter() - start, 2),
          "hw_seconds": round(t_hw, 2), "sim_seconds": round(t_sim, 2),
          "instructions_mismatching_by": by})
    if fp8 is not None:
        log = os.environ.get("TCSIM_HW_LOG")
        if log:
            np.savez_compressed(Path(log).parent / "wgmma_fp8_elements.npz", **fp8.arrays())
        log_hw({"test": "wgmma_fp8_errors", **fp8.summary(),
              "qualifiers": sorted({q for q, _ in kernels})})
    assert tried >= COUNT, f"only {tried} instructions"
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f.name)
def test_hand_derived_fact_on_hardware(fact, hw):
    spec = parse_wgmma(fact.qualifier)
    got = int(fact_result(fact, spec, hw.wgmma)[0, 0])
    verdict = ("model" if got == fact.d_bits else
               "alternative" if got == fact.alternative else "neither")
    log_hw({"test": "wgmma_fact", "fact": fact.name, "qualifier": fact.qualifier,
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
