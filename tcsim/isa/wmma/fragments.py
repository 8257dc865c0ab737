"""WMMA fragment maps, as the H100 lays them out: data read off the GPU.

CUDA calls WMMA fragments opaque; on sm_90 they are fixed, and ``maps_sm90.json`` beside this
module holds them: for every shape, operand and element type, the (row, col) of each element of
each lane, captured by ``scripts/capture_wmma.py`` (docs/wmma.md has the evidence). A fragment
does not depend on the layout it was loaded with or stored in, nor on the memory or the stride:
row and col, global and shared, tight and padded strides gave the same map; C's load map and
D's store map are one map. f16 A and B fragments repeat their elements: PTX gives them 16
halves per lane, and 16 x 16 A has only 8 per lane, so registers 4-7 repeat registers 0-3
(m8n32k16's A holds each element four times). `wmma.mma` reads the first copy.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

import numpy as np

from ..formats import format_named
from ..fragments import FragmentMap
from .spec import WmmaSpec, matrix_dims, parse_wmma


@cache
def _maps() -> dict[str, list]:
    return json.loads((files("tcsim.isa.wmma") / "maps_sm90.json").read_text())["maps"]


def wmma_fragment(qualifier: str | WmmaSpec, operand: str) -> FragmentMap:
    """The fragment map of one operand ("a", "b", "c" or "d") of a wmma.mma qualifier."""
    spec = parse_wmma(qualifier) if isinstance(qualifier, str) else qualifier
    if operand not in ("a", "b", "c", "d"):
        raise ValueError(f"operand must be 'a', 'b', 'c' or 'd', not {operand!r}")
    return fragment_map(spec.shape, operand, getattr(spec, f"{operand}_type"))


@cache
def fragment_map(shape: str, operand: str, type_: str) -> FragmentMap:
    """The H100's fragment map of (shape, operand, element type); D's is C's."""
    key = f"{shape}.{'c' if operand == 'd' else operand}.{type_}"
    try:
        coords = np.array(_maps()[key], np.int64)
    except KeyError:
        raise ValueError(f"no wmma fragment for {shape} {operand} {type_}") from None
    rows, cols = matrix_dims(shape, operand)
    copies = coords.shape[0] * coords.shape[1] // (rows * cols)
    return FragmentMap(f"wmma.{shape} {operand.upper()} ({type_})", rows, cols,
                       format_named(type_), coords, copies)
