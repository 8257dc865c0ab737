"""Which int8 shapes cuBLAS refuses under torch._int_mm (torch's own checks passed).

    python scripts/blas_int_mm_probe.py OUT.json
"""

import itertools
import json
import sys

import torch

sizes = [8, 16, 24, 32, 40, 48, 56, 64, 72, 96, 128, 136]
result = []
for m, n, k in itertools.product([24, 32, 40, 48, 56, 64, 72, 96, 128, 136], sizes, sizes):
    a = torch.ones((m, k), dtype=torch.int8, device="cuda")
    b = torch.ones((k, n), dtype=torch.int8, device="cuda")
    try:
        torch._int_mm(a, b)
        torch.cuda.synchronize()
        ok = True
    except RuntimeError as e:
        ok = str(e).splitlines()[0][:120]
    result.append(dict(M=m, N=n, K=k, ok=ok))
json.dump(result, open(sys.argv[1], "w"))
print(sum(r["ok"] is True for r in result), "of", len(result), "accepted")
