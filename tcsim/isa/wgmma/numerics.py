"""wgmma's numeric parameters per architecture, with what each rests on.

Only Hopper (sm_90a) has wgmma. Two families of rules:

- f16, bf16 (k16) and tf32 (k8): each 64 x 8 block of D is, on the H100, exactly four
  m16n8k16 (tf32: m16n8k8) mma.sync: the profile's mma.sync rule (one fused step over K, 25
  fraction bits) applied per 16 rows and 8 columns, for every N.
- e4m3/e5m2 (k32): wgmma's fp8 path is not the mma.sync one (errors up to 2**-10.4 of the
  largest term, a thousand times those of fp8 mma.sync). The rule below is MMA-Sim's published
  model of Hopper's fp8 wgmma (Xie et al.,
  arXiv:2511.10909; mmasim/simulator/nv_ptx.py, class ``wgmma``, and ``nv_fused_dot_add``):
  one fused addition of all 32 products and C, every term truncated toward zero to 13 fraction
  bits below the largest exponent; an f32 result then truncated toward zero to 13 fraction bits
  ("f32_e8m13"), an f16 result rounded to nearest even. Zero terms do not take part in the
  alignment (MMA-Sim gives a zero factor the exponent -126, which matters only when all 32
  products are zero and an f32 C is below 2**-111; tcsim does not copy that corner).
- s8/u8: exact integer sums, wrapped modulo 2**32 or clamped with .satfinite
  (`tcsim.isa.integer_mma`), as for mma.sync.

Every family, scale-d = 0 and the negations were measured on an H100 (2026-11-23,
tests/hw/test_wgmma_hw.py: about 80,000 random instructions per family, 0 mismatching, fp8
576 million output elements; docs/wgmma.md); before that, f16 and bf16 m64n8k16 (600
instructions each, design notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..profiles import AdderRule, ArchProfile, profile

F32_FRACTION_BITS = 23


@dataclass(frozen=True)
class WgmmaNumerics:
    """wgmma's arithmetic on one architecture.

    ``fp8_rule``: the fused adder of e4m3/e5m2 inputs (one step over all K = 32 products);
    ``fp8_f32_fraction_bits``: the fraction bits an f32 fp8 result keeps (truncated toward
    zero); ``measured``: the input families whose rule was checked bit for bit on hardware.
    """

    name: str
    mma_sync: ArchProfile
    fp8_rule: AdderRule
    fp8_f32_fraction_bits: int
    measured: tuple[str, ...]
    hypotheses: dict[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def fp8_f32_mask(self) -> int:
        """AND mask that truncates an f32 result to ``fp8_f32_fraction_bits``."""
        return ~((1 << (F32_FRACTION_BITS - self.fp8_f32_fraction_bits)) - 1) & 0xFFFFFFFF


SM90 = WgmmaNumerics(
    name="sm_90",
    mma_sync=profile("sm_90"),
    fp8_rule=AdderRule(group_size=32, fraction_bits=13),
    fp8_f32_fraction_bits=13,
    measured=("f16", "bf16", "tf32", "fp8", "int8"),
    hypotheses={},
    source="Measured on an H100 (2026-11-23): every family, about 80,000 random instructions "
           "each, 0 mismatching (docs/evidence/hw_wgmma_2026-11-23.txt); the fp8 rule is "
           "MMA-Sim's published model (arXiv:2511.10909), confirmed bit for bit.",
)
NUMERICS = {"sm_90": SM90}


def numerics(arch: str | WgmmaNumerics) -> WgmmaNumerics:
    """wgmma's numerics for an architecture name; only sm_90 (Hopper) has wgmma."""
    if isinstance(arch, WgmmaNumerics):
        return arch
    name = arch.name if isinstance(arch, ArchProfile) else arch
    try:
        return NUMERICS[name]
    except (KeyError, TypeError):
        raise ValueError(f"wgmma.mma_async needs sm_90a (Hopper); tcsim models it on "
                         f"{', '.join(NUMERICS)}, not {name!r}") from None
