"""PTX qualifier strings of mma.sync, parsed once into an `MmaSpec`.

An instruction is named by the part of its PTX spelling after ``mma.sync.aligned.``, for example
``"m16n8k8.row.col.f32.f16.f16.f32"`` (shape, A and B layouts, then the types of D, A, B and C), or
``"m16n8k32.row.col.satfinite.s32.s8.u8.s32"`` (integer inputs may saturate the result).
The same string selects the simulator's semantics, the probe kernel on the GPU, the fragment
maps and the documentation. This module owns the list of supported instructions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import numpy as np

from .formats import FloatFormat, IntFormat, format_named

PREFIX = "mma.sync.aligned."

# Input type -> shapes (m, n, k) for which PTX defines mma.sync, and the accumulator types
# allowed for D and C. m8n8k4 (the Volta quad-pair shape) takes any A and B layout, and D may
# be f32 with an f16 C; every other shape is .row.col with D and C of one type.
QUAD_PAIR = (8, 8, 4)
_SHAPES = {
    "f16": (QUAD_PAIR, (16, 8, 8), (16, 8, 16)),
    "bf16": ((16, 8, 8), (16, 8, 16)),
    "tf32": ((16, 8, 4), (16, 8, 8)),
    "fp8": ((16, 8, 16), (16, 8, 32)),
    "int8": ((16, 8, 16), (16, 8, 32)),
}
_ACCUMULATORS = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",),
                 "fp8": ("f16", "f32"), "int8": ("s32",)}
# A and B of one family may differ in type (e4m3 x e5m2, s8 x u8); the others take one type.
FAMILY_OF = {"f16": "f16", "bf16": "bf16", "tf32": "tf32", "e4m3": "fp8", "e5m2": "fp8",
             "s8": "int8", "u8": "int8"}
_FAMILY = FAMILY_OF
_MEMBERS = {"fp8": ("e4m3", "e5m2"), "int8": ("s8", "u8")}
SATFINITE = "satfinite"
# A shape as PTX spells it: ASCII digits without leading zeros, nothing before or after.
_SHAPE = re.compile(r"m([1-9][0-9]*)n([1-9][0-9]*)k([1-9][0-9]*)")


class QualifierError(ValueError):
    """A qualifier string that names no instruction tcsim supports."""


class OperandTypes:
    """What mma.sync and wgmma specs share: the shape and the operands' types and formats.

    Needs ``m``, ``n``, ``k`` and ``a_type``, ``b_type``, ``c_type``, ``d_type``.
    """

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    def format(self, operand: str) -> FloatFormat | IntFormat:
        return format_named(getattr(self, f"{_operand(operand)}_type"))

    def matrix_shape(self, operand: str) -> tuple[int, int]:
        """(rows, cols) of an operand's matrix: A is M x K, B is K x N, C and D are M x N."""
        return {"a": (self.m, self.k), "b": (self.k, self.n)}.get(
            _operand(operand), (self.m, self.n)
        )

    def zero_c(self, A, B) -> np.ndarray:
        """A zero C for ``D = A @ B``: C's dtype, the batch A and B broadcast to (when they
        do not, the batch of A alone, and the check of A and B names the mismatch). A
        read-only zero-stride view: nothing is allocated per instruction."""
        shapes = (np.shape(A)[:-2], np.shape(B)[:-2])
        try:
            batch = np.broadcast_shapes(*shapes)
        except ValueError:
            batch = shapes[0]
        zero = np.zeros((), self.format("c").dtype)
        return np.broadcast_to(zero, batch + self.matrix_shape("c"))

    @property
    def input_type(self) -> str:
        return self.a_type

    @property
    def family(self) -> str:
        """The input family an arch profile keys its rules by: f16, bf16, tf32, fp8 or int8."""
        return FAMILY_OF[self.a_type]

    @property
    def integer(self) -> bool:
        return self.family == "int8"


@dataclass(frozen=True)
class MmaSpec(OperandTypes):
    """One mma.sync instruction: shape, operand layouts and operand formats."""

    qualifier: str
    m: int
    n: int
    k: int
    a_layout: str
    b_layout: str
    d_type: str
    a_type: str
    b_type: str
    c_type: str
    # .satfinite (integer inputs): a result beyond s32's range is clamped, not wrapped.
    saturate: bool = False

    @property
    def ptx(self) -> str:
        return PREFIX + self.qualifier

    @property
    def products_per_warp(self) -> int:
        """m8n8k4: a warp computes 4 independent products (one per quad-pair); others: 1."""
        return 4 if (self.m, self.n, self.k) == QUAD_PAIR else 1


def _operand(name: str) -> str:
    op = name.lower() if isinstance(name, str) else None
    if op not in ("a", "b", "c", "d"):
        raise ValueError(f"operand must be 'a', 'b', 'c' or 'd', got {name!r}")
    return op


def parse_shape(qualifier: str, shape: str, example: str) -> tuple[int, int, int]:
    """(m, n, k) of the shape part of ``qualifier`` (mma.sync's and wgmma's): ``m16n8k8``
    exactly, so that a spelling such as ``m016n8k8`` or ``m 16`` is refused, not kept."""
    match = _SHAPE.fullmatch(shape)
    if match is None:
        raise QualifierError(f"{qualifier!r}: {shape!r} is not a shape like {example}")
    m, n, k = (int(x) for x in match.groups())
    return m, n, k


def parse(qualifier: str) -> MmaSpec:
    """Parse ``"m16n8k8.row.col.f32.f16.f16.f32"`` (with or without ``mma.sync.aligned.``)."""
    if not isinstance(qualifier, str):  # before the cache, which would fail on a list
        raise QualifierError(f"qualifier must be a string, got {type(qualifier).__name__}")
    return _parse(qualifier)


@cache
def _parse(qualifier: str) -> MmaSpec:
    q = qualifier.strip()
    if q.startswith(PREFIX):
        q = q[len(PREFIX):]
    parts = q.split(".")
    saturate = len(parts) == 8 and parts[3] == SATFINITE
    if saturate:
        del parts[3]
    if len(parts) != 7:
        raise QualifierError(
            f"{qualifier!r}: expected shape.alayout.blayout[.satfinite].dtype.atype.btype.ctype, "
            f"for example 'm16n8k8.row.col.f32.f16.f16.f32'"
        )
    shape, a_layout, b_layout, d_type, a_type, b_type, c_type = parts
    mnk = parse_shape(qualifier, shape, "m16n8k8")
    for t in (a_type, b_type):
        if t not in _FAMILY:
            raise QualifierError(
                f"{qualifier!r}: unsupported input type .{t}; tcsim models "
                + ", ".join("." + t for t in _FAMILY)
            )
    family = _FAMILY[a_type]
    if a_type != b_type and not (_FAMILY[b_type] == family and family in _MEMBERS):
        raise QualifierError(
            f"{qualifier!r}: A and B must have the same type"
            + "".join(f" (or, for {f}, any of {', '.join('.' + t for t in ts)})"
                      for f, ts in _MEMBERS.items() if f == family)
        )
    if saturate and family != "int8":
        raise QualifierError(f"{qualifier!r}: .satfinite applies to integer inputs only")
    if mnk not in _SHAPES[family]:
        shapes = ", ".join(f"m{s[0]}n{s[1]}k{s[2]}" for s in _SHAPES[family])
        raise QualifierError(f"{qualifier!r}: .{a_type} inputs come in shapes {shapes}")
    quad_pair = mnk == QUAD_PAIR
    layouts_ok = (a_layout in ("row", "col") and b_layout in ("row", "col")) if quad_pair \
        else (a_layout, b_layout) == ("row", "col")
    if not layouts_ok:
        raise QualifierError(
            f"{qualifier!r}: shape {shape} requires "
            + ("row or col layouts" if quad_pair else ".row.col layouts")
            + f", got .{a_layout}.{b_layout}"
        )
    allowed = _ACCUMULATORS[family]
    for what, t in (("D", d_type), ("C", c_type)):
        if t not in allowed:
            raise QualifierError(
                f"{qualifier!r}: {what} type .{t} is not allowed with .{a_type} inputs "
                f"(allowed: {', '.join('.' + x for x in allowed)})"
            )
    if d_type != c_type and not (quad_pair and (d_type, c_type) == ("f32", "f16")):
        # ptxas: ".dtype must be '.f32' when .ctype is '.f32'"; m16n8 shapes need equal types.
        raise QualifierError(
            f"{qualifier!r}: shape {shape} allows D and C of the same type"
            + (" or .f32 D with .f16 C" if quad_pair else "")
            + f" (got .{d_type} and .{c_type})"
        )
    canonical = ".".join([shape, a_layout, b_layout] + ([SATFINITE] if saturate else [])
                         + [d_type, a_type, b_type, c_type])
    return MmaSpec(canonical, *mnk, a_layout, b_layout, d_type, a_type, b_type, c_type,
                   saturate)


def supported_qualifiers() -> list[str]:
    """Every mma.sync qualifier tcsim models, in a stable order."""
    out = []
    for family, shapes in _SHAPES.items():
        for m, n, k in shapes:
            if (m, n, k) == QUAD_PAIR:
                for a in ("row", "col"):
                    for b in ("row", "col"):
                        for d, c in (("f32", "f32"), ("f16", "f16"), ("f32", "f16")):
                            out.append(f"m8n8k4.{a}.{b}.{d}.{family}.{family}.{c}")
                continue
            members = _MEMBERS.get(family, (family,))
            sat = ("", SATFINITE + ".") if family == "int8" else ("",)
            for acc in _ACCUMULATORS[family]:
                for s in sat:
                    for a in members:
                        for b in members:
                            out.append(f"m{m}n{n}k{k}.row.col.{s}{acc}.{a}.{b}.{acc}")
    return out
