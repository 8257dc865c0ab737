"""Warp-wide shared-memory access patterns for the simulator-against-Nsight tests."""

from __future__ import annotations

import numpy as np

from tcsim.hw.smem_probes import SMEM_BYTES, SPELLINGS
from tcsim.memory.access import parse_instruction


def _fits(addresses, width):
    return all(a is None or a + width <= SMEM_BYTES for a in addresses)


def patterns(rng: np.random.Generator) -> list[tuple[str, list, str]]:
    """(spelling, 32 addresses with None for lanes left out, label) for every probe."""
    out = []
    for spelling in SPELLINGS:
        inst = parse_instruction(spelling)
        w = inst.bytes_per_address
        cands = []
        if inst.kind in ("ldmatrix", "stmatrix"):
            for pitch in (128, 144, 64, 256, 16):
                cands.append((f"rows {pitch} B apart", [r * pitch for r in range(32)]))
            cands.append(("16-byte chunks XOR-swizzled by row",
                          [r * 128 + 16 * (r % 8) for r in range(32)]))
            cands.append(("4 rows per 128 B, swizzled",
                          [(r // 4) * 128 + 32 * (r % 4) + 16 * ((r // 4) % 2) for r in range(32)]))
            cands.append(("random rows", [int(x) * 16 for x in rng.integers(0, 512, 32)]))
        else:
            for k in (1, 2, 3, 4, 8, 16, 32, 33):
                cands.append((f"stride {k} x {w} B", [lane * k * w for lane in range(32)]))
            cands.append(("all lanes one address", [64] * 32))
            cands.append(("odd lanes only", [lane * w if lane % 2 else None for lane in range(32)]))
            cands.append(("random", [int(x) * w for x in rng.integers(0, 4096 // w, 32)]))
            cands.append(("random from 4 addresses",
                          [int(x) * w for x in rng.choice(rng.integers(0, 256 // w, 4), 32)]))
            cands.append(("random, some lanes out",
                          [int(x) * w if rng.random() < 0.7 else None
                           for x in rng.integers(0, 2048 // w, 32)]))
            # Broadcast across the phases of wide accesses.
            cands.append(("half-warps identical", [(lane % 16) * w for lane in range(32)]))
            cands.append(("half-warps identical, reversed",
                          [(lane if lane < 16 else 31 - lane) * w for lane in range(32)]))
            cands.append(("quarter-warps identical", [(lane % 8) * w for lane in range(32)]))
            cands.append(("one address per half-warp", [0 if lane < 16 else 4 * w
                                                        for lane in range(32)]))
            cands.append(("one address per quarter-warp", [(lane // 8) * 4 * w
                                                           for lane in range(32)]))
            cands.append(("one address, lane 31 differs", [0] * 31 + [w]))
            cands.append(("lanes 0 and 16, same address",
                          [0 if lane in (0, 16) else None for lane in range(32)]))
            cands.append(("lanes 0 and 16, two addresses",
                          [lane * w if lane in (0, 16) else None for lane in range(32)]))
            cands.append(("lower half-warp only", [lane * w if lane < 16 else None
                                                   for lane in range(32)]))
        out += [(spelling, a, label) for label, a in cands if _fits(a, w)]
    return out
