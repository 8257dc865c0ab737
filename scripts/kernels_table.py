"""The counter tables of docs/kernels.md, from a `gpu_check.sh kernels` log (JSON lines).

    python scripts/kernels_table.py docs/evidence/hw_kernels_2026-11-22.jsonl

For each shape and accumulator measured: one row per Nsight Compute metric, and for each
kernel the trace's prediction (computed now, by this tcsim) and the measured value.
"""

import json
import sys

import tcsim

SHORT = {
    "smsp__inst_executed_op_ldsm.sum": "ldmatrix instructions",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared load wavefronts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared load conflicts",
    "smsp__inst_executed_op_shared_st.sum": "st.shared instructions",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared store wavefronts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared store conflicts",
    "smsp__inst_executed_pipe_tensor_op_hmma.sum": "mma (HMMA) instructions",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global load requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global store requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global store sectors",
}


def tables(path: str) -> str:
    records = [json.loads(line) for line in open(path)]
    records = [r for r in records if r["test"] == "kernel_counters"]
    out = []
    for shape, acc in dict.fromkeys((tuple(r["shape"]), r["accumulate"]) for r in records):
        group = [r for r in records if tuple(r["shape"]) == shape and r["accumulate"] == acc]
        traces = {r["kernel"]: tcsim.trace(r["kernel"], *shape, accumulate=acc).totals
                  for r in group}
        M, N, K = shape
        out.append(f"M, N, K = {M}, {N}, {K}; {acc} accumulators. Each cell: trace / ncu.\n")
        out.append("| metric | " + " | ".join(r["kernel"] for r in group) + " |")
        out.append("|---" * (len(group) + 1) + "|")
        for metric, name in SHORT.items():
            cells = [f"{traces[r['kernel']][metric]:,} / {r['ncu'][metric]:,.0f}" for r in group]
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    print(tables(sys.argv[1]), end="")
