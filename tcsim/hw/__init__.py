"""The GPU side of tcsim, mirroring the model room by room (docs/architecture.md):

- ``isa/``: each instruction family run on the GPU (``mma``, ``wmma``, ``wgmma``) with the
  model's signatures, and the generators of their probes (``<family>_probes``);
- ``memory/``: shared-memory probes and the driver's tensor maps;
- ``kernels/``: the kernels' CUDA twins (written from each `Kernel`) and their headers;
- ``runtime`` (the GPU, the one compile path), ``launch`` (the one `Launch`), ``generate``
  (every generated source: ``python -m tcsim.hw.generate DIR``), ``ncu`` (Nsight Compute
  counters) and ``sanitize`` (compute-sanitizer);
- ``verify``: a user's own CUDA file against its schedule, bits and counters.

Everything here needs an NVIDIA GPU and CuPy; `available()` and `unavailable_reason()` say
whether this machine has them. Importing this package never imports CuPy: that happens when a
GPU function runs, and without a usable GPU those functions raise `HardwareUnavailable`, whose
message says why (no CuPy, no driver, no device).
"""

from .check import TwinCheck, assert_twin_matches, check_twin
from .isa.mma import mma, mma_regs
from .isa.wgmma import wgmma, wgmma_regs
from .kernels import run
from .launch import Launch
from .ncu import profile
from .runtime import (
    CompileError,
    HardwareUnavailable,
    available,
    device_name,
    include_dirs,
    unavailable_reason,
)
from .verify import Verification, check_compiles, verify

__all__ = [
    "CompileError", "HardwareUnavailable", "Launch", "TwinCheck", "Verification",
    "assert_twin_matches", "available", "check_compiles", "check_twin", "device_name",
    "include_dirs", "mma", "mma_regs", "profile", "run", "unavailable_reason", "verify",
    "wgmma", "wgmma_regs",
]
