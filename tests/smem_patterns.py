"""Warp-wide shared-memory access patterns for the simulator-against-Nsight tests."""

from __future__ import annotations

import numpy as np

from tcsim.hw.memory.smem_probes import SMEM_BYTES, SPELLINGS
from tcsim.memory.access import parse_instruction


def _fits(addresses, width):
    return all(a is None or a + width <= SMEM_BYTES for a in addresses)


def patterns(rng: np.random.Generator) -> list[tuple[str, list, np.ndarray | None, str]]:
    """(spelling, 32 addresses with None for lanes left out, global sources, label) per probe.

    Sources are given for cp.async only (lane l's global byte offset in the probe's buffer):
    16 * l for the shared-address families, varied on purpose in `copy_patterns`."""
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
            for t, share in enumerate((0.3, 0.5, 0.7, 0.9)):  # partial quarters, broadcasts
                cands.append((f"random subset #{t}",
                              [int(x) * w if rng.random() < share else None
                               for x in rng.integers(0, 512 // w, 32)]))
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
        sources = SIXTEEN_APART if inst.kind == "cp.async" else None
        out += [(spelling, a, sources, label) for label, a in cands if _fits(a, w)]
        if inst.kind == "cp.async":
            out += [(spelling, a, g, label) for a, g, label in copy_patterns(rng, w)]
    return out


SIXTEEN_APART = 16 * np.arange(32)


def copy_patterns(rng: np.random.Generator, w: int) -> list[tuple[list, np.ndarray, str]]:
    """cp.async: global sources and shared destinations varied together (w-byte copies)."""
    lanes = np.arange(32)
    contiguous = w * lanes
    out = [
        (list(contiguous), contiguous, "shared and sources contiguous"),
        (list(contiguous), contiguous[::-1], "sources reversed"),
        (list(contiguous), contiguous + 16, "sources shifted by 16 bytes"),
        (list(contiguous), 128 * lanes + 16 * (lanes % 8), "one consecutive line per lane"),
        ([16 * (lane // 8) for lane in lanes], SIXTEEN_APART, "a shared word per line"),
        ([w * (lane ^ 4) for lane in lanes], contiguous, "destinations XOR-swizzled"),
        ([w * (lane + lane // 8) for lane in lanes], contiguous, "rows padded by one copy"),
        ([3 * w * lane for lane in lanes], contiguous, "destinations 3 copies apart"),
        (list(contiguous), 384 * lanes, "sources in every third line (set conflicts)"),
    ]
    for t in range(3):
        line = [w * int(c) for c in rng.permutation(128 // w)] * (w * 32 // 128)
        out.append((list(contiguous), np.array(line) + 128 * (lanes * w // 128),
                    f"sources permuted within lines #{t}"))
        shared = [w * int(x) for x in rng.choice(2048 // w, 32, replace=False)]
        out.append((shared, w * rng.permutation(32), f"random destinations and sources #{t}"))
    return out
