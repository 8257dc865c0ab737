"""Shared-memory layouts: CuTe's Swizzle, padded and swizzled tiles, CUTLASS's tensor-op
multiplicand layouts (values worked out by hand from tensor_op_multiplicand_sm75.h), their
bank behaviour under ldmatrix, and visualize_layout's text against CUTLASS's own example."""

import numpy as np
import pytest

from tcsim.memory import access
from tcsim.memory.layouts import (
    ColumnMajor,
    ColumnMajorTensorOpMultiplicandCongruous,
    ColumnMajorTensorOpMultiplicandCrosswise,
    RowMajor,
    RowMajorTensorOpMultiplicandCongruous,
    RowMajorTensorOpMultiplicandCrosswise,
    Swizzle,
    Swizzled,
    TensorOpMultiplicand,
    TensorOpMultiplicandCongruous,
    TensorOpMultiplicandCrosswise,
    visualize_layout,
)

LDMATRIX_X4 = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
LANES = np.arange(32)

# ------------------------------------------------------------------------------------------
# Swizzle
# ------------------------------------------------------------------------------------------


def test_swizzle_3_3_3_by_hand():
    sw = Swizzle(3, 3, 3)
    # yyy_mask = 0b111 << (3 + 3) = 0b111_000_000; zzz_mask = 0b111 << 3 = 0b000_111_000
    assert (sw.yyy_mask, sw.zzz_mask) == (0b111_000_000, 0b000_111_000)
    assert sw(0) == 0
    assert sw(7) == 7  # the low 3 bits (an 8-element, 16-byte vector) never move
    assert sw(64) == 72  # 0b001_000_000: YYY=001 flips ZZZ to 001 -> 0b001_001_000
    assert sw(349) == 373  # 0b101_011_101: ZZZ 011 ^ 101 = 110 -> 0b101_110_101
    assert sw(511) == 455  # 0b111_111_111: ZZZ 111 ^ 111 = 000 -> 0b111_000_111
    assert sw(512 + 64) == 584  # bits above YYY ride along: 576 ^ 8
    assert isinstance(sw(349), int)


def test_swizzle_masks_and_negative_shift():
    # swizzle.hpp's own example: make_swizzle<0b11000000, 0b00000110>() -> Swizzle<2,1,5>
    sw = Swizzle(2, 1, 5)
    assert (sw.yyy_mask, sw.zzz_mask) == (0b11000000, 0b00000110)
    # A negative shift moves YYY left: Swizzle<2,0,-3> has YYY = bits 0-1, ZZZ = bits 3-4.
    neg = Swizzle(2, 0, -3)
    assert (neg.yyy_mask, neg.zzz_mask) == (0b00011, 0b11000)
    assert neg(1) == 9  # 0b00001 -> ZZZ ^= 01 -> 0b01001
    assert neg(27) == 3  # 0b11011: ZZZ 11 ^ 11 = 00 -> 0b00011
    assert Swizzle(3, 4) == Swizzle(3, 4, 3)  # CuTe's SShift defaults to BBits


@pytest.mark.parametrize("bits, base, shift", [(3, 3, 3), (3, 4, 3), (2, 4, 3), (1, 0, 1),
                                               (2, 1, 5), (2, 0, -3), (3, 2, -4), (0, 3, 0)])
def test_swizzle_is_an_involutive_bijection_on_its_domain(bits, base, shift):
    sw = Swizzle(bits, base, shift)
    domain = np.arange(1 << (base + abs(shift) + bits))
    out = sw(domain)
    assert out.dtype == np.int64 and out.shape == domain.shape
    assert np.array_equal(np.sort(out), domain)  # a permutation of its domain
    assert np.array_equal(sw(out), domain)  # its own inverse
    assert [sw(int(x)) for x in domain[:50]] == out[:50].tolist()  # ints agree with arrays


def test_swizzle_on_bytes_equals_swizzle_on_f16_elements():
    x = np.arange(4096)
    assert np.array_equal(Swizzle(3, 4, 3)(2 * x), 2 * Swizzle(3, 3, 3)(x))


def test_swizzle_rejects_overlapping_fields():
    with pytest.raises(ValueError, match="shift"):
        Swizzle(3, 3, 2)
    with pytest.raises(ValueError, match=">= 0"):
        Swizzle(-1, 3, 3)


# ------------------------------------------------------------------------------------------
# Plain and swizzled layouts
# ------------------------------------------------------------------------------------------


def test_row_and_column_major_with_padding():
    rm = RowMajor(4, 6, pad=2)
    assert rm.shape == (4, 6) and rm.capacity == 32
    assert rm.offset(2, 5) == 2 * 8 + 5
    assert isinstance(rm.offset(2, 5), int)
    cm = ColumnMajor(4, 6, pad=1)
    assert cm.offset(3, 2) == 2 * 5 + 3 and cm.capacity == 30
    rows, cols = np.indices((4, 6))
    assert np.array_equal(rm.offset(rows, cols), rm.offsets())
    assert np.array_equal(rm.offset(LANES[:4], 0), [0, 8, 16, 24])  # broadcasting
    assert np.array_equal(rm.byte_address(LANES[:4], 1, 2, base=1024), [1026, 1042, 1058, 1074])


def test_offset_checks_coordinates():
    with pytest.raises(ValueError, match=r"\(4, 0\) is outside the 4x6 tile"):
        RowMajor(4, 6).offset([0, 4], 0)
    with pytest.raises(TypeError, match="integers"):
        RowMajor(4, 6).offset(1.5, 0)
    with pytest.raises(ValueError, match="element_bytes"):
        RowMajor(4, 6).byte_address(0, 0, 0)


def test_swizzled_composes_after_the_layout():
    layout = Swizzled(RowMajor(16, 64), Swizzle(3, 3, 3))
    assert layout.shape == (16, 64) and layout.capacity == 1024
    # row 5, col 20: 5*64 + 20 = 340 = 0b101_010_100 -> ZZZ 010 ^ 101 = 111 -> 380
    assert layout.offset(5, 20) == 380
    assert np.array_equal(np.sort(layout.offsets().ravel()), np.arange(1024))


# ------------------------------------------------------------------------------------------
# CUTLASS TensorOpMultiplicand layouts
# ------------------------------------------------------------------------------------------


def test_tensor_op_multiplicand_16_32_by_hand():
    # TensorOpMultiplicand<16,32>: kElementsPerAccess = 8, kFactor = 8*8/32 = 2,
    # kTileShapeStride = max(8/2, 4) = 4. Coordinate strided=3, contiguous=9 (row 3, col 9):
    # vec_contiguous_idx = 1, vec_strided_idx = 1, tile_contiguous_idx = 1 / 4 = 0,
    # tile_contiguous_residual = 1 % 4 + (3 % 2) * 4 = 5, tile_strided_residual = 1,
    # partition_contiguous_idx = 1, partition_strided_idx = 0, residuals 1 and 1,
    # permuted vec = 1 ^ 1 = 0, permuted partition = 1 ^ 0 = 1,
    # element_contiguous = (0*8 + 1*4 + 0) * 8 + 9 % 8 = 33; offset = 33 + 1 * 32 * 2 = 97.
    layout = TensorOpMultiplicand(16, 32)
    assert (layout.elements_per_access, layout.factor, layout.tile_shape_stride) == (8, 2, 4)
    assert layout.shape == (8, 32) and layout.ldm == 32 and layout.capacity == 256
    assert layout.offset(3, 9) == 97
    assert TensorOpMultiplicandCrosswise(16, 32).offset(3, 9) == 97
    assert RowMajorTensorOpMultiplicandCrosswise(16, 32, shape=(8, 32)).offset(3, 9) == 97
    assert ColumnMajorTensorOpMultiplicandCrosswise(16, 32, shape=(32, 8)).offset(9, 3) == 97


def test_tensor_op_multiplicand_16_64_is_cutes_swizzle_3_3_3():
    # TensorOpMultiplicand<16,64>: kFactor = 1, kTileShapeStride = 8. strided=5, contiguous=20:
    # vec 2 in partition 0 at residual 2; strided residual 5 -> partition 1, residual 1;
    # permuted vec = 2 ^ 1 = 3, permuted partition = 0 ^ 1 = 1;
    # element_contiguous = (4 + 3) * 8 + 4 = 60; offset = 60 + 5 * 64 = 380 (= Swizzle<3,3,3>).
    layout = TensorOpMultiplicandCongruous(16, 64, shape=(32, 64))
    assert layout.offset(5, 20) == 380
    assert np.array_equal(layout.offsets(), Swizzled(RowMajor(32, 64), Swizzle(3, 3, 3)).offsets())


def test_tensor_op_multiplicand_4_bit_by_hand():
    # TensorOpMultiplicand<4,128>: kElementsPerAccess = 32, kFactor = 8*32/128 = 2,
    # kTileShapeStride = 4; ldm 128. strided=5, contiguous=70: vec_contiguous_idx = 2,
    # vec_strided_idx = 2, tile_contiguous_residual = 2 + 1*4 = 6 -> partition 1, residual 2;
    # tile_strided_residual 2 -> partition 0, residual 2; permuted vec = 2 ^ 2 = 0, partition 1;
    # element_contiguous = (4 + 0) * 32 + 70 % 32 = 134; offset = 134 + 2 * 128 * 2 = 646.
    assert TensorOpMultiplicand(4, 128, shape=(8, 128)).offset(5, 70) == 646


def test_congruous_32_bit_specialization_by_hand():
    # TensorOpMultiplicandCongruous<32,Crosswise> has its own operator(): strided=2,
    # contiguous=37, ldm=64: tc = 1, ts = 0, c = (37 % 32) / 4 = 1, s = 2;
    # (1 ^ 4) * 4 + 2 * 64 + 1 * 32 + 0 + 37 % 4 = 20 + 128 + 32 + 1 = 181.
    congruous = TensorOpMultiplicandCongruous(32, 32, shape=(4, 64))
    assert TensorOpMultiplicandCongruous(32, 32).shape == (4, 32)  # TileShape<8, 4> vectors
    assert congruous.offset(2, 37) == 181
    assert RowMajorTensorOpMultiplicandCongruous(32, 32, shape=(4, 64)).offset(2, 37) == 181
    assert ColumnMajorTensorOpMultiplicandCongruous(32, 32, shape=(64, 4)).offset(37, 2) == 181
    # The generic TensorOpMultiplicand<32,32> differs: kFactor 1, kTileShapeStride 8;
    # vec 9 -> tile 1, residual 1; permuted vec = 1 ^ 2 = 3; (8 + 3) * 4 + 1 + 2 * 64 = 173.
    assert TensorOpMultiplicand(32, 32, shape=(4, 64)).offset(2, 37) == 173
    assert TensorOpMultiplicandCrosswise(32, 32, shape=(4, 64)).offset(2, 37) == 173


FAMILIES = [TensorOpMultiplicand, TensorOpMultiplicandCongruous, TensorOpMultiplicandCrosswise,
            ColumnMajorTensorOpMultiplicandCongruous, ColumnMajorTensorOpMultiplicandCrosswise,
            RowMajorTensorOpMultiplicandCongruous, RowMajorTensorOpMultiplicandCrosswise]
PARAMS = [(1, 256), (1, 1024), (4, 64), (4, 128), (8, 32), (8, 64), (8, 128), (16, 8), (16, 32),
          (16, 64), (32, 16), (32, 32), (64, 16), (64, 8), (128, 4)]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bits, crosswise", PARAMS)
def test_tensor_op_layouts_are_bijections_over_the_tile(family, bits, crosswise):
    tile = family(bits, crosswise).shape
    layout = family(bits, crosswise, shape=(2 * tile[0], 3 * tile[1]))
    offsets = layout.offsets()
    assert offsets.shape == layout.shape
    assert np.array_equal(np.sort(offsets.ravel()), np.arange(layout.capacity))
    # A padded ldm keeps it one-to-one and inside the capacity.
    contiguous = layout.shape[0] if family._orientation == "column" else layout.shape[1]
    padded = family(bits, crosswise, shape=layout.shape, ldm=contiguous + 8)
    flat = padded.offsets().ravel()
    assert len(np.unique(flat)) == flat.size and flat.max() < padded.capacity


def test_tile_constants_follow_cutlass():
    # kCrosswise = 8 * kElementsPerAccess gives kTileShapeStride 8, half of it gives 4.
    for bits, crosswise, factor, stride in [(16, 64, 1, 8), (16, 32, 2, 4), (32, 32, 1, 8),
                                            (32, 16, 2, 4), (64, 16, 1, 8), (64, 8, 2, 4),
                                            (8, 32, 4, 4), (128, 4, 2, 4)]:
        layout = TensorOpMultiplicand(bits, crosswise)
        assert (layout.factor, layout.tile_shape_stride) == (factor, stride)
        assert layout.shape == (factor * stride, crosswise)
        assert layout.capacity * bits == stride * 1024  # kTileShapeStride 128-byte lines


def test_tensor_op_rejects_bad_parameters():
    with pytest.raises(ValueError, match="ElementSize"):
        TensorOpMultiplicand(12, 32)
    with pytest.raises(ValueError, match="Crosswise"):
        TensorOpMultiplicand(16, 128)  # more than one 128-byte line: kFactor would be 0
    with pytest.raises(ValueError, match="Crosswise"):
        TensorOpMultiplicand(16, 4)  # less than one 16-byte vector
    with pytest.raises(ValueError, match="contiguous extent 48 must be a multiple of 32"):
        TensorOpMultiplicand(16, 32, shape=(8, 48))
    with pytest.raises(ValueError, match="strided extent 3 must be a multiple of kFactor = 2"):
        TensorOpMultiplicand(16, 32, shape=(3, 32))
    with pytest.raises(ValueError, match="ldm 16"):
        RowMajorTensorOpMultiplicandCrosswise(16, 32, shape=(8, 32), ldm=16)


# ------------------------------------------------------------------------------------------
# Banks: a warp's 8 rows of a 128-byte-row swizzled tile hit 8 distinct 16-byte bank groups
# ------------------------------------------------------------------------------------------

SWIZZLED_F16 = [
    Swizzled(RowMajor(32, 64), Swizzle(3, 3, 3)),
    RowMajorTensorOpMultiplicandCrosswise(16, 64, shape=(32, 64)),
    RowMajorTensorOpMultiplicandCrosswise(16, 32, shape=(32, 32)),  # two rows per 128-byte line
    TensorOpMultiplicand(16, 32, shape=(32, 64)),
]


@pytest.mark.parametrize("layout", SWIZZLED_F16, ids=repr)
@pytest.mark.parametrize("col", [0, 8, 16, 24])
def test_ldmatrix_rows_through_a_swizzled_tile_are_conflict_free(layout, col):
    addresses = layout.byte_address(LANES, col, 2)
    groups = (addresses // 16) % 8  # 16-byte bank group: banks 4g .. 4g+3
    for phase in range(4):
        assert len(set(groups[8 * phase:8 * phase + 8].tolist())) == 8
    acc = access(LDMATRIX_X4, addresses)
    assert (acc.wavefronts, acc.ideal, acc.conflicts) == (4, 4, 0)


@pytest.mark.parametrize("bits, crosswise", PARAMS)
def test_8_strided_rows_of_one_vector_take_8_bank_groups(bits, crosswise):
    # Every generic TensorOpMultiplicand: one vector column of rows 8i .. 8i+7 (an ldmatrix
    # phase) spreads over all 8 16-byte groups. (The 32-bit Congruous specialization repeats
    # every 4 rows instead, so it is not part of this claim.)
    tile = TensorOpMultiplicand(bits, crosswise).shape
    layout = TensorOpMultiplicand(bits, crosswise, shape=(2 * max(tile[0], 8), 2 * tile[1]))
    per = layout.elements_per_access
    rows, vectors = np.indices((layout.shape[0], layout.shape[1] // per))
    groups = layout.offset(rows, vectors * per) * bits // 128 % 8
    for first in range(0, layout.shape[0], 8):
        block = np.sort(groups[first:first + 8], axis=0)
        assert (block == np.arange(8)[:, None]).all()


def test_ldmatrix_rows_of_a_plain_128_byte_row_tile_conflict():
    acc = access(LDMATRIX_X4, RowMajor(32, 64).byte_address(LANES, 0, 2))
    assert (acc.wavefronts, acc.conflicts) == (32, 28)  # 8 rows, 1 bank group, per matrix
    padded = access(LDMATRIX_X4, RowMajor(32, 64, pad=8).byte_address(LANES, 0, 2))
    assert padded.conflicts == 0


def test_ldmatrix_trans_through_column_major_congruous():
    # A column-major M x K tile (M contiguous): lanes give the addresses of 8 k-columns.
    layout = ColumnMajorTensorOpMultiplicandCongruous(16, 64, shape=(64, 32))
    trans = "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
    for row in (0, 8, 56):
        assert access(trans, layout.byte_address(row, LANES, 2)).conflicts == 0
    assert access(trans, ColumnMajor(64, 32).byte_address(0, LANES, 2)).conflicts == 28


# ------------------------------------------------------------------------------------------
# visualize_layout
# ------------------------------------------------------------------------------------------

# The output of CUTLASS's examples/03_visualize_layout, built from NVIDIA/cutlass commit
# 7107b05535f8977f5ecb9d01ee203205b1fd9bc4 with nvcc 13.0 and run as
#   03_visualize_layout "TensorOpMultiplicand<16,32>" --extent=32,16 --vectorize=8 \
#       --output-shape=64,4
# By hand: a 128-byte line holds kFactor = 2 strided rows; strided rows 2 and 3
# (tile_strided_residual 1) XOR their vector index with 1, rows 4, 5 with 2, rows 6, 7 with 3.
TOM_16_32 = """\
(0..7, 0)|(8..15, 0)|(16..23, 0)|(24..31, 0)|(0..7, 1)|(8..15, 1)|(16..23, 1)|(24..31, 1)
(8..15, 2)|(0..7, 2)|(24..31, 2)|(16..23, 2)|(8..15, 3)|(0..7, 3)|(24..31, 3)|(16..23, 3)
(16..23, 4)|(24..31, 4)|(0..7, 4)|(8..15, 4)|(16..23, 5)|(24..31, 5)|(0..7, 5)|(8..15, 5)
(24..31, 6)|(16..23, 6)|(8..15, 6)|(0..7, 6)|(24..31, 7)|(16..23, 7)|(8..15, 7)|(0..7, 7)

(0..7, 8)|(8..15, 8)|(16..23, 8)|(24..31, 8)|(0..7, 9)|(8..15, 9)|(16..23, 9)|(24..31, 9)
(8..15, 10)|(0..7, 10)|(24..31, 10)|(16..23, 10)|(8..15, 11)|(0..7, 11)|(24..31, 11)|(16..23, 11)
(16..23, 12)|(24..31, 12)|(0..7, 12)|(8..15, 12)|(16..23, 13)|(24..31, 13)|(0..7, 13)|(8..15, 13)
(24..31, 14)|(16..23, 14)|(8..15, 14)|(0..7, 14)|(24..31, 15)|(16..23, 15)|(8..15, 15)|(0..7, 15)"""

# Same build: 03_visualize_layout "TensorOpMultiplicandCongruous<32,32>" --extent=32,4
# --vectorize=4 --output-shape=32,4 (the 32-bit specialization: vector ^ 2 * strided).
CONGRUOUS_32_32 = """\
(0..3, 0)|(4..7, 0)|(8..11, 0)|(12..15, 0)|(16..19, 0)|(20..23, 0)|(24..27, 0)|(28..31, 0)
(8..11, 1)|(12..15, 1)|(0..3, 1)|(4..7, 1)|(24..27, 1)|(28..31, 1)|(16..19, 1)|(20..23, 1)
(16..19, 2)|(20..23, 2)|(24..27, 2)|(28..31, 2)|(0..3, 2)|(4..7, 2)|(8..11, 2)|(12..15, 2)
(24..27, 3)|(28..31, 3)|(16..19, 3)|(20..23, 3)|(8..11, 3)|(12..15, 3)|(0..3, 3)|(4..7, 3)"""

# The example's visualize_layout.h with RowMajorTensorOpMultiplicandCrosswise<16, 32>
# registered (the stock example registers only the pitch-linear ones); coordinates are
# (row, column) for the matrix variants, so the column is the one that runs.
ROW_MAJOR_CROSSWISE_16_32 = """\
(0, 0..7)|(0, 8..15)|(0, 16..23)|(0, 24..31)|(1, 0..7)|(1, 8..15)|(1, 16..23)|(1, 24..31)
(2, 8..15)|(2, 0..7)|(2, 24..31)|(2, 16..23)|(3, 8..15)|(3, 0..7)|(3, 24..31)|(3, 16..23)
(4, 16..23)|(4, 24..31)|(4, 0..7)|(4, 8..15)|(5, 16..23)|(5, 24..31)|(5, 0..7)|(5, 8..15)
(6, 24..31)|(6, 16..23)|(6, 8..15)|(6, 0..7)|(7, 24..31)|(7, 16..23)|(7, 8..15)|(7, 0..7)"""


def test_visualize_tensor_op_multiplicand_matches_cutlass_example(capsys):
    text = visualize_layout("TensorOpMultiplicand<16,32>", (32, 16), 8, (64, 4))
    assert text == TOM_16_32
    print(text)
    assert capsys.readouterr().out == TOM_16_32 + "\n"  # the example ends with one newline


def test_visualize_other_families():
    assert visualize_layout("TensorOpMultiplicandCongruous<32,32>", (32, 4), 4,
                            (32, 4)) == CONGRUOUS_32_32
    assert visualize_layout("RowMajorTensorOpMultiplicandCrosswise<16, 32>", (8, 32), 8,
                            (64, 4)) == ROW_MAJOR_CROSSWISE_16_32
    # TensorOpMultiplicand<16,64> is Swizzle<3,3,3>: line r holds row r with vector v at v ^ r.
    lines = visualize_layout("TensorOpMultiplicand<16,64>", (64, 8), 8, (64, 8)).split("\n")
    for r, line in enumerate(lines):
        assert line.split("|") == [f"({8 * (v ^ r)}..{8 * (v ^ r) + 7}, {r})" for v in range(8)]


def test_visualize_print_rules_by_hand():
    # From print_csv in visualize_layout.h: output_shape[0] elements per line, a blank line
    # after every output_shape[1] lines, storage with no element printed as one space, and
    # vectorize <= 2 printing the elements side by side (each checked against the example).
    assert visualize_layout("RowMajor", (2, 3), 1, (4, 1), stride=4) == (
        "(0, 0)|(0, 1)|(0, 2)| \n\n(1, 0)|(1, 1)|(1, 2)| ")
    assert visualize_layout("RowMajor", (2, 4), 2, 4) == (
        "(0, 0)(0, 1)|(0, 2)(0, 3)\n(1, 0)(1, 1)|(1, 2)(1, 3)")
    # an all-empty run of vectorize > 2 is one space; a mixed run goes element by element
    assert visualize_layout("RowMajor", (2, 3), 3, (6, 1), stride=6) == (
        "(0, 0..2)| \n\n(1, 0..2)| ")
    assert visualize_layout("RowMajor", (2, 3), 5, (5, 1), stride=5) == (
        "(0, 0)(0, 1)(0, 2)  \n\n(1, 0)(1, 1)(1, 2)  ")
    assert visualize_layout("ColumnMajor", (3, 2), 3, 9) == "(0..2, 0)|(0..2, 1)"
    assert visualize_layout("PitchLinear", (3, 2), 3, 3) == "(0..2, 0)\n(0..2, 1)"
    # An empty extent printed "" before issue 13; now it is refused.
    with pytest.raises(ValueError, match=r"extent\[0\] must be a positive integer"):
        visualize_layout("RowMajor", (0, 4))


def test_visualize_errors():
    with pytest.raises(ValueError, match="'Foo' not supported"):
        visualize_layout("Foo")
    with pytest.raises(ValueError, match="not supported"):
        visualize_layout("VoltaTensorOpMultiplicandCongruous<16>")
    with pytest.raises(ValueError, match="not supported"):
        visualize_layout("RowMajor<16,32>")
    with pytest.raises(ValueError, match=r"vectorize=3 must divide contiguous elements"):
        visualize_layout("RowMajor", (4, 4), 3, (16, 8))
    with pytest.raises(ValueError, match=r"extent must have rank 2 \(given: 3\)"):
        visualize_layout("RowMajor", (4, 4, 4))
    with pytest.raises(ValueError, match="vectorize must be a positive integer"):
        visualize_layout("RowMajor", (4, 4), 0)
    with pytest.raises(ValueError, match="Crosswise"):
        visualize_layout("TensorOpMultiplicand<16,128>", (128, 8))
    with pytest.raises(ValueError, match="contiguous extent"):
        visualize_layout("TensorOpMultiplicand<16,32>", (16, 8))
