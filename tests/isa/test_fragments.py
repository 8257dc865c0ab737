"""Fragment maps against entries read off the PTX ISA's figures, and packing round trips."""

import ml_dtypes
import numpy as np
import pytest

import tcsim
from tcsim import fragment

# (qualifier, operand, lane, register) -> matrix elements (row, col) in that register, low half
# first. Read off the PTX ISA's "Matrix Fragments for mma.m16n8k*" figures.
PTX_FIGURES = [
    ("m16n8k8.row.col.f32.f16.f16.f32", "a", 0, 0, [(0, 0), (0, 1)]),
    ("m16n8k8.row.col.f32.f16.f16.f32", "a", 5, 0, [(1, 2), (1, 3)]),
    ("m16n8k8.row.col.f32.f16.f16.f32", "a", 0, 1, [(8, 0), (8, 1)]),
    ("m16n8k8.row.col.f32.f16.f16.f32", "b", 0, 0, [(0, 0), (1, 0)]),
    ("m16n8k8.row.col.f32.f16.f16.f32", "b", 6, 0, [(4, 1), (5, 1)]),
    ("m16n8k16.row.col.f32.f16.f16.f32", "a", 0, 2, [(0, 8), (0, 9)]),
    ("m16n8k16.row.col.f32.f16.f16.f32", "a", 31, 3, [(15, 14), (15, 15)]),
    ("m16n8k16.row.col.f32.f16.f16.f32", "b", 3, 1, [(14, 0), (15, 0)]),
    ("m16n8k8.row.col.f32.tf32.tf32.f32", "a", 1, 0, [(0, 1)]),
    ("m16n8k8.row.col.f32.tf32.tf32.f32", "a", 1, 1, [(8, 1)]),
    ("m16n8k8.row.col.f32.tf32.tf32.f32", "a", 1, 2, [(0, 5)]),
    ("m16n8k8.row.col.f32.tf32.tf32.f32", "b", 9, 1, [(5, 2)]),
    ("m16n8k4.row.col.f32.tf32.tf32.f32", "a", 7, 1, [(9, 3)]),
    ("m16n8k8.row.col.f32.f16.f16.f32", "c", 6, 3, [(9, 5)]),
    ("m16n8k8.row.col.f16.f16.f16.f16", "d", 6, 1, [(9, 4), (9, 5)]),
]


@pytest.mark.parametrize("qualifier, operand, lane, reg, elements", PTX_FIGURES)
def test_maps_agree_with_ptx_figures(qualifier, operand, lane, reg, elements):
    frag = fragment(qualifier, operand)
    for half, (row, col) in enumerate(elements):
        assert frag.locate(row, col) == (lane, reg, half if frag.per_register == 2 else 0)


@pytest.mark.parametrize("qualifier", tcsim.supported_qualifiers())
@pytest.mark.parametrize("operand", "abcd")
def test_pack_unpack_round_trip(qualifier, operand, rng):
    frag = fragment(qualifier, operand)
    bits = rng.integers(0, 1 << frag.element_bits, (3, frag.rows, frag.cols), dtype=np.uint64)
    matrix = frag.format.from_bits(bits.astype(frag.format.uint))
    regs = frag.pack(matrix)
    assert regs.shape == (3, 32, frag.registers) and regs.dtype == np.uint32
    assert np.array_equal(frag.format.to_bits(frag.unpack(regs)), frag.format.to_bits(matrix))


def test_16_bit_elements_share_registers_low_half_first():
    frag = fragment("m16n8k8.row.col.f16.f16.f16.f16", "a")
    A = np.zeros((16, 8), np.float16)
    A[0, 0], A[0, 1] = 1.0, 2.0  # both in lane 0, register 0
    assert frag.pack(A)[0, 0] == (0x4000 << 16) | 0x3C00


def test_table_names_lane_and_register():
    text = str(fragment("m16n8k8.row.col.f32.f16.f16.f32", "a"))
    assert "T0:r0.lo" in text and "T31:r1.hi" in text


def test_wrong_dtype_and_shape_are_named():
    frag = fragment("m16n8k8.row.col.f32.bf16.bf16.f32", "a")
    with pytest.raises(TypeError, match="bfloat16"):
        frag.pack(np.zeros((16, 8), np.float16))
    with pytest.raises(ValueError, match=r"\(\.\.\., 16, 8\)"):
        frag.pack(np.zeros((8, 16), ml_dtypes.bfloat16))
    with pytest.raises(ValueError, match="32, 2"):
        frag.unpack(np.zeros((32, 4), np.uint32))
