"""Exploration (issue 15): kernel8 on clusters of blocks that share B's tile by TMA multicast.

    python scripts/explore_cluster.py [--runs 15] [--shapes 8192x8192x8192 ...] [--json FILE]

The twin's CLUSTER_M define (tcsim/hw/kernels/hopper.cuh) groups CLUSTER_M persistent blocks
computing vertically adjacent tiles into a cluster: each copies 1 / CLUSTER_M of B's boxes and
multicasts them to all, so L2 serves B once per cluster. The simulator has no clusters yet; the
variant's D must equal kernel8's bit for bit (the same wgmma on the same tiles), and kernel8's
one random block tile is checked against `tcsim.run` as bench_gpu.py does. Timing as
bench_gpu.py: cuBLAS, torch and the variants in turns, median of ``--runs``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_gpu import (  # noqa: E402
    _kernel,
    check_variants,
    interleaved_medians,
    parse_shapes,
    references,
    variant_parser,
)

import tcsim  # noqa: E402
from tcsim.hw.kernels import device_launch  # noqa: E402
from tcsim.hw.launch import launcher  # noqa: E402

VARIANTS = {  # label -> (extra defines on kernel8's twin, persistent blocks or None: 132)
    "kernel8": ({}, None),
    "cluster2": ({"CLUSTER_M": 2}, None),  # groups of 16 clusters: 32 block rows
    "cluster2 group8": ({"CLUSTER_M": 2, "GROUP_M": 8}, None),  # 16 block rows, as kernel8
    "cluster2 group4": ({"CLUSTER_M": 2, "GROUP_M": 4}, None),
    "cluster2 no multicast": ({"CLUSTER_M": 2, "CLUSTER_SHARE_B": 0}, None),
}


def main() -> None:
    p = variant_parser(__doc__)
    args = p.parse_args()

    shapes = parse_shapes(args.shapes)
    kernel = tcsim.kernels.kernel_named("kernel8")
    rng = np.random.default_rng(0)
    rows = []
    for M, N, K in shapes:
        sets, D, contenders = references(M, N, K, rng)
        flops = 2 * M * N * K
        for acc in args.accumulate:
            p_ = kernel.params(accumulate=acc)
            for label, (extra, blocks) in VARIANTS.items():
                q = p_ if blocks is None else dataclasses.replace(p_, persistent_blocks=blocks)
                launches = [device_launch(kernel, q, *s, D) for s in sets]
                launches = [dataclasses.replace(x, defines={**x.defines, **extra})
                            for x in launches]
                contenders[label, acc] = partial(_kernel, [launcher(x) for x in launches])
        seconds = interleaved_medians(contenders, args.runs)
        row = {"shape": [M, N, K]}
        for (label, acc), t in seconds.items():
            row[f"{label} {acc}"] = round(flops / t / 1e12, 1)
        for acc in args.accumulate:  # bits: each variant against kernel8, kernel8 against tcsim
            runs = {label: partial(contenders[label, acc], 0) for label in VARIANTS}
            row.update(check_variants(kernel, kernel.params(accumulate=acc), sets[0], D, runs,
                                      rng, acc))
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
