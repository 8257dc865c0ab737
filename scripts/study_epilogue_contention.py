"""Study (issue 35, item 2): what are the shared-memory wavefronts that Nsight Compute counts in
kernel9's and kernel10's staged epilogues beyond what their addresses need?

    python scripts/study_epilogue_contention.py [--json FILE]     # on the GPU machine, < 3 min
    python scripts/study_epilogue_contention.py --compile-only    # here: every variant compiles

The trace counts what the addresses need (no conflict anywhere); ncu counts more, a different
number at each launch, mostly as "bank conflicts" (docs/kernels.md). The hypothesis: while a
warp stages its epilogue, other clients of the SM's shared memory (the producer's TMA copies
of the next tile, the other consumer's wgmma, the epilogue's own TMA copies of C and D or its
global loads and stores) take the data banks, and the LSU's wavefronts that lose are counted
again. Each case is profiled in one ncu process, as these launches of the same inputs:

  default x 5   the twin as it is: the spread from launch to launch;
  drained x 2   EXPLORE_QUIET_EPILOGUE 1 (benchmarks/cuda/explore.cuh): no TMA load of A or B
                and no wgmma during any epilogue; the warps' epilogues still overlap;
  turns x 2     3: drained, and the consumer warps take turns at the epilogue;
  own x 2       5: drained, and each warp's own copies of C and D (TMA or global) finish
                before its next shared access, the warps all at once;
  quiet x 3     7: all three: nothing else touches the SM's shared memory during a warp's.

If every quiet launch counts exactly the trace's wavefronts and no conflict while the default
ones exceed it by varying amounts, the excess is contention, not the addresses. ncu's SASS
counters (smsp__sass_*: wavefronts and conflicts computed from each instruction's addresses,
where this ncu has them) are profiled too: the addresses' own count, whatever runs beside.
The variants are the twin's source with explore.cuh's hooks patched into a copy of hopper.cuh
(the product's twin has no hook); every variant's D is checked against the default's first,
in a child process with a time limit. Writes $OUT/study_epilogue_contention.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CUDA = ROOT / "benchmarks" / "cuda"  # explore.cuh

import tcsim  # noqa: E402
from tcsim.hw import runtime  # noqa: E402
from tcsim.hw.kernels import twin_launch  # noqa: E402

CASES = [("kernel10", (1024, 2048, 1024)), ("kernel9", (512, 1024, 1024))]  # f32 accumulation
# EXPLORE_QUIET_EPILOGUE (explore.cuh: 1 drained, 2 turns, 4 own copies done), launches
VARIANTS = {"default": (0, 5), "drained": (1, 2), "turns": (3, 2), "own": (5, 2), "quiet": (7, 3)}
OPS = ("ld", "st")
WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{}.sum"
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{}.sum"
METRICS = (*(WAVEFRONTS.format(op) for op in OPS), *(CONFLICTS.format(op) for op in OPS),
           "smsp__inst_executed_op_ldsm.sum", "smsp__inst_executed_op_shared_ld.sum",
           "smsp__inst_executed_op_shared_st.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
           "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum",
           "gpu__time_duration.sum")

# Where explore.cuh's hooks go in hopper.cuh: (anchor, text put in its place). Each anchor must
# occur exactly once (the patch fails loudly when hopper.cuh has moved on).
HOOKS = [
    ("// ---- the schedule (",
     '#define EXPLORE_HOOKS_HERE 1\n#include "explore.cuh"\n\n// ---- the schedule ('),
    # kernel10: its own store finished, its own box of C landed, before the next shared access
    ("      bulk_commit();\n      if (READ_C && chunk + STORE_BUFFERS < BN / 64) {",
     "      bulk_commit();\n      explore_store_done();\n"
     "      if (READ_C && chunk + STORE_BUFFERS < BN / 64) {"),
    ("                   tile_col + (chunk + STORE_BUFFERS) * 64);\n",
     "                   tile_col + (chunk + STORE_BUFFERS) * 64);\n"
     "        explore_c_box_landed(c_full, stores + STORE_BUFFERS);\n"),
    # kernel9: no load of C ahead (each chunk loads its own, which its st.shared waits for) ...
    ("    if (chunk + 1 < BN / 64) {\n",
     "    if (EXPLORE_OWN_COPIES_DONE && chunk > 0) {\n#pragma unroll\n"
     "      for (int q = 0; q < 4; q++)\n"
     "        ld_c_line(c_lines[chunk % 2][q], C, tile_row + 4 * q + lane / 8, col, M, N);\n"
     "    }\n"
     "    if (!EXPLORE_OWN_COPIES_DONE && chunk + 1 < BN / 64) {\n"),
    # ... all four of them landed before its first st.shared ...
    ("      st_shared_v4(staging + staging_offset(4 * q + lane / 8, lane % 8), "
     "c_lines[chunk % 2][q]);\n",
     "      st_shared_v4(staging + staging_offset(4 * q + lane / 8, lane % 8) +\n"
     "                   explore_lines_landed(c_lines[chunk % 2], alpha),\n"
     "                   c_lines[chunk % 2][q]);\n"),
    # ... and its stores of D done before the next chunk
    ("        st_global_v4(D + (uint64_t)row * N + col, v);\n      }\n    }\n",
     "        st_global_v4(D + (uint64_t)row * N + col, v);\n      }\n    }\n"
     "    explore_global_stores_done();\n"),
    # both: drain and meet before the epilogue, take turns, meet after it
    ("    wgmma_wait<0>();\n    fence_registers(acc);\n    if (!PLANT_EARLY_RELEASE && lane == 0)\n"
     "      release_stage(empty + 8 * ((it - 1) % STAGES));  // the tile's last stage\n",
     "    wgmma_wait<0>();\n    fence_registers(acc);\n    if (!PLANT_EARLY_RELEASE && lane == 0)\n"
     "      release_stage(empty + 8 * ((it - 1) % STAGES));  // the tile's last stage\n"
     "#if TMA_STORE_EPILOGUE\n    explore_c_boxes_landed(c_full_warp, stores, read_c);\n#endif\n"
     "    explore_before_epilogue(full, it, t, tiles, k_tiles);\n"
     "    for (int explore_turn = 0; explore_turn < EXPLORE_TURNS; explore_turn++) {\n"
     "    if (explore_my_turn(explore_turn)) {\n"),
    ("    if (TIMING_KEEP(EPILOGUE, alpha)) epilogue_tile(acc, at, C, D, alpha, beta, N);\n"
     "#endif\n  }\n",
     "    if (TIMING_KEEP(EPILOGUE, alpha)) epilogue_tile(acc, at, C, D, alpha, beta, N);\n"
     "#endif\n    }\n    }\n    explore_after_epilogue();\n  }\n"),
]


def patched_hopper() -> str:
    """hopper.cuh with explore.cuh's hooks in place (its #pragma once dropped: it is inlined)."""
    text = runtime.source_text("hopper.cuh").replace("#pragma once\n", "", 1)
    for anchor, replacement in HOOKS:
        found = text.count(anchor)
        if found != 1:
            raise SystemExit(f"hopper.cuh has moved on: {found} places for the hook at "
                             f"{anchor.strip()[:60]!r}")
        text = text.replace(anchor, replacement)
    return text


def variant(launch, level: int):
    """``launch`` (a Hopper twin's) with EXPLORE_QUIET_EPILOGUE ``level``: the twin's source with
    the patched hopper.cuh inlined; level 0 is the twin itself."""
    if not level:
        return launch
    twin = runtime.source_text(launch.source)
    if twin.count('#include "hopper.cuh"') != 1:
        raise SystemExit(f"{launch.source} does not include hopper.cuh once")
    text = '#include "explore.cuh"\n' + twin.replace('#include "hopper.cuh"', patched_hopper())
    return dataclasses.replace(launch, source=text, include=(*launch.include, str(CUDA)),
                               defines={**launch.defines, "EXPLORE_QUIET_EPILOGUE": level})


def operands(rng, M, N, K):
    """f16 A, B, C of mixed scale (no edge values: the study is about addresses), and alpha,
    beta drawn nonzero (beta 0 would skip C)."""
    A = (rng.standard_normal((M, K)) * rng.choice([0.25, 1, 4], (M, 1))).astype(np.float16)
    B = (rng.standard_normal((K, N)) * rng.choice([0.25, 1, 4], (1, N))).astype(np.float16)
    C = rng.standard_normal((M, N)).astype(np.float16)
    alpha, beta = (float(np.float32(x)) for x in rng.uniform(0.5, 2, 2) * rng.choice([-1, 1], 2))
    return A, B, C, alpha, beta


def launches(rng, kernels=None) -> list[dict]:
    """Every case's launches (of ``kernels``: all by default), in order: {case, variant, level,
    launch}."""
    out = []
    for name, (M, N, K) in CASES:
        if kernels and name not in kernels:
            continue
        A, B, C, alpha, beta = operands(rng, M, N, K)
        base = twin_launch(name, A, B, C, alpha, beta, label=f"{name} {M}x{N}x{K}",
                           accumulate="f32")
        for label, (level, count) in VARIANTS.items():
            for i in range(count):
                out.append({"case": f"{name} {M}x{N}x{K} f32", "kernel": name, "shape": [M, N, K],
                            "beta": beta, "variant": label, "level": level, "run": i,
                            "launch": variant(base, level)})
    return out


def compile_only(items) -> None:
    """Every variant's source through nvcc for sm_90a (no GPU): the hooks compile, and the
    epilogue's shared instructions are those of the twin (cuobjdump where there is one)."""
    import shutil

    cuobjdump = shutil.which("cuobjdump")
    for item in items:
        if item["run"]:
            continue
        launch = item["launch"]
        text = runtime.source_text(launch.source) if "\n" not in launch.source else launch.source
        cubin = runtime.nvcc(text, launch.defines, arch="sm_90a", include=launch.include)
        counts = ""
        if cuobjdump:
            with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                f.write(cubin)
                f.flush()
                sass = subprocess.run([cuobjdump, "-sass", f.name], capture_output=True,
                                      text=True).stdout
            ops = re.findall(r"\b(LDSM|STSM|LDS|STS|LDG|STG|UTMASTG|UTMALDG|BAR\.SYNC)[.\w]*",
                             sass)
            counts = " ".join(f"{op} {ops.count(op)}" for op in dict.fromkeys(sorted(ops)))
        print(f"{item['case']:28} {item['variant']:8} compiles ({len(cubin):,} bytes) {counts}")


def child(path: str) -> None:
    """Run each pickled launch once; print a digest of its D (args[3]) per launch, as JSON."""
    import cupy

    from tcsim.hw.launch import launch

    with open(path, "rb") as f:
        specs = pickle.load(f)
    for spec in specs:
        args = launch(spec)
        cupy.cuda.runtime.deviceSynchronize()
        print(json.dumps(hashlib.sha256(cupy.asnumpy(args[3]).tobytes()).hexdigest()), flush=True)


def preflight(items, seconds: int = 60) -> list[str]:
    """Each variant once, in a child process with a time limit (a hung variant must not take
    the run with it): D's digest against the default's. Returns the problems found."""
    firsts = [item for item in items if item["run"] == 0]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "launches.pkl")
        with open(path, "wb") as f:
            pickle.dump([item["launch"] for item in firsts], f)
        try:
            run = subprocess.run([sys.executable, __file__, "--child", path], capture_output=True,
                                 text=True, timeout=seconds)
        except subprocess.TimeoutExpired:
            return [f"the variants did not finish in {seconds} s (a hang?)"]
    digests = [json.loads(line) for line in run.stdout.splitlines() if line.startswith('"')]
    if run.returncode or len(digests) != len(firsts):
        return [f"preflight failed ({run.returncode}): {run.stderr[-2000:]}"]
    problems, default = [], {}
    for item, digest in zip(firsts, digests):
        default.setdefault(item["case"], digest)
        if digest != default[item["case"]]:
            problems.append(f"{item['case']} {item['variant']}: D differs from the default's")
    return problems


def sass_metrics() -> tuple[str, ...]:
    """ncu's SASS-derived shared-memory wavefront and conflict counters that this ncu has
    (an unknown name would fail the whole profile)."""
    from tcsim.hw.ncu import find_ncu

    try:
        text = subprocess.run([find_ncu(), "--query-metrics", "--chip", "gh100"],
                              capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    names = re.findall(r"\b(smsp__sass_l1tex_data_(?:pipe_lsu_wavefronts|bank_conflicts_pipe_lsu)"
                       r"_mem_shared\w*)", text)
    return tuple(sorted({n + ".sum" for n in names if "gmma" not in n and "ldgsts" not in n}))


def compare(items, counters) -> list[dict]:
    """Each launch's ncu counters beside its trace's, and the differences that matter."""
    traces, rows = {}, []
    for item, measured in zip(items, counters):
        key = item["case"]
        if key not in traces:
            M, N, K = item["shape"]
            traces[key] = tcsim.trace(item["kernel"], M, N, K, accumulate="f32",
                                      beta=item["beta"]).totals
        trace = traces[key]
        row = {k: v for k, v in item.items() if k != "launch"}
        row["trace"] = {m: trace.get(m, 0) for m in METRICS if m in trace or "shared_op" in m}
        row["ncu"] = measured
        for op in OPS:
            w, c = measured[WAVEFRONTS.format(op)], measured[CONFLICTS.format(op)]
            t = trace.get(WAVEFRONTS.format(op), 0)
            row[op] = {"trace": t, "wavefronts": w, "conflicts": c, "excess": w - t,
                       "excess_less_conflicts": w - c - t}
        rows.append(row)
    return rows


def verdict(rows) -> list[str]:
    """What the launches say, case by case."""
    lines = []
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == case]
        by = {v: [r for r in mine if r["variant"] == v] for v in VARIANTS}
        exact = {v: all(r[op]["excess"] == 0 and r[op]["conflicts"] == 0 for r in rs for op in OPS)
                 for v, rs in by.items() if rs}
        spread = {op: sorted({r[op]["wavefronts"] for r in by["default"]}) for op in OPS}
        varies = any(len(s) > 1 for s in spread.values())
        over = any(r[op]["excess"] > 0 for r in by["default"] for op in OPS)
        if "quiet" not in exact:
            lines.append(f"{case}: no quiet launch ran (see the preflight)")
        elif exact["quiet"] and over:
            lines.append(f"{case}: quiet launches equal the trace exactly (no conflict); default "
                         f"launches exceed it{' by varying amounts' if varies else ''}: "
                         "CONTENTION (the addresses need what the trace counts)")
        elif exact["quiet"]:
            lines.append(f"{case}: every variant equals the trace: nothing to explain today")
        else:
            lines.append(f"{case}: quiet launches still differ from the trace: NOT (only) "
                         "contention; look at the SASS counters and the instruction counts")
        for v in ("drained", "turns", "own"):
            if v in exact:
                excess = [(r[op]["excess"], r[op]["conflicts"]) for r in by[v] for op in OPS]
                lines.append(f"  {v:8} exact: {exact[v]!s:5}  (excess, conflicts) ld/st per "
                             f"launch: {excess}")
    return lines


def summary(rows) -> str:
    out = [f"{'case':28} {'variant':8} {'op':3} {'trace':>7} {'ncu':>7} {'confl':>6} "
           f"{'excess':>7} {'-confl':>6} {'us':>7}"]
    for r in rows:
        for op in OPS:
            d = r[op]
            out.append(f"{r['case']:28} {r['variant']:8} {op:3} {d['trace']:>7,} "
                       f"{d['wavefronts']:>7,.0f} {d['conflicts']:>6,.0f} {d['excess']:>7,.0f} "
                       f"{d['excess_less_conflicts']:>6,.0f} "
                       f"{r['ncu'].get('gpu__time_duration.sum', float('nan')) / 1e3:>7.1f}")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."),
                                                  "study_epilogue_contention.json"))
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=35)
    p.add_argument("--kernels", nargs="*", help="only these cases' kernels (default: both)")
    a = p.parse_args()
    if a.child:
        return child(a.child)
    items = launches(np.random.default_rng(a.seed), a.kernels)
    if a.compile_only:
        return compile_only(items)
    from tcsim.hw.ncu import profile

    start = time.time()
    problems = preflight(items)
    for problem in problems:
        print("PREFLIGHT:", problem)
    if any("did not finish" in p or "failed" in p for p in problems):
        items = [i for i in items if i["level"] == 0]  # the defaults still tell the spread
    counters = profile([i["launch"] for i in items], METRICS)
    rows = compare(items, counters)
    lines = verdict(rows)
    # The addresses' own count (SASS-derived counters), apart: an ncu that cannot instrument
    # these kernels must not cost the run above.
    sass, sass_rows = sass_metrics(), []
    firsts = [i for i in items if i["run"] == 0 and i["variant"] in ("default", "quiet")]
    if sass:
        try:
            for item, measured in zip(firsts, profile([i["launch"] for i in firsts], sass)):
                sass_rows.append({"case": item["case"], "variant": item["variant"],
                                  "ncu": measured})
        except RuntimeError as exc:
            sass_rows = [{"error": str(exc)[-2000:]}]
    record = {"study": "epilogue_contention", "device": runtime.device_name(),
              "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                                       capture_output=True, text=True).stdout.strip(),
              "variants": {v: {"EXPLORE_QUIET_EPILOGUE": lv, "launches": n}
                           for v, (lv, n) in VARIANTS.items()},
              "preflight": problems, "verdict": lines, "seconds": round(time.time() - start, 1),
              "launches": rows, "sass_metrics": list(sass), "sass": sass_rows}
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(record, indent=1))
    print(summary(rows))
    for r in sass_rows:
        print("SASS", r.get("case", ""), r.get("variant", ""),
              {k.replace("smsp__sass_l1tex_data_", ""): v for k, v in r.get("ncu", {}).items()}
              if "ncu" in r else r["error"][-600:])
    print(*lines, sep="\n")
    print(f"wrote {a.json} ({record['seconds']} s)")


if __name__ == "__main__":
    main()
