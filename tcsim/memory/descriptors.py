"""wgmma matrix descriptors (sm_90a): the 64-bit value, and the shared-memory tile it denotes.

``wgmma.mma_async`` reads A (M x K, M = 64) and B (N x K) from shared memory through a 64-bit
descriptor. A descriptor is a layout: `MatrixDescriptor` holds its five fields, `encode` and
`decode` move between them and the 64-bit value, and `MatrixDescriptor.layout` is the
function from an operand's (row, k) to the shared-memory byte address the tensor core reads,
built from this package's `Swizzle` and `Swizzled`. `canonical_tile` goes the other way for
a probe or kernel author: a tile's shape, element size, major-ness and swizzle give the
descriptors to issue and every element's byte offset.

Sources (facts, not code):

- PTX ISA, "Matrix Descriptor Format" (wgmma section 9.7.15.5.1.2.2): bits 0-13 start
  address, 16-29 leading dimension byte offset (LBO), 32-45 stride dimension byte offset
  (SBO), each ``(x & 0x3FFFF) >> 4``; bits 49-51 base offset ("valid for all swizzling modes
  except the no-swizzle mode"); bits 62-63 swizzle mode 0 none, 1 128B, 2 64B, 3 32B. The
  swizzle pattern repeats every 1024 / 512 / 256 bytes; a pattern that does not start on that
  boundary needs ``base offset = (pattern start address >> 7) & 7``.
- PTX ISA, "Shared Memory Matrix Layout" (9.7.15.5.1.2): swizzle atoms in 16-byte units,
  K-major 8x8 / 8x4 / 8x2 / 8x1 and MN-major 8x8 / 4x8 / 2x8 / 1x8 for 128B / 64B / 32B /
  none; the transpose (MN-major) exists only for f16 and bf16.
- CuTe, include/cute/arch/mma_sm90_desc.hpp (``GmmaDescriptor``, ``LayoutType``) and
  include/cute/atom/mma_traits_sm90_gmma.hpp (``Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom``
  and ``make_gmma_desc``): the canonical layouts, in 16-byte units (T = elements per 16 B),
  all under ``Swizzle<b,4,3>`` applied to the byte *address*:

  K-major   none  ((8,m),(T,2)):((1T,SBO),(1,LBO))   swizzled ((8,m),(T,2)):((wT,SBO),(1,T))
  MN-major  none  ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
            swizzled ((T,w,m),(8,k)):((1,T,LBO),(wT,SBO))      w = 2, 4, 8 for 32B/64B/128B

  so without swizzle LBO is the step between 8x16-byte core matrices along K and SBO along M
  or N; swizzled K-major ignores LBO (CuTe writes 1) and SBO steps 8-row groups; swizzled
  MN-major has LBO step whole atoms along M/N and SBO step 8-row groups along K.

On the H100 (docs/descriptors.md, tests/memory/test_descriptors.py -m hw) wgmma read exactly
the bytes this model predicts in every mode, major-ness and element size, for canonical and
unusual descriptors alike: the swizzle acts on the absolute address, the base offset is
subtracted from address bits 7.. before the XOR, and swizzled K-major ignores LBO.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..isa.formats import native_order
from ..isa.validate import integer_array
from .layouts import Layout, Swizzle, Swizzled, TileLayout, render_layout

__all__ = [
    "DescriptorError",
    "DescriptorLayout",
    "DescriptorTile",
    "MatrixDescriptor",
    "SwizzleMode",
    "canonical_tile",
]

WINDOW = 1 << 18  # matrix-descriptor-encode keeps address bits 4..17: a 256 KiB window
K_STEP_BYTES = 32  # one dense wgmma reads K * element size = 32 bytes of every row
_FIELDS = {  # name: (lowest bit, width) in the 64-bit value
    "start_address": (0, 14),
    "leading_byte_offset": (16, 14),
    "stride_byte_offset": (32, 14),
    "base_offset": (49, 3),
    "swizzle": (62, 2),
}
_USED = sum(((1 << width) - 1) << low for low, width in _FIELDS.values())
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}


class DescriptorError(ValueError):
    """A descriptor value, or the tile it would denote, that wgmma cannot use as described."""


class SwizzleMode(enum.IntEnum):
    """The descriptor's 2-bit swizzle mode; the value is the PTX encoding (bits 62-63)."""

    NONE = 0  # CuTe LayoutType::INTERLEAVE: 8x16-byte core matrices, no XOR
    B128 = 1
    B64 = 2
    B32 = 3

    @property
    def bits(self) -> int:
        """Row-index bits XOR-ed into the 16-byte-chunk index: 0, 3, 2, 1."""
        return (0, 3, 2, 1)[self.value]

    @property
    def width(self) -> int:
        """Bytes in one row of the swizzle atom (16 for NONE: a core-matrix row)."""
        return 16 << self.bits

    @property
    def repeat(self) -> int:
        """Bytes after which the pattern repeats: one 8-row atom (a core matrix for NONE)."""
        return 8 * self.width

    @property
    def swizzle(self) -> Swizzle:
        """CuTe's swizzle on byte addresses: ``Swizzle<bits,4,3>`` keeps 16-byte chunks whole
        and XORs address bits 7.. (the 128-byte line) into the chunk bits 4.."""
        return Swizzle(self.bits, 4, 3)

    @classmethod
    def parse(cls, value: SwizzleMode | str) -> SwizzleMode:
        """A SwizzleMode, or its name: "none" / "interleave", "128B", "64B", "32B"."""
        if isinstance(value, SwizzleMode):
            return value
        names = {"none": cls.NONE, "interleave": cls.NONE, "128b": cls.B128, "64b": cls.B64,
                 "32b": cls.B32}
        if isinstance(value, str) and value.strip().lower() in names:
            return names[value.strip().lower()]
        raise DescriptorError(f"unknown swizzle mode {value!r}: expected none (interleave), "
                              f"128B, 64B or 32B, or a SwizzleMode")

    def __str__(self) -> str:
        return "none" if self is SwizzleMode.NONE else f"{self.width}B"


def _element_bytes(element: int | str) -> int:
    if isinstance(element, str) and element.lower() in ELEMENT_BYTES:
        return ELEMENT_BYTES[element.lower()]
    if isinstance(element, (int, np.integer)) and not isinstance(element, bool) \
            and element in (1, 2, 4):
        return int(element)
    raise DescriptorError(f"element {element!r}: wgmma reads 1-byte (e4m3, e5m2, s8, u8), "
                          f"2-byte (f16, bf16) or 4-byte (tf32) elements from shared memory")


def _major(major: str) -> str:
    value = str(major).upper()
    if value in ("K", "MN", "M", "N"):
        return "K" if value == "K" else "MN"
    raise DescriptorError(f"major must be 'K' or 'MN' (the transposed operand), got {major!r}")


def _rows(rows: int) -> int:
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) \
            or not 8 <= rows <= 256 or rows % 8:
        raise DescriptorError(f"rows must be a multiple of 8 from 8 to 256 (A: M = 64, B: N), "
                              f"got {rows!r}")
    return int(rows)


# --------------------------------------------------------------------------------------------
# The 64-bit value
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatrixDescriptor:
    """The five fields of a wgmma matrix descriptor, in bytes (the value stores them >> 4).

    ``start_address``: the shared-memory byte address of the tile (the state-space address,
    16-byte aligned, below 256 KiB). ``leading_byte_offset`` (LBO) and ``stride_byte_offset``
    (SBO): multiples of 16 below 256 KiB; what they step depends on swizzle and major-ness
    (module docstring). ``base_offset``: 0-7, for a swizzle pattern that does not start on
    its repeat boundary; must be 0 without swizzle. ``swizzle``: a `SwizzleMode` or its name.
    """

    start_address: int
    leading_byte_offset: int
    stride_byte_offset: int
    base_offset: int = 0
    swizzle: SwizzleMode = SwizzleMode.NONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "swizzle", SwizzleMode.parse(self.swizzle))
        for name, what in (("start_address", "start address"),
                           ("leading_byte_offset", "leading byte offset (LBO)"),
                           ("stride_byte_offset", "stride byte offset (SBO)")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise DescriptorError(f"{what} must be a non-negative integer, got {value!r}")
            if value % 16:
                raise DescriptorError(f"{what} {value} is not a multiple of 16: the descriptor "
                                      f"stores it >> 4")
            if value >= WINDOW:
                raise DescriptorError(f"{what} {value} does not fit the 14-bit field "
                                      f"(bytes 0 to {WINDOW - 16}, a 256 KiB window)")
            object.__setattr__(self, name, int(value))
        bo = self.base_offset
        if isinstance(bo, bool) or not isinstance(bo, (int, np.integer)) or not 0 <= bo <= 7:
            raise DescriptorError(f"base offset must be 0..7 (3 bits), got {bo!r}")
        object.__setattr__(self, "base_offset", int(bo))
        if bo and self.swizzle is SwizzleMode.NONE:
            raise DescriptorError(f"base offset {bo} with no swizzle: PTX defines the base "
                                  f"offset only for the swizzled modes")

    def encode(self) -> int:
        """The 64-bit value wgmma takes (a Python int below 2**64)."""
        return ((self.start_address >> 4) | (self.leading_byte_offset >> 4) << 16
                | (self.stride_byte_offset >> 4) << 32 | self.base_offset << 49
                | int(self.swizzle) << 62)

    @classmethod
    def decode(cls, value: int) -> MatrixDescriptor:
        """The descriptor a 64-bit value holds; reserved bits must be zero."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not 0 <= value < 1 << 64:
            raise DescriptorError(f"a descriptor is a 64-bit unsigned value, got {value!r}")
        value = int(value)
        if value & ~_USED:
            bits = [b for b in range(64) if (value & ~_USED) >> b & 1]
            raise DescriptorError(f"descriptor 0x{value:016x} sets reserved bits {bits} (only "
                                  f"0-13, 16-29, 32-45, 49-51 and 62-63 carry fields)")

        def field(name: str) -> int:
            low, width = _FIELDS[name]
            return value >> low & ((1 << width) - 1)

        return cls(field("start_address") << 4, field("leading_byte_offset") << 4,
                   field("stride_byte_offset") << 4, field("base_offset"),
                   SwizzleMode(field("swizzle")))

    def layout(self, element: int | str, major: str = "K", rows: int = 64,
               check: bool = True) -> DescriptorLayout:
        """The (rows x K) tile this descriptor feeds one wgmma, K = 32 bytes / element size:
        A is ``rows=64``, B is ``rows=N``; ``major`` "K" or "MN" (imm-trans = 1, f16/bf16
        only). ``check=False`` skips the canonical-tile checks (alignment to the swizzle
        pattern, whole atoms, no two elements on one byte) to model what the hardware would
        read from an unusual descriptor."""
        return DescriptorLayout(self, element, major, rows, check)

    def __str__(self) -> str:
        return (f"MatrixDescriptor 0x{self.encode():016x}: start 0x{self.start_address:05x}, "
                f"LBO {self.leading_byte_offset}, SBO {self.stride_byte_offset}, "
                f"base offset {self.base_offset}, swizzle {self.swizzle}")


# --------------------------------------------------------------------------------------------
# The layout a descriptor denotes
# --------------------------------------------------------------------------------------------

Modes = Sequence[tuple[int, int]]  # ((extent, stride), ...), first mode fastest, as in CuTe


def _canonical(rows: int, k: int, row_modes: Modes, col_modes: Modes) -> Layout:
    """The (rows, k) tile of the `Layout` whose two modes are ``row_modes`` and ``col_modes``
    (one (extent, stride) is an integer mode; more are a tuple). The tile may be a window of
    it: a partial swizzle atom, whose last mode's coordinate takes what is left, as in CuTe."""
    def mode(pairs: Modes) -> tuple:
        shape, stride = zip(*((int(e), int(s)) for e, s in pairs))
        return (shape, stride) if len(pairs) > 1 else (shape[0], stride[0])

    (rs, rd), (cs, cd) = mode(row_modes), mode(col_modes)
    return Layout._window((rs, cs), (rd, cd), (rows, k))


def _element_swizzle(mode: SwizzleMode, element_bytes: int) -> Swizzle:
    """``mode.swizzle`` on element offsets: the same XOR, counted in elements."""
    return Swizzle(mode.bits, 4 - element_bytes.bit_length() + 1, 3)


class DescriptorLayout(Swizzled):
    """What one wgmma reads through a descriptor: (row, k) -> shared-memory byte.

    A `Swizzled` layout: a `Layout` (CuTe's canonical form with the descriptor's LBO and
    SBO), offset by where the tile starts in its pattern, under the mode's XOR swizzle, in
    elements counted from ``origin``, the byte
    address where the swizzle pattern that holds the tile starts. The swizzle acts on the
    absolute address, as in CuTe's ``smem_ptr`` composition, so ``origin`` is aligned to the
    pattern's repeat (shifted by ``base_offset`` 128-byte lines); ``address(row, k) = origin +
    element_bytes * offset(row, k)``. Without swizzle ``origin`` is the start address.
    """

    def __init__(self, descriptor: MatrixDescriptor, element: int | str, major: str = "K",
                 rows: int = 64, check: bool = True) -> None:
        self.descriptor = d = descriptor
        self.element_bytes = e = _element_bytes(element)
        self.major = _major(major)
        rows = _rows(rows)
        if self.major == "MN" and e != 2:
            raise DescriptorError(f"MN-major (transposed) operands exist only for f16/bf16 "
                                  f"(PTX: imm-trans), not for {e}-byte elements")
        mode, k = d.swizzle, K_STEP_BYTES // e
        width, repeat, t = mode.width, mode.repeat, 16 // e  # t: elements per 16-byte chunk
        lbo, sbo = d.leading_byte_offset // e, d.stride_byte_offset // e

        # The pattern holding the tile starts where bits 7.. of (address - 128 * base offset)
        # are zero (PTX: base offset = (pattern start >> 7) & 7 when that is not aligned; the
        # H100 subtracts it, measured: adding or ignoring it mispredicts).
        lead = (d.start_address - 128 * d.base_offset) % repeat if mode else 0
        self.origin = d.start_address - lead
        used_row = K_STEP_BYTES if self.major == "K" else min(rows * e, width)
        if check and mode and lead + used_row > width:
            raise DescriptorError(
                f"start address 0x{d.start_address:x} lies {lead} bytes into its "
                f"{repeat}-byte {mode} swizzle pattern (base offset {d.base_offset}): the tile "
                f"must start in the pattern's first {width}-byte row with its {used_row} bytes "
                f"inside it; align the tile to {repeat} bytes or set base_offset = "
                f"(pattern start >> 7) & 7")
        if self.major == "K":
            row_modes = [(8, width // e), (rows // 8, sbo)]
            col_modes = [(t, 1), (2, lbo)] if not mode else [(k, 1)]
            atom_strides = [("SBO", d.stride_byte_offset, "8-row groups")] if rows > 8 else []
        elif not mode:
            row_modes, col_modes = [(t, 1), (rows // t, sbo)], [(8, t), (2, lbo)]
            atom_strides = []
        else:
            atom = width // e  # MN elements in one atom row
            row_modes = [(atom, 1), (-(-rows // atom), lbo)] if rows > atom else [(rows, 1)]
            col_modes = [(8, width // e), (2, sbo)]
            atom_strides = [("SBO", d.stride_byte_offset, "8-row groups along K")]
            if rows > atom:
                atom_strides.append(("LBO", d.leading_byte_offset, f"{atom}-element atoms "
                                                                   f"along M/N"))
        if check and mode:
            for name, value, what in atom_strides:
                if value % repeat:
                    raise DescriptorError(
                        f"{name} {value} is not a multiple of the {repeat}-byte {mode} swizzle "
                        f"atom: with {self.major}-major {mode} swizzle it steps {what}, which "
                        f"must start whole atoms (PTX: the matrix is made of swizzle atoms)")
        super().__init__(_canonical(rows, k, row_modes, col_modes), _element_swizzle(mode, e),
                         lead // e)
        if check:
            self._check_one_to_one()
        top = self.origin + self.capacity * e
        if top > WINDOW:
            raise DescriptorError(f"the tile reaches byte {top - 1}, beyond the 256 KiB a "
                                  f"descriptor can address")

    def _check_one_to_one(self) -> None:
        flat = self.offsets().ravel()
        order = np.argsort(flat, kind="stable")
        same = np.flatnonzero(flat[order][1:] == flat[order][:-1])
        if same.size:
            a, b = (divmod(int(order[i]), self.shape[1]) for i in (same[0], same[0] + 1))
            d = self.descriptor
            raise DescriptorError(
                f"elements {a} and {b} both read byte 0x{self.address(*a):x}: LBO "
                f"{d.leading_byte_offset} / SBO {d.stride_byte_offset} make the "
                f"{self.major}-major {d.swizzle} tile overlap itself")

    def address(self, row: ArrayLike, col: ArrayLike) -> int | np.ndarray:
        """Absolute shared-memory byte address of element (row, k); arrays broadcast."""
        return self.byte_address(row, col, self.element_bytes, self.origin)

    def addresses(self) -> np.ndarray:
        """Absolute byte addresses of the whole (rows, K) tile."""
        return self.origin + self.offsets() * self.element_bytes

    def visualize(self, line_bytes: int = 128, lines_per_block: int = 8) -> str:
        """Shared memory from ``origin`` in `visualize_layout`'s format, one 16-byte chunk per
        cell, ``line_bytes`` per line (128: all 32 banks): "(r, 8..15)" is row r, k 8..15."""
        return _draw(self, self.element_bytes, line_bytes, lines_per_block)

    def __repr__(self) -> str:
        return (f"DescriptorLayout({self.descriptor!r}, {self.element_bytes}, "
                f"{self.major!r}, rows={self.shape[0]})")

    def __str__(self) -> str:
        return f"{super().__str__()} (elements from 0x{self.origin:x})"


def _draw(layout: TileLayout, element_bytes: int, line_bytes: int, lines_per_block: int) -> str:
    if line_bytes % 16 or line_bytes <= 0:
        raise ValueError(f"line_bytes must be a positive multiple of 16, got {line_bytes}")
    return render_layout(layout, 16 // element_bytes,
                         (line_bytes // element_bytes, lines_per_block))


# --------------------------------------------------------------------------------------------
# The inverse: a tile and the descriptors that read it
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DescriptorTile:
    """A (rows x k) operand tile laid out in shared memory as CuTe's
    ``tile_to_shape(Layout_{major}_{swizzle}_Atom<T>, (rows, k))`` does (atoms M/N first),
    at byte ``start``, and the descriptors of the wgmma k-steps that read it.

    ``layout`` maps (row, k) to element offsets from ``start``; ``offsets`` are bytes;
    ``descriptors[i]`` feeds columns ``i * k_step .. (i + 1) * k_step - 1``; ``nbytes`` is the
    span to allocate (holes included).
    """

    rows: int
    k: int
    element_bytes: int
    major: str
    swizzle: SwizzleMode
    start: int
    layout: TileLayout
    descriptors: tuple[MatrixDescriptor, ...]

    @property
    def k_step(self) -> int:
        """K of one wgmma: 32 bytes of elements."""
        return K_STEP_BYTES // self.element_bytes

    @property
    def offsets(self) -> np.ndarray:
        """Byte offset from ``start`` of every element: an int64 (rows, k) array."""
        return self.layout.offsets() * self.element_bytes

    @property
    def nbytes(self) -> int:
        return self.layout.capacity * self.element_bytes

    def descriptor_layouts(self) -> list[DescriptorLayout]:
        """What each k-step's descriptor reads, as the hardware is modeled to read it."""
        return [d.layout(self.element_bytes, self.major, self.rows) for d in self.descriptors]

    def pack(self, matrix: ArrayLike) -> np.ndarray:
        """The shared-memory bytes (uint8, ``(..., nbytes)``) holding ``matrix`` (``(...,
        rows, k)``, any dtype of ``element_bytes``), so that the descriptors read it back."""
        m = native_order(np.ascontiguousarray(matrix))  # the bytes shared memory holds
        if m.shape[-2:] != (self.rows, self.k) or m.dtype.itemsize != self.element_bytes:
            raise ValueError(f"expected (..., {self.rows}, {self.k}) elements of "
                             f"{self.element_bytes} bytes, got {m.shape} {m.dtype}")
        bits = m.view(f"u{self.element_bytes}")
        out = np.zeros(m.shape[:-2] + (self.layout.capacity,), bits.dtype)
        out[..., self.layout.offsets().ravel()] = bits.reshape(m.shape[:-2] + (-1,))
        return out.view(np.uint8)

    def unpack(self, data: ArrayLike, dtype: np.dtype | type | str) -> np.ndarray:
        """The (..., rows, k) matrix of ``dtype`` that the bytes ``data`` (..., >= nbytes)
        hold: the inverse of `pack`."""
        try:
            want = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"unpack: dtype {dtype!r} is not a numpy dtype (the tile holds "
                            f"{self.element_bytes}-byte elements)") from None
        if want.itemsize != self.element_bytes:
            raise DescriptorError(f"unpack: dtype {want} is not {self.element_bytes} bytes, "
                                  f"the tile's element")
        raw = _shared_bytes(data, self.nbytes)[..., :self.nbytes]
        # Shared memory is little-endian: read it so, and give the numbers in ``want``.
        values = np.ascontiguousarray(raw).view(want.newbyteorder("<")).astype(want, copy=False)
        picked = values[..., self.layout.offsets().ravel()]
        return picked.reshape(raw.shape[:-1] + (self.rows, self.k))

    def visualize(self, line_bytes: int = 128, lines_per_block: int = 8) -> str:
        """The tile's shared memory from ``start``, as `DescriptorLayout.visualize` draws it."""
        return _draw(self.layout, self.element_bytes, line_bytes, lines_per_block)


def _shared_bytes(data: ArrayLike, nbytes: int) -> np.ndarray:
    """``data`` as uint8 bytes (..., >= nbytes), checked: integers 0..255, never wrapped."""
    arr = np.asarray(data) if isinstance(data, np.ndarray) else np.array(data, dtype=object)
    if arr.dtype != np.uint8:
        arr = integer_array(arr, "unpack data", limit=256, limit_text=" (a byte is 0..255)",
                            error=DescriptorError)[0].astype(np.uint8)
    if arr.ndim == 0 or arr.shape[-1] < nbytes:
        raise DescriptorError(f"unpack data must be bytes of shape (..., >= {nbytes}), the "
                              f"tile's span; got shape {arr.shape}")
    return arr


def canonical_tile(rows: int, k: int, element: int | str, major: str = "K",
                   swizzle: SwizzleMode | str = "128B", start: int = 0) -> DescriptorTile:
    """The canonical shared-memory tile for wgmma operands of (rows x k) elements.

    ``rows``: M (64 for A) or N (B), a multiple of 8 up to 256; ``k``: a multiple of one
    wgmma's K (32 bytes of elements). Atoms (PTX Table "swizzle atom layout") are stacked
    along M/N first, then along K, as CuTe's ``tile_to_shape`` does. ``start`` is the tile's
    byte address: 16-byte aligned without swizzle; with swizzle, aligned to the pattern's
    repeat, or to 128 bytes with the PTX base offset ``(start >> 7) & 7`` (both read back
    as intended on the H100, see docs/descriptors.md).
    """
    e = _element_bytes(element)
    major = _major(major)
    mode = SwizzleMode.parse(swizzle)
    rows = _rows(rows)
    step = K_STEP_BYTES // e
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < step or k % step:
        raise DescriptorError(f"k must be a positive multiple of one wgmma's K = {step} "
                              f"{e}-byte elements, got {k!r}")
    if rows * k * e > WINDOW:  # before the layout is tabulated: it could not be addressed
        raise DescriptorError(f"a {rows}x{k} tile of {e}-byte elements needs {rows * k * e} "
                              f"bytes, more than the {WINDOW} a descriptor can address")
    if major == "MN" and e != 2:
        raise DescriptorError(f"MN-major (transposed) operands exist only for f16/bf16 (PTX: "
                              f"imm-trans), not for {e}-byte elements")
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or start < 0 \
            or start % 16:
        raise DescriptorError(f"start must be a 16-byte aligned address, got {start!r}")
    base_offset = 0
    if mode and start % mode.repeat:
        if start % 128:
            raise DescriptorError(f"start 0x{start:x}: a {mode}-swizzled tile starts on a "
                                  f"{mode.repeat}-byte boundary, or on a 128-byte one with "
                                  f"a base offset")
        base_offset = (start >> 7) & 7  # PTX: (pattern start addr >> 0x7) & 0x7

    width, repeat, kb = mode.width, mode.repeat, k * e
    if major == "K":
        # Rows of `width` bytes in 8-row atoms; atoms down M/N, then across K.
        rm = [(8, width // e), (rows // 8, repeat // e)]
        col_step = rows * width  # bytes from one atom column to the next
        cm = [(width // e, 1), (-(-kb // width), col_step // e)] if kb > width else [(k, 1)]
        if mode:
            lbo, sbo = 16, repeat  # LBO unused; CuTe writes 1 (16 bytes)
        else:
            lbo, sbo = col_step, 128
        starts = [start + (s // width) * col_step + s % width
                  for s in range(0, kb, K_STEP_BYTES)]
    else:
        atom = width // e  # M/N elements per atom row (t without swizzle)
        atoms = -(-rows // atom)
        rm = [(atom, 1), (atoms, repeat // e)] if rows > atom else [(rows, 1)]
        cm = [(8, width // e), (k // 8, atoms * repeat // e)]
        if mode:
            lbo, sbo = repeat, atoms * repeat
        else:
            lbo, sbo = atoms * repeat, repeat
        kgroup = sbo if mode else lbo  # bytes between 8-row groups along K
        starts = [start + 2 * i * kgroup for i in range(k // step)]
    layout = Swizzled(_canonical(rows, k, rm, cm), _element_swizzle(mode, e))
    if start + layout.capacity * e > WINDOW:
        raise DescriptorError(f"the tile at 0x{start:x} spans {layout.capacity * e} bytes, "
                              f"beyond the 256 KiB a descriptor can address")
    descriptors = tuple(MatrixDescriptor(s, lbo, sbo, base_offset, mode) for s in starts)
    return DescriptorTile(rows, k, e, major, mode, start, layout, descriptors)
