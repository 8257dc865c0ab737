"""`tcsim.hw.mma` and `tcsim.hw.mma_regs` take what `tcsim.mma` and `tcsim.mma_regs` take
(C optional, a wgmma qualifier too) but ``arch`` (the GPU is the architecture), as the README
says; on the H100 the two give the same bits without C."""

import inspect
from pathlib import Path

import numpy as np
import pytest

import tcsim
from tcsim import hw

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.mark.parametrize("name", ["mma", "mma_regs"])
def test_the_gpus_signatures_are_the_simulators_but_arch(name):
    sim = inspect.signature(getattr(tcsim, name)).parameters
    gpu = inspect.signature(getattr(hw, name)).parameters
    assert list(gpu) == [p for p in sim if p != "arch"]
    assert [gpu[p].default for p in gpu] == [sim[p].default for p in gpu]
    text = " ".join(README.read_text().split())
    assert "`tcsim.hw.mma(qualifier, A, B, C=None)`" in text and "but `arch=`" in text


@pytest.mark.skipif(hw.available(), reason="a GPU is usable here")
@pytest.mark.parametrize("qualifier, a, b", [("m16n8k8.row.col.f32.f16.f16.f32", 16, 8),
                                             ("m64n8k16.f32.f16.f16", 64, 16)])
def test_without_c_it_gets_as_far_as_the_gpu(qualifier, a, b):
    rng = np.random.default_rng()
    A = rng.standard_normal((a, b)).astype(np.float16)
    B = rng.standard_normal((b, 8)).astype(np.float16)
    with pytest.raises(hw.HardwareUnavailable):
        hw.mma(qualifier, A, B)


@pytest.mark.hw
@pytest.mark.parametrize("qualifier, a, b", [("m16n8k8.row.col.f32.f16.f16.f32", 16, 8),
                                             ("m16n8k16.row.col.f16.f16.f16.f16", 16, 16),
                                             ("m64n8k16.f32.f16.f16", 64, 16)])
def test_without_c_the_gpu_and_the_model_agree(qualifier, a, b):
    rng = np.random.default_rng()
    A = rng.standard_normal((5, a, b)).astype(np.float16)
    B = rng.standard_normal((5, b, 8)).astype(np.float16)
    got, want = hw.mma(qualifier, A, B), tcsim.mma(qualifier, A, B)
    assert got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint32 if got.itemsize == 4 else np.uint16),
                          want.view(np.uint32 if want.itemsize == 4 else np.uint16))


@pytest.mark.parametrize("qualifier, shape", [
    ("m16n8k8.row.col.f32.f16.f16.f32", (16, 8, 8)),
    ("m8n8k4.row.col.f32.f16.f16.f32", (8, 4, 8)),  # four products to a warp: zero padding
])
def test_without_c_the_gpu_path_packs_zeros(monkeypatch, qualifier, shape):
    """hw.mma's own packing (matrices -> registers -> the GPU -> matrices), with the GPU's
    register-level call stood in for by the model's, against the model's matrix path."""
    monkeypatch.setattr("tcsim.hw.isa.mma.mma_regs", tcsim.mma_regs)
    rng = np.random.default_rng()
    m, k, n = shape
    A = rng.standard_normal((3, m, k)).astype(np.float16)
    B = rng.standard_normal((3, k, n)).astype(np.float16)
    got, want = hw.mma(qualifier, A, B), tcsim.mma(qualifier, A, B)
    assert got.shape == want.shape == (3, m, n)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.any(got != 0)
