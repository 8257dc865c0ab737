"""kernel10: kernel9 whose epilogue moves C and D by TMA, so no warp waits on global memory.

kernel9 moved C and D in whole lines, but its consumer warps still issued the loads and the
stores themselves and waited for C, while the tensor pipe idled (docs/kernels.md measures
how far that kept it from cuBLAS). kernel10 changes only the epilogue
(`tcsim.kernels.tma_epilogue`): each consumer warp has two 2 KiB buffers with an mbarrier
each; lane 0 asks TMA for its first boxes of C one K tile before the tile ends, and hands each
64 columns of D to a TMA store that it waits for only when the buffer is needed again. The
main loop, the roles and the tile order are kernel8's; the bits are the same.
"""

from __future__ import annotations

from dataclasses import replace

from .kernel8 import kernel8

kernel10 = replace(
    kernel8, name="kernel10",
    summary="kernel8 with C in and D out by TMA through per-warp buffers",
    defaults=replace(kernel8.defaults, store_buffers=2))

__all__ = ["kernel10"]
