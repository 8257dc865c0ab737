"""The epilogue: what a library kernel does to the f32 result before it stores D.

Every operation is an f32 operation rounded to nearest even, in the order the plan's
``epilogue`` names; then one rounding to the output type.
"""

from __future__ import annotations

import numpy as np

from .chain import fma_f32, to_output

F32_NAN = np.array(0x7FFFFFFF, np.uint32).view(np.float32)


def apply(epilogue: str, acc: np.ndarray, out_dtype: str, *, c: np.ndarray | None = None,
          alpha: float = 1.0,
          beta: float = 1.0, scale_a: np.ndarray | None = None,
          scale_b: np.ndarray | None = None, bias: np.ndarray | None = None) -> np.ndarray:
    """The f32 values (M, N) the kernel rounds to its output type.

    ``c``: C or a bias row as f32 values broadcastable to (M, N); ``scale_a`` (M, 1) or (),
    ``scale_b`` (1, N) or (): fp8's scales as f32.
    """
    f32 = np.float32
    with np.errstate(over="ignore", invalid="ignore"):
        if epilogue in ("round", "c_first"):
            return acc
        if epilogue == "add":
            return np.add(acc, c, dtype=f32)
        if epilogue == "round_add":
            rounded = to_output(acc, out_dtype).astype(f32)
            return np.add(rounded, c, dtype=f32)
        if epilogue == "alpha_beta":
            return np.add(np.multiply(f32(alpha), acc, dtype=f32),
                          np.multiply(f32(beta), c, dtype=f32), dtype=f32)
        if epilogue == "alpha_fma":
            return fma_f32(np.asarray(f32(alpha)), acc,
                           np.broadcast_to(np.multiply(f32(beta), c, dtype=f32), acc.shape))
        if epilogue == "scale":  # alpha * acc + beta * C, beta 0: a zero result is +0 (H100)
            out = np.add(np.multiply(acc, np.multiply(scale_a, scale_b, dtype=f32), dtype=f32),
                         f32(0), dtype=f32)
        elif epilogue == "scale_each":
            out = np.multiply(np.multiply(acc, scale_a, dtype=f32), scale_b, dtype=f32)
        elif epilogue == "scale_b_first":
            out = np.multiply(np.multiply(acc, scale_b, dtype=f32), scale_a, dtype=f32)
        else:
            raise ValueError(f"unknown epilogue {epilogue!r}")
        out = out if bias is None else np.add(out, bias, dtype=f32)
    # The GPU's f32 instructions write every NaN as 0x7fffffff (an inf - inf on the CPU is
    # 0xffc00000): measured through _scaled_mm's f32 output, docs/kernels.md ("kernel11").
    return np.where(np.isnan(out), F32_NAN, out)
