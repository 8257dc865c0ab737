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

kernel7's twin pins the 128-byte mode on the H100 (tests/hw: its output bits equal
`tcsim.run`'s, which reads the boxes through this model).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..isa.validate import integer
from .descriptors import SwizzleMode

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

    def __str__(self) -> str:
        return (f"TensorMap({self.rows}x{self.cols} of {self.element_bytes}-byte elements, "
                f"box {self.box_rows}x{self.box_cols}, swizzle {self.swizzle})")
