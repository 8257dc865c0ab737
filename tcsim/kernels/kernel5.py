"""kernel5: kernel4's schedule with tile dimensions tuned for the GPU.

The article tunes for a T4 (256x256 block tiles, block_k 32, warp tiles 128x64, 8 warps). On
the H100 (`benchmarks/tune_gpu.py`, 8192^3, docs/benchmarks.md) those tiles run f16
accumulation at 327 TFLOP/s but spill with f32 accumulators (3 TFLOP/s); 128x128x32 blocks of
four 64x64 warps run 327 (f16) and 290 (f32), the best for both, against 290 and 268 for
kernel4's 256x128x64. Smaller blocks and a shorter block_k let several blocks share an SM, so
one block's barrier waits overlap another's work: with f16 accumulators the twin asks for
registers for 3 blocks an SM (168 a thread, 12 warps an SM); f32 accumulators need 238
registers, and squeezing them into 168 spills (191 against 284 TFLOP/s at 8192^3).
"""

from .kernel import Kernel
from .kernel4 import kernel4
from .params import GemmParams

kernel5 = Kernel("kernel5", "kernel4 with tile dimensions tuned for the H100", kernel4.program,
                 kernel4.tiles,
                 GemmParams(block_m=128, block_n=128, block_k=32, warp_m=64, warp_n=64,
                            warp_k=32), kernel4.requires,
                 blocks_per_sm=(("f16", 3), ("f32", 1)), twin_schedule=kernel4.twin_schedule)
