"""kernel2: kernel1 with swizzled shared tiles, so its ldmatrix reads are conflict-free.

The schedule is kernel1's; only the shared layout changes: each tile's 16-byte column chunks
are XOR-ed with the row's 128-byte line index (`conflict_free_swizzle`), so the 8 rows an
ldmatrix phase reads, and the 128 bytes a quarter-warp stores, fall in 8 different bank groups.
"""

from .blocks import shared_tiles
from .kernel import Kernel
from .kernel1 import kernel1

kernel2 = Kernel("kernel2", "kernel1 with swizzled shared tiles (conflict-free)",
                 kernel1.program, lambda p: shared_tiles(p, swizzled=True),
                 kernel1.defaults, kernel1.requires, twin_schedule="gemm_tiled")
