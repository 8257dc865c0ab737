"""The plans the GPU's own kernels allow for a recorded sweep call (its kernel names, launch
grids, block and K), shared by the probe tests (tests/blas/test_blas_lanes.py,
tests/blas/test_blas_open_probes.py)."""

from tcsim.blas.identify import candidates
from tcsim.blas.kernels import split_hint
from tcsim.blas.sweep import epilogue_kind, input_type


def gpu_kernel_plans(call: dict) -> list:
    """`identify.candidates` for the kernels ``call`` ran (torch's own kernels left out)."""
    launch = [dict(name=n, grid=g) for n, g in zip(call["kernels"], call["grids"])
              if "at::native::" not in n]
    return candidates(call["kernels"], input_type(call), epilogue_kind(call), call["K"],
                      split_hint(launch, call.get("batch", 1)), tuple(call["block"]))
