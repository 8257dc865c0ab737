"""The kernels' CUDA twins on the GPU: `run` (D's bits) and `twin_launch` (for Nsight Compute).

The twin of a ladder kernel is written from its `Kernel` (`twin_source`: the kernel's default
constants and one line that calls ``Kernel.twin_schedule`` in ``gemm.cuh``, or ``hopper.cuh``
for sm_90a); a seed kernel's is the hand-written ``<name>.cu``. A twin is compiled with the
kernel's parameters as ``-D`` constants (`Kernel.defines`), launched as `Kernel.launch_shape`
says (the ladder: a (N / block_n, M / block_m) grid of ``threads``-thread blocks) with the
block's bytes of dynamic shared memory (`Kernel.shared_bytes`: what the tiles span, padding
included). The hw room knows the kernels only through that interface: name, schedule,
parameters, defines, launch shape. A kernel with neither (a user's) gets a twin generated from
its schedule for the problem at hand (`schedule_twin`).
"""

from __future__ import annotations

import numpy as np

from .. import runtime
from ..launch import Launch, launch
from . import scaled, schedule_twin


def twin_launch(kernel, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None,
                alpha: float = 1.0, beta: float = 0.0, label: str = "", *, scale_a=None,
                scale_b=None, out_dtype=None, **params) -> Launch:
    """One launch of ``kernel``'s twin on host matrices (checked as `tcsim.run` checks them),
    as `tcsim.hw.launch.launch` runs it and `tcsim.hw.ncu` counts it. A scaled kernel
    (kernel11) takes scale_a, scale_b and out_dtype as `tcsim.run` does (`scaled`)."""
    from ...kernels import kernel_named
    from ...kernels.executor import check_operands

    kernel = kernel_named(kernel)
    if _scaled(kernel, scale_a, scale_b, out_dtype):
        return scaled.scaled_launch(kernel, A, B, C, alpha, beta, label, scale_a=scale_a,
                                    scale_b=scale_b, out_dtype=out_dtype, **params)
    p = kernel.params(**params)
    kernel.check_epilogue(C, alpha, beta)
    A, B, C = check_operands(kernel, p, A, B, C)
    D = np.zeros((A.shape[0], B.shape[1]), p.output_dtype)
    # CuPy has no bf16: the twin takes every 16-bit matrix as bits (uint16_t*) anyway
    A, B, C, D = (x.view(np.uint16) if x.dtype.kind == "V" else x for x in (A, B, C, D))
    return device_launch(kernel, p, A, B, C, D, alpha, beta, label)


def run(kernel, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None, alpha: float = 1.0,
        beta: float = 0.0, *, scale_a=None, scale_b=None, out_dtype=None,
        **params) -> np.ndarray:
    """``D = alpha * A @ B + beta * C`` computed by ``kernel``'s CUDA twin; same contract as
    `tcsim.run` (a scaled kernel, kernel11: ``out_dtype(scale_a * scale_b * A @ B)``).
    Returns D (M, N) of the kernel's output type."""
    from ...kernels import kernel_named

    if _scaled(kernel_named(kernel), scale_a, scale_b, out_dtype):
        return scaled.run(kernel, A, B, C, alpha, beta, scale_a=scale_a, scale_b=scale_b,
                          out_dtype=out_dtype, **params)
    runtime.require()
    import cupy

    args = launch(twin_launch(kernel, A, B, C, alpha, beta, **params))
    return cupy.asnumpy(args[3]).view(kernel_named(kernel).params(**params).output_dtype)


def _scaled(kernel, scale_a, scale_b, out_dtype) -> bool:
    """Whether the call is a scaled GEMM's (`tcsim.kernels.scaled` checks the rest)."""
    return kernel.scaled or (scale_a, scale_b, out_dtype) != (None, None, None)


def device_launch(kernel, p, A, B, C, D, alpha: float = 1.0, beta: float = 0.0,
                  label: str = "", *, source: str = "", entry: str = "",
                  include: tuple[str, ...] = (), defines: dict | None = None) -> Launch:
    """The `Launch` of ``kernel``'s twin with parameters ``p`` on the arrays given as they are
    (host arrays for `twin_launch`; CuPy arrays already on the GPU for benchmarks, where
    nothing is copied or checked). ``source`` (CUDA text), ``entry``, ``include`` and more
    ``defines``: a user's own file in place of the twin (`tcsim.hw.verify`)."""
    (M, K), N = A.shape, B.shape[1]
    if generated(kernel) and not source:
        return schedule_twin.launch(kernel, p, A, B, C, D, alpha, beta, label)
    return Launch(source or kernel.source, entry or kernel.entry, *kernel.launch_shape(p, M, N),
                  [A, B, C, D, float(alpha), float(beta), M, N, K, *split_k_arrays(p, A, M, N)],
                  label or kernel.name,
                  {**kernel.defines(p), **(defines or {})}, kernel.shared_bytes(p), kernel.arch,
                  tuple(kernel.tensor_maps(p, M, N, K)), tuple(include))


def split_k_arrays(p, A, M: int, N: int) -> list:
    """Split-K's workspace (f32 partials) and per-tile counters of partials written (zero,
    and zero again after every launch), arrays of A's kind: host arrays are copied to the GPU
    at launch, CuPy arrays (benchmarks) made there. None without split-K."""
    if p.splits == 1:
        return []
    from ...kernels.split_k import workspace_shape

    xp = np if isinstance(A, np.ndarray) else __import__("cupy")
    grid_n, grid_m = p.grid(M, N)
    return [xp.zeros(workspace_shape(p, M, N), np.float32),
            xp.zeros(grid_m * grid_n, np.uint32)]


def generated(kernel) -> bool:
    """Whether ``kernel``'s twin is generated from its schedule: it has no template schedule
    (``Kernel.twin_schedule``) and is not one of tcsim's own kernels, whose twins without one
    are hand-written."""
    from ...kernels import HOPPER_KERNELS, KERNELS, SEED_KERNELS
    from ...kernels.planted import PLANTED

    builtin = any(kernel is k for kernels in (KERNELS, HOPPER_KERNELS, SEED_KERNELS, PLANTED)
                  for k in kernels.values())
    return not kernel.twin_schedule and not builtin
