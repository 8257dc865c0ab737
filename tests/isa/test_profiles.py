"""Arch profiles: labels, supported shapes, and the published parameters they encode."""

import numpy as np
import pytest

import tcsim

K16 = "m16n8k16.row.col.f32.f16.f16.f32"


def test_every_profile_is_labelled():
    assert set(tcsim.PROFILES) == {"sm_70", "sm_75", "sm_80", "sm_89", "sm_90"}
    for name, prof in tcsim.PROFILES.items():
        if name == "sm_90":
            assert prof.verified_on_hardware and "H100" in prof.source
        else:
            assert not prof.verified_on_hardware
            assert "not verified on hardware" in prof.source and "MMA-Sim" in prof.source


def _k16_case():
    # One product 1 * 1 in the first k8 half; eight products 1.5 * 2**-24 in the second.
    A = np.zeros((16, 16), np.float16)
    B = np.zeros((16, 8), np.float16)
    A[0, 0], B[0, 0] = 1.0, 1.0
    A[0, 8:], B[8:, 0] = 1.5 * 2.0**-12, 2.0**-12
    return A, B, np.zeros((16, 8), np.float32)


@pytest.mark.parametrize("arch, bits", [
    # sm_90: one 16-product step keeping 25 fraction bits: 1 + 24 * 2**-25 = 1 + 6 ulp.
    ("sm_90", 0x3F800006),
    # sm_80/sm_89 (published): 1.0 after the first 8-product step; the second keeps 24 bits, so
    # each 3 * 2**-25 truncates to 2**-24: 1 + 8 * 2**-24 = 1 + 4 ulp.
    ("sm_80", 0x3F800004),
    ("sm_89", 0x3F800004),
])
def test_k16_steps_and_fraction_bits(arch, bits):
    D = tcsim.mma(K16, *_k16_case(), arch=arch)
    assert int(D.view(np.uint32)[0, 0]) == bits


def test_architectures_refuse_shapes_they_lack():
    A, B, C = _k16_case()
    with pytest.raises(ValueError, match="sm_75 cannot run mma.sync m16n8k16"):
        tcsim.mma(K16, A, B, C, arch="sm_75")
    with pytest.raises(ValueError, match="sm_70 cannot run"):
        tcsim.mma("m16n8k8.row.col.f32.f16.f16.f32", A[:, :8], B[:8], C, arch="sm_70")
    with pytest.raises(ValueError, match="unsupported architecture"):
        tcsim.profile("sm_61")
