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

from .fragments import store_batch_last
from .qualifier import MmaSpec

CANONICAL_NAN = {"f32": 0x7FFFFFFF, "f16": 0x7FFF}


# Products per pass: the (8, 8, CHUNK) float32 arrays stay in cache; not 8,192, for the reason
# `tcsim.isa.engine.CHUNK` gives.
CHUNK = 8128


def ffma_lowering_bits(spec: MmaSpec, A: np.ndarray, B: np.ndarray,
                       C: np.ndarray) -> np.ndarray:
    """D bits (..., 8, 8) from per-product A (..., 8, 4), B (..., 4, 8), C (..., 8, 8) bits."""
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
    flat = [np.broadcast_to(x, batch + x.shape[-2:]).reshape((-1,) + x.shape[-2:])
            for x in (A, B, C)]
    n = flat[0].shape[0]
    out = np.empty((n, 8, 8), spec.format("d").uint)
    for start in range(0, n, CHUNK):
        # Batch last, so every numpy loop runs over the products.
        chunk = [np.ascontiguousarray(x[start:start + CHUNK].transpose(1, 2, 0)) for x in flat]
        store_batch_last(out[start:start + CHUNK], _ffma_chunk(spec, *chunk))
    return out.reshape(batch + (8, 8))


def _ffma_chunk(spec: MmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """A (8, 4, n), B (4, 8, n), C (8, 8, n) bits, batch last -> D bits (8, 8, n)."""
    fin, fc, fd = (spec.format(op) for op in "acd")
    a, b, c = fin.values(A, np.float32), fin.values(B, np.float32), fc.values(C, np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        p = [a[:, k, None] * b[k, None, :] for k in range(4)]  # (8, 8, n) each, exact
        if spec.d_type == "f32":
            s = p[0] + np.float32(0.0)  # fma(a0, b0, +0): -0 becomes +0
            for k in (1, 2, 3):
                s += p[k]
            d = c + s
        else:
            d = ((c + (p[0] + p[1])) + (p[2] + p[3])).astype(np.float16)
    bits = fd.to_bits(d)
    nan = np.isnan(d)
    if nan.any():
        bits = np.where(nan, fd.uint(CANONICAL_NAN[spec.d_type]), bits)
    return bits
