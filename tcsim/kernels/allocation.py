"""A block's shared memory, sized from its tiles, and the static check of the tiles.

A kernel's `SharedTile`s say where each tile starts and how it is laid out, so they say how
many bytes it spans (`SharedTile.end`, from the layout's capacity: a padded or swizzled layout
spans what it spans). The block's shared memory is the larger of what the tiles span and
what `GemmParams.shared_bytes` counts (``stages`` unpadded A and B tiles, plus a
warp-specialized kernel's mbarriers and epilogue buffers, which a schedule places itself),
unless the kernel states it (``Kernel(..., shared=...)``). Before anything runs, `check_tiles`
refuses tiles that overlap, or that do not fit the stated bytes or what one block may have.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from ..memory.access import SM90_BLOCK_LIMIT
from .blocks import SharedTile

ALIGN = 16  # bytes: the block's shared memory is whole 16-byte vectors (the checks' unit)


def tiles_end(tiles: Sequence[SharedTile]) -> int:
    """The byte after the furthest tile (0 without tiles)."""
    return max((t.end for t in tiles), default=0)


def block_bytes(kernel: str, tiles: Sequence[SharedTile], counted: int,
                stated: int | None) -> int:
    """The block's shared memory: ``stated`` when the kernel states it, else the larger of the
    tiles' end and ``counted`` (GemmParams' count)."""
    if not isinstance(tiles, (tuple, list)):
        raise TypeError(f"{kernel}: tiles(params) must return a tuple of SharedTiles ((tile,) "
                        f"for one, () for none), got {tiles!r}")
    for tile in tiles:
        if not isinstance(tile, SharedTile):
            raise TypeError(f"{kernel}: tiles(params) must give SharedTiles, got {tile!r}")
    if stated is not None:
        return stated
    return max(-(-tiles_end(tiles) // ALIGN) * ALIGN, counted)


def describe(tile: SharedTile) -> str:
    return f"tile {tile.operand} ({tile.layout!r}) at bytes {tile.base:,}..{tile.end:,}"


def check_tiles(kernel: str, tiles: Sequence[SharedTile], size: int, stated: bool,
                limit: int = SM90_BLOCK_LIMIT, gpu: str = "an H100") -> None:
    """Refuse (ValueError) a tile that starts below 0, two tiles that share bytes, tiles that
    end past the ``size`` bytes the kernel ``stated``, or a block of more than ``limit`` bytes
    (what one block may have on ``gpu``), naming the tiles and the bytes. (`block_bytes`,
    which gives ``size``, has checked that they are SharedTiles.)"""
    for tile in tiles:
        if tile.base < 0:
            raise ValueError(f"{kernel}: {describe(tile)} starts before shared memory")
    for a, b in combinations(sorted(tiles, key=lambda t: t.base), 2):
        if b.base < a.end:
            raise ValueError(
                f"{kernel}: {describe(a)} and {describe(b)} overlap in bytes "
                f"{b.base:,}..{min(a.end, b.end):,}: start {b.operand} at {a.end:,} or later")
    end = tiles_end(tiles)
    if stated and end > size:
        last = max(tiles, key=lambda t: t.end)
        raise ValueError(f"{kernel}: {describe(last)} ends past the block's {size:,} bytes of "
                         f"shared memory (the kernel's shared=): {end - size:,} bytes too many")
    if size > limit:
        what = " and ".join(describe(t) for t in tiles) or "its stages"
        raise ValueError(f"{kernel}: the block needs {size:,} bytes of shared memory ({what}); "
                         f"a block has at most {limit:,} on {gpu}")
