"""tcsim: a bit-exact model of how an NVIDIA warp drives the tensor cores.

Start with `tcsim.mma` (one mma.sync instruction at matrix level), `tcsim.mma_regs` (the same
at register level), `tcsim.fragment` (which lane holds which element) and `tcsim.Warp`; for
whole kernels, `tcsim.trace(tcsim.kernel2, M, N, K)` (bank conflicts and counters per
instruction site) and `tcsim.run(tcsim.kernel2, A, B, C)` (the kernel's output bits); for a
kernel of your own, `tcsim.Kernel` and the `tcsim.Machine` it issues on (docs/own-kernel.md);
why a kernel takes its time, `tcsim.trace(...).explain()`, and which of its tile shapes is
fastest for a problem, `tcsim.choose_tile(tcsim.kernel10, M, N, K)` (docs/performance.md).

The subpackages resolve on first use after a plain ``import tcsim``: `tcsim.blas` (torch's
GEMMs as cuBLAS computes them), `tcsim.hw` (the GPU side, which imports CuPy only when a GPU
function runs), `tcsim.memory`, `tcsim.kernels`, `tcsim.isa`; `tcsim.views` (pictures of the
models) is imported with ``tcsim`` itself.
"""

import importlib as _importlib

# The views hang the models' display hooks on them (a model never imports a view).
from . import views as views
from ._version import __version__ as __version__
from .isa.formats import BF16, F16, F32, TF32, FloatFormat
from .isa.fragments import FragmentMap, mma_fragment
from .isa.mma import mma, mma_regs
from .isa.profiles import PROFILES, AdderRule, ArchProfile, profile
from .isa.qualifier import MmaSpec, QualifierError, parse, supported_qualifiers
from .isa.warp import Warp
from .isa.wgmma import (
    WgmmaSpec,
    is_wgmma_qualifier,
    parse_wgmma,
    supported_wgmma_qualifiers,
    wgmma,
    wgmma_fragment,
    wgmma_regs,
)
from .isa.wmma import (
    WmmaSpec,
    parse_wmma,
    supported_wmma_qualifiers,
    wmma,
    wmma_fragment,
    wmma_regs,
)
from .kernels import (
    GemmParams,
    Kernel,
    ProblemSizeError,
    kernel1,
    kernel2,
    kernel3,
    kernel4,
    kernel5,
    kernel6,
    kernel7,
    kernel8,
    kernel9,
    kernel10,
    kernel11,
    tf32_puzzle,
    wmma_basic,
    wmma_basic_fixed,
    wmma_shared,
)
from .kernels.blocks import SharedTile
from .kernels.checks import (
    AsyncCopyRaceError,
    DivergentWarpError,
    GlobalMemoryError,
    SharedAddressError,
    SharedRaceError,
    SimulationError,
    UninitializedReadError,
    UnwrittenOutputError,
)
from .kernels.executor import run
from .kernels.happens_before import DescriptorLayoutError, ProxyFenceError, StageRaceError
from .kernels.machine import Machine
from .kernels.roles import DeadlockError, PhaseError, TransactionError
from .memory.descriptors import MatrixDescriptor, SwizzleMode
from .memory.layouts import ColumnMajor, Layout, RowMajor, Swizzle, Swizzled
from .memory.tma import TensorMap
from .perf.choose import Choice, choose_tile
from .precision import PrecisionTable, precision_study
from .trace import Trace, trace

# Public submodules, imported on first attribute access (PEP 562) so that `import tcsim` stays
# light and `tcsim.hw.mma(...)` works without `import tcsim.hw`.
_SUBMODULES = ("blas", "cli", "hw", "isa", "kernels", "memory")


def fragment(qualifier: str, operand: str) -> FragmentMap:
    """The fragment map of operand "a", "b", "c" or "d" of an mma.sync instruction (of "a", "c"
    or "d" of a wgmma: `wgmma_fragment`)."""
    if is_wgmma_qualifier(qualifier):
        return wgmma_fragment(qualifier, operand)
    return mma_fragment(qualifier, operand)


__all__ = [
    "BF16", "F16", "F32", "TF32", "FloatFormat", "FragmentMap", "MmaSpec", "QualifierError",
    "AdderRule", "ArchProfile", "PROFILES", "fragment", "mma", "mma_regs", "parse", "profile",
    "supported_qualifiers", "Warp", "GemmParams", "kernel1", "kernel2", "kernel3", "kernel4",
    "kernel5", "kernel6", "kernel7", "kernel8", "kernel9", "kernel10", "kernel11",
    "wmma_basic",
    "wmma_basic_fixed", "wmma_shared", "tf32_puzzle",
    "run", "trace", "Trace", "SimulationError", "SharedRaceError",
    "AsyncCopyRaceError", "UninitializedReadError", "UnwrittenOutputError", "SharedAddressError",
    "GlobalMemoryError",
    "DivergentWarpError", "StageRaceError", "ProxyFenceError", "DescriptorLayoutError",
    "DeadlockError", "TransactionError", "PhaseError", "WgmmaSpec", "parse_wgmma",
    "supported_wgmma_qualifiers", "wgmma",
    "wgmma_fragment", "wgmma_regs", "WmmaSpec", "parse_wmma", "supported_wmma_qualifiers",
    "wmma", "wmma_fragment", "wmma_regs", "precision_study", "PrecisionTable",
    "choose_tile", "Choice",
    # a kernel of your own (docs/own-kernel.md)
    "Kernel", "Machine", "SharedTile", "ProblemSizeError", "Layout", "RowMajor", "ColumnMajor",
    "Swizzle", "Swizzled", "TensorMap", "MatrixDescriptor", "SwizzleMode",
]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return _importlib.import_module(f".{name}", __name__)  # also binds it on the package
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SUBMODULES))
