"""Measure cuBLAS's plans on the GPU: for each call, the kernels torch ran, their launch grids,
and sampled output bits with the inputs that produced them.

    python scripts/blas_sweep.py OUT_DIR [--only PREFIX] [--limit N] [--set SET]

Writes OUT_DIR/blas_sweep.json (one record per call: op, shapes, dtypes, flags, kernels with
grid and block, the versions of torch, CUDA and cuBLAS, the sampled rows and columns) and
OUT_DIR/blas_sweep_N.npz (the sampled inputs and output bits, record by record). The plans
in tcsim/blas are identified from these samples on the CPU (`tcsim.blas.identify`), since an
output element depends only on its row of A, its column of B and the plan.

With ``--set open`` (the kernels tcsim has no order for yet) the inputs are drawn on the CPU
from each call's seed (`tcsim.blas.sweep.probe_inputs`, so the CPU rebuilds every element and
the record holds their SHA-256 to check it), and each record keeps the whole output (``D``, or
``Dfull`` beside a sampled ``D``) with every row of A and column of B that fits in about 1 MB.

torch is needed here and only here: tcsim does not depend on it.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

SAMPLES = 6  # rows and columns sampled per call
WHOLE_BYTES = 512 << 10  # --set open: every row of A (column of B) kept up to this size
WIDE = 32  # --set open: rows of A (columns of B) kept beyond it


def random_shapes(seed: int, count: int, largest: int = 8192, volume: int = 1 << 34,
                  aligned: float = 0.75) -> list[tuple[int, int, int]]:
    """Shapes log-uniform in 1..largest, most of them multiples of 8, M*N*K at most volume."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        m, n, k = (int(2 ** rng.uniform(0, np.log2(largest))) for _ in range(3))
        if rng.random() < aligned:
            m, n, k = (max(8, -(-x // 8) * 8) for x in (m, n, k))
        if m * n * k <= volume:
            out.append((m, n, k))
    return out


def table_shapes(seed: int = 1, scale: int = 1) -> list[dict]:
    """The plan table's calls: random shapes for every op, dtype, layout and flag."""
    calls: list[dict] = []
    shapes = lambda n, **kw: random_shapes(seed + len(calls), n * scale, **kw)  # noqa: E731
    for dtype in ("float16", "bfloat16"):
        for m, n, k in shapes(220):
            calls.append(dict(op="matmul", dtype=dtype, M=m, N=n, K=k))
        for layout in ("NT", "TN", "TT"):
            for m, n, k in shapes(25):
                calls.append(dict(op="matmul", dtype=dtype, M=m, N=n, K=k, layout=layout))
        for m, n, k in shapes(25, volume=1 << 31):
            b = int(np.random.default_rng(m * n + k).integers(2, 9))
            calls.append(dict(op="bmm", dtype=dtype, batch=b, M=m, N=n, K=k))
        for m, n, k in shapes(25):
            calls.append(dict(op="addmm", dtype=dtype, M=m, N=n, K=k, beta=1.0, alpha=1.0))
            calls.append(dict(op="addmm", dtype=dtype, M=m, N=n, K=k, beta=0.75, alpha=1.3))
            calls.append(dict(op="addmm_bias", dtype=dtype, M=m, N=n, K=k))
        for m, n, k in shapes(25):
            calls.append(dict(op="linear", dtype=dtype, M=m, N=n, K=k, bias=True))
            calls.append(dict(op="linear", dtype=dtype, M=m, N=n, K=k, bias=False))
        for m, n, k in shapes(15):
            calls.append(dict(op="matmul", dtype=dtype, M=m, N=n, K=k, reduced=False))
    for m, n, k in shapes(80, volume=1 << 33):
        calls.append(dict(op="matmul", dtype="float32", M=m, N=n, K=k, tf32=True))
    for m, n, k in shapes(60, aligned=1.0):
        m, n, k = m, -(-n // 16) * 16, -(-k // 16) * 16  # _scaled_mm needs K, N % 16 == 0
        for fast in (False, True):
            calls.append(dict(op="scaled_mm", a="e4m3", b="e4m3", out="bfloat16", M=m, N=n,
                              K=k, fast=fast, scales="tensor"))
            calls.append(dict(op="scaled_mm", a="e4m3", b="e4m3", out="bfloat16", M=m, N=n,
                              K=k, fast=fast, scales="row"))
    for m, n, k in shapes(20, aligned=1.0):
        n, k = -(-n // 16) * 16, -(-k // 16) * 16
        for a, b, out in (("e4m3", "e5m2", "float16"), ("e5m2", "e4m3", "float32"),
                          ("e4m3", "e4m3", "float16"), ("e4m3", "e4m3", "e4m3")):
            calls.append(dict(op="scaled_mm", a=a, b=b, out=out, M=m, N=n, K=k,
                              fast=bool(m % 2), scales="tensor"))
    return calls


def f32_shapes(seed: int = 1, scale: int = 1) -> list[dict]:
    """float32 without tf32 (torch's default): cuBLAS's SGEMM kernels on the CUDA cores."""
    calls = []
    for m, n, k in random_shapes(seed, 120 * scale, volume=1 << 31):
        calls.append(dict(op="matmul", dtype="float32", M=m, N=n, K=k, tf32=False))
    for layout in ("NT", "TN", "TT"):
        for m, n, k in random_shapes(seed + 1, 15 * scale, volume=1 << 31):
            calls.append(dict(op="matmul", dtype="float32", M=m, N=n, K=k, tf32=False,
                              layout=layout))
    return calls


def order_shapes() -> list[dict]:
    """Calls whose inputs cancel (`cancelling`): every exact result is zero, so what the GPU
    returns is its rounding residue, which differs with the order of the additions. For
    the kernels the sampled sweeps leave open: gemv, gemmSN, the f32 SGEMM kernels."""
    calls: list[dict] = []
    for dtype in ("float16", "bfloat16"):
        for m, n, k in ((1, 100, 696), (1, 1444, 1200), (1, 5947, 336), (1, 71, 202),
                        (1, 1893, 6360), (1, 110, 28), (1, 6402, 10), (1, 7856, 3004),
                        (189, 1, 270), (1820, 1, 1732), (1711, 1, 2), (592, 1, 10),
                        (104, 1, 142), (7105, 1, 5208), (330, 1, 2196),
                        (3, 6449, 10), (8, 19, 184), (7, 515, 12), (6, 95, 88),
                        (2, 5999, 178), (4, 12, 302), (14, 19, 12), (9, 3102, 80),
                        (16, 8, 2)):
            calls.append(dict(op="matmul", dtype=dtype, M=m, N=n, K=k, cancel=True))
        for layout, (m, n, k) in (("NT", (748, 1, 90)), ("TN", (1189, 1, 16)),
                                  ("NT", (1, 7789, 3898)), ("TT", (1, 2326, 66)),
                                  ("NT", (5, 5199, 144))):
            calls.append(dict(op="matmul", dtype=dtype, M=m, N=n, K=k, layout=layout,
                              cancel=True))
        for b, m, n, k in ((5, 21, 1, 5092), (5, 1, 18, 8), (3, 1, 12, 3390),
                           (4, 13, 961, 216)):
            calls.append(dict(op="bmm", dtype=dtype, batch=b, M=m, N=n, K=k, cancel=True))
        for m, n, k in ((12, 24, 610), (12, 3, 3638), (1, 7, 22), (9, 2, 46)):
            calls.append(dict(op="linear", dtype=dtype, M=m, N=n, K=k, bias=False,
                              cancel=True))
    for tf32, shapes32 in ((False, ((8, 56, 80), (8, 584, 32), (3, 14, 84), (16, 176, 24),
                                    (8, 1864, 48), (8, 8, 88), (30, 1, 30), (1, 200, 4),
                                    (1, 1, 5014), (752, 8, 40), (48, 197, 772),
                                    (16, 352, 536), (8, 840, 880), (40, 32, 3624),
                                    (8, 16, 4392), (584, 8, 8), (256, 256, 256),
                                    (208, 424, 416), (5, 91, 4228), (1768, 374, 470),
                                    (1, 3, 270), (1, 49, 948), (2138, 1, 5640))),
                           (True, ((1, 3, 270), (1, 299, 6), (1, 94, 1888)))):
        for m, n, k in shapes32:
            calls.append(dict(op="matmul", dtype="float32", M=m, N=n, K=k, tf32=tf32,
                              cancel=True))
    # Hardware test run 3: gemvNSP<float, ..., 1, 16, 4> (bmm 1 x 688 x 360, batch 3), whose
    # order is not found; gemvx for a one-column float32 bmm; nvjet for one column, K = 88.
    for b, m, n, k in ((3, 1, 688, 360), (1, 1, 688, 360), (2, 18, 1, 353)):
        calls.append(dict(op="bmm" if b > 1 else "matmul", dtype="float32", M=m, N=n, K=k,
                          tf32=False, cancel=True, **({"batch": b} if b > 1 else {})))
    calls.append(dict(op="matmul", dtype="float16", M=1112, N=1, K=88, cancel=True))
    return calls


def open_shapes() -> list[dict]:
    """Order probes for the kernels the plan table measured but cannot explain (docs/blas.md,
    "not covered yet"), each with neighbours that may run the same kernel; inputs from
    `tcsim.blas.sweep.probe_inputs` (``gen: "np"``), whole outputs kept."""
    calls: list[dict] = []

    def add(op, dtype, M, N, K, cancel=True, **kw):
        call = dict(op=op, dtype=dtype, M=M, N=N, K=K, cancel=cancel, gen="np",
                    seed=20261125 + len(calls), **kw)
        if dtype == "float32":
            call.setdefault("tf32", False)
        calls.append(call)

    # gemvNSP_kernel<float, ..., 1, 16, 4, ...>: hardware run 3's bmm float32 1 x 688 x 360,
    # batch 3 (grid [22, 1, 3]), random and cancelling, and neighbours.
    add("bmm", "float32", 1, 688, 360, cancel=False, batch=3)
    for n, k, b in ((688, 360, 3), (688, 360, 2), (688, 180, 3), (688, 720, 3), (344, 360, 3),
                    (1376, 360, 3), (500, 360, 3), (256, 360, 3), (688, 100, 3),
                    (688, 536, 3), (1000, 360, 3), (688, 360, 8)):
        add("bmm", "float32", 1, n, k, batch=b)
    for n, k in ((688, 360), (344, 360), (688, 180)):
        add("matmul", "float32", 1, n, k)
    # gemv2T_kernel_val: a long matrix times one column, and one row times a long B^T.
    for dtype in ("float16", "bfloat16"):
        add("matmul", dtype, 7105, 1, 5208)
        add("matmul", dtype, 1, 7789, 3898, layout="NT")
    for m, k in ((4096, 4096), (2048, 5208), (7105, 2048), (3000, 3000)):
        add("matmul", "float16", m, 1, k)
    add("addmm", "bfloat16", 2503, 1, 5741, beta=1.0, alpha=1.0)  # + splitKreduce, grid z 4
    add("matmul", "bfloat16", 2503, 1, 5741)
    # gemmSN_TN_kernel with a long K (linear, a handful of outputs).
    for dtype, (m, n, k) in (("bfloat16", (12, 3, 3638)), ("float16", (12, 3, 3638)),
                             ("bfloat16", (12, 3, 900)), ("bfloat16", (12, 3, 1800)),
                             ("bfloat16", (12, 3, 6000)), ("bfloat16", (12, 24, 2000)),
                             ("bfloat16", (9, 2, 3000)), ("bfloat16", (12, 24, 610))):
        add("linear", dtype, m, n, k, bias=False)
    # gemvx with a split-K reduction (one row times a matrix, a long K).
    for dtype, (n, k) in (("float16", (1893, 6360)), ("bfloat16", (1893, 6360)),
                          ("bfloat16", (1893, 4096)), ("float16", (1000, 8000)),
                          ("float16", (3000, 5000)), ("float32", (1893, 6360))):
        add("matmul", dtype, 1, n, k)
    # dot_kernel + reduce_1Block_kernel (float32, one row or column, a long K), and the
    # float16/bfloat16 calls of it whose order random samples could not pin.
    for m, n, k in ((1, 17, 1614), (20, 1, 1229), (1, 17, 3000), (20, 1, 2500), (8, 1, 1229),
                    (1, 4, 6413), (1, 1, 5014), (3, 1, 800)):
        add("matmul", "float32", m, n, k)
    add("matmul", "float16", 4, 1, 2566)
    add("matmul", "float16", 1, 4, 6413)
    add("linear", "bfloat16", 5, 1, 1625, bias=False)
    # sm80_xmma FFMA split-K without a second launch (grid z = 176).
    for m, n, k in ((5, 91, 4228), (5, 91, 2000), (8, 91, 4228)):
        add("matmul", "float32", m, n, k)
    return calls


def shapes() -> list[dict]:
    """The first sweep's calls: every op and dtype, tiny to large, skinny, odd, misaligned,
    batched."""
    calls: list[dict] = []
    square = [16, 64, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096]
    odd = [(1000, 1000, 1000), (333, 555, 777), (17, 33, 65), (4095, 4097, 1023),
           (100, 200, 3000), (1001, 1001, 1001), (8, 8, 8), (1, 1, 1), (24, 40, 56)]
    skinny = [(128, 8192, 8192), (256, 8192, 8192), (512, 4096, 4096), (64, 4096, 4096),
              (4096, 64, 4096), (4096, 4096, 64), (32, 32, 8192), (64, 64, 16384),
              (128, 128, 32768), (16, 1024, 1024), (1024, 16, 1024), (8, 4096, 1024),
              (2048, 2048, 8192), (256, 256, 4096), (512, 512, 12288), (96, 160, 10000)]
    gemv = [(1, 1024, 1024), (1024, 1, 1024), (1, 4096, 4096), (2, 2048, 2048)]
    for dtype in ("float16", "bfloat16"):
        for n in square:
            calls.append(dict(op="matmul", dtype=dtype, M=n, N=n, K=n))
        for m, n, k in odd + skinny + gemv:
            calls.append(dict(op="matmul", dtype=dtype, M=m, N=n, K=k))
        for layout in ("NT", "TN", "TT"):
            for m, n, k in ((512, 512, 512), (1000, 1000, 1000), (64, 64, 8192),
                            (128, 8192, 8192)):
                calls.append(dict(op="matmul", dtype=dtype, M=m, N=n, K=k, layout=layout))
        for b, m, n, k in ((4, 256, 256, 256), (8, 128, 64, 2048), (3, 1000, 500, 300),
                           (16, 64, 64, 64), (2, 1024, 1024, 4096)):
            calls.append(dict(op="bmm", dtype=dtype, batch=b, M=m, N=n, K=k))
        for m, n, k in ((256, 256, 256), (1000, 1000, 1000), (64, 64, 8192), (4096, 4096, 64)):
            calls.append(dict(op="addmm", dtype=dtype, M=m, N=n, K=k, beta=1.0, alpha=1.0))
            calls.append(dict(op="addmm", dtype=dtype, M=m, N=n, K=k, beta=0.5, alpha=2.0))
            calls.append(dict(op="addmm_bias", dtype=dtype, M=m, N=n, K=k))
            calls.append(dict(op="linear", dtype=dtype, M=m, N=n, K=k, bias=True))
            calls.append(dict(op="linear", dtype=dtype, M=m, N=n, K=k, bias=False))
        for m, n, k in ((64, 64, 8192), (128, 128, 32768), (1000, 1000, 1000), (1024,) * 3):
            calls.append(dict(op="matmul", dtype=dtype, M=m, N=n, K=k, reduced=False))
    for m, n, k in [(n, n, n) for n in (64, 256, 1024, 2048, 4096)] + odd[:6] + skinny[:10]:
        calls.append(dict(op="matmul", dtype="float32", M=m, N=n, K=k, tf32=True))
    for m, n, k in [(n, n, n) for n in (64, 256, 1024)] + [(1000, 1000, 1000), (64, 64, 8192)]:
        calls.append(dict(op="matmul", dtype="float32", M=m, N=n, K=k, tf32=False))
    fp8_shapes = [(n, n, n) for n in (16, 64, 256, 1024, 2048, 4096)] + [
        (128, 8192, 8192), (256, 4096, 4096), (64, 64, 8192), (1024, 16, 1024), (32, 48, 2048),
        (1000, 1008, 1024), (4096, 4096, 64), (128, 128, 16384)]
    for m, n, k in fp8_shapes:
        for fast in (False, True):
            calls.append(dict(op="scaled_mm", a="e4m3", b="e4m3", out="bfloat16", M=m, N=n,
                              K=k, fast=fast, scales="tensor"))
    for a, b in (("e4m3", "e5m2"), ("e5m2", "e4m3")):
        for out in ("bfloat16", "float16", "float32"):
            for fast in (False, True):
                calls.append(dict(op="scaled_mm", a=a, b=b, out=out, M=512, N=256, K=1024,
                                  fast=fast, scales="tensor"))
    for out in ("float16", "float32", "e4m3"):
        calls.append(dict(op="scaled_mm", a="e4m3", b="e4m3", out=out, M=256, N=512, K=2048,
                          fast=False, scales="tensor"))
    for m, n, k in ((256, 512, 2048), (1024, 1024, 1024), (64, 4096, 4096), (2048, 2048, 8192)):
        for fast in (False, True):
            calls.append(dict(op="scaled_mm", a="e4m3", b="e4m3", out="bfloat16", M=m, N=n,
                              K=k, fast=fast, scales="row"))
    calls.append(dict(op="scaled_mm", a="e4m3", b="e4m3", out="bfloat16", M=256, N=256,
                      K=1024, fast=False, scales="tensor", bias=True))
    for m, n, k in ((32, 32, 32), (256, 256, 256), (1024, 1024, 1024), (4096, 4096, 4096),
                    (24, 40, 64)):
        calls.append(dict(op="int_mm", M=m, N=n, K=k))
    return calls


def kept_slices(call: dict) -> tuple[np.ndarray, np.ndarray]:
    """--set open: the rows of A and columns of B a record keeps (all that fit in
    WHOLE_BYTES, else WIDE spread over the matrix)."""
    size = (call.get("batch", 1) if call["op"] == "bmm" else 1) * call["K"] * (
        4 if call["dtype"] == "float32" else 2)

    def spread(n):
        if n * size <= WHOLE_BYTES:
            return np.arange(n)
        return np.unique(np.linspace(0, n - 1, WIDE).round().astype(int))

    return spread(call["M"]), spread(call["N"])


def fp8_dtype(torch, name):
    return {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[name]


def draw(torch, gen, shape, dtype):
    """Values with a spread of exponents: normal samples times 2**(uniform -3..3)."""
    x = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
    x *= torch.exp2(torch.randint(-3, 4, shape, generator=gen, device="cuda").float())
    return x.to(dtype)


def cancelling(torch, gen, batch, M, N, K, dtype):
    """A (..., M, K) and B (..., K, N) whose products cancel in pairs: every exact sum is 0.
    K's halves hold the same A and opposite B, shuffled along K by one permutation."""
    h = K // 2
    a = draw(torch, gen, batch + (M, h), dtype)
    b = draw(torch, gen, batch + (h, N), dtype)
    a = torch.cat([a, a] + [torch.zeros_like(a[..., :1])] * (K % 2), -1)
    b = torch.cat([b, -b] + [b[..., :1, :]] * (K % 2), -2)
    perm = torch.randperm(K, generator=gen, device="cuda")
    return a[..., perm].contiguous(), b[..., perm, :].contiguous()


def run_call(torch, call, gen):
    """Draw one call's inputs; returns (inputs dict, the call as a function of nothing)."""
    op, M, N, K = call["op"], call["M"], call["N"], call["K"]
    if call.get("gen") == "np":
        return probe_call(torch, call)
    if call.get("cancel"):
        dtype = getattr(torch, call["dtype"])
        layout = "NT" if op == "linear" else call.get("layout", "NN")
        batch = (call["batch"],) if op == "bmm" else ()
        a, b = cancelling(torch, gen, batch, M, N, K, dtype)
        if layout[0] == "T":
            a = a.transpose(-1, -2).contiguous().transpose(-1, -2)
        if layout[1] == "T":
            b = b.transpose(-1, -2).contiguous().transpose(-1, -2)
        if op == "linear":
            w = b.transpose(-1, -2)
            return dict(A=a, B=b), lambda: torch.nn.functional.linear(a, w)
        return dict(A=a, B=b), lambda: torch.matmul(a, b)
    if op == "scaled_mm":
        # fp8 outputs saturate: keep most of their sums inside the range.
        gain = 8 / max(1.0, (K / 64) ** 0.5) if call["out"] in ("e4m3", "e5m2") else 8
        a = draw(torch, gen, (M, K), torch.float32) * gain
        b = draw(torch, gen, (N, K), torch.float32) * 8
        a, b = a.to(fp8_dtype(torch, call["a"])), b.to(fp8_dtype(torch, call["b"]))
        bt = b.t()  # (K, N), column-major, as _scaled_mm requires
        if call["scales"] == "tensor":
            sa = torch.rand((), generator=gen, device="cuda") + 0.5
            sb = torch.rand((), generator=gen, device="cuda") + 0.5
        else:
            sa = torch.rand((M, 1), generator=gen, device="cuda") + 0.5
            sb = torch.rand((1, N), generator=gen, device="cuda") + 0.5
        out_dtype = (fp8_dtype(torch, call["out"]) if call["out"] in ("e4m3", "e5m2")
                     else getattr(torch, call["out"]))
        bias = (draw(torch, gen, (N,), torch.bfloat16) if call.get("bias") else None)
        sa, sb = sa.float(), sb.float()
        return dict(A=a, B=bt, scale_a=sa, scale_b=sb, bias=bias), lambda: torch._scaled_mm(
            a, bt, scale_a=sa, scale_b=sb, bias=bias, out_dtype=out_dtype,
            use_fast_accum=call["fast"])
    if op == "int_mm":
        a = torch.randint(-128, 128, (M, K), generator=gen, device="cuda", dtype=torch.int8)
        b = torch.randint(-128, 128, (K, N), generator=gen, device="cuda", dtype=torch.int8)
        return dict(A=a, B=b), lambda: torch._int_mm(a, b)
    dtype = getattr(torch, call["dtype"])
    layout = call.get("layout", "NN")
    batch = (call["batch"],) if op == "bmm" else ()
    a = draw(torch, gen, batch + ((K, M) if layout[0] == "T" else (M, K)), dtype)
    b = draw(torch, gen, batch + ((N, K) if layout[1] == "T" else (K, N)), dtype)
    a = a.transpose(-1, -2) if layout[0] == "T" else a
    b = b.transpose(-1, -2) if layout[1] == "T" else b
    if op in ("matmul", "bmm"):
        return dict(A=a, B=b), lambda: torch.matmul(a, b)
    if op == "addmm":
        c = draw(torch, gen, (M, N), dtype)
        return dict(A=a, B=b, C=c), lambda: torch.addmm(c, a, b, beta=call["beta"],
                                                         alpha=call["alpha"])
    if op == "addmm_bias":
        c = draw(torch, gen, (N,), dtype)
        return dict(A=a, B=b, C=c), lambda: torch.addmm(c, a, b)
    if op == "linear":
        w = draw(torch, gen, (N, K), dtype)  # weight (N, K), row-major as nn.Linear keeps it
        bias = draw(torch, gen, (N,), dtype) if call["bias"] else None
        return dict(A=a, B=w.t(), bias=bias), lambda: torch.nn.functional.linear(a, w, bias)
    raise ValueError(op)


def probe_call(torch, call):
    """A ``gen: "np"`` call: inputs from `tcsim.blas.sweep.probe_inputs`, laid out as the
    call's layout says."""
    from tcsim.blas.sweep import probe_inputs

    dtype = getattr(torch, call["dtype"])
    host = probe_inputs(call)
    a = torch.from_numpy(host["A"]).cuda().to(dtype)
    b = torch.from_numpy(host["B"]).cuda().to(dtype)
    layout = "NT" if call["op"] == "linear" else call.get("layout", "NN")
    if layout[0] == "T":
        a = a.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout[1] == "T":
        b = b.transpose(-1, -2).contiguous().transpose(-1, -2)
    if call["op"] == "linear":
        w = b.transpose(-1, -2)
        return dict(A=a, B=b), lambda: torch.nn.functional.linear(a, w)
    if call["op"] == "addmm":
        c = torch.from_numpy(host["C"]).cuda().to(dtype)
        return dict(A=a, B=b, C=c), lambda: torch.addmm(c, a, b, beta=call["beta"],
                                                         alpha=call["alpha"])
    return dict(A=a, B=b), lambda: torch.matmul(a, b)


def flags(torch, call):
    m = torch.backends.cuda.matmul
    m.allow_tf32 = bool(call.get("tf32", False))
    reduced = call.get("reduced", True)
    m.allow_fp16_reduced_precision_reduction = reduced
    m.allow_bf16_reduced_precision_reduction = reduced


def kernels_of(prof_json: dict) -> list[dict]:
    out = []
    for ev in prof_json.get("traceEvents", []):
        if ev.get("cat") == "kernel":
            args = ev.get("args", {})
            out.append(dict(name=ev.get("name"), grid=args.get("grid"), block=args.get("block"),
                            smem=args.get("shared memory"), regs=args.get("registers per thread")))
    return out


def to_numpy(t):
    import torch
    if t is None:
        return None
    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2, torch.float16):
        return t.contiguous().view(torch.uint8 if t.element_size() == 1 else torch.int16).numpy()
    return t.contiguous().numpy()


def versions(torch) -> dict:
    v = dict(torch=torch.__version__, cuda=torch.version.cuda,
             gpu=torch.cuda.get_device_name(), capability=list(torch.cuda.get_device_capability()))
    for lib in ("cublas", "cublasLt"):
        try:
            handle = ctypes.CDLL(f"lib{lib}.so.13")
            if lib == "cublasLt":
                handle.cublasLtGetVersion.restype = ctypes.c_size_t
                v[lib] = int(handle.cublasLtGetVersion())
            else:
                out = ctypes.c_int()
                handle.cublasGetVersion_v2(None, ctypes.byref(out))
                v[lib] = out.value
        except OSError as e:
            v[lib] = f"unknown ({e})"
    return v


def main() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--only", default="")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--set", choices=("first", "table", "f32", "orders", "open"),
                   default="first")
    p.add_argument("--samples", type=int, default=SAMPLES)
    p.add_argument("--seed", type=int, default=1, help="the table set's random shapes")
    p.add_argument("--scale", type=int, default=1, help="the table set's calls, times this")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    calls = {"first": shapes, "table": lambda: table_shapes(args.seed, args.scale),
             "f32": lambda: f32_shapes(args.seed, args.scale), "orders": order_shapes,
             "open": open_shapes}[args.set]()
    calls = [c for c in calls if json.dumps(c).find(args.only) >= 0 or not args.only]
    if args.limit:
        calls = calls[:args.limit]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(20261125)
    records, arrays, part = [], {}, 0
    meta = versions(torch)
    print(meta, flush=True)
    for i, call in enumerate(calls):
        flags(torch, call)
        rec = dict(index=i, call=call)
        try:
            inputs, fn = run_call(torch, call, gen)
            fn()  # warm: handles, heuristics cache
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                d = fn()
                torch.cuda.synchronize()
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                prof.export_chrome_trace(f.name)
                rec["kernels"] = kernels_of(json.load(open(f.name)))
        except Exception as e:  # torch refuses: record why
            rec["error"] = f"{type(e).__name__}: {e}"
            records.append(rec)
            print(i, call, "ERROR", rec["error"][:200], flush=True)
            continue
        whole = call.get("gen") == "np"
        if whole:
            rows, cols = kept_slices(call)
        else:
            rows = np.unique(np.linspace(0, call["M"] - 1, args.samples).round().astype(int))
            cols = np.unique(np.linspace(0, call["N"] - 1, args.samples).round().astype(int))
        rec["rows"], rec["cols"] = rows.tolist(), cols.tolist()
        rec["out_dtype"] = str(d.dtype)
        rec["out_strides"] = list(d.stride())
        rt, ct = torch.as_tensor(rows, device="cuda"), torch.as_tensor(cols, device="cuda")
        batches = list(range(d.shape[0])) if d.dim() == 3 else None
        if batches and not whole:
            batches = [0, d.shape[0] - 1]
        if batches:
            rec["batches"] = batches
        key = f"r{i}"
        if whole:
            rec["sha256"] = {name: hashlib.sha256(to_numpy(t).tobytes()).hexdigest()
                             for name, t in inputs.items() if t is not None}
            if len(rows) < call["M"] or len(cols) < call["N"]:
                arrays[key + "_Dfull"] = to_numpy(d)

        def pick(t, r=None, c=None, batches=batches):
            if t is None:
                return None
            if batches:
                t = t[batches]
            if r is not None:
                t = t.index_select(-2, r)
            if c is not None:
                t = t.index_select(-1, c)
            return to_numpy(t)

        arrays[key + "_A"] = pick(inputs["A"], r=rt)
        arrays[key + "_B"] = pick(inputs["B"], c=ct)
        arrays[key + "_D"] = pick(d, r=rt, c=ct)
        if inputs.get("C") is not None:
            c = inputs["C"]
            arrays[key + "_C"] = pick(c, r=rt if c.dim() == 2 else None, c=ct)
        for name in ("bias", "scale_a", "scale_b"):
            t = inputs.get(name)
            if t is not None:
                if name == "scale_a" and t.dim() == 2:
                    t = t.index_select(0, rt)
                elif name == "scale_b" and t.dim() == 2:
                    t = t.index_select(1, ct)
                elif name == "bias":
                    t = t.index_select(0, ct)
                arrays[key + "_" + name] = to_numpy(t)
        rec["part"] = part
        records.append(rec)
        arrays = {k: v for k, v in arrays.items() if v is not None}
        print(i, call, [(k["name"][:70], k["grid"]) for k in rec["kernels"]], flush=True)
        if sum(v.nbytes for v in arrays.values()) > (64 if whole else 12) << 20:
            np.savez_compressed(out / f"blas_sweep_{part}.npz", **arrays)
            arrays, part = {}, part + 1
    if arrays:
        np.savez_compressed(out / f"blas_sweep_{part}.npz", **arrays)
    json.dump(dict(versions=meta, records=records), open(out / "blas_sweep.json", "w"),
              indent=1)
    with open(out / "blas_sweep.jsonl", "w") as f:  # the same records, a line each
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    print("calls", len(records), "errors", sum("error" in r for r in records), file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
