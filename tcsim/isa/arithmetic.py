"""mma.sync's arithmetic on matrices of bit patterns, by family: integers exactly, fp8 as ptxas
lowers it on sm_90 (two f16 steps and an add), m8n8k4 as FFMAs (quad pairs), everything else
one pass of the fused adder (`tcsim.isa.engine`). wmma and wgmma reuse it on their equivalent
mma.sync shapes."""

from __future__ import annotations

import numpy as np

from .allocator import tune_allocator
from .engine import adder_bits
from .fp8_lowering import fp8_lowering_bits
from .integer_mma import integer_mma_bits
from .profiles import ArchProfile
from .quad_pair import ffma_lowering_bits
from .qualifier import MmaSpec


def mma_bits(
    spec: MmaSpec, A: np.ndarray, B: np.ndarray, C: np.ndarray, arch: ArchProfile
) -> np.ndarray:
    """D bit patterns (..., M, N) from A (..., M, K), B (..., K, N), C (..., M, N) bit patterns."""
    tune_allocator()
    rule = arch.check(spec)
    A, B, C = (np.asarray(x) for x in (A, B, C))
    if spec.integer:
        return integer_mma_bits(spec, A, B, C)
    if spec.family == "fp8":  # as ptxas lowers it on sm_90
        return fp8_lowering_bits(spec, A, B, C, arch)
    if rule is None:  # m8n8k4 as ptxas lowers it (sm_90)
        return ffma_lowering_bits(spec, A, B, C)
    return adder_bits(spec, A, B, C, rule)
