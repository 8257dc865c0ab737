"""Inputs and a reference for split-K's reduction order (tcsim.kernels.split_k), shared by the
CPU tests and the hardware tests: partials that are exact in f32, whose f32 sum in the
documented order rounds, so another order gives other bits."""

from dataclasses import replace
from functools import partial

import numpy as np

from tcsim.kernels import kernel_named

BK = 64  # kernel10's K tile
kernel10 = kernel_named("kernel10")
# kernel10 summing the partials in reverse split order: the twin's PLANT_SPLIT_ORDER
reversed_order = replace(kernel10, name="kernel10-split-order", twin="kernel10",
                         program=partial(kernel10.program, plant="split_order"),
                         plants=("split_order",))


def split_slices(K: int, splits: int) -> list[slice]:
    """The documented K ranges: split s takes K tiles s * n // S .. (s + 1) * n // S - 1."""
    n = -(-K // BK)
    return [slice(s * n // splits * BK, min((s + 1) * n // splits * BK, K))
            for s in range(splits)]


def order_inputs(rng, M, N, K, splits):
    """Integer inputs whose partials are exact in f32 and whose ordered f32 sum rounds (splits
    >= 3): in split 0 one K column gives +-2^24 per element, in split 1 one gives the
    opposite, the splits after hold small integers (odd sums among them), so the reducer's
    p[S-1] + p0 rounds and p1 does not undo it. Returns A, B, the K ranges."""
    assert splits >= 3
    A = np.zeros((M, K), np.float32)
    B = np.zeros((K, N), np.float32)
    ranges = split_slices(K, splits)
    for r in ranges[2:]:
        A[:, r] = rng.integers(-3, 4, (M, r.stop - r.start))
        B[r, :] = rng.integers(-3, 4, (r.stop - r.start, N))
    first, second = ranges[0].start, ranges[1].start
    sign = rng.choice([-1.0, 1.0], M)
    A[:, first], A[:, second] = 4096 * sign, -4096 * sign
    B[first, :] = B[second, :] = 4096 * rng.choice([-1.0, 1.0], N)
    return A.astype(np.float16), B.astype(np.float16), ranges


def in_order(partials):
    """The documented order: the reducer's own p[S-1], then p0, p1, ..., p[S-2], each an f32
    add."""
    total = partials[-1].astype(np.float32)
    for part in partials[:-1]:
        total = np.float32(total + part.astype(np.float32))
    return total


def reference(A, B, C, alpha, beta, ranges):
    """Exact partials (float64 dot products of exactly representable integers), summed in the
    documented order in f32, then f16(alpha * acc + beta * C) in f32 steps."""
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    partials = []
    for r in ranges:
        part = A64[:, r] @ B64[r, :]
        assert np.array_equal(part.astype(np.float32).astype(np.float64), part)  # exact
        partials.append(part.astype(np.float32))
    with np.errstate(over="ignore"):
        d = np.float32(alpha) * in_order(partials) + np.float32(beta) * C.astype(np.float32)
        return d.astype(np.float16)
