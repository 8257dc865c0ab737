"""The GEMMs people call: torch's matmul, addmm, linear, _scaled_mm and _int_mm, bit for bit as
cuBLAS computes them on an H100, on NumPy arrays and without a GPU.

    import numpy as np, tcsim.blas as blas
    A = np.random.randn(256, 4096).astype(np.float16)
    B = np.random.randn(4096, 256).astype(np.float16)
    D = blas.matmul(A, B)             # torch.matmul's bits on the H100
    print(blas.plan("matmul", A, B))  # the kernel, its split-K ranges, ... in words

Every call finds its `Plan` in a table measured on the GPU (the kernel cuBLAS ran, identified
bit for bit from its outputs) or, for a shape the table does not hold, takes the plan of the
nearest measured call of its kind; ``plan=`` overrides it. `identify` finds the plans that
explain a given GPU output. docs/blas.md tells what the plans are and why GPU results differ
from NumPy's.
"""

from __future__ import annotations

import numpy as np

from . import calls as _calls
from .identify import identify_call as _identify
from .plan import Plan, PlanError, describe
from .table import UnsupportedCallError, table

__all__ = ["matmul", "addmm", "linear", "scaled_mm", "int_mm", "plan", "identify", "Plan",
           "PlanError", "UnsupportedCallError", "describe", "table"]

_OPS = {"matmul": _calls.matmul_call, "addmm": _calls.addmm_call, "linear": _calls.linear_call,
        "scaled_mm": _calls.scaled_mm_call, "int_mm": _calls.int_mm_call}


def matmul(A: np.ndarray, B: np.ndarray, *, allow_tf32: bool = False,
           allow_reduced_precision_reduction: bool = True, gpu: str = "H100",
           plan: Plan | None = None, progress=None) -> np.ndarray:
    """``torch.matmul(A, B)`` (2-D, or batched as torch broadcasts it) on ``gpu``.

    float16, bfloat16 or float32 inputs of one dtype; ``allow_tf32`` and
    ``allow_reduced_precision_reduction`` are torch's ``torch.backends.cuda.matmul`` flags
    (``allow_tf32``, ``allow_fp16/bf16_reduced_precision_reduction``) with torch's defaults.
    """
    call = _calls.matmul_call(A, B, allow_tf32=allow_tf32,
                              allow_reduced_precision_reduction=allow_reduced_precision_reduction)
    return _calls.run(call, gpu=gpu, plan=plan, progress=progress)


def addmm(C: np.ndarray, A: np.ndarray, B: np.ndarray, *, beta: float = 1, alpha: float = 1,
          allow_tf32: bool = False, allow_reduced_precision_reduction: bool = True,
          gpu: str = "H100", plan: Plan | None = None, progress=None) -> np.ndarray:
    """``torch.addmm(C, A, B, beta=beta, alpha=alpha)``: beta * C + alpha * (A @ B)."""
    call = _calls.addmm_call(C, A, B, beta=beta, alpha=alpha, allow_tf32=allow_tf32,
                             allow_reduced_precision_reduction=allow_reduced_precision_reduction)
    return _calls.run(call, gpu=gpu, plan=plan, progress=progress)


def linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, *,
           allow_tf32: bool = False, allow_reduced_precision_reduction: bool = True,
           gpu: str = "H100", plan: Plan | None = None, progress=None) -> np.ndarray:
    """``torch.nn.functional.linear(x, weight, bias)``: x @ weight.T + bias, weight (N, K)."""
    call = _calls.linear_call(x, weight, bias, allow_tf32=allow_tf32,
                              allow_reduced_precision_reduction=allow_reduced_precision_reduction)
    return _calls.run(call, gpu=gpu, plan=plan, progress=progress)


def scaled_mm(A: np.ndarray, B: np.ndarray, scale_a, scale_b, *, out_dtype,
              use_fast_accum: bool = False, bias: np.ndarray | None = None,
              gpu: str = "H100", plan: Plan | None = None, progress=None) -> np.ndarray:
    """``torch._scaled_mm(A, B, scale_a, scale_b, out_dtype=..., use_fast_accum=...)``.

    A (M, K) and B (K, N) in float8_e4m3fn / float8_e5m2 (not both e5m2); B is given by its
    (K, N) values whatever its memory order. Scales: float32, one per tensor, or (M, 1) and
    (1, N) row-wise; ``out_dtype``: float16, bfloat16, float32 or an fp8 dtype (a dtype or
    its name).
    """
    call = _calls.scaled_mm_call(A, B, scale_a, scale_b, out_dtype=out_dtype,
                                 use_fast_accum=use_fast_accum, bias=bias)
    return _calls.run(call, gpu=gpu, plan=plan, progress=progress)


def int_mm(A: np.ndarray, B: np.ndarray, *, gpu: str = "H100", plan: Plan | None = None,
           progress=None) -> np.ndarray:
    """``torch._int_mm(A, B)``: int8 in, exact int32 out."""
    return _calls.run(_calls.int_mm_call(A, B), gpu=gpu, plan=plan, progress=progress)


def _call(op: str, args, kwargs):
    if op not in _OPS:
        raise ValueError(f"unknown op {op!r}; tcsim.blas has {', '.join(_OPS)}")
    return _OPS[op](*args, **kwargs)


def plan(op: str, *args, gpu: str = "H100", **kwargs) -> Plan:
    """The plan cuBLAS follows for ``op(*args, **kwargs)`` (op: "matmul", "addmm", "linear",
    "scaled_mm" or "int_mm", with that function's arguments); its ``source`` says whether it
    was measured for this call or taken from the nearest measured one."""
    call = _call(op, args, kwargs)
    chosen, how = call.plan(gpu)
    where = table(gpu).describe_versions()
    source = (f"measured for this call on {where}" if how == "measured"
              else f"{how}, measured on {where}")
    return chosen.with_(source=source)


def identify(op: str, *args, D: np.ndarray, kernels: list[str] | None = None,
             grid: tuple[int, int, int] | None = None, gpu: str = "H100",
             **kwargs) -> list[Plan]:
    """The plans under which ``op(*args, **kwargs)`` gives exactly ``D`` (a GPU's output).

    ``kernels``: the kernel names the profiler showed for the call (the GEMM first, then any
    split-K reduction); without them, the kernel of the table's plan is assumed. ``grid``: the
    GEMM kernel's launch grid, whose y (nvjet) or z (CUTLASS) suggests the split count. Every
    split count up to 16 and the suggested one, and every k order and epilogue order the
    kernel allows, is tried.
    """
    return _identify(_call(op, args, kwargs), np.asarray(D), kernels, grid, gpu)


