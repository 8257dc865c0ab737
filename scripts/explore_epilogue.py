"""Exploration (issue 15): what kernel8's epilogue costs, and whether fetching C into L2 early
hides it.

    python scripts/explore_epilogue.py [--runs 15] [--shapes 8192x8192x8192 ...] [--json FILE]

kernel8's time per tile fits t = a K + e with e about 7 us on the H100 (docs/kernels.md): at
8192x4096x2048 a fifth of the time. The variants are defines of the twin
(tcsim/hw/kernels/hopper.cuh): C_PREFETCH has the consumers issue `prefetch.global.L2` for their
tile's C that many K tiles before the tile ends; EXPLORE_NO_C (benchmarks/cuda/explore.cuh)
drops the C loads (a bound, not a kernel: D ignores C). cuBLAS runs both as cupy.matmul (beta 0:
it never reads C) and as an in-place torch.addmm (beta 1), which reads C as every twin does.
Timing as bench_gpu.py, once without the spin kernel ahead of each launch (as before 2026-11-24:
the launch's CPU time counted) and once with it.
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
    LEAD_SECONDS,
    _kernel,
    check_variants,
    interleaved_medians,
    parse_shapes,
    references,
    variant_parser,
)
from explore import SWITCHES, explore  # noqa: E402

import tcsim  # noqa: E402
from tcsim.hw.kernels import device_launch  # noqa: E402
from tcsim.hw.launch import launcher  # noqa: E402
from tcsim.kernels.tma_epilogue import tensor_maps as epilogue_maps  # noqa: E402

VARIANTS = {  # label -> extra defines on kernel8's twin
    "kernel8": {},
    "no C loads": {"EXPLORE_NO_C": 1},
    "no D stores": {"EXPLORE_NO_D": 1},
    "no epilogue": {"EXPLORE_NO_EPILOGUE": 1},
    "staged": {"STAGED_EPILOGUE": 1},  # kernel9's epilogue
    # C in and D out by TMA through per-warp buffers (hopper.cuh's TMA_STORE_EPILOGUE)
    "tma 2 buffers": {"TMA_STORE_EPILOGUE": 1, "STORE_BUFFERS": 2, "C_EARLY": 1},
    "tma 2 buffers, C 3 early": {"TMA_STORE_EPILOGUE": 1, "STORE_BUFFERS": 2, "C_EARLY": 3},
    "tma 4 buffers, 3 stages": {"TMA_STORE_EPILOGUE": 1, "STORE_BUFFERS": 4, "STAGES": 3,
                                "C_EARLY": 1},
    "tma, cluster 2": {"TMA_STORE_EPILOGUE": 1, "STORE_BUFFERS": 2, "C_EARLY": 1,
                       "CLUSTER_M": 2},
    "tma, cluster 2, group 8": {"TMA_STORE_EPILOGUE": 1, "STORE_BUFFERS": 2, "C_EARLY": 1,
                                "CLUSTER_M": 2, "GROUP_M": 8},
}


def _variant(launch, extra: dict):
    """``launch`` with ``extra`` defines (and the epilogue's shared memory and maps, from
    GemmParams and tcsim.kernels.tma_epilogue, as kernel9 and kernel10 have them)."""
    shared, maps = launch.shared_bytes, launch.tensor_maps
    stages = extra.get("STAGES", launch.defines["STAGES"])
    if extra.get("STAGED_EPILOGUE"):
        shared = tcsim.kernels.kernel_named("kernel9").params(stages=stages).shared_bytes
    if extra.get("TMA_STORE_EPILOGUE"):
        shared = tcsim.kernels.kernel_named("kernel10").params(
            store_buffers=extra["STORE_BUFFERS"], stages=stages).shared_bytes
        maps = (*maps, *epilogue_maps(launch.args[6], launch.args[7]))
    if SWITCHES & extra.keys():  # a part taken out: explore.cuh's switches
        launch = explore(launch)
    return dataclasses.replace(launch, defines={**launch.defines, **extra}, shared_bytes=shared,
                               tensor_maps=maps)


def main() -> None:
    p = variant_parser(__doc__)
    p.add_argument("--lead-only", action="store_true", help="only the GPU-time timing")
    p.add_argument("--variants", nargs="*", default=list(VARIANTS))
    args = p.parse_args()
    variants = {label: VARIANTS[label] for label in ["kernel8", *args.variants]}
    import cupy

    shapes = parse_shapes(args.shapes)
    kernel = tcsim.kernels.kernel_named("kernel8")
    rng = np.random.default_rng(0)
    rows = []
    for M, N, K in shapes:
        sets, D, contenders = references(M, N, K, rng)
        flops = 2 * M * N * K
        for acc in args.accumulate:
            p_ = kernel.params(accumulate=acc)
            for label, extra in variants.items():
                launches = [_variant(device_launch(kernel, p_, *s, D), extra) for s in sets]
                contenders[label, acc] = partial(_kernel, [launcher(x) for x in launches])
        row = {"shape": [M, N, K]}
        leads = (LEAD_SECONDS,) if args.lead_only else (0, LEAD_SECONDS)
        for lead in leads:  # the old timing (the launch counted), then the GPU's
            late = {}
            seconds = interleaved_medians(contenders, args.runs, lead=lead, late=late)
            for (label, acc), t in seconds.items():
                row[f"{label} {acc}{'' if lead else ' no lead'}"] = round(flops / t / 1e12, 1)
        row["late launches"] = {f"{k[0]} {k[1]}": n for k, n in late.items() if n}
        # Fresh inputs for the bits: torch.addmm wrote over C while it was timed.
        sets = [[cupy.asarray(rng.uniform(-1, 1, x.shape).astype(np.float16)) for x in s]
                for s in sets]
        for acc in args.accumulate:
            p_ = kernel.params(accumulate=acc)
            run = {label: launcher(_variant(device_launch(kernel, p_, *sets[0], D), extra))
                   for label, extra in variants.items()}
            row.update(check_variants(kernel, p_, sets[0], D, run, rng, acc))
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
