"""mma.sync m8n8k4 on sm_90: the FFMA sequence ptxas emits in place of Volta's tensor cores.

On sm_90 the quad-pair instruction does not reach the tensor cores; ptxas lowers it to lane
shuffles and f32 arithmetic (notes/m8n8k4-sass.md reads the SASS; the GPU tests check it).
Per output element, with exact products p_k = A[r, k] * B[k, n] (f16 x f16 fits f32):

- f32 D: ``d = fl(c + fl(fl(fl(fl(p0 + 0) + p1) + p2) + p3))`` — one FFMA chain from +0 in k
  order, then C added last by an FADD;
- f16 D: ``d = f16(fl(fl(c + fl(p0 + p1)) + fl(p2 + p3)))`` — two pairs, C joins the first.

fl() is f32 round-to-nearest-even with subnormals (numpy's float32 arithmetic, exactly);
because each product is exact, every FFMA is one correctly rounded f32 addition. NaN results
are written as the canonical 0x7fffffff (f32) or 0x7fff (f16).
"""

from __future__ import annotations

import numpy as np

from .qualifier import MmaSpec

CANONICAL_NAN = {"f32": 0x7FFFFFFF, "f16": 0x7FFF}


def ffma_lowering_bits(spec: MmaSpec, A: np.ndarray, B: np.ndarray,
                       C: np.ndarray) -> np.ndarray:
    """D bits (..., 8, 8) from per-product A (..., 8, 4), B (..., 4, 8), C (..., 8, 8) bits."""
    fin, fc, fd = (spec.format(op) for op in "acd")
    a = fin.values(A, np.float32)
    b = fin.values(B, np.float32)
    c = fc.values(C, np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        p = [a[..., :, k, None] * b[..., k, None, :] for k in range(4)]  # (..., 8, 8) each
        if spec.d_type == "f32":
            s = p[0] + np.float32(0.0)  # fma(a0, b0, +0): -0 becomes +0
            for k in (1, 2, 3):
                s = s + p[k]
            d = c + s
        else:
            d = ((c + (p[0] + p[1])) + (p[2] + p[3])).astype(np.float16)
    bits = fd.to_bits(d)
    nan = np.isnan(d)
    if nan.any():
        bits = np.where(nan, fd.uint(CANONICAL_NAN[spec.d_type]), bits)
    return bits
