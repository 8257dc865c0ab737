"""Records of a plan sweep (scripts/blas_sweep.py) as tcsim.blas reads them.

A record is a call as the GPU ran it (a dict: op, dtypes, shape, layout, flags) and its arrays
by name (A, B, D, and C, bias, scale_a, scale_b when the call has them), stored as bit
patterns of the right width. The plan table is built from such records
(scripts/blas_identify.py) and the CPU tests hold tcsim.blas to some of them
(tests/blas/gpu_outputs.npz).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np

from .evaluate import Operands

DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
          "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
          "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
          "int32": np.int32, "int8": np.int8}
FP8_OUT = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def load(sweep: Path) -> tuple[dict, dict]:
    """A sweep folder's records (blas_sweep.json) and its npz parts by number."""
    meta = json.load(open(sweep / "blas_sweep.json"))
    parts = {}
    for rec in meta["records"]:
        if "error" in rec:
            continue
        p = rec["part"]
        if p not in parts:
            parts[p] = np.load(sweep / f"blas_sweep_{p}.npz")
    return meta, parts


def input_type(call: dict) -> str:
    """The input type names `tcsim.blas.kernels.read` takes."""
    if call["op"] == "scaled_mm":
        return f"{call['a']}.{call['b']}"
    if call["op"] == "int_mm":
        return "s8"
    if call["dtype"] == "float32":
        return "tf32" if call.get("tf32") else "f32"
    return {"float16": "f16", "bfloat16": "bf16"}[call["dtype"]]


def epilogue_kind(call: dict) -> str:
    """The kind of epilogue the call asks for (the key of identify's EPILOGUE_CHOICES)."""
    op = call["op"]
    if op == "addmm":
        return "alpha_beta"
    if op == "addmm_bias" or (op == "linear" and call.get("bias")):
        return "add"
    if op == "scaled_mm":
        return "scale"
    return "round"


def out_dtype(call: dict) -> str:
    if call["op"] == "scaled_mm":
        return FP8_OUT.get(call["out"], call["out"])
    if call["op"] == "int_mm":
        return "int32"
    return call["dtype"]


def as_type(x: np.ndarray, name: str) -> np.ndarray:
    """Bit patterns (or values) of the same width viewed as ``name``'s dtype."""
    dt = np.dtype(DTYPES[name])
    if x.dtype.itemsize != dt.itemsize:
        raise ValueError(f"{x.dtype} data cannot hold {name} bit patterns")
    return np.ascontiguousarray(x).view(dt)


def getter(arrays, prefix: str) -> Callable[[str], np.ndarray | None]:
    """``get(name)``: the array ``prefix + name`` of an npz file (or dict), or None."""
    names = set(arrays.files if hasattr(arrays, "files") else arrays)
    return lambda name: arrays[prefix + name] if prefix + name in names else None


def operands(call: dict, get: Callable[[str], np.ndarray | None]) -> tuple[Operands, np.ndarray]:
    """The engine's operands and the GPU's D for a record; ``get(name)`` gives its arrays."""
    out = out_dtype(call)
    op = call["op"]
    if op == "scaled_mm":
        A, B = as_type(get("A"), call["a"]), as_type(get("B"), call["b"])
        bias = get("bias")
        ops = Operands(A.view(np.uint8), B.view(np.uint8), out,
                       scale_a=as_type(get("scale_a"), "float32"),
                       scale_b=as_type(get("scale_b"), "float32"),
                       bias=None if bias is None else as_type(bias, "bfloat16").astype(np.float32))
        return ops, as_type(get("D"), out)
    if op == "int_mm":
        return (Operands(as_type(get("A"), "int8"), as_type(get("B"), "int8"), "int32"),
                as_type(get("D"), "int32"))
    dt = call["dtype"]
    A, B = as_type(get("A"), dt), as_type(get("B"), dt)
    uint = np.dtype(f"u{A.dtype.itemsize}")
    c = get("C") if op in ("addmm", "addmm_bias") else get("bias")
    c = None if c is None else as_type(c, dt).astype(np.float32)
    ops = Operands(A.view(uint), B.view(uint), out, c=c, alpha=call.get("alpha", 1.0),
                   beta=call.get("beta", 1.0))
    return ops, as_type(get("D"), out)


# Significand bits of the probe values (`probe_inputs`): exact in the call's input type, and
# (f32) products of two of them exact in f32, so every rounding a probe's output shows comes
# from the kernel's additions.
PROBE_BITS = {"float16": 10, "bfloat16": 7, "float32": 11}


def probe_values(rng: np.random.Generator, shape: tuple, bits: int) -> np.ndarray:
    """float32 values +-(1 + m / 2**bits) * 2**e, e in -3..3: a spread of exponents, each
    exactly representable in an input type with ``bits`` fraction bits."""
    m = rng.integers(0, 1 << bits, shape)
    e = rng.integers(-3, 4, shape)
    s = rng.integers(0, 2, shape) * 2 - 1
    return (s * (1 + m / (1 << bits)) * np.exp2(e)).astype(np.float32)


def probe_inputs(call: dict) -> dict[str, np.ndarray]:
    """The inputs of a probe call of scripts/blas_sweep.py (``gen: "np"``), as float32 values
    (exact in the call's dtype), drawn from ``call["seed"]`` alone so that the CPU rebuilds
    every element of them: A (batch..., M, K), B (batch..., K, N) and, for addmm, C of zeros.
    With ``cancel``, K's halves hold the same A and opposite B, shuffled along K by one
    permutation: every exact sum is zero and the output is the kernel's rounding residue."""
    rng = np.random.default_rng(call["seed"])
    batch = (call["batch"],) if call["op"] == "bmm" else ()
    M, N, K = call["M"], call["N"], call["K"]
    bits = PROBE_BITS[call["dtype"]] - (1 if call.get("tf32") else 0)
    if call.get("cancel"):
        h = K // 2
        a = probe_values(rng, batch + (M, h), bits)
        b = probe_values(rng, batch + (h, N), bits)
        a = np.concatenate([a, a] + [np.zeros_like(a[..., :1])] * (K % 2), -1)
        b = np.concatenate([b, -b] + [b[..., :1, :]] * (K % 2), -2)
        perm = rng.permutation(K)
        a, b = a[..., perm], b[..., perm, :]
    else:
        a = probe_values(rng, batch + (M, K), bits)
        b = probe_values(rng, batch + (K, N), bits)
    out = dict(A=np.ascontiguousarray(a), B=np.ascontiguousarray(b))
    if call["op"] == "addmm":
        out["C"] = np.zeros((M, N), np.float32)
    return out


def probe_operands(call: dict, get: Callable[[str], np.ndarray | None] | None = None
                   ) -> Operands:
    """The whole operands of a probe call (``gen: "np"``), rebuilt from its seed; with
    ``get`` (the record's arrays), checked against the rows and columns it kept."""
    host = probe_inputs(call)
    dt = np.dtype(DTYPES[call["dtype"]])
    A, B = host["A"].astype(dt), host["B"].astype(dt)
    if get is not None:
        for name, whole in (("A", A), ("B", B)):
            kept = as_type(get(name), call["dtype"])
            if not any(_contains(whole, kept, axis) for axis in (-2, -1)):
                raise ValueError(f"probe {call}: the rebuilt {name} is not the GPU's")
    uint = np.dtype(f"u{dt.itemsize}")
    c = host.get("C")
    return Operands(A.view(uint), B.view(uint), call["dtype"], c=c,
                    alpha=call.get("alpha", 1.0), beta=call.get("beta", 1.0))


def _contains(whole: np.ndarray, kept: np.ndarray, axis: int) -> bool:
    """Whether ``kept`` is ``whole`` restricted to some of its indices along ``axis`` (the
    record's spread of rows or columns), compared by bits."""
    n, k = whole.shape[axis], kept.shape[axis]
    if whole.shape[:axis % whole.ndim] != kept.shape[:axis % whole.ndim] or k > n:
        return False
    idx = np.arange(n) if k == n else np.unique(np.linspace(0, n - 1, k).round().astype(int))
    if len(idx) != k:
        return False
    picked = np.take(whole, idx, axis=axis)
    return picked.shape == kept.shape and np.array_equal(
        picked.view(f"u{whole.itemsize}"), kept.view(f"u{kept.itemsize}"))
