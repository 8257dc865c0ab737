"""Nsight Compute on kernel10's tile variants: SM cycles, clock, tensor-pipe busy cycles.

    python benchmarks/ncu_tiles.py --shapes 256x4096x16384 --variants 128x256 64x256
                                   [--accumulate f16 f32] [--json FILE]

One launch of each variant (labels of `tcsim.perf.TILE_VARIANTS["kernel10"]`) per shape and
accumulator, under ``ncu --clock-control none``: the kernel's time, the busiest SM's elapsed
cycles and the tensor pipe's busy cycles on the busiest SM (Nsight Compute counts them on each of
an SM's 4 sub-partitions: printed over 4), which say whether a variant is held
by its SM's cycles (the tensor pipe idle between K tiles) or by the clock. Needs CuPy, an
sm_90a GPU and ncu.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

METRICS = {
    "gpu__time_duration.sum": "ns",
    "sm__cycles_elapsed.max": "SM cycles (max)",
    "smsp__cycles_elapsed.avg.per_second": "clock Hz",
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.max": "tensor busy (max)",
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum": "tensor busy (sum)",
    "dram__bytes_read.sum": "DRAM read B",
    "lts__t_bytes.sum": "L2 B",
}


def main() -> None:
    import tcsim
    from tcsim.hw.kernels import device_launch
    from tcsim.hw.ncu import profile
    from tcsim.perf import TILE_VARIANTS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="+", required=True)
    p.add_argument("--variants", nargs="+", required=True)
    p.add_argument("--accumulate", nargs="+", default=["f16", "f32"])
    p.add_argument("--json", default=None)
    args = p.parse_args()
    kernel = tcsim.kernels.kernel_named("kernel10")
    rng = np.random.default_rng(0)
    launches, cases = [], []
    for shape in args.shapes:
        M, N, K = (int(x) for x in shape.split("x"))
        A, B, C = (rng.uniform(-1, 1, s).astype(np.float16) for s in ((M, K), (K, N), (M, N)))
        D = np.zeros((M, N), np.float16)
        for label in args.variants:
            overrides = TILE_VARIANTS["kernel10"][label]
            for acc in args.accumulate:
                if overrides.get("splits", 1) > 1 and acc != "f32":
                    continue
                params = kernel.params(accumulate=acc, **overrides)
                launches.append(device_launch(kernel, params, A, B, C, D))
                cases.append({"shape": [M, N, K], "variant": label, "accumulate": acc,
                              "params": overrides})
    rows = []
    for case, values in zip(cases, profile(launches, tuple(METRICS))):
        rows.append({**case, **{METRICS[m]: values[m] for m in METRICS}})
        M, N, K = case["shape"]
        cycles = values["sm__cycles_elapsed.max"]
        # counted on each of the SM's 4 sub-partitions (kernel10 at 256x4096x16384 with 128 x
        # 256 tiles: 1,048,576 = 4 x 256 K tiles x 8 wgmma x 128 cycles)
        busy = values["sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.max"] / 4
        print(f"{M}x{N}x{K} {case['variant']:<16} {case['accumulate']}: "
              f"{values['gpu__time_duration.sum'] / 1e3:8.2f} us, {cycles:10,.0f} SM cycles at "
              f"{values['smsp__cycles_elapsed.avg.per_second'] / 1e9:.3f} GHz, tensor busy "
              f"{busy:10,.0f} cycles ({busy / cycles:.0%}) on the busiest SM", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
