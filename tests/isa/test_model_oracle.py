"""The vectorized engine against an independent scalar implementation of the documented model."""

import numpy as np
import pytest
from oracle import dot

import tcsim
from tcsim.isa import samples
from tcsim.isa.mma import mma_bits

# The fused-adder model; sm_90 runs m8n8k4 as an FFMA sequence instead (test_quad_pair.py).
QUALIFIERS = [q for q in tcsim.supported_qualifiers() if not q.startswith("m8n8k4")]


def oracle_mma(spec, A, B, C, rule):
    n = A.shape[0]
    out = np.empty((n, spec.m, spec.n), np.int64)
    zero = (rule.zero_exponent or {}).get(spec.d_type, -10**9)
    for i in range(n):
        for r in range(spec.m):
            for c in range(spec.n):
                out[i, r, c] = dot(
                    spec.a_type, spec.d_type, spec.c_type, A[i, r, :], B[i, :, c], C[i, r, c],
                    group=rule.group_size, F=rule.fraction_bits, zero_exp=zero,
                    nan_bits=rule.nan_bits[spec.d_type],
                )
    return out


@pytest.mark.parametrize("qualifier", QUALIFIERS)
@pytest.mark.parametrize("distribution", list(samples.DISTRIBUTIONS))
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_engine_matches_scalar_model(qualifier, distribution, arch, rng):
    spec = tcsim.parse(qualifier)
    prof = tcsim.profile(arch)
    A, B, C = samples.draw(spec, distribution, 6 if arch == "sm_90" else 2, rng)
    got = mma_bits(spec, A, B, C, prof)
    want = oracle_mma(spec, A, B, C, prof.rule(spec.input_type))
    bad = np.argwhere(got != want)
    assert bad.size == 0, (
        f"{len(bad)} elements differ, first at {tuple(bad[0])}: "
        f"engine {int(got[tuple(bad[0])]):#x}, model {int(want[tuple(bad[0])]):#x}"
    )
