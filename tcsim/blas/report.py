"""`tcsim blas`: one torch GEMM call on random inputs, its cuBLAS plan in words, and how far
its bits are from float64 and from NumPy's float32 matmul.

    tcsim blas matmul 64 64 4096 --dtype bf16
    tcsim blas scaled_mm 64 64 4096 --a e4m3 --b e5m2 --out bfloat16 --fast

The inputs are standard normal values rounded to the input type (int8: uniform integers), drawn
from ``--seed``; the reference is the same call in float64 on those inputs (tf32's rounding of
the inputs counts as error: it is what the flag changes). docs/blas.md explains what is seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..isa.formats import format_named
from ..isa.validate import check_memory
from . import addmm, int_mm, linear, matmul, plan, scaled_mm
from .chain import OUTPUT_FORMATS, to_output
from .evaluate import bit_patterns
from .plan import describe

OPS = ("matmul", "addmm", "linear", "scaled_mm", "int_mm")
DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}
FP8 = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
OUTS = {"float16": "float16", "f16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
        "float32": "float32", "f32": "float32", "e4m3": "float8_e4m3fn",
        "float8_e4m3fn": "float8_e4m3fn", "e5m2": "float8_e5m2", "float8_e5m2": "float8_e5m2"}
NP_DTYPES = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
             "float32": np.dtype(np.float32), "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
             "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2)}


def add_parser(sub) -> None:
    """Register ``tcsim blas`` on the CLI's subparsers."""
    b = sub.add_parser(
        "blas", help="a torch GEMM as cuBLAS runs it on the H100: its plan and its error",
        description="Run torch's matmul, addmm, linear, _scaled_mm or _int_mm on random "
                    "inputs as cuBLAS does on the H100, print the plan in words and the error "
                    "against float64. Example: tcsim blas matmul 64 64 4096 --dtype bf16 "
                    "(docs/blas.md)")
    b.add_argument("op", choices=OPS)
    b.add_argument("M", type=int, help="rows of A and D")
    b.add_argument("N", type=int, help="columns of B and D")
    b.add_argument("K", type=int, help="the length of each dot product")
    b.add_argument("--dtype", choices=list(DTYPES), help="input (and output) type of matmul, "
                   "addmm and linear (default: f16)")
    b.add_argument("--tf32", action="store_true",
                   help="torch.backends.cuda.matmul.allow_tf32 = True (with --dtype f32)")
    b.add_argument("--layout", choices=["NN", "NT", "TN", "TT"],
                   help="matmul and addmm: T makes A or B a transposed view, as x.t() in torch "
                        "(default: NN)")
    b.add_argument("--a", choices=list(FP8), help="scaled_mm: A's fp8 type (default: e4m3)")
    b.add_argument("--b", choices=list(FP8), help="scaled_mm: B's fp8 type (default: e4m3)")
    b.add_argument("--out", choices=sorted(set(OUTS)),
                   help="scaled_mm: out_dtype (default: bfloat16)")
    b.add_argument("--fast", action="store_true", help="scaled_mm: use_fast_accum=True")
    b.add_argument("--seed", type=int, default=0, help="the inputs' random seed (default: 0)")
    b.set_defaults(run=run)


@dataclass(frozen=True)
class Errors:
    """How far D is from the float64 result (``count`` finite elements compared)."""

    count: int
    max_relative: float
    mean_relative: float
    max_ulps: float
    mean_ulps: float
    correctly_rounded: int  # D equals the float64 result rounded to the output type
    differ_from_numpy: int  # D differs from NumPy's float32 result rounded to the output type


def run(args) -> int:
    _check(args)
    rng = np.random.default_rng(args.seed)
    inputs, kwargs, exact, single, words = _draw(args, rng)
    op = {"matmul": matmul, "addmm": addmm, "linear": linear, "scaled_mm": scaled_mm,
          "int_mm": int_mm}[args.op]
    chosen = plan(args.op, *inputs, **kwargs)
    D = op(*inputs, **kwargs)
    print(f"tcsim blas {args.op} {args.M} {args.N} {args.K}: {words} (seed {args.seed})\n")
    print(_short_ranges(describe(chosen, args.K)))
    print()
    print(summary(D, exact, single))
    return 0


def _short_ranges(text: str, keep: int = 4) -> str:
    """A plan's words with a long list of split ranges cut to its first and last ones."""
    lines = []
    for line in text.splitlines():
        head, _, listed = line.partition("ranges ")
        ranges = re.findall(r"\[\d+, \d+\)", listed)
        if not head.strip() and listed and len(ranges) > keep + 1:
            line = (f"{head}ranges {', '.join(ranges[:keep])}, ..., {ranges[-1]} "
                    f"({len(ranges)} ranges)")
        lines.append(line)
    return "\n".join(lines)


def _check(args) -> None:
    """Options that do not fit the op: one line each, before any work."""
    for name in ("M", "N", "K"):
        if getattr(args, name) < 1:
            raise ValueError(f"{name} must be at least 1, got {getattr(args, name)}")
    if args.seed < 0:
        raise ValueError(f"--seed must be at least 0, got {args.seed}")
    fp8_options = [f"--{o}" for o in ("a", "b", "out") if getattr(args, o) is not None]
    fp8_options += ["--fast"] if args.fast else []
    if args.op != "scaled_mm" and fp8_options:
        raise ValueError(f"{' '.join(fp8_options)} applies to scaled_mm only, not {args.op}")
    if args.op in ("scaled_mm", "int_mm"):
        given = [o for o, v in (("--dtype", args.dtype), ("--tf32", args.tf32),
                                ("--layout", args.layout)) if v]
        fixed = ("fp8 inputs of --a and --b, A row-major and B column-major"
                 if args.op == "scaled_mm" else "int8 inputs, row-major")
        if given:
            raise ValueError(f"{' '.join(given)} does not apply to {args.op} ({fixed})")
    if args.op == "linear" and args.layout is not None:
        raise ValueError("--layout does not apply to linear (x is row-major and weight "
                         "(N, K) is used transposed, as F.linear does)")
    if args.tf32 and (args.dtype or "f16") != "f32":
        raise ValueError(f"--tf32 applies to --dtype f32 only, not {args.dtype or 'f16'}")
    M, N, K = args.M, args.N, args.K
    # the inputs, their float64 and float32 copies, and three results, before drawing any
    check_memory(8 * (2 * (M * K + K * N) + 4 * M * N), f"tcsim blas {args.op} {M} {N} {K}")


def _draw(args, rng):
    """(inputs, keyword arguments, the float64 result, NumPy's float32 result, words)."""
    M, N, K = args.M, args.N, args.K
    if args.op == "int_mm":
        A = rng.integers(-128, 128, (M, K), dtype=np.int8)
        B = rng.integers(-128, 128, (K, N), dtype=np.int8)
        exact = A.astype(np.float64) @ B.astype(np.float64)
        return (A, B), {}, exact, exact.astype(np.int64), "A @ B, int8 -> int32"
    if args.op == "scaled_mm":
        a, b = FP8[args.a or "e4m3"], FP8[args.b or "e4m3"]
        out = OUTS[args.out or "bfloat16"]
        A = _normal(rng, (M, K), a)
        B = np.asfortranarray(_normal(rng, (N, K), b).T)  # torch wants B column-major
        one = np.float32(1.0)
        kwargs = dict(out_dtype=out, use_fast_accum=args.fast)
        exact = _f64(A) @ _f64(B)
        single = _f32(A) @ _f32(B)
        words = (f"_scaled_mm(A {a}, B {b}, scales 1, out_dtype={out}, "
                 f"use_fast_accum={args.fast})")
        return (A, B, one, one), kwargs, exact, single, words
    dtype = DTYPES[args.dtype or "f16"]
    kwargs = dict(allow_tf32=args.tf32)
    tf32 = ", allow_tf32" if args.tf32 else ""
    if args.op == "linear":
        x, weight, bias = (_normal(rng, s, dtype) for s in ((M, K), (N, K), (N,)))
        exact = _f64(x) @ _f64(weight).T + _f64(bias)
        single = _f32(x) @ _f32(weight).T + _f32(bias)
        return ((x, weight, bias), kwargs, exact, single,
                f"F.linear(x {M}x{K}, weight {N}x{K}, bias {N}), {dtype}{tf32}")
    layout = args.layout or "NN"
    A = _normal(rng, (M, K), dtype, transposed=layout[0] == "T")
    B = _normal(rng, (K, N), dtype, transposed=layout[1] == "T")
    exact, single = _f64(A) @ _f64(B), _f32(A) @ _f32(B)
    words = f"A {M}x{K} @ B {K}x{N}, {dtype}, layout {layout}{tf32}"
    if args.op == "matmul":
        return (A, B), kwargs, exact, single, "matmul: " + words
    C = _normal(rng, (M, N), dtype)
    return ((C, A, B), kwargs, exact + _f64(C), single + _f32(C),
            "addmm: C + " + words)


def _normal(rng, shape, dtype: str, transposed: bool = False) -> np.ndarray:
    """Standard normal values rounded to ``dtype`` (never all zeros); ``transposed``: the same
    values as a column-major array (torch's x.t())."""
    if transposed:
        return np.asfortranarray(_normal(rng, shape[::-1], dtype).T)
    return rng.standard_normal(shape).astype(NP_DTYPES[dtype])


def _f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


def _f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32)


def errors(D: np.ndarray, exact: np.ndarray, single: np.ndarray) -> Errors:
    """D's error against ``exact`` (float64) and its agreement with ``single`` (NumPy's
    float32 result), both rounded to D's type as the GPU rounds (fp8 saturates)."""
    if D.dtype.kind == "i":
        count = D.size
        same = int(np.count_nonzero(D.astype(np.int64) == exact.astype(np.int64)))
        return Errors(count, 0.0, 0.0, 0.0, 0.0, same,
                      int(np.count_nonzero(D.astype(np.int64) != single)))
    name = next(n for n, d in NP_DTYPES.items() if d == D.dtype)
    d = D.astype(np.float64)
    finite = np.isfinite(d) & np.isfinite(exact)
    d, ref = d[finite], exact[finite]
    err = np.abs(d - ref)
    nonzero = ref != 0
    relative = err[nonzero] / np.abs(ref[nonzero])
    fmt = format_named(OUTPUT_FORMATS[name])
    binade = np.floor(np.log2(np.maximum(np.abs(ref), np.finfo(np.float64).tiny)))
    ulps = err / np.exp2(np.maximum(binade, fmt.emin) - fmt.fraction_bits)
    rounded = bit_patterns(to_output(exact, name)).ravel()
    numpy_rounded = bit_patterns(to_output(single.astype(np.float32), name)).ravel()
    mine = bit_patterns(D).ravel()
    return Errors(
        count=int(finite.sum()),
        max_relative=float(relative.max()) if relative.size else 0.0,
        mean_relative=float(relative.mean()) if relative.size else 0.0,
        max_ulps=float(ulps.max()) if ulps.size else 0.0,
        mean_ulps=float(ulps.mean()) if ulps.size else 0.0,
        correctly_rounded=int(np.count_nonzero(mine == rounded)),
        differ_from_numpy=int(np.count_nonzero(mine != numpy_rounded)))



def summary(D: np.ndarray, exact: np.ndarray, single: np.ndarray) -> str:
    """The error statistics in words."""
    e = errors(D, exact, single)
    n = D.size
    if D.dtype.kind == "i":
        return (f"exact int32 sums: {e.correctly_rounded} of {n} elements equal the exact sum "
                f"(int8 products add without rounding)")
    name = next(k for k, d in NP_DTYPES.items() if d == D.dtype)

    def share(count: int) -> str:
        return f"{count} of {n} ({100 * count / n:.1f}%)"

    lines = [f"error against float64 ({n} elements of {name}):",
             f"  relative error        max {e.max_relative:.3g}   mean {e.mean_relative:.3g}",
             f"  ulps of {name:<13s} max {e.max_ulps:.3g}   mean {e.mean_ulps:.3g}",
             f"  correctly rounded     {share(e.correctly_rounded)}",
             f"  differ from NumPy's float32 matmul rounded to {name}: "
             f"{share(e.differ_from_numpy)}"]
    if e.count < n:
        lines.append(f"  ({n - e.count} elements not finite, left out)")
    return "\n".join(lines)
