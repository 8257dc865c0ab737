"""What ``wmma.load`` and ``wmma.store`` become on sm_90, as the memory accesses Nsight Compute
counts.

ptxas turns each into plain warp-wide memory instructions (docs/wmma.md, "Lowering"; read with
``cuobjdump -sass`` from nvcc 13.0 for sm_90, every variant in ``wmma_counters.cu``):

- f16/bf16 A or B from shared memory: one ``LDSM.16.M88.4`` per four distinct registers
  (``.2`` for two), ``.MT88`` when a register's two elements are not adjacent in memory (the
  transposed layout); each 8x8 matrix is one register's 64 elements, 8 rows of 16 bytes.
- Every other 16-bit fragment (A or B from global memory, f16 C or D in either space): one
  32-bit ``LDG``/``LDS`` (``STG``/``STS`` for D) per distinct register: lane ``l`` reaches
  bytes ``4 (l % 4)`` of row ``l // 4`` of the register's 8x8 block as it lies in memory;
  where the fragment wants the block transposed, ``MOVM.16.MT88`` transposes it in registers.
- 32-bit fragments (tf32 A or B, f32 C or D): one 32-bit access per register, except C and D
  where each register pair holds two adjacent elements in memory: one 64-bit access per pair.

Only distinct registers are read: f16 A and B fragments repeat their elements (`FragmentMap`
``copies``) and the copies cost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from .fragments import wmma_fragment
from .spec import WmmaSpec, parse_wmma

LINE = 8  # 16-bit elements in one ldmatrix row (16 bytes)


@dataclass(frozen=True)
class Access:
    """One warp-wide memory instruction of a lowered wmma.load or wmma.store.

    ``spelling`` is the PTX of the equivalent access (what tcsim's bank and sector models
    take); ``offsets`` are (32,) element offsets from the fragment's origin: each lane's
    address, or for ldmatrix the row starts (lanes 8j .. 8j + 7 give matrix j's rows)."""

    spelling: str
    offsets: np.ndarray
    movm: bool = False  # a MOVM.16.MT88 transposes the register (after a load, before a store)

    @property
    def sass(self) -> str:
        """The SASS instruction ptxas emits for this access (nvcc 13.0, sm_90)."""
        if self.spelling.startswith("ldmatrix"):
            n = self.spelling.split(".x")[1][0]
            return f"LDSM.16.{'MT88' if '.trans' in self.spelling else 'M88'}.{n}"
        op = {"ld.global": "LDG.E", "st.global": "STG.E", "ld.shared": "LDS",
              "st.shared": "STS"}[self.spelling[:9]]
        return op + (".64" if ".v2." in self.spelling else "")


def memory_coords(spec: WmmaSpec | str, operand: str, layout: str) -> np.ndarray:
    """(32, elements, 2): where in memory, as (row, col) from the fragment's origin, each lane's
    fragment element (r, c) lies: (r, c) in the row layout, (c, r) in the col layout."""
    if layout not in ("row", "col"):
        raise ValueError(f"layout must be 'row' or 'col', got {layout!r}")
    coords = wmma_fragment(spec, operand).coords
    return coords if layout == "row" else coords[..., ::-1]


def element_offsets(spec: WmmaSpec | str, operand: str, layout: str, stride: int) -> np.ndarray:
    """(32, elements) offsets, in elements, of each lane's fragment elements from the origin,
    rows (of memory) ``stride`` elements apart."""
    coords = memory_coords(spec, operand, layout)
    return coords[..., 0] * stride + coords[..., 1]


def lower(qualifier: WmmaSpec | str, operand: str, layout: str, space: str,
          stride: int) -> tuple[Access, ...]:
    """The memory instructions ``wmma.load.<operand>`` (or ``wmma.store.d``) of ``qualifier``
    becomes, with ``layout`` ("row"/"col"), ``space`` ("global"/"shared") and ``stride`` (the
    leading dimension, in elements)."""
    spec = parse_wmma(qualifier) if isinstance(qualifier, str) else qualifier
    return _lower(spec.qualifier, operand, layout, space, int(stride))


@cache
def _lower(qualifier: str, operand: str, layout: str, space: str,
           stride: int) -> tuple[Access, ...]:
    spec = parse_wmma(qualifier)
    if space not in ("global", "shared"):
        raise ValueError(f"space must be 'global' or 'shared', got {space!r}")
    frag = wmma_fragment(spec, operand)
    kind = "st" if operand == "d" else "ld"
    offsets = element_offsets(spec, operand, layout, stride)  # (32, elements)
    per = frag.per_register
    by_register = offsets.reshape(32, frag.registers, per)
    if per == 1:  # 32-bit elements
        first, second = by_register[:, 0::2, 0], by_register[:, 1::2, 0]
        if operand in ("c", "d") and (second - first == 1).all():
            return tuple(Access(f"{kind}.{space}.v2.f32", first[:, j])
                         for j in range(first.shape[1]))
        return tuple(Access(f"{kind}.{space}.b32", by_register[:, i, 0])
                     for i in range(frag.registers))
    distinct = _distinct_registers(frag.coords.reshape(32, frag.registers, per, 2))
    blocks = [_block_rows(by_register[:, i]) for i in distinct]
    if operand in ("a", "b") and space == "shared":
        trans = ".trans" if _transposed(by_register, distinct[0]) else ""
        out = []
        for start in range(0, len(blocks), 4):
            group = blocks[start:start + 4]
            rows = np.concatenate(group)
            rows = np.concatenate([rows, np.repeat(rows[:1], 32 - rows.size)])
            out.append(Access(f"ldmatrix.sync.aligned.m8n8.x{len(group)}{trans}.shared.b16",
                              rows))
        return tuple(out)
    transposed = _transposed(by_register, distinct[0])
    lane = np.arange(32)  # lane l: row l // 4 of the block, bytes 4 (l % 4)
    return tuple(Access(f"{kind}.{space}.b32", rows[lane // 4] + 2 * (lane % 4), transposed)
                 for rows in blocks)


def sass(qualifier: WmmaSpec | str, operand: str, layout: str, space: str) -> list[str]:
    """The SASS memory and transpose instructions of one wmma.load or wmma.store, in the order
    of its accesses (the MOVMs come after the loads, before the stores)."""
    accesses = lower(qualifier, operand, layout, space, 64)  # the stride changes no opcode
    movm = ["MOVM.16.MT88"] * sum(a.movm for a in accesses)
    ops = [a.sass for a in accesses]
    return movm + ops if operand == "d" else ops + movm


def _transposed(by_register: np.ndarray, register: int) -> bool:
    """Whether a 16-bit register's two elements are not adjacent in memory."""
    return not (by_register[:, register, 1] - by_register[:, register, 0] == 1).all()


def _distinct_registers(coords: np.ndarray) -> list[int]:
    """Registers whose elements no earlier register holds (the copies of f16 A and B are not
    read again)."""
    seen: set = set()
    out = []
    for i in range(coords.shape[1]):
        key = frozenset(map(tuple, coords[:, i].reshape(-1, 2).tolist()))
        if not key & seen:
            out.append(i)
        seen |= key
    return out


def _block_rows(offsets: np.ndarray) -> np.ndarray:
    """The 8 memory rows (16 bytes each) holding one register's 64 elements, in order."""
    starts = np.unique(offsets // LINE * LINE)
    if starts.size != 8 or np.unique(offsets).size != 64:
        raise ValueError("a 16-bit register's elements do not form an 8x8 block in memory")
    return starts


def hmma_per_wmma(qualifier: WmmaSpec | str) -> tuple[int, str]:
    """(tensor-core instructions, their mma.sync qualifier) one ``wmma.mma`` becomes on sm_90:
    an m16n8k16 per 16 x 8 block of D (f16, bf16), two chained m16n8k4 per block (tf32)."""
    spec = parse_wmma(qualifier) if isinstance(qualifier, str) else qualifier
    blocks = spec.m * spec.n // (16 * 8)
    d, c = spec.d_type, spec.c_type
    if spec.a_type == "tf32":
        return 2 * blocks, f"m16n8k4.row.col.{d}.tf32.tf32.{c}"
    acc = "f32" if "f32" in (d, c) else "f16"  # a mixed pair runs as an f32 HMMA
    return blocks, f"m16n8k16.row.col.{acc}.{spec.a_type}.{spec.b_type}.{acc}"
