"""torch's GEMM calls, on NumPy arrays, with the bits cuBLAS gives on the GPU.

Each function takes what the torch call takes (NumPy arrays; ml_dtypes for bf16 and fp8),
refuses what torch refuses, finds the call's `Plan` in the measured table (or takes ``plan=``)
and returns what `tcsim.blas.evaluate` computes under it. The memory order of A and B matters
as it does in torch: a transposed (Fortran-order) array is what ``x.t()`` is in torch, and
cuBLAS may choose another kernel for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..isa.validate import broadcasts_to, check_memory
from ..progress import progress as bar
from .evaluate import Operands, bit_patterns, evaluate
from .plan import Plan, PlanError
from .table import CallKey, UnsupportedCallError, is_aligned, table, torch_layout

FLOAT_DTYPES = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
                "float32": np.dtype(np.float32)}
FP8_DTYPES = {"float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
              "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2)}
FP8_NAMES = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
OUT_DTYPES = {**FLOAT_DTYPES, **FP8_DTYPES}


@dataclass(frozen=True)
class Call:
    """A checked call: its key in the plan table and its operands for the engine."""

    key: CallKey
    ops: Operands
    shape: tuple  # D's shape, as torch returns it

    def plan(self, gpu: str) -> tuple[Plan, str]:
        return table(gpu).choose(self.key)


def run(call: Call, *, gpu: str, plan: Plan | None, progress=None) -> np.ndarray:
    """D for a checked call; ``progress`` (a tick function taking rows done) or, by default,
    a bar on a terminal for a long emulation (`tcsim.progress`)."""
    if plan is not None and not isinstance(plan, Plan):
        raise TypeError(f"plan must be a tcsim.blas.Plan, got {type(plan).__name__}")
    table(gpu)  # a known GPU, with or without plan=
    if plan is not None:
        check_plan(plan, call)
    chosen = plan if plan is not None else call.plan(gpu)[0]
    if progress is not None:
        return evaluate(chosen, call.ops, progress=progress).reshape(call.shape)
    k = call.key
    label = f"tcsim.blas {k.cls[0]} {k.M}x{k.N}x{k.K}" + (f" batch {k.batch}" if k.batch > 1
                                                          else "")
    with bar(k.M * k.batch, label) as tick:
        return evaluate(chosen, call.ops, progress=tick).reshape(call.shape)


def check_plan(plan: Plan, call: Call) -> None:
    """Refuse a ``plan=`` that cannot compute this call: other input types, or an epilogue
    that needs operands the call does not have (or has operands it would drop)."""
    wants = {"float16": ("f16",), "bfloat16": ("bf16",), "tf32": ("tf32", "f32"),
             "float32": ("tf32", "f32"), "int8": ("int8",)}.get(call.key.cls[1],
                                                                (call.key.cls[1],))
    if plan.input_type not in wants:
        raise PlanError(f"plan= reads {plan.input_type} inputs; this call has "
                        f"{call.key.cls[1]}")
    ops, scaled = call.ops, call.key.cls[0] == "scaled_mm"
    if plan.engine == "int":
        return
    if scaled != plan.epilogue.startswith("scale"):
        raise PlanError(f"plan= epilogue {plan.epilogue!r} does not fit a "
                        f"{call.key.cls[0]} call (fp8 scales go with scale epilogues)")
    needs_c = plan.epilogue in ("add", "round_add", "alpha_beta", "alpha_fma", "c_first")
    if needs_c != (ops.c is not None):
        raise PlanError(f"plan= epilogue {plan.epilogue!r} "
                        + ("needs C or a bias" if needs_c else "would drop this call's C"))
    if plan.epilogue in ("add", "round_add", "c_first") and (ops.alpha, ops.beta) != (1, 1):
        raise PlanError(f"plan= epilogue {plan.epilogue!r} has no alpha or beta; this call "
                        f"has alpha={ops.alpha}, beta={ops.beta}")


# ---- argument checks, as torch makes them -------------------------------------------------

def _array(x, name: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(x).__name__}")
    if not x.dtype.isnative:
        raise TypeError(f"{name} has a non-native byte order ({x.dtype.str}); torch refuses it "
                        f"too: use {name}.astype({name}.dtype.newbyteorder('='))")
    return x


def _dtype_name(x: np.ndarray) -> str:
    for name, dt in OUT_DTYPES.items():
        if x.dtype == dt:
            return name
    return x.dtype.name


def _same_float_dtype(A: np.ndarray, B: np.ndarray, what: str) -> str:
    a, b = _dtype_name(A), _dtype_name(B)
    if a != b:
        raise TypeError(f"{what}: expected A and B to have the same dtype, got {a} and {b}")
    if a not in FLOAT_DTYPES:
        raise TypeError(f"{what}: tcsim.blas models cuBLAS for float16, bfloat16 and float32 "
                        f"inputs, not {a}")
    return a


def _layout(x: np.ndarray) -> str:
    """'N' for row-major (C order in the last two axes), 'T' for column-major (a transposed
    view, as torch's .t()); other strides are copied to row-major by torch."""
    if x.shape[-1] == 1 or x.strides[-1] == x.itemsize:
        return "N"
    if x.shape[-2] == 1 or x.strides[-2] == x.itemsize:
        return "T"
    return "N"



def _check_2d(x: np.ndarray, name: str, what: str) -> None:
    if x.ndim != 2:
        raise ValueError(f"{what}: {name} must be a matrix (2-D), got shape {x.shape}")


def _inner(A: np.ndarray, B: np.ndarray, what: str) -> None:
    if A.shape[-1] != B.shape[-2]:
        raise ValueError(f"{what}: A {A.shape} and B {B.shape} cannot be multiplied "
                         f"(A has {A.shape[-1]} columns, B has {B.shape[-2]} rows)")


def _vectors(A: np.ndarray, B: np.ndarray, what: str) -> None:
    if A.ndim < 2 or B.ndim < 2:
        raise UnsupportedCallError(
            f"{what}: 1-D operands (shapes {A.shape} and {B.shape}) go to cuBLAS's dot and "
            f"gemv kernels, which tcsim has no model of; pass matrices (x[None, :], x[:, None])")


def _flags_extra(dtype: str, reduced: bool) -> str:
    if not isinstance(reduced, bool):
        raise TypeError(f"allow_reduced_precision_reduction must be a bool, got {reduced!r}")
    return "" if reduced or dtype == "float32" else "no reduced-precision reduction"


def _types(dtype: str, allow_tf32) -> str:
    if not isinstance(allow_tf32, bool):
        raise TypeError(f"allow_tf32 must be a bool, got {allow_tf32!r}")
    if dtype == "float32":
        return "tf32" if allow_tf32 else "float32"
    return dtype


def _scalar(x, name: str) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                               np.floating)):
        raise TypeError(f"{name} must be a real number, got {x!r}")
    value = float(x)
    if np.isfinite(value) and abs(value) > float(np.finfo(np.float32).max):
        raise ValueError(f"{name}={value} overflows float32, the type cuBLAS takes it in")
    return value


def matmul_call(A, B, *, allow_tf32: bool = False,
                allow_reduced_precision_reduction: bool = True) -> Call:
    what = "matmul"
    A, B = _array(A, "A"), _array(B, "B")
    dtype = _same_float_dtype(A, B, what)
    _vectors(A, B, what)
    _inner(A, B, what)
    types = _types(dtype, allow_tf32)
    extra = _flags_extra(dtype, allow_reduced_precision_reduction)
    if A.ndim > 2 and B.ndim == 2 and _layout(A) == "N":
        # torch folds A's batch into its rows when B is a plain matrix.
        rows = A.reshape(-1, A.shape[-1])
        call = _gemm("matmul", rows, B, dtype, types, ("", extra))
        return Call(call.key, call.ops, A.shape[:-1] + B.shape[-1:])
    try:
        batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except ValueError:
        raise ValueError(f"{what}: the batch shapes of A {A.shape[:-2]} and B {B.shape[:-2]} "
                         f"do not broadcast") from None
    return _gemm("matmul", A, B, dtype, types, ("", extra), batch=batch)


def _gemm(op: str, A, B, dtype: str, types: str, extras: tuple, batch=(), c=None,
          alpha=1.0, beta=1.0, layout: str | None = None) -> Call:
    M, K, N = A.shape[-2], A.shape[-1], B.shape[-1]
    count = int(np.prod(batch, dtype=np.int64)) if batch else 1
    check_memory(count * (M * K + K * N + 3 * M * N) * 4, f"{op} of shape {M}x{N}x{K}")
    layout = torch_layout(layout or _layout(A) + _layout(B), M, N, K)
    itemsize = A.itemsize
    key = CallKey((op, types, dtype, layout, is_aligned(layout, M, N, K, itemsize), extras),
                  M, N, K, count)
    ops = Operands(bit_patterns(A), bit_patterns(B), dtype, c=c, alpha=alpha, beta=beta)
    return Call(key, ops, tuple(batch) + (M, N))


def addmm_call(C, A, B, *, beta=1, alpha=1, allow_tf32: bool = False,
               allow_reduced_precision_reduction: bool = True) -> Call:
    what = "addmm"
    C, A, B = _array(C, "C"), _array(A, "A"), _array(B, "B")
    dtype = _same_float_dtype(A, B, what)
    if _dtype_name(C) != dtype:
        raise TypeError(f"{what}: C must have A's dtype {dtype}, got {_dtype_name(C)}")
    _check_2d(A, "A", what)
    _check_2d(B, "B", what)
    _inner(A, B, what)
    alpha, beta = _scalar(alpha, "alpha"), _scalar(beta, "beta")
    M, N = A.shape[0], B.shape[1]
    if not (C.ndim <= 2 and broadcasts_to(C.shape, (M, N))):
        raise ValueError(f"{what}: C of shape {C.shape} does not broadcast to ({M}, {N})")
    types = _types(dtype, allow_tf32)
    extra = _flags_extra(dtype, allow_reduced_precision_reduction)
    c = C.astype(np.float32)
    if beta == 0:  # torch ignores C then (NaN included)
        c = np.zeros((M, N), np.float32)
    if C.shape == (N,) and beta == 1 and alpha == 1:
        kind = "bias"  # cuBLASLt's bias epilogue (measured with alpha = beta = 1)
    elif beta == 1 and alpha == 1:
        kind = "beta 1"
    else:
        kind = "alpha beta"
    return _gemm("addmm", A, B, dtype, types, (kind, extra), c=c, alpha=alpha, beta=beta)


def linear_call(x, weight, bias=None, *, allow_tf32: bool = False,
                allow_reduced_precision_reduction: bool = True) -> Call:
    what = "linear"
    x, weight = _array(x, "x"), _array(weight, "weight")
    dtype = _same_float_dtype(x, weight, what)
    if weight.ndim != 2:
        raise ValueError(f"{what}: weight must be (out_features, in_features), got shape "
                         f"{weight.shape}")
    if x.ndim < 2:
        raise UnsupportedCallError(f"{what}: a 1-D input goes to cuBLAS's gemv kernels, which "
                                   f"tcsim has no model of; pass x[None, :]")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(f"{what}: x {x.shape} and weight {weight.shape} cannot be multiplied "
                         f"(x has {x.shape[-1]} features, weight takes {weight.shape[1]})")
    N = weight.shape[0]
    c = None
    if bias is not None:
        bias = _array(bias, "bias")
        if _dtype_name(bias) != dtype:
            raise TypeError(f"{what}: bias must have x's dtype {dtype}, got "
                            f"{_dtype_name(bias)}")
        if bias.shape != (N,):
            raise ValueError(f"{what}: bias must have shape ({N},), got {bias.shape}")
        c = bias.astype(np.float32)
    types = _types(dtype, allow_tf32)
    extra = _flags_extra(dtype, allow_reduced_precision_reduction)
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    call = _gemm("linear", rows, weight.T, dtype, types,
                 ("bias" if bias is not None else "no bias", extra), c=c, layout="NT")
    return Call(call.key, call.ops, x.shape[:-1] + (N,))


def scaled_mm_call(A, B, scale_a, scale_b, *, out_dtype, use_fast_accum: bool = False,
                   bias=None) -> Call:
    what = "scaled_mm"
    A, B = _array(A, "A"), _array(B, "B")
    for name, x in (("A", A), ("B", B)):
        if _dtype_name(x) not in FP8_DTYPES:
            raise TypeError(f"{what}: {name} must be float8_e4m3fn or float8_e5m2, got "
                            f"{_dtype_name(x)}")
        _check_2d(x, name, what)
    a, b = FP8_NAMES[_dtype_name(A)], FP8_NAMES[_dtype_name(B)]
    if a == b == "e5m2":
        raise TypeError(f"{what}: torch refuses two float8_e5m2 operands (at least one must "
                        f"be float8_e4m3fn)")
    _inner(A, B, what)
    M, K, N = A.shape[0], A.shape[1], B.shape[1]
    if K % 16 or N % 16:
        raise ValueError(f"{what}: K and N must be multiples of 16 (torch's rule for fp8), "
                         f"got K={K}, N={N}")
    out = np.dtype(out_dtype) if not isinstance(out_dtype, str) else OUT_DTYPES.get(out_dtype)
    out_name = next((n for n, d in OUT_DTYPES.items() if d == out), None)
    if out_name is None:
        raise TypeError(f"{what}: out_dtype must be one of {', '.join(OUT_DTYPES)}, got "
                        f"{out_dtype!r}")
    if not isinstance(use_fast_accum, bool):
        raise TypeError(f"use_fast_accum must be a bool, got {use_fast_accum!r}")
    sa, sb, kind = _scales(scale_a, scale_b, M, N, what)
    if kind == "row" and (a, b, out_name) != ("e4m3", "e4m3", "bfloat16"):
        raise TypeError(f"{what}: row-wise scales need float8_e4m3fn operands and a bfloat16 "
                        f"output (torch's rule)")
    bias_values = None
    if bias is not None:
        bias = _array(bias, "bias")
        if bias.shape != (N,) or _dtype_name(bias) not in ("bfloat16", "float16", "float32"):
            raise ValueError(f"{what}: bias must be a ({N},) array of bfloat16, float16 or "
                             f"float32, got {bias.shape} {_dtype_name(bias)}")
        bias_values = bias.astype(np.float32)
    extras = ("fast" if use_fast_accum else "promoted", f"scales {kind}",
              "bias" if bias is not None else "")
    key = CallKey(("scaled_mm", f"{a}.{b}", out_name, "TN", True, extras), M, N, K)
    ops = Operands(bit_patterns(A), bit_patterns(B), out_name, scale_a=sa, scale_b=sb,
                   bias=bias_values)
    return Call(key, ops, (M, N))


def _scales(scale_a, scale_b, M: int, N: int, what: str):
    sa = _array(np.asarray(scale_a) if np.isscalar(scale_a) else scale_a, "scale_a")
    sb = _array(np.asarray(scale_b) if np.isscalar(scale_b) else scale_b, "scale_b")
    for name, s in (("scale_a", sa), ("scale_b", sb)):
        if s.dtype != np.float32:
            raise TypeError(f"{what}: {name} must be float32 (torch's rule), got {s.dtype}")
    if sa.size == 1 and sb.size == 1:
        return sa.reshape(()), sb.reshape(()), "tensor"
    if sa.shape == (M, 1) and sb.shape == (1, N):
        return sa, sb, "row"
    raise ValueError(f"{what}: scales must both be one value (per tensor) or ({M}, 1) and "
                     f"(1, {N}) (row-wise), got {sa.shape} and {sb.shape}")


def int_mm_call(A, B) -> Call:
    what = "int_mm"
    A, B = _array(A, "A"), _array(B, "B")
    for name, x in (("A", A), ("B", B)):
        if x.dtype != np.int8:
            raise TypeError(f"{what}: {name} must be int8, got {x.dtype}")
        _check_2d(x, name, what)
    _inner(A, B, what)
    M, K, N = A.shape[0], A.shape[1], B.shape[1]
    if M <= 16 or K % 8 or N % 8:
        raise ValueError(f"{what}: torch needs M > 16 and K, N multiples of 8, got "
                         f"M={M}, K={K}, N={N}")
    if K < 128 and M % 32 and N > 24:
        raise UnsupportedCallError(
            f"{what}: cuBLAS refuses this shape on the H100 (CUBLAS_STATUS_NOT_SUPPORTED, "
            f"measured for M 24..136, N 8..136, K 8..136: int8 GEMMs with K < 128 run only "
            f"when M % 32 == 0 or N <= 24), got M={M}, N={N}, K={K}")
    key = CallKey(("int_mm", "int8", "int32", "NN", True, ()), M, N, K)
    return Call(key, Operands(np.ascontiguousarray(A), np.ascontiguousarray(B), "int32"),
                (M, N))
