"""PTX qualifier strings of mma.sync, parsed once into an `MmaSpec`.

An instruction is named by the part of its PTX spelling after ``mma.sync.aligned.``, for example
``"m16n8k8.row.col.f32.f16.f16.f32"`` (shape, A and B layouts, then the types of D, A, B and C).
The same string selects the simulator's semantics, the probe kernel on the GPU, the fragment
maps and the documentation. This module owns the list of supported instructions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .formats import FloatFormat, format_named

PREFIX = "mma.sync.aligned."

# Input type -> shapes (m, n, k) for which PTX defines mma.sync, and the accumulator types
# allowed for D and C. m8n8k4 (the Volta quad-pair shape) takes any A and B layout, and D may
# be f32 with an f16 C; every other shape is .row.col with D and C of one type.
QUAD_PAIR = (8, 8, 4)
_SHAPES = {
    "f16": (QUAD_PAIR, (16, 8, 8), (16, 8, 16)),
    "bf16": ((16, 8, 8), (16, 8, 16)),
    "tf32": ((16, 8, 4), (16, 8, 8)),
}
_ACCUMULATORS = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",)}


class QualifierError(ValueError):
    """A qualifier string that names no instruction tcsim supports."""


@dataclass(frozen=True)
class MmaSpec:
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

    @property
    def ptx(self) -> str:
        return PREFIX + self.qualifier

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    def format(self, operand: str) -> FloatFormat:
        return format_named(getattr(self, f"{_operand(operand)}_type"))

    def matrix_shape(self, operand: str) -> tuple[int, int]:
        """(rows, cols) of an operand's matrix: A is M x K, B is K x N, C and D are M x N."""
        return {"a": (self.m, self.k), "b": (self.k, self.n)}.get(
            _operand(operand), (self.m, self.n)
        )

    @property
    def input_type(self) -> str:
        return self.a_type

    @property
    def products_per_warp(self) -> int:
        """m8n8k4: a warp computes 4 independent products (one per quad-pair); others: 1."""
        return 4 if (self.m, self.n, self.k) == QUAD_PAIR else 1

    @property
    def kernel_name(self) -> str:
        """Name of this instruction's probe kernel in tcsim/hw/probes.cu."""
        return "probe_mma_" + self.qualifier.replace(".", "_")


def _operand(name: str) -> str:
    op = name.lower()
    if op not in ("a", "b", "c", "d"):
        raise ValueError(f"operand must be 'a', 'b', 'c' or 'd', got {name!r}")
    return op


@cache
def parse(qualifier: str) -> MmaSpec:
    """Parse ``"m16n8k8.row.col.f32.f16.f16.f32"`` (with or without ``mma.sync.aligned.``)."""
    if not isinstance(qualifier, str):
        raise QualifierError(f"qualifier must be a string, got {type(qualifier).__name__}")
    q = qualifier.strip()
    if q.startswith(PREFIX):
        q = q[len(PREFIX):]
    parts = q.split(".")
    if len(parts) != 7:
        raise QualifierError(
            f"{qualifier!r}: expected shape.alayout.blayout.dtype.atype.btype.ctype, "
            f"for example 'm16n8k8.row.col.f32.f16.f16.f32'"
        )
    shape, a_layout, b_layout, d_type, a_type, b_type, c_type = parts
    try:
        m, rest = shape[1:].split("n")
        n, k = rest.split("k")
        mnk = (int(m), int(n), int(k))
    except ValueError:
        raise QualifierError(f"{qualifier!r}: {shape!r} is not a shape like m16n8k8") from None
    if a_type != b_type:
        raise QualifierError(f"{qualifier!r}: A and B must have the same type")
    if a_type not in _SHAPES:
        raise QualifierError(
            f"{qualifier!r}: unsupported input type .{a_type}; tcsim models "
            + ", ".join("." + t for t in _SHAPES)
        )
    if mnk not in _SHAPES[a_type]:
        shapes = ", ".join(f"m{s[0]}n{s[1]}k{s[2]}" for s in _SHAPES[a_type])
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
    allowed = _ACCUMULATORS[a_type]
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
    return MmaSpec(q, *mnk, a_layout, b_layout, d_type, a_type, b_type, c_type)


def supported_qualifiers() -> list[str]:
    """Every mma.sync qualifier tcsim models, in a stable order."""
    out = []
    for itype, shapes in _SHAPES.items():
        for m, n, k in shapes:
            if (m, n, k) == QUAD_PAIR:
                for a in ("row", "col"):
                    for b in ("row", "col"):
                        for d, c in (("f32", "f32"), ("f16", "f16"), ("f32", "f16")):
                            out.append(f"m8n8k4.{a}.{b}.{d}.{itype}.{itype}.{c}")
                continue
            for acc in _ACCUMULATORS[itype]:
                out.append(f"m{m}n{n}k{k}.row.col.{acc}.{itype}.{itype}.{acc}")
    return out
