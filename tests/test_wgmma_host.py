"""tcsim.hw.wgmma's host side without a GPU: each probe launch is emulated on the CPU as the
kernel and the H100 are modeled to run it (chunks copied to their window offsets, A and B read
back through the descriptors by `MatrixDescriptor.layout`, the wgmma by the simulator), so that
everything but CUDA itself (byte orders, B's transpose, descriptors, registers, options) is
checked here; and a dry run of tests/hw/test_wgmma_hw.py on that emulation."""

import importlib

import numpy as np
import pytest
import wgmma_batches

import tcsim
from tcsim.hw.isa import wgmma as hw_wgmma
from tcsim.isa import samples
from tcsim.isa.wgmma import parse_wgmma, wgmma_fragment
from tcsim.memory import MatrixDescriptor

WINDOW = 5 * hw_wgmma.ALIGN  # where the emulated probe's window starts


def emulate(launch: hw_wgmma.Batch) -> np.ndarray:
    """D's registers of one launch, as the probe kernel computes them on the modeled H100."""
    spec = parse_wgmma(launch.key[0])
    plan, n = launch.plan, launch.c.shape[0]
    smem = np.zeros((n, WINDOW + plan.window_bytes + hw_wgmma.ALIGN), np.uint8)
    where = WINDOW + plan.chunk_offsets[:, None].astype(np.int64) + np.arange(16)
    smem[:, where] = launch.tiles.reshape(n, -1, 16)
    mode = launch.mode
    options = {"scale_d": mode & 1, "scale_a": -1 if mode >> 1 & 1 else 1,
               "scale_b": -1 if mode >> 2 & 1 else 1, "trans_a": bool(mode >> 3 & 1),
               "trans_b": bool(mode >> 4 & 1)}

    def read(desc: int, operand: str, rows: int, transposed: bool) -> np.ndarray:
        fmt = spec.format(operand)
        e = fmt.storage_bits // 8
        layout = MatrixDescriptor.decode(desc + (WINDOW >> 4)).layout(
            e, "MN" if transposed else "K", rows)
        raw = smem[:, layout.addresses()[..., None] + np.arange(e)]  # (n, rows, K, e)
        return fmt.from_bits(np.ascontiguousarray(raw).view(fmt.uint)[..., 0])

    B = np.swapaxes(read(plan.desc_b, "b", spec.n, options["trans_b"]), -1, -2)
    a = launch.a if launch.a is not None else read(plan.desc_a, "a", spec.m, options["trans_a"])
    if launch.a is not None:
        options.pop("trans_a")
    return tcsim.wgmma_regs(spec.qualifier, a, B, launch.c, **options)


@pytest.fixture
def emulated(monkeypatch):
    monkeypatch.setattr(hw_wgmma, "require_wgmma", lambda: None)
    monkeypatch.setattr(hw_wgmma, "_run", emulate)
    monkeypatch.setattr(hw_wgmma, "BATCH_BYTES", 1 << 20)  # several launches per call
    return hw_wgmma


CASES = [("m64n8k16.f32.f16.f16", "smem", {"trans_a": True, "scale_b": -1}, "128B"),
         ("m64n64k16.f16.f16.f16", "registers", {"trans_b": True, "scale_d": 0}, "64B"),
         ("m64n200k16.f32.bf16.bf16", "smem", {"trans_a": True, "trans_b": True}, None),
         ("m64n24k8.f32.tf32.tf32", "smem", {"scale_a": -1}, "32B"),
         ("m64n128k32.f16.e5m2.e4m3", "registers", {}, "none"),
         ("m64n256k32.f32.e4m3.e4m3", "smem", {"scale_a": -1, "scale_b": -1}, "128B"),
         ("m64n208k32.satfinite.s32.u8.s8", "smem", {"scale_d": 0}, None)]


@pytest.mark.parametrize("qualifier, a_source, options, swizzle", CASES)
def test_emulated_probe_matches_the_simulator(qualifier, a_source, options, swizzle, emulated,
                                              rng):
    spec = parse_wgmma(qualifier)
    A, B, C = samples.draw(spec, "uniform_bits" if spec.integer else "wide", 40, rng)
    fa, fc = wgmma_fragment(spec, "a"), wgmma_fragment(spec, "c")
    a = fa.to_registers(fa.gather_bits(A)) if a_source == "registers" \
        else spec.format("a").from_bits(A)
    Bm, c = spec.format("b").from_bits(B), fc.to_registers(fc.gather_bits(C))
    got = emulated.wgmma_regs(qualifier, a, Bm, c, swizzle=swizzle, **options)
    assert np.array_equal(got, tcsim.wgmma_regs(qualifier, a, Bm, c, **options))
    # matrix level, broadcasting B
    Am = spec.format("a").from_bits(A)
    D = emulated.wgmma(qualifier, Am, Bm[0], spec.format("c").from_bits(C), a_source=a_source,
                       swizzle=swizzle, **options)
    fmt = spec.format("d")
    assert np.array_equal(fmt.to_bits(D), fmt.to_bits(tcsim.wgmma(
        qualifier, Am, Bm[0], spec.format("c").from_bits(C), **options)))


def test_a_wrong_descriptor_would_be_caught(emulated, rng, monkeypatch):
    """The emulation is not vacuous: B staged K-major but read as MN-major differs."""
    q = "m64n64k16.f32.f16.f16"
    spec = parse_wgmma(q)
    A, B, C = samples.draw(spec, "normal", 3, rng)
    fc = wgmma_fragment(spec, "c")
    args = (spec.format("a").from_bits(A), spec.format("b").from_bits(B),
            fc.to_registers(fc.gather_bits(C)))
    right = emulated.wgmma_regs(q, *args)
    real = hw_wgmma._batches

    def flipped(*a, **k):
        for launch in real(*a, **k):
            yield hw_wgmma.Batch(launch.key, launch.plan, launch.mode | 1 << 4, launch.tiles,
                                   launch.a, launch.c, launch.d_registers)

    monkeypatch.setattr(hw_wgmma, "_batches", flipped)
    assert not np.array_equal(emulated.wgmma_regs(q, *args), right)


def test_hw_test_file_runs_on_the_emulation(emulated, monkeypatch, tmp_path, rng):
    """The GPU test's own logic (batches, options, logging, fp8 records, facts, matrix check)
    on the emulation, with a few probes per family."""
    monkeypatch.setenv("TCSIM_HW_LOG", str(tmp_path / "hw.jsonl"))
    monkeypatch.setenv("TCSIM_HW_WORKERS", "0")  # the emulation lives in this process
    monkeypatch.setattr(emulated, "prepare", lambda kernels: None)
    hw_test = importlib.import_module("hw.test_wgmma_hw")
    every = wgmma_batches.kernels
    monkeypatch.setattr(wgmma_batches, "kernels", lambda family: every(family)[::97][:2])
    monkeypatch.setattr(hw_test, "COUNT", 2)
    for family in hw_test.FAMILIES:
        hw_test.test_random_instructions_agree_bit_for_bit(family, emulated, rng, monkeypatch)
    for fact in hw_test.FACTS:
        hw_test.test_hand_derived_fact_on_hardware(fact, emulated)
    for qualifier, a_source in hw_test.MATRIX_CASES[::3]:
        hw_test.test_hardware_close_to_float64_at_matrix_level(qualifier, a_source, emulated,
                                                               rng)
    log = (tmp_path / "hw.jsonl").read_text()
    assert log.count('"wgmma_random"') == 5 and '"verdict": "model"' in log
    assert (tmp_path / "wgmma_fp8_elements.npz").exists()
