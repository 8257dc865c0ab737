"""``wgmma.mma_async`` (sm_90a, Hopper): qualifiers, warpgroup fragments, arithmetic.

- `parse_wgmma` / `WgmmaSpec`: the PTX qualifier after ``wgmma.mma_async.sync.aligned.``
  (``"m64n128k16.f32.f16.f16"``), `supported_wgmma_qualifiers` lists all 528;
- `wgmma_fragment`: the accumulator (C/D) and A-in-registers maps over 128 lanes;
- `wgmma` (matrices) and `wgmma_regs` (registers): the instruction, bit-exact;
- `numerics`: what each rule rests on (measured on the H100, or a published hypothesis).

docs/wgmma.md describes all of it; `tcsim.hw.wgmma` runs the same instruction on a GPU.
"""

from .api import Options, check_options, wgmma, wgmma_regs
from .arithmetic import equivalent_mma_sync, wgmma_bits
from .fragments import WarpgroupFragment, wgmma_fragment
from .numerics import NUMERICS, WgmmaNumerics, numerics
from .spec import (
    PREFIX,
    WgmmaSpec,
    is_wgmma_qualifier,
    parse_wgmma,
    supported_wgmma_qualifiers,
)

__all__ = [
    "NUMERICS", "Options", "PREFIX", "WarpgroupFragment", "WgmmaNumerics", "WgmmaSpec",
    "check_options", "equivalent_mma_sync", "is_wgmma_qualifier", "numerics", "parse_wgmma",
    "supported_wgmma_qualifiers", "wgmma", "wgmma_bits", "wgmma_fragment", "wgmma_regs",
]
