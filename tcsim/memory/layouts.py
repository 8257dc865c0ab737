"""Shared-memory layouts: functions from a tile's logical (row, col) to an element offset.

This module owns CuTe's two ideas, `Layout` (shape:stride, hierarchical, printed as CuTe
prints it: ``((8,8),16):((64,512),1)``) and `Swizzle` (an XOR of two bit fields of an offset),
and their composition `Swizzled` (CuTe's ComposedLayout). The named layouts are built on them:
`RowMajor` and `ColumnMajor` tiles (optionally padded) are Layouts ``(rows,cols):(cols+pad,1)``
and ``(rows,cols):(1,rows+pad)``, and a wgmma descriptor's tile (`tcsim.memory.descriptors`)
is a Swizzled Layout in CuTe's canonical form. CUTLASS's tensor-op multiplicand layouts for
128-bit accesses (include/cutlass/layout/tensor_op_multiplicand_sm75.h) keep CUTLASS's own
arithmetic; all of them are `TileLayout`s. `visualize_layout` prints a layout as CUTLASS's
examples/03_visualize_layout does.

Every offset function is vectorized: give numpy arrays of rows and columns and get an array of
offsets back, so a whole tile, or the 32 lane addresses that `tcsim.memory.access` counts, is
one call. Offsets count elements; `TileLayout.byte_address` scales them to bytes."""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..isa.validate import INT64_LIMIT, check_memory, integer, integer_array, positive_extent

__all__ = [
    "ColumnMajor",
    "ColumnMajorTensorOpMultiplicandCongruous",
    "ColumnMajorTensorOpMultiplicandCrosswise",
    "Layout",
    "RowMajor",
    "RowMajorTensorOpMultiplicandCongruous",
    "RowMajorTensorOpMultiplicandCrosswise",
    "Swizzle",
    "Swizzled",
    "TensorOpMultiplicand",
    "TensorOpMultiplicandCongruous",
    "TensorOpMultiplicandCrosswise",
    "TileLayout",
    "render_layout",
    "visualize_layout",
]

Offset = int | np.ndarray  # an int for scalar coordinates, an int64 array for arrays


def _as_int_array(values: ArrayLike, name: str, minimum: int = -INT64_LIMIT) -> np.ndarray:
    """Integers (TypeError for floats, bools, strings; ValueError below ``minimum``)."""
    return integer_array(values, name, minimum=minimum)[0]


def _count(value: int, name: str) -> int:
    return integer(value, name, minimum=0)


# Bytes of numpy arrays per tile element while a whole tile's offsets are computed (row and
# column indices and the offsets, int64), and while one is printed (those, what each storage
# element holds, and its text).
_OFFSETS_BYTES = 24
_RENDER_BYTES = 96


# --------------------------------------------------------------------------------------------
# Swizzle
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Swizzle:
    """CuTe's ``Swizzle<BBits, MBase, SShift>`` (include/cute/swizzle.hpp) on integer offsets.

    ``f(x) = x ^ shiftr(x & yyy_mask, shift)``: the ``bits`` bits at ``base + max(0, shift)``
    (YYY) are XOR-ed into the ``bits`` bits at ``base - min(0, shift)`` (ZZZ); the low ``base``
    bits stay put (a 2**base-element vector is never split). A positive shift moves YYY right,
    a negative one left. Why: rows 128 bytes apart start in the same banks; XOR-ing the row's
    low bits into the 16-byte-chunk bits gives each of 8 consecutive rows its own bank group.
    ``|shift| >= bits`` (CuTe's static_assert) keeps YYY and ZZZ apart, so f is an involution.
    As in CuTe, ``shift`` defaults to ``bits``.
    """

    bits: int
    base: int
    shift: int | None = None

    def __post_init__(self) -> None:
        if self.shift is None:
            object.__setattr__(self, "shift", self.bits)
        for name in ("bits", "base", "shift"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"Swizzle {name} must be an integer, got {value!r}")
        if self.bits < 0 or self.base < 0:
            raise ValueError(f"Swizzle bits and base must be >= 0, got {self.bits}, {self.base}")
        if abs(self.shift) < self.bits:
            raise ValueError(
                f"Swizzle<{self.bits},{self.base},{self.shift}>: |shift| must be at least bits, "
                f"or the YYY and ZZZ fields overlap (CuTe rejects it too)"
            )
        if self.base + abs(self.shift) + self.bits > 63:
            raise ValueError(
                f"Swizzle<{self.bits},{self.base},{self.shift}>: its fields reach bit "
                f"{self.base + abs(self.shift) + self.bits - 1}; offsets are int64, so "
                f"base + |shift| + bits must be at most 63"
            )

    @property
    def yyy_mask(self) -> int:
        """The source bits: ``((1 << bits) - 1) << (base + max(0, shift))``."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def zzz_mask(self) -> int:
        """The bits that get flipped: ``((1 << bits) - 1) << (base - min(0, shift))``."""
        return ((1 << self.bits) - 1) << (self.base - min(0, self.shift))

    def __call__(self, offset: ArrayLike) -> Offset:
        """The swizzled offset(s): an int for an int, an int64 array for an array."""
        if isinstance(offset, (int, np.integer)) and not isinstance(offset, bool):
            x = integer(offset, "offset", minimum=0, maximum=INT64_LIMIT - 1)
            y = x & self.yyy_mask
            return x ^ (y >> self.shift if self.shift >= 0 else y << -self.shift)
        x = _as_int_array(offset, "offset", minimum=0)
        y = x & self.yyy_mask
        return x ^ (y >> self.shift if self.shift >= 0 else y << -self.shift)

    def __str__(self) -> str:
        return f"Swizzle<{self.bits},{self.base},{self.shift}>"


# --------------------------------------------------------------------------------------------
# Layouts
# --------------------------------------------------------------------------------------------


class TileLayout(ABC):
    """Any layout of a tile of ``shape = (rows, cols)`` elements in shared memory: a function
    from (row, col) to an element offset (a CuTe `Layout`, a `Swizzled` one, CUTLASS's
    tensor-op layouts, a wgmma descriptor's).

    ``offset(row, col)`` is the element's offset from the tile's start; ``capacity`` is how
    many elements of storage the tile spans (what to allocate). Subclasses implement
    ``_offset`` on in-range int64 arrays; the public methods check and broadcast.
    """

    shape: tuple[int, int]

    @property
    def extent(self) -> tuple[int, int]:
        """(rows, cols) of the tile: ``shape`` here; a hierarchical `Layout` sums its modes."""
        return self.shape

    @property
    @abstractmethod
    def capacity(self) -> int:
        """Elements of shared memory the tile spans."""

    @abstractmethod
    def _offset(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        """Offsets of in-range int64 coordinates of equal shape."""

    def offset(self, row: ArrayLike, col: ArrayLike) -> Offset:
        """Element offset of (row, col); arrays broadcast and give an int64 array."""
        r, c = _as_int_array(row, "row"), _as_int_array(col, "col")
        try:
            r, c = np.broadcast_arrays(r, c)
        except ValueError:
            raise ValueError(f"row of shape {r.shape} and col of shape {c.shape} do not "
                             f"broadcast") from None
        rows, cols = self.extent
        bad = (r < 0) | (r >= rows) | (c < 0) | (c >= cols)
        if bad.any():
            i = np.flatnonzero(bad.ravel())[0]
            raise ValueError(
                f"({int(r.ravel()[i])}, {int(c.ravel()[i])}) is outside the {rows}x{cols} tile "
                f"of {self!r}"
            )
        out = np.asarray(self._offset(r, c))  # 0-d arithmetic gives numpy scalars
        return int(out) if out.ndim == 0 else out

    def offsets(self) -> np.ndarray:
        """Offsets of the whole tile: an int64 array of ``extent``."""
        rows, cols = self.extent
        check_memory(_OFFSETS_BYTES * rows * cols,
                     f"{self!r}.offsets() of {rows}x{cols} elements")
        r, c = np.indices((rows, cols), dtype=np.int64)
        return self._offset(r, c)

    def byte_address(self, row: ArrayLike, col: ArrayLike, element_bytes: int,
                     base: int = 0) -> Offset:
        """``base + offset * element_bytes``: the shared-memory byte address a lane supplies."""
        if isinstance(element_bytes, bool) or not isinstance(element_bytes, (int, np.integer)) \
                or element_bytes <= 0:
            raise ValueError(f"element_bytes must be a positive integer, got {element_bytes!r}")
        base = integer(base, "base", minimum=0)
        self._check_span(int(element_bytes), base)
        return base + self.offset(row, col) * int(element_bytes)

    def _check_span(self, element_bytes: int = 1, base: int = 0) -> None:
        """Refuse a tile whose offsets (or byte addresses) would not fit in int64, where numpy
        would wrap them silently to negative numbers: when it is made, and in `byte_address`."""
        top = base + self.capacity * element_bytes
        if top > INT64_LIMIT:
            unit = "elements" if element_bytes == 1 else f"bytes from base {base}"
            raise ValueError(f"{self!r} spans {top:,} {unit}; offsets are int64, so a tile "
                             f"may span at most 2**63")


# --------------------------------------------------------------------------------------------
# CuTe's Layout: shape:stride
# --------------------------------------------------------------------------------------------

IntTuple = int | tuple["IntTuple", ...]  # CuTe's IntTuple: an int, or a tuple of IntTuples


def _int_tuple(value, what: str, minimum: int) -> IntTuple:
    """``value`` (an int, or a tuple or list of them, nested) as nested tuples of ints, each
    at least ``minimum`` (TypeError for a non-integer, ValueError for an empty tuple or an
    integer out of range)."""
    if isinstance(value, (tuple, list)):
        if not value:
            raise ValueError(f"{what} has an empty mode (); a mode is an integer or a tuple of "
                             f"modes")
        return tuple(_int_tuple(v, f"{what}[{i}]", minimum) for i, v in enumerate(value))
    return integer(value, what, minimum=minimum, maximum=INT64_LIMIT - 1)


def _leaves(t: IntTuple) -> list[int]:
    return [x for item in t for x in _leaves(item)] if isinstance(t, tuple) else [t]


def _product(t: IntTuple) -> int:
    return math.prod(_leaves(t))


def _text(t: IntTuple) -> str:
    """CuTe's printing: ``(8,(2,4))``, no spaces."""
    return f"({','.join(map(_text, t))})" if isinstance(t, tuple) else str(t)


def _congruent(shape: IntTuple, stride: IntTuple, where: str = "") -> None:
    """Refuse a stride that does not have the shape's profile (CuTe: "Mismatched Ranks")."""
    if isinstance(shape, tuple) != isinstance(stride, tuple) or (
            isinstance(shape, tuple) and len(shape) != len(stride)):
        raise ValueError(f"shape {_text(shape)} and stride {_text(stride)}"
                         f"{f' (mode {where})' if where else ''} differ in rank: a stride has "
                         f"one entry per shape entry, nested alike")
    if isinstance(shape, tuple):
        for i, (s, d) in enumerate(zip(shape, stride)):
            _congruent(s, d, f"{where}{i}" if not where else f"{where},{i}")


def _compact_left(shape: IntTuple, step: int = 1) -> tuple[IntTuple, int]:
    """CuTe's LayoutLeft compact strides (column-major, first mode fastest) and the next step."""
    if not isinstance(shape, tuple):
        return step, step * shape
    strides = []
    for mode in shape:
        stride, step = _compact_left(mode, step)
        strides.append(stride)
    return tuple(strides), step


def _crd2idx(crd: np.ndarray | tuple, shape: IntTuple, stride: IntTuple) -> np.ndarray:
    """CuTe's crd2idx: a hierarchical coordinate (a tuple congruent with ``shape``) or an
    integer one (int64 array) split colexicographically, first mode fastest; the last mode
    takes what is left, without a modulus, as in CuTe."""
    if not isinstance(shape, tuple):
        return crd * stride
    if isinstance(crd, tuple):
        return sum(_crd2idx(c, s, d) for c, s, d in zip(crd, shape, stride))
    out = np.zeros_like(crd)
    for s, d in zip(shape[:-1], stride[:-1]):
        size = _product(s)
        out = out + _crd2idx(crd % size, s, d)
        crd = crd // size
    return out + _crd2idx(crd, shape[-1], stride[-1])


class Layout(TileLayout):
    """CuTe's ``Layout<Shape, Stride>``: a function from coordinates to an offset, the sum of
    each coordinate times its stride.

    ``shape`` and ``stride`` are IntTuples, nested alike: ``Layout((4, 2), (1, 4))`` is CuTe's
    ``(4,2):(1,4)``, four rows by two columns in column-major order;
    ``Layout(((8, 8), 16), ((64, 512), 1))`` has rows in two modes (8 rows 64 apart, then 8
    groups 512 apart). Without ``stride`` the strides are compact and column-major (CuTe's
    ``make_layout(shape)``, LayoutLeft). Shapes are positive integers, strides non-negative
    ones (a shared-memory offset is never negative); a stride that does not have the shape's
    profile is a ValueError.

    ``layout(i)`` takes one index in ``range(size)``, split colexicographically (first mode
    fastest), ``layout(c0, c1, ...)`` one coordinate per mode, each an integer (array) or a
    tuple congruent with its mode; ``size`` is the domain, ``cosize`` the codomain (last offset
    + 1). A rank-2 layout is a tile (the `TileLayout` methods: ``offset(row, col)``,
    ``offsets()``, ``capacity``, and a ``Swizzled`` on top), whose ``extent`` is the sizes of
    its two modes. It prints as CuTe prints: ``(4,2):(1,4)``.
    """

    def __init__(self, shape: IntTuple, stride: IntTuple | None = None) -> None:
        shape = _int_tuple(shape, "shape", 1)
        stride = _compact_left(shape)[0] if stride is None else _int_tuple(stride, "stride", 0)
        self._set(shape, stride)

    def _set(self, shape: IntTuple, stride: IntTuple,
             extent: tuple[int, int] | None = None) -> None:
        _congruent(shape, stride)
        self.shape, self.stride = shape, stride
        self._extent = extent
        self._check_span()

    @classmethod
    def _window(cls, shape: IntTuple, stride: IntTuple, extent: tuple[int, int]) -> Layout:
        """A rank-2 layout whose tile is its first ``extent`` rows and columns (a partial
        swizzle atom: the last mode's coordinate takes what is left, as in CuTe)."""
        layout = cls.__new__(cls)
        sizes = (_product(shape[0]), _product(shape[1]))
        if sizes == tuple(extent):
            extent = None
        elif not all(0 < e <= s for e, s in zip(extent, sizes)):
            raise ValueError(f"a {extent[0]}x{extent[1]} window is not inside "
                             f"{_text(shape)}:{_text(stride)}")
        layout._set(shape, stride, None if extent is None else tuple(extent))
        return layout

    @property
    def rank(self) -> int:
        """Top-level modes: 1 for an integer shape."""
        return len(self.shape) if isinstance(self.shape, tuple) else 1

    @property
    def size(self) -> int:
        """Coordinates in the domain: the product of the shape."""
        return _product(self.shape)

    @property
    def cosize(self) -> int:
        """One past the largest offset (CuTe's cosize): sum of (extent - 1) * stride, + 1."""
        if not self.size:
            return 0
        return sum((s - 1) * d for s, d in zip(_leaves(self.shape), _leaves(self.stride))) + 1

    @property
    def extent(self) -> tuple[int, int]:
        if self._extent is not None:
            return self._extent
        if self.rank != 2:
            raise ValueError(f"{self} has rank {self.rank}: a tile's layout has rank 2 (rows, "
                             f"cols)")
        return _product(self.shape[0]), _product(self.shape[1])

    @property
    def capacity(self) -> int:
        """Elements the tile spans: the cosize (of the window's offsets, for a window)."""
        if self._extent is None:
            return self.cosize
        tops = [int(_crd2idx(np.arange(n, dtype=np.int64), s, d).max())
                for n, s, d in zip(self._extent, self.shape, self.stride)]
        return sum(tops) + 1

    def _offset(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        return (_crd2idx(row, self.shape[0], self.stride[0])
                + _crd2idx(col, self.shape[1], self.stride[1]))

    def __call__(self, *coords) -> Offset:
        """The offset of one index (``layout(i)``, i in ``range(size)``) or of one coordinate
        per mode (``layout(r, c)``); a tuple is a hierarchical coordinate, a list or an array
        holds many coordinates (they broadcast, and give an int64 array)."""
        if len(coords) == 1:
            shape, stride, crd = (self.shape,), (self.stride,), coords
        elif len(coords) == self.rank and isinstance(self.shape, tuple):
            shape, stride, crd = self.shape, self.stride, coords
        else:
            raise ValueError(f"{self} takes one index or {self.rank} coordinates (one per "
                             f"mode), got {len(coords)}")
        checked = [_coordinate(c, s, f"coordinate {i}") for i, (c, s) in
                   enumerate(zip(crd, shape))]
        arrays = [a for c in checked for a in _leaves_of(c)]
        try:
            np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            raise ValueError(f"{self}: coordinate arrays of shapes "
                             f"{[a.shape for a in arrays]} do not broadcast") from None
        out = np.asarray(sum(_crd2idx(c, s, d) for c, s, d in zip(checked, shape, stride)))
        return int(out) if out.ndim == 0 else out

    def __str__(self) -> str:
        return f"{_text(self.shape)}:{_text(self.stride)}"

    def __repr__(self) -> str:
        window = "" if self._extent is None else f"[:{self._extent[0]}, :{self._extent[1]}]"
        return f"Layout({_text(self.shape)}, {_text(self.stride)}){window}"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Layout) and type(other) is type(self)
                and (self.shape, self.stride, self._extent, self.capacity)
                == (other.shape, other.stride, other._extent, other.capacity))

    def __hash__(self) -> int:
        return hash((type(self), self.shape, self.stride, self._extent))


def _coordinate(crd, shape: IntTuple, what: str):
    """A coordinate of a mode of ``shape``, checked: an integer (array) in ``range(size)``,
    or a tuple congruent with the mode whose entries are in range."""
    if isinstance(crd, tuple):
        if not isinstance(shape, tuple) or len(crd) != len(shape):
            raise ValueError(f"{what} {crd!r} is not congruent with its mode {_text(shape)}")
        return tuple(_coordinate(c, s, f"{what}[{i}]") for i, (c, s) in
                     enumerate(zip(crd, shape)))
    arr = _as_int_array(crd, what)
    size = _product(shape)
    bad = (arr < 0) | (arr >= size)
    if bad.any():
        value = int(arr.ravel()[np.flatnonzero(bad.ravel())[0]])
        raise ValueError(f"{what} {value} is outside its mode {_text(shape)} "
                         f"(0 to {size - 1})")
    return arr


def _leaves_of(crd) -> list[np.ndarray]:
    return [a for c in crd for a in _leaves_of(c)] if isinstance(crd, tuple) else [crd]


class RowMajor(Layout):
    """Row ``r`` starts at ``r * (cols + pad)``: CUTLASS's ``RowMajor`` with ldm = cols + pad,
    the `Layout` ``(rows,cols):(cols+pad,1)``.

    Padding is the classic cure for bank conflicts: with 64 f16 per row plus a pad of 8, the 8
    rows an ldmatrix phase reads start 16 bytes apart in the banks instead of all in bank 0.
    The capacity counts the last row's pad too (rows * (cols + pad)), as CUTLASS's does.
    """

    def __init__(self, rows: int, cols: int, pad: int = 0) -> None:
        rows, cols = _count(rows, "rows"), _count(cols, "cols")
        self.pad = _count(pad, "pad")
        self._set((rows, cols), (cols + self.pad, 1))

    @property
    def pitch(self) -> int:
        """Elements from the start of one row to the next (CUTLASS's ldm)."""
        return self.stride[0]

    @property
    def capacity(self) -> int:
        return self.shape[0] * self.pitch

    def __repr__(self) -> str:
        return f"RowMajor({self.shape[0]}, {self.shape[1]}, pad={self.pad})"


class ColumnMajor(Layout):
    """Column ``c`` starts at ``c * (rows + pad)``: CUTLASS's ``ColumnMajor``, ldm = rows + pad,
    the `Layout` ``(rows,cols):(1,rows+pad)``."""

    def __init__(self, rows: int, cols: int, pad: int = 0) -> None:
        rows, cols = _count(rows, "rows"), _count(cols, "cols")
        self.pad = _count(pad, "pad")
        self._set((rows, cols), (1, rows + self.pad))

    @property
    def pitch(self) -> int:
        """Elements from the start of one column to the next (CUTLASS's ldm)."""
        return self.stride[1]

    @property
    def capacity(self) -> int:
        return self.shape[1] * self.pitch

    def __repr__(self) -> str:
        return f"ColumnMajor({self.shape[0]}, {self.shape[1]}, pad={self.pad})"


class Swizzled(TileLayout):
    """``swizzle(offset + layout.offset(row, col))``: CuTe's ``ComposedLayout`` of a Swizzle
    after an offset after a layout (any `TileLayout`).

    The swizzle acts on element offsets, so pick ``base`` for the element size: for f16,
    ``Swizzle(3, 3, 3)`` keeps 8-element (16-byte) vectors whole and XORs the row index mod 8
    (offset bits 6..8 of a 64-element row) into the vector's index within its 128-byte row.
    ``offset`` (elements, default 0) is where the layout starts inside the swizzle's pattern.
    """

    def __init__(self, layout: TileLayout, swizzle: Swizzle, offset: int = 0) -> None:
        if not isinstance(layout, TileLayout):
            raise TypeError(f"Swizzled takes a Layout (RowMajor(rows, cols), ...), got "
                            f"{layout!r}")
        if not isinstance(swizzle, Swizzle):
            raise TypeError(f"Swizzled takes a Swizzle (Swizzle(3, 3, 3), ...), got {swizzle!r}")
        self.layout = layout
        self.swizzle = swizzle
        self.start = integer(offset, "offset", minimum=0)
        self.shape = layout.extent
        self._capacity = self.start + layout.capacity  # until the swizzled offsets say more
        self._check_span()
        offsets = self.offsets()
        top = int(offsets.max()) + 1 if offsets.size else 0
        self._capacity = max(self._capacity, top)

    @property
    def capacity(self) -> int:
        """The offset layout's capacity, or more if the swizzle moves an offset past it."""
        return self._capacity

    def _offset(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        return self.swizzle(self.start + self.layout._offset(row, col))

    def __str__(self) -> str:
        start = f"{self.start} + " if self.start else ""
        return f"{self.swizzle} o {start}{self.layout}"

    def __repr__(self) -> str:
        start = f", offset={self.start}" if self.start else ""
        return f"Swizzled({self.layout!r}, {self.swizzle!r}{start})"


# --------------------------------------------------------------------------------------------
# CUTLASS tensor-op multiplicand layouts (include/cutlass/layout/tensor_op_multiplicand_sm75.h)
# --------------------------------------------------------------------------------------------

_ACCESS_BITS = 128  # kAccessSize: every thread moves 128 bits at a time
_LINE_VECTORS = 8  # kTileShapeContiguous = 128 bytes / 16-byte access
_PARTITION = 4  # PartitionShape = PitchLinearShape<4, 4>, in vectors


class TensorOpMultiplicand(TileLayout):
    """CUTLASS ``layout::TensorOpMultiplicand<ElementSize, Crosswise>``.

    The shared-memory layout of CUTLASS's Turing/Ampere tensor-op GEMMs: every thread moves
    128-bit vectors (kAccessSize), a shared-memory line is 128 bytes (kTileShapeContiguous = 8
    vectors), and the vectors within a line are permuted by an XOR of the strided index, so
    that 8 lanes reading the same 16-byte vector of 8 consecutive strided rows (one ldmatrix
    phase) hit 8 distinct 16-byte bank groups, while each vector stays whole. The index
    arithmetic mirrors CUTLASS's ``operator()`` step for step.

    A pitch-linear tile: ``row`` is CUTLASS's strided coordinate and ``col`` its contiguous
    one (``PitchLinearCoord(contiguous=col, strided=row)``), so ``shape = (strided,
    contiguous)``. CUTLASS's parameters and constants:

    - ``element_bits``: ElementSize, bits per element (1, 2, 4, ..., 128).
    - ``crosswise``: Crosswise, contiguous elements that belong together (the K extent of a
      K-contiguous operand); ``kElementsPerAccess <= Crosswise <= 8 * kElementsPerAccess``.
    - ``elements_per_access``: kElementsPerAccess = 128 / ElementSize.
    - ``factor``: kFactor = kTileShapeContiguous * kElementsPerAccess / Crosswise, strided rows
      packed side by side into one 128-byte line.
    - ``tile_shape_stride``: kTileShapeStride = max(kTileShapeContiguous / kFactor, 4), lines
      per fundamental tile (in units of kFactor strided rows).
    - ``shape``: the (strided, contiguous) extent; by default one fundamental tile,
      ``(kFactor * kTileShapeStride, Crosswise)``. The contiguous extent must be a multiple of
      Crosswise and the strided extent of kFactor, so the tile is whole 128-byte lines.
    - ``ldm``: stride_[0]; default the contiguous extent (CUTLASS's ``packed(extent)``).
      Strided row group ``s / kFactor`` starts at element ``(s / kFactor) * ldm * kFactor``.
    """

    _orientation = "pitch"  # "pitch" and "row": row = strided; "column": col = strided
    _specializes_32b = False  # TensorOpMultiplicandCongruous<32, Crosswise> has its own formula

    def __init__(self, element_bits: int, crosswise: int,
                 shape: tuple[int, int] | None = None, ldm: int | None = None) -> None:
        name = type(self).__name__
        if element_bits not in (1, 2, 4, 8, 16, 32, 64, 128) or isinstance(element_bits, bool):
            raise ValueError(f"{name}: ElementSize must be a power of two from 1 to 128 bits, "
                             f"got {element_bits!r}")
        self.element_bits = int(element_bits)
        self.elements_per_access = _ACCESS_BITS // self.element_bits
        per = self.elements_per_access
        if (isinstance(crosswise, bool) or not isinstance(crosswise, (int, np.integer))
                or crosswise <= 0 or crosswise & (crosswise - 1)
                or not per <= crosswise <= _LINE_VECTORS * per):
            raise ValueError(
                f"{name}<{element_bits},{crosswise}>: Crosswise must be a power of two from "
                f"kElementsPerAccess ({per}) to one 128-byte line ({_LINE_VECTORS * per} elements)"
            )
        self.crosswise = int(crosswise)
        self._congruous_32b = self._specializes_32b and self.element_bits == 32
        if self._congruous_32b:
            # TensorOpMultiplicandCongruous<32, Crosswise>: kFactor = 1, TileShape<8, 4>.
            self.factor = 1
            self.tile_shape_stride = 4
            tile = (4, _LINE_VECTORS * per)
        else:
            self.factor = _LINE_VECTORS * per // self.crosswise
            self.tile_shape_stride = max(_LINE_VECTORS // self.factor, 32 // _LINE_VECTORS)
            tile = (self.factor * self.tile_shape_stride, self.crosswise)
        if shape is None:
            strided, contiguous = tile
        else:
            if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)) \
                    or len(shape) != 2:
                raise ValueError(f"{name}: shape must be (rows, cols), got {shape!r}")
            rows, cols = _count(shape[0], "rows"), _count(shape[1], "cols")
            strided, contiguous = (cols, rows) if self._orientation == "column" else (rows, cols)
        if contiguous % tile[1]:
            raise ValueError(f"{name}<{element_bits},{crosswise}>: the contiguous extent "
                             f"{contiguous} must be a multiple of {tile[1]} elements")
        if strided % self.factor:
            raise ValueError(f"{name}<{element_bits},{crosswise}>: the strided extent "
                             f"{strided} must be a multiple of kFactor = {self.factor} "
                             f"(rows that share a 128-byte line)")
        self.ldm = contiguous if ldm is None else _count(ldm, "ldm")
        if self.ldm < contiguous:
            raise ValueError(f"{name}: ldm {self.ldm} is smaller than the contiguous extent "
                             f"{contiguous}; rows would overlap")
        self._pitch_shape = (strided, contiguous)
        self.shape = (contiguous, strided) if self._orientation == "column" else (strided,
                                                                                   contiguous)
        self._check_span()

    @property
    def capacity(self) -> int:
        """CUTLASS's ``capacity(extent)``: strided extent * ldm."""
        return self._pitch_shape[0] * self.ldm

    def _offset(self, row: np.ndarray, col: np.ndarray) -> np.ndarray:
        if self._orientation == "column":
            row, col = col, row
        if self._congruous_32b:
            return self._congruous_32b_offset(row, col)
        return self._pitch_offset(row, col)

    def _pitch_offset(self, strided: np.ndarray, contiguous: np.ndarray) -> np.ndarray:
        """TensorOpMultiplicand::operator()(PitchLinearCoord(contiguous, strided))."""
        per, factor = self.elements_per_access, self.factor
        tile_contiguous = _LINE_VECTORS // factor  # TileShape::kContiguous / kFactor

        # The vector holding the element, in units of 128-bit accesses.
        vec_contiguous_idx = contiguous // per
        vec_strided_idx = strided // factor

        # The fundamental tile, and the vector's place in it.
        tile_contiguous_idx = vec_contiguous_idx // tile_contiguous
        tile_contiguous_residual = (vec_contiguous_idx % tile_contiguous
                                    + (strided % factor) * tile_contiguous)
        tile_strided_residual = vec_strided_idx % self.tile_shape_stride

        # The 4x4-vector partition within the tile, and the vector's place in it.
        partition_contiguous_idx = tile_contiguous_residual // _PARTITION
        partition_strided_idx = tile_strided_residual // _PARTITION
        partition_contiguous_residual = tile_contiguous_residual % _PARTITION
        partition_strided_residual = tile_strided_residual % _PARTITION

        # The swizzle: XOR vector within partition, and partition within tile.
        permuted_vec_contiguous_within_partition = (partition_contiguous_residual
                                                    ^ (partition_strided_residual % 4))
        permuted_partition_contiguous_within_tile = (partition_contiguous_idx
                                                     ^ (partition_strided_idx % 2))

        element_contiguous = ((tile_contiguous_idx * _LINE_VECTORS
                               + permuted_partition_contiguous_within_tile * _PARTITION
                               + permuted_vec_contiguous_within_partition) * per
                              + contiguous % per)
        element_strided = vec_strided_idx
        return element_contiguous + element_strided * self.ldm * factor

    def _congruous_32b_offset(self, strided: np.ndarray, contiguous: np.ndarray) -> np.ndarray:
        """TensorOpMultiplicandCongruous<32, Crosswise>::operator(): tiles of 4 strided rows
        of 32 elements (8 vectors), the vector index XOR-ed with 2 * (strided mod 4)."""
        tc = contiguous // 32
        ts = strided // 4
        c = (contiguous % 32) // self.elements_per_access
        s = strided % 4
        return ((c ^ (2 * s)) * self.elements_per_access + s * self.ldm + tc * 32
                + ts * self.ldm * 4 + contiguous % 4)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.element_bits}, {self.crosswise}, "
                f"shape={self.shape}, ldm={self.ldm})")


class TensorOpMultiplicandCongruous(TensorOpMultiplicand):
    """CUTLASS ``TensorOpMultiplicandCongruous<ElementSize, Crosswise>``, pitch-linear.

    For an operand whose contiguous dimension is M or N (A column-major, B row-major); CUTLASS
    picks Crosswise = one 128-byte line (64 for f16), so kFactor = 1. The same arithmetic as
    `TensorOpMultiplicand`, except for ElementSize 32, where CUTLASS specializes it: 4-row
    tiles of 32 elements, vector index XOR 2 * (strided mod 4), Crosswise unused.
    """

    _specializes_32b = True


class TensorOpMultiplicandCrosswise(TensorOpMultiplicand):
    """CUTLASS ``TensorOpMultiplicandCrosswise<ElementSize, Crosswise>``, pitch-linear.

    For an operand whose contiguous dimension is K (A row-major, B column-major): Crosswise is
    the K extent of the tile, and kFactor rows of Crosswise elements share each 128-byte line.
    The same arithmetic as `TensorOpMultiplicand`.
    """


class ColumnMajorTensorOpMultiplicandCongruous(TensorOpMultiplicandCongruous):
    """CUTLASS ``ColumnMajorTensorOpMultiplicandCongruous``: (row, col) is
    PitchLinearCoord(contiguous=row, strided=col); ``shape = (rows, cols)``, ldm = rows."""

    _orientation = "column"


class RowMajorTensorOpMultiplicandCongruous(TensorOpMultiplicandCongruous):
    """CUTLASS ``RowMajorTensorOpMultiplicandCongruous``: (row, col) is
    PitchLinearCoord(contiguous=col, strided=row); ``shape = (rows, cols)``, ldm = cols."""

    _orientation = "row"


class ColumnMajorTensorOpMultiplicandCrosswise(TensorOpMultiplicandCrosswise):
    """CUTLASS ``ColumnMajorTensorOpMultiplicandCrosswise``: (row, col) is
    PitchLinearCoord(contiguous=row, strided=col); ``shape = (rows, cols)``, ldm = rows."""

    _orientation = "column"


class RowMajorTensorOpMultiplicandCrosswise(TensorOpMultiplicandCrosswise):
    """CUTLASS ``RowMajorTensorOpMultiplicandCrosswise``: (row, col) is
    PitchLinearCoord(contiguous=col, strided=row); ``shape = (rows, cols)``, ldm = cols."""

    _orientation = "row"


# --------------------------------------------------------------------------------------------
# visualize_layout: CUTLASS examples/03_visualize_layout
# --------------------------------------------------------------------------------------------

_TENSOR_OP_FAMILIES: dict[str, type[TensorOpMultiplicand]] = {
    cls.__name__: cls
    for cls in (TensorOpMultiplicand, TensorOpMultiplicandCongruous,
                TensorOpMultiplicandCrosswise, ColumnMajorTensorOpMultiplicandCongruous,
                ColumnMajorTensorOpMultiplicandCrosswise, RowMajorTensorOpMultiplicandCongruous,
                RowMajorTensorOpMultiplicandCrosswise)
}
_PLAIN = ("PitchLinear", "RowMajor", "ColumnMajor")
_NAME = re.compile(r"([A-Za-z]\w*)(?:<(\d+),(\d+)>)?")


def _layout_for(name: str, extent: tuple[int, int],
                stride: int | None) -> tuple[TileLayout, bool]:
    """The layout 03_visualize_layout builds for ``name`` and ``extent`` (given in CUTLASS's
    TensorCoord order), and whether its coordinates are pitch-linear (contiguous, strided)."""
    if not isinstance(name, str):
        raise TypeError(f"a layout name is a string such as 'RowMajor' or "
                        f"'TensorOpMultiplicand<16,32>', got {name!r}")
    m = _NAME.fullmatch(re.sub(r"\s+", "", name))
    family = m.group(1) if m else None
    if m and family in _PLAIN and m.group(2) is None:
        if family == "ColumnMajor":
            rows, cols = extent
            pitch = rows if stride is None else stride
            if pitch < rows:
                raise ValueError(f"stride {pitch} is smaller than the {rows} rows of a column")
            return ColumnMajor(rows, cols, pad=pitch - rows), False
        lead, other = extent  # RowMajor (row, column); PitchLinear (contiguous, strided)
        if family == "RowMajor":
            lead, other = other, lead
        pitch = lead if stride is None else stride
        if pitch < lead:
            raise ValueError(f"stride {pitch} is smaller than the {lead} elements of a row")
        return RowMajor(other, lead, pad=pitch - lead), family == "PitchLinear"
    if m and family in _TENSOR_OP_FAMILIES and m.group(2) is not None:
        cls = _TENSOR_OP_FAMILIES[family]
        pitch_linear = cls._orientation == "pitch"
        shape = (extent[1], extent[0]) if pitch_linear else extent
        layout = cls(int(m.group(2)), int(m.group(3)), shape=shape, ldm=stride)
        return layout, pitch_linear
    raise ValueError(
        f"Layout {name!r} not supported: expected PitchLinear, RowMajor, ColumnMajor, or "
        f"one of {', '.join(f'{n}<ElementSize,Crosswise>' for n in _TENSOR_OP_FAMILIES)} "
        f"(the Volta, interleaved and sm80 64b/128b layouts are not modeled)"
    )


def _pair(value: int | Sequence[int], name: str, default_second: int | None) -> tuple[int, int]:
    """Two positive integers: an extent or output shape (an empty one would print nothing)."""
    items = positive_extent(value, name)
    if default_second is not None and len(items) == 1:
        items += (default_second,)
    if len(items) != 2:
        raise ValueError(f"{name} must have rank 2 (given: {len(items)})")
    return items


def visualize_layout(name: str, extent: Sequence[int] = (32, 8), vectorize: int = 1,
                     output_shape: int | Sequence[int] = (16, 8),
                     stride: int | None = None) -> str:
    """The text CUTLASS's ``03_visualize_layout <name> --extent=.. --vectorize=..
    --output-shape=.. [--stride=..]`` prints, without its final newline (so ``print`` of it
    matches the example's output exactly).

    Shared memory is listed in offset order: ``output_shape[0]`` elements per line,
    ``output_shape[1]`` lines per block, blocks separated by a blank line. Each element shows
    the logical coordinate stored there, in CUTLASS's TensorCoord order: (contiguous,
    strided) for pitch-linear layouts (PitchLinear, TensorOpMultiplicand, ...Congruous,
    ...Crosswise), (row, column) for RowMajor, ColumnMajor and their TensorOp variants;
    ``extent`` is given in the same order, and storage with no element prints as a space.
    Runs of ``vectorize`` elements (when vectorize > 2) print as one vector, ``(0..7, 0)``,
    when all of them are stored and only one coordinate changes along the run, as in
    CUTLASS, which does not check that the run is consecutive. To see 16-byte vectors in
    128-byte lines, use vectorize = 128 / ElementSize and output_shape = (1024 /
    ElementSize, 4), as in the example's usage text. The defaults are the example's.
    """
    per_line, lines_per_block = _print_shape(vectorize, output_shape)
    layout, pitch_linear = _layout_for(name, _pair(extent, "extent", None), stride)
    return _render(layout, pitch_linear, vectorize, per_line, lines_per_block, name)


def render_layout(layout: TileLayout, vectorize: int = 1,
                  output_shape: int | Sequence[int] = (16, 8), pitch_linear: bool = False) -> str:
    """`visualize_layout`'s picture of any Layout object (a composed or descriptor layout that
    has no CUTLASS name): storage in offset order, each element showing the (row, col) it
    holds, or (col, row) with ``pitch_linear``. The same printing rules and arguments."""
    per_line, lines_per_block = _print_shape(vectorize, output_shape)
    return _render(layout, pitch_linear, vectorize, per_line, lines_per_block, repr(layout))


def _print_shape(vectorize: int, output_shape: int | Sequence[int]) -> tuple[int, int]:
    vectorize = integer(vectorize, "vectorize", minimum=1)
    per_line, lines_per_block = _pair(output_shape, "output_shape", 8)
    if per_line % vectorize:
        raise ValueError(f"vectorize={vectorize} must divide contiguous elements in "
                         f"output_shape={per_line},{lines_per_block}")
    return per_line, lines_per_block


def _render(layout: TileLayout, pitch_linear: bool, vectorize: int, per_line: int,
            lines_per_block: int, name: str) -> str:
    check_memory(_RENDER_BYTES * max(layout.capacity, math.prod(layout.extent)),
                 f"printing {name}")
    # Which logical coordinate each storage element holds (-1: none), in TensorCoord order.
    rows, cols = np.indices(layout.extent, dtype=np.int64)
    coord = (cols, rows) if pitch_linear else (rows, cols)
    offsets = layout.offsets().ravel()
    capacity = layout.capacity
    if offsets.size and int(offsets.max()) >= capacity:
        raise ValueError(f"{name}: an offset reaches {int(offsets.max())}, beyond the "
                         f"capacity of {capacity}")
    held = np.full((2, capacity), -1, np.int64)
    held[0, offsets] = coord[0].ravel()
    held[1, offsets] = coord[1].ravel()
    if capacity % vectorize:
        raise ValueError(f"vectorize={vectorize} must divide the layout's capacity of "
                         f"{capacity} elements")

    groups = held.reshape(2, -1, vectorize)  # (rank, vector, lane)
    valid = groups[0] >= 0
    changes = (groups != groups[:, :, :1]).any(axis=2)  # (rank, vector)
    as_vector = (vectorize > 2) & (~valid.any(axis=1)
                                   | (valid.all(axis=1) & ~(changes[0] & changes[1])))

    def element(c0: int, c1: int) -> str:
        return f"({c0}, {c1})" if c0 >= 0 else " "

    cells = []
    for v in range(groups.shape[1]):
        c0, c1 = int(groups[0, v, 0]), int(groups[1, v, 0])
        if not as_vector[v]:
            cells.append("".join(element(int(a), int(b)) for a, b in groups[:, v].T))
        elif c0 < 0:
            cells.append(" ")
        elif changes[0, v]:
            cells.append(f"({c0}..{c0 + vectorize - 1}, {c1})")
        elif changes[1, v]:
            cells.append(f"({c0}, {c1}..{c1 + vectorize - 1})")
        else:
            cells.append(element(c0, c1))

    step = per_line // vectorize
    lines = ["|".join(cells[i:i + step]) for i in range(0, len(cells), step)]
    blocks = ["\n".join(lines[i:i + lines_per_block])
              for i in range(0, len(lines), lines_per_block)]
    return "\n\n".join(blocks)
