"""Nsight Compute counters for kernels the harness launches: `profile(launches, metrics)`.

Counters come from a separate process run under ``ncu`` (``--clock-control none``; the device
must allow profiling) that runs each `tcsim.hw.launch.Launch` once.
`profile` returns one ``{metric: value}`` dict per launch, in order.

    python -m tcsim.hw.ncu LAUNCHES.pkl    # the child side: launch everything once
"""

from __future__ import annotations

import csv
import glob
import io
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

from .launch import Launch, launch

# Shared-memory counters (Nsight Compute 2025.3 names).
SHARED_METRICS = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed_op_ldsm.sum",
    "smsp__inst_executed_op_shared_ld.sum",
    "smsp__inst_executed_op_shared_st.sum",
    # cp.async (LDGSTS) writes: its own conflict counter; wavefronts only in the totals.
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_write.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
    "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts_cache_bypass.sum",
)


def find_ncu() -> str:
    """The ncu executable: $TCSIM_NCU, ncu on PATH, or the newest /opt/nvidia/nsight-compute."""
    for candidate in (os.environ.get("TCSIM_NCU"), shutil.which("ncu"),
                      *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True),
                      *sorted(glob.glob("/usr/local/cuda*/bin/ncu"), reverse=True)):
        if candidate and os.path.exists(candidate):
            return candidate
    raise FileNotFoundError("Nsight Compute (ncu) not found; set TCSIM_NCU to its path")


def profile(launches: list[Launch], metrics=SHARED_METRICS,
            extra_args: tuple[str, ...] = ()) -> list[dict[str, float]]:
    """Run every launch once under ncu; return its counters, one dict per launch."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "launches.pkl")
        with open(path, "wb") as f:
            pickle.dump(launches, f)
        cmd = [find_ncu(), "--clock-control", "none", "--csv", "--print-units", "base",
               "--metrics", ",".join(metrics), *extra_args,
               sys.executable, "-m", "tcsim.hw.ncu", path]
        run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"ncu failed ({run.returncode}):\n{run.stdout[-3000:]}\n"
                           f"{run.stderr[-3000:]}")
    return parse_csv(run.stdout, len(launches), metrics)


def parse_csv(text: str, count: int, metrics) -> list[dict[str, float]]:
    """ncu --csv --print-units base output: one dict of ``metrics`` per kernel launch."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    ids = sorted({int(r["ID"]) for r in rows})
    if len(ids) != count:
        raise RuntimeError(f"ncu reported {len(ids)} kernel launches, expected {count}:\n"
                           + text[-3000:])
    out = [dict.fromkeys(metrics, float("nan")) for _ in ids]
    index = {launch_id: i for i, launch_id in enumerate(ids)}
    for r in rows:
        value = r["Metric Value"].replace(",", "")
        try:
            out[index[int(r["ID"])]][r["Metric Name"]] = float(value)
        except ValueError:
            out[index[int(r["ID"])]][r["Metric Name"]] = float("nan")
    return out


def _child(path: str) -> None:
    import cupy

    with open(path, "rb") as f:
        launches = pickle.load(f)
    for spec in launches:
        launch(spec)
        cupy.cuda.runtime.deviceSynchronize()


if __name__ == "__main__":
    _child(sys.argv[1])
