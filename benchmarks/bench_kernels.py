"""Simulator speed on the kernel ladder: tcsim.trace (symbolic) and tcsim.run (bits).

    python benchmarks/bench_kernels.py [--run-size 1024] [--repeat 3]

Targets (on a 2-core machine): trace(kernel2, 8192^3) in at most 1 s and at most twice the
time of the 1024^3 trace (the Hopper rungs, kernel7 .. kernel10, likewise); run(kernel5, 1024^3)
in at most 10 s; the simulator's checks (races, uninitialized reads; docs/checks.md) cost at
most 25% of run's time. The runs' outputs are checked afterwards, outside the timing, against
the chain of matrix-level m16n8k8 products (tests/kernels/test_kernels.py's reference) or, for
kernel10 (with beta -0.5, which reads C, and 0, which does not), of wgmma products
(tests/wgmma_chain.py). The figures go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from functools import partial

import numpy as np

import tcsim

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run-size", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"threads {os.environ.get('TCSIM_THREADS', os.cpu_count())}, numpy {np.__version__}")
    print(f"{'trace':10s} {'accumulate':>10s} {'1024^3 s':>9s} {'8192^3 s':>9s} {'ratio':>6s}")
    for name in [*tcsim.kernels.KERNELS, *tcsim.kernels.HOPPER_KERNELS]:
        for acc in ("f16", "f32"):
            small, big = (best(partial(tcsim.trace, name, n, n, n, accumulate=acc), args.repeat)
                          for n in (1024, 8192))
            print(f"{name:10s} {acc:>10s} {small:9.3f} {big:9.3f} {big / small:6.2f}")
    n = args.run_size
    rng = np.random.default_rng(0)
    A, B, C = (rng.standard_normal(s).astype(np.float16) for s in ((n, n), (n, n), (n, n)))
    print(f"{'run':10s} {'accumulate':>10s} {f'{n}^3 s':>9s} {'mma/s':>12s}  check")
    from kernels.test_kernels import reference
    from wgmma_chain import chained_wgmma

    for acc in ("f16", "f32"):
        seconds = best(partial(tcsim.run, "kernel5", A, B, C, 1.5, -0.5, accumulate=acc),
                       args.repeat)
        D = tcsim.run("kernel5", A, B, C, 1.5, -0.5, accumulate=acc)
        same = np.array_equal(D.view(np.uint16), reference(A, B, C, 1.5, -0.5, acc))
        print(f"{'kernel5':10s} {acc:>10s} {seconds:9.2f} {n**3 / 1024 / seconds:12,.0f}  "
              f"{'bit-exact' if same else 'MISMATCH'}")
    for beta in (-0.5, 0.0):  # kernel10: wgmma m64n256k16 instructions a second
        seconds = best(partial(tcsim.run, "kernel10", A, B, C, 1.5, beta, accumulate="f32"),
                       args.repeat)
        D = tcsim.run("kernel10", A, B, C, 1.5, beta, accumulate="f32")
        same = np.array_equal(D.view(np.uint16), chained_wgmma(A, B, C, 1.5, beta, "f32"))
        print(f"{f'kernel10, beta {beta:g}':18s} {'f32':>10s} {seconds:9.2f} "
              f"{n**3 / (64 * 256 * 16) / seconds:12,.0f} wgmma/s  "
              f"{'bit-exact' if same else 'MISMATCH'}")


    print(f"{'checks':10s} {'off s':>9s} {'on s':>9s} {'cost':>6s}")
    for name in ("kernel5", "kernel6"):
        off, on = (best(partial(tcsim.run, name, A, B, C, checks=mode), args.repeat)
                   for mode in ("off", "raise"))
        print(f"{name:10s} {off:9.2f} {on:9.2f} {on / off - 1:6.0%}")


if __name__ == "__main__":
    main()
