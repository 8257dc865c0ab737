"""kernel8: kernel7 on persistent blocks that walk an L2-friendly tile order.

kernel7 launches one block per tile, and the GPU hands them out along N first: at 8192^3 each
wave of 132 tiles of 128 x 256 spans 4 block rows and all 32 block columns, so every wave reads
all 128 MiB of B from DRAM again (docs/kernels.md has Nsight Compute's DRAM bytes and L2 hit
rates of both). kernel8 changes only which block computes which tile (`tcsim.kernels.scheduler`):

- **tile order**: groups of 16 block rows, walked column by column, so the tiles in flight
  share their rows of A and columns of B in L2;
- **persistent blocks**: one block per SM (132 on the H100 SXM) loops over tiles b, b + 132,
  ...; the pipeline's stages and barrier phases run on across tiles, so the producer copies
  the next tile's first stages while the consumers store the last one.

The instructions, and so the trace, are kernel7's; DRAM traffic and time are not.
"""

from __future__ import annotations

from dataclasses import replace

from .kernel7 import kernel7

H100_SXM_SMS = 132  # one persistent block per SM (the H100 SXM5's; tcsim.perf's gpus.json)

kernel8 = replace(
    kernel7, name="kernel8",
    summary="kernel7 on persistent blocks walking tiles in groups of 16 block rows",
    defaults=replace(kernel7.defaults, group_m=16, persistent_blocks=H100_SXM_SMS))

__all__ = ["kernel8"]
