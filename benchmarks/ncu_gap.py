"""Where cuBLAS stays ahead of kernel10, in counters: Nsight Compute on both, side by side.

    python benchmarks/ncu_gap.py 1536x1536x1536=128x192 "256x8192x8192=128x128 +stages=6" \\
                                 [--inputs f16|bf16] [--accumulate f32] [--json FILE]

Each argument is a shape and one of kernel10's variants (a label of
`tcsim.perf.TILE_VARIANTS["kernel10"]` with bench_sweep.py's ``+key=value`` overrides). At every
shape, one launch of each variant given for it and one torch.matmul (cuBLAS; every kernel it
launches, a split-K reduction included), under ``ncu --clock-control none``, in a separate process.
Prints per kernel: its name, grid and cluster, time, the share of elapsed cycles its SMs were
active and its tensor pipe busy, the instructions it executed, TMA's bytes, L2's read requests
and sectors, DRAM's bytes and shared memory's LSU wavefronts. Needs CuPy, torch, an sm_90a GPU
and ncu.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

METRICS = {
    "gpu__time_duration.sum": "us",
    "launch__grid_size": "grid",
    "launch__cluster_dim_x": "cluster x",
    "launch__cluster_dim_y": "cluster y",
    "sm__cycles_elapsed.max": "SM cycles",
    "sm__cycles_active.avg": "SM active cycles (mean)",
    "smsp__cycles_elapsed.avg.per_second": "clock Hz",
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg"
    ".pct_of_peak_sustained_elapsed": "tensor %",
    "smsp__inst_executed.sum": "instructions",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum": "TMA bytes",
    "lts__t_requests_srcunit_tex_op_read.sum": "L2 read requests",
    "lts__t_sectors_srcunit_tex_op_read.sum": "L2 read sectors",
    "lts__t_bytes.sum": "L2 bytes",
    "dram__bytes_read.sum": "DRAM read bytes",
    "dram__bytes_write.sum": "DRAM write bytes",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum": "shared wavefronts",
}


def cases(args: list[str]) -> dict[tuple[int, int, int], list[str]]:
    """``SHAPE=VARIANT`` arguments grouped by shape, in the order given."""
    out: dict[tuple[int, int, int], list[str]] = {}
    for arg in args:
        shape, _, spec = arg.partition("=")
        try:
            M, N, K = (int(x) for x in shape.split("x"))
        except ValueError:
            raise SystemExit(f"{arg!r}: expected MxNxK=VARIANT") from None
        out.setdefault((M, N, K), []).append(spec)
    return out


def child(groups, inputs: str, accumulate: str, sidecar: str) -> None:
    """ncu's subject: at each shape every variant once, then torch.matmul once."""
    import bench_gpu  # this folder's: the inputs and torch.matmul as the sweep times them
    import cupy
    import numpy as np
    from bench_sweep import variant  # this folder's: the variant syntax

    import tcsim
    from tcsim.hw.kernels import device_launch
    from tcsim.hw.launch import launcher

    kernel = tcsim.kernels.kernel_named("kernel10")
    rng = np.random.default_rng()
    order = []
    for (M, N, K), specs in groups.items():
        sets, D, references = bench_gpu.references(M, N, K, rng, inputs)
        for spec in specs:
            _, overrides, defines = variant(spec)
            p = kernel.params(accumulate=accumulate, inputs=inputs, output=inputs, **overrides)
            x = device_launch(kernel, p, *sets[0], D)
            launcher(replace(x, defines={**x.defines, **defines}))()
            cupy.cuda.runtime.deviceSynchronize()
            order.append({"shape": [M, N, K], "who": spec, "kernel": x.kernel})
        references["torch", "f32"](0)
        cupy.cuda.runtime.deviceSynchronize()
        order.append({"shape": [M, N, K], "who": "cuBLAS"})
    Path(sidecar).write_text(json.dumps(order))


def attribute(text: str, order: list[dict]) -> list[dict]:
    """ncu's CSV rows, one dict per kernel launch, labelled with the launch they belong to:
    kernel10's launches one each, every other kernel to the cuBLAS call that follows them."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    launches: dict[int, dict] = {}
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        row = launches.setdefault(int(r["ID"]), {"name": r["Kernel Name"]})
        try:
            row[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
        except ValueError:
            row[r["Metric Name"]] = float("nan")
    out, expected = [], iter(order)
    current = next(expected)
    for _, row in sorted(launches.items()):
        while current["who"] == "cuBLAS" and row["name"] == order_kernel(order):
            current = next(expected)  # cuBLAS's kernels are done: the next shape's variant
        out.append({**{k: v for k, v in current.items() if k != "kernel"}, **row})
        if current["who"] != "cuBLAS":
            current = next(expected)
    return out


def order_kernel(order: list[dict]) -> str:
    """The name kernel10's twin launches under."""
    return next(o["kernel"] for o in order if "kernel" in o)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="+", metavar="MxNxK=VARIANT")
    p.add_argument("--inputs", choices=["f16", "bf16"], default="f16")
    p.add_argument("--accumulate", choices=["f16", "f32"], default="f32")
    p.add_argument("--json", default=None)
    p.add_argument("--child", metavar="SIDECAR", help=argparse.SUPPRESS)
    args = p.parse_args()
    groups = cases(args.cases)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.child:
        return child(groups, args.inputs, args.accumulate, args.child)
    from tcsim.hw.ncu import find_ncu

    with tempfile.TemporaryDirectory() as tmp:
        sidecar = str(Path(tmp) / "order.json")
        cmd = [find_ncu(), "--clock-control", "none", "--csv", "--print-units", "base",
               "--metrics", ",".join(METRICS), sys.executable, __file__, *args.cases,
               "--inputs", args.inputs, "--accumulate", args.accumulate, "--child", sidecar]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"ncu failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
        rows = attribute(run.stdout, json.loads(Path(sidecar).read_text()))
    print(f"{'shape':>15s} {'who':22s} {'kernel':44s} {'grid':>5s} {'cl':>3s} {'us':>7s} "
          f"{'active':>6s} {'tensor':>6s} {'inst M':>7s} {'L2 req M':>8s} {'sec/req':>7s} "
          f"{'DRAM MB':>8s} {'shared M':>8s}")
    for r in rows:
        g = r.get
        active = g("sm__cycles_active.avg", 0) / max(g("sm__cycles_elapsed.max", 1), 1)
        req = g("lts__t_requests_srcunit_tex_op_read.sum", 0)
        print(f"{'x'.join(map(str, r['shape'])):>15s} {r['who'][:22]:22s} {r['name'][:44]:44s} "
              f"{g('launch__grid_size', 0):5.0f} "
              f"{g('launch__cluster_dim_x', 1) * g('launch__cluster_dim_y', 1):3.0f} "
              f"{g('gpu__time_duration.sum', 0) / 1e3:7.1f} {active:6.0%} "
              f"{g(next(k for k in METRICS if 'tensor' in k), 0):5.1f}% "
              f"{g('smsp__inst_executed.sum', 0) / 1e6:7.2f} {req / 1e6:8.2f} "
              f"{g('lts__t_sectors_srcunit_tex_op_read.sum', 0) / max(req, 1):7.2f} "
              f"{g('dram__bytes_read.sum', 0) / 1e6:8.1f} "
              f"{g('l1tex__data_pipe_lsu_wavefronts_mem_shared.sum', 0) / 1e6:8.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
