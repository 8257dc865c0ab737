"""Shared memory: bank accounting of warp-wide accesses, and a byte-addressable model."""

from .access import Access, SharedMemoryError, access, parse_instruction
from .heatmap import heatmap_figure, heatmap_text
from .shared import SM90_BLOCK_LIMIT, SharedMemory

__all__ = ["Access", "SM90_BLOCK_LIMIT", "SharedMemory", "SharedMemoryError", "access",
           "heatmap_figure", "heatmap_text", "parse_instruction"]
