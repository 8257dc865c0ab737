"""kernel7's arithmetic written out without its machinery: per 64-row group of A and
256-column group of B, one `tcsim.wgmma` m64nNk16 per 16 elements of K in order, then the
ladder's epilogue. The wgmma model is proven against the H100 on its own (tests/hw/
test_wgmma_hw.py); what this checks is everything kernel7 adds around it: TMA boxes and
their swizzle, descriptors, stages, roles and barriers, the accumulator map and the
epilogue."""

import numpy as np
from gemm_inputs import blas_epilogue

import tcsim


def chained_wgmma(A, B, C, alpha, beta, accumulate: str, block_n: int = 256) -> np.ndarray:
    """D's f16 bits (uint16, M x N)."""
    M, K = A.shape
    N = B.shape[1]
    q = f"m64n{block_n}k16.{accumulate}.f16.f16"
    out = np.zeros((M, N), np.float32)
    groups = A.reshape(M // 64, 64, K)
    for c0 in range(0, N, block_n):
        D = np.zeros((M // 64, 64, block_n), np.float32 if accumulate == "f32" else np.float16)
        for k in range(0, K, 16):
            D = tcsim.wgmma(q, groups[:, :, k:k + 16], B[k:k + 16, c0:c0 + block_n], D)
        out[:, c0:c0 + block_n] = D.reshape(M, block_n).astype(np.float32)
    return blas_epilogue(out, C, alpha, beta)
