"""Issue 35's sweep: the Hopper rung against cuBLAS on every shape class, with explain's error.

    python benchmarks/bench_sweep.py --measure OUT.json [--runs 15] [--shapes MxNxK ...]
    python benchmarks/bench_sweep.py --table OUT.json        # anywhere: the sweep table

``--measure`` times, at each shape, torch.matmul (cuBLAS; f16 in, f32 accumulation, f16 out)
and kernel10's twin in every tile variant of `VARIANTS` that divides the shape, for each
accumulator type, in interleaved rounds (`bench_gpu.interleaved_medians`: one launch of each
per round, three rotating input sets, a spin-kernel lead), and checks one random block tile of
each variant bit for bit against `tcsim.run`. ``--table`` adds explain's prediction for each
measured case (no GPU needed) and prints shape, variant, TFLOP/s, % of cuBLAS, predicted time
and error, and the model's limiter; the best variant of each shape and accumulator is marked.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from functools import partial

import numpy as np

import tcsim

SWEEP = [(1024, 1024, 1024), (2048, 2048, 2048), (3072, 3072, 3072), (4096, 4096, 4096),
         (8192, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192), (512, 4096, 4096),
         (512, 8192, 8192), (8192, 8192, 1024), (4096, 4096, 16384)]
# kernel10's tile variants the speed model can explain (wgmma m64n256k16): two consumer
# warpgroups on 128 x 256 tiles (the default), or one on 64 x 256, which makes twice the tiles
# for shapes whose 128 x 256 tiles leave SMs idle.
VARIANTS = {"128x256": {}, "64x256": {"block_m": 64}}
KERNEL = "kernel10"


def measure(path: str, shapes, runs: int, accumulate: list[str]) -> None:
    import bench_gpu  # this folder's: the timing and the check of the speed table
    import cupy

    from tcsim.hw.kernels import device_launch
    from tcsim.hw.launch import launcher

    kernel = tcsim.kernels.kernel_named(KERNEL)
    rng = np.random.default_rng()
    rows = []
    for M, N, K in shapes:
        sets, D, references = bench_gpu.references(M, N, K, rng)
        contenders = {("torch", "f32"): references["torch", "f32"]}
        params = {}
        for label, overrides in VARIANTS.items():
            for acc in accumulate:
                p = kernel.params(accumulate=acc, **overrides)
                if M % p.block_m or N % p.block_n or K % p.block_k:
                    continue
                params[label, acc] = p
                contenders[label, acc] = partial(bench_gpu._kernel, [launcher(device_launch(
                    kernel, p, *s, D)) for s in sets])
        seconds = bench_gpu.interleaved_medians(contenders, runs)
        host = [cupy.asnumpy(x) for x in sets[0]]
        for (label, acc), t in seconds.items():
            row = {"shape": [M, N, K], "variant": label, "accumulate": acc, "seconds": t,
                   "torch_seconds": seconds["torch", "f32"]}
            if (label, acc) in params:
                p = params[label, acc]
                contenders[label, acc](0)
                row["check"] = bench_gpu._check_block(kernel, p, host, cupy.asnumpy(D), rng)
                row["params"] = VARIANTS[label]
            rows.append(row)
            print(f"{M}x{N}x{K} {label} {acc}: {2 * M * N * K / t / 1e12:.0f} TFLOP/s "
                  f"{row.get('check', '')}", flush=True)
        del sets, D, contenders
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout
    with open(path, "w") as f:
        json.dump({"gpu": smi.strip(), "date": time.strftime("%Y-%m-%d"), "runs": runs,
                   "kernel": KERNEL, "rows": rows}, f, indent=1)


def table(path: str, gpu: str = "H100-SXM") -> list[dict]:
    """The measured rows with explain's prediction for each kernel case."""
    log = json.load(open(path))
    out = []
    for row in log["rows"]:
        M, N, K = row["shape"]
        flops = 2 * M * N * K
        r = {"shape": f"{M}x{N}x{K}", "variant": row["variant"], "acc": row["accumulate"],
             "tflops": flops / row["seconds"] / 1e12,
             "of_cublas": row["torch_seconds"] / row["seconds"], "check": row.get("check", "")}
        if "params" in row:
            e = tcsim.trace(log["kernel"], M, N, K, accumulate=row["accumulate"],
                            **row["params"]).explain(gpu)
            r.update(predicted_ms=e.seconds * 1e3, error=e.seconds / row["seconds"] - 1,
                     limiter=e.limiter)
        out.append(r)
    for shape in {r["shape"] for r in out}:
        for acc in ("f16", "f32"):
            mine = [r for r in out if r["shape"] == shape and r["acc"] == acc and "error" in r]
            if mine:
                max(mine, key=lambda r: r["tflops"])["best"] = True
    return out


def render(rows: list[dict]) -> str:
    lines = ["| M x N x K | variant | acc | TFLOP/s | % of cuBLAS | predicted ms | error | "
             "limiter | bits |", "|---|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        name = f"**{r['variant']}**" if r.get("best") else r["variant"]
        if "error" in r:
            bits = "exact" if "bit-exact" in r["check"] else r["check"]
            lines.append(f"| {r['shape']} | {name} | {r['acc']} | {r['tflops']:.0f} | "
                         f"{r['of_cublas']:.0%} | {r['predicted_ms']:.3f} | {r['error']:+.0%} | "
                         f"{r['limiter']} | {bits} |")
        else:
            lines.append(f"| {r['shape']} | cuBLAS (torch) | f32 | {r['tflops']:.0f} | 100% | "
                         f"| | | |")
    errors = [abs(r["error"]) for r in rows if "error" in r]
    best = [r for r in rows if r.get("best")]
    lines.append(f"\n{len(errors)} kernel cases: {sum(e <= 0.1 for e in errors)} predicted within "
                 f"10%, max |error| {max(errors):.0%}; best variant at or above cuBLAS on "
                 f"{sum(r['of_cublas'] >= 1 for r in best)} of {len(best)} shape x accumulator "
                 f"cases")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--measure", metavar="OUT.json")
    p.add_argument("--table", metavar="MEASURED.json")
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--shapes", nargs="*", default=None, help="MxNxK ...")
    p.add_argument("--accumulate", nargs="*", default=["f16", "f32"])
    args = p.parse_args()
    if args.measure:
        shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes] if args.shapes \
            else SWEEP
        measure(args.measure, shapes, args.runs, args.accumulate)
    if args.table:
        print(render(table(args.table)))


if __name__ == "__main__":
    main()
