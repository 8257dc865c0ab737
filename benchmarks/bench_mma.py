"""Simulated mma.sync (and wgmma) instructions per second on the CPU, batched.

    python benchmarks/bench_mma.py [--count N] [--repeat R] [--qualifier Q ...]

wgmma qualifiers ("m64n256k16.f32.f16.f16") are timed at matrix level only; give them a
smaller --count (a wgmma m64n256k16 is 128 m16n8k16 instructions' worth of work).
For each qualifier: draw N random warp instructions ("normal" operands), then time tcsim.mma
(matrix level) and tcsim.mma_regs (register level) R times each and report the best rate of
warp instructions (an m8n8k4 warp instruction is four quad-pair products).
Threads: TCSIM_THREADS (default: the cores, up to 8). The figures go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from functools import partial

import numpy as np

import tcsim
from tcsim.isa import samples
from tcsim.isa.engine import thread_count


def rate(fn, count: int, repeat: int) -> float:
    fn()  # warm-up: thread pool, caches
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return count / best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--qualifier", nargs="*", default=tcsim.supported_qualifiers())
    args = p.parse_args()
    rng = np.random.default_rng(0)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"threads {thread_count()}, numpy {np.__version__}")
    print(f"{'qualifier':38s} {'mma/s':>12s} {'mma_regs/s':>12s}")
    for q in args.qualifier:
        wgmma = q.startswith(("wgmma", "m64"))  # wgmma: matrix level only
        spec = tcsim.parse_wgmma(q) if wgmma else tcsim.parse(q)
        dist = "uniform_bits" if spec.integer else "normal"
        A, B, C = (spec.format(o).from_bits(x)
                   for o, x in zip("abc", samples.draw(spec, dist, args.count, rng)))
        if wgmma:
            r_mat = rate(partial(tcsim.wgmma, q, A, B, C), args.count, args.repeat)
            print(f"{q:38s} {r_mat:12,.1f} {'-':>12s}")
            continue
        frags = [tcsim.fragment(q, o) for o in "abc"]
        a, b, c = (f.pack(x) for f, x in zip(frags, (A, B, C)))
        per = spec.products_per_warp  # m8n8k4: 4 products per warp instruction
        A, B, C = (x.reshape(args.count, per, x.shape[-2] // per, x.shape[-1]) for x in (A, B, C))
        r_mat = rate(partial(tcsim.mma, q, A, B, C), args.count, args.repeat)
        r_reg = rate(partial(tcsim.mma_regs, q, a, b, c), args.count, args.repeat)
        print(f"{q:38s} {r_mat:12,.0f} {r_reg:12,.0f}")


if __name__ == "__main__":
    main()
