"""wgmma matrix descriptors: the 64-bit format against the PTX ISA and CuTe's GmmaDescriptor,
layouts worked out by hand from the PTX text, CuTe's GMMA layout atoms and canonical forms
evaluated independently here, the errors for illegal descriptors, and the doc's pictures.

Sources: PTX ISA 9.7.15.5.1.2.2 "Matrix Descriptor Format" and 9.7.15.5.1.2 "Shared Memory
Matrix Layout"; NVIDIA/cutlass commit 7107b05535f8977f5ecb9d01ee203205b1fd9bc4,
include/cute/arch/mma_sm90_desc.hpp and include/cute/atom/mma_traits_sm90_gmma.hpp.
"""

import contextlib
import dataclasses
import io
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcsim.memory import (
    DescriptorError,
    DescriptorLayout,
    Layout,
    MatrixDescriptor,
    RowMajor,
    Swizzle,
    Swizzled,
    SwizzleMode,
    canonical_tile,
)
from tcsim.memory.descriptors import WINDOW

MODES = [SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128]

# ------------------------------------------------------------------------------------------
# The 64-bit value
# ------------------------------------------------------------------------------------------

# CuTe's GmmaDescriptor (mma_sm90_desc.hpp lines 110-125) is a union of a uint64_t and a
# bitfield struct of uint16 start_address_:14,:2 / uint16 leading_byte_offset_:14,:2 /
# uint16 stride_byte_offset_:14,:2 / uint8 :1,base_offset_:3,:4 / uint8 :6,layout_type_:2;
# allocated from bit 0 up that puts the fields at these bits (lowest bit, width):
CUTE_BITFIELD = {"start_address": (0, 14), "leading_byte_offset": (16, 14),
                 "stride_byte_offset": (32, 14), "base_offset": (49, 3), "layout_type": (62, 2)}
# LayoutType (mma_sm90_desc.hpp lines 48-53): INTERLEAVE = 0, B128 = 1, B64 = 2, B32 = 3.
CUTE_LAYOUT_TYPE = {"INTERLEAVE": 0, "B128": 1, "B64": 2, "B32": 3}


def test_encode_by_hand_from_the_ptx_table():
    # PTX: bits 13-0 = (start & 0x3FFFF) >> 4, 29-16 = LBO >> 4, 45-32 = SBO >> 4,
    # 51-49 base offset, 63-62 swizzle mode (0 none, 1 128B, 2 64B, 3 32B).
    # start 0x400 -> 0x40; LBO 128 -> 8 << 16 = 0x80000; SBO 256 -> 16 << 32 = 0x10_0000_0000.
    d = MatrixDescriptor(0x400, 128, 256)
    assert d.encode() == 0x0000_0010_0008_0040
    # start 0x2080 -> 0x208; LBO 16 -> 1 << 16; SBO 1024 -> 64 << 32 = 0x40_0000_0000;
    # base offset 1 -> 1 << 49 = 0x2_0000_0000_0000; 128B -> 1 << 62 = 0x4000_0000_0000_0000.
    sw = MatrixDescriptor(0x2080, 16, 1024, 1, "128B")
    assert sw.encode() == 0x4002_0040_0001_0208
    assert MatrixDescriptor(0, 0, 0, 0, "64B").encode() == 2 << 62
    assert MatrixDescriptor(0, 0, 0, 0, "32B").encode() == 3 << 62
    # the largest values fill their fields exactly
    top = MatrixDescriptor(WINDOW - 16, WINDOW - 16, WINDOW - 16, 7, "32B").encode()
    assert top == 0x3FFF | 0x3FFF << 16 | 0x3FFF << 32 | 7 << 49 | 3 << 62


def test_fields_sit_where_cutes_bitfield_puts_them():
    names = {"start_address": "start_address", "leading_byte_offset": "leading_byte_offset",
             "stride_byte_offset": "stride_byte_offset", "base_offset": "base_offset"}
    for ours, theirs in names.items():
        low, width = CUTE_BITFIELD[theirs]
        top = (1 << width) - 1
        kwargs = {"start_address": 0, "leading_byte_offset": 0, "stride_byte_offset": 0,
                  "base_offset": 0, "swizzle": "128B"}
        kwargs[ours] = top if ours == "base_offset" else top << 4
        assert MatrixDescriptor(**kwargs).encode() == top << low | 1 << 62, ours
    low, width = CUTE_BITFIELD["layout_type"]
    for name, code in CUTE_LAYOUT_TYPE.items():
        mode = SwizzleMode.parse("none" if name == "INTERLEAVE" else f"{name[1:]}B")
        assert int(mode) == code
        assert MatrixDescriptor(0, 0, 0, swizzle=mode).encode() == code << low


def test_decode_by_hand():
    d = MatrixDescriptor.decode(0x4002_0040_0001_0208)
    assert d == MatrixDescriptor(0x2080, 16, 1024, 1, SwizzleMode.B128)
    assert d.swizzle is SwizzleMode.B128
    assert MatrixDescriptor.decode(np.uint64(0x10_0008_0040)) == MatrixDescriptor(1024, 128, 256)
    assert "LBO 128, SBO 256" in str(MatrixDescriptor(1024, 128, 256))


descriptors = st.builds(
    lambda start, lbo, sbo, mode, bo: MatrixDescriptor(16 * start, 16 * lbo, 16 * sbo,
                                                       bo if mode else 0, mode),
    st.integers(0, 2**14 - 1), st.integers(0, 2**14 - 1), st.integers(0, 2**14 - 1),
    st.sampled_from(MODES), st.integers(0, 7))


@given(descriptors)
def test_encode_decode_round_trip(d):
    value = d.encode()
    assert 0 <= value < 2**64
    assert MatrixDescriptor.decode(value) == d


@given(st.integers(0, 2**14 - 1), st.integers(0, 2**14 - 1), st.integers(0, 2**14 - 1),
       st.integers(0, 7), st.integers(0, 3))
def test_every_legal_value_decodes_and_encodes_back(start, lbo, sbo, bo, mode):
    bo = bo if mode else 0
    value = start | lbo << 16 | sbo << 32 | bo << 49 | mode << 62
    assert MatrixDescriptor.decode(value).encode() == value


def test_bad_values_are_named():
    with pytest.raises(DescriptorError, match=r"reserved bits \[14\]"):
        MatrixDescriptor.decode(1 << 14)
    with pytest.raises(DescriptorError, match=r"reserved bits \[46, 52, 61\]"):
        MatrixDescriptor.decode(1 << 46 | 1 << 52 | 1 << 61)
    with pytest.raises(DescriptorError, match="64-bit unsigned"):
        MatrixDescriptor.decode(1 << 64)
    with pytest.raises(DescriptorError, match="64-bit unsigned"):
        MatrixDescriptor.decode(-1)
    with pytest.raises(DescriptorError, match="base offset 2 with no swizzle"):
        MatrixDescriptor.decode(2 << 49)


def test_bad_fields_are_named():
    with pytest.raises(DescriptorError, match="start address 24 is not a multiple of 16"):
        MatrixDescriptor(24, 0, 0)
    with pytest.raises(DescriptorError, match=r"start address 262144 does not fit the 14-bit "
                                              r"field .* 256 KiB"):
        MatrixDescriptor(WINDOW, 0, 0)
    with pytest.raises(DescriptorError, match=r"leading byte offset \(LBO\) 40 is not a mult"):
        MatrixDescriptor(0, 40, 0)
    with pytest.raises(DescriptorError, match=r"stride byte offset \(SBO\) 262144 does not fit"):
        MatrixDescriptor(0, 0, WINDOW)
    with pytest.raises(DescriptorError, match="non-negative"):
        MatrixDescriptor(-16, 0, 0)
    with pytest.raises(DescriptorError, match="base offset must be 0..7"):
        MatrixDescriptor(0, 0, 0, 8, "128B")
    with pytest.raises(DescriptorError, match="unknown swizzle mode '16B'"):
        MatrixDescriptor(0, 0, 0, swizzle="16B")
    with pytest.raises(DescriptorError, match="unknown swizzle mode 1"):
        MatrixDescriptor(0, 0, 0, swizzle=1)  # a PTX code must say which: SwizzleMode(1)
    assert issubclass(DescriptorError, ValueError)


def test_swizzle_mode_geometry():
    # PTX: the pattern repeats every 1024 / 512 / 256 bytes for 128B / 64B / 32B; CuTe's
    # atoms are Swizzle<3,4,3>, <2,4,3>, <1,4,3> (and <0,4,3> for INTERLEAVE) on bytes.
    assert [(m.width, m.repeat, str(m.swizzle)) for m in MODES] == [
        (16, 128, "Swizzle<0,4,3>"), (32, 256, "Swizzle<1,4,3>"),
        (64, 512, "Swizzle<2,4,3>"), (128, 1024, "Swizzle<3,4,3>")]
    assert [str(m) for m in MODES] == ["none", "32B", "64B", "128B"]
    assert SwizzleMode.parse("interleave") is SwizzleMode.NONE
    assert SwizzleMode.parse(" 128b ") is SwizzleMode.B128


# ------------------------------------------------------------------------------------------
# Layouts worked out by hand from the PTX text
# ------------------------------------------------------------------------------------------


def test_no_swizzle_k_major_as_measured_on_the_h100():
    # design.md (H100): for no-swizzle K-major, LBO is the distance between 8x16-byte core
    # matrices along K and SBO the distance along M. A 64x16 f16 tile, LBO 128, SBO 256:
    # core matrix (r // 8, k // 8) starts at (r // 8) * SBO + (k // 8) * LBO; within it row
    # r % 8 is 16 bytes (8 f16) at (r % 8) * 16, element k % 8 at 2 * (k % 8).
    layout = MatrixDescriptor(0x800, 128, 256).layout("f16", "K", rows=64)
    r, k = np.indices((64, 16))
    expected = 0x800 + (r // 8) * 256 + (k // 8) * 128 + (r % 8) * 16 + (k % 8) * 2
    assert np.array_equal(layout.addresses(), expected)
    assert layout.address(9, 10) == 0x800 + 256 + 128 + 16 + 4
    assert layout.origin == 0x800 and layout.shape == (64, 16)
    assert str(layout.layout) == "((8,8),(8,2)):((8,128),(1,64))"  # in elements


def test_128b_swizzle_k_major_64x64_f16_by_hand():
    # A 64x64 f16 K-major tile with 128B swizzle: one 128-byte line per M row (64 f16 = 8
    # chunks of 16 bytes), 8-row atoms 1024 bytes apart (SBO), and the 16-byte chunk index
    # XOR-ed with row % 8 (address bits 4-6 ^= bits 7-9). Four wgmma k-steps of 16, each a
    # descriptor whose start moves 32 bytes along the line; LBO unused (CuTe writes 1 = 16 B).
    tile = canonical_tile(64, 64, "f16", "K", "128B", start=0x4000)
    r, k = np.indices((64, 64))
    expected = (r // 8) * 1024 + (r % 8) * 128 + (((k // 8) ^ (r % 8)) * 16) + (k % 8) * 2
    assert np.array_equal(tile.offsets, expected)
    assert tile.nbytes == 8192
    assert tile.descriptors == tuple(MatrixDescriptor(0x4000 + 32 * i, 16, 1024, 0, "128B")
                                     for i in range(4))
    # element (10, 37): row 10 -> atom 1, line 2; chunk 37 // 8 = 4 -> 4 ^ 2 = 6; 37 % 8 = 5
    assert tile.offsets[10, 37] == 1024 + 2 * 128 + 6 * 16 + 5 * 2
    # the third k-step's descriptor reads columns 32..47 from the same bytes
    third = tile.descriptors[2].layout("f16", "K", rows=64)
    assert third.address(10, 5) == 0x4000 + tile.offsets[10, 37]


def test_128b_k_major_is_cutlass_row_major_swizzle_3_3_3():
    # A K-major 128B tile whose K is one 128-byte line is row-major under Swizzle<3,3,3> on
    # f16 offsets, i.e. the layouts module's Swizzled(RowMajor(rows, 64), Swizzle(3, 3, 3)).
    for rows in (8, 64, 256):
        tile = canonical_tile(rows, 64, "bf16", "K", "128B")
        assert np.array_equal(tile.layout.offsets(),
                              Swizzled(RowMajor(rows, 64), Swizzle(3, 3, 3)).offsets())


def test_tf32_and_8_bit_k_major_128b_by_hand():
    # tf32: a k-step is 8 elements (32 bytes), a chunk 4; e4m3: a k-step is 32, a chunk 16.
    tf32 = canonical_tile(16, 32, "tf32", "K", "128B")
    assert tf32.offsets[9, 13] == 1024 + 128 + ((13 // 4) ^ 1) * 16 + (13 % 4) * 4
    fp8 = canonical_tile(8, 128, "e4m3", "K", "128B")
    assert fp8.offsets[3, 70] == 3 * 128 + ((70 // 16) ^ 3) * 16 + 70 % 16
    assert len(tf32.descriptors) == 4 and len(fp8.descriptors) == 4


def test_32b_and_64b_k_major_by_hand():
    # 64B: rows of 64 bytes, two per 128-byte line; Swizzle<2,4,3> XORs chunk bits 4-5 with
    # address bits 7-8, the line index (row // 2), so rows 2 and 3 swap chunks 0<->1, 2<->3.
    t64 = canonical_tile(16, 32, "f16", "K", "64B")
    assert t64.offsets[2, 0] == 2 * 64 + 16 and t64.offsets[3, 9] == 3 * 64 + 0 + 2
    assert t64.offsets[8, 0] == 512  # the next 8-row atom, SBO = 512
    assert [d.start_address for d in t64.descriptors] == [0, 32]
    # 32B: rows of 32 bytes, four per line; bit 4 ^= bit 7, so lines 1, 3 swap the 2 chunks.
    t32 = canonical_tile(8, 16, "f16", "K", "32B")
    assert [int(t32.offsets[r, 0]) for r in range(8)] == [0, 32, 64, 96, 144, 176, 208, 240]
    # K wider than a 32-byte row: the next atom column sits rows * 32 bytes further
    wide = canonical_tile(16, 32, "f16", "K", "32B")
    assert wide.offsets[0, 16] == 16 * 32
    assert wide.descriptors[1] == MatrixDescriptor(512, 16, 256, 0, "32B")


def test_mn_major_by_hand():
    # No swizzle, MN-major (CuTe ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))): a core matrix is 8
    # M-elements (16 bytes) x 8 k, one 16-byte row per k; SBO steps 8 M-elements, LBO 8 k.
    layout = MatrixDescriptor(0, 2048, 128).layout("f16", "MN", rows=64)
    m, k = np.indices((64, 16))
    expected = (m // 8) * 128 + (m % 8) * 2 + (k % 8) * 16 + (k // 8) * 2048
    assert np.array_equal(layout.addresses(), expected)
    # 128B swizzle, MN-major: a 128-byte line per k holds 64 consecutive M elements, its
    # chunk index XOR k % 8; SBO steps 8 k (the next atom along K), LBO 64 M (along M/N).
    tile = canonical_tile(128, 16, "f16", "MN", "128B")
    m, k = np.indices((128, 16))
    expected = ((m % 64 // 8) ^ (k % 8)) * 16 + (m % 8) * 2 + (k % 8) * 128 \
        + (m // 64) * 1024 + (k // 8) * 2048
    assert np.array_equal(tile.offsets, expected)
    assert tile.descriptors == (MatrixDescriptor(0, 1024, 2048, 0, "128B"),)


# ------------------------------------------------------------------------------------------
# Every legal mode: bijections, and descriptors that read back the tile
# ------------------------------------------------------------------------------------------

CASES = [(major, e, mode, rows)
         for major, sizes in (("K", (1, 2, 4)), ("MN", (2,)))
         for e in sizes for mode in MODES for rows in (8, 16, 64, 72, 256)]


@pytest.mark.parametrize("major, e, mode, rows", CASES)
def test_canonical_tiles_are_bijections_read_back_by_their_descriptors(major, e, mode, rows):
    k = 4 * 32 // e  # four wgmma k-steps
    start = 3 * 1024 if mode else 0x1230
    tile = canonical_tile(rows, k, e, major, mode, start=start)
    offsets = tile.offsets
    assert offsets.shape == (rows, k) and (offsets % e == 0).all()
    assert len(np.unique(offsets)) == rows * k  # one-to-one
    whole_atoms = major == "K" or rows % (mode.width // e) == 0
    if whole_atoms:  # and onto: the elements fill the span exactly
        assert tile.nbytes == rows * k * e
        assert np.array_equal(np.sort(offsets.ravel()), np.arange(0, tile.nbytes, e))
    # the descriptors, decoded from their 64-bit values, read the tile's columns back
    layouts = [MatrixDescriptor.decode(d.encode()).layout(e, major, rows)
               for d in tile.descriptors]
    assert len(layouts) == 4
    for i, layout in enumerate(layouts):
        step = 32 // e
        assert np.array_equal(layout.addresses(), start + offsets[:, i * step:(i + 1) * step])
        flat = layout.addresses().ravel()
        assert len(np.unique(flat)) == flat.size


@pytest.mark.parametrize("major, e, mode, rows", CASES[::3])
def test_pack_and_unpack(major, e, mode, rows, rng):
    tile = canonical_tile(rows, 64 // e, e, major, mode)
    dtype = {1: np.uint8, 2: np.float16, 4: np.float32}[e]
    matrix = rng.standard_normal((3, rows, tile.k)).astype(dtype) if e > 1 else \
        rng.integers(0, 256, (3, rows, tile.k), dtype=np.uint8)
    data = tile.pack(matrix)
    assert data.dtype == np.uint8 and data.shape == (3, tile.nbytes)
    assert np.array_equal(tile.unpack(data, dtype), matrix)
    # what the tensor core reads through descriptor i is columns i*k_step.. of the matrix
    smem = np.zeros((3, 1 << 16), np.uint8)
    smem[:, :tile.nbytes] = data
    for i, layout in enumerate(tile.descriptor_layouts()):
        read = smem.view(dtype)[:, layout.addresses() // e]
        assert np.array_equal(read, matrix[:, :, i * tile.k_step:(i + 1) * tile.k_step])


def test_pack_checks_its_input():
    tile = canonical_tile(8, 16, "f16")
    with pytest.raises(ValueError, match=r"expected \(\.\.\., 8, 16\) elements of 2 bytes"):
        tile.pack(np.zeros((8, 16), np.float32))
    with pytest.raises(ValueError, match="not 2 bytes"):
        tile.unpack(np.zeros(tile.nbytes, np.uint8), np.float32)


def test_base_offset_moves_the_pattern_with_the_tile():
    # PTX: base offset = (pattern start addr >> 7) & 7 when the pattern does not start on its
    # repeat boundary. The swizzle reads address bits 7.. minus the base offset (measured on
    # the H100 below), so a tile at 1024*n + 128*b with base offset b has the aligned tile's
    # bytes, shifted.
    aligned = canonical_tile(64, 64, "f16", "K", "128B", start=4096)
    for start in (4096 + 384, 4096 + 896):
        moved = canonical_tile(64, 64, "f16", "K", "128B", start=start)
        assert [d.base_offset for d in moved.descriptors] == [(start >> 7) & 7] * 4
        assert np.array_equal(moved.offsets, aligned.offsets)
        for d, layout in zip(moved.descriptors, moved.descriptor_layouts(), strict=True):
            assert layout.origin == start and d.start_address - start < 128
        for i, layout in enumerate(moved.descriptor_layouts()):
            assert np.array_equal(layout.addresses(), start + moved.offsets[:, 16 * i:16 * i + 16])
    t64 = canonical_tile(8, 32, "f16", "K", "64B", start=128)  # 64B: repeat 512, base 1
    assert t64.descriptors[0].base_offset == 1
    assert np.array_equal(t64.offsets, canonical_tile(8, 32, "f16", "K", "64B").offsets)


# ------------------------------------------------------------------------------------------
# CuTe cross-checks (definitions copied as data, evaluated here independently)
# ------------------------------------------------------------------------------------------

# mma_traits_sm90_gmma.hpp lines 75-84: the GMMA layout atoms in units of bits, as
# name: (swizzle BBits, (shape), (stride)); each is Swizzle<B,4,3> o smem_ptr o shape:stride,
# the swizzle acting on the byte address. Layout_*_Atom<T> = upcast<sizeof_bits<T>> of these.
CUTE_ATOMS_BITS = {
    "Layout_MN_INTER_Atom_Bits": (0, (128, 8), (1, 128)),
    "Layout_MN_SW32_Atom_Bits": (1, (256, 8), (1, 256)),
    "Layout_MN_SW64_Atom_Bits": (2, (512, 8), (1, 512)),
    "Layout_MN_SW128_Atom_Bits": (3, (1024, 8), (1, 1024)),
    "Layout_K_INTER_Atom_Bits": (0, (8, 128), (128, 1)),
    "Layout_K_SW32_Atom_Bits": (1, (8, 256), (256, 1)),
    "Layout_K_SW64_Atom_Bits": (2, (8, 512), (512, 1)),
    "Layout_K_SW128_Atom_Bits": (3, (8, 1024), (1024, 1)),
}
ATOM_MODE = {"INTER": SwizzleMode.NONE, "SW32": SwizzleMode.B32, "SW64": SwizzleMode.B64,
             "SW128": SwizzleMode.B128}


def _upcast(shape, stride, bits):
    """CuTe's upcast<N> of a layout whose unit-stride mode is the contiguous one."""
    return (tuple(s // bits if d == 1 else s for s, d in zip(shape, stride, strict=True)),
            tuple(d if d == 1 else d // bits for d in stride))


def _tile_to_shape(shape, stride, rows, cols):
    """Element offsets of CuTe's tile_to_shape(atom, (rows, cols)): atoms column-major (the
    first mode first), each atom's elements at the atom's own shape:stride."""
    r, c = np.indices((rows, cols))
    atom = r % shape[0] * stride[0] + c % shape[1] * stride[1]
    index = r // shape[0] + (c // shape[1]) * (rows // shape[0])
    return atom + index * shape[0] * shape[1]


@pytest.mark.parametrize("name, e", [(name, e) for name in CUTE_ATOMS_BITS for e in (1, 2, 4)
                                     if "_K_" in name or e == 2])  # MN-major: 16-bit only
def test_canonical_tiles_are_cutes_gmma_atoms_tiled(name, e):
    bits, shape_bits, stride_bits = CUTE_ATOMS_BITS[name]
    major, kind = name.split("_")[1:3]
    mode = ATOM_MODE[kind]
    shape, stride = _upcast(shape_bits, stride_bits, 8 * e)
    # atoms as (MN, K); a tile of 2 atoms along MN (at least 8 rows) and enough K for whole
    # wgmma k-steps
    rows = max(2 * shape[0], 16)
    cols = max(shape[1], 32 // e) * 2
    tile = canonical_tile(rows, cols, e, major, mode)
    cute = Swizzle(bits, 4, 3)(e * _tile_to_shape(shape, stride, rows, cols))
    assert np.array_equal(tile.offsets, cute), name


def _cute_eval(shape, stride, index):
    """Evaluate one CuTe mode (an int or a tuple, first sub-mode fastest, the last taking the
    rest) at integer array ``index``."""
    if isinstance(shape, int):
        return index * stride
    out = np.zeros_like(index)
    for s, d in zip(shape[:-1], stride[:-1], strict=True):
        out += index % s * d
        index = index // s
    return out + index * stride[-1]


def _cute_canonical(major, mode, e, lbo, sbo):
    """make_gmma_desc's canonical layouts (mma_traits_sm90_gmma.hpp lines 160-189), in
    elements, with T = 16 / e and w = 2, 4, 8 for 32B, 64B, 128B (1 for INTERLEAVE):
      K  INTERLEAVE : ((8,m),(T,2)):((1T,SBO),(1,LBO))
      K  B32/64/128 : ((8,m),(T,2)):((wT,SBO),(1,T))
      MN INTERLEAVE : ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))
      MN B32/64/128 : ((T,w,m),(8,k)):((1,T,LBO),(wT,SBO))"""
    t, w = 16 // e, mode.width // 16
    if major == "K" and mode is SwizzleMode.NONE:
        return ((8, 99), (t, 2)), ((1 * t, sbo), (1, lbo))
    if major == "K":
        return ((8, 99), (t, 2)), ((w * t, sbo), (1, t))
    if mode is SwizzleMode.NONE:
        return ((t, 1, 99), (8, 2)), ((1, t, sbo), (1 * t, lbo))
    return ((t, w, 99), (8, 2)), ((1, t, lbo), (w * t, sbo))


@pytest.mark.parametrize("major, e", [("K", 1), ("K", 2), ("K", 4), ("MN", 2)])
@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=40, deadline=None)
@given(start=st.integers(0, 2**12), lbo=st.integers(0, 256), sbo=st.integers(0, 256),
       rows=st.integers(1, 32))
def test_descriptor_layout_is_cutes_canonical_form(major, e, mode, start, lbo, sbo, rows):
    # Any field values (check=False: no legality rules), base offset 0 as CuTe writes it:
    # the address is Swizzle<b,4,3>(start + e * canonical(row, k)).
    d = MatrixDescriptor(16 * start, 16 * lbo, 16 * sbo, 0, mode)
    layout = d.layout(e, major, rows=8 * rows, check=False)
    shape, stride = _cute_canonical(major, mode, e, d.leading_byte_offset // e,
                                    d.stride_byte_offset // e)
    r, k = np.indices(layout.shape)
    linear = _cute_eval(shape[0], stride[0], r) + _cute_eval(shape[1], stride[1], k)
    assert np.array_equal(layout.addresses(), mode.swizzle(d.start_address + e * linear))


def test_descriptor_layout_composes_from_the_layouts_module():
    layout = MatrixDescriptor(1024 + 64, 16, 1024, 0, "128B").layout("f16", rows=64)
    assert isinstance(layout, DescriptorLayout) and isinstance(layout, Swizzled)
    assert isinstance(layout.layout, Layout)  # CuTe's shape:stride, the public type
    assert layout.swizzle == Swizzle(3, 3, 3)  # Swizzle<3,4,3> on bytes, counted in f16
    assert str(layout) == "Swizzle<3,3,3> o 32 + ((8,8),16):((64,512),1) (elements from 0x400)"
    # byte address = origin + 2 * offset, and the offset is Swizzle<3,3,3> of the strided one
    assert np.array_equal(layout.addresses(), 1024 + 2 * layout.offsets())
    again = Swizzled(layout, Swizzle(0, 3, 3))  # an identity swizzle on top: any Layout works
    assert np.array_equal(again.offsets(), layout.offsets())


# ------------------------------------------------------------------------------------------
# Illegal descriptors
# ------------------------------------------------------------------------------------------


def test_swizzled_tile_must_start_on_its_pattern():
    with pytest.raises(DescriptorError, match=r"start address 0x480 lies 128 bytes into its "
                                              r"1024-byte 128B swizzle pattern \(base offset "
                                              r"0\).*base_offset"):
        MatrixDescriptor(1024 + 128, 16, 1024, 0, "128B").layout("f16")
    # the base offset says where the pattern starts: then the same address is legal
    assert MatrixDescriptor(1024 + 128, 16, 1024, 1, "128B").layout("f16").origin == 1152
    # a k-step start inside the first row is legal; one that runs past the row is not
    MatrixDescriptor(512 + 32, 16, 512, 0, "64B").layout("f16")
    with pytest.raises(DescriptorError, match="lies 48 bytes into its 512-byte 64B"):
        MatrixDescriptor(512 + 48, 16, 512, 0, "64B").layout("f16")
    with pytest.raises(DescriptorError, match="lies 16 bytes into its 256-byte 32B"):
        MatrixDescriptor(256 + 16, 16, 256, 0, "32B").layout("f16")
    # MN-major: an 8-wide B tile uses one chunk of the 128-byte row, so it may start at +16
    MatrixDescriptor(16, 1024, 1024, 0, "128B").layout("f16", "MN", rows=8)
    with pytest.raises(DescriptorError, match="lies 16 bytes"):
        MatrixDescriptor(16, 1024, 1024, 0, "128B").layout("f16", "MN", rows=64)


def test_swizzled_strides_must_step_whole_atoms():
    with pytest.raises(DescriptorError, match=r"SBO 512 is not a multiple of the 1024-byte 128B "
                                              r"swizzle atom: with K-major 128B swizzle it "
                                              r"steps 8-row groups"):
        MatrixDescriptor(0, 16, 512, 0, "128B").layout("f16", rows=64)
    MatrixDescriptor(0, 16, 512, 0, "128B").layout("f16", rows=8)  # one group: SBO unused
    MatrixDescriptor(0, 0, 1024, 0, "128B").layout("f16", rows=64)  # LBO is ignored
    with pytest.raises(DescriptorError, match=r"LBO 1040 is not a multiple of the 1024-byte"):
        MatrixDescriptor(0, 1040, 2048, 0, "128B").layout("f16", "MN", rows=128)
    with pytest.raises(DescriptorError, match=r"SBO 256 .* 512-byte 64B .* along K"):
        MatrixDescriptor(0, 512, 256, 0, "64B").layout("f16", "MN", rows=32)


def test_overlapping_tiles_are_named():
    # no swizzle, K-major, LBO 0: both K core matrices read the same bytes
    with pytest.raises(DescriptorError, match=r"elements \(0, 0\) and \(0, 8\) both read byte "
                                              r"0x0: LBO 0 / SBO 128 make the K-major none "
                                              r"tile overlap itself"):
        MatrixDescriptor(0, 0, 128).layout("f16")
    with pytest.raises(DescriptorError, match="overlap"):
        MatrixDescriptor(0, 1024, 64).layout("f16")  # 8-row groups 64 bytes apart
    # check=False models the read anyway (both k halves from one core matrix)
    read = MatrixDescriptor(0, 0, 128).layout("f16", check=False)
    assert read.address(3, 9) == read.address(3, 1)


def test_tile_shape_and_type_errors():
    d = MatrixDescriptor(0, 128, 256)
    with pytest.raises(DescriptorError, match="MN-major .* only for f16/bf16"):
        d.layout("tf32", "MN")
    with pytest.raises(DescriptorError, match="MN-major .* only for f16/bf16"):
        canonical_tile(64, 32, "e4m3", "MN")
    with pytest.raises(DescriptorError, match="rows must be a multiple of 8 from 8 to 256"):
        d.layout("f16", rows=12)
    with pytest.raises(DescriptorError, match="rows must be"):
        d.layout("f16", rows=264)
    with pytest.raises(DescriptorError, match="element 3"):
        d.layout(3)
    with pytest.raises(DescriptorError, match="element 'f64'"):
        d.layout("f64")
    with pytest.raises(DescriptorError, match="major must be 'K' or 'MN'"):
        d.layout("f16", "row")
    with pytest.raises(DescriptorError, match="beyond the 256 KiB"):
        MatrixDescriptor(WINDOW - 256, 128, 256).layout("f16")


def test_canonical_tile_errors():
    with pytest.raises(DescriptorError, match="k must be a positive multiple of one wgmma's "
                                              "K = 16 2-byte elements"):
        canonical_tile(64, 24, "f16")
    with pytest.raises(DescriptorError, match="16-byte aligned"):
        canonical_tile(64, 16, "f16", start=8)
    with pytest.raises(DescriptorError, match=r"start 0x440: a 128B-swizzled tile starts on a "
                                              r"1024-byte boundary, or on a 128-byte one"):
        canonical_tile(64, 16, "f16", start=0x440)
    with pytest.raises(DescriptorError, match="beyond the 256 KiB"):
        canonical_tile(256, 256, "f16", start=WINDOW - 1024)
    assert canonical_tile(64, 16, "f16", "K", "none", start=0x440).descriptors[0].start_address \
        == 0x440


# ------------------------------------------------------------------------------------------
# Pictures
# ------------------------------------------------------------------------------------------


def test_picture_of_a_128b_k_major_tile():
    # one 16-byte chunk per cell, one 128-byte line per text line: row r's chunk c sits at
    # position c ^ r, so the diagonal moves.
    text = canonical_tile(8, 64, "f16", "K", "128B").visualize()
    lines = text.split("\n")
    assert len(lines) == 8
    for r, line in enumerate(lines):
        assert line.split("|") == [f"({r}, {8 * (p ^ r)}..{8 * (p ^ r) + 7})" for p in range(8)]
    # a single k-step reads two chunks per line; the rest of the line is other k-steps' data
    one = MatrixDescriptor(0, 16, 1024, 0, "128B").layout("f16", rows=8).visualize()
    assert one.split("\n")[3] == " | |(3, 8..15)|(3, 0..7)| | | | "


DOC = Path(__file__).resolve().parents[2] / "docs" / "descriptors.md"
PICTURE = re.compile(r"```python\n([^`]*)```\n\nprints\n\n```text\n(.*?)\n```", re.S)


def test_doc_pictures_are_what_the_code_prints_today():
    blocks = PICTURE.findall(DOC.read_text())
    assert len(blocks) >= 4
    for code, shown in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "descriptors.md", "exec"), {})
        assert out.getvalue().rstrip("\n") == shown, code


# ------------------------------------------------------------------------------------------
# On the H100: wgmma reads the bytes the model says (python -m pytest -m hw)
# ------------------------------------------------------------------------------------------

HW_N, HW_IMAGE = 128, 40 * 1024  # B is 128 x K (two 128B atoms along N when MN-major)
HW_TYPES = {"f16": (2, 16), "tf32": (4, 8), "e4m3": (1, 32)}  # element bytes, wgmma K
HW_KERNELS = {("f16", "K", "K"): (0, 0), ("f16", "K", "MN"): (0, 1),
              ("f16", "MN", "K"): (1, 0), ("f16", "MN", "MN"): (1, 1),
              ("tf32", "K", "K"): None, ("e4m3", "K", "K"): None}


def _hw_kernel(dtype, trans):
    """One warpgroup: copy the image to dynamic shared memory (at 0x400 on the H100), then
    D = sum over steps of A_i B_i^T by wgmma m64n128k{K} with the given descriptors, D written
    row-major through the m64nN f32 accumulator map (thread t: row 16*(t/32) + (t%32)/4)."""
    regs, k = HW_N // 2, HW_TYPES[dtype][1]
    outs = ", ".join(f"%{i}" for i in range(regs))
    tail = "" if trans is None else f", {trans[0]}, {trans[1]}"
    name = f"probe_{dtype}_{'x'.join(map(str, trans or ()))}"
    asm = (f'"{{ .reg .pred p; setp.ne.b32 p, %{regs}, 0; wgmma.mma_async.sync.aligned.'
           f'm64n{HW_N}k{k}.f32.{dtype}.{dtype} {{{outs}}}, %{regs + 1}, %{regs + 2}, p, 1, 1'
           f'{tail}; }}"')
    accumulators = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return name, f"""
extern "C" __global__ void {name}(const u32* img, int words, const u64* descs, int steps,
                                  float* out, u32* base_out) {{
  extern __shared__ __align__(1024) unsigned char smem[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) ((u32*)smem)[i] = img[i];
  u32 base;
  asm volatile("{{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }}"
               : "=r"(base) : "l"(smem));
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  float d[{regs}];
#pragma unroll
  for (int i = 0; i < {regs}; ++i) d[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int s = 0; s < steps; ++s) {{
    u64 da = descs[2 * s], db = descs[2 * s + 1];
    asm volatile({asm} : {accumulators} : "r"(s), "l"(da), "l"(db) : "memory");
  }}
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  int t = threadIdx.x, row = 16 * (t / 32) + (t % 32) / 4;
#pragma unroll
  for (int i = 0; i < {HW_N} / 8; ++i) {{
    int col = 8 * i + (t % 4) * 2;
    out[row * {HW_N} + col] = d[4 * i];
    out[row * {HW_N} + col + 1] = d[4 * i + 1];
    out[(row + 8) * {HW_N} + col] = d[4 * i + 2];
    out[(row + 8) * {HW_N} + col + 1] = d[4 * i + 3];
  }}
  if (t == 0) base_out[0] = base;
}}
"""


def _hw_values(dtype, shape, rng):
    """Small integers: every product and sum is exact, so D must match bit for bit."""
    ints = rng.integers(-3, 4, shape).astype(np.float32)
    if dtype == "e4m3":
        import ml_dtypes

        return ints.astype(ml_dtypes.float8_e4m3fn)
    return ints.astype(np.float16 if dtype == "f16" else np.float32)


def _hw_float(raw, dtype):
    if dtype == "e4m3":
        import ml_dtypes

        return raw.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return raw.view(np.float16 if dtype == "f16" else np.float32).astype(np.float64)


def _hw_cases(base, rng):
    """(label, dtype, A major, B major, image, [(A desc, B desc)], intended D or None)."""
    def image(dtype):
        e = HW_TYPES[dtype][0]
        return _hw_values(dtype, HW_IMAGE // e, rng).view(np.uint8).copy()

    def placed(dtype, ma, mb, mode_a, a_at, mode_b="none", k_steps=2):
        e, k = HW_TYPES[dtype]
        img = image(dtype)
        ta = canonical_tile(64, k_steps * k, dtype, ma, mode_a, start=base + a_at)
        tb = canonical_tile(HW_N, k_steps * k, dtype, mb, mode_b, start=base + 16384)
        a, b = _hw_values(dtype, (64, ta.k), rng), _hw_values(dtype, (HW_N, tb.k), rng)
        img[a_at:a_at + ta.nbytes] = ta.pack(a)
        img[16384:16384 + tb.nbytes] = tb.pack(b)
        descs = [(x, y) for x, y in zip(ta.descriptors, tb.descriptors, strict=True)]
        intended = _hw_float(a.view(np.uint8), dtype).reshape(a.shape) @ \
            _hw_float(b.view(np.uint8), dtype).reshape(b.shape).T
        return img, descs, intended

    cases = []
    kinds = [("f16", ma, mb) for ma in ("K", "MN") for mb in ("K", "MN")]
    for dtype, ma, mb in kinds + [("tf32", "K", "K"), ("e4m3", "K", "K")]:
        for mode in MODES:  # canonical tiles: every mode, two k-steps each
            img, descs, intended = placed(dtype, ma, mb, mode, 0, mode)
            cases.append((f"{dtype} A {ma} B {mb} {mode}", dtype, ma, mb, img, descs, intended))
    for mode, at in (("128B", 4096 + 384), ("64B", 4096 + 128), ("32B", 4096 + 128),
                     ("128B", 4096 + 896)):  # base offsets, and the same bytes without one
        img, descs, intended = placed("f16", "K", "K", mode, at)
        cases.append((f"{mode} at +{at - 4096}, base offset {descs[0][0].base_offset}", "f16",
                      "K", "K", img, descs, intended))
        zero = [(dataclasses.replace(a, base_offset=0), b) for a, b in descs]
        cases.append((f"{mode} at +{at - 4096}, base offset 0", "f16", "K", "K", img, zero,
                      None))
    b = MatrixDescriptor(base + 16384, 2048, 128)
    for ma, a in [("K", MatrixDescriptor(0, 0x3FF0, 1024, 0, "128B")),  # junk LBO: unused
                  ("K", MatrixDescriptor(0, 0x1230, 512, 0, "64B")),
                  ("K", MatrixDescriptor(0, 16, 1152, 0, "128B")),  # SBO not whole atoms
                  ("K", MatrixDescriptor(0, 16, 2048, 0, "128B")),
                  ("K", MatrixDescriptor(16, 16, 1024, 0, "128B")),  # start inside a row
                  ("K", MatrixDescriptor(128, 16, 1024, 0, "128B")),  # start at atom row 1
                  ("K", MatrixDescriptor(256 + 16, 16, 256, 0, "32B")),
                  ("K", MatrixDescriptor(0, 128, 256)),  # core matrices K first
                  ("K", MatrixDescriptor(0, 0, 128)),  # both K halves from one core matrix
                  ("MN", MatrixDescriptor(0, 1024, 128)),
                  ("MN", MatrixDescriptor(0, 1024, 1024, 0, "128B")),
                  ("MN", MatrixDescriptor(0, 512, 512, 0, "64B")),
                  ("MN", MatrixDescriptor(16, 1024, 2048, 0, "128B"))]:
        a = dataclasses.replace(a, start_address=a.start_address + base)
        cases.append((f"A {ma}-major {a} (unchecked)", "f16", ma, "K", image("f16"),
                       [(a, b)], None))
    return cases


@pytest.mark.hw
def test_wgmma_reads_what_the_descriptor_layout_says():
    import cupy

    if cupy.cuda.Device().compute_capability != "90":
        pytest.skip("wgmma needs sm_90a (an H100 or H200)")
    kernels = {key: _hw_kernel(key[0], trans) for key, trans in HW_KERNELS.items()}
    source = "typedef unsigned long long u64; typedef unsigned int u32;\n" + "".join(
        src for _, src in kernels.values())
    module = cupy.RawModule(code=source, options=("--std=c++17", "--gpu-architecture=sm_90a"))

    def launch(key, img, descs):
        words = [x.encode() for pair in descs for x in pair] or [0]
        out, base = cupy.zeros((64, HW_N), cupy.float32), cupy.zeros(1, cupy.uint32)
        module.get_function(kernels[key][0])(
            (1,), (128,), (cupy.asarray(img.view(np.uint32)), np.int32(img.size // 4),
                           cupy.asarray(np.array(words, np.uint64)), np.int32(len(descs)), out,
                           base), shared_mem=HW_IMAGE)
        return out.get().astype(np.float64), int(base.get()[0])

    _, base = launch(("f16", "K", "K"), np.zeros(HW_IMAGE, np.uint8), [])
    bad = []
    for label, dtype, ma, mb, img, descs, intended in _hw_cases(base, np.random.default_rng(7)):
        got, _ = launch((dtype, ma, mb), img, descs)
        e, values = HW_TYPES[dtype][0], _hw_float(img, dtype)
        model = np.zeros_like(got)
        for a, b in descs:
            la = a.layout(e, ma, rows=64, check=False)
            lb = b.layout(e, mb, rows=HW_N, check=False)
            model += values[(la.addresses() - base) // e] @ values[(lb.addresses() - base) // e].T
        if not np.array_equal(got, model) or (intended is not None
                                              and not np.array_equal(got, intended)):
            bad.append(label)
    assert not bad, bad
