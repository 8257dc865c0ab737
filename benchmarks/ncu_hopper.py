"""What each Hopper rung changes in the memory system: Nsight Compute on kernel6, kernel7,
kernel8, kernel9, kernel10 and cuBLAS, one launch each, at the given shapes.

    python benchmarks/ncu_hopper.py [--shapes 4096x4096x4096 8192x8192x8192]
                                    [--clock-control base|none] [--json FILE]

For each launch: time, SM cycles and clock, DRAM bytes read and written, L2 hit rate, bytes
through L2, and the share of elapsed cycles the tensor pipe was busy. With --clock-control base
(ncu's default) the clock is held at the base clock, so the times compare only with each other;
with none each launch runs at the clock the GPU chooses (after ncu's pause between launches,
a rested GPU's). Needs CuPy, a GPU and ncu; the kernels run with f32 accumulators, alpha 1 and
beta 0, as cuBLAS's matmul.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

METRICS = {
    "gpu__time_duration.sum": "time (ns)",
    "sm__cycles_elapsed.max": "SM cycles",
    "smsp__cycles_elapsed.avg.per_second": "SM clock (Hz)",
    "dram__bytes_read.sum": "DRAM read (B)",
    "dram__bytes_write.sum": "DRAM written (B)",
    "lts__t_sector_hit_rate.pct": "L2 hit (%)",
    "lts__t_bytes.sum": "L2 traffic (B)",
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg"
    ".pct_of_peak_sustained_elapsed": "tensor pipe busy (%)",
}
KERNELS = ("kernel6", "kernel7", "kernel8", "kernel9", "kernel10")


def child(shapes: list[tuple[int, int, int]]) -> None:
    """Launch every contender once per shape (ncu's subject)."""
    import cupy
    import numpy as np

    import tcsim
    from tcsim.hw.kernels import device_launch
    from tcsim.hw.launch import launcher

    rng = np.random.default_rng(0)
    for M, N, K in shapes:
        A, B, C = (cupy.asarray(rng.uniform(-1, 1, s).astype(np.float16))
                   for s in ((M, K), (K, N), (M, N)))
        D = cupy.empty((M, N), cupy.float16)
        for name in KERNELS:
            kernel = tcsim.kernels.kernel_named(name)
            launcher(device_launch(kernel, kernel.params(accumulate="f32"), A, B, C, D))()
        cupy.matmul(A, B, out=D)
        cupy.cuda.Device().synchronize()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="*", default=["4096x4096x4096", "8192x8192x8192"])
    p.add_argument("--clock-control", choices=["base", "none"], default="base")
    p.add_argument("--json", default=None)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes]
    if args.child:
        return child(shapes)
    from tcsim.hw.ncu import find_ncu, parse_csv

    cmd = [find_ncu(), "--clock-control", args.clock_control, "--csv", "--print-units", "base",
           "--metrics", ",".join(METRICS),
           sys.executable, __file__, "--child", "--shapes", *args.shapes]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"ncu failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    names = [n for _ in shapes for n in (*KERNELS, "cuBLAS")]
    counters = parse_csv(run.stdout, len(names), tuple(METRICS))
    rows = []
    print(f"{'shape':>16s} {'kernel':8s} " + " ".join(f"{h:>20s}" for h in METRICS.values()))
    for i, (name, values) in enumerate(zip(names, counters)):
        M, N, K = shapes[i // len(KERNELS + ("cuBLAS",))]
        rows.append({"kernel": name, "shape": [M, N, K],
                     **{METRICS[m]: values[m] for m in METRICS}})
        print(f"{f'{M}x{N}x{K}':>16s} {name:8s} " +
              " ".join(f"{values[m]:20,.1f}" for m in METRICS))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
