"""A scaled GEMM's twin on the GPU (kernel11, fp8; ``gemm_fp8`` in scaled.cuh): `run` and
`scaled_launch` take what `tcsim.run` takes for it (`tcsim.kernels.scaled`: scale_a, scale_b,
out_dtype; no C, alpha or beta), checked the same way.

The twin's arguments (``SCALED_GEMM_PARAMS``): A's M x K bytes, B's N x K bytes (K-major, as
cuBLAS's TN and fp8 wgmma ask: the caller's (K, N) B transposed), D (M x N, the output type;
16-bit outputs as their bits), the row-wise scales (float32 vectors of M and N; one unread
value each per tensor), the per-tensor f32 factor ``scale_a * scale_b`` (1 row-wise), M, N, K,
then A's and B's tensor maps.
"""

from __future__ import annotations

import numpy as np

from .. import runtime
from ..launch import Launch, launch


def scaled_launch(kernel, A, B, C=None, alpha=1.0, beta=0.0, label: str = "", *, scale_a=None,
                  scale_b=None, out_dtype=None, **params) -> Launch:
    """One launch of the scaled ``kernel``'s twin on host arrays, as `tcsim.hw.launch.launch`
    runs it and `tcsim.hw.ncu` counts it. C, alpha and beta are there to be refused, as
    `tcsim.run` refuses them."""
    from ...kernels import kernel_named
    from ...kernels.executor import check_operands
    from ...kernels.scaled import scaled_arguments

    kernel = kernel_named(kernel)
    scale, params = scaled_arguments(kernel, A, B, C, alpha, beta, scale_a, scale_b, out_dtype,
                                     params)
    p = kernel.params(**params)
    A, B, _ = check_operands(kernel, p, A, B, None)
    if isinstance(scale, tuple):  # row-wise: the vectors, read by the epilogue
        (sa, sb), scale = (np.ascontiguousarray(x, np.float32) for x in scale), np.float32(1)
    else:
        sa = sb = np.zeros(1, np.float32)
    a = np.ascontiguousarray(A).view(np.uint8)
    b = np.ascontiguousarray(B.T).view(np.uint8)  # N rows of K
    D = np.zeros((A.shape[0], B.shape[1]), p.output_dtype)
    D = D.view(np.uint16) if D.itemsize == 2 else D  # CuPy has no bf16: 16-bit outputs as bits
    return device_scaled_launch(kernel, p, a, b, D, sa, sb, scale, label)


def device_scaled_launch(kernel, p, A, B, D, scale_a, scale_b, scale, label: str = "") -> Launch:
    """The `Launch` of the scaled ``kernel``'s twin with parameters ``p`` on arrays as the
    twin takes them (A M x K and B N x K bytes, D, the scale vectors; on the host, or on the
    GPU for benchmarks, where nothing is copied or checked) and the f32 factor ``scale``."""
    (M, K), N = A.shape, B.shape[0]
    return Launch(kernel.source, kernel.entry, *kernel.launch_shape(p, M, N),
                  [A, B, D, scale_a, scale_b, np.float32(scale), M, N, K], label or kernel.name,
                  kernel.defines(p), kernel.shared_bytes(p), kernel.arch,
                  tuple(kernel.tensor_maps(p, M, N, K)))


def run(kernel, A, B, C=None, alpha=1.0, beta=0.0, *, scale_a=None, scale_b=None,
        out_dtype=None, **params) -> np.ndarray:
    """``out_dtype(scale_a * scale_b * (A @ B))`` (row-wise: ``(acc * scale_b) * scale_a``)
    computed by the scaled ``kernel``'s CUDA twin; same contract as `tcsim.run`. Returns D
    (M, N) of the output type."""
    spec = scaled_launch(kernel, A, B, C, alpha, beta, scale_a=scale_a, scale_b=scale_b,
                         out_dtype=out_dtype, **params)
    runtime.require()
    import cupy

    D = cupy.asnumpy(launch(spec)[2])
    return D.view(np.dtype(out_dtype)) if D.itemsize == 2 else D
