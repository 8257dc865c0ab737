"""wgmma.mma_async on the GPU (sm_90a) against the simulator, bit for bit.

Run on an H100 with ``pytest -m hw tests/hw/test_wgmma_hw.py`` (``bash scripts/gpu_check.sh
wgmma``). ``TCSIM_HW_WGMMA_COUNT`` sets the random instructions per family (default 20,000),
spread over the family's probe kernels (tcsim/hw/wgmma_probes.py: every type pair, N from 8 to
256 with odd ones, A from shared memory and from registers), every operand distribution of
tcsim.isa.samples, and per batch a random choice of swizzle (128B mostly, 64B, 32B, none),
scale-d, negations and, for f16/bf16, transposes. ``TCSIM_HW_LOG`` (JSON lines) receives the
counts, timings and the facts; for fp8, whose rule is a hypothesis (MMA-Sim's 13-bit model),
the test logs the mismatch rate and the error distribution before it asserts, and writes the
mismatching elements (and a sample of matching ones) with their inputs to
``wgmma_fp8_elements.npz`` beside the log, the data to fit the rule with if it is wrong.
"""

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from wgmma_facts import FACTS, fact_result

import tcsim
from tcsim.isa import samples
from tcsim.isa.wgmma import parse_wgmma, wgmma_fragment

pytestmark = pytest.mark.hw

COUNT = int(os.environ.get("TCSIM_HW_WGMMA_COUNT", 20_000))
FAMILIES = ("f16", "bf16", "tf32", "fp8", "int8")
SWIZZLES = ("128B", "128B", "128B", "none", "64B", "32B")
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
    from tcsim.hw.wgmma_probes import PROBES

    try:
        runner.require_wgmma()
    except hw.HardwareUnavailable as error:
        pytest.skip(str(error))
    start = time.perf_counter()
    runner.prepare(PROBES)
    _log({"test": "wgmma_compile", "kernels": len(PROBES),
          "seconds": round(time.perf_counter() - start, 2), "gpu": hw.device_name()})
    return runner


def _probes(family: str) -> list[tuple[str, str]]:
    from tcsim.hw.wgmma_probes import PROBES

    return [(q, a) for q, a in PROBES if parse_wgmma(q).family == family]


def _options(spec, a_source: str, rng) -> tuple[dict, str]:
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
        if opts.get(flag) and swizzle != "none" and (rows * 2) % {"128B": 128, "64B": 64,
                                                                  "32B": 32}[swizzle]:
            swizzle = None  # tcsim.hw picks the widest swizzle each tile fills
    return opts, swizzle


def _operands(spec, a_source, A, B, C):
    fa, fc = wgmma_fragment(spec, "a"), wgmma_fragment(spec, "c")
    a = fa.to_registers(fa.gather_bits(A)) if a_source == "registers" \
        else spec.format("a").from_bits(A)
    return a, spec.format("b").from_bits(B), fc.to_registers(fc.gather_bits(C))


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


def _batches(family: str, rng):
    """(qualifier, A source, distribution, options, swizzle, A, B, C bits, operands) for each
    batch of a family's random test: every probe kernel, every distribution."""
    probes = _probes(family)
    per_probe = max(1, COUNT // len(probes))
    for qualifier, a_source in probes:
        spec = parse_wgmma(qualifier)
        dists = list(samples.distributions(spec))
        for dist in dists:
            n = max(1, per_probe // len(dists))
            opts, swizzle = _options(spec, a_source, rng)
            A, B, C = samples.draw(spec, dist, n, rng)
            yield (qualifier, a_source, dist, opts, swizzle, A, B, C,
                   _operands(spec, a_source, A, B, C))


def _prefetched(batches):
    """The batches, each drawn on a helper thread while the previous one runs."""
    with ThreadPoolExecutor(1) as pool:
        ahead = pool.submit(next, batches, None)
        while (batch := ahead.result()) is not None:
            ahead = pool.submit(next, batches, None)
            yield batch


@pytest.mark.parametrize("family", FAMILIES)
def test_random_instructions_agree_bit_for_bit(family, hw, rng):
    fp8 = _Fp8Record() if family == "fp8" else None
    sample_rng = np.random.default_rng(int(rng.integers(2**32)))  # rng is the helper's
    tried, mismatching, t_hw, t_sim, failures = 0, 0, 0.0, 0.0, []
    by = {"distribution": {}, "qualifier": {}}  # name -> [instructions, mismatching]
    for qualifier, a_source, dist, opts, swizzle, A, B, C, operands in _prefetched(
            _batches(family, rng)):
        spec = parse_wgmma(qualifier)
        n = A.shape[0]
        t0 = time.perf_counter()
        d_hw = hw.wgmma_regs(qualifier, *operands, swizzle=swizzle, **opts)
        t1 = time.perf_counter()
        d_sim = tcsim.wgmma_regs(qualifier, *operands, **opts)
        t2 = time.perf_counter()
        t_hw, t_sim, tried = t_hw + t1 - t0, t_sim + t2 - t1, tried + n
        bad = np.flatnonzero((d_hw != d_sim).reshape(n, -1).any(axis=1))
        mismatching += bad.size
        for kind, name in (("distribution", dist), ("qualifier", qualifier)):
            counts = by[kind].setdefault(name, [0, 0])
            counts[0] += n
            counts[1] += int(bad.size)
        fd = wgmma_fragment(spec, "d")
        if fp8 is not None:
            D_hw, D_sim = (fd.scatter_bits(fd.from_registers(x)) for x in (d_hw, d_sim))
            fp8.add(spec, opts, dist, A, B, C, D_hw, D_sim, sample_rng)
        if bad.size and len(failures) < 20:
            i = bad[0]
            D_hw, D_sim = (fd.scatter_bits(fd.from_registers(x[i])) for x in (d_hw, d_sim))
            r, col = np.argwhere(D_hw != D_sim)[0]
            failures.append(
                f"{qualifier} A from {a_source} {dist} {opts} swizzle {swizzle}: {bad.size} of "
                f"{n} differ; first D[{r},{col}] hw {int(D_hw[r, col]):#x} sim "
                f"{int(D_sim[r, col]):#x}; a_row={A[i, r].tolist()} "
                f"b_col={B[i, :, col].tolist()} c={int(C[i, r, col])}")
    _log({"test": "wgmma_random", "family": family, "instructions": tried,
          "mismatching": mismatching, "kernels": len(_probes(family)),
          "hw_seconds": round(t_hw, 2), "sim_seconds": round(t_sim, 2),
          "instructions_mismatching_by": by})
    if fp8 is not None:
        fp8.save(sorted({q for q, _ in _probes(family)}))
    assert not failures, "\n".join(failures)


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
