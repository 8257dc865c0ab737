"""wgmma's numeric parameters per architecture, with what each rests on.

Only Hopper (sm_90a) has wgmma. Two families of rules:

- f16, bf16 (k16) and tf32 (k8): each 64 x 8 block of D is, on the H100, exactly four
  m16n8k16 mma.sync: measured for m64n8k16 f16 -> f32, f16 -> f16 and bf16 -> f32 (600
  instructions each, NaN and infinities included; design notes, "Facts measured on the GPU").
  So the profile's mma.sync rule (one fused step over K, 25 fraction bits) is applied per 16
  rows and 8 columns. tf32 (m64nNk8, as m16n8k8) and N > 8 are the same rule by extension,
  checked by the hw tests (tests/hw/test_wgmma_hw.py).
- e4m3/e5m2 (k32): **a hypothesis, to be verified on the H100.** wgmma's fp8 path is not the
  mma.sync one (measured: errors up to 2**-10.4 of the largest term, a thousand times those of
  fp8 mma.sync). The rule below is MMA-Sim's published model of Hopper's fp8 wgmma (Xie et al.,
  arXiv:2511.10909; mmasim/simulator/nv_ptx.py, class ``wgmma``, and ``nv_fused_dot_add``):
  one fused addition of all 32 products and C, every term truncated toward zero to 13 fraction
  bits below the largest exponent; an f32 result then truncated toward zero to 13 fraction bits
  ("f32_e8m13"), an f16 result rounded to nearest even. Zero terms do not take part in the
  alignment (MMA-Sim gives a zero factor the exponent -126, which matters only when all 32
  products are zero and an f32 C is below 2**-111; tcsim does not copy that corner).
- s8/u8: exact integer sums, wrapped modulo 2**32 or clamped with .satfinite
  (`tcsim.isa.integer_mma`), as for mma.sync (not yet measured for wgmma).
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
    measured=("f16", "bf16"),
    hypotheses={
        "tf32": "the sm_90 mma.sync m16n8k8 rule per 16 x 8 block (as f16 and bf16 measured)",
        "fp8": "MMA-Sim's published model, to be verified on the H100: one fused step of 32 "
               "products and C, 13 fraction bits, f32 results truncated to 13 fraction bits",
        "int8": "exact sums, wrapped or saturated, as integer mma.sync",
        "scale-d = 0": "C taken as +0",
    },
    source="f16/bf16 m64n8k16 measured on an H100 (design notes); fp8 from MMA-Sim "
           "(arXiv:2511.10909), not yet verified.",
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
