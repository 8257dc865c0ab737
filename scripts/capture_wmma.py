"""Read the WMMA fragment maps off the GPU and record wmma.mma outputs for model fitting.

    python scripts/capture_wmma.py OUTDIR [--count N]

Writes OUTDIR/wmma_maps.json: for every wmma.load (shape, operand, type, layout) and
wmma.store.d (shape, type, layout), the (row, col) of each lane's elements, read from global
memory with the tight stride, and whether shared memory and a padded stride give the same map;
and OUTDIR/wmma_mma.npz: D's registers of N instructions per wmma.mma qualifier on the inputs
`inputs(qualifier, N)` draws (reproducible from the qualifier's name alone).
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from pathlib import Path

import numpy as np

from tcsim.isa.wmma import (
    load_cases,
    matrix_dims,
    parse_wmma,
    store_cases,
    supported_wmma_qualifiers,
)

PAD_BYTES = 16


def inputs(qualifier: str, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B, C registers (count, 32, n): the first half uniform random bits, the second half
    normal values (f16, bf16, tf32 or f32 as each register holds them)."""
    spec = parse_wmma(qualifier)
    rng = np.random.default_rng(zlib.crc32(spec.qualifier.encode()))
    out = []
    for op in "abc":
        n, type_ = spec.registers(op), getattr(spec, f"{op}_type")
        regs = rng.integers(0, 2**32, (count, 32, n), dtype=np.uint64).astype(np.uint32)
        half = count // 2
        values = rng.standard_normal((count - half, 32, n * (2 if type_ in ("f16", "bf16")
                                                             else 1)))
        if type_ == "f16":
            bits = values.astype(np.float16).view(np.uint16)
        elif type_ == "bf16":
            bits = (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        else:  # f32 and tf32 (the low 13 bits of tf32 are ignored: keep them random)
            bits = values.astype(np.float32).view(np.uint32)
        regs[half:] = np.ascontiguousarray(bits).view(np.uint32).reshape(count - half, 32, n)
        out.append(regs)
    return tuple(out)


def main() -> int:
    from tcsim import hw
    from tcsim.hw.isa import wmma

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--count", type=int, default=200)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    maps = {"gpu": hw.device_name(), "load": {}, "store": {}}
    for shape, op, type_, layout in load_cases():
        bits = 16 if type_ in ("f16", "bf16") else 32
        rows, cols = matrix_dims(shape, op)
        tight = cols if layout == "row" else rows
        base = wmma.capture_load(shape, op, type_, layout, "global")
        same = {f"{space} stride {s}": bool(np.array_equal(
                    wmma.capture_load(shape, op, type_, layout, space, s), base))
                for space in ("global", "shared") for s in (tight, tight + PAD_BYTES * 8 // bits)}
        maps["load"][f"{shape}.{op}.{type_}.{layout}"] = {"coords": base.tolist(), "same": same}
    for shape, type_, layout in store_cases():
        bits = 16 if type_ == "f16" else 32
        rows, cols = matrix_dims(shape, "d")
        tight = cols if layout == "row" else rows
        base = wmma.capture_store(shape, type_, layout, "global")
        same = {f"{space} stride {s}": bool(np.array_equal(
                    wmma.capture_store(shape, type_, layout, space, s), base))
                for space in ("global", "shared") for s in (tight, tight + PAD_BYTES * 8 // bits)}
        maps["store"][f"{shape}.d.{type_}.{layout}"] = {"coords": base.tolist(), "same": same}
    (args.out / "wmma_maps.json").write_text(json.dumps(maps))
    differ = [k for kind in ("load", "store") for k, v in maps[kind].items()
              if not all(v["same"].values())]
    print(f"maps: {len(maps['load'])} loads, {len(maps['store'])} stores; differing across "
          f"space or stride: {differ or 'none'}")
    outputs = {}
    for q in supported_wmma_qualifiers():
        outputs[q] = wmma.wmma_regs(q, *inputs(q, args.count))
    np.savez_compressed(args.out / "wmma_mma.npz", **outputs)
    print(f"mma: {len(outputs)} qualifiers x {args.count} instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
