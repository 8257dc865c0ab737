"""Fragment maps: which lane and register of a warp hold which matrix element, as data.

A `FragmentMap` is an integer table ``coords[lane, element] = (row, col)``. Element ``e`` of a
lane sits in register ``e // per_register``; with 16-bit elements two share a 32-bit register
and with 8-bit elements four, the lower-indexed element in the lower bits. Packing, unpacking,
the simulator, the GPU tests and the diagrams all read these tables; this module is the only
place the PTX ISA's layout formulas are written down.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from .formats import F16, FloatFormat, native_order, same_type
from .qualifier import MmaSpec, parse
from .validate import broadcast_batch, check_memory, integer

WARP_SIZE = 32
if sys.byteorder != "little":  # registers are viewed as pairs of 16-bit elements in place
    raise ImportError("tcsim needs a little-endian machine (as every CUDA host is)")


@dataclass(frozen=True, eq=False)
class FragmentMap:
    """Where each element of a ``rows x cols`` matrix lives in a warp's registers. In a
    notebook it shows as a coloured lane grid that `tcsim.views` hangs on this class (models
    never import views; ``import tcsim`` imports them)."""

    name: str
    rows: int
    cols: int
    format: FloatFormat
    coords: np.ndarray  # (32, elements per lane, 2) int: (row, col)
    # How often each element appears: WMMA's f16 A and B fragments hold theirs twice or four
    # times (docs/wmma.md); the hardware reads the first copy, so the inverse maps name it.
    copies: int = 1

    def __post_init__(self) -> None:
        c = self.coords
        flat = c[..., 0] * self.cols + c[..., 1]
        counts = np.bincount(flat.ravel(), minlength=self.rows * self.cols)
        if c.shape[0] != WARP_SIZE or counts.size != self.rows * self.cols \
                or not np.all(counts == self.copies):
            raise AssertionError(f"{self.name}: fragment map must cover each element "
                                 f"{'once' if self.copies == 1 else f'{self.copies} times'}")
        self.coords.setflags(write=False)

    @property
    def element_bits(self) -> int:
        return self.format.storage_bits

    @property
    def per_register(self) -> int:
        return 32 // self.element_bits

    @property
    def elements(self) -> int:
        """Elements per lane."""
        return self.coords.shape[1]

    @property
    def registers(self) -> int:
        """32-bit registers per lane."""
        return self.elements // self.per_register

    @cached_property
    def lane_of(self) -> np.ndarray:
        """``lane_of[row, col]``: the lane holding each element (its first copy)."""
        out = (self._lane_index // self.elements).reshape(self.rows, self.cols)
        out.setflags(write=False)
        return out

    @cached_property
    def element_of(self) -> np.ndarray:
        """``element_of[row, col]``: the element index within its lane (its first copy)."""
        out = (self._lane_index % self.elements).reshape(self.rows, self.cols)
        out.setflags(write=False)
        return out

    def locate(self, row: int, col: int) -> tuple[int, int, int]:
        """(lane, register, part) holding element (row, col); part is the element's place in
        its register, 0 for the lowest bits (the low half, or byte 0 of four)."""
        row, col = (integer(x, f"{self.name} locate: {what}", minimum=0, maximum=top - 1,
                            why=f" (the matrix is {self.rows}x{self.cols})")
                    for x, what, top in ((row, "row", self.rows), (col, "col", self.cols)))
        e = int(self.element_of[row, col])
        return int(self.lane_of[row, col]), e // self.per_register, e % self.per_register

    # ---- bits ------------------------------------------------------------------------------

    def gather_bits(self, matrix_bits: np.ndarray) -> np.ndarray:
        """Matrix bit patterns (..., rows, cols) -> per-lane elements (..., 32, elements)."""
        m = np.asarray(matrix_bits)
        if m.shape[-2:] != (self.rows, self.cols):
            raise ValueError(
                f"{self.name}: expected a matrix of shape (..., {self.rows}, {self.cols}), "
                f"got {m.shape}"
            )
        # One gather along a flattened last axis: much faster than 2-D fancy indexing.
        flat = m.reshape(m.shape[:-2] + (self.rows * self.cols,))
        return np.take(flat, self._matrix_index, axis=-1).reshape(
            m.shape[:-2] + (WARP_SIZE, self.elements))

    def scatter_bits(self, lane_bits: np.ndarray) -> np.ndarray:
        """Per-lane elements (..., 32, elements) -> matrix bit patterns (..., rows, cols)."""
        lane_bits = np.asarray(lane_bits)
        flat = lane_bits.reshape(lane_bits.shape[:-2] + (WARP_SIZE * self.elements,))
        return np.take(flat, self._lane_index, axis=-1).reshape(
            lane_bits.shape[:-2] + (self.rows, self.cols))

    @cached_property
    def _matrix_index(self) -> np.ndarray:
        """For each (lane, element) in order, its position in the row-major matrix."""
        return (self.coords[..., 0] * self.cols + self.coords[..., 1]).ravel()

    @cached_property
    def _lane_index(self) -> np.ndarray:
        """For each matrix position in row-major order, its (lane, element) position."""
        inverse = np.empty(self.rows * self.cols, np.int64)
        # Assigned last to first, so that a repeated element keeps its first copy.
        inverse[self._matrix_index[::-1]] = np.arange(self._matrix_index.size)[::-1]
        return inverse

    def to_registers(self, lane_bits: np.ndarray) -> np.ndarray:
        """Per-lane elements -> 32-bit registers (..., 32, registers), low half first."""
        e = np.ascontiguousarray(lane_bits, dtype=self.format.uint)
        # Two 16-bit elements, lower index first, are one little-endian 32-bit word.
        return e.view(np.uint32)

    def check_registers(self, regs: np.ndarray) -> np.ndarray:
        """``regs`` as an array, after checking it is uint32 of shape (..., 32, registers)."""
        r = np.asarray(regs)
        if r.dtype != np.uint32:
            raise TypeError(f"{self.name}: registers must be uint32, got {r.dtype}")
        if r.shape[-2:] != (WARP_SIZE, self.registers):
            raise ValueError(
                f"{self.name}: expected registers of shape (..., 32, {self.registers}), "
                f"got {r.shape}"
            )
        check_memory(r.size * 4, f"{self.name}: registers of shape {r.shape}")  # a broadcast view
        return r

    def check_matrix(self, matrix: np.ndarray) -> np.ndarray:
        """``matrix`` as an array, after checking its dtype and shape (..., rows, cols)."""
        return check_matrix(self.name, self.format, (self.rows, self.cols), matrix)

    def from_registers(self, regs: np.ndarray) -> np.ndarray:
        """32-bit registers (..., 32, registers) -> per-lane element bits."""
        r = np.ascontiguousarray(self.check_registers(regs))
        if self.per_register == 1:
            return r
        return r.view(self.format.uint)  # a view: writes through to the registers

    def registers_to_batch_last(self, regs: np.ndarray, transpose: bool = False,
                                out: np.ndarray | None = None) -> np.ndarray:
        """Registers (n, 32, registers) -> matrix bits (rows, cols, n), or (cols, rows, n);
        into ``out`` when given."""
        m = self.scatter_bits(self.from_registers(regs))  # (n, rows, cols)
        m = m.transpose(2, 1, 0) if transpose else m.transpose(1, 2, 0)
        if out is None:
            return np.ascontiguousarray(m)
        np.copyto(out, m)
        return out

    def batch_last_elements(self, matrix_bits: np.ndarray) -> np.ndarray:
        """Matrix bits (rows, cols, n) -> per-lane elements laid out batch-last (32, E, n)."""
        return matrix_bits[self.coords[..., 0], self.coords[..., 1]]

    # ---- values ----------------------------------------------------------------------------

    def pack(self, matrix: np.ndarray) -> np.ndarray:
        """A matrix of the operand's dtype (..., rows, cols) -> uint32 registers (..., 32, n)."""
        matrix = self.check_matrix(matrix)
        return self.to_registers(self.gather_bits(self.format.to_bits(matrix)))

    def unpack(self, regs: np.ndarray) -> np.ndarray:
        """uint32 registers (..., 32, n) -> the matrix (..., rows, cols) in the operand's dtype."""
        return self.format.from_bits(self.scatter_bits(self.from_registers(regs)))

    # ---- display ---------------------------------------------------------------------------

    def table(self) -> str:
        """Each matrix element as ``T<lane>:r<register>[.lo|.hi|.b0..b3]``, one matrix row per
        line."""
        width = max(len(self._cell(0, 0)), len(self._cell(self.rows - 1, self.cols - 1))) + 1
        head = " " * 5 + "".join(f"{c:>{width}}" for c in range(self.cols))
        lines = [f"{self.name}: {self.rows}x{self.cols} {self.format.name}, "
                 f"{self.registers} register(s) per lane", head]
        for r in range(self.rows):
            lines.append(f"{r:>4} " + "".join(
                f"{self._cell(r, c):>{width}}" for c in range(self.cols)))
        return "\n".join(lines)

    def register_label(self, row: int, col: int) -> tuple[int, str]:
        """(lane, ``r<register>[.lo|.hi|.b0..b3]``) holding element (row, col), as tables and
        diagrams print it."""
        lane, reg, part = self.locate(row, col)
        if self.per_register == 1:
            return lane, f"r{reg}"
        if self.per_register == 2:
            return lane, f"r{reg}{('.lo', '.hi')[part]}"
        return lane, f"r{reg}.b{part}"  # 8-bit elements: byte 0 (lowest) .. 3

    def _cell(self, row: int, col: int) -> str:
        lane, reg = self.register_label(row, col)
        return f"T{lane}:{reg}"

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"<FragmentMap {self.name}: {self.rows}x{self.cols} {self.format.name}>"


def check_matrix(name: str, fmt: FloatFormat, shape: tuple[int, int], matrix) -> np.ndarray:
    """``matrix`` as an array, after checking it has ``fmt``'s dtype and shape (..., *shape)."""
    m = np.asarray(matrix)
    if not same_type(m.dtype, fmt.dtype):  # either byte order: '>f2' holds float16s too
        raise TypeError(
            f"{name}: expected dtype {fmt.dtype.name} ({fmt.name}), got {m.dtype.name}"
        )
    if m.ndim < 2 or m.shape[-2:] != tuple(shape):
        raise ValueError(
            f"{name}: expected a matrix of shape (..., {shape[0]}, {shape[1]}), got {m.shape}"
        )
    check_memory(m.size * m.itemsize, f"{name}: a matrix of shape {m.shape}")  # a broadcast view
    return native_order(m)


def check_batch(spec: MmaSpec, operands) -> tuple[int, ...]:
    """The batch shape that A, B and C (matrices or registers) broadcast to, checked: a
    ValueError names two operands whose batch shapes do not broadcast, or refuses, before
    anything is allocated, a batch whose operands and result would not fit in memory."""
    batch = broadcast_batch({op: np.shape(x)[:-2] for op, x in zip("ABC", operands)},
                            spec.qualifier)
    per = sum(rows * cols * spec.format(op).storage_bits // 8 * spec.products_per_warp
              for op in "abcd" for rows, cols in [spec.matrix_shape(op)])
    check_memory(int(np.prod(batch, dtype=object)) * per,
                 f"{spec.qualifier} on a batch of shape {batch}")
    return batch


def store_batch_last(destination: np.ndarray, source: np.ndarray) -> None:
    """``destination`` (n, *rest) = ``source`` (*rest, n) moved batch-first, in one copy.

    numpy walks the destination in order and reads one element from each source row in
    turn. That is fast when a row is not a multiple of 1 KiB long: such rows map to the same
    few cache sets and evict one another (with 2,048 f32 elements a row, the copy is six times
    slower). `tcsim.isa.engine.CHUNK` is chosen to avoid that.
    """
    np.copyto(np.moveaxis(destination, 0, -1), source)


def _build(name, rows, cols, fmt, elements, where) -> FragmentMap:
    """Tabulate ``where(group, thread_in_group, i) -> (row, col)`` over lanes and elements."""
    lane = np.arange(WARP_SIZE)[:, None]
    i = np.arange(elements)[None, :]
    row, col = where(lane >> 2, lane % 4, i)
    coords = np.stack(np.broadcast_arrays(row, col), axis=-1).astype(np.int64)
    return FragmentMap(name, rows, cols, fmt, coords)


# The PTX ISA's formulas ("Matrix Fragments for mma.m16n8k*"), with g = laneid >> 2 (the
# group) and t = laneid % 4 (thread in group).

def _a_16bit(g, t, i):  # f16/bf16 A: 16 x k, two elements per register
    return g + 8 * ((i // 2) % 2), 2 * t + (i % 2) + 8 * (i // 4)


def _b_16bit(g, t, i):  # f16/bf16 B: k x 8
    return 2 * t + (i % 2) + 8 * (i // 2), g


def _a_tf32(g, t, i):  # tf32 A: 16 x k, one element per register
    return g + 8 * (i % 2), t + 4 * (i // 2)


def _b_tf32(g, t, i):  # tf32 B: k x 8
    return t + 4 * i, g


def _a_8bit(g, t, i):  # e4m3/e5m2/s8/u8 A: 16 x k (k = 16, 32), four elements per register
    return g + 8 * ((i // 4) % 2), 4 * t + (i % 4) + 16 * (i // 8)


def _b_8bit(g, t, i):  # 8-bit B: k x 8
    return 4 * t + (i % 4) + 16 * (i // 4), g


def _accumulator(g, t, i):  # C and D: 16 x 8, f16, f32 or s32
    return g + 8 * (i // 2), 2 * t + (i % 2)


# m8n8k4 (PTX ISA "Matrix Fragments for mma.m8n8k4 with .f16"): quad-pair q = g % 4 is lanes
# 4q..4q+3 (low group) and 4q+16..4q+19 (high group, g >= 4). The warp's four products are
# stacked: product q's A is rows 8q..8q+7 of a (32, 4) matrix, its B rows 4q..4q+3 of (16, 8),
# its C and D rows 8q..8q+7 of (32, 8).

def _qp_a_row(g, t, i):
    return 8 * (g % 4) + t + 4 * (g // 4), i


def _qp_a_col(g, t, i):
    return 8 * (g % 4) + i + 4 * (g // 4), t


def _qp_b_row(g, t, i):
    return 4 * (g % 4) + t, i + 4 * (g // 4)


def _qp_b_col(g, t, i):
    return 4 * (g % 4) + i, t + 4 * (g // 4)


def _qp_acc_f16(g, t, i):
    return 8 * (g % 4) + t + 4 * (g // 4), i


def _qp_acc_f32(g, t, i):
    row = (t & 1) + (i & 2) + 4 * (g // 4)
    return 8 * (g % 4) + row, (i & 4) + (t & 2) + (i & 1)


def _ldmatrix_rows(g, t, i):  # element i = 2 * matrix + half; rows as stored in memory
    return 8 * (i // 2) + g, 2 * t + (i % 2)


def _ldmatrix_rows_transposed(g, t, i):
    return 8 * (i // 2) + 2 * t + (i % 2), g


@cache
def ldmatrix_fragment(matrices: int, transpose: bool = False) -> FragmentMap:
    """Which lane and register receive which element of ``ldmatrix.m8n8.x{matrices}``.

    The N 8x8 b16 matrices are stacked as one (8N, 8) matrix as they sit in memory: rows
    8i .. 8i+7 are the 16-byte rows whose addresses lanes 8i .. 8i+7 supply. Matrix i lands in
    register i of every lane: lane l gets row l // 4, columns 2(l % 4) and 2(l % 4) + 1; with
    ``.trans``, column l // 4, rows 2(l % 4) and 2(l % 4) + 1. stmatrix uses the same maps.
    Elements are raw b16; the map's format is f16 only so that pack/unpack have a dtype.
    """
    if matrices not in (1, 2, 4):
        raise ValueError(f"ldmatrix loads 1, 2 or 4 matrices, not {matrices}")
    where = _ldmatrix_rows_transposed if transpose else _ldmatrix_rows
    name = f"ldmatrix.m8n8.x{matrices}{'.trans' if transpose else ''}"
    return _build(name, 8 * matrices, 8, F16, 2 * matrices, where)


@cache
def _mma_fragment(qualifier: str, operand: str) -> FragmentMap:
    spec = parse(qualifier)
    rows, cols = spec.matrix_shape(operand)
    rows *= spec.products_per_warp  # m8n8k4: the four quad-pair products, stacked
    fmt = spec.format(operand)
    elements = rows * cols // WARP_SIZE
    if spec.products_per_warp > 1:
        if operand in ("c", "d"):
            where = _qp_acc_f32 if fmt.name == "f32" else _qp_acc_f16
        else:
            layout = spec.a_layout if operand == "a" else spec.b_layout
            where = {("a", "row"): _qp_a_row, ("a", "col"): _qp_a_col,
                     ("b", "row"): _qp_b_row, ("b", "col"): _qp_b_col}[operand, layout]
    elif operand in ("c", "d"):
        where = _accumulator
    elif spec.input_type == "tf32":
        where = _a_tf32 if operand == "a" else _b_tf32
    elif fmt.storage_bits == 8:
        where = _a_8bit if operand == "a" else _b_8bit
    else:
        where = _a_16bit if operand == "a" else _b_16bit
    return _build(f"{spec.qualifier} {operand.upper()}", rows, cols, fmt, elements, where)


def mma_fragment(spec: MmaSpec | str, operand: str) -> FragmentMap:
    """The fragment map of one operand ("a", "b", "c" or "d") of an mma.sync instruction."""
    spec = spec if isinstance(spec, MmaSpec) else parse(spec)
    op = operand.lower() if isinstance(operand, str) else None
    if op not in ("a", "b", "c", "d"):
        raise ValueError(f"operand must be 'a', 'b', 'c' or 'd', got {operand!r}")
    return _mma_fragment(spec.qualifier, op)
