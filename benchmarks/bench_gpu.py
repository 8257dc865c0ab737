"""GPU speed: the mma.sync ceiling, cuBLAS, and every kernel of the ladder, in one table.

    python benchmarks/bench_gpu.py [--runs 20] [--kernels kernel1 ...] [--beta 0 1] [--json FILE]

Each timing: CUDA events around one launch, after warm-up launches, the median of ``--runs``
launches that rotate over three sets of inputs (so no launch finds its operands in L2 from the
previous one). A spin kernel of ``LEAD_SECONDS`` runs before the start event, so the timed
launch is already queued on the GPU when its interval opens: the events time the GPU, not the
Python code that launches it (a launch whose CPU time outlasts the lead is left out of the
median, and counted). At each shape cuBLAS, torch and the kernels take turns, one launch each
per round, so that a clock that drops as the GPU warms up weighs on all of them alike. Every
timed kernel's output is checked bit for bit against `tcsim.run` on one random block tile (that
tile of D depends only on its rows of A and columns of B, so the sub-problem gives exactly the
same bits). The ceilings are loops of one instruction with no memory traffic: mma.sync from
registers (benchmarks/cuda/mma_peak.cu), wgmma m64n256k16 from one shared tile
(benchmarks/cuda/wgmma_peak.cu, sm_90a); a kernel's "ceiling" column is the fraction of the
ceiling of the instruction it issues (m16n8k8, m16n8k16 or wgmma) with its accumulator type;
cuBLAS's row shows its fraction of the m16n8k8 f32 ceiling. TFLOP/s = 2 M N K / time. The
kernels run with alpha 1 and each ``--beta`` (default 0, cuBLAS's matmul, which reads no C;
kernel10 then reads none either); a row with beta 1 also shows its fraction of torch.addmm,
which reads C as it does. Needs CuPy and a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from functools import partial

import bench_cuda  # this folder's
import ml_dtypes
import numpy as np

import tcsim
from tcsim.hw import runtime
from tcsim.hw.kernels import device_launch
from tcsim.hw.launch import launcher

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 4096, 2048),
          (2048, 8192, 4096)]
ROTATE = 3
LEAD_SECONDS = 5e-3

_SPIN = r'''
extern "C" __global__ void spin(unsigned long long nanoseconds) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); while (now - start < nanoseconds);
}'''


def median_seconds(fn, runs: int, warmup: int = 3) -> float:
    """Median seconds of ``fn`` (called with the run's index) over ``runs`` launches."""
    return interleaved_medians({0: fn}, runs, warmup)[0]


def interleaved_medians(fns: dict, runs: int, warmup: int = 3, lead: float = LEAD_SECONDS,
                        late: dict | None = None) -> dict:
    """Median seconds of each function of ``fns`` (called with the run's index), timed in
    turns: one launch of each per round, each behind a spin kernel of ``lead`` seconds (0: none).
    A launch whose CPU time outlasts the lead is not counted (the GPU may have waited for it);
    ``late``, when given, receives how many of each key's launches were not."""
    import cupy

    for i in range(warmup):
        for fn in fns.values():
            fn(i)
    spin = cupy.RawKernel(_SPIN, "spin")
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = {key: [] for key in fns}
    late = {} if late is None else late
    late.update(dict.fromkeys(fns, 0))
    for i in range(runs):
        for key, fn in fns.items():
            if lead:
                spin((1,), (1,), (np.uint64(lead * 1e9),))
            start.record()
            cpu = time.perf_counter()
            fn(i)
            cpu = time.perf_counter() - cpu
            end.record()
            end.synchronize()
            if lead and cpu > lead:
                late[key] += 1
            else:
                times[key].append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    if any(2 * n > runs for n in late.values()):
        raise RuntimeError(f"most launches outlasted the {lead * 1e3:g} ms lead: {late}")
    return {key: statistics.median(t) for key, t in times.items()}


def mma_ceilings(runs: int) -> dict[str, float]:
    """TFLOP/s of register-only mma.sync loops: 132 x 8 blocks of 8 warps, 8 chains each."""
    import cupy

    out = cupy.zeros(1, cupy.uint32)
    blocks, warps, chains, iterations = 132 * 8, 8, 8, 4096
    result = {}
    for shape, k in (("m16n8k8", 8), ("m16n8k16", 16)):
        for acc in ("f32", "f16"):
            fn = bench_cuda.function("mma_peak.cu", f"mma_peak_{shape}_{acc}")
            seconds = median_seconds(
                partial(_peak, fn, (blocks,), (32 * warps,), (out, np.int32(iterations))), runs)
            flops = blocks * warps * iterations * chains * 2 * 16 * 8 * k
            result[f"{shape} {acc}"] = flops / seconds / 1e12
    return result


def wgmma_ceilings(runs: int) -> dict[str, float]:
    """TFLOP/s of wgmma m64n256k16 loops from one shared tile: one block of 2 warpgroups per
    SM (sm_90a only; empty elsewhere)."""
    import cupy

    try:
        runtime.require_arch("sm_90a")
    except runtime.HardwareUnavailable:
        return {}
    out = cupy.zeros(1, cupy.uint32)
    blocks = cupy.cuda.Device().attributes["MultiProcessorCount"]
    warpgroups, iterations, shared = 2, 4096, 40 * 1024
    result = {}
    for acc in ("f32", "f16"):
        fn = bench_cuda.function("wgmma_peak.cu", f"wgmma_peak_{acc}", None, shared,
                                     "sm_90a")
        seconds = median_seconds(lambda i, fn=fn: fn((blocks,), (128 * warpgroups,),
                                                     (out, np.int32(iterations),
                                                      np.int32(0), np.uint64(0)),
                                                     shared_mem=shared), runs)
        flops = blocks * warpgroups * iterations * 4 * 2 * 64 * 256 * 16
        result[f"wgmma {acc}"] = flops / seconds / 1e12
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--kernels", nargs="*", default=list(tcsim.kernels.KERNELS))
    p.add_argument("--accumulate", nargs="*", default=["f16", "f32"])
    p.add_argument("--shapes", nargs="*", default=None, help="MxNxK ...")
    p.add_argument("--beta", nargs="*", type=float, default=[0.0])
    p.add_argument("--json", default=None)
    args = p.parse_args()
    import cupy
    shapes = parse_shapes(args.shapes)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout
    print(f"GPU: {smi.strip()}; CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}; "
          f"{time.strftime('%Y-%m-%d')}")
    ceilings = mma_ceilings(args.runs)
    if any(tcsim.kernels.kernel_named(k).params().producers for k in args.kernels):
        ceilings.update(wgmma_ceilings(args.runs))
    for name, tflops in ceilings.items():
        print(f"ceiling {name}: {tflops:.0f} TFLOP/s")
    rng = np.random.default_rng(0)
    rows = []
    for M, N, K in shapes:
        sets, D, contenders = references(M, N, K, rng)
        flops = 2 * M * N * K
        params = {}
        for name in args.kernels:
            kernel = tcsim.kernels.kernel_named(name)
            for acc in args.accumulate:
                for beta in args.beta:
                    key = (name if beta == 0 else f"{name} beta {beta:g}", acc)
                    p_ = kernel.params(accumulate=acc)
                    params[key] = name, p_, beta
                    contenders[key] = partial(_kernel, [launcher(device_launch(
                        kernel, p_, *s, D, beta=beta)) for s in sets])
        seconds = interleaved_medians(contenders, args.runs)
        cublas = flops / seconds["cuBLAS", "f32"] / 1e12
        addmm = flops / seconds["torch addmm", "f32"] / 1e12 \
            if ("torch addmm", "f32") in seconds else None
        for (label, acc), t in seconds.items():
            row = {"kernel": label, "accumulate": acc, "shape": [M, N, K],
                   "tflops": flops / t / 1e12, "check": "-", "cublas_tflops": cublas}
            if (label, acc) in params:
                name, p_, beta = params[label, acc]
                contenders[label, acc](0)
                row["check"] = _check_block(tcsim.kernels.kernel_named(name), p_,
                                            [cupy.asnumpy(x) for x in sets[0]],
                                            cupy.asnumpy(D), rng, beta)
                row["mma"] = "wgmma" if p_.producers else f"m16n8k{p_.mma_k}"
                row["beta"] = beta
                if beta and addmm:
                    row["addmm_tflops"] = addmm
            rows.append(row)
    print(f"\n{'kernel':16s} {'acc':4s} {'M x N x K':>16s} {'TFLOP/s':>8s} {'cuBLAS':>7s} "
          f"{'ceiling':>8s} {'addmm':>6s}  check")
    for r in rows:
        M, N, K = r["shape"]
        ceiling = ceilings.get(f"{r.get('mma', 'm16n8k8')} {r['accumulate']}", float("nan"))
        of_cublas = r["tflops"] / r.get("cublas_tflops", r["tflops"])
        of_addmm = f"{r['tflops'] / r['addmm_tflops']:6.0%}" if "addmm_tflops" in r else " " * 6
        print(f"{r['kernel']:16s} {r['accumulate']:4s} {f'{M}x{N}x{K}':>16s} "
              f"{r['tflops']:8.1f} {of_cublas:7.0%} {r['tflops'] / ceiling:8.0%} {of_addmm}  "
              f"{r['check']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": smi.strip(), "ceilings": ceilings, "rows": rows}, f, indent=1)


def references(M: int, N: int, K: int, rng, inputs: str = "f16") -> tuple[list, object, dict]:
    """ROTATE input sets (A, B, C) on the GPU, an output D, and the reference contenders:
    cuBLAS (cupy.matmul, beta 0: it reads no C), and when torch is there (a reference, never a
    dependency) torch.matmul (cuBLAS's fastest path here) and torch.addmm (beta 1: it reads C
    as the twins do with beta 1, and writes over it). ``inputs`` "bf16": the arrays hold
    bfloat16 bits as uint16 (CuPy has no bfloat16), torch views them as bfloat16, and
    cupy.matmul, which cannot, is left out."""
    import cupy

    host = np.float16 if inputs == "f16" else ml_dtypes.bfloat16
    sets = [[cupy.asarray(rng.uniform(-1, 1, s).astype(host).view(np.uint16)).view(
        cupy.float16 if inputs == "f16" else cupy.uint16)
        for s in ((M, K), (K, N), (M, N))] for _ in range(ROTATE)]
    D = cupy.empty((M, N), sets[0][0].dtype)
    contenders = {("cuBLAS", "f32"): partial(_cublas, sets, D)} if inputs == "f16" else {}
    torch_matmul = _torch_matmul(sets)
    if torch_matmul:
        contenders["torch", "f32"] = torch_matmul
        contenders["torch addmm", "f32"] = _torch_addmm(sets)
    return sets, D, contenders


def parse_shapes(shapes: list[str] | None) -> list[tuple[int, int, int]]:
    """``["MxNxK", ...]`` as tuples; SHAPES when none are given."""
    return [tuple(int(x) for x in s.split("x")) for s in shapes] if shapes else SHAPES


def variant_parser(doc: str) -> argparse.ArgumentParser:
    """The options of a script that times variants of a twin against the references."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--shapes", nargs="*", default=None, help="MxNxK ...")
    p.add_argument("--accumulate", nargs="*", default=["f32"])
    p.add_argument("--json", default=None)
    return p


def check_variants(kernel, p, operands, D, runs: dict, rng, acc: str) -> dict:
    """Bits of a twin's variants: ``runs`` maps labels to functions that launch one on
    ``operands`` (A, B, C on the GPU) into ``D``; the first is the twin itself, whose random
    block tile is checked against `tcsim.run`, and every other D is compared with its D."""
    import cupy

    first, *_ = runs
    runs[first]()
    reference = D.copy()
    out = {f"check {acc}": _check_block(kernel, p, [cupy.asnumpy(x) for x in operands],
                                        cupy.asnumpy(D), rng)}
    for label, go in runs.items():
        D.fill(0)
        go()
        out[f"same as {first} {label} {acc}"] = bool(cupy.array_equal(
            D.view(cupy.uint16), reference.view(cupy.uint16)))
    return out


def _peak(fn, grid, block, args, i: int) -> None:
    fn(grid, block, args)


def _cublas(sets, D, i: int) -> None:
    import cupy

    A, B, _ = sets[i % ROTATE]
    cupy.matmul(A, B, out=D)


def _torch_matmul(sets):
    """torch.matmul on input set i (mod ROTATE), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    tensors = [[_torch_view(torch, x) for x in s[:2]] for s in sets]
    return lambda i: torch.matmul(*tensors[i % ROTATE])


def _torch_view(torch, x):
    """A CuPy array as torch sees it: uint16 bits (bench_gpu.references' bf16) as bfloat16."""
    t = torch.as_tensor(x, device="cuda")
    return t.view(torch.bfloat16) if t.dtype == torch.uint16 else t


def _torch_addmm(sets):
    """torch.addmm(C, A, B, out=C) on input set i: cuBLAS with beta 1 in place, reading C in
    its epilogue as the twins do (torch copies nothing when out is C). C's values drift from
    launch to launch; what is timed does not depend on them."""
    import torch

    tensors = [[_torch_view(torch, x) for x in s] for s in sets]
    return lambda i: torch.addmm(tensors[i % ROTATE][2], *tensors[i % ROTATE][:2],
                                 out=tensors[i % ROTATE][2])


def _kernel(launchers, i: int) -> None:
    """Launch a twin on input set i (mod ROTATE)."""
    launchers[i % ROTATE]()


def _check_block(kernel, p, operands, D, rng, beta: float = 0.0) -> str:
    """D's bits on one random block tile against tcsim.run on that sub-problem (alpha 1)."""
    A, B, C = operands
    M, N = D.shape
    r = rng.integers(-(-M // p.block_m)) * p.block_m  # a ragged edge's block too
    c = rng.integers(-(-N // p.block_n)) * p.block_n
    rows, cols = slice(r, r + p.block_m), slice(c, c + p.block_n)
    if A.dtype == np.uint16:  # bf16 bits (references with inputs "bf16")
        A, B, C = (x.view(ml_dtypes.bfloat16) for x in (A, B, C))
    # one tile makes no cluster; a cluster's tiles get the bits they get without one
    # (tests/kernels/test_clusters.py)
    sim = tcsim.run(kernel, A[rows], B[:, cols], C[rows, cols], 1.0, beta,
                    **{**p.as_dict(), "cluster_m": 1})
    same = np.array_equal(sim.view(np.uint16), D[rows, cols].view(np.uint16))
    return f"bit-exact block ({r}, {c})" if same else f"MISMATCH in block ({r}, {c})"


if __name__ == "__main__":
    main()
