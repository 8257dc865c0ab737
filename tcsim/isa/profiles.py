"""Arch profiles: every numeric parameter of an architecture's tensor-core arithmetic.

Kernel and instruction code never branches on an architecture name; it asks the profile. A
profile maps each input type to an `AdderRule` (how the fused multi-term adder aligns,
truncates, adds and rounds) and says how m8n8k4 is executed. Only sm_90 can be checked on the
hardware this project has (an H100); the other profiles carry the published source they come
from and ``verified_on_hardware=False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .formats import Overflow, Rounding


@dataclass(frozen=True)
class AdderRule:
    """How the tensor core sums ``C + sum_k A[i,k] * B[k,j]`` for one input type.

    The K products are taken ``group_size`` at a time. Each step is one fused addition of the
    group's products and the running accumulator: products are exact; every term is aligned to
    the largest exponent among them (a product's exponent taken as the sum of its operands'
    exponent fields, not renormalized); each term is truncated toward zero to
    ``fraction_bits`` bits below that exponent; the terms are added exactly. Between steps the
    sum is rounded to D's type exactly as the final result is, with ``output_rounding``.
    """

    group_size: int
    fraction_bits: int
    output_rounding: dict[str, Rounding] = field(
        default_factory=lambda: {"f32": "rz", "f16": "rn"}
    )
    # What an overflowing finite sum gives, per output type.
    overflow: dict[str, Overflow] = field(
        default_factory=lambda: {"f32": "inf", "f16": "inf"}
    )
    # Whether a result below the smallest normal number is kept (True) or flushed to zero.
    subnormal_outputs: bool = True
    # None: zero operands take part in alignment with their exponent fields, like subnormals.
    # Otherwise, per output type, the exponent a zero product or zero accumulator brings.
    zero_exponent: dict[str, int] | None = None
    # Whether a zero result keeps a negative sign. sm_90 writes +0 for every zero result, also
    # for -0 + -0 and for negative sums that round to zero.
    negative_zero: bool = False
    # Bit pattern of the NaN produced, per output type.
    nan_bits: dict[str, int] = field(default_factory=lambda: {"f32": 0x7FFFFFFF, "f16": 0x7FFF})


@dataclass(frozen=True)
class ArchProfile:
    name: str
    description: str
    rules: dict[str, AdderRule]
    m8n8k4: Literal["tensor_core", "ffma_lowering"]
    verified_on_hardware: bool
    source: str

    def rule(self, input_type: str) -> AdderRule:
        try:
            return self.rules[input_type]
        except KeyError:
            raise ValueError(
                f"{self.name} has no tensor-core rule for .{input_type} inputs"
            ) from None


_SM90_ZERO = {"f32": -133, "f16": -21}
_SM90_16BIT = AdderRule(group_size=16, fraction_bits=25, zero_exponent=_SM90_ZERO)
_SM90_TF32 = AdderRule(group_size=8, fraction_bits=25, zero_exponent=_SM90_ZERO)

PROFILES: dict[str, ArchProfile] = {
    "sm_90": ArchProfile(
        name="sm_90",
        description="Hopper (H100): mma.sync on the tensor cores",
        rules={"f16": _SM90_16BIT, "bf16": _SM90_16BIT, "tf32": _SM90_TF32},
        m8n8k4="ffma_lowering",
        verified_on_hardware=True,
        source="measured on an H100 (sm_90); see docs/numerics.md for the evidence",
    ),
}


def profile(arch: str | ArchProfile) -> ArchProfile:
    """The profile for an architecture name such as ``"sm_90"``."""
    if isinstance(arch, ArchProfile):
        return arch
    try:
        return PROFILES[arch]
    except KeyError:
        raise ValueError(
            f"unsupported architecture {arch!r}; tcsim has profiles for "
            + ", ".join(PROFILES)
        ) from None
