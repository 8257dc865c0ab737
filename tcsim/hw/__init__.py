"""The GPU side of tcsim: CUDA sources, the CuPy runner and the probes that prove the model.

Everything here needs an NVIDIA GPU and CuPy; `available()` and `unavailable_reason()` say
whether this machine has them.
"""

from .gemm import run
from .mma import mma, mma_regs
from .runtime import HardwareUnavailable, available, device_name, unavailable_reason

__all__ = [
    "HardwareUnavailable", "available", "device_name", "mma", "mma_regs", "run",
    "unavailable_reason",
]
