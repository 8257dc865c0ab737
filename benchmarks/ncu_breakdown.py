"""What Nsight Compute's L1TEX and L2 throughputs are made of, for the speed model's l1 unit.

    python benchmarks/ncu_breakdown.py     # on the GPU; writes $OUT/breakdown.json (OUT or .)

Profiles kernel1, kernel5 (f16, f32), kernel6, kernel7, kernel10 and the seeds' wmma_basic and
wmma_shared at 4096^3 once each under ncu with the breakdown of l1tex__throughput and
lts__throughput, and the L1 data pipe's wavefronts (all, and shared memory's), global load
sectors and their L1 hits. Prints each launch's eight highest percentages and the counts.
"""
import json
import os

import numpy as np
from bench_explain import _inputs, _params  # this folder's: the inputs its table measures

import tcsim
from tcsim.hw.kernels import twin_launch
from tcsim.hw.ncu import profile

cases = [("kernel1", "f16"), ("kernel5", "f16"), ("kernel5", "f32"), ("kernel6", "f16"),
         ("kernel10", "f16"), ("kernel7", "f16"), ("wmma_basic", None), ("wmma_shared", None)]
rng = np.random.default_rng(1)
S = 4096
launches = []
for name, acc in cases:
    k = tcsim.kernels.kernel_named(name)
    A, B, _ = _inputs(k, S, S, S, rng)
    launches.append(twin_launch(k, A, B, label=name, **_params(name, acc)))
metrics = ("breakdown:l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
           "breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed",
           "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
           "lts__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__time_duration.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__data_pipe_lsu_wavefronts.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
           "sm__cycles_elapsed.avg")
out = profile(launches, metrics)
res = []
for (name, acc), c in zip(cases, out):
    res.append({"kernel": name, "accumulate": acc, "counters": c})
    print(name, acc)
    pct = sorted(((v, k) for k, v in c.items() if "pct" in k and v == v), reverse=True)
    for v, k in pct[:8]:
        print(f"   {v:6.1f} {k}")
    for k in metrics[5:]:
        print(f"   {c.get(k)} {k}")
json.dump(res, open(os.environ.get("OUT", ".") + "/breakdown.json", "w"), indent=1)
