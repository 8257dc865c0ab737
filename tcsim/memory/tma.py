"""TMA tile copies (sm_90): a 2-D tensor map as data, and where a box's bytes land in shared memory.

``cp.async.bulk.tensor.2d.shared::cluster.global`` copies one *box* of a row-major matrix in
global memory to shared memory, as the host described it with ``cuTensorMapEncodeTiled``: the
matrix's shape and row pitch, the box's shape, the element size and a swizzle. A `TensorMap`
holds that description; `TensorMap.box_offsets` gives the shared-memory byte offset of every
element of a box copied to a given address; `TensorMap.box_elements` the global elements it
reads (out-of-bounds elements are filled with zeros, as the hardware does). `tcsim.hw.memory.tma`
encodes the same description for the driver, so the simulator and the CUDA twin read one
source.

Facts (CUDA driver API, ``cuTensorMapEncodeTiled``; PTX ISA, "Tensor copy" and "Tensor-map"):

- the inner box dimension in bytes is a multiple of 16; with a swizzle it is at most the
  swizzle's width (32, 64 or 128 bytes); each box dimension is at most 256 elements;
- the global address is 16-byte aligned and every pitch a multiple of 16 bytes;
- the shared destination is 128-byte aligned; the box is written row after row, each row
  ``box_cols * element_bytes`` bytes, and with a swizzle the 16-byte chunks of each row are
  permuted by the same ``Swizzle<b, 4, 3>`` on address bits that wgmma's descriptors use
  (`tcsim.memory.SwizzleMode`), so a box written at a 1024-byte aligned address is exactly
  a canonical wgmma tile with the descriptors of `tcsim.memory.MatrixDescriptor`;
- the copy's bytes count as transactions on the mbarrier it names: the whole box, zero-filled
  parts included.

Measured on the H100 (docs/kernels.md, "Any shape"): what Nsight Compute counts of a box's
global traffic, `TensorMap.load_sectors` and `TensorMap.store_sectors`.

kernel7's twin pins the 128-byte mode on the H100 (tests/hw: its output bits equal
`tcsim.run`'s, which reads the boxes through this model).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..isa.validate import integer
from .descriptors import SwizzleMode
from .local import SECTOR

MAX_BOX = 256  # elements per box dimension
SHARED_ALIGN = 128  # bytes: a box's shared destination


class TensorMapError(ValueError):
    """A tensor map or a box copy that TMA cannot perform as described."""


@dataclass(frozen=True)
class TensorMap:
    """A 2-D tiled tensor map over a row-major ``rows x cols`` matrix of ``element_bytes``
    elements, copying ``box_rows x box_cols`` boxes under ``swizzle`` ("none", "32B", "64B",
    "128B")."""

    rows: int
    cols: int
    element_bytes: int
    box_rows: int
    box_cols: int
    swizzle: SwizzleMode = SwizzleMode.NONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "swizzle", SwizzleMode.parse(self.swizzle))
        for name in ("rows", "cols", "box_rows", "box_cols"):
            integer(getattr(self, name), name, minimum=1, type_error=TensorMapError,
                    error=TensorMapError)
        if self.element_bytes not in (1, 2, 4, 8):
            raise TensorMapError(f"element_bytes must be 1, 2, 4 or 8, got {self.element_bytes}")
        inner = self.box_cols * self.element_bytes
        if self.box_rows > MAX_BOX or self.box_cols > MAX_BOX:
            raise TensorMapError(f"a box dimension is at most {MAX_BOX} elements, got "
                                 f"{self.box_rows} x {self.box_cols}")
        if inner % 16:
            raise TensorMapError(f"the box's inner dimension must be a multiple of 16 bytes, "
                                 f"got {self.box_cols} x {self.element_bytes} = {inner}")
        if self.swizzle and inner > self.swizzle.width:
            raise TensorMapError(f"with the {self.swizzle} swizzle a box row is at most "
                                 f"{self.swizzle.width} bytes, got {inner}")
        if (self.cols * self.element_bytes) % 16:
            raise TensorMapError(f"the row pitch ({self.cols} x {self.element_bytes} bytes) "
                                 f"must be a multiple of 16 bytes")

    @property
    def box_bytes(self) -> int:
        """The transaction bytes of one copy."""
        return self.box_rows * self.box_cols * self.element_bytes

    def box_offsets(self, destination: int = 0) -> np.ndarray:
        """Shared byte address (box_rows, box_cols) of each element of a box copied to
        ``destination``; the swizzle acts on the absolute address."""
        destination = integer(destination, "destination", minimum=0, type_error=TensorMapError,
                              error=TensorMapError)
        if destination % SHARED_ALIGN:
            raise TensorMapError(f"a TMA destination must be {SHARED_ALIGN}-byte aligned, got "
                                 f"{destination:#x}")
        row = np.arange(self.box_rows)[:, None] * (self.box_cols * self.element_bytes)
        col = np.arange(self.box_cols)[None, :] * self.element_bytes
        linear = destination + row + col
        return self.swizzle.swizzle(linear) if self.swizzle else linear

    def box_elements(self, row, col) -> tuple[np.ndarray, np.ndarray]:
        """(element offsets into the matrix, in-bounds mask), both (..., box_rows, box_cols),
        of the boxes whose first elements are ``matrix[row, col]`` (ints or arrays of one
        shape ``...``; TMA's coordinates are (col, row))."""
        r = np.asarray(row)[..., None, None] + np.arange(self.box_rows)[:, None]
        c = np.asarray(col)[..., None, None] + np.arange(self.box_cols)[None, :]
        inside = (r >= 0) & (r < self.rows) & (c >= 0) & (c < self.cols)
        return np.where(inside, r * self.cols + c, 0), inside

    def load_sectors(self, row, col) -> int:
        """The 32-byte sectors Nsight Compute counts for one load of the box at
        ``matrix[row, col]`` (``l1tex__m_xbar2l1tex_read_sectors_pipe_tma``; its read bytes are
        32 per sector). Measured on the H100 (docs/kernels.md, "Any shape"): TMA reads each box
        row on its own (measured with rows of 128 bytes, the 128-byte swizzle's, the only ones
        the rungs copy), so two rows that share a sector count it twice; the row's part inside
        the matrix counts the global sectors it touches (five for 128 bytes that start 16
        bytes into a sector), and its part outside, filled with zeros, counts the box row's own
        32-byte pieces that it covers, as if it were read: a row wholly outside (past M, or a
        box wholly past the matrix) counts the box row's bytes / 32."""
        inside, global_pieces = self._row_pieces(row, col)
        columns = np.arange(self.box_cols) * self.element_bytes // SECTOR
        outside = _distinct_per_row(np.where(inside, -1, columns))
        return global_pieces + outside

    def store_sectors(self, row, col) -> int:
        """The sectors one store of the box at ``matrix[row, col]`` writes
        (``l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st`` / 32), measured: each box row
        its part inside the matrix, on its own (rows that share a sector count it once each);
        nothing past the edge."""
        return self._row_pieces(row, col)[1]

    def _row_pieces(self, row, col) -> tuple[np.ndarray, int]:
        """(`box_elements`' in-bounds mask, the global sectors of each box row's part inside
        the matrix, summed over the rows and the boxes)."""
        elements, inside = self.box_elements(row, col)
        sectors = np.where(inside, elements * self.element_bytes // SECTOR, -1)
        return inside, _distinct_per_row(sectors)

    def __str__(self) -> str:
        return (f"TensorMap({self.rows}x{self.cols} of {self.element_bytes}-byte elements, "
                f"box {self.box_rows}x{self.box_cols}, swizzle {self.swizzle})")


def _distinct_per_row(values: np.ndarray) -> int:
    """Distinct values other than -1 in each row of ``values``, summed over the rows."""
    ordered = np.sort(values.reshape(-1, values.shape[-1]), axis=1)
    fresh = np.diff(ordered, axis=1, prepend=-1) != 0
    return int((fresh & (ordered != -1)).sum())
