"""One library call's output under a given plan: inputs as bit patterns in, D out.

`evaluate` is what every public call and `identify` come down to: the chain (`tcsim.blas.chain`)
over the whole batch, then per batch element the epilogue (`tcsim.blas.epilogue`) and the
rounding to the output type.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .chain import accumulate_batch, reduce, to_output
from .epilogue import apply
from .plan import Plan


@dataclass(frozen=True)
class Operands:
    """A call's inputs after checking: A (..., M, K) and B (..., K, N) as bit patterns of the
    instruction's formats (int8 values for integer calls), the epilogue's extras as f32
    values, and the output dtype's name."""

    A: np.ndarray
    B: np.ndarray
    out_dtype: str
    c: np.ndarray | None = None  # C (..., M, N) or a bias row (N,), f32 values
    alpha: float = 1.0
    beta: float = 1.0
    scale_a: np.ndarray | None = None
    scale_b: np.ndarray | None = None
    bias: np.ndarray | None = None


def bit_patterns(x: np.ndarray) -> np.ndarray:
    """``x``'s elements as unsigned integers of their width: equal bits compare equal (NaN
    included), and any dtype (f16, bf16, fp8, f32, int) goes in."""
    x = np.ascontiguousarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def evaluate(plan: Plan, ops: Operands, progress=None) -> np.ndarray:
    """D under ``plan``: (..., M, N) in the output dtype."""
    A, B = ops.A, ops.B
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    M, N = A.shape[-2], B.shape[-1]
    count = int(np.prod(batch, dtype=np.int64))  # not -1: empty operands have no inferable axis
    A = np.broadcast_to(A, batch + A.shape[-2:]).reshape((count,) + A.shape[-2:])
    B = np.broadcast_to(B, batch + B.shape[-2:]).reshape((count,) + B.shape[-2:])
    c = ops.c
    if c is not None and c.ndim >= 2:
        c = np.broadcast_to(c, batch + (M, N)).reshape((count, M, N))
    init = None
    if plan.epilogue == "c_first" and count:
        init = np.broadcast_to(c if c is not None and c.ndim == 3 else c, (count, M, N))
    # The whole batch at once: the chains of every element advance together.
    all_parts = accumulate_batch(plan, A, B, init=init, progress=progress)
    results = []
    for i in range(A.shape[0]):
        ci = c[i] if c is not None and c.ndim == 3 else c
        parts = all_parts[i]

        def epilogue(acc, ci=ci):
            return apply(plan.epilogue, acc, ops.out_dtype, c=ci, alpha=ops.alpha,
                         beta=ops.beta, scale_a=ops.scale_a, scale_b=ops.scale_b,
                         bias=ops.bias)

        results.append(reduce(plan, parts, ops.out_dtype, epilogue))
    if not results:
        dtype = np.int32 if plan.engine == "int" else to_output(np.zeros(0, np.float32),
                                                                ops.out_dtype).dtype
        return np.zeros(batch + (M, N), dtype)
    return np.stack(results).reshape(batch + (M, N))
