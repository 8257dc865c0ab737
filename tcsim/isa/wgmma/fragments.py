"""wgmma's register fragments as data: which of the warpgroup's 128 lanes holds which element.

PTX ISA, "Register Fragments" of wgmma (9.7.15.5.1.1): the warpgroup's warp ``w`` (lanes
32w .. 32w+31) owns rows 16w .. 16w+15 of the 64-row accumulator and of A-in-registers, and
within its rows a warp holds them exactly as mma.sync does:

- accumulator C/D (``m64nNk*``, f32, s32 or f16): for each 8-column block j, the m16n8
  accumulator of mma.sync; lane l, element i lies at row ``16w + (l >> 2) + 8 * ((i >> 1) & 1)``
  and column ``8 * (i >> 2) + 2 * (l & 3) + (i & 1)`` (N/2 elements per lane, in N/2 32-bit
  registers for f32 and s32, in N/4 .f16x2 registers for f16);
- A in registers: f16/bf16 (k16) as mma.sync m16n8k16's A, tf32 (k8) as m16n8k8's, 8-bit
  (k32) as m16n8k32's, each moved down by 16w rows (4 registers per lane in every case).

So the maps are built from tcsim's mma.sync maps (`tcsim.isa.fragments.mma_fragment`), stacked
over the four warps and the N/8 column blocks: one table for packing, the simulator, the probes
and the docs. The H100 agrees for the f32 accumulator: the descriptor probes
(tests/memory/test_descriptors.py -m hw) stored D of m64n128 through this map and read exactly
the predicted products back.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from ..fragments import FragmentMap, mma_fragment
from ..validate import check_memory
from .spec import WARPGROUP, WgmmaSpec, parse_wgmma

WARPS = WARPGROUP // 32


@dataclass(frozen=True, eq=False)
class WarpgroupFragment(FragmentMap):
    """A `FragmentMap` over the 128 lanes of a warpgroup: ``coords`` is (128, elements, 2).

    Everything else (packing, registers, tables) is FragmentMap's; only what depends on the
    lane count is redefined here.
    """

    lanes = WARPGROUP

    def __post_init__(self) -> None:
        c = self.coords
        flat = c[..., 0] * self.cols + c[..., 1]
        if c.shape[0] != self.lanes or np.unique(flat).size != self.rows * self.cols \
                or flat.size != self.rows * self.cols:
            raise AssertionError(f"{self.name}: fragment map must cover each element once")
        self.coords.setflags(write=False)

    @cached_property
    def lane_of(self) -> np.ndarray:
        out = np.empty((self.rows, self.cols), np.int64)
        out[self.coords[..., 0], self.coords[..., 1]] = np.arange(self.lanes)[:, None]
        out.setflags(write=False)
        return out

    def gather_bits(self, matrix_bits: np.ndarray) -> np.ndarray:
        """Matrix bit patterns (..., rows, cols) -> per-lane elements (..., 128, elements)."""
        m = np.asarray(matrix_bits)
        if m.shape[-2:] != (self.rows, self.cols):
            raise ValueError(f"{self.name}: expected a matrix of shape (..., {self.rows}, "
                             f"{self.cols}), got {m.shape}")
        flat = m.reshape(m.shape[:-2] + (self.rows * self.cols,))
        return np.take(flat, self._matrix_index, axis=-1).reshape(
            m.shape[:-2] + (self.lanes, self.elements))

    def scatter_bits(self, lane_bits: np.ndarray) -> np.ndarray:
        """Per-lane elements (..., 128, elements) -> matrix bit patterns (..., rows, cols)."""
        lane_bits = np.asarray(lane_bits)
        flat = lane_bits.reshape(lane_bits.shape[:-2] + (self.lanes * self.elements,))
        return np.take(flat, self._lane_index, axis=-1).reshape(
            lane_bits.shape[:-2] + (self.rows, self.cols))

    def check_registers(self, regs: np.ndarray) -> np.ndarray:
        r = np.asarray(regs)
        if r.dtype != np.uint32:
            raise TypeError(f"{self.name}: registers must be uint32, got {r.dtype}")
        if r.shape[-2:] != (self.lanes, self.registers):
            raise ValueError(f"{self.name}: expected registers of shape (..., {self.lanes}, "
                             f"{self.registers}), got {r.shape}")
        check_memory(r.size * 4, f"{self.name}: registers of shape {r.shape}")
        return r

    def batch_last_elements(self, matrix_bits: np.ndarray) -> np.ndarray:
        return matrix_bits[self.coords[..., 0], self.coords[..., 1]]

    def __repr__(self) -> str:
        return f"<WarpgroupFragment {self.name}: {self.rows}x{self.cols} {self.format.name}>"


def _warp_qualifier(spec: WgmmaSpec, operand: str) -> str:
    """The mma.sync whose per-warp map wgmma's operand repeats (PTX ISA, module docstring)."""
    if operand in ("c", "d"):
        return {"f32": "m16n8k16.row.col.f32.f16.f16.f32",
                "f16": "m16n8k16.row.col.f16.f16.f16.f16",
                "s32": "m16n8k32.row.col.s32.s8.s8.s32"}[spec.d_type]
    return {"f16": "m16n8k16.row.col.f32.f16.f16.f32",
            "bf16": "m16n8k16.row.col.f32.bf16.bf16.f32",
            "tf32": "m16n8k8.row.col.f32.tf32.tf32.f32",
            "fp8": f"m16n8k32.row.col.f32.{spec.a_type}.e4m3.f32",
            "int8": f"m16n8k32.row.col.s32.{spec.a_type}.s8.s32"}[spec.family]


@cache
def _wgmma_fragment(qualifier: str, operand: str) -> WarpgroupFragment:
    spec = parse_wgmma(qualifier)
    warp = mma_fragment(_warp_qualifier(spec, operand), operand)
    rows, cols = spec.matrix_shape(operand)
    blocks = cols // warp.cols  # N / 8 accumulator blocks; 1 for A
    # coords[32 w + lane, block * e + i] = warp.coords[lane, i] + (16 w, 8 block)
    w = np.arange(WARPS)[:, None, None, None]
    block = np.arange(blocks)[None, None, :, None]
    row = 16 * w + warp.coords[None, :, None, :, 0]
    col = warp.cols * block + warp.coords[None, :, None, :, 1]
    coords = np.stack(np.broadcast_arrays(row, col), axis=-1).reshape(WARPGROUP, -1, 2)
    return WarpgroupFragment(f"wgmma {spec.qualifier} {operand.upper()}", rows, cols,
                             spec.format(operand), np.ascontiguousarray(coords))


def wgmma_fragment(spec: WgmmaSpec | str, operand: str) -> WarpgroupFragment:
    """The register fragment of one operand of a wgmma: "a" (A in registers, the RS form),
    "c" or "d" (the accumulator). B always comes from shared memory: it has no fragment."""
    spec = spec if isinstance(spec, WgmmaSpec) else parse_wgmma(spec)
    op = operand.lower() if isinstance(operand, str) else None
    if op == "b":
        raise ValueError("wgmma reads B from shared memory only (through a descriptor): it "
                         "has no register fragment; see tcsim.memory.canonical_tile")
    if op not in ("a", "c", "d"):
        raise ValueError(f"operand must be 'a', 'c' or 'd', got {operand!r}")
    return _wgmma_fragment(spec.qualifier, op)
