"""The kernels' CUDA twins on the GPU: `run` (D's bits) and `launch` (for Nsight Compute).

The twin of kernel ``kernelN`` is ``tcsim/hw/kernelN.cu`` (a seed kernel's, ``<name>.cu``),
compiled with the kernel's parameters as ``-D`` constants (`Kernel.defines`), launched as
`Kernel.launch_shape` says (the ladder: a (N / block_n, M / block_m) grid of ``threads``-thread
blocks) with the tiles' bytes of dynamic shared memory. The hw room knows the kernels only
through that interface: name, parameters, defines, launch shape.
"""

from __future__ import annotations

import numpy as np

from . import runtime
from .profile import Launch


def launch(kernel, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None,
           alpha: float = 1.0, beta: float = 0.0, label: str = "", **params) -> Launch:
    """One launch of ``kernel``'s twin on host matrices, as `tcsim.hw.profile` takes it."""
    from ..kernels import kernel_named
    from ..kernels.executor import check_operands

    kernel = kernel_named(kernel) if isinstance(kernel, str) else kernel
    p = kernel.params(**params)
    kernel.check_epilogue(C, alpha, beta)
    A, B, C = check_operands(kernel, p, A, B, C)
    D = np.zeros((A.shape[0], B.shape[1]), p.output_dtype)
    return device_launch(kernel, p, A, B, C, D, alpha, beta, label)


def run(kernel, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None, alpha: float = 1.0,
        beta: float = 0.0, **params) -> np.ndarray:
    """``D = alpha * A @ B + beta * C`` computed by ``kernel``'s CUDA twin; same contract as
    `tcsim.run`. Returns D (M, N) of the kernel's output type."""
    runtime.require()
    import cupy

    spec = launch(kernel, A, B, C, alpha, beta, **params)
    args = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in spec.args]
    launcher(spec, args)()
    return cupy.asnumpy(args[3])


def device_launch(kernel, p, A, B, C, D, alpha: float = 1.0, beta: float = 0.0,
                  label: str = "") -> Launch:
    """The `Launch` of ``kernel``'s twin with parameters ``p`` on the arrays given as they are
    (host arrays for `launch`; CuPy arrays already on the GPU for benchmarks, where nothing is
    copied or checked)."""
    (M, K), N = A.shape, B.shape[1]
    return Launch(kernel.source, kernel.entry, *kernel.launch_shape(p, M, N),
                  [A, B, C, D, float(alpha), float(beta), M, N, K], label or kernel.name,
                  kernel.defines(p), p.shared_bytes, kernel.arch,
                  tuple(kernel.tensor_maps(p, M, N, K)))


def launcher(spec: Launch, args: list | None = None):
    """A function that launches ``spec`` on ``args`` (its arguments, arrays on the GPU; default
    ``spec.args``) without waiting; compiled, and tensor maps encoded over the device arrays,
    once, here."""
    args = spec.args if args is None else args
    fn = runtime.kernel_function(spec.source, spec.kernel, spec.defines, spec.shared_bytes,
                                 spec.arch)
    if spec.tensor_maps:
        from . import tma

        operands = dict(zip("ABCD", args[:4]))
        maps = [tma.encode(t, operands[name].data.ptr) for name, t in spec.tensor_maps]
        return lambda: tma.launch(fn, spec.grid, spec.block, [*args, *maps], spec.shared_bytes)
    values = tuple(np.float32(a) if isinstance(a, float) else np.int32(a)
                   if isinstance(a, int) else a for a in args)
    return lambda: fn(tuple(spec.grid), tuple(spec.block), values, shared_mem=spec.shared_bytes)
