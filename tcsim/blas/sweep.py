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
