"""Study: where the kernel ladder's shared-store counters differ from the trace, and why.

Runs each kernel's twin under ncu with its tile loads spelled as given (-DTILE_LOAD=...), and
prints every counter that differs from tcsim.trace. Usage: study_kernel_counters.py OUT
"""

import json
import sys

import numpy as np

import tcsim
from tcsim.hw.kernels import twin_launch
from tcsim.hw.ncu import profile
from tcsim.trace import METRICS

out = sys.argv[1]
rng = np.random.default_rng(0)
cases = []
for load in ("ld.global.v4.u32", "ld.global.cg.v4.u32", "ld.global.cs.v4.u32"):
    for name in tcsim.kernels.KERNELS:
        for M, N, K in [(512, 512, 512), (512, 512, 2048)]:
            A = rng.standard_normal((M, K)).astype(np.float16)
            B = rng.standard_normal((K, N)).astype(np.float16)
            spec = twin_launch(name, A, B, label=f"{name} {M}x{N}x{K} {load}")
            spec.defines = dict(spec.defines, TILE_LOAD=f'"{load}"')
            cases.append((name, (M, N, K), load, spec))
counters = profile([c[3] for c in cases], METRICS)
with open(f"{out}/kernel_counters_study.jsonl", "w") as f:
    for (name, shape, load, _), measured in zip(cases, counters):
        predicted = tcsim.trace(name, *shape).totals
        f.write(json.dumps({"kernel": name, "shape": shape, "load": load, "trace": predicted,
                            "ncu": measured}) + "\n")
        diffs = [f"{k.split('__')[1]}: {v:,} vs {measured[k]:,.0f}"
                 for k, v in predicted.items() if measured[k] != v]
        print(f"{name} {shape} {load}: " + ("equal" if not diffs else "; ".join(diffs)))
