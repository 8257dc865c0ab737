"""CuTe's shape:stride `Layout`: CuTe's documented examples, offsets against index arithmetic
written here with numpy (colexicographic unravelling of the flattened shape), the named layouts
as Layouts, the wgmma canonical forms of CuTe's make_gmma_desc, and bad input.

Sources (facts, not code): CuTe's docs, media/docs/cute/01_layout.md (NVIDIA/cutlass): a
Layout is a (Shape, Stride) pair of congruent IntTuples; make_layout(shape) is LayoutLeft
(column-major); ``(4,2):(1,4)`` and ``(2,(2,2)):(4,(2,1))`` with their printed tables; a 1-D
coordinate, its 2-D form and its natural (hierarchical) form map to one index (the docs' table
for shape (3,(2,3)): 16 <-> (1,5) <-> (1,(1,2))).
"""

import numpy as np
import pytest

import tcsim
from tcsim.memory import (
    ColumnMajor,
    Layout,
    MatrixDescriptor,
    RowMajor,
    Swizzle,
    Swizzled,
    SwizzleMode,
    TileLayout,
    canonical_tile,
)


def reference_offsets(shape, stride, extent=None):
    """Offsets of a rank-2 layout by numpy alone: each mode's leaves, unravelled in Fortran
    (colexicographic) order, dotted with that mode's leaf strides."""
    def leaves(t):
        return [x for i in t for x in leaves(i)] if isinstance(t, tuple) else [t]

    def mode(index, s, d):
        shape_leaves, stride_leaves = leaves(s), leaves(d)
        parts = np.unravel_index(index, shape_leaves, order="F")
        return sum(p * q for p, q in zip(parts, stride_leaves))

    rows, cols = extent or (int(np.prod(leaves(shape[0]))), int(np.prod(leaves(shape[1]))))
    r, c = np.indices((rows, cols))
    return mode(r, shape[0], stride[0]) + mode(c, shape[1], stride[1])


# ---- CuTe's documented examples ----------------------------------------------------------


def test_column_major_4x2_as_cute_prints_it():
    layout = Layout((4, 2), (1, 4))
    assert str(layout) == "(4,2):(1,4)"
    assert np.array_equal(layout.offsets(), [[0, 4], [1, 5], [2, 6], [3, 7]])
    assert (layout.size, layout.cosize, layout.rank, layout.extent) == (8, 8, 2, (4, 2))
    assert str(Layout((4, 2))) == "(4,2):(1,4)"  # make_layout(shape): LayoutLeft
    assert str(Layout((2, (2, 2)))) == "(2,(2,2)):(1,(2,4))"


def test_the_docs_hierarchical_2x4():
    # 01_layout.md prints (2,(2,2)):(4,(2,1)) as rows 0 2 1 3 / 4 6 5 7
    layout = Layout((2, (2, 2)), (4, (2, 1)))
    assert str(layout) == "(2,(2,2)):(4,(2,1))"
    assert layout.offsets().tolist() == [[0, 2, 1, 3], [4, 6, 5, 7]]
    assert layout.extent == (2, 4) and layout.shape == (2, (2, 2))


def test_one_index_its_2d_coordinate_and_its_natural_coordinate_agree():
    layout = Layout((3, (2, 3)), (3, (12, 1)))
    by_hand = 1 * 3 + 1 * 12 + 2 * 1  # natural coordinate (1, (1, 2))
    assert layout(16) == layout(1, 5) == layout(1, (1, 2)) == layout((1, (1, 2))) == by_hand
    i = np.arange(18)
    assert np.array_equal(layout(i), layout(i % 3, i // 3))
    assert isinstance(layout(16), int) and layout(i).dtype == np.int64


def test_a_rank_1_layout_is_a_function_of_one_index():
    layout = Layout(8, 2)
    assert str(layout) == "8:2" and layout(5) == 10 and layout.cosize == 15
    with pytest.raises(ValueError, match="rank 1"):
        layout.offsets()  # not a tile


# ---- offsets against numpy ---------------------------------------------------------------


def _random_mode(rng, depth=0):
    if depth < 2 and rng.random() < 0.5:
        return tuple(_random_mode(rng, depth + 1) for _ in range(rng.integers(1, 4)))
    return int(rng.integers(1, 6))


def _strides_like(rng, shape):
    if isinstance(shape, tuple):
        return tuple(_strides_like(rng, s) for s in shape)
    return int(rng.integers(0, 200))


@pytest.mark.parametrize("seed", range(40))
def test_random_hierarchical_layouts_match_numpy(seed):
    rng = np.random.default_rng([seed, 0x1A40])
    shape = (_random_mode(rng), _random_mode(rng))
    stride = _strides_like(rng, shape)
    layout = Layout(shape, stride)
    expected = reference_offsets(shape, stride)
    assert np.array_equal(layout.offsets(), expected), layout
    assert layout.capacity == layout.cosize == int(expected.max()) + 1
    r = rng.integers(0, layout.extent[0], 50)
    c = rng.integers(0, layout.extent[1], 50)
    assert np.array_equal(layout.offset(r, c), expected[r, c])
    assert np.array_equal(layout(r, c), expected[r, c])
    flat = rng.integers(0, layout.size, 50)  # one index: column-major over (rows, cols)
    assert np.array_equal(layout(flat), expected[flat % layout.extent[0],
                                                 flat // layout.extent[0]])


# ---- the named layouts are Layouts -------------------------------------------------------


@pytest.mark.parametrize("rows, cols, pad", [(16, 64, 0), (16, 64, 8), (5, 3, 1), (1, 7, 0)])
def test_row_and_column_major_are_layouts_with_their_pitch(rows, cols, pad):
    r, c = np.indices((rows, cols))
    row = RowMajor(rows, cols, pad=pad)
    assert isinstance(row, Layout) and str(row) == f"({rows},{cols}):({cols + pad},1)"
    assert row.stride == (cols + pad, 1) and row.pitch == cols + pad
    assert np.array_equal(row.offsets(), r * (cols + pad) + c)
    assert row.capacity == rows * (cols + pad)  # the last row's pad too, as CUTLASS allocates
    assert repr(row) == f"RowMajor({rows}, {cols}, pad={pad})"
    col = ColumnMajor(rows, cols, pad=pad)
    assert str(col) == f"({rows},{cols}):(1,{rows + pad})"
    assert np.array_equal(col.offsets(), c * (rows + pad) + r)
    assert tcsim.RowMajor is RowMajor and tcsim.Layout is Layout
    assert np.array_equal(Layout((rows, cols), (cols + pad, 1)).offsets(), row.offsets())


def test_a_layout_under_a_swizzle_is_ctues_composition():
    # Swizzle<3,3,3> o ((8,8),64):((64,512),1): f16 rows of 128 bytes in 8-row atoms, the
    # 16-byte chunk index XOR row % 8, as the PTX 128B swizzle atom stores a K-major tile.
    atoms = Layout(((8, 8), 64), ((64, 512), 1))
    tile = Swizzled(atoms, Swizzle(3, 3, 3))
    r, k = np.indices((64, 64))
    by_hand = (r // 8) * 512 + (r % 8) * 64 + ((k // 8) ^ (r % 8)) * 8 + k % 8
    assert np.array_equal(tile.offsets(), by_hand)
    assert str(tile) == "Swizzle<3,3,3> o ((8,8),64):((64,512),1)"
    assert isinstance(tile, TileLayout) and tile.capacity == 4096
    shifted = Swizzled(atoms, Swizzle(3, 3, 3), offset=16)  # CuTe's ComposedLayout offset
    assert np.array_equal(shifted.offsets(), Swizzle(3, 3, 3)(16 + atoms.offsets()))
    assert str(shifted) == "Swizzle<3,3,3> o 16 + ((8,8),64):((64,512),1)"


def _cute_canonical(major, swizzled, t, m, lbo, sbo, w=None):
    """CuTe's make_gmma_desc canonical layouts (mma_traits_sm90_gmma.hpp), in elements."""
    if major == "K":
        if not swizzled:
            return ((8, m), (t, 2)), ((t, sbo), (1, lbo))
        return ((8, m), (t, 2)), ((w * t, sbo), (1, t))
    if not swizzled:
        return ((t, 1, m), (8, 2)), ((1, t, sbo), (t, lbo))
    return ((t, w, m), (8, 2)), ((1, t, lbo), (w * t, sbo))


@pytest.mark.parametrize("major, mode", [("K", "none"), ("K", "32B"), ("K", "64B"),
                                         ("K", "128B"), ("MN", "none"), ("MN", "128B")])
def test_descriptor_tiles_are_layouts_in_cutes_canonical_form(major, mode):
    # f16 (T = 8 elements per 16 bytes); 64 rows; K = 16, one wgmma k-step.
    m = SwizzleMode.parse(mode)
    w = m.width // 16
    if major == "K":
        lbo, sbo = (128, 256) if m is SwizzleMode.NONE else (16, m.repeat)
        rows_per_group = 8
    else:
        lbo, sbo = (2048, 128) if m is SwizzleMode.NONE else (m.repeat, 2048)
        rows_per_group = 8 if m is SwizzleMode.NONE else 8 * w
    descriptor = MatrixDescriptor(0, lbo, sbo, 0, m)
    read = descriptor.layout("f16", major, rows=64)
    assert isinstance(read.layout, Layout)  # the descriptor's tile is the public type
    shape, stride = _cute_canonical(major, m is not SwizzleMode.NONE, 8, 64 // rows_per_group,
                                    lbo // 2, sbo // 2, w)
    expected = Swizzle(m.bits, 3, 3)(reference_offsets(shape, stride))
    assert np.array_equal(read.offsets(), expected)
    assert np.array_equal(read.addresses(), 2 * expected)


def test_a_partial_atom_is_a_window_of_its_layout():
    # 72 MN-major rows under the 128B swizzle: the second 64-row atom is used for 8 rows only.
    tile = canonical_tile(72, 16, "f16", "MN", "128B")
    assert tile.layout.shape == (72, 16)
    inner = tile.layout.layout
    assert isinstance(inner, Layout) and inner.extent == (72, 16)
    assert inner.size == 128 * 16  # two whole atoms' worth of coordinates
    expected = reference_offsets(inner.shape, inner.stride)[:72]
    assert np.array_equal(inner.offsets(), expected)
    assert inner.capacity == int(expected.max()) + 1


# ---- bad input: the documented ValueError / TypeError ------------------------------------


@pytest.mark.parametrize("shape, stride, match", [
    ((4, 0), (1, 4), "positive integer"),
    ((4, -2), (1, 4), "positive integer"),
    (((2, 0), 4), ((1, 2), 4), "positive integer"),
    ((4, 2), (1, -4), "non-negative integer"),
    ((4, 2), (1, 4, 8), "differ in rank"),
    (((2, 2), 2), (1, 2), "differ in rank"),
    (((2, 2), 2), ((1, 2, 4), 8), "differ in rank"),
    ((4, ()), (1, ()), "empty mode"),
    ((), (), "empty mode"),
    ((1 << 40, 1 << 40), (1 << 40, 1), "2\\*\\*63"),
])
def test_bad_layouts_raise_value_error(shape, stride, match):
    with pytest.raises(ValueError, match=match):
        Layout(shape, stride)


@pytest.mark.parametrize("shape, stride", [((4.0, 2), (1, 4)), ((4, 2), (1, "4")),
                                           ((True, 2), (1, 4)), ("4", None),
                                           ((4, 2), (1.5, 4)), (np.array([4, 2]), None)])
def test_layouts_of_non_integers_raise_type_error(shape, stride):
    with pytest.raises(TypeError, match="integer"):
        Layout(shape, stride)


def test_bad_coordinates_are_named():
    layout = Layout((3, (2, 3)), (3, (12, 1)))
    with pytest.raises(ValueError, match="outside its mode"):
        layout(18)
    with pytest.raises(ValueError, match="outside its mode"):
        layout(1, (1, 3))
    with pytest.raises(ValueError, match="not congruent"):
        layout((1, 2), 3)
    with pytest.raises(ValueError, match="one index or 2 coordinates"):
        layout(1, 2, 3)
    with pytest.raises(ValueError, match="outside the 3x6 tile"):
        layout.offset(3, 0)
    with pytest.raises(TypeError, match="integer"):
        layout(1.5)
    with pytest.raises(ValueError, match="rank 3"):
        Layout((2, 2, 2)).offsets()
    with pytest.raises(ValueError, match="non-negative"):
        Swizzled(Layout((8, 8)), Swizzle(3, 3, 3), offset=-8)
