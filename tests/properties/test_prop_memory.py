"""Properties of the shared-memory entry points: tcsim.memory.access, SharedMemory, the layouts
and visualize_layout.

- The counts and bytes do not depend on how the addresses are given (a list, int32, int64 or
  uint64 arrays, strided or read-only views), and inputs are never modified.
- One bad address in any lane (a float, NaN, inf, a bool, a string, a negative number, past the
  window, misaligned) is a SharedMemoryError that names that lane, and a refused access is
  not counted; cp.async's global sources follow the same integer rules.
- Layout coordinates and sizes are integers; extents are positive; a tile too large for this
  machine's memory is refused before it is allocated.
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from prop_inputs import FEW, SOME, refused_quickly

from tcsim.memory import (
    SM90_BLOCK_LIMIT,
    RowMajor,
    SharedMemory,
    SharedMemoryError,
    Swizzle,
    Swizzled,
    TensorOpMultiplicand,
    access,
    parse_instruction,
    visualize_layout,
)

INSTRUCTIONS = ["ld.shared.b32", "ld.shared.v2.b32", "ld.shared.v4.b32", "st.shared.b64",
                "st.shared.u8", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
                "stmatrix.sync.aligned.m8n8.x2.shared.b16", "cp.async.ca.shared.global.8",
                "cp.async.cg.shared.global.16"]
SIZE = 4096  # the SharedMemory the byte-moving tests use


@st.composite
def warp_addresses(draw, size: int = SIZE):
    """(instruction, 32 aligned in-range addresses, some lanes None)."""
    spelling = draw(st.sampled_from(INSTRUCTIONS))
    width = parse_instruction(spelling).bytes_per_address
    slots = st.integers(0, size // width - 1).map(lambda s: s * width)
    lanes = draw(st.lists(st.one_of(slots, slots, slots, st.none()), min_size=32, max_size=32))
    if all(a is None for a in lanes):
        lanes[0] = 0
    inst = parse_instruction(spelling)
    if inst.kind in ("ldmatrix", "stmatrix"):  # the row lanes must each give an address
        rows = 8 * inst.matrices
        lanes[:rows] = [0 if a is None else a for a in lanes[:rows]]
    return spelling, lanes


def as_given(addresses: list, how: str):
    """The same addresses given another way (None lanes stay a list when there are any)."""
    if how in ("list", "tuple") or any(a is None for a in addresses):
        return (tuple if how == "tuple" else list)(addresses)
    arr = np.array(addresses)
    if how == "strided":
        big = np.zeros(64, np.int64)
        big[::2] = arr
        return big[::2]
    if how == "readonly":
        arr = arr.astype(np.int64)
        arr.setflags(write=False)
        return arr
    if how == "reversed":
        return np.ascontiguousarray(arr[::-1])[::-1]
    return arr.astype(how)


GIVEN = st.sampled_from(["list", "int32", "int64", "uint64", "uint32", "strided", "readonly",
                         "reversed", "tuple"])


@SOME
@given(warp_addresses(), GIVEN)
def test_counts_do_not_depend_on_how_addresses_are_given(case, how):
    spelling, lanes = case
    given_as = as_given(lanes, how)
    kept = list(given_as) if not isinstance(given_as, np.ndarray) else given_as.copy()
    expected = access(spelling, lanes)
    got = access(spelling, given_as)
    assert (got.wavefronts, got.ideal, got.caveat) == (expected.wavefronts, expected.ideal,
                                                       expected.caveat)
    assert np.array_equal(got.words, expected.words)
    assert np.array_equal(np.asarray(given_as, dtype=object), np.asarray(kept, dtype=object))


BAD_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: x != int(x)
                                                          if np.isfinite(x) else True),
    st.floats(0, 1024).map(lambda x: float(int(x) * 16)),  # whole floats are refused too
    st.integers(-2**70, -1), st.integers(SM90_BLOCK_LIMIT, 2**70), st.booleans(),
    st.text(max_size=3), st.just(np.float64(16.0)), st.just(np.nan),
    st.just(np.int64(-16)), st.just([16]), st.just(1 + 2j))


X1 = "ldmatrix.sync.aligned.m8n8.x1.shared.b16"


@SOME
@given(warp_addresses(), st.integers(0, 31), BAD_VALUES)
@example((X1, [0] * 32), 8, SM90_BLOCK_LIMIT)  # lane 8 supplies no row to .x1: not checked
@example((X1, [0] * 32), 8, 16.0)  # but it must still be an integer
@example(("ld.shared.b32", [0] * 32), 31, -4)
def test_one_bad_address_is_refused_naming_its_lane(case, lane, bad):
    spelling, lanes = case
    lanes = [0 if a is None else a for a in lanes]  # every lane active, all valid
    lanes[lane] = bad
    inst = parse_instruction(spelling)
    if inst.kind in ("ldmatrix", "stmatrix") and lane >= 8 * inst.matrices and isinstance(
            bad, (int, np.integer)) and not isinstance(bad, bool) and 0 <= bad < 2**63:
        access(spelling, lanes)  # a lane that supplies no row: any integer >= 0 will do
        return
    with pytest.raises(SharedMemoryError, match=rf"lane {lane} address"):
        access(spelling, lanes)
    sm = SharedMemory(SIZE)
    with pytest.raises(SharedMemoryError, match=rf"lane {lane} address"):
        if inst.kind in ("ld",):
            sm.load(spelling, lanes)
        elif inst.kind in ("st", "cp.async"):
            sm.store(spelling, lanes, np.ones((32, inst.bytes_per_address), np.uint8))
        elif inst.kind == "ldmatrix":
            sm.ldmatrix(spelling, lanes)
        else:
            sm.stmatrix(spelling, lanes, np.ones((32, inst.matrices), np.uint32))
    assert sm.totals() == {} and not sm.data.any()  # refused: not counted, nothing written


@SOME
@given(st.integers(0, 31), BAD_VALUES, st.sampled_from(INSTRUCTIONS[-2:]))
def test_one_bad_global_source_is_refused_naming_its_lane(lane, bad, spelling):
    width = parse_instruction(spelling).bytes_per_address
    sources = [width * i for i in range(32)]
    sources[lane] = bad
    if isinstance(bad, (int, np.integer)) and not isinstance(bad, bool) and bad >= 0 \
            and bad < 2**63:
        if bad % width == 0:
            access(spelling, [width * i for i in range(32)], sources=sources)  # a fine source
            return
        match = rf"lane {lane} global source .* not aligned"
    else:
        match = rf"lane {lane} global source"
    with pytest.raises(SharedMemoryError, match=match):
        access(spelling, [width * i for i in range(32)], sources=sources)


@SOME
@given(st.one_of(st.integers(0, 40).filter(lambda n: n != 32), st.just("addresses"),
                 st.just(5), st.just(None)))
def test_anything_but_32_lanes_is_refused(n):
    given_as = [0] * n if isinstance(n, int) else n
    with pytest.raises(SharedMemoryError, match="expected 32 lane addresses"):
        access("ld.shared.b32", given_as)
    with pytest.raises(SharedMemoryError, match="expected 32 lane addresses"):
        access("ld.shared.b32", np.zeros((2, 16), np.int64))


@SOME
@given(warp_addresses(), st.integers(0, 2**32 - 1), GIVEN)
def test_bytes_round_trip_whatever_the_layout(case, seed, how):
    spelling, lanes = case
    inst = parse_instruction(spelling)
    if inst.kind not in ("st", "cp.async"):
        return
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 256, (32, inst.bytes_per_address), dtype=np.uint8)
    lanes = [16 * i if a is None else a for i, a in enumerate(lanes)]
    lanes = [a % SIZE // inst.bytes_per_address * inst.bytes_per_address for a in lanes]
    variants = {"list": values.tolist(), "fortran": np.asfortranarray(values),
                "int64": values.astype(np.int64), "readonly": values.copy()}
    variants["readonly"].setflags(write=False)
    results = []
    for v in variants.values():
        sm = SharedMemory(SIZE)
        sm.store(spelling, as_given(lanes, how), v)
        results.append(sm.data.copy())
        assert np.array_equal(np.asarray(v), values)
    assert all(np.array_equal(r, results[0]) for r in results)


@SOME
@given(st.one_of(st.integers(256, 10**4), st.integers(-10**4, -1), st.floats(0, 255),
                 st.booleans(), st.text(max_size=2)))
def test_stored_bytes_are_integers_0_to_255(bad):
    values = np.zeros((32, 4), object)
    values[3, 2] = bad
    with pytest.raises((TypeError, ValueError), match="lane 3 byte 2"):
        SharedMemory(1024).store("st.shared.b32", [4 * i for i in range(32)], values)


@FEW
@given(st.sampled_from(["shape", "dtype"]))
def test_store_values_and_stmatrix_registers_are_checked(what):
    sm = SharedMemory(1024)
    rows = [16 * i for i in range(32)]
    if what == "shape":
        with pytest.raises(ValueError, match=r"values must be \(32, 16\) bytes"):
            sm.store("st.shared.v4.b32", rows, np.zeros((16, 32), np.uint8))
        with pytest.raises(ValueError, match=r"registers must have shape \(32, 2\)"):
            sm.stmatrix("stmatrix.sync.aligned.m8n8.x2.shared.b16", rows,
                        np.zeros((2, 32, 2), np.uint32))
    else:
        with pytest.raises(TypeError, match="registers must be uint32"):
            sm.stmatrix("stmatrix.sync.aligned.m8n8.x2.shared.b16", rows,
                        np.zeros((32, 2), np.int64))
    assert sm.totals() == {}


@SOME
@given(st.one_of(st.integers(-10, 0), st.integers(SM90_BLOCK_LIMIT + 1, 2**40),
                 st.floats(1, 4096), st.text(max_size=3), st.booleans()))
def test_shared_memory_size(bad):
    with pytest.raises((TypeError, ValueError)):
        SharedMemory(bad)
    with pytest.raises((TypeError, ValueError)):
        access("ld.shared.b32", [0] * 32, size=bad)


# ---- layouts -------------------------------------------------------------------------------

coordinates = st.lists(st.integers(0, 15), min_size=1, max_size=8)


@SOME
@given(coordinates, coordinates, st.sampled_from(["list", "int32", "uint16", "strided",
                                                  "readonly"]))
def test_layout_offsets_do_not_depend_on_how_coordinates_are_given(rows, cols, how):
    layout = Swizzled(RowMajor(16, 64, pad=8), Swizzle(3, 3, 3))
    n = min(len(rows), len(cols))
    r, c = np.array(rows[:n]), np.array(cols[:n])
    expected = layout.offset(r, c)

    def given_as(x):
        if how == "list":
            return x.tolist()
        if how == "strided":
            big = np.zeros(2 * x.size, np.int64)
            big[::2] = x
            return big[::2]
        if how == "readonly":
            y = x.copy()
            y.setflags(write=False)
            return y
        return x.astype(how)

    assert np.array_equal(layout.offset(given_as(r), given_as(c)), expected)


@SOME
@given(st.one_of(st.floats(0, 15), st.booleans(), st.text(max_size=2), st.just(np.nan),
                 st.just([1.5])))
def test_layout_coordinates_are_integers(bad):
    with pytest.raises(TypeError, match="integer"):
        RowMajor(16, 16).offset(bad, 0)
    with pytest.raises(TypeError, match="integer"):
        Swizzle(3, 3, 3)(bad)


@SOME
@given(st.integers(0, 70), st.integers(0, 70), st.integers(-70, 70))
def test_swizzles_refuse_what_they_cannot_compute(bits, base, shift):
    try:
        sw = Swizzle(bits, base, shift)
    except ValueError:
        return
    x = np.arange(64, dtype=np.int64) << max(0, base + abs(shift) + bits - 6)
    assert np.array_equal(sw(sw(x)), x)  # an involution wherever it is accepted
    with pytest.raises(ValueError, match="negative"):
        sw(np.array([-1]))


extents = st.tuples(st.integers(-3, 64), st.integers(-3, 64))


@SOME
@given(st.sampled_from(["RowMajor", "ColumnMajor", "PitchLinear", "TensorOpMultiplicand<16,32>",
                        "TensorOpMultiplicandCrosswise<16,64>",
                        "ColumnMajorTensorOpMultiplicandCongruous<16,64>"]),
       st.one_of(extents, st.tuples(st.floats(1, 8), st.integers(1, 8)),
                 st.tuples(st.integers(1, 8)), st.tuples(st.integers(1, 8), st.text(max_size=1)),
                 st.just((4, 4, 4))),
       st.one_of(st.integers(-1, 9), st.floats(1, 8)), st.one_of(st.integers(-1, 64),
                                                               st.tuples(st.integers(-1, 64),
                                                                         st.integers(-1, 8))))
def test_visualize_layout_prints_or_refuses_clearly(name, extent, vectorize, output_shape):
    try:
        text = visualize_layout(name, extent, vectorize, output_shape)
    except (TypeError, ValueError) as error:
        assert str(error)
        return
    assert text.strip()  # never an empty picture
    assert all(isinstance(x, int) and x > 0 for x in extent)


@FEW
@given(st.sampled_from(["RowMajor", "ColumnMajor", "TensorOpMultiplicand<16,64>"]),
       st.integers(10**6, 10**9))
def test_huge_layouts_are_refused_before_allocating(name, n):
    # More than this machine's memory, or (larger still) more than int64 offsets can span.
    huge = "more than this machine's|may span at most 2\\*\\*63"
    with refused_quickly(), pytest.raises(ValueError, match=huge):
        visualize_layout(name, (n * 64, n * 64))
    with refused_quickly(), pytest.raises(ValueError, match=huge):
        Swizzled(RowMajor(n, n), Swizzle(3, 3, 3))
    with refused_quickly(), pytest.raises(ValueError, match=huge):
        TensorOpMultiplicand(16, 64, shape=(n * 8, n * 64)).offsets()
