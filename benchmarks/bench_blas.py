"""tcsim.blas.matmul against NumPy's float32 matmul on the same machine, in the same run.

    python benchmarks/bench_blas.py [--size 1024] [--repeat 3] [--batch 16 --batch-size 64]

Times ``tcsim.blas.matmul(A, B)`` on size^3 float16 (cuBLAS's plan for the call, bit for bit)
on each engine this machine has (NumPy always; the compiled engine where numba is installed:
``pip install 'tcsim[fast]'``) and ``A32 @ B32`` (NumPy float32, the BLAS NumPy was built with,
as this environment configures it), and prints each engine's ratio to it: issue 32's target
is 30x or less at 1024^3. Best of ``--repeat`` runs after a warm-up; the compiled engine's
first call (compiling, or loading numba's on-disk cache) is reported apart. The figures go in
docs/benchmarks.md ("tcsim.blas").

Then a batched call (``--batch`` products of ``--batch-size``^3, as torch.bmm): the whole
batch in one call (the chains of every element advance together) against one call per
element, which is what a batch cost before the engines took the batch as an axis.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import tcsim.blas as blas
from tcsim.blas import compiled


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def blas_library() -> str:
    """The BLAS behind NumPy's matmul, as threadpoolctl reports it (if installed)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)"
    found = [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')}, "
             f"{i.get('num_threads')} threads)" for i in threadpool_info()
             if i.get("user_api") == "blas"]
    return ", ".join(found) or "none found"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args()
    n = args.size
    rng = np.random.default_rng()
    A = rng.standard_normal((n, n)).astype(np.float16)
    B = rng.standard_normal((n, n)).astype(np.float16)
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"numpy {np.__version__}, BLAS {blas_library()}")
    print("OPENBLAS_CORETYPE=" + os.environ.get("OPENBLAS_CORETYPE", "(unset)")
          + ", OPENBLAS_L2_SIZE=" + os.environ.get("OPENBLAS_L2_SIZE", "(unset)"))
    print(f"plan:\n{blas.plan('matmul', A, B)}\n")

    A32 @ B32  # warm-up
    reference = best_time(lambda: A32 @ B32, max(args.repeat, 5))
    engines = ["numpy"] + (["numba"] if compiled.available() else [])
    results, seconds, first = {}, {}, {}
    for engine in engines:
        os.environ[compiled.ENGINE_VARIABLE] = engine
        t0 = time.perf_counter()
        results[engine] = blas.matmul(A, B)  # warm-up (numba: compiles or loads its cache)
        first[engine] = time.perf_counter() - t0
        seconds[engine] = best_time(lambda: blas.matmul(A, B), args.repeat)
        # NumPy again between engines: the best of all its runs is the reference.
        reference = min(reference, best_time(lambda: A32 @ B32, max(args.repeat, 5)))
    print(f"numpy float32 matmul {n}^3: {reference * 1e3:9.1f} ms (best of all its runs)")
    for engine in engines:
        note = f" (first call {first[engine]:.2f} s)" if engine == "numba" else ""
        print(f"tcsim.blas.matmul f16 {n}^3, {engine:5s} engine: {seconds[engine] * 1e3:9.1f} ms"
              f" = {seconds[engine] / reference:5.1f}x numpy's float32 matmul{note}")
    if len(results) == 2:
        same = np.array_equal(results["numpy"].view(np.uint16), results["numba"].view(np.uint16))
        print(f"the two engines give the same bits: {same}")
    batched(engines, args.batch, args.batch_size, args.repeat, rng)


def batched(engines, count: int, n: int, repeat: int, rng) -> None:
    """A batch in one call against one call per batch element, on each engine."""
    A = rng.standard_normal((count, n, n)).astype(np.float16)
    B = rng.standard_normal((count, n, n)).astype(np.float16)
    for engine in engines:
        os.environ[compiled.ENGINE_VARIABLE] = engine
        whole = blas.matmul(A, B)
        each = np.stack([blas.matmul(A[i], B[i]) for i in range(count)])
        assert np.array_equal(whole.view(np.uint16), each.view(np.uint16))
        one = best_time(lambda: blas.matmul(A, B), repeat)
        loop = best_time(lambda: [blas.matmul(A[i], B[i]) for i in range(count)], repeat)
        print(f"bmm f16 {count} x {n}^3, {engine:5s} engine: {one * 1e3:8.1f} ms as one call, "
              f"{loop * 1e3:8.1f} ms one call per element ({loop / one:4.1f}x), same bits")

if __name__ == "__main__":
    main()
