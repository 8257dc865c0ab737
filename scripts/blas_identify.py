"""Identify cuBLAS's plan for every call of a sweep (scripts/blas_sweep.py) from its samples.

    python scripts/blas_identify.py SWEEP_DIR [SWEEP_DIR ...]
        [--write plans.json] [--only INDEX,...] [--keep plans.json] [--add-to plans.json.gz]

(gzip -9 plans.json into tcsim/blas/plans_h100.json.gz for the package.)

For each record: the candidate plans its kernel names allow, run on the sampled rows and
columns; prints the plans that give the GPU's bits exactly, and with --write stores the
table (one entry per call, with the identified plan and the versions measured with). With
--keep, calls that table (json, or json.gz) explains keep their plan; only the others are
identified again. With --add-to, the table written is that table's entries (those of the
same call keys replaced: the new measurement wins) followed by these sweeps' (how --set open
probes joined the table).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from tcsim.blas.identify import candidates, mismatches, search
from tcsim.blas.kernels import split_hint
from tcsim.blas.sweep import epilogue_kind, getter, input_type, load, operands
from tcsim.blas.table import key_of_sweep_call


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("sweep", nargs="+")
    p.add_argument("--write")
    p.add_argument("--only", default="")
    p.add_argument("--keep")
    p.add_argument("--add-to")
    args = p.parse_args()
    kept = {}
    if args.keep:
        kept = {json.dumps(e["call"], sort_keys=True): e for e in read_table(args.keep)["entries"]
                if "plan" in e}
    only = {int(x) for x in args.only.split(",") if x}
    table, explained, total, versions = [], 0, 0, None
    for sweep in args.sweep:
        meta, parts = load(Path(sweep))
        if versions not in (None, meta["versions"]):
            sys.exit(f"{sweep} was measured with {meta['versions']}, not {versions}")
        versions = meta["versions"]
        explained_here, total_here = identify_sweep(meta, parts, only, table, kept)
        explained, total = explained + explained_here, total + total_here
    print(f"explained {explained} of {total}", file=sys.stderr)
    if args.add_to:
        old = read_table(args.add_to)
        if old["versions"] != versions:
            sys.exit(f"{args.add_to} was measured with {old['versions']}, not {versions}")
        new = {key_of_sweep_call(e["call"]) for e in table}
        table = [e for e in old["entries"] if key_of_sweep_call(e["call"]) not in new] + table
    if args.write:
        with open(args.write, "w") as f:  # one entry a line: diffs stay readable
            f.write('{"versions": ' + json.dumps(versions) + ',\n "entries": [\n')
            f.write(",\n".join(json.dumps(e) for e in table))
            f.write("\n]}\n")


def read_table(path: str) -> dict:
    """A plan table (json, or json.gz as the package keeps it)."""
    raw = open(path, "rb").read()
    return json.loads(gzip.decompress(raw) if path.endswith(".gz") else raw)


def identify_sweep(meta, parts, only, table, kept=None) -> tuple[int, int]:
    explained = total = 0
    for rec in meta["records"]:
        if "error" in rec or (only and rec["index"] not in only):
            continue
        total += 1
        call = rec["call"]
        if kept and json.dumps(call, sort_keys=True) in kept:
            table.append(kept[json.dumps(call, sort_keys=True)])
            explained += 1
            continue
        names = [k["name"] for k in rec["kernels"]]
        ops, D = operands(call, getter(parts[rec["part"]], f"r{rec['index']}_"))
        launch = [k for k in rec["kernels"] if "at::native::" not in k["name"]]
        gemm = (launch or rec["kernels"])[0]
        plans = candidates(names, input_type(call), epilogue_kind(call), ops.A.shape[-1],
                           split_hint(launch or rec["kernels"], call.get("batch", 1)),
                           tuple(gemm["block"]) if gemm.get("block") else None)
        found = search(plans, ops, D, first=True) if plans else []
        entry = dict(call=call, kernels=names, grids=[k["grid"] for k in rec["kernels"]])
        if found:
            explained += 1
            entry["plan"] = found[0].to_dict()
            print(rec["index"], call, "->", f"S={found[0].splits}", found[0].order,
                  found[0].k_tile, found[0].epilogue, flush=True)
        else:
            best = min(((mismatches(pl, ops, D), i) for i, pl in enumerate(plans[:40])),
                       default=(None, None))
            entry["unexplained"] = (f"{len(plans)} candidates, best wrong in {best[0]} of "
                                    f"{D.size}" if plans else "no model of this kernel")
            print(rec["index"], call, "UNEXPLAINED", entry["unexplained"], names[0][:80],
                  flush=True)
        table.append(entry)
    return explained, total


if __name__ == "__main__":
    main()
