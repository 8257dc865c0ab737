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
    # PTX shapes this architecture runs per input type (PTX ISA: m8n8k4 needs sm_70, m16n8k8 f16
    # sm_75; m16n8k16 and every bf16 and tf32 shape need sm_80).
    shapes: dict[str, tuple[str, ...]]
    # How m8n8k4 runs: on the tensor cores with `quad_pair_rule`, as ptxas's FFMA lowering
    # (tcsim.isa.quad_pair), or "unpublished" where no study gives its numerics.
    m8n8k4: Literal["tensor_core", "ffma_lowering", "unpublished"]
    verified_on_hardware: bool
    source: str
    quad_pair_rule: AdderRule | None = None
    # How fp8 (e4m3/e5m2) mma.sync runs: "f16_lowering" is ptxas's sequence on sm_90 (each fp8
    # operand widened to f16 exactly, two f16 mma.sync steps from a zero accumulator, then C
    # added by one f32 or f16 add rounding to nearest; tcsim.isa.fp8_lowering); None where
    # tcsim has no model of it.
    fp8: Literal["f16_lowering"] | None = None

    def rule(self, input_type: str) -> AdderRule:
        try:
            return self.rules[input_type]
        except KeyError:
            raise ValueError(
                f"{self.name} has no tensor-core rule for .{input_type} inputs"
            ) from None

    def check(self, spec) -> AdderRule | None:
        """The adder rule for an instruction, or a clear error if this architecture lacks the
        instruction or its numerics are unknown. None for m8n8k4's FFMA lowering and for
        integer inputs (exact); for fp8's f16 lowering, the f16 rule its steps run with."""
        if spec.shape not in self.shapes.get(spec.family, ()):
            raise ValueError(
                f"{self.name} cannot run mma.sync {spec.shape} with .{spec.input_type} inputs "
                f"(it runs: {_describe(self.shapes)})"
            )
        if spec.integer:
            return None
        if spec.family == "fp8":
            if self.fp8 is None:
                raise ValueError(
                    f"{self.name}: tcsim has no model of fp8 mma.sync here; it models sm_90 "
                    f"(measured on an H100, where ptxas lowers it to f16 mma.sync)"
                )
            return self.rule("f16")
        if spec.products_per_warp == 1:
            return self.rule(spec.input_type)
        if self.m8n8k4 == "ffma_lowering":
            return None
        if self.quad_pair_rule is None:
            raise ValueError(
                f"{self.name}: no published study gives the numerics of m8n8k4 here; tcsim "
                f"models it on sm_70 and sm_75 (tensor cores, published) and sm_90 (measured)"
            )
        return self.quad_pair_rule


def _describe(shapes: dict[str, tuple[str, ...]]) -> str:
    return "; ".join(f".{t} {', '.join(s)}" for t, s in shapes.items() if s)


def _rule(group: int, fraction_bits: int, zero_f32: int, zero_f16: int) -> AdderRule:
    return AdderRule(group_size=group, fraction_bits=fraction_bits,
                     zero_exponent={"f32": zero_f32, "f16": zero_f16})


_PUBLISHED = (
    "Published models, not verified on hardware by tcsim: P. Xie et al., MMA-Sim "
    "(arXiv:2511.10909, mmasim 2.1.1 parameter tables) and F. A. Khattak, M. Mikaitis, "
    "Accurate Models of NVIDIA Tensor Cores (arXiv:2512.07004); group sizes and alignment "
    "also in M. Fasi et al., Numerical behavior of NVIDIA tensor cores (PeerJ CS 2021). "
    "Special values (canonical NaN, overflow to inf, +0 results) follow MMA-Sim."
)
_AMPERE_SHAPES = {"f16": ("m8n8k4", "m16n8k8", "m16n8k16"), "bf16": ("m16n8k8", "m16n8k16"),
                  "tf32": ("m16n8k4", "m16n8k8"), "int8": ("m16n8k16", "m16n8k32")}
# PTX ISA: fp8 mma.sync needs sm_89 (m16n8k32) or PTX 8.7 (m16n8k16).
_ADA_SHAPES = {**_AMPERE_SHAPES, "fp8": ("m16n8k16", "m16n8k32")}
# Volta's quad-pair tensor cores; Turing runs m8n8k4 with the same settings (MMA-Sim).
_VOLTA = _rule(4, 23, -131, -19)
_AMPERE_RULES = {"f16": _rule(8, 24, -132, -20), "bf16": _rule(8, 24, -132, -20),
                 "tf32": _rule(4, 24, -132, -20)}

PROFILES: dict[str, ArchProfile] = {
    "sm_90": ArchProfile(
        name="sm_90",
        description="Hopper (H100): mma.sync on the tensor cores",
        rules={"f16": _rule(16, 25, -133, -21), "bf16": _rule(16, 25, -133, -21),
               "tf32": _rule(8, 25, -133, -21)},
        shapes=_ADA_SHAPES,
        m8n8k4="ffma_lowering",
        fp8="f16_lowering",
        verified_on_hardware=True,
        source="Measured on an H100 (sm_90): 10**6 random instructions per qualifier and "
               "hand-derived cases, bit for bit; docs/numerics.md gives the evidence.",
    ),
    "sm_89": ArchProfile(
        name="sm_89",
        description="Ada Lovelace (L40S, RTX 4090): as Ampere for f16, bf16 and tf32",
        rules=_AMPERE_RULES, shapes=_ADA_SHAPES, m8n8k4="unpublished",
        verified_on_hardware=False, source=_PUBLISHED,
    ),
    "sm_80": ArchProfile(
        name="sm_80",
        description="Ampere (A100): 8-product steps for f16/bf16, 4 for tf32; k16 chains",
        rules=_AMPERE_RULES, shapes=_AMPERE_SHAPES, m8n8k4="unpublished",
        verified_on_hardware=False, source=_PUBLISHED,
    ),
    "sm_75": ArchProfile(
        name="sm_75",
        description="Turing (T4): m16n8k8 with f16 inputs only",
        rules={"f16": _rule(8, 24, -132, -20)},
        shapes={"f16": ("m8n8k4", "m16n8k8")}, m8n8k4="tensor_core", quad_pair_rule=_VOLTA,
        verified_on_hardware=False, source=_PUBLISHED,
    ),
    "sm_70": ArchProfile(
        name="sm_70",
        description="Volta (V100): only m8n8k4 (4-product steps, 23 fraction bits)",
        rules={"f16": _VOLTA},
        shapes={"f16": ("m8n8k4",)}, m8n8k4="tensor_core", quad_pair_rule=_VOLTA,
        verified_on_hardware=False, source=_PUBLISHED,
    ),
}


def profile(arch: str | ArchProfile) -> ArchProfile:
    """The profile for an architecture name such as ``"sm_90"``."""
    if isinstance(arch, ArchProfile):
        return arch
    try:
        return PROFILES[arch]
    except (KeyError, TypeError):  # TypeError: an unhashable name, such as a list
        raise ValueError(
            f"unsupported architecture {arch!r}; tcsim has profiles for "
            + ", ".join(PROFILES)
        ) from None
