"""Collect mma.sync bits from the GPU and score candidate sm_90 adder rules against them.

Usage (on a GPU machine): python scripts/explore_numerics.py OUTDIR [count_per_distribution]
Writes OUTDIR/explore_<shape>.npz (a sample of raw inputs/outputs per qualifier) and prints a
table of mismatching instructions per candidate rule, qualifier and distribution.
"""

import sys
import time
from dataclasses import replace

import numpy as np

import tcsim
from tcsim import hw
from tcsim.isa import samples
from tcsim.isa.fragments import mma_fragment
from tcsim.isa.mma import mma_regs

out_dir = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
keep = 300
base = tcsim.profile("sm_90")


def variant(name, **changes):
    rules = {t: replace(r, **changes.get(t, changes.get("all", {}))) for t, r in base.rules.items()}
    return name, replace(base, rules=rules)


variants = [
    ("base", base),
    variant("zero_fields", all={"zero_exponent": None}),
    variant("group8", f16={"group_size": 8}, bf16={"group_size": 8}),
    variant("tf32_group4", tf32={"group_size": 4}),
    variant("F24", all={"fraction_bits": 24}),
    variant("F26", all={"fraction_bits": 26}),
]
print("device:", hw.device_name(), flush=True)
rng = np.random.default_rng(int(time.time()))
dumps = {}
for q in tcsim.supported_qualifiers():
    spec = tcsim.parse(q)
    fr = {op: mma_fragment(spec, op) for op in "abcd"}
    for dist in samples.DISTRIBUTIONS:
        A, B, C = samples.draw(q, dist, count, rng)
        a, b, c = (fr[op].to_registers(fr[op].gather_bits(x)) for op, x in zip("abc", (A, B, C)))
        t0 = time.perf_counter()
        d_hw = hw.mma_regs(q, a, b, c)
        t_hw = time.perf_counter() - t0
        row = []
        for name, prof in variants:
            t0 = time.perf_counter()
            d_sim = mma_regs(q, a, b, c, prof)
            t_sim = time.perf_counter() - t0
            bad = (d_sim != d_hw).reshape(count, -1).any(axis=1)
            row.append(f"{name}={bad.sum()}")
            if name == "base":
                first_bad = np.flatnonzero(bad)[:keep]
                base_time = t_sim
        print(f"{q:36s} {dist:12s} n={count} hw={t_hw:.2f}s sim={base_time:.2f}s", " ".join(row),
              flush=True)
        pick = np.concatenate([np.arange(min(keep, count)), first_bad])
        key = q.replace(".", "_") + "__" + dist
        dumps[key + "__a"] = a[pick]
        dumps[key + "__b"] = b[pick]
        dumps[key + "__c"] = c[pick]
        dumps[key + "__d"] = d_hw[pick]
for shape in ("m16n8k8", "m16n8k16", "m16n8k4"):
    part = {k: v for k, v in dumps.items() if k.startswith(shape + "_")}
    np.savez_compressed(f"{out_dir}/explore_{shape}.npz", **part)
print("done")
