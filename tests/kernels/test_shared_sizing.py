"""Shared memory sized from the tiles (issue 33): the built-in kernels keep their bytes, padded
and moved tiles get theirs, and tiles that overlap or do not fit are refused before anything
runs, naming the tiles and the bytes."""

import numpy as np
import pytest

import tcsim
from tcsim import GemmParams, Kernel, RowMajor, SharedTile
from tcsim.kernels import HOPPER_KERNELS, KERNELS, SEED_KERNELS
from tcsim.kernels.checks import UnwrittenOutputError
from tcsim.kernels.machine import SharedAddressError


def counted_bytes(p: GemmParams) -> int:
    """The block's shared memory as GemmParams counted it before tiles sized it, written out
    here from its rules: ``stages`` A and B tiles; a warp-specialized kernel's full and empty
    mbarriers per stage and one per consumer warp and TMA-epilogue buffer; then, from a
    128-byte row (1024 bytes for TMA boxes), the epilogue's buffers of 16 rows x 128 bytes per
    consumer warp."""
    element = 4 if p.inputs == "f32" else 2
    stage = (p.block_m * p.block_k + p.block_k * p.block_n) * element
    if not p.producers:
        return p.stages * stage
    consumer_warps = 4 * (p.block_m // p.warp_m) * (p.block_n // p.warp_n)
    end = p.stages * stage + 16 * p.stages + 8 * consumer_warps * p.store_buffers
    buffers = p.staged_epilogue + p.store_buffers
    if not buffers:
        return end
    align = 1024 if p.store_buffers else 128
    return -(-end // align) * align + buffers * consumer_warps * 16 * 128


SMALL = dict(block_m=64, block_n=64, block_k=32, warp_m=32, warp_n=32, warp_k=16)
# (kernel, overrides): the defaults and other tile shapes each accepts
CASES = [(name, {}) for name in [*KERNELS, *HOPPER_KERNELS, *SEED_KERNELS]] + [
    ("kernel1", SMALL), ("kernel2", dict(SMALL, block_k=64)), ("kernel3", SMALL),
    ("kernel4", SMALL), ("kernel5", dict(block_m=64)), ("kernel6", dict(stages=3)),
    ("kernel6", dict(SMALL, mma_k=16, stages=2)),
    ("kernel7", dict(stages=3, block_n=128, warp_n=128)),
    ("kernel8", dict(stages=5, block_n=128, warp_n=128)), ("kernel9", dict(stages=3)),
    ("kernel10", dict(stages=3)),
    ("kernel10", dict(store_buffers=1)), ("wmma_shared", dict(block_k=64)),
    ("tf32_puzzle", dict(block_m=64)),
]


@pytest.mark.parametrize("name, overrides", CASES)
def test_the_built_in_kernels_keep_their_shared_bytes(name, overrides):
    kernel = tcsim.kernels.kernel_named(name)
    p = kernel.params(**overrides)
    assert kernel.shared_bytes(p) == counted_bytes(p)
    assert kernel.shared_bytes(p) > 0 or name.startswith("wmma_basic")  # fragments from global


def test_the_defaults_bytes_by_hand():
    # 128x32 + 32x128 f16 tiles; kernel6's 4 stages of them; kernel7's 4 stages of 128x64 +
    # 64x256 and 8 mbarriers; kernel9's, rounded up to a 128-byte row, then 8 consumer warps'
    # staging of 16 x 128 bytes
    assert tcsim.kernel5.shared_bytes(tcsim.kernel5.params()) == 16384
    assert tcsim.kernel6.shared_bytes(tcsim.kernel6.params()) == 65536
    assert tcsim.kernel7.shared_bytes(tcsim.kernel7.params()) == 196608 + 64
    assert tcsim.kernel9.shared_bytes(tcsim.kernel9.params()) == 196736 + 16384


def _program(m, p, A_smem, B_smem):
    """Each thread writes one 16-byte vector of each tile, counted from the tile's end (so the
    last vector of B, the block's last bytes, is written)."""
    for tile in (A_smem, B_smem):
        rows, cols = tile.layout.shape
        v = rows * cols // 8 - 1 - (m.warp * 32 + m.lane)
        m.store_shared(f"{tile.operand}_store", tile.address(v // (cols // 8), v % (cols // 8) * 8),
                       m.zeros(p.warps, 32, 4))
    m.sync()


def _tiles(pad_a=8, pad_b=8, b_base=None):
    def tiles(p):
        a = SharedTile("A", RowMajor(p.block_m, p.block_k, pad=pad_a), 0)
        b = SharedTile("B", RowMajor(p.block_k, p.block_n, pad=pad_b),
                       a.end if b_base is None else b_base)
        return a, b
    return tiles


PARAMS = GemmParams(**SMALL)


def test_padded_tiles_get_their_bytes_without_workarounds():
    kernel = Kernel("padded", "padded tiles", _program, _tiles(), PARAMS)  # stages=1, defaults
    p = kernel.params()
    a_end = 64 * 40 * 2
    assert kernel.shared_bytes(p) == a_end + 32 * 72 * 2 > p.shared_bytes
    tcsim.trace(kernel, 128, 128, 64, exhaustive=True)  # B's last vector, past the old bytes
    # the schedule only copies the tiles: it runs through them, then stores no D
    with pytest.raises(UnwrittenOutputError, match="stored nothing to 16,384 of D's 16,384"):
        tcsim.run(kernel, np.ones((128, 64), np.float16), np.ones((64, 128), np.float16))


def test_an_address_past_the_tiles_is_still_refused():
    def program(m, p, A_smem, B_smem):
        m.store_shared("B_store", np.full((p.warps, 32), B_smem.end), m.zeros(p.warps, 32, 4))

    kernel = Kernel("past", "one vector past B", program, _tiles(), PARAMS)
    with pytest.raises(SharedAddressError, match=f"outside the block's {_tiles()(PARAMS)[1].end}"):
        tcsim.trace(kernel, 64, 64, 32)


def test_overlapping_tiles_are_refused_before_anything_runs(rng):
    ran = []
    kernel = Kernel("overlap", "B starts inside padded A", lambda *a: ran.append(1),
                    _tiles(b_base=PARAMS.a_tile_bytes), PARAMS)
    A = rng.standard_normal((64, 32)).astype(np.float16)
    B = rng.standard_normal((32, 64)).astype(np.float16)
    for entry in (lambda: tcsim.run(kernel, A, B), lambda: tcsim.trace(kernel, 64, 64, 32),
                  lambda: tcsim.trace(kernel, 64, 64, 32, exhaustive=True)):
        with pytest.raises(ValueError, match=r"overlap: tile A \(RowMajor\(64, 32, pad=8\)\) at "
                                             r"bytes 0\.\.5,120 and tile B .* at bytes "
                                             r"4,096\.\.8,704 overlap in bytes 4,096\.\.5,120"):
            entry()
    assert ran == []


def test_tiles_past_the_stated_bytes_are_refused():
    kernel = Kernel("stated", "states too few bytes", _program, _tiles(), PARAMS,
                    shared=lambda p: p.shared_bytes)
    with pytest.raises(ValueError, match=r"tile B .* at bytes 5,120..9,728 ends past the "
                                         r"block's 8,192 bytes .* 1,536 bytes too many"):
        tcsim.trace(kernel, 64, 64, 32)
    roomy = Kernel("roomy", "states more", _program, _tiles(), PARAMS, shared=lambda p: 12288)
    assert roomy.shared_bytes(roomy.params()) == 12288
    for bad in (-1, 1.5, "x"):
        with pytest.raises(ValueError, match="shared"):
            Kernel("bad", "", _program, _tiles(), PARAMS, shared=lambda p, b=bad: b).params()


def test_a_block_larger_than_the_gpu_gives_is_refused():
    big = GemmParams(block_m=128, block_n=128, block_k=64, warp_m=64, warp_n=64, warp_k=32)
    kernel = Kernel("big", "padded tiles", _program, _tiles(pad_a=128, pad_b=128), big)
    # unpadded they take 32,768 bytes; padded 128 x 192 + 64 x 256 f16: more than a T4 block's
    with pytest.raises(ValueError, match=r"needs 81,920 bytes .*tile A .* and tile B .*at "
                                         r"most 65,536 on T4"):
        tcsim.trace(kernel, 256, 128, 128).explain("T4")
    tcsim.trace(kernel, 256, 128, 128).explain("H100-SXM")
    huge = Kernel("huge", "", _program, _tiles(pad_a=800), big)  # A's rows: 864 f16
    with pytest.raises(ValueError, match=r"needs 238,592 bytes .* at most 232,448 on an H100"):
        tcsim.trace(huge, 256, 128, 128)


def test_bad_tiles_are_refused():
    negative = Kernel("negative", "", _program, _tiles(b_base=-16), PARAMS)
    with pytest.raises(ValueError, match="tile B .* starts before shared memory"):
        negative.params()
    not_tiles = Kernel("strings", "", _program, lambda p: ("A", "B"), PARAMS)
    with pytest.raises(TypeError, match="must give SharedTiles, got 'A'"):
        not_tiles.params()


def test_tile_sizes_follow_their_layouts():
    from tcsim import Swizzle, Swizzled

    tile = SharedTile("B", Swizzled(RowMajor(32, 128, pad=0), Swizzle(3, 3, 4)), 256)
    assert (tile.size, tile.end) == (32 * 128 * 2, 256 + 32 * 128 * 2)
    f32 = SharedTile("A", RowMajor(16, 8, pad=4), 0, element_bytes=4)
    assert (f32.size, f32.end) == (16 * 12 * 4, 16 * 12 * 4)


def test_mbarriers_over_a_tile_are_refused():
    from dataclasses import replace

    def program(m, p, A_smem, B_smem):
        m.mbarriers("full", B_smem.end - 16, 4, arrivals=1)

    kernel = Kernel("barriers", "mbarriers over B's last bytes", program, _tiles(), PARAMS,
                    shared=lambda p: 12288)
    with pytest.raises(SharedAddressError, match=r"mbarriers 'full' at bytes 9,712..9,744 "
                                                 r"overlap tile B at bytes 5,120..9,728"):
        tcsim.trace(kernel, 64, 64, 32)
    after = replace(kernel, program=lambda m, p, A, B: m.mbarriers("full", B.end, 4, 1))
    tcsim.trace(after, 64, 64, 32)
