"""kernel5: kernel4's schedule with tile dimensions tuned for the H100.

The article tunes for a T4 (256x256 block tiles, block_k 32, warp tiles 128x64, 8 warps); on
the H100 those tiles spill with f32 accumulators. 128x128x32 blocks of four 64x64 warps are the
best for both accumulator types (`benchmarks/tune_gpu.py`; the figures are in
docs/kernels.md). Smaller blocks and a shorter block_k let several blocks share an SM, so one
block's barrier waits overlap another's work: with f16 accumulators the twin asks for registers
for 3 blocks an SM; f32 accumulators need more registers than that leaves, so one.
"""

from .kernel import Kernel
from .kernel4 import kernel4
from .params import GemmParams

kernel5 = Kernel("kernel5", "kernel4 with tile dimensions tuned for the H100", kernel4.program,
                 kernel4.tiles,
                 GemmParams(block_m=128, block_n=128, block_k=32, warp_m=64, warp_n=64,
                            warp_k=32), kernel4.requires,
                 blocks_per_sm=(("f16", 3), ("f32", 1)), twin_schedule=kernel4.twin_schedule)
