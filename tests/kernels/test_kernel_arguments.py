"""`tcsim.Kernel` and `tcsim.SharedTile` refuse arguments of the wrong kind where they are
made, naming the argument (not as an AttributeError or a TypeError deep in a run), and what a
kernel's tiles function returns is checked at its first use."""

import numpy as np
import pytest

import tcsim
from tcsim import GemmParams, Kernel, RowMajor, SharedTile, Swizzle, Swizzled

PARAMS = GemmParams(block_m=128, block_n=128, block_k=32, warp_m=64, warp_n=64, warp_k=32)


def program(m, p, *tiles):
    pass


def tiles(p):
    return (SharedTile("A", RowMajor(p.block_m, p.block_k), base=0),)


def test_the_five_positional_arguments_still_make_a_kernel():
    kernel = Kernel("k", "a summary", program, tiles, PARAMS)
    assert kernel.defaults is PARAMS and kernel.params().block_m == 128


@pytest.mark.parametrize("args, kind, words", [
    (("k", "s", program, tiles, dict(block_m=64)), TypeError,
     "defaults must be a tcsim.GemmParams"),
    (("k", "s", program, tiles(PARAMS), PARAMS), TypeError, "tiles must be a function"),
    (("k", "s", "program", tiles, PARAMS), TypeError, "program must be a function"),
    ((None, "s", program, tiles, PARAMS), TypeError, "name must be a string"),
    (("k", 3, program, tiles, PARAMS), TypeError, "summary must be a string"),
    (("k", "s", program, tiles, PARAMS, "nothing"), TypeError, "requires must be a function"),
])
def test_a_kernel_refuses_arguments_of_the_wrong_kind(args, kind, words):
    with pytest.raises(kind, match=words):
        Kernel(*args)


def test_takes_c_must_be_a_bool():
    with pytest.raises(TypeError, match="takes_c must be True or False"):
        Kernel("k", "s", program, tiles, PARAMS, takes_c="no")


@pytest.mark.parametrize("returned, words", [
    (lambda p: SharedTile("A", RowMajor(8, 8), base=0),
     r"must return a tuple of SharedTiles \(\(tile,\)"),
    (lambda p: None, "must return a tuple of SharedTiles"),
    (lambda p: (RowMajor(8, 8),), "must give SharedTiles"),
])
def test_what_the_tiles_function_returns_is_checked_at_first_use(returned, words):
    kernel = Kernel("k", "s", program, returned, PARAMS)
    for use in (lambda: kernel.params(), lambda: tcsim.trace(kernel, 128, 128, 64)):
        with pytest.raises(TypeError, match=rf"k: tiles\(params\) {words}"):
            use()


@pytest.mark.parametrize("kwargs, kind, words", [
    (dict(operand="X"), ValueError, "operand must be one of 'A', 'B', 'C', 'D', got 'X'"),
    (dict(operand="a"), ValueError, "operand must be one of"),
    (dict(base=0.0), TypeError, "SharedTile A base must be an integer, got 0.0"),
    (dict(base="0"), TypeError, "base must be an integer"),
    (dict(element_bytes=3), ValueError, "element_bytes must be 1 .* 2 .* or 4 .*, got 3"),
    (dict(element_bytes=2.0), TypeError, "element_bytes must be an integer"),
    (dict(layout=(64, 64)), TypeError, "layout must be a tile layout"),
    (dict(layout=np.zeros((64, 64))), TypeError, "layout must be a tile layout"),
])
def test_a_shared_tile_refuses_arguments_of_the_wrong_kind(kwargs, kind, words):
    args = dict(operand="A", layout=RowMajor(64, 64), base=0) | kwargs
    with pytest.raises(kind, match=words):
        SharedTile(**args)


def test_good_tiles_are_kept_as_given():
    tile = SharedTile("B", Swizzled(RowMajor(32, 128), Swizzle(3, 3, 4)), np.int64(256),
                      element_bytes=np.int32(4))
    assert (tile.base, tile.element_bytes) == (256, 4)
    assert type(tile.base) is int and type(tile.element_bytes) is int
    assert tile.end == 256 + 32 * 128 * 4
