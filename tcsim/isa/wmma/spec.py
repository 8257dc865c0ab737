"""PTX qualifier strings of the WMMA instructions, parsed once into a `WmmaSpec`.

A ``wmma.mma`` is named like an mma.sync, with a ``wmma.`` prefix: the shape, A's and B's
layouts, then the types of D, A, B and C, for example ``"wmma.m16n16k16.row.col.f32.f16.f16.f32"``
(PTX spells it ``wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32``; `WmmaSpec.ptx` gives that).

The legal combinations, from the PTX ISA ("Warp-level Matrix Multiply-Accumulate Instructions",
wmma.load / wmma.mma / wmma.store), for the floating-point types:

- .f16 A and B: m16n16k16, m32n8k16, m8n32k16; D and C each .f16 or .f32 (four pairs);
- .bf16 A and B: the same shapes, D and C .f32;
- .tf32 A and B: m16n16k8, D and C .f32;
- A and B .row or .col each (4 layout pairs); loads and stores of C and D .row or .col, with a
  stride (leading dimension, in elements) and a state space (.global, .shared, or generic).

This module owns that list; the simulator, the probes and the docs read it from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from ..qualifier import OperandTypes, QualifierError

PREFIX = "wmma."
LAYOUTS = ("row", "col")
MEMORY_SPACES = ("global", "shared")
# Input type -> (shapes, the (D, C) type pairs allowed).
_FLOAT_PAIRS = (("f16", "f16"), ("f16", "f32"), ("f32", "f16"), ("f32", "f32"))
INPUTS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "f16": (("m16n16k16", "m32n8k16", "m8n32k16"), _FLOAT_PAIRS),
    "bf16": (("m16n16k16", "m32n8k16", "m8n32k16"), (("f32", "f32"),)),
    "tf32": (("m16n16k8",), (("f32", "f32"),)),
}
_SHAPE = re.compile(r"m(\d+)n(\d+)k(\d+)$")
_EXAMPLE = "for example 'wmma.m16n16k16.row.col.f32.f16.f16.f32'"


def matrix_dims(shape: str, operand: str) -> tuple[int, int]:
    """(rows, cols) of an operand of a shape: A is M x K, B is K x N, C and D are M x N."""
    m, n, k = (int(x) for x in _SHAPE.match(shape).groups())
    return {"a": (m, k), "b": (k, n)}.get(operand, (m, n))


def memory_ptx(shape: str, operand: str, type_: str, layout: str, space: str) -> str:
    """The PTX of ``wmma.load.<operand>`` (a, b, c) or ``wmma.store.d``, without operands."""
    verb = "store" if operand == "d" else "load"
    return f"wmma.{verb}.{operand}.sync.aligned.{layout}.{shape}.{space}.{type_}"


def case_qualifier(shape: str, operand: str, type_: str) -> str:
    """A wmma.mma qualifier whose ``operand`` is a ``type_`` fragment of ``shape``: the one a
    load or store case (`load_cases`, `store_cases`) belongs to."""
    if operand in ("a", "b"):
        return f"wmma.{shape}.row.col.f32.{type_}.{type_}.f32"
    inputs = "tf32" if shape.endswith("k8") else "f16"
    return f"wmma.{shape}.row.col.{type_}.{inputs}.{inputs}.{type_}"


def fragment_registers(shape: str, operand: str, type_: str) -> int:
    """32-bit registers of a fragment, as PTX declares them.

    f16 A and B fragments are 8 registers (16 halves) whatever the shape: on sm_90 only half
    of them are distinct elements (docs/wmma.md). bf16 A and B hold their elements once: 16
    rows x 16 columns over 32 lanes is 4 registers, 32 x 16 is 8 and 8 x 16 is 2. tf32 A and
    B are 4; C and D are 8 f32 or 4 f16x2 registers.
    """
    if operand in "cd":
        return 8 if type_ == "f32" else 4
    if type_ == "f16":
        return 8
    rows, cols = matrix_dims(shape, operand)
    bits = 32 if type_ == "tf32" else 16
    return rows * cols * bits // (32 * 32)


@dataclass(frozen=True)
class WmmaSpec(OperandTypes):
    """One wmma.mma instruction: shape, A's and B's layouts, and the operand types."""

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
        """The instruction as PTX spells it, without operands."""
        types = (f"{self.d_type}.{self.c_type}" if self.a_type == "f16" else
                 f"{self.d_type}.{self.a_type}.{self.b_type}.{self.c_type}")
        return f"wmma.mma.sync.aligned.{self.a_layout}.{self.b_layout}.{self.shape}.{types}"

    def registers(self, operand: str) -> int:
        """32-bit registers per lane of an operand's fragment."""
        return fragment_registers(self.shape, operand, getattr(self, f"{operand}_type"))

    @property
    def products_per_warp(self) -> int:
        return 1

    def layout(self, operand: str) -> str:
        return {"a": self.a_layout, "b": self.b_layout}[operand]

    def load_ptx(self, operand: str, layout: str, space: str) -> str:
        """This instruction's ``wmma.load.<operand>`` (or ``wmma.store.d``) as PTX spells it."""
        return memory_ptx(self.shape, operand, getattr(self, f"{operand}_type"), layout, space)

    def element_bytes(self, operand: str) -> int:
        """Bytes of one element of ``operand`` in memory (tf32 is stored as f32)."""
        return 2 if getattr(self, f"{operand}_type") in ("f16", "bf16") else 4


def parse_wmma(qualifier: str) -> WmmaSpec:
    """The `WmmaSpec` of a qualifier such as ``"wmma.m16n16k16.row.col.f32.f16.f16.f32"``;
    the PTX spelling (``"wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32"``) is accepted too."""
    if not isinstance(qualifier, str):
        raise QualifierError(f"a wmma qualifier is a string, not {type(qualifier).__name__}; "
                             f"{_EXAMPLE}")
    return _parse(qualifier.strip())


@cache
def _parse(qualifier: str) -> WmmaSpec:
    parts = qualifier.split(".")
    if qualifier.startswith("wmma.mma.sync.aligned."):  # PTX: layouts, shape, types
        rest = parts[4:]
        if len(rest) >= 4:
            la, lb, shape, *types = rest
            if len(types) == 2 and types[0] in ("f16", "f32"):  # f16: D and C only
                types = [types[0], "f16", "f16", types[1]]
            parts = ["wmma", shape, la, lb, *types]
    if len(parts) != 8 or parts[0] != "wmma":
        raise QualifierError(f"{qualifier!r} is not a wmma qualifier; {_EXAMPLE}")
    _, shape, la, lb, d, a, b, c = parts
    if la not in LAYOUTS or lb not in LAYOUTS:
        raise QualifierError(f"{qualifier!r}: A's and B's layouts are 'row' or 'col', "
                             f"not {la!r}, {lb!r}")
    if a != b or a not in INPUTS:
        raise QualifierError(f"{qualifier!r}: A and B must both be one of "
                             f"{', '.join(INPUTS)} (got {a!r}, {b!r})")
    shapes, pairs = INPUTS[a]
    if shape not in shapes:
        raise QualifierError(f"{qualifier!r}: {a} wmma has shapes {', '.join(shapes)}, "
                             f"not {shape!r}")
    if (d, c) not in pairs:
        allowed = ", ".join(f"D {x} with C {y}" for x, y in pairs)
        raise QualifierError(f"{qualifier!r}: {a} wmma allows {allowed}")
    m, n, k = (int(x) for x in _SHAPE.match(shape).groups())
    canonical = f"wmma.{shape}.{la}.{lb}.{d}.{a}.{b}.{c}"
    return WmmaSpec(canonical, m, n, k, la, lb, d, a, b, c)


def is_wmma_qualifier(qualifier) -> bool:
    return isinstance(qualifier, str) and qualifier.strip().startswith(PREFIX)


@cache
def supported_wmma_qualifiers() -> list[str]:
    """Every legal wmma.mma qualifier: 64 (48 f16, 12 bf16, 4 tf32)."""
    return [f"wmma.{shape}.{la}.{lb}.{d}.{a}.{a}.{c}"
            for a, (shapes, pairs) in INPUTS.items() for shape in shapes
            for la in LAYOUTS for lb in LAYOUTS for d, c in pairs]


def load_cases() -> list[tuple[str, str, str, str]]:
    """(shape, operand, type, layout) of every distinct wmma.load (the space aside)."""
    out = []
    for a, (shapes, _) in INPUTS.items():
        for shape in shapes:
            out += [(shape, op, a, lay) for op in "ab" for lay in LAYOUTS]
    return out + [(shape, "c", t, lay) for shape, t, lay in store_cases()]


def store_cases() -> list[tuple[str, str, str]]:
    """(shape, type, layout) of every distinct wmma.store.d and wmma.load.c."""
    shapes = ("m16n16k16", "m32n8k16", "m8n32k16", "m16n16k8")
    return [(shape, t, lay) for shape in shapes for t in (("f32",) if shape.endswith("k8")
                                                         else ("f16", "f32"))
            for lay in LAYOUTS]
