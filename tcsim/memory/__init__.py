"""Shared memory: bank accounting of warp-wide accesses, a byte-addressable model, and layouts
(CuTe's shape:stride `Layout` and `Swizzle`, and the named layouts built on them)."""

import importlib as _importlib
import warnings as _warnings

from .access import Access, SharedMemoryError, access, parse_instruction
from .descriptors import (
    DescriptorError,
    DescriptorLayout,
    DescriptorTile,
    MatrixDescriptor,
    SwizzleMode,
    canonical_tile,
)
from .layouts import (
    ColumnMajor,
    Layout,
    RowMajor,
    Swizzle,
    Swizzled,
    TensorOpMultiplicand,
    TensorOpMultiplicandCongruous,
    TensorOpMultiplicandCrosswise,
    TileLayout,
    render_layout,
    visualize_layout,
)
from .shared import SM90_BLOCK_LIMIT, SharedMemory

__all__ = ["Access", "ColumnMajor", "Layout", "RowMajor", "SM90_BLOCK_LIMIT", "SharedMemory",
           "SharedMemoryError", "Swizzle", "Swizzled", "TensorOpMultiplicand",
           "TensorOpMultiplicandCongruous", "TensorOpMultiplicandCrosswise", "TileLayout", "access",
           "parse_instruction", "visualize_layout",
           "DescriptorError", "DescriptorLayout", "DescriptorTile", "MatrixDescriptor",
           "SwizzleMode", "canonical_tile", "render_layout"]

# Drawing moved to tcsim.views in 0.3.0; the old names forward until 0.4. They are looked up by
# name when asked for (a model imports no view), in the package ``import tcsim`` has loaded.
_MOVED = {"heatmap_figure": "tcsim.views.heatmap", "heatmap_text": "tcsim.views.heatmap"}


def __getattr__(name: str):
    if name in _MOVED:
        _warnings.warn(f"tcsim.memory.{name} moved to tcsim.views.{name}; the old name goes in "
                       "0.4", DeprecationWarning, stacklevel=2)
        return getattr(_importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
