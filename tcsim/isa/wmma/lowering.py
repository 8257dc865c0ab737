"""What ``wmma.load`` and ``wmma.store`` become on sm_90, as the memory accesses Nsight Compute
counts.

ptxas turns each into plain warp-wide memory instructions (docs/wmma.md, "Lowering"; read with
``cuobjdump -sass`` from nvcc 13.0 for sm_90):

- f16/bf16 A or B from shared memory: one ``LDSM.16.M88.4`` per four distinct registers
  (``.2`` for two), ``.MT88`` when a register's two elements are not adjacent in memory (the
  transposed layout); each 8x8 matrix is one register's 64 elements, 8 rows of 16 bytes.
- A or B from global memory: one 32-bit ``LDG.E`` per distinct register: lane ``l`` reads
  bytes ``4 (l % 4)`` of row ``l // 4`` of the register's 8x8 block as it lies in memory;
  where the fragment wants the block transposed, ``MOVM.16.MT88`` transposes it in registers.
- tf32 A or B from shared or global memory: one 32-bit load per register.
- f32 C from memory in the row layout, and f32 D to it: one 64-bit access per pair of
  registers (two adjacent columns).

Only distinct registers are read: f16 A and B fragments repeat their elements (`FragmentMap`
``copies``) and the copies cost nothing. Other variants (f16 C/D, the col layout of C/D) have
not been read from SASS, and `lower` refuses them rather than guess.
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
    offsets = element_offsets(spec, operand, layout, stride)  # (32, elements)
    per = frag.per_register
    by_register = offsets.reshape(32, frag.registers, per)
    distinct = _distinct_registers(frag.coords.reshape(32, frag.registers, per, 2))
    unmeasured = ValueError(
        f"what ptxas makes of {'wmma.store.d' if operand == 'd' else 'wmma.load.' + operand} "
        f"{layout} {space} for {spec.qualifier} has not been read from SASS (docs/wmma.md)")
    if operand in ("a", "b"):
        if per == 1:  # tf32: one element per register
            return tuple(Access(f"ld.{space}.b32", by_register[:, i, 0]) for i in distinct)
        if per != 2:
            raise unmeasured
        blocks = [_block_rows(by_register[:, i]) for i in distinct]
        if space == "global":  # lane l: row l // 4 of the block, bytes 4 (l % 4)
            lane = np.arange(32)
            return tuple(Access("ld.global.b32", rows[lane // 4] + 2 * (lane % 4))
                         for rows in blocks)
        adjacent = bool((by_register[:, distinct[0], 1] - by_register[:, distinct[0], 0]
                         == 1).all())
        trans = "" if adjacent else ".trans"
        out = []
        for start in range(0, len(blocks), 4):
            group = blocks[start:start + 4]
            rows = np.concatenate(group)
            rows = np.concatenate([rows, np.repeat(rows[:1], 32 - rows.size)])
            out.append(Access(f"ldmatrix.sync.aligned.m8n8.x{len(group)}{trans}.shared.b16",
                              rows))
        return tuple(out)
    if frag.format.name == "f32" and per == 1 and layout == "row":  # C or D: register pairs
        pairs = by_register[:, 0::2, 0]
        if not (by_register[:, 1::2, 0] - pairs == 1).all():
            raise unmeasured
        kind = "st" if operand == "d" else "ld"
        return tuple(Access(f"{kind}.{space}.v2.f32", pairs[:, j]) for j in range(pairs.shape[1]))
    raise unmeasured


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
