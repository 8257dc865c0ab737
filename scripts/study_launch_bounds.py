"""Study: kernel6 at 8192^3 with __launch_bounds__(THREADS, MIN_BLOCKS), 1..3 blocks per SM.

    python scripts/study_launch_bounds.py      # on a GPU machine; prints TFLOP/s per variant
"""

import argparse
import os
import sys
from functools import partial

import numpy as np

import tcsim
from tcsim.hw import runtime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
from bench_gpu import ROTATE, _kernel, median_seconds  # noqa: E402

VARIANTS = [{}, {"stages": 3}, {"block_n": 256, "stages": 3}, {"block_k": 64, "stages": 3}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=8192)
    n = parser.parse_args().size
    import cupy

    rng = np.random.default_rng(0)
    sets = [[cupy.asarray(rng.uniform(-1, 1, (n, n)).astype(np.float16)) for _ in range(3)]
            for _ in range(ROTATE)]
    D = cupy.empty((n, n), cupy.float16)
    kernel = tcsim.kernels.KERNELS["kernel6"]
    for acc in ("f16", "f32"):
        for tiles in VARIANTS:
            for blocks in (1, 2, 3):
                p = kernel.params(accumulate=acc, **tiles)
                if blocks * p.shared_bytes > 227 * 1024:
                    continue
                defines = dict(kernel.defines(p), MIN_BLOCKS=blocks)
                fn = runtime.function(kernel.source, kernel.entry, defines,
                                             p.shared_bytes)
                seconds = median_seconds(partial(_kernel, fn, p, sets, D, (n, n, n)), 10)
                print(f"{acc} {tiles} min_blocks {blocks}: {2 * n**3 / seconds / 1e12:.1f} "
                      f"TFLOP/s, {fn.num_regs} registers, {fn.local_size_bytes} B local",
                      flush=True)


if __name__ == "__main__":
    main()
