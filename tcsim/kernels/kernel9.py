"""kernel9: kernel8 whose epilogue moves C and D through shared memory in whole lines.

kernel8's consumers load C and store D one 32-bit word per lane, as the whole ladder does:
each warp instruction touches 8 rows, 16 bytes of each. On the H100 the tensor pipe idles
while they do, and that store path is most of it: with the D stores dropped (a timing bound,
not a kernel) kernel8 ran 28% faster at 8192x4096x2048 (docs/kernels.md). kernel9 changes
only the epilogue (`tcsim.kernels.staged_epilogue`): each consumer warp stages 64 columns of
its 16 rows at a time in 2 KiB of shared memory, reading C and writing D as whole 128-byte
lines (``ld.global.cg.v4``, ``st.global.v4``) and turning them to and from the accumulators'
fragment order with ``ldmatrix`` and ``stmatrix``. The main loop, the roles and the tile order
are kernel8's; the bits are the same.
"""

from __future__ import annotations

from dataclasses import replace

from .kernel8 import kernel8

kernel9 = replace(
    kernel8, name="kernel9",
    summary="kernel8 with C and D through shared memory in whole 128-byte lines",
    defaults=replace(kernel8.defaults, staged_epilogue=1))

__all__ = ["kernel9"]
