"""PTX qualifier strings of ``wgmma.mma_async`` (sm_90a), parsed once into a `WgmmaSpec`.

An instruction is named by the part of its PTX spelling after
``wgmma.mma_async.sync.aligned.``: the shape, an optional ``.satfinite`` (integer inputs), then
the types of D, A and B, for example ``"m64n128k16.f32.f16.f16"``, ``"m64n64k32.f16.e4m3.e5m2"``
or ``"m64n64k32.satfinite.s32.s8.u8"``. C is D: wgmma accumulates into its D registers.

The legal combinations, from the PTX ISA ("wgmma.mma_async", section 9.7.15.5.2, and the
"Matrix Shape" table of 9.7.15.1), as of PTX 8.x:

- .f16: m64nNk16, D .f16 or .f32; .bf16: m64nNk16, D .f32; .tf32: m64nNk8, D .f32;
  .e4m3/.e5m2 (any pair): m64nNk32, D .f16 or .f32; all with N = 8, 16, 24, ..., 256.
- .s8/.u8 (any pair): m64nNk32, D .s32, with or without .satfinite, and N one of 8, 16, 24, 32,
  48, 64, 80, 96, ..., 256 (multiples of 16 from 32 on). CUTLASS defines an int8 GMMA atom for
  each of these 18 N (cute/arch/mma_sm90_gmma.hpp and its _ext file), 240 and 256 included.

This module owns that list; the simulator, the probes and the docs read it from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from ..qualifier import FAMILY_OF, SATFINITE, OperandTypes, QualifierError, parse_shape

PREFIX = "wgmma.mma_async.sync.aligned."
M = 64  # every wgmma is 64 rows: four warps of 16
WARPGROUP = 128  # threads (lanes) of the warpgroup that issues it
DENSE_N = tuple(range(8, 257, 8))
INT8_N = (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)

# Input family -> (K, the N it allows, the D types it allows, its member types).
FAMILIES: dict[str, tuple[int, tuple[int, ...], tuple[str, ...], tuple[str, ...]]] = {
    "f16": (16, DENSE_N, ("f16", "f32"), ("f16",)),
    "bf16": (16, DENSE_N, ("f32",), ("bf16",)),
    "tf32": (8, DENSE_N, ("f32",), ("tf32",)),
    "fp8": (32, DENSE_N, ("f16", "f32"), ("e4m3", "e5m2")),
    "int8": (32, INT8_N, ("s32",), ("s8", "u8")),
}
_EXAMPLE = "for example 'm64n128k16.f32.f16.f16' or 'm64n64k32.satfinite.s32.s8.u8'"


@dataclass(frozen=True)
class WgmmaSpec(OperandTypes):
    """One wgmma.mma_async instruction: shape, types and saturation.

    It answers the questions an `tcsim.isa.qualifier.MmaSpec` answers (``format``,
    ``matrix_shape``, ``family``, ``integer``, ``c_type``...), so that code written for
    mma.sync specs, such as `tcsim.isa.samples.draw`, takes it as it is.
    """

    qualifier: str
    m: int
    n: int
    k: int
    d_type: str
    a_type: str
    b_type: str
    saturate: bool = False

    @property
    def ptx(self) -> str:
        return PREFIX + self.qualifier

    @property
    def c_type(self) -> str:
        """C is the D registers themselves: the same type."""
        return self.d_type

    @property
    def transposable(self) -> bool:
        """Whether imm-trans-a/imm-trans-b exist (MN-major operands): f16 and bf16 only."""
        return self.family in ("f16", "bf16")

    @property
    def scalable(self) -> bool:
        """Whether imm-scale-a/imm-scale-b (negation) exist: every type but the integers."""
        return not self.integer

    @property
    def products_per_warp(self) -> int:
        """One product per instruction (the mma.sync spec's m8n8k4 notion; for samples)."""
        return 1


def is_wgmma_qualifier(qualifier) -> bool:
    """Whether a qualifier string names a wgmma (``wgmma...`` or an ``m64nNkK`` shape), so that
    `tcsim.mma` hands it to the wgmma engine. mma.sync has no 64-row shape."""
    if not isinstance(qualifier, str):
        return False
    q = qualifier.strip()
    return q.startswith("wgmma") or re.match(r"m64n\d+k\d+(\.|$)", q) is not None


def parse_wgmma(qualifier: str) -> WgmmaSpec:
    """Parse ``"m64n128k16.f32.f16.f16"`` (with or without ``wgmma.mma_async.sync.aligned.``)."""
    if not isinstance(qualifier, str):
        raise QualifierError(f"qualifier must be a string, got {type(qualifier).__name__}")
    return _parse(qualifier)


@cache
def _parse(qualifier: str) -> WgmmaSpec:
    q = qualifier.strip()
    if q.startswith(PREFIX):
        q = q[len(PREFIX):]
    elif q.startswith("wgmma"):
        raise QualifierError(f"{qualifier!r}: spell a wgmma as the PTX after {PREFIX!r} "
                             f"(with or without that prefix), {_EXAMPLE}")
    parts = q.split(".")
    saturate = len(parts) == 5 and parts[1] == SATFINITE
    if saturate:
        del parts[1]
    if len(parts) != 4:
        raise QualifierError(f"{qualifier!r}: expected shape[.satfinite].dtype.atype.btype, "
                             f"{_EXAMPLE}")
    shape, d_type, a_type, b_type = parts
    m, n, k = parse_shape(qualifier, shape, "m64n128k16")
    if m != M:
        raise QualifierError(f"{qualifier!r}: wgmma shapes have M = 64 (m64nNkK), got m{m}")
    for t in (a_type, b_type):
        if t not in FAMILY_OF:
            raise QualifierError(f"{qualifier!r}: unsupported input type .{t}; tcsim models "
                                 f"wgmma with " + ", ".join("." + x for x in FAMILY_OF))
    family = FAMILY_OF[a_type]
    want_k, ns, accumulators, members = FAMILIES[family]
    if FAMILY_OF[b_type] != family or (len(members) == 1 and a_type != b_type):
        raise QualifierError(
            f"{qualifier!r}: A and B must have the same type"
            + (f" (or, for {family}, any of {', '.join('.' + t for t in members)})"
               if len(members) > 1 else "") + f", got .{a_type} and .{b_type}")
    if saturate and family != "int8":
        raise QualifierError(f"{qualifier!r}: .satfinite applies to integer inputs only")
    if k != want_k:
        raise QualifierError(f"{qualifier!r}: .{a_type} inputs take K = {want_k} "
                             f"(m64nNk{want_k}), got k{k}")
    if n not in ns:
        allowed = ("a multiple of 8 from 8 to 256" if ns == DENSE_N
                   else "one of " + ", ".join(map(str, ns)))
        raise QualifierError(f"{qualifier!r}: N = {n} is not a wgmma N for .{a_type} inputs "
                             f"(N is {allowed})")
    if d_type not in accumulators:
        raise QualifierError(f"{qualifier!r}: D type .{d_type} is not allowed with .{a_type} "
                             f"inputs (allowed: {', '.join('.' + x for x in accumulators)})")
    canonical = ".".join([shape] + ([SATFINITE] if saturate else []) + [d_type, a_type, b_type])
    return WgmmaSpec(canonical, m, n, k, d_type, a_type, b_type, saturate)


def supported_wgmma_qualifiers() -> list[str]:
    """Every wgmma qualifier tcsim models (528 of them), in a stable order."""
    out = []
    for family, (k, ns, accumulators, members) in FAMILIES.items():
        sats = ("", SATFINITE + ".") if family == "int8" else ("",)
        for n in ns:
            for d in accumulators:
                for s in sats:
                    for a in members:
                        for b in members:
                            out.append(f"m64n{n}k{k}.{s}{d}.{a}.{b}")
    return out
