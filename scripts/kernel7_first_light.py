"""kernel7's twin on the GPU before the simulator runs it: its bits against tcsim.wgmma chained
K step by K step (the arithmetic kernel7 issues) plus the ladder's epilogue, and its speed
against cuBLAS (cupy.matmul and torch.matmul) at the benchmark shapes.

    python scripts/kernel7_first_light.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_gpu import ROTATE, SHAPES, median_seconds  # noqa: E402
from wgmma_chain import chained_wgmma as reference  # noqa: E402

import tcsim  # noqa: E402
from tcsim.hw.gemm import device_launch, launcher, run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    import cupy

    rng = np.random.default_rng()
    out = {"checks": [], "speed": []}
    kernel = tcsim.kernels.kernel_named("kernel7")
    for (M, N, K) in ((128, 256, 64), (256, 512, 1024), (384, 256, 4096)):
        for acc in ("f32", "f16"):
            A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
            B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
            C = rng.uniform(-1, 1, (M, N)).astype(np.float16)
            A[0, :4] = [np.inf, -np.inf, np.nan, 6e-8]  # special values on purpose
            t = time.time()
            D = run(kernel, A, B, C, 0.75, -0.5, accumulate=acc)
            want = reference(A, B, C, 0.75, -0.5, acc)
            diff = int((D.view(np.uint16) != want).sum())
            rec = {"shape": [M, N, K], "accumulate": acc, "differ": diff, "of": M * N,
                   "seconds": round(time.time() - t, 2)}
            if diff:
                where = np.argwhere(D.view(np.uint16) != want)[:5].tolist()
                rec["first"] = where
            print("check", rec, flush=True)
            out["checks"].append(rec)
    try:
        import torch
    except ImportError:
        torch = None
    for M, N, K in SHAPES:
        sets = [[cupy.asarray(rng.uniform(-1, 1, s).astype(np.float16))
                 for s in ((M, K), (K, N), (M, N))] for _ in range(ROTATE)]
        D = cupy.empty((M, N), cupy.float16)
        flops = 2 * M * N * K
        row = {"shape": [M, N, K]}
        row["cupy"] = flops / median_seconds(
            lambda i, sets=sets, D=D: cupy.matmul(sets[i % ROTATE][0], sets[i % ROTATE][1], out=D),
            args.runs) / 1e12
        if torch is not None:
            ts = [[torch.as_tensor(x, device="cuda") for x in s] for s in sets]
            row["torch"] = flops / median_seconds(
                lambda i, ts=ts: torch.matmul(ts[i % ROTATE][0], ts[i % ROTATE][1]),
                args.runs) / 1e12
        for name in ("kernel6", "kernel7"):
            k = tcsim.kernels.kernel_named(name)
            for acc in ("f32", "f16"):
                p = k.params(accumulate=acc)
                go = [launcher(device_launch(k, p, *s, D)) for s in sets]
                row[f"{name} {acc}"] = flops / median_seconds(
                    partial(lambda gs, i: gs[i % ROTATE](), go), args.runs) / 1e12
        print("speed", {k: (round(v, 1) if isinstance(v, float) else v) for k, v in row.items()},
              flush=True)
        out["speed"].append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
