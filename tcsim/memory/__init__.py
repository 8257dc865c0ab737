"""Shared memory: bank accounting of warp-wide accesses, and a byte-addressable model."""

from .access import Access, SharedMemoryError, access, parse_instruction
from .descriptors import (
    DescriptorError,
    DescriptorLayout,
    DescriptorTile,
    MatrixDescriptor,
    SwizzleMode,
    canonical_tile,
)
from .heatmap import heatmap_figure, heatmap_text
from .layouts import (
    ColumnMajor,
    Layout,
    RowMajor,
    Swizzle,
    Swizzled,
    TensorOpMultiplicand,
    TensorOpMultiplicandCongruous,
    TensorOpMultiplicandCrosswise,
    render_layout,
    visualize_layout,
)
from .shared import SM90_BLOCK_LIMIT, SharedMemory

__all__ = ["Access", "ColumnMajor", "Layout", "RowMajor", "SM90_BLOCK_LIMIT", "SharedMemory",
           "SharedMemoryError", "Swizzle", "Swizzled", "TensorOpMultiplicand",
           "TensorOpMultiplicandCongruous", "TensorOpMultiplicandCrosswise", "access",
           "heatmap_figure", "heatmap_text", "parse_instruction", "visualize_layout",
           "DescriptorError", "DescriptorLayout", "DescriptorTile", "MatrixDescriptor",
           "SwizzleMode", "canonical_tile", "render_layout"]
