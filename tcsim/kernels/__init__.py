"""The kernel ladder and the seeds' kernels as schedules, built from shared building blocks.

Each ladder kernel (kernel1 .. kernel6) computes ``D = alpha * A @ B + beta * C`` on row-major
float16 matrices; the seeds' kernels (`SEED_KERNELS`: wmma_basic, wmma_basic_fixed,
wmma_shared, tf32_puzzle) store ``A @ B`` in f32 as their seeds do. Each is one `Kernel`: a
schedule that `tcsim.run` executes on bits and `tcsim.trace` counts, plus a CUDA twin in
``tcsim/hw``.
"""

from ..isa.validate import did_you_mean
from .kernel import Kernel
from .kernel1 import kernel1
from .kernel2 import kernel2
from .kernel3 import kernel3
from .kernel4 import kernel4
from .kernel5 import kernel5
from .kernel6 import kernel6
from .kernel7 import kernel7
from .kernel8 import kernel8
from .kernel9 import kernel9
from .kernel10 import kernel10
from .kernel11 import kernel11
from .params import GemmParams, ProblemSizeError
from .tf32_puzzle import tf32_puzzle
from .wmma_basic import wmma_basic, wmma_basic_fixed
from .wmma_shared import wmma_shared

KERNELS = {k.name: k for k in (kernel1, kernel2, kernel3, kernel4, kernel5, kernel6)}
# The seeds' own kernels (docs/seeds.md): seed 003's WMMA kernels and seed 004's tf32 kernel.
SEED_KERNELS = {k.name: k for k in (wmma_basic, wmma_basic_fixed, wmma_shared, tf32_puzzle)}
# Hopper's own path (sm_90a): warp-specialized TMA + wgmma kernels.
HOPPER_KERNELS = {k.name: k for k in (kernel7, kernel8, kernel9, kernel10)}
# The fp8 rung (tcsim.run(kernel11, A, B, scale_a=..., scale_b=..., out_dtype=...)): a scaled
# GEMM, which takes scales and no C, so apart from HOPPER_KERNELS (its twin: scaled.cuh).
FP8_KERNELS = {k.name: k for k in (kernel11,)}


def kernel_named(name: str | Kernel) -> Kernel:
    """A kernel of the ladder, or a planted-bug variant (tcsim.kernels.planted), by name; a
    kernel of your own by ``path/to/file.py:NAME`` or ``package.module:NAME``
    (`tcsim.kernels.resolve`); a `Kernel` is returned as it is."""
    from .planted import PLANTED
    from .resolve import is_spec, resolve

    if isinstance(name, Kernel):
        return name
    if not isinstance(name, str):
        raise TypeError(f"kernel must be a Kernel such as tcsim.kernel1 or a name such as "
                        f"'kernel1', got {name!r}")
    if is_spec(name):
        return resolve(name)
    if name.endswith(".py") or "/" in name:
        raise ValueError(f"no kernel named {name!r}: a kernel of your own is named FILE.py:NAME, "
                         f"so add :NAME, the Kernel's variable name in the file "
                         f"({name}:mine for `mine = Kernel(...)`)")
    # One list for the lookup and the message, so that the message names every kernel taken.
    registry = {"the ladder": KERNELS, "Hopper's": HOPPER_KERNELS, "fp8": FP8_KERNELS,
                "the seeds'": SEED_KERNELS, "the planted bugs": PLANTED}
    for kernels in registry.values():
        if name in kernels:
            return kernels[name]
    known = "; ".join(f"{label} {', '.join(kernels)}" for label, kernels in registry.items())
    names = [k for kernels in registry.values() for k in kernels]
    raise ValueError(f"no kernel named {name!r}{did_you_mean(name, names)}; known: {known}; or "
                     f"a kernel of your own as FILE.py:NAME or package.module:NAME")


__all__ = ["FP8_KERNELS", "GemmParams", "HOPPER_KERNELS", "KERNELS", "Kernel", "ProblemSizeError",
           "SEED_KERNELS", "kernel1", "kernel2", "kernel3", "kernel4", "kernel5", "kernel6",
           "kernel7", "kernel8", "kernel9", "kernel10", "kernel11", "kernel_named", "tf32_puzzle",
           "wmma_basic", "wmma_basic_fixed", "wmma_shared"]
