"""Identify cuBLAS's plan for every call of a sweep (scripts/blas_sweep.py) from its samples.

    python scripts/blas_identify.py SWEEP_DIR [SWEEP_DIR ...]
        [--write tcsim/blas/data/plans_h100.json] [--only INDEX,...]

For each record: the candidate plans its kernel names allow, run on the sampled rows and
columns; prints the plans that give the GPU's bits exactly, and with --write stores the
table (one entry per call, with the identified plan and the versions measured with).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

from tcsim.blas.evaluate import Operands
from tcsim.blas.identify import candidates, mismatches, search
from tcsim.blas.kernels import split_hint

DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
          "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
          "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
          "int32": np.int32}


def load(sweep: Path):
    meta = json.load(open(sweep / "blas_sweep.json"))
    parts = {}
    for rec in meta["records"]:
        if "error" in rec:
            continue
        p = rec["part"]
        if p not in parts:
            parts[p] = np.load(sweep / f"blas_sweep_{p}.npz")
    return meta, parts


def input_type(call: dict) -> str:
    if call["op"] == "scaled_mm":
        return f"{call['a']}.{call['b']}"
    if call["op"] == "int_mm":
        return "s8"
    if call["dtype"] == "float32":
        return "tf32" if call.get("tf32") else "f32"
    return {"float16": "f16", "bfloat16": "bf16"}[call["dtype"]]


def epilogue_kind(call: dict) -> str:
    op = call["op"]
    if op == "addmm":
        return "alpha_beta"
    if op == "addmm_bias" or (op == "linear" and call.get("bias")):
        return "add"
    if op == "scaled_mm":
        return "scale"
    return "round"


def as_type(x: np.ndarray, name: str) -> np.ndarray:
    dt = np.dtype(DTYPES[name])
    return np.ascontiguousarray(x).view(dt) if x.dtype.itemsize == dt.itemsize else x.astype(dt)


def operands(rec: dict, arrays) -> tuple[Operands, np.ndarray]:
    call, key = rec["call"], f"r{rec['index']}"
    get = lambda name: arrays[f"{key}_{name}"] if f"{key}_{name}" in arrays else None  # noqa: E731
    out = rec["out_dtype"].replace("torch.", "")
    op = call["op"]
    if op == "scaled_mm":
        A, B = as_type(get("A"), call["a"]), as_type(get("B"), call["b"])
        bias = get("bias")
        sa, sb = get("scale_a").astype(np.float32), get("scale_b").astype(np.float32)
        ops = Operands(A.view(np.uint8), B.view(np.uint8), out,
                       scale_a=sa, scale_b=sb,
                       bias=None if bias is None else as_type(bias, "bfloat16").astype(np.float32))
        return ops, as_type(get("D"), out)
    if op == "int_mm":
        return Operands(get("A"), get("B"), "int32"), get("D")
    dt = call["dtype"]
    A, B = as_type(get("A"), dt), as_type(get("B"), dt)
    uint = np.dtype(f"u{A.dtype.itemsize}")
    c = get("C") if op in ("addmm", "addmm_bias") else get("bias")
    c = None if c is None else as_type(c, dt).astype(np.float32)
    ops = Operands(A.view(uint), B.view(uint), out, c=c, alpha=call.get("alpha", 1.0),
                   beta=call.get("beta", 1.0))
    return ops, as_type(get("D"), out)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("sweep", nargs="+")
    p.add_argument("--write")
    p.add_argument("--only", default="")
    args = p.parse_args()
    only = {int(x) for x in args.only.split(",") if x}
    table, explained, total, versions = [], 0, 0, None
    for sweep in args.sweep:
        meta, parts = load(Path(sweep))
        if versions not in (None, meta["versions"]):
            sys.exit(f"{sweep} was measured with {meta['versions']}, not {versions}")
        versions = meta["versions"]
        explained_here, total_here = identify_sweep(meta, parts, only, table)
        explained, total = explained + explained_here, total + total_here
    print(f"explained {explained} of {total}", file=sys.stderr)
    if args.write:
        with open(args.write, "w") as f:  # one entry a line: diffs stay readable
            f.write('{"versions": ' + json.dumps(versions) + ',\n "entries": [\n')
            f.write(",\n".join(json.dumps(e) for e in table))
            f.write("\n]}\n")


def identify_sweep(meta, parts, only, table) -> tuple[int, int]:
    explained = total = 0
    for rec in meta["records"]:
        if "error" in rec or (only and rec["index"] not in only):
            continue
        total += 1
        call = rec["call"]
        names = [k["name"] for k in rec["kernels"]]
        ops, D = operands(rec, parts[rec["part"]])
        hint = split_hint(rec["kernels"])
        if hint and call.get("batch", 1) > 1:  # the grid's z counts the batch first
            hint = hint // call["batch"] if hint % call["batch"] == 0 else None
        plans = candidates(names, input_type(call), epilogue_kind(call), ops.A.shape[-1],
                           hint if hint and hint > 1 else None)
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
