"""The GPU side of tcsim: CUDA sources, the CuPy runner and the probes that prove the model.

Everything here needs an NVIDIA GPU and CuPy; `available()` and `unavailable_reason()` say
whether this machine has them. Importing this package never imports CuPy: that happens when a
GPU function runs, and without a usable GPU those functions raise `HardwareUnavailable`, whose
message says why (no CuPy, no driver, no device).
"""

from .gemm import run
from .mma import mma, mma_regs
from .profile import Launch, profile
from .runtime import HardwareUnavailable, available, device_name, unavailable_reason
from .warpgroup import wgmma, wgmma_regs

__all__ = [
    "HardwareUnavailable", "Launch", "available", "device_name", "mma", "mma_regs", "profile",
    "run", "unavailable_reason", "wgmma", "wgmma_regs",
]
