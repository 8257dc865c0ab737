"""How many L2 lookups TMA's copies of a GEMM's tiles cost, by tile order (Nsight Compute).

    python benchmarks/ncu_tma.py [SIZE]    # on the GPU (sm_90a); writes $OUT/ncu_tma.json

Profiles kernel7 and kernel8 (f16 accumulators, SIZE^3, default 4096) and kernel8's twin with
its wgmma and epilogue taken out (benchmarks/cuda/explore.cuh's EXPLORE_NO_MMA and
EXPLORE_NO_EPILOGUE: the copies alone, as bench_gpu_constants.py's tma_gemm_feed times them)
with its tiles in groups of 16 or 4 block rows and along N. Prints, per launch, TMA's bytes
per second, the SM clock, L2's tag lookups (lts__t_bytes) over TMA's bytes, the L2 partitions'
fabric share and the busiest L2 percentages: when the SMs that ask for the same lines at about
the same time are many, the L2 serves them with fewer lookups.
"""
import json
import os
import sys

import numpy as np
from bench_gpu_constants import tma_copies  # this folder's: kernel8's copies alone

from tcsim.hw.kernels import twin_launch
from tcsim.hw.ncu import profile

METRICS = (
    "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum", "lts__t_bytes.sum",
    "lts__t_sectors_srcunit_tex.sum", "lts__t_sectors_srcunit_ltcfabric.sum",
    "dram__bytes_read.sum", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lts__lts2xbar_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed",
    "l1tex__m_xbar2l1tex_read_sectors.avg.pct_of_peak_sustained_elapsed",
)
S = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
rng = np.random.default_rng(1)
A, B = (rng.uniform(-1, 1, (S, S)).astype(np.float16) for _ in range(2))
cases = {"kernel7": ("kernel7", None), "kernel8": ("kernel8", None),
         "copies, groups of 16 rows": ("kernel8", 16), "copies, groups of 4 rows": ("kernel8", 4),
         "copies, along N": ("kernel8", 0)}  # name, GROUP_M of the copies alone (None: the kernel)
launches = []
for label, (name, group_m) in cases.items():
    base = twin_launch(name, A, B, label=label, accumulate="f16")
    launches.append(base if group_m is None else tma_copies(base, group_m))
rows = []
for label, c in zip(cases, profile(launches, METRICS)):
    seconds = c["gpu__time_duration.sum"] * 1e-9
    tma = c["l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"]
    row = {"launch": label, "size": S, "tma_bytes_per_s": tma / seconds,
           "clock_hz": c["sm__cycles_elapsed.avg.per_second"],
           "l2_lookup_bytes_per_tma_byte": c["lts__t_bytes.sum"] / tma,
           "fabric_share": c["lts__t_sectors_srcunit_ltcfabric.sum"]
           / c["lts__t_sectors_srcunit_tex.sum"], "counters": c}
    rows.append(row)
    print(f"{label:28s} {seconds * 1e3:.3f} ms, TMA {tma / seconds / 1e12:.2f} TB/s at "
          f"{row['clock_hz'] / 1e9:.2f} GHz; L2 lookups / TMA bytes "
          f"{row['l2_lookup_bytes_per_tma_byte']:.2f}; fabric {row['fabric_share']:.2f}; "
          + ", ".join(f"{k.split('.')[0]} {v:.0f}%" for k, v in c.items() if "pct" in k))
with open(os.environ.get("OUT", ".") + "/ncu_tma.json", "w") as f:
    json.dump(rows, f, indent=1)
