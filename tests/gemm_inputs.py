"""Random GEMM operands for the kernel tests, with edge cases drawn on purpose.

Normal values of mixed scale, plus: subnormal entries in A and B, one row of A and one column
of B large enough that their dot product overflows f16 (inf), exact cancellation (a column of
B that is the negation of its neighbour), and inf and NaN entries in C.
"""

import numpy as np


def gemm_inputs(rng, M: int, N: int, K: int, edge: bool = True):
    A = (rng.standard_normal((M, K)) * rng.choice([0.25, 1, 4], (M, 1))).astype(np.float16)
    B = (rng.standard_normal((K, N)) * rng.choice([0.25, 1, 4], (1, N))).astype(np.float16)
    C = rng.standard_normal((M, N)).astype(np.float16)
    if edge:
        for X in (A, B):
            hit = rng.random(X.shape) < 0.01
            X[hit] = (rng.integers(1, 1024, hit.sum()) * 2.0**-24 *
                      rng.choice([-1, 1], hit.sum())).astype(np.float16)
        A[rng.integers(M)] = 200  # with the column below: sums past the f16 range
        B[:, rng.integers(N)] = 300
        j = rng.integers(N - 1)
        B[:, j + 1] = -B[:, j]
        for value in (np.inf, -np.inf, np.nan):
            C[rng.integers(M, size=4), rng.integers(N, size=4)] = value
    alpha, beta = (float(np.float32(x)) for x in rng.uniform(-2, 2, 2))
    return A, B, C, alpha, beta


def beta_zero_inputs(rng, M: int, N: int, K: int):
    """A, B and a C that beta 0 must not read: C's entries NaN, +-inf or 1, and a zero row
    5 of A, whose products times a negative alpha give -0 (adding beta * C = +0 would make it
    +0)."""
    A, B, _, _, _ = gemm_inputs(rng, M, N, K)
    A[5] = 0
    C = rng.choice(np.array([np.nan, np.inf, -np.inf, 1.0], np.float16), (M, N))
    return A, B, C


def beta_zero_on_gpu(name: str, shape, rng, beta: float, **options):
    """tcsim.run and the CUDA twin on `beta_zero_inputs` with alpha -1.5 and ``beta`` (0 or
    -0): the twin's D bits and how many elements differ, logged (``TCSIM_HW_LOG``)."""
    from hw_log import log_hw

    from tcsim import hw, run
    from tcsim.hw import runtime

    A, B, C = beta_zero_inputs(rng, *shape)
    sim = run(name, A, B, C, -1.5, beta, **options).view(np.uint16)
    got = hw.run(name, A, B, C, -1.5, beta, **options).view(np.uint16)
    differ = int((sim != got).sum())
    log_hw({"test": "beta_zero", "kernel": name, "shape": list(shape), "beta": beta,
            "options": options, "differ": differ, "elements": sim.size,
            "device": runtime.device_name()})
    return got, differ


def blas_epilogue(acc: np.ndarray, C: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """D's f16 bits (uint16) from f32 accumulators: f16(alpha * acc + beta * C), each step an
    f32 operation rounded to nearest; with beta 0, f16(alpha * acc), C unread (BLAS: its NaN,
    infinities and zero signs do not reach D). Any NaN comes out as 0x7fff (cvt.rn.f16.f32,
    measured: docs/kernels.md)."""
    alpha, beta = np.float32(alpha), np.float32(beta)
    with np.errstate(over="ignore", invalid="ignore"):
        x = alpha * acc if beta == 0 else alpha * acc + beta * C.astype(np.float32)
        d = x.astype(np.float16)
    bits = d.view(np.uint16).copy()
    bits[np.isnan(d)] = 0x7FFF
    return bits


def seed_inputs(rng, M: int, N: int, K: int, dtype, edge: bool = True):
    """A and B for the seeds' kernels (they store A @ B): f16 as `gemm_inputs` draws them, or
    f32 of mixed scale with, on purpose, subnormals, values whose low 13 bits (which tf32
    drops) are all set, a row and column whose products overflow f32, and exact cancellation."""
    if dtype == np.float16:
        return gemm_inputs(rng, M, N, K, edge)[:2]
    A = (rng.standard_normal((M, K)) * rng.choice([2.0**-20, 1, 2.0**20], (M, 1)))
    B = (rng.standard_normal((K, N)) * rng.choice([2.0**-20, 1, 2.0**20], (1, N)))
    A, B = A.astype(np.float32), B.astype(np.float32)
    if edge:
        for X in (A, B):
            hit = rng.random(X.shape) < 0.01
            X[hit] = rng.integers(1, 2**23, hit.sum()).astype(np.uint32).view(np.float32)
            ones = rng.random(X.shape) < 0.01
            X.view(np.uint32)[ones] |= 0x1FFF
        A[rng.integers(M)] = 3e19  # with the column below: products past the f32 range
        B[:, rng.integers(N)] = 3e19
        j = rng.integers(N - 1)
        B[:, j + 1] = -B[:, j]
    return A, B
