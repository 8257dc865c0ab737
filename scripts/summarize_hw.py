"""Print the table of a `pytest -m hw` run from its TCSIM_HW_LOG (JSON lines)."""

import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1])] if len(sys.argv) > 1 else []
random = [r for r in rows if r.get("test") == "random"]
if random:
    print(f"GPU: {random[0]['gpu']}")
    head = ("qualifier", "instructions", "mismatching", "gpu s", "sim s")
    print(f"{head[0]:38s} {head[1]:>12s} {head[2]:>11s} {head[3]:>7s} {head[4]:>7s}")
    for r in random:
        print(f"{r['qualifier']:38s} {r['instructions']:12,d} {r['mismatching']:11d} "
              f"{r['hw_seconds']:7.2f} {r['sim_seconds']:7.2f}")
    total = sum(r["instructions"] for r in random)
    print(f"total: {total:,} instructions, {sum(r['mismatching'] for r in random)} mismatching")
for r in rows:
    if r.get("test") == "fact":
        print(f"fact {r['fact']:40s} {r['qualifier']:36s} D[0,0] = {r['d_bits']}")

smem = [r for r in rows if r.get("test") == "smem"]
if smem:
    same = caveated = 0
    for r in smem:
        ok = (r["hw_wavefronts"], r["hw_conflicts"]) == (r["sim_wavefronts"], r["sim_conflicts"])
        if r.get("caveat"):
            caveated += 1
        same += ok
        if not ok:
            print(f"smem {'caveated' if r.get('caveat') else 'MISMATCH'} {r['instruction']} "
                  f"[{r['pattern']}]: ncu {r['hw_wavefronts']:g}/{r['hw_conflicts']:g} "
                  f"tcsim {r['sim_wavefronts']}/{r['sim_conflicts']}")
    print(f"shared-memory patterns: {same} of {len(smem)} match Nsight Compute exactly "
          f"({caveated} carry a caveat and are not asserted)")

for r in (r for r in rows if r.get("test") in ("kernel_bits", "seed_bits")):
    M, N, K = r["shape"]
    print(f"bits {r['kernel']} {r.get('accumulate', '')} {M}x{N}x{K}: {r['mismatches']} of "
          f"{r['elements']:,} differ (inf {r['inf']}, NaN {r['nan']})")
for r in (r for r in rows if r.get("test") in ("kernel_counters", "seed_counters")):
    M, N, K = r["shape"]
    # every metric ncu measured: one the trace does not predict is a prediction of 0
    diffs = [f"{k.split('__')[1]}: trace {r['trace'].get(k, 0):,} ncu {v:,.0f}"
             for k, v in r["ncu"].items() if r["trace"].get(k, 0) != v]
    print(f"counters {r['kernel']} {M}x{N}x{K} {r.get('accumulate', '')}: "
          + (f"all {len(r['ncu'])} equal" if not diffs else "; ".join(diffs)))

for r in (r for r in rows if r.get("test") == "checks"):
    tools = ", ".join(f"{t} {v['errors']}" for t, v in r["sanitizer"].items())
    print(f"checks {r['kernel']}: sanitizer [{tools}]; simulator: "
          f"{r['simulator'].split(':')[0] or 'no error'}")

for r in rows:
    if r.get("test") == "wgmma_compile":
        print(f"wgmma: {r['kernels']} probe kernels compiled in {r['seconds']} s on {r['gpu']}")
    elif r.get("test") == "wmma_maps":
        print(f"wmma maps ({r['space']}): {r['cases']} loads and stores, "
              f"{len(r['differ'])} differ")
    elif r.get("test") == "wmma_counters":
        print(f"wmma loads and stores under ncu: {r['cases']} cases x {r['metrics']} metrics, "
              f"{len(r['differ'])} differ" + "".join(f"\n  {d}" for d in r["differ"][:20]))
    elif r.get("test") == "wmma_random":
        print(f"wmma {r['qualifier']:42s} {r['instructions']:9,d} instructions, "
              f"{r['mismatching']} mismatching")
    elif r.get("test") == "wgmma_random":
        print(f"wgmma {r['family']:5s} {r['instructions']:9,d} instructions, "
              f"{r['mismatching']} mismatching, {r.get('qualifiers', '?')} qualifiers in "
              f"{r['kernels']} kernels (wall {r.get('wall_seconds', '?')} s: gpu "
              f"{r['hw_seconds']} s, sim {r['sim_seconds']} s on {r.get('workers', 1)} workers, "
              f"compile {r.get('compile_seconds', '?')} s)")
    elif r.get("test") == "wgmma_fp8_errors":
        print(f"wgmma fp8 elements: {r['mismatching']:,} of {r['elements']:,} differ; "
              f"log2(error / largest term) max {r['log2_error_max']}, "
              f"median {r['log2_error_median']}")
    elif r.get("test") == "wgmma_fact":
        print(f"wgmma fact {r['fact']:44s} {r['d_bits']:>10s} ({r['verdict']})")

blas = [r for r in rows if r.get("test") == "blas"]
if blas:
    ran = [r for r in blas if "torch_refused" not in r]
    for label, held in (("table shapes", False), ("held-out shapes", True)):
        part = [r for r in ran if r["call"]["held_out"] == held]
        exact = [r for r in part if r["wrong"] == 0]
        explained = [r for r in part if r["wrong"] and r.get("explained_by")]
        refused = [r for r in part if r["wrong"] is None]
        print(f"tcsim.blas {label}: {len(exact)} of {len(part)} calls exact "
              f"({sum(r['elements'] for r in exact):,} of {sum(r['elements'] for r in part):,} "
              f"elements); {len(explained)} more explained by identify with the GPU's kernels; "
              f"{len(refused)} refused (no model)")
    said_no = [r for r in blas if "torch_refused" in r]
    print(f"tcsim.blas calls torch refused: {len(said_no)}, refused by tcsim too: "
          f"{sum(r['tcsim_refused'] is not None for r in said_no)}")
