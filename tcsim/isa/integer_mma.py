"""Integer mma.sync (s8/u8 inputs, s32 accumulators): exact sums, wrapped or saturated.

The products and their sum are exact (at most 32 * 255 * 255 in magnitude); what is left is the
addition of C in 32 bits. Without ``.satfinite`` the result wraps around modulo 2**32 (two's
complement); with it, a result beyond s32's range is clamped to its largest or smallest value.
"""

from __future__ import annotations

import numpy as np

from .qualifier import MmaSpec

S32_MIN, S32_MAX = -(2**31), 2**31 - 1


def integer_mma_bits(spec: MmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """D bits (..., M, N) uint32 from A (..., M, K), B (..., K, N) and C (..., M, N) bits."""
    a = spec.format("a").from_bits(A).astype(np.float64)
    b = spec.format("b").from_bits(B).astype(np.float64)
    # Each dot product is an integer below 2**21 in magnitude: float64 holds it exactly, and
    # float64 matmul is much faster in numpy than integer matmul.
    # Not in place: C may broadcast the products to a larger batch (C (3, ...), A and B (1, ...)).
    total = np.matmul(a, b).astype(np.int64) + np.asarray(C).astype(np.uint32).view(np.int32)
    if spec.saturate:
        np.clip(total, S32_MIN, S32_MAX, out=total)
    return total.astype(np.uint32)  # keeps the low 32 bits: two's-complement wrap-around
