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
    "smsp__sass_inst_executed_op_ldgsts_cache_bypass.sum": "cp.async.cg instructions",
    "smsp__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum":
        "cp.async.cg requests",
    "smsp__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum":
        "cp.async.cg sectors",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts_cache_bypass.sum":
        "cp.async.cg shared wavefronts",
    "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts_cache_bypass.sum":
        "cp.async.cg shared conflicts",
}


def tables(path: str) -> str:
    records = [json.loads(line) for line in open(path)]
    records = [r for r in records if r["test"] == "kernel_counters"]
    out = []
    def key(r):
        return tuple(r["shape"]), r["accumulate"], json.dumps(r.get("params", {}))

    for shape, acc, params in dict.fromkeys(key(r) for r in records):
        group = [r for r in records if key(r) == (shape, acc, params)]
        traces = {r["kernel"]: tcsim.trace(r["kernel"], *shape, accumulate=acc,
                                           **json.loads(params)).totals for r in group}
        M, N, K = shape
        extra = f", {params}" if params != "{}" else ""
        out.append(f"M, N, K = {M}, {N}, {K}; {acc} accumulators{extra}. "
                   f"Each cell: trace / ncu.\n")
        out.append("| metric | " + " | ".join(r["kernel"] for r in group) + " |")
        out.append("|---" * (len(group) + 1) + "|")
        for metric, name in SHORT.items():
            if not any(metric in traces[r["kernel"]] for r in group):
                continue
            cells = [f"{traces[r['kernel']][metric]:,} / {r['ncu'][metric]:,.0f}"
                     if metric in traces[r["kernel"]] else "-" for r in group]
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    print(tables(sys.argv[1]), end="")
