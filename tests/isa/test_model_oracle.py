"""The vectorized engine against independent scalar implementations of the documented models.

Every qualifier on every arch profile that runs it, on freshly drawn operands from every
distribution (subnormals, zeros, infinities, NaNs, overflow...): the fused-adder model against
tests/oracle.py, and sm_90's m8n8k4 against a scalar FFMA sequence. A batch large enough for
several chunks on the thread pool is checked too, through a random sample of its instructions.
"""

import math
import struct

import numpy as np
import pytest
from oracle import decode, dot, fp8_lowered_dot, integer_dot

import tcsim
from tcsim.isa import engine, samples
from tcsim.isa.arithmetic import mma_bits
from tcsim.isa.profiles import PROFILES

CASES = [(arch, q) for arch, prof in PROFILES.items() for q in tcsim.supported_qualifiers()
         if tcsim.parse(q).shape in prof.shapes.get(tcsim.parse(q).family, ())
         and not (q.startswith("m8n8k4") and prof.m8n8k4 == "unpublished")
         and not (tcsim.parse(q).family == "fp8" and prof.fp8 is None)]
DISTRIBUTION_CASES = [(arch, q, d) for arch, q in CASES for d in samples.distributions(q)]


def per_product(spec, A, B, C):
    """m8n8k4 stacks a warp's four products; the models see one product at a time."""
    per = spec.products_per_warp
    return tuple(x.reshape((-1, x.shape[-2] // per, x.shape[-1])) for x in (A, B, C))


def oracle_mma(spec, A, B, C, prof, only=None):
    """D bits (n, m, n) from per-product A, B, C bits, one scalar dot product at a time; with
    ``only`` (a boolean mask of D's shape), just those elements (the rest are 0)."""
    rule = prof.check(spec)
    out = np.zeros((A.shape[0], spec.m, spec.n), np.int64)
    for i in range(A.shape[0]):
        for r in range(spec.m):
            for c in range(spec.n):
                if only is not None and not only[i, r, c]:
                    continue
                if spec.integer:
                    out[i, r, c] = integer_dot(spec.a_type, spec.b_type, A[i, r, :], B[i, :, c],
                                               C[i, r, c], spec.saturate)
                    continue
                if rule is None:
                    out[i, r, c] = ffma_dot(spec, A[i, r, :], B[i, :, c], C[i, r, c])
                    continue
                if spec.family == "fp8":
                    out[i, r, c] = fp8_lowered_dot(
                        spec.a_type, spec.b_type, spec.d_type, A[i, r, :], B[i, :, c],
                        C[i, r, c], group=rule.group_size, F=rule.fraction_bits,
                        zero_exp=(rule.zero_exponent or {}).get(spec.d_type, -10**9),
                        nan_bits=rule.nan_bits[spec.d_type])
                    continue
                out[i, r, c] = dot(
                    spec.a_type, spec.d_type, spec.c_type, A[i, r, :], B[i, :, c], C[i, r, c],
                    group=rule.group_size, F=rule.fraction_bits,
                    zero_exp=(rule.zero_exponent or {}).get(spec.d_type, -10**9),
                    nan_bits=rule.nan_bits[spec.d_type],
                )
    return out


def as_float(name, bits):
    kind, sign, sig, exp = decode(name, bits)
    if kind == "nan":
        return float("nan")
    if kind == "inf":
        return sign * float("inf")
    return math.copysign(sig * 2.0 ** (exp - {"f16": 10, "f32": 23}[name]), sign)  # keeps -0


def fl(x):
    """f32 round to nearest even of an exact sum of two f32 values (float64 holds it within
    rounding that cannot change the f32 result)."""
    return float(np.float32(x))


def ffma_dot(spec, a_row, b_col, c):
    """sm_90's m8n8k4 lowering (tcsim.isa.quad_pair's docstring), one element in scalars."""
    p = [as_float(spec.a_type, a) * as_float(spec.b_type, b) for a, b in zip(a_row, b_col)]
    acc = as_float(spec.c_type, c)
    with np.errstate(over="ignore", invalid="ignore"):
        if spec.d_type == "f32":
            s = fl(p[0] + 0.0)
            for k in (1, 2, 3):
                s = fl(s + p[k])
            d = fl(acc + s)
            return 0x7FFFFFFF if d != d else struct.unpack("<I", struct.pack("<f", d))[0]
        d = np.float16(np.float32(fl(fl(acc + fl(p[0] + p[1])) + fl(p[2] + p[3]))))
    return 0x7FFF if d != d else int(np.array(d).view(np.uint16))


def assert_same(got, want):
    bad = np.argwhere(got != want)
    assert bad.size == 0, (
        f"{len(bad)} elements differ, first at {tuple(bad[0])}: "
        f"engine {int(got[tuple(bad[0])]):#x}, model {int(want[tuple(bad[0])]):#x}"
    )


@pytest.mark.parametrize("arch,qualifier,distribution", DISTRIBUTION_CASES)
def test_engine_matches_scalar_model(arch, qualifier, distribution, rng):
    spec = tcsim.parse(qualifier)
    prof = tcsim.profile(arch)
    count = 1 if spec.products_per_warp > 1 else (6 if arch == "sm_90" else 2)
    A, B, C = per_product(spec, *samples.draw(spec, distribution, count, rng))
    got = mma_bits(spec, A, B, C, prof)
    # fp8's scalar model is two f16 dot products and an addition per element: check a random
    # quarter of the elements to keep the suite quick.
    only = rng.random(got.shape) < 0.25 if spec.family == "fp8" else None
    want = oracle_mma(spec, A, B, C, prof, only)
    assert_same(got if only is None else np.where(only, got, 0), want)


@pytest.mark.parametrize("arch,qualifier", [c for c in CASES if c[0] in ("sm_90", "sm_80")])
def test_chunked_threaded_batch_matches_scalar_model(arch, qualifier, rng):
    """Every distribution mixed in one batch of several chunks; a sample of it checked."""
    spec = tcsim.parse(qualifier)
    prof = tcsim.profile(arch)
    dists = samples.distributions(spec)
    per_dist = (4 * engine.CHUNK) // (len(dists) * spec.products_per_warp) + 1
    mats = [per_product(spec, *samples.draw(spec, d, per_dist, rng)) for d in dists]
    order = rng.permutation(sum(m[0].shape[0] for m in mats))
    A, B, C = (np.concatenate(x)[order] for x in zip(*mats))
    got = mma_bits(spec, A, B, C, prof)
    pick = rng.choice(A.shape[0], 8, replace=False)
    assert_same(got[pick], oracle_mma(spec, A[pick], B[pick], C[pick], prof))
