"""Smoke test for the exploratory CLUSTER_M twin: one launch at a small shape against kernel8."""
import dataclasses
import sys

import cupy
import numpy as np

import tcsim
from tcsim.hw.gemm import device_launch, launcher

M, N, K = (int(x) for x in sys.argv[1:4]) if len(sys.argv) > 3 else (1024, 1024, 1024)
kernel = tcsim.kernels.kernel_named("kernel8")
rng = np.random.default_rng(0)
A, B, C = (cupy.asarray(rng.uniform(-1, 1, s).astype(np.float16)) for s in ((M, K), (K, N), (M, N)))
for acc in ("f32", "f16"):
    p = kernel.params(accumulate=acc)
    out = {}
    for label, extra in (("kernel8", {}), ("cluster2", {"CLUSTER_M": 2})):
        D = cupy.zeros((M, N), cupy.float16)
        spec = device_launch(kernel, p, A, B, C, D)
        spec = dataclasses.replace(spec, defines={**spec.defines, **extra})
        launcher(spec)()
        cupy.cuda.runtime.deviceSynchronize()
        out[label] = D
    same = bool(cupy.array_equal(out["kernel8"].view(cupy.uint16), out["cluster2"].view(cupy.uint16)))
    print(acc, "cluster2 same bits as kernel8:", same, flush=True)
