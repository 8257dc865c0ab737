"""Prove a kernel's CUDA twin on the GPU: D's bits against `tcsim.run`, Nsight Compute's
counters against `tcsim.trace` (`check_twin`, and `assert_twin_matches` for pytest).

The twin is the one `tcsim.hw.run` launches: a built-in kernel's, or for a kernel of your own
the twin generated from its schedule (`tcsim.hw.kernels.schedule_twin`); ``generated=True``
asks for the generated one for a built-in kernel too. Inputs are drawn fresh (normal values of
mixed scale, never all zeros); ``seed`` repeats a draw.

    from tcsim.hw import assert_twin_matches

    @pytest.mark.hw
    def test_my_kernel_on_the_gpu():
        assert_twin_matches(mine, 256, 384, 128)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class TwinCheck:
    """What `check_twin` compared, and where the twin and the schedule part."""

    kernel: str
    problem: tuple[int, int, int]
    twin: str  # "generated" or "hand-written"
    elements: int
    mismatches: list[tuple[tuple[int, int], int, int]]  # ((row, col), tcsim bits, GPU bits)
    mismatch_count: int
    counters: dict[str, tuple[int, float]] = field(default_factory=dict)  # metric: (trace, ncu)

    @property
    def counter_differences(self) -> dict[str, tuple[int, float]]:
        return {k: v for k, v in self.counters.items() if v[0] != v[1]}

    @property
    def ok(self) -> bool:
        return not self.mismatch_count and not self.counter_differences

    def __str__(self) -> str:
        M, N, K = self.problem
        lines = [f"{self.kernel} ({self.twin} twin) on M={M} N={N} K={K}: "
                 f"{self.mismatch_count} of {self.elements} elements of D differ"]
        lines += [f"  D[{r}, {c}]: tcsim {sim:#06x}, GPU {gpu:#06x}"
                  for (r, c), sim, gpu in self.mismatches]
        if self.counters:
            bad = self.counter_differences
            lines.append(f"  {len(bad)} of {len(self.counters)} counters differ"
                         + (":" if bad else ""))
            lines += [f"  {metric}: trace {t:,}, ncu {n:,.0f}" for metric, (t, n) in bad.items()]
        return "\n".join(lines)


def check_twin(kernel, M: int, N: int, K: int, *, counters: bool = True,
               generated: bool | None = None, seed: int | None = None,
               **params) -> TwinCheck:
    """Run ``kernel``'s twin on fresh random inputs (M x K, K x N; C, alpha and beta drawn too
    for a kernel that takes them) and compare D with `tcsim.run` bit for bit and, with
    ``counters``, Nsight Compute's counters with `tcsim.trace`'s totals (those the trace
    predicts, and the ones it predicts to be 0). ``params`` override the kernel's tiles."""
    from ..kernels import kernel_named
    from ..kernels.executor import run as simulate
    from ..trace import ASYNC_METRICS, HOPPER_METRICS, METRICS, SHARED_LD_INST, trace
    from . import runtime
    from .kernels import schedule_twin
    from .kernels.twin import generated as is_generated
    from .kernels.twin import twin_launch
    from .launch import launch
    from .ncu import profile

    runtime.require()
    import cupy

    kernel = kernel_named(kernel)
    p = kernel.params(**params)
    M, N, K = p.check_problem(M, N, K, kernel.name)
    A, B, C, alpha, beta = _inputs(np.random.default_rng(seed), p, M, N, K, kernel.takes_c)
    use_generated = is_generated(kernel) if generated is None else bool(generated)
    if use_generated:
        D = np.zeros((M, N), p.output_dtype)
        C_or_zero = np.zeros((M, N), p.output_dtype) if C is None else C
        # CuPy has no bf16: the twin takes every 16-bit matrix as bits (uint16_t*) anyway
        spec = schedule_twin.launch(kernel, p, *(x.view(np.uint16) if x.dtype.kind == "V"
                                                 else x for x in (A, B, C_or_zero, D)),
                                    alpha, beta)
    else:
        spec = twin_launch(kernel, A, B, C, alpha, beta, **params)
    gpu = cupy.asnumpy(launch(spec)[3])
    sim = simulate(kernel, A, B, C, alpha, beta, **params)
    bits = np.dtype(f"u{sim.itemsize}")
    sim, gpu = sim.view(bits), gpu.view(bits)
    bad = np.argwhere(sim != gpu)
    first = [((int(r), int(c)), int(sim[r, c]), int(gpu[r, c])) for r, c in bad[:5]]
    result = TwinCheck(kernel.name, (M, N, K), "generated" if use_generated else "hand-written",
                       int(sim.size), first, len(bad))
    if counters:
        predicted = trace(kernel, M, N, K, beta=beta, **params).totals
        metrics = METRICS + (SHARED_LD_INST,) + \
            (ASYNC_METRICS if ASYNC_METRICS[0] in predicted else ()) + \
            (HOPPER_METRICS if HOPPER_METRICS[0] in predicted else ())
        measured = profile([spec], metrics)[0]
        result.counters = {m: (int(predicted.get(m, 0)), measured[m]) for m in metrics}
    return result


def assert_twin_matches(kernel, M: int, N: int, K: int, **options) -> TwinCheck:
    """`check_twin`, raising AssertionError that says where the twin and the schedule part
    (for pytest; mark the test ``hw``, which skips it where no GPU can be used)."""
    result = check_twin(kernel, M, N, K, **options)
    assert result.ok, str(result)
    return result


def _inputs(rng, p, M: int, N: int, K: int, takes_c: bool):
    """A (M x K) and B (K x N) of normal values in rows and columns of mixed scale, never all
    zeros; C, alpha and beta too when the kernel takes them (else None, 1, 0)."""
    dtype = p.input_dtype
    A = (rng.standard_normal((M, K)) * rng.choice([0.25, 1, 4], (M, 1))).astype(dtype)
    B = (rng.standard_normal((K, N)) * rng.choice([0.25, 1, 4], (1, N))).astype(dtype)
    A[0, 0] = B[0, 0] = 1  # never all zeros, whatever the draw
    if not takes_c:
        return A, B, None, 1.0, 0.0
    C = rng.standard_normal((M, N)).astype(p.output_dtype)
    alpha, beta = (float(np.float32(x)) for x in rng.choice([-1, 1], 2) * rng.uniform(0.5, 2, 2))
    return A, B, C, alpha, beta
