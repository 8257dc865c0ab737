"""GPU speed of the fp8 rung: kernel11's twin against torch._scaled_mm, in one run.

    python benchmarks/bench_fp8.py [--runs 20] [--shapes 4096x4096x4096 ...]
                                   [--variants "" "stages=4,group_m=8" ...] [--json FILE]

Both compute ``bf16(scale_a * scale_b * (A @ B))`` from e4m3 A (M x K) and B (N x K, K-major:
torch's column-major (K, N)) with per-tensor scales and promoted accumulation
(``use_fast_accum=False``). Timing as benchmarks/bench_gpu.py times (`interleaved_medians`:
CUDA events behind a spin kernel, one launch of each per round, the median of ``--runs``,
rotating over three input sets). Every timed output of kernel11 is compared with torch's on all
of D, bit for bit (without torch: one block tile against `tcsim.run`). ``--variants`` times
kernel11 with other parameters in the same rounds, each a comma-separated list of KEY=VALUE
("" is the defaults); ``cluster=2``, ``cluster_a=2`` and ``partials=2`` compile the twin
with scaled.cuh's exploratory CLUSTER_M (pairs of blocks share B's tile by TMA multicast; with
``cluster_a``, FP8_MULTICAST_A: A's) and FP8_PARTIALS (two partials, wgmma.wait_group 1),
which the schedule does not model, and an upper-case KEY (such as ``FP8_WAIT_FIRST=1``) is
passed to the compiler as that define. From 8192^3 up kernel11's faster tile on the H100 is
``block_n=192,warp_n=192,stages=5`` (`tcsim.kernels.kernel11.measured_tile`).
TFLOP/s = 2 M N K / time. Needs CuPy, a
Hopper GPU, and torch for the reference (never a dependency).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from dataclasses import replace

import ml_dtypes
import numpy as np
from bench_gpu import ROTATE, interleaved_medians  # this folder's

import tcsim
from tcsim.hw.launch import launcher

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--shapes", nargs="*", default=None, help="MxNxK ...")
    p.add_argument("--variants", nargs="*", default=[""],
                   help='kernel11 parameters per variant: "KEY=VALUE,KEY=VALUE" ("" defaults)')
    p.add_argument("--fast", action="store_true",
                   help="also time _scaled_mm with use_fast_accum=True (no promotion)")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    import cupy

    from tcsim.hw.kernels.scaled import device_scaled_launch

    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes] if args.shapes \
        else SHAPES
    kernel = tcsim.kernels.kernel_named("kernel11")
    variants, explored = {}, {}
    for text in args.variants:
        overrides = {k: int(v) for k, v in (x.split("=") for x in text.split(",") if x)}
        label = f"kernel11 {text}".strip()
        defines = {k: overrides.pop(k) for k in list(overrides) if k.isupper()}
        if overrides.get("cluster_a", 1) > 1:  # clusters sharing A
            defines["FP8_MULTICAST_A"] = 1
            overrides["cluster"] = overrides.pop("cluster_a")
        overrides.pop("cluster_a", None)
        explored[label] = overrides.pop("cluster", 1), overrides.pop("partials", 1), defines
        variants[label] = kernel.params(inputs="e4m3", inputs_b="e4m3", output="bf16",
                                        **overrides)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout
    torch = _torch()
    print(f"GPU: {smi.strip()}; CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}; torch "
          f"{torch.__version__ if torch else 'absent'}; {time.strftime('%Y-%m-%d %H:%M')}")
    for label, q in variants.items():
        print(f"{label}: {q.block_m}x{q.block_n}x{q.block_k}, {q.stages} stages, group_m "
              f"{q.group_m}, {q.persistent_blocks} blocks, promotion {q.promotion}")
    rows = []
    for M, N, K in shapes:
        sets = [(_fp8_bits(cupy, (M, K)), _fp8_bits(cupy, (N, K))) for _ in range(ROTATE)]
        D = cupy.zeros((M, N), cupy.uint16)
        unused = cupy.zeros(1, cupy.float32)
        launches = {label: [launcher(_explored(device_scaled_launch(
            kernel, q, A, B, D, unused, unused, 1.0), *explored[label])) for A, B in sets]
            for label, q in variants.items()}
        contenders = {label: lambda i, go=go: go[i % ROTATE]() for label, go in launches.items()}
        reference = _scaled_mm(torch, sets) if torch else None
        if torch:
            contenders["torch._scaled_mm"] = reference
            if args.fast:
                contenders["torch._scaled_mm fast"] = _scaled_mm(torch, sets, fast=True)
        seconds = interleaved_medians(contenders, args.runs)
        flops = 2 * M * N * K
        theirs = flops / seconds["torch._scaled_mm"] / 1e12 if torch else float("nan")
        if "torch._scaled_mm fast" in seconds:
            fast = flops / seconds["torch._scaled_mm fast"] / 1e12
            rows.append({"shape": [M, N, K], "variant": "torch._scaled_mm fast", "tflops": fast,
                         "scaled_mm_tflops": theirs})
            print(f"{M}x{N}x{K} torch._scaled_mm use_fast_accum=True: {fast:7.1f} TFLOP/s")
        for label, q in variants.items():
            check = _check(cupy, torch, kernel, q, sets, launches[label], D, reference)
            ours = flops / seconds[label] / 1e12
            rows.append({"shape": [M, N, K], "variant": label, "params": q.as_dict(),
                         "tflops": ours, "scaled_mm_tflops": theirs, "ratio": ours / theirs,
                         "check": check})
            print(f"{M}x{N}x{K} {label}: {ours:7.1f} TFLOP/s, torch._scaled_mm {theirs:7.1f}, "
                  f"kernel11 / _scaled_mm {ours / theirs:6.1%}  {check}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": smi.strip(), "rows": rows}, f, indent=1)


def _explored(spec, cluster: int, partials: int, defines: dict[str, int]):
    """The launch with scaled.cuh's exploratory switches: clusters of ``cluster`` blocks
    sharing B (CLUSTER_M; B's boxes 1 / cluster as tall) or A (FP8_MULTICAST_A in
    ``defines``; A's boxes), ``partials`` partial sums (FP8_PARTIALS), and any other
    ``defines``."""
    if partials != 1:
        defines = {**defines, "FP8_PARTIALS": partials}
    if defines:
        spec = replace(spec, defines={**spec.defines, **defines})
    if cluster == 1:
        return spec
    (a, ta), (b, tb) = spec.tensor_maps
    if defines.get("FP8_MULTICAST_A"):  # each block copies 1 / cluster of A's rows
        ta = replace(ta, box_rows=ta.box_rows // cluster)
    else:  # of B's rows
        tb = replace(tb, box_rows=tb.box_rows // cluster)
    return replace(spec, defines={**spec.defines, "CLUSTER_M": cluster},
                   tensor_maps=((a, ta), (b, tb)))


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _fp8_bits(cupy, shape):
    """Random e4m3 bits with bit 6 clear: |x| < 2, no NaN; signs, subnormals and zeros as
    they come."""
    return (cupy.random.randint(0, 256, shape, dtype=cupy.int32) & 0xBF).astype(cupy.uint8)


def _scaled_mm(torch, sets, fast: bool = False):
    """torch._scaled_mm on input set i (mod ROTATE), sharing kernel11's inputs (B's (N, K)
    bytes are its column-major (K, N)); returns the output too, for the check."""
    one = torch.ones((), device="cuda")
    tensors = [[torch.as_tensor(x, device="cuda").view(torch.float8_e4m3fn) for x in s]
               for s in sets]
    return lambda i: torch._scaled_mm(tensors[i % ROTATE][0], tensors[i % ROTATE][1].t(),
                                      scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                      use_fast_accum=fast)


def _check(cupy, torch, kernel, p, sets, launches, D, reference) -> str:
    """kernel11's D on input set 0 against torch's, every element (or one block tile against
    tcsim.run without torch)."""
    D.fill(0)
    launches[0]()
    if reference is not None:
        R = cupy.asarray(reference(0).view(torch.int16)).view(cupy.uint16)
        differ = int((R != D).sum())
        return "bit-exact vs _scaled_mm" if differ == 0 else f"MISMATCH: {differ} differ"
    A, B = (cupy.asnumpy(x).view(ml_dtypes.float8_e4m3fn) for x in sets[0])
    r, c = 0, 0
    rows, cols = slice(r, r + p.block_m), slice(c, c + p.block_n)
    sim = tcsim.run(kernel, A[rows], B[cols].T, scale_a=np.float32(1), scale_b=np.float32(1),
                    out_dtype=ml_dtypes.bfloat16, **p.as_dict())
    same = np.array_equal(sim.view(np.uint16), cupy.asnumpy(D[rows, cols]))
    return "bit-exact block (0, 0) vs tcsim.run" if same else "MISMATCH in block (0, 0)"


if __name__ == "__main__":
    main()
