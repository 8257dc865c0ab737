"""Building blocks the kernel ladder shares: shared tiles, copies, fragments, mma, epilogue.

Each function issues warp-wide instructions on a `Machine` (see machine.py for the array
conventions) and has a same-named device function in ``tcsim/hw/kernels/gemm.cuh`` issuing the same
instructions at the same addresses. Lane and register positions come from tcsim's fragment
tables (`tcsim.isa.fragments`), never from hand-written formulas.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..isa.fragments import mma_fragment
from ..isa.validate import integer
from ..memory.layouts import RowMajor, Swizzle, Swizzled, TileLayout
from .machine import Machine, byte_addresses
from .params import MMA_M, MMA_N, VECTOR, GemmParams

# ---- shared-memory tiles ---------------------------------------------------------------------

TILE_OPERANDS = ("A", "B", "C", "D")  # the global operand a tile holds a piece of
ELEMENT_SIZES = (1, 2, 4)  # bytes: fp8, f16 and bf16, f32


@dataclass(frozen=True)
class SharedTile:
    """A block tile of operand A or B in shared memory: where it starts and how it is laid out."""

    operand: str
    layout: TileLayout
    base: int  # byte address of the tile's start
    element_bytes: int = 2  # f16

    def __post_init__(self) -> None:
        # refused here, naming the argument, rather than deep in a run
        if self.operand not in TILE_OPERANDS:
            raise ValueError(f"SharedTile operand must be one of "
                             f"{', '.join(map(repr, TILE_OPERANDS))}, got {self.operand!r}")
        if not isinstance(self.layout, TileLayout):
            raise TypeError(f"SharedTile {self.operand} layout must be a tile layout (RowMajor, "
                            f"Swizzled, tcsim.Layout, ...), got {self.layout!r}")
        object.__setattr__(self, "base", integer(self.base, f"SharedTile {self.operand} base"))
        size = integer(self.element_bytes, f"SharedTile {self.operand} element_bytes")
        if size not in ELEMENT_SIZES:
            raise ValueError(f"SharedTile {self.operand} element_bytes must be 1 (fp8), 2 (f16, "
                             f"bf16) or 4 (f32), got {size}")
        object.__setattr__(self, "element_bytes", size)

    def address(self, rows, cols) -> np.ndarray:
        """Byte addresses of elements (rows, cols) of the tile."""
        return self.base + byte_addresses(self.layout.offset(rows, cols), self.element_bytes)

    @property
    def size(self) -> int:
        """Bytes the tile spans, padding and swizzle included (the layout's capacity)."""
        return self.layout.capacity * self.element_bytes

    @property
    def end(self) -> int:
        """The byte after the tile: where the next tile may start."""
        return self.base + self.size

    @property
    def swizzle(self) -> Swizzle:
        """The XOR swizzle applied to the row-major offset (Swizzle(0, 0) when none)."""
        return self.layout.swizzle if isinstance(self.layout, Swizzled) else Swizzle(0, 0)


def conflict_free_swizzle(cols: int) -> Swizzle:
    """The swizzle that makes a row-major f16 tile ``cols`` wide conflict-free.

    ldmatrix reads 8 rows at one 16-byte column chunk, and a quarter-warp of 16-byte stores
    writes 128 consecutive bytes. XOR-ing the index of the 128-byte line (row bits above the
    line) into the chunk's low bits gives the 8 rows 8 different chunks, i.e. all 32 banks:
    rows of 64 elements or more use ``Swizzle<3, 3, log2(cols) - 3>`` (line index = row), narrower
    rows ``Swizzle<log2(cols / 8), 3, 3>`` (line index = offset bits 6 and up).
    """
    if cols < 16 or cols & (cols - 1):
        raise ValueError(f"a swizzled tile needs a power-of-two width >= 16, got {cols}")
    chunks_bits = int(np.log2(cols // VECTOR))
    return Swizzle(min(3, chunks_bits), 3, max(3, int(np.log2(cols)) - 3))


def shared_tiles(p: GemmParams, swizzled: bool, stage: int = 0) -> tuple[SharedTile, SharedTile]:
    """A (block_m x block_k) then B (block_k x block_n), row-major, optionally swizzled; stage
    ``s`` of a pipeline starts ``s * stage_bytes`` in."""
    a = RowMajor(p.block_m, p.block_k)
    b = RowMajor(p.block_k, p.block_n)
    if swizzled:
        a = Swizzled(a, conflict_free_swizzle(p.block_k))
        b = Swizzled(b, conflict_free_swizzle(p.block_n))
    base, size = stage * p.stage_bytes, p.element_bytes("A")
    return SharedTile("A", a, base, size), SharedTile("B", b, base + p.a_tile_bytes, size)


# ---- global -> shared copies -------------------------------------------------------------------


def tile_vectors(p: GemmParams, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of the 16-byte vectors each thread copies: thread t takes vectors t,
    t + threads, t + 2 * threads, ... in row-major order. Shape (warps, per thread, 32)."""
    per_row = cols // p.vector
    per_thread = rows * per_row // p.threads
    thread = np.arange(p.warps)[:, None, None] * 32 + np.arange(32)
    v = np.arange(per_thread)[None, :, None] * p.threads + thread
    return v // per_row, v % per_row * p.vector


def load_tile(m: Machine, tile: SharedTile, k_tile: int) -> np.ndarray:
    """Global -> registers: this thread's vectors of the operand's (block, k) tile."""
    rows, cols = tile_vectors(m.params, *tile_shape(m.params, tile.operand))
    return m.load_global(f"{tile.operand}_gmem_load", tile.operand, rows, cols, k_tile,
                         m.params.vector)


def store_tile(m: Machine, tile: SharedTile, registers: np.ndarray) -> None:
    """Registers -> shared: each vector at its place in the tile's layout."""
    rows, cols = tile_vectors(m.params, *tile_shape(m.params, tile.operand))
    m.store_shared(f"{tile.operand}_smem_store", tile.address(rows, cols), registers)


def copy_tile(m: Machine, tile: SharedTile, k_tile: int) -> None:
    store_tile(m, tile, load_tile(m, tile, k_tile))


def copy_tile_async(m: Machine, tile: SharedTile, k_tile: int) -> None:
    """Global -> shared without registers: one ``cp.async.cg`` (16 bytes) per vector."""
    rows, cols = tile_vectors(m.params, *tile_shape(m.params, tile.operand))
    m.copy_async(f"{tile.operand}_cp_async", tile.operand, rows, cols, k_tile,
                 tile.address(rows, cols))


def tile_shape(p: GemmParams, operand: str) -> tuple[int, int]:
    """(rows, cols) of the block's A or B tile."""
    return (p.block_m, p.block_k) if operand == "A" else (p.block_k, p.block_n)


# ---- shared -> register fragments ------------------------------------------------------------


def _regroup(registers: np.ndarray, per: int) -> np.ndarray:
    """(..., T, 32, per * r) -> (..., T * per, 32, r): one ldmatrix's matrices to mma tiles."""
    *lead, t, lanes, n = registers.shape
    r = registers.reshape(*lead, t, lanes, per, n // per)
    return np.moveaxis(r, -2, -3).reshape(*lead, t * per, lanes, n // per)


def load_a_fragments(m: Machine, tile: SharedTile, warp_k: int, matrices: int) -> np.ndarray:
    """The warp's A fragments for one warp_k step: registers (blocks, warps, tiles_m, tiles_k,
    32, mma_k / 4). ``matrices`` 2: one ``ldmatrix.x2`` per 16x8 tile (lanes 0-15 give rows
    0-15); 4: one ``ldmatrix.x4`` per 16x16 (lanes 16-31 give the same rows 8 columns on),
    which is two m16n8k8 A fragments or one m16n8k16 fragment."""
    p = m.params
    lane = m.lane
    per = matrices // 2 // (p.mma_k // 8)  # mma tiles per instruction, along K
    count = p.tiles_k // per  # instructions along K
    row = (m.warp_row * p.warp_m)[:, :, None, None] + \
        (np.arange(p.tiles_m) * MMA_M)[:, None, None] + lane % 16
    second_half = lane // 16 * 8 if matrices == 4 else 0 * lane  # .x2 ignores lanes 16-31
    col = warp_k * p.warp_k + (np.arange(count) * 4 * matrices)[:, None] + second_half
    regs = m.ldmatrix("A_smem_ldmatrix", f"x{matrices}", tile.address(row, col))
    return _regroup(regs, per)


def load_b_fragments(m: Machine, tile: SharedTile, warp_k: int, matrices: int) -> np.ndarray:
    """The warp's B fragments for one warp_k step: registers (blocks, warps, tiles_k, tiles_n,
    32, mma_k / 8), by ``ldmatrix.x{matrices}.trans``. For m16n8k8, lanes 8i .. 8i+7 give the 8
    K rows of the i-th 8x8 tile along N; for m16n8k16 (``.x4``), lanes 0-15 give the 16 K rows
    of one tile and lanes 16-31 those of the next."""
    p = m.params
    lane = m.lane
    k_rows = p.mma_k // 8  # 8x8 matrices per fragment, stacked along K
    per = matrices // k_rows  # N tiles per instruction
    within = lane // 8 % matrices  # the matrix a lane's row belongs to
    row = warp_k * p.warp_k + (np.arange(p.tiles_k) * p.mma_k)[:, None, None] + \
        within % k_rows * 8 + lane % 8
    col = (m.warp_col * p.warp_n)[:, :, None, None] + \
        (np.arange(p.tiles_n // per) * MMA_N * per)[:, None] + within // k_rows * MMA_N
    regs = m.ldmatrix("B_smem_ldmatrix", f"x{matrices}.trans", tile.address(row, col))
    return _regroup(regs, per)


def compute_block_tile(m: Machine, A_smem: SharedTile, B_smem: SharedTile, acc: np.ndarray,
                       a_matrices: int, b_matrices: int) -> np.ndarray:
    """Each warp walks the shared tiles in warp_k steps: fragments by ldmatrix, then mma."""
    for warp_k in range(m.params.block_k // m.params.warp_k):
        a = load_a_fragments(m, A_smem, warp_k, a_matrices)
        b = load_b_fragments(m, B_smem, warp_k, b_matrices)
        acc = mma_warp_tile(m, a, b, acc)
    return acc


def compute_pipelined(m: Machine, A_smem: SharedTile, B_smem: SharedTile,
                      acc: np.ndarray) -> np.ndarray:
    """compute_block_tile with register double buffering: the fragments of warp_k step s + 1
    are loaded before the mma of step s, so ldmatrix latency hides behind tensor-core work."""
    steps = m.params.block_k // m.params.warp_k
    m.fragments_ahead()
    a, b = load_a_fragments(m, A_smem, 0, 4), load_b_fragments(m, B_smem, 0, 4)
    for warp_k in range(steps):
        if warp_k + 1 < steps:
            a_next = load_a_fragments(m, A_smem, warp_k + 1, 4)
            b_next = load_b_fragments(m, B_smem, warp_k + 1, 4)
        acc = mma_warp_tile(m, a, b, acc)
        if warp_k + 1 < steps:
            a, b = a_next, b_next
    return acc


# ---- tensor cores ------------------------------------------------------------------------------


def zero_accumulators(m: Machine) -> np.ndarray:
    """(blocks, warps, tiles_m, tiles_n, 32, accumulator registers), all +0."""
    p = m.params
    return m.zeros(p.warps, p.tiles_m, p.tiles_n, 32, mma_fragment(p.qualifier, "c").registers)


def mma_warp_tile(m: Machine, a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """For each K step in turn, every (m, n) tile of the warp: ``acc += a[m, k] @ b[k, n]``."""
    for k in range(a.shape[-3]):
        acc = m.mma("mma", a[..., k, :, :][..., :, None, :, :],
                    b[..., k, :, :, :][..., None, :, :, :], acc)
    return acc


# ---- epilogue ----------------------------------------------------------------------------------


def pair_coordinates(m: Machine, tiles: tuple[int, int] | None = None,
                     origin: tuple[np.ndarray, np.ndarray] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) in the block tile of each lane's f16 pairs of C/D: shape (warps, tiles_m,
    tiles_n, pairs, 32). A pair is two adjacent columns, one 32-bit word in memory. A warp
    holds ``tiles`` (default the params' tiles_m x tiles_n) m16n8 accumulators from its
    ``origin`` (rows, cols: (warps, 1) each; default the ladder's warp tiles)."""
    p = m.params
    tiles_m, tiles_n = tiles or (p.tiles_m, p.tiles_n)
    warp_row, warp_col = origin or (m.warp_row * p.warp_m, m.warp_col * p.warp_n)
    coords = mma_fragment(p.qualifier, "c").coords  # (32, 4, 2): (row, col) per element
    assert (coords[:, 1::2] - coords[:, 0::2] == (0, 1)).all()  # elements 2i, 2i+1: a pair
    first = np.moveaxis(coords[:, 0::2], 0, 1)  # (pairs, 32, 2): the pair's low element
    row = warp_row[:, :, None, None, None] + \
        (np.arange(tiles_m) * MMA_M)[:, None, None, None] + first[..., 0]
    col = warp_col[:, :, None, None, None] + \
        (np.arange(tiles_n) * MMA_N)[:, None, None] + first[..., 1]
    return row, col


def epilogue(m: Machine, acc: np.ndarray,
             origin: tuple[np.ndarray, np.ndarray] | None = None) -> None:
    """``D = f16(alpha * acc + beta * C)`` (`epilogue_words`), C and D moving as f16 pairs:
    ``ld.global.b32`` / ``st.global.b32`` per register pair. ``acc``: (blocks, warps, tiles_m,
    tiles_n, 32, registers), m16n8 accumulators from each warp's ``origin`` (see
    `pair_coordinates`). A ragged kernel predicates off the pairs past the matrix's edge."""
    row, col = pair_coordinates(m, acc.shape[-4:-2], origin)
    clip = m.params.ragged  # a ragged kernel's edge tiles: nothing past the matrix
    c = m.load_global("C_gmem_load", "C", row, col, vector=2, clip=clip)  # (..., pairs, 32, 1)
    d = epilogue_words(m, acc, c[..., 0])
    m.store_global("D_gmem_store", "D", row, col, d[..., None], clip=clip)


def epilogue_words(m: Machine, acc: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D's f16 pairs ``f16(alpha * acc + beta * C)``: the machine's epilogue arithmetic
    (`Machine.epilogue_words`, which a twin generator records as one instruction)."""
    return m.epilogue_words(acc, c)
