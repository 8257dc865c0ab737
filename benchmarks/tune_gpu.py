"""Tile sweep for a kernel's schedule on the GPU (how kernel5's defaults were chosen).

    python benchmarks/tune_gpu.py [--kernel kernel4] [--size 8192] [--runs 10]

Times the kernel's twin at size^3 for each candidate tiling (f16 and f32 accumulators), checks
the fastest bit for bit on a block tile against tcsim.run, and prints the candidates fastest
first. Candidates that a kernel rejects (tile rules) are skipped with the reason.
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial

import numpy as np

import tcsim
from tcsim.hw import runtime

sys.path.insert(0, os.path.dirname(__file__))
from bench_gpu import ROTATE, _check_block, _kernel, median_seconds  # noqa: E402

# (block_m, block_n, block_k, warp_m, warp_n, warp_k)
CANDIDATES = [
    (256, 128, 64, 64, 64, 32), (128, 256, 64, 64, 64, 32), (256, 128, 32, 64, 64, 32),
    (128, 256, 32, 64, 64, 32), (128, 128, 32, 64, 64, 32), (128, 128, 64, 64, 64, 32),
    (128, 128, 32, 64, 32, 32), (128, 128, 64, 64, 32, 32), (256, 128, 64, 128, 32, 32),
    (256, 128, 32, 64, 64, 16), (128, 256, 32, 64, 128, 32), (256, 256, 32, 128, 64, 32),
    (64, 256, 32, 32, 64, 32), (256, 64, 64, 64, 32, 32),
]


# kernel6: (block_m, block_n, block_k, warp_m, warp_n, warp_k, stages)
PIPELINED = [
    (128, 128, 32, 64, 64, 16, 3), (128, 128, 32, 64, 64, 16, 4), (128, 128, 32, 64, 64, 16, 5),
    (128, 256, 32, 64, 64, 16, 3), (128, 256, 32, 64, 64, 16, 4), (256, 128, 32, 64, 64, 16, 4),
    (128, 128, 64, 64, 64, 16, 3), (128, 128, 64, 64, 64, 32, 3), (128, 256, 64, 64, 64, 16, 3),
    (256, 128, 32, 128, 32, 16, 4), (128, 128, 32, 64, 32, 16, 4), (128, 64, 32, 64, 32, 16, 4),
    (64, 128, 32, 32, 64, 16, 4), (128, 128, 32, 32, 64, 16, 4),
    (128, 256, 32, 64, 128, 16, 4), (256, 128, 32, 128, 64, 16, 4), (128, 256, 32, 64, 128, 16, 3),
    (256, 128, 32, 128, 64, 16, 3), (256, 256, 32, 128, 128, 16, 3),
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernel", default="kernel4")
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--only", type=int, nargs="*", help="indices of the candidates to time")
    args = p.parse_args()
    import cupy
    kernel = tcsim.kernels.KERNELS[args.kernel]
    n = args.size
    rng = np.random.default_rng(0)
    sets = [[cupy.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float16)) for _ in range(3)]
            for _ in range(ROTATE)]
    D = cupy.empty((n, n), cupy.float16)
    results = []
    candidates = PIPELINED if kernel.defaults.stages > 1 else CANDIDATES
    for tiles in [candidates[i] for i in args.only] if args.only else candidates:
        names = ("block_m", "block_n", "block_k", "warp_m", "warp_n", "warp_k", "stages")
        for acc in ("f16", "f32"):
            try:
                params = kernel.params(**dict(zip(names, tiles)), accumulate=acc)
            except ValueError as exc:
                print(f"skip {tiles} {acc}: {exc}")
                continue
            fn = runtime.function(kernel.source, kernel.entry, kernel.defines(params),
                                         params.shared_bytes)
            go = partial(_kernel, fn, params, sets, D, (n, n, n))
            seconds = median_seconds(go, args.runs)
            results.append((2 * n**3 / seconds / 1e12, tiles, acc, params, fn))
    results.sort(key=lambda r: -r[0])
    for rank, (tflops, tiles, acc, params, fn) in enumerate(results):
        check = ""
        if rank < 4:
            _kernel(fn, params, sets, D, (n, n, n), 0)
            check = _check_block(kernel, params, [cupy.asnumpy(x) for x in sets[0]],
                                 cupy.asnumpy(D), rng)
        stages = f" stages {tiles[6]}" if len(tiles) > 6 else ""
        print(f"{tflops:7.1f} TFLOP/s  {acc}  block {tiles[0]}x{tiles[1]}x{tiles[2]} "
              f"warp {tiles[3]}x{tiles[4]}x{tiles[5]}{stages}  {check}")


if __name__ == "__main__":
    main()
