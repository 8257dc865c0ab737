"""Draw docs/blas.md's figures: how far cuBLAS's GEMM results are from float64 as K grows, in
each mode, and how often split-K changes the bits.

    python scripts/blas_figures.py            # docs/figures/blas-*.png, about a minute

Every GEMM is tcsim.blas's bit-exact model of the H100's cuBLAS (torch 2.11, CUDA 13), on
64 x 64 outputs of random inputs (fixed seeds). Each mode's plan is the table's, with its split
count set by ``plan=`` so that one effect is seen at a time. Needs matplotlib.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import ml_dtypes
import numpy as np

import tcsim.blas as blas

ROOT = Path(__file__).resolve().parent.parent
KS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
ONE = np.float32(1.0)


def draw(kind: str, M: int, N: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """float64 inputs: "normal" (standard normal) or "positive" (uniform in [0, 1))."""
    rng = np.random.default_rng([seed, K])
    if kind == "normal":
        return rng.standard_normal((M, K)), rng.standard_normal((K, N))
    return rng.random((M, K)), rng.random((K, N))


def _matmul(A, B, splits: int, **flags) -> np.ndarray:
    chosen = blas.plan("matmul", A, B, **flags).with_(splits=splits)
    return blas.matmul(A, B, plan=chosen, **flags)


def _fp8(A, B, fast: bool, splits: int) -> np.ndarray:
    B = np.asfortranarray(B.T).T  # torch's _scaled_mm takes B column-major
    args = (A, B, ONE, ONE)
    flags = dict(out_dtype="float32", use_fast_accum=fast)
    chosen = blas.plan("scaled_mm", *args, **flags).with_(splits=splits)
    return blas.scaled_mm(*args, plan=chosen, **flags)


# mode: (label, input dtype, how D is computed from inputs of that dtype)
MODES = {
    "numpy": ("NumPy float32 matmul (CPU)", np.float32, lambda A, B: A @ B),
    "f32": ("float32 (CUDA-core FFMA)", np.float32, lambda A, B: _matmul(A, B, 1)),
    "tf32": ("float32, allow_tf32", np.float32,
             lambda A, B: _matmul(A, B, 1, allow_tf32=True)),
    "f16": ("float16 out", F16, lambda A, B: _matmul(A, B, 1)),
    "f16 split": ("float16 out, split-K 8", F16, lambda A, B: _matmul(A, B, 8)),
    "bf16": ("bfloat16 out", BF16, lambda A, B: _matmul(A, B, 1)),
    "fp8 promoted": ("fp8 e4m3, promoted (f32 out)", E4M3, lambda A, B: _fp8(A, B, False, 1)),
    "fp8 fast": ("fp8 e4m3, fast accumulation (f32 out)", E4M3,
                 lambda A, B: _fp8(A, B, True, 1)),
    "fp8 fast split": ("fp8 e4m3, fast, split-K 4 (f32 out)", E4M3,
                       lambda A, B: _fp8(A, B, True, 4)),
}
STYLE = {"numpy": "k--", "f32": "k:", "tf32": "C4-^", "f16": "C0-o", "f16 split": "C0--x",
         "bf16": "C1-s", "fp8 promoted": "C2-D", "fp8 fast": "C3-v", "fp8 fast split": "C3--v"}


def error_curves(kind: str, size: int, ks, seed: int) -> dict[str, list[float]]:
    """Per mode, the mean over outputs of |D - exact| / sum_k |a_k b_k| at each K: the error
    measured against the sum's size without cancellation (for positive inputs, the relative
    error). The inputs are first rounded to the mode's input type, and exact is float64 on
    those rounded inputs, so the curves show the arithmetic, not the inputs' rounding
    (except tf32's, which torch adds)."""
    curves: dict[str, list[float]] = {m: [] for m in MODES}
    for K in ks:
        A64, B64 = draw(kind, size, size, K, seed)
        for mode, (_, dtype, compute) in MODES.items():
            A, B = A64.astype(dtype), B64.astype(dtype)
            a, b = A.astype(np.float64), B.astype(np.float64)
            D = np.asarray(compute(A, B)).astype(np.float64)
            scale = np.abs(a) @ np.abs(b)
            curves[mode].append(float(np.mean(np.abs(D - a @ b) / scale)))
        print(f"  {kind} K={K} done", flush=True)
    return curves


def split_bits(size: int, ks, seed: int, splits=(2, 4, 8)) -> dict[str, list[float]]:
    """The share of outputs whose bits change when the same product is cut into S split-K
    ranges (against S = 1), and the share that differ from NumPy's float32 result rounded to
    the output type, for f16 and bf16 outputs of normal inputs."""
    out: dict[str, list[float]] = {}
    for name, dtype in (("float16", F16), ("bfloat16", BF16)):
        for K in ks:
            A64, B64 = draw("normal", size, size, K, seed)
            A, B = A64.astype(dtype), B64.astype(dtype)
            one = _bits(_matmul(A, B, 1))
            for S in splits:
                share = np.mean(_bits(_matmul(A, B, S)) != one)
                out.setdefault(f"{name}, split-K {S} vs none", []).append(float(share))
            numpy = (A.astype(np.float32) @ B.astype(np.float32)).astype(dtype)
            out.setdefault(f"{name}, no split vs NumPy float32", []).append(
                float(np.mean(_bits(numpy) != one)))
    return out


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "figures"),
                        help="directory for the PNGs (default: docs/figures)")
    parser.add_argument("--size", type=int, default=64, help="M = N (default: 64)")
    parser.add_argument("--max-k", type=int, default=8192, help="largest K (default: 8192)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [k for k in KS if k <= args.max_k]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    fig, axes = plt.subplots(1, 2, figsize=(13, 6.2), sharey=True)
    for ax, kind, title in ((axes[0], "normal", "standard normal inputs"),
                            (axes[1], "positive", "uniform [0, 1) inputs (no cancellation)")):
        curves = error_curves(kind, args.size, ks, args.seed)
        for mode, values in curves.items():
            ax.loglog(ks, values, STYLE[mode], label=MODES[mode][0], markersize=4)
        ax.set_title(title)
        ax.set_xlabel("K (length of each dot product)")
        ax.set_xscale("log", base=2)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("mean |D - exact| / sum |a_k b_k|")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9)
    fig.suptitle(f"GEMM error against float64 as K grows: H100 cuBLAS modes (tcsim.blas), "
                 f"{args.size} x {args.size} outputs")
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    path = out / "blas-error-vs-k.png"
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    styles = iter(["C0-o", "C0--o", "C0:o", "k-o", "C1-s", "C1--s", "C1:s", "k-s"])
    for label, values in split_bits(args.size, ks, args.seed).items():
        ax.semilogx(ks, [100 * v for v in values], next(styles), label=label, markersize=4,
                    base=2)
    ax.set_xlabel("K")
    ax.set_ylabel("% of outputs with other bits")
    ax.set_title("Same inputs, other bits: split-K, and NumPy's float32 matmul")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "blas-split-k-bits.png"
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
