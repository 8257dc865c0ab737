"""`tcsim.run`'s arguments of a scaled GEMM (kernel11, fp8): what ``torch._scaled_mm`` takes.

``tcsim.run(kernel11, A, B, scale_a=..., scale_b=..., out_dtype=...)``: A (M, K) and B (K, N)
are ``ml_dtypes.float8_e4m3fn`` or ``float8_e5m2`` (their dtypes name the kernel's
``inputs`` and ``inputs_b``), the scales one float32 value each (per tensor, torch's rule:
float32), or row-wise scale_a (M, 1) and scale_b (1, N) (e4m3 x e4m3, bfloat16 out: torch's
rule), ``out_dtype`` float16, bfloat16 or float32. Per tensor the epilogue multiplies the f32
accumulators by the f32 product ``scale_a * scale_b`` and adds +0 (a zero result is +0),
row-wise by scale_b and then scale_a, as cuBLAS does (`tcsim.blas`' "scale" and
"scale_b_first" epilogues).
"""

from __future__ import annotations

import numpy as np

from .machine import accumulator_pairs, pack_pairs
from .params import DTYPES, FP8

OUT = ("f16", "bf16", "f32")


def scaled_arguments(kernel, A, B, C, alpha, beta, scale_a, scale_b, out_dtype,
                     params: dict) -> tuple[np.float32 | tuple[np.ndarray, np.ndarray], dict]:
    """(the epilogue's f32 factor scale_a * scale_b, or with row-wise scales the vectors
    scale_a (M,) and scale_b (N,); the kernel's parameters with inputs, inputs_b and output
    named by A's and B's dtypes and ``out_dtype``, and row_scales), all checked."""
    if not kernel.scaled:
        raise ValueError(f"{kernel.name} is not a scaled GEMM: scale_a, scale_b and out_dtype "
                         "go with kernel11 (fp8); this kernel takes C, alpha and beta")
    if C is not None or alpha != 1 or beta != 0:
        raise ValueError(f"{kernel.name} computes torch._scaled_mm's out_dtype(scale_a * "
                         "scale_b * A @ B): it reads no C and has no alpha or beta (got "
                         f"C={'given' if C is not None else None}, alpha={alpha}, beta={beta})")
    if scale_a is None or scale_b is None or out_dtype is None:
        missing = [n for n, v in (("scale_a", scale_a), ("scale_b", scale_b),
                                  ("out_dtype", out_dtype)) if v is None]
        raise TypeError(f"{kernel.name} needs scale_a, scale_b and out_dtype as "
                        f"torch._scaled_mm does: {', '.join(missing)} missing")
    sa, sb = _scale(scale_a, "scale_a"), _scale(scale_b, "scale_b")
    params = dict(params)
    if sa.size != 1 or sb.size != 1:  # row-wise: scale_a (M, 1), scale_b (1, N)
        M, N = np.shape(A)[0], np.shape(B)[-1]
        if sa.shape != (M, 1) or sb.shape != (1, N):
            raise ValueError(f"{kernel.name}: scales must both be one value (per tensor) or "
                             f"({M}, 1) and (1, {N}) (row-wise), got {sa.shape} and "
                             f"{sb.shape}")
        params.setdefault("row_scales", 1)
        for name, x, field in (("A", A, "inputs"), ("B", B, "inputs_b")):
            params.setdefault(field, _fp8_name(np.asarray(x).dtype, name, kernel.name))
        params.setdefault("output", _out_name(out_dtype, kernel.name))
        return (sa.reshape(-1), sb.reshape(-1)), params
    sa, sb = sa.reshape(())[()], sb.reshape(())[()]
    for name, x, field in (("A", A, "inputs"), ("B", B, "inputs_b")):
        params.setdefault(field, _fp8_name(np.asarray(x).dtype, name, kernel.name))
    params.setdefault("output", _out_name(out_dtype, kernel.name))
    with np.errstate(over="ignore", invalid="ignore"):
        return np.multiply(sa, sb, dtype=np.float32), params


def _scale(x, name: str) -> np.ndarray:
    s = np.asarray(x)
    if s.dtype != np.float32:
        raise TypeError(f"{name} must be float32 (torch's rule), got {s.dtype}")
    return s


def _fp8_name(dtype: np.dtype, operand: str, kernel: str) -> str:
    for name in FP8:
        if dtype == DTYPES[name]:
            return name
    raise TypeError(f"{kernel}: {operand} must be ml_dtypes.float8_e4m3fn or float8_e5m2 "
                    f"(fp8), got {dtype}")


def _out_name(out_dtype, kernel: str) -> str:
    try:
        dtype = np.dtype(out_dtype)
    except TypeError:
        dtype = None
    for name in OUT:
        if dtype == DTYPES[name]:
            return name
    raise ValueError(f"{kernel}: out_dtype must be float16, bfloat16 (ml_dtypes) or float32, "
                     f"got {out_dtype!r} (fp8 outputs are not offered yet)")


# ---- kernel11's arithmetic on registers (its CUDA twin's add.rn.f32 and epilogue) -----------


CANONICAL_NAN = np.uint32(0x7FFFFFFF)  # every NaN an f32 instruction of the GPU writes


def promote(total: np.ndarray, part: np.ndarray) -> np.ndarray:
    """fp8's promoted accumulation: ``total + part`` on f32 registers (add.rn.f32), where
    ``part`` is a wgmma chain's accumulators summed from zero in the tensor core."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _canonical(np.add(total.view(np.float32), part.view(np.float32),
                                 dtype=np.float32))


def _canonical(x: np.ndarray) -> np.ndarray:
    """f32 values as the GPU's bits: a NaN is 0x7fffffff (the CPU's inf - inf is 0xffc00000,
    and it passes a NaN operand's bits on)."""
    return np.where(np.isnan(x), CANONICAL_NAN, x.view(np.uint32))


def scaled_words(m, acc: np.ndarray, scale_a=None, scale_b=None) -> np.ndarray:
    """kernel11's epilogue on machine ``m``: D = out(acc * scale + 0) per element, ``scale``
    the f32 product scale_a * scale_b that `tcsim.run` gives the machine as ``alpha`` (the
    + 0, cuBLAS's beta 0, turns a -0 into +0: measured on the H100, docs/kernels.md); with
    row-wise scales ``scale_a`` (..., pairs, 32, 1) and ``scale_b`` (..., pairs, 32, 2), the
    words loaded for each element, D = out((acc * scale_b) * scale_a), cuBLAS's order
    (mul.rn.f32 and add.rn.f32 each, NaN 0x7fffffff, then cvt.rn to f16 or bf16, NaN 0x7fff,
    or kept in f32). ``acc``: (..., 32, 4) f32 m16n8 accumulators. Returns D's words (...,
    pairs, 32, words): one f16/bf16 pair per word, or two f32 words per pair."""
    acc = accumulator_pairs(acc)
    with np.errstate(over="ignore", invalid="ignore"):
        if scale_a is None:
            d = np.add(np.multiply(acc, m.alpha, dtype=np.float32), np.float32(0),
                       dtype=np.float32)
        else:
            d = np.multiply(acc, np.asarray(scale_b, np.uint32).view(np.float32),
                            dtype=np.float32)
            d = np.multiply(d, np.asarray(scale_a, np.uint32).view(np.float32),
                            dtype=np.float32)
    return pack_pairs(_canonical(d).view(np.float32), m.params.output_dtype)
