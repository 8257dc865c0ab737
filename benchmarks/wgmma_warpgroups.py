"""How fast one consumer warpgroup drives the tensor pipe, against two (the speed model's
question about kernel10's 64-row tiles: docs/performance.md, "One consumer warpgroup").

    python benchmarks/wgmma_warpgroups.py --json OUT.json [--runs 5]

benchmarks/cuda/wgmma_peak.cu issues kernel7's consumer pattern (4 wgmma m64n256k16 into one
accumulator per group, commit, wait until one group is pending) from random f16 in shared
memory, with no copies and no barriers. Here each block is 1 or 2 warpgroups, and asks for
enough shared memory that an SM holds one block; 132 blocks (every SM) or 64 (as
kernel10's 64 x 256 tiles of 256x4096x16384 busy), launches of about 100 us (a GEMM's) and
2 ms, f16 and f32 accumulators. Each row: warpgroup wgmma per SM per cycle (median over SMs of
the block's clock64 span) and the SM clock (cycles over globaltimer), the numbers the model's
tensor term and clock are made of. Needs CuPy and an sm_90a GPU; about a minute.
"""

from __future__ import annotations

import argparse
import json
import time

import bench_cuda  # this folder's
import bench_gpu_constants as constants
import numpy as np

SHARED = 120 * 1024  # more than half an SM's: one block per SM, as kernel10's blocks are
WGMMA_PER_GROUP = 4  # wgmma_peak.cu's batch


def measure(runs: int, warmup: int) -> list[dict]:
    import cupy

    sms = int(cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"])
    rows = []
    for acc in ("f16", "f32"):
        fn = bench_cuda.function("wgmma_peak.cu", f"wgmma_peak_{acc}", None, SHARED, "sm_90a")
        sink = cupy.zeros(1, cupy.uint32)
        for blocks in (sms, 64):
            rec = constants.records(blocks)
            for warpgroups in (1, 2):
                def make(iters: int, blocks=blocks, warpgroups=warpgroups, rec=rec, fn=fn,
                         sink=sink):
                    def launch() -> None:
                        fn((blocks,), (128 * warpgroups,), (sink, np.int32(iters), np.int32(1),
                                                            rec), shared_mem=SHARED)
                    return launch

                for target in (1e-4, 2e-3):
                    iters = constants.calibrate(make, 16, target)
                    seconds = constants.median_seconds(make(iters), runs, warmup)
                    stats = constants.per_sm(rec, warpgroups * iters * WGMMA_PER_GROUP)
                    row = {"accumulate": acc, "blocks": blocks, "warpgroups": warpgroups,
                           "iterations": iters, "seconds": seconds,
                           "wgmma_per_sm_per_cycle": stats.rate,
                           "cycles_per_wgmma_group": warpgroups * WGMMA_PER_GROUP / stats.rate,
                           "clock_ghz": stats.clock_ghz, "sms_used": stats.sms}
                    rows.append(row)
                    print(f"{acc} {blocks:3d} blocks x {warpgroups} warpgroup(s) "
                          f"{seconds * 1e6:8.1f} us: {stats.rate:.6f} wgmma/SM/cycle "
                          f"({row['cycles_per_wgmma_group']:.1f} cycles per group of "
                          f"{warpgroups * WGMMA_PER_GROUP}), {stats.clock_ghz:.3f} GHz, "
                          f"{stats.sms} SMs", flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", default=None)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    args = p.parse_args()
    rows = measure(args.runs, args.warmup)
    name, driver = constants.gpu_identity()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": name, "driver": driver, "date": time.strftime("%Y-%m-%d %H:%M"),
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
