"""wmma.mma's arithmetic on sm_90, as ptxas lowers it (SASS read with cuobjdump, nvcc 13.0;
each rule proven on the H100: docs/wmma.md):

- f16 and bf16: every output is one HMMA.16816 step, the mma.sync m16n8k16 rule (one fused
  sum of 16 products and C). m16n16k16 and m32n8k16 are two HMMAs over 16 x 8 blocks of D;
  m8n32k16 is computed transposed (D^T = B^T A^T, two HMMAs), which changes no output, since
  each output's sum is the same set of products.
- f16 D with f32 C: an f32 HMMA, then F2FP (round to nearest even into f16);
  f32 D with f16 C: C widened exactly (HADD2.F32), then an f32 HMMA.
- tf32 m16n16k8: per 16 x 8 block two chained HMMA.1684 (mma.sync m16n8k4 tf32), K = 0-3
  first, its D the C of K = 4-7.
"""

from __future__ import annotations

import numpy as np

from ..arithmetic import mma_bits
from ..formats import format_named
from ..profiles import ArchProfile
from ..qualifier import parse
from .spec import WmmaSpec

F16, F32 = format_named("f16"), format_named("f32")


def wmma_bits(spec: WmmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray,
              arch: ArchProfile) -> np.ndarray:
    """D bits (..., M, N) from A (..., M, K), B (..., K, N) and C (..., M, N) bits."""
    A, B, C = (np.asarray(x) for x in (A, B, C))
    if spec.m == 8:  # m8n32k16, computed as D^T = B^T A^T + C^T
        return np.swapaxes(_blocked(spec, np.swapaxes(B, -1, -2), np.swapaxes(A, -1, -2),
                                    np.swapaxes(C, -1, -2), arch), -1, -2)
    return _blocked(spec, A, B, C, arch)


def _blocked(spec: WmmaSpec, A, B, C, arch: ArchProfile) -> np.ndarray:
    """The instruction on (M, K) x (K, N), M a multiple of 16 and N of 8, one m16n8 mma.sync
    (tf32: two chained) per 16 x 8 block of D."""
    m, k = A.shape[-2:]
    n = B.shape[-1]
    a = A.reshape(A.shape[:-2] + (m // 16, 1, 16, k))
    b = np.swapaxes(B.reshape(B.shape[:-2] + (1, k, n // 8, 8)), -3, -2)  # (1, N/8, K, 8)
    c = np.swapaxes(C.reshape(C.shape[:-2] + (m // 16, 16, n // 8, 8)), -3, -2)
    if spec.a_type == "tf32":
        step = parse("m16n8k4.row.col.f32.tf32.tf32.f32")
        d = mma_bits(step, a[..., 4:], b[..., 4:, :],
                     mma_bits(step, a[..., :4], b[..., :4, :], c, arch), arch)
    else:
        wide = "f32" if "f32" in (spec.c_type, spec.d_type) else "f16"
        step = parse(f"m16n8k16.row.col.{wide}.{spec.a_type}.{spec.b_type}.{wide}")
        if spec.c_type == "f16" and wide == "f32":  # HADD2.F32: exact
            c = F32.to_bits(F16.values(c, np.float32))
        d = mma_bits(step, a, b, c, arch)
        if spec.d_type == "f16" and wide == "f32":  # F2FP: to nearest even
            d = F16.to_bits(F32.values(d, np.float32).astype(np.float16))
    d = np.swapaxes(d, -3, -2)  # (..., M/16, 16, N/8, 8)
    return d.reshape(d.shape[:-4] + (m, n))
