"""Why a kernel of the ladder is as fast as it is: Nsight Compute's warp stall reasons.

    python scripts/profile_stalls.py OUT [--size 4096]

Profiles every kernel's twin once (default tiles; f16 accumulators, and f32 for kernel5 and
kernel6) with the WarpStateStats, Occupancy and LaunchStats sections plus the tensor pipe's
utilization, writes OUT/stalls.json, and prints per kernel: registers, achieved occupancy,
tensor-pipe activity and the largest stall reasons (cycles per issued instruction).
"""

import argparse
import json

import numpy as np

import tcsim
from tcsim.hw.kernels import twin_launch
from tcsim.hw.ncu import profile

KEY = {
    "launch__registers_per_thread": "registers",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy %",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe %",
    "smsp__cycles_active.avg": "cycles",
}


REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
           "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc",
           "no_instruction", "not_selected", "selected", "short_scoreboard", "sleeping",
           "tex_throttle", "wait")
STALLS = tuple(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in REASONS)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--size", type=int, default=4096)
    args = p.parse_args()
    n = args.size
    rng = np.random.default_rng(0)
    A, B, C = (rng.uniform(-1, 1, (n, n)).astype(np.float16) for _ in range(3))
    cases = [(name, "f16") for name in tcsim.kernels.KERNELS] + [("kernel5", "f32"),
                                                                  ("kernel6", "f32")]
    launches = [twin_launch(name, A, B, C, 1.0, 0.0, accumulate=acc) for name, acc in cases]
    counters = profile(launches, tuple(KEY) + STALLS,
                       ("--section", "WarpStateStats", "--section", "Occupancy",
                        "--section", "LaunchStats"))
    with open(f"{args.out}/stalls.json", "w") as f:
        json.dump([{"kernel": k, "accumulate": a, "size": n, "ncu": c}
                   for (k, a), c in zip(cases, counters)], f, indent=1)
    for (name, acc), c in zip(cases, counters):
        stalls = {k: v for k, v in c.items()
                  if "issue_stalled" in k and k.endswith("per_issue_active.ratio")
                  and v == v and v > 0.05}
        top = sorted(stalls.items(), key=lambda kv: -kv[1])[:6]
        head = ", ".join(f"{label} {c.get(metric, float('nan')):.0f}"
                         for metric, label in KEY.items())
        print(f"{name} {acc}: {head}")
        for metric, value in top:
            reason = metric.split("issue_stalled_")[1].split("_per_issue")[0]
            print(f"    {reason:24s} {value:6.2f} cycles per issued instruction")


if __name__ == "__main__":
    main()
