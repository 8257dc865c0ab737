"""The kernels of docs/own-kernel.md: a GEMM written from scratch on tcsim's Machine.

Copy this file and change it. `mine`, `mine_swizzled` and `mine_padded` are one schedule on
three shared-memory layouts (row-major, whose ldmatrix reads conflict; swizzled; padded);
`mine_hopper` is a Hopper kernel (TMA copies on mbarriers, wgmma). Each is a `tcsim.Kernel`,
so it goes wherever a built-in kernel goes:

    tcsim trace examples/own_kernel.py:mine 1024 1024 1024
    tcsim compare examples/own_kernel.py:mine examples/own_kernel.py:mine_swizzled 1024 1024 1024
    tcsim explain examples/own_kernel.py:mine_padded 4096 4096 4096

and in Python ``tcsim.run(mine, A, B)``, ``tcsim.trace(mine, M, N, K).explain()``.
"""

import numpy as np

import tcsim
from tcsim import (
    GemmParams,
    Kernel,
    MatrixDescriptor,
    RowMajor,
    SharedTile,
    Swizzle,
    Swizzled,
    TensorMap,
)

# ---- the tiles ---------------------------------------------------------------------------------
# A block computes a 128 x 128 tile of D, K in steps of 32; four warps each own 64 x 64 of it.
PARAMS = GemmParams(block_m=128, block_n=128, block_k=32, warp_m=64, warp_n=64, warp_k=32)


def row_major_tiles(p):
    """A (128 x 32) at byte 0, then B (32 x 128) right after it: plain row-major."""
    a = SharedTile("A", RowMajor(p.block_m, p.block_k), base=0)
    b = SharedTile("B", RowMajor(p.block_k, p.block_n), base=a.end)
    return a, b


# ---- the copy: global -> registers -> shared ------------------------------------------------


def copy_tile(m, p, tile, k):
    """Every thread copies 16-byte vectors (8 f16) of the block's K tile ``k`` of A or B:
    thread t takes vectors t, t + 128, t + 256, ... in row-major order."""
    rows, cols = tile.layout.shape
    per_row = cols // 8  # vectors in a row
    copies = rows * per_row // p.threads  # vectors per thread
    thread = m.warp * 32 + m.lane  # (warps, 32)
    vector = np.arange(copies)[:, None] * p.threads + thread[:, None, :]  # (warps, copies, 32)
    row, col = vector // per_row, vector % per_row * 8
    registers = m.load_global(f"{tile.operand}_load", tile.operand, row, col, k_tile=k)
    m.store_shared(f"{tile.operand}_store", tile.address(row, col), registers)


# ---- the fragments: shared -> registers by ldmatrix --------------------------------------------


def a_fragments(m, p, A_smem):
    """The warp's A fragments for the whole K tile, registers (blocks, warps, tiles_m,
    block_k / 8, 32, 2). One ldmatrix.x4 reads a 16 x 16 piece: lanes 0-15 give its rows at
    column 0, lanes 16-31 the same rows at column 8; matrices 0 and 1 are the m16n8k8 A
    fragment of the first 8 columns, 2 and 3 of the next 8."""
    lane = m.lane
    warp_row = m.warp_row.reshape(-1, 1, 1, 1) * p.warp_m  # (warps, 1, 1, 1)
    tile_m = np.arange(p.tiles_m).reshape(-1, 1, 1) * 16  # (tiles_m, 1, 1)
    k16 = np.arange(p.block_k // 16).reshape(-1, 1) * 16  # (block_k / 16, 1)
    row = warp_row + tile_m + lane % 16
    col = k16 + lane // 16 * 8
    regs = m.ldmatrix("A_ldmatrix", "x4", A_smem.address(row, col))  # (..., 32, 4)
    *lead, k16s, lanes, _ = regs.shape
    regs = regs.reshape(*lead, k16s, lanes, 2, 2)  # (..., 32, k-step in the pair, register)
    return np.moveaxis(regs, -2, -3).reshape(*lead, k16s * 2, lanes, 2)


def b_fragments(m, p, B_smem):
    """The warp's B fragments, registers (blocks, warps, block_k / 8, tiles_n, 32, 1). One
    ldmatrix.x4.trans reads four 8 x 8 matrices side by side along N: lanes 8j .. 8j + 7 give
    the 8 K rows of matrix j; transposed, register j is the m16n8k8 B fragment of N tile j."""
    lane = m.lane
    warp_col = m.warp_col.reshape(-1, 1, 1, 1) * p.warp_n
    k8 = np.arange(p.block_k // 8).reshape(-1, 1, 1) * 8  # (k steps, 1, 1)
    n32 = np.arange(p.tiles_n // 4).reshape(-1, 1) * 32  # (groups of 4 N tiles, 1)
    row = k8 + lane % 8
    col = warp_col + n32 + lane // 8 * 8
    regs = m.ldmatrix("B_ldmatrix", "x4.trans", B_smem.address(row, col))  # (..., 32, 4)
    *lead, groups, lanes, four = regs.shape
    return np.moveaxis(regs, -1, -2).reshape(*lead, groups * four, lanes, 1)


# ---- the epilogue: accumulators -> D ----------------------------------------------------------


def store_d(m, p, acc):
    """f16 accumulators are D's f16 pairs already: each register goes to D as one 32-bit
    store, at the (row, col) of its first element in the accumulator's fragment map."""
    frag = tcsim.fragment(p.qualifier, "d")  # (lane, element) -> (row, col), 16 x 8
    first = np.moveaxis(frag.coords[:, 0::2], 0, 1)  # (registers, 32, 2): each pair's first
    warp_row = m.warp_row.reshape(-1, 1, 1, 1, 1) * p.warp_m
    warp_col = m.warp_col.reshape(-1, 1, 1, 1, 1) * p.warp_n
    tile_m = np.arange(p.tiles_m).reshape(-1, 1, 1, 1) * 16
    tile_n = np.arange(p.tiles_n).reshape(-1, 1, 1) * 8
    row = warp_row + tile_m + first[..., 0]  # (warps, tiles_m, tiles_n, registers, 32)
    col = warp_col + tile_n + first[..., 1]
    m.store_global("D_store", "D", row, col, np.moveaxis(acc, -1, -2)[..., None])


# ---- the schedule ------------------------------------------------------------------------------


def program(m, p, A_smem, B_smem):
    acc = m.zeros(p.warps, p.tiles_m, p.tiles_n, 32, 2)  # m16n8 f16 accumulators
    for k in m.k_tiles():
        copy_tile(m, p, A_smem, k)
        copy_tile(m, p, B_smem, k)
        m.sync()  # the tiles are in shared memory
        a, b = a_fragments(m, p, A_smem), b_fragments(m, p, B_smem)
        for step in range(p.block_k // 8):  # acc[i, j] += a[i, step] @ b[step, j]
            acc = m.mma("mma", a[..., :, step, None, :, :], b[..., None, step, :, :, :], acc)
        m.sync()  # every warp is done reading before the next copy overwrites the tiles
    store_d(m, p, acc)


def m16n8k8_f16(p):
    """What `program` assumes of the params: k8 fragments and f16 accumulators, which
    store_d stores as D's f16 pairs (f32 ones would need a conversion it does not make)."""
    if (p.mma_k, p.accumulate) != (8, "f16"):
        raise ValueError(f"mine and its cures run m16n8k8 with f16 accumulators: got "
                         f"mma_k={p.mma_k}, accumulate={p.accumulate!r}")


mine = Kernel("mine", "my 128x128x32 GEMM, row-major shared tiles", program, row_major_tiles,
              PARAMS, requires=m16n8k8_f16, takes_c=False)


# ---- the cures ---------------------------------------------------------------------------------


def swizzled_tiles(p):
    """XOR a line number into the 16-byte chunk's index, so that the 8 rows one ldmatrix
    phase reads land in 8 different chunks of the banks' 128 bytes. An f16 offset's bits 0-2
    are the element in its chunk (base 3). A's rows are 64 bytes, two to a 128-byte line:
    the line's number (bits 6-7) goes into the chunk's bits 3-4 (shift 3). B's rows are 256
    bytes: the row's number (bits 7-9) goes into the chunk's bits 3-5 (shift 4)."""
    a = SharedTile("A", Swizzled(RowMajor(p.block_m, p.block_k), Swizzle(2, 3, 3)), base=0)
    b = SharedTile("B", Swizzled(RowMajor(p.block_k, p.block_n), Swizzle(3, 3, 4)), base=a.end)
    return a, b


mine_swizzled = Kernel("mine_swizzled", "mine with swizzled shared tiles", program,
                       swizzled_tiles, PARAMS, requires=m16n8k8_f16, takes_c=False)


def padded_tiles(p):
    """8 f16 (16 bytes) of padding after every row: the rows one ldmatrix phase reads start
    16 bytes further along the banks each. The tiles grow, and so does the block's shared
    memory (sized from the tiles)."""
    a = SharedTile("A", RowMajor(p.block_m, p.block_k, pad=8), base=0)
    b = SharedTile("B", RowMajor(p.block_k, p.block_n, pad=8), base=a.end)
    return a, b


mine_padded = Kernel("mine_padded", "mine with padded shared tiles", program, padded_tiles,
                     PARAMS, requires=m16n8k8_f16, takes_c=False)



# ---- Hopper: TMA copies on mbarriers, wgmma from shared memory -----------------------------------
# One producer warpgroup (one thread issues the copies) and one consumer warpgroup, which
# computes the block's 64 x 256 tile with wgmma m64n256k16; two stages of A and B tiles.
HOPPER = GemmParams(block_m=64, block_n=256, block_k=64, warp_m=64, warp_n=256, warp_k=16,
                    mma_k=16, stages=2, producers=1)
ROW = 128  # bytes: a 64-element f16 row, one 128-byte swizzle row
BOX = 64  # B's K tile arrives as boxes of 64 columns (a box row is at most 128 bytes)


def hopper_maps(p, M, N, K):
    """The tensor maps the host encodes: A in block_m x 64 boxes, B in 64 x 64 boxes, both
    with the 128-byte swizzle that wgmma's descriptors read."""
    return (("A", TensorMap(M, K, 2, p.block_m, p.block_k, "128B")),
            ("B", TensorMap(K, N, 2, p.block_k, BOX, "128B")))


def hopper_descriptors(p, stage, kk):
    """wgmma's descriptors of K step ``kk`` (16 columns) of a stage. A is K-major: 32 bytes
    further per step; 8 rows of 128 bytes (SBO) between core-matrix groups. B is MN-major
    (read transposed): 16 rows further per step; LBO the step between 64-column boxes."""
    a = stage * p.stage_bytes + kk * 32
    b = stage * p.stage_bytes + p.a_tile_bytes + kk * 16 * ROW
    desc_a = MatrixDescriptor(a, 16, 8 * ROW, 0, "128B").encode()
    desc_b = MatrixDescriptor(b, p.block_k * ROW, 8 * ROW, 0, "128B").encode()
    return np.array([desc_a], np.uint64), np.array([desc_b], np.uint64)


def hopper_store_d(m, p, acc):
    """The warpgroup's f16 accumulators (blocks, 1, 128, registers) to D: warp w holds lanes
    32w .. 32w + 31 of the warpgroup's fragment map."""
    frag = tcsim.wgmma_fragment(f"m64n{p.block_n}k16.f16.f16.f16", "d")
    first = frag.coords[:, 0::2].reshape(4, 32, -1, 2)  # (warps, lanes, registers, 2)
    row, col = np.moveaxis(first, 1, 2)[..., 0], np.moveaxis(first, 1, 2)[..., 1]
    regs = acc.reshape(acc.shape[0], 4, 32, -1)  # (blocks, warps, lanes, registers)
    m.store_global("D_store", "D", row, col, np.moveaxis(regs, -1, -2)[..., None])


def hopper_program(m, p):
    stages = p.stages * p.stage_bytes  # the barriers follow the stages
    full = m.mbarriers("full", stages, p.stages, arrivals=1)
    empty = m.mbarriers("empty", stages + 8 * p.stages, p.stages, arrivals=4)
    m.sync()  # the barriers are initialized before anyone uses them
    qualifier = f"m64n{p.block_n}k16.f16.f16.f16"

    def producer():  # one thread: wait for a free stage, announce its bytes, copy
        for k in m.k_tiles():
            s = k % p.stages
            if k >= p.stages:  # the consumer released this stage's previous use
                yield from m.wait(empty, s, (k // p.stages - 1) & 1)
            a = s * p.stage_bytes
            m.arrive(full, s, expect_tx=p.stage_bytes)
            m.tma_load("A_tma", "A", a, 0, 0, k, full, s)
            for box in range(p.block_n // BOX):
                m.tma_load("B_tma", "B", a + p.a_tile_bytes + box * p.block_k * ROW,
                           0, box * BOX, k, full, s)

    def consumer():  # a warpgroup: wait for the stage, wgmma on it, release it
        acc = m.zeros(1, 128, tcsim.wgmma_fragment(qualifier, "d").registers)
        for k in m.k_tiles():
            s = k % p.stages
            yield from m.wait(full, s, (k // p.stages) & 1)
            m.wgmma_fence()
            for kk in range(p.block_k // 16):
                acc = m.wgmma("wgmma", qualifier, *hopper_descriptors(p, s, kk), acc,
                              trans_b=True)
            m.wgmma_commit()
            m.wgmma_wait(0)  # this stage's wgmma are done reading it
            m.arrive(empty, s, count=4)  # one arrival per consumer warp
        hopper_store_d(m, p, acc)

    m.run_roles(("producer", producer()), ("consumer", consumer()))


def hopper_requires(p):
    """What this schedule assumes: one consumer warpgroup (block_m 64), K tiles of one
    128-byte swizzle row (block_k 64), B in whole 64-column boxes."""
    if (p.block_m, p.warp_m, p.block_k) != (64, 64, 64) or p.block_n % BOX:
        raise ValueError(f"mine_hopper runs block_m=64 (one consumer warpgroup), block_k=64 "
                         f"and block_n a multiple of {BOX}; got block_m={p.block_m}, "
                         f"block_k={p.block_k}, block_n={p.block_n}")


mine_hopper = Kernel("mine_hopper", "my Hopper GEMM: TMA, mbarriers, wgmma m64n256k16",
                     hopper_program, lambda p: (), HOPPER, hopper_requires, takes_c=False,
                     arch="sm_90a", tensor_maps=hopper_maps)
