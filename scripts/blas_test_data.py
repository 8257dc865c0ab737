"""Build tests/blas/gpu_outputs.npz: H100 output bits the CPU tests hold tcsim.blas to.

    python scripts/blas_test_data.py OUT.npz --sweep DIR [DIR ...] --dump DIR [DIR ...]
        [--orders DIR --plans PLANS.json] [--pick DIR:INDEX,...] [--append OLD.npz]
    python scripts/blas_test_data.py OUT.npz --probes DIR --plans PLANS.json [--skip NAME,...]

Two kinds of records, each with the call as the GPU ran it (its shape picks the plan):
- from sweeps (scripts/blas_sweep.py): the sampled rows of A, columns of B and output bits, for
  a spread of calls of every kind and kernel family with K up to 512 (small enough to keep);
- from hardware-test dumps (tests/hw/test_blas_hw.py with TCSIM_BLAS_DUMP): rows and columns
  of whole outputs around the elements an earlier model got wrong;
- from order probes (scripts/blas_sweep.py --set orders: inputs whose products cancel in
  pairs, so the output is the rounding residue of the kernel's order of additions): some
  sampled rows and columns of calls with K up to 2200, each with the plan identified for it
  (PLANS.json, scripts/blas_identify.py --write) and the kernels' names and launch block.
- picked records of whole-output sweeps (--pick), their first rows and columns: calls whose
  order a whole output settled (batched sm90_xmma, a bias after bf16 partials).
--append keeps an earlier file's records and adds these.

--probes writes a file of its own (tests/blas/gpu_open_outputs.npz): the whole outputs of a
``--set open`` sweep, whose inputs the CPU rebuilds from each call's seed
(`tcsim.blas.sweep.probe_operands`), with each call's kernels, launch and identified plan
(or why none explains it); --skip leaves out calls of kernels whose name has NAME.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from tcsim.blas.sweep import load
from tcsim.blas.table import UnsupportedCallError, key_of_sweep_call, table


def modelled(call: dict) -> bool:
    """Whether the plan table gives the call a plan (gemv-like kernels have none)."""
    try:
        table("H100").choose(key_of_sweep_call(call))
        return True
    except UnsupportedCallError:
        return False


def sweep_records(folders, per_kind: int, rng):
    out = []
    for folder in folders:
        meta, parts = load(Path(folder))
        by_kind = {}
        for rec in meta["records"]:
            if "error" in rec or rec["call"]["K"] > 512 or not modelled(rec["call"]):
                continue
            call = rec["call"]
            kind = (call["op"], call.get("dtype"), call.get("a"), call.get("scales"),
                    re.sub(r"\d+x\d+.*", "", rec["kernels"][0]["name"])[:48],
                    len(rec["kernels"]) > 1)
            by_kind.setdefault(kind, []).append(rec)
        for recs in by_kind.values():
            for i in rng.permutation(len(recs))[:per_kind]:
                rec = recs[i]
                arrays = parts[rec["part"]]
                key = f"r{rec['index']}_"
                out.append((rec["call"], {k[len(key):]: arrays[k] for k in arrays.files
                                          if k.startswith(key)}))
    return out


def dump_records(folders):
    out = []
    for folder in folders:
        log = [json.loads(line) for line in open(Path(folder) / "blas_hw.jsonl")]
        paths = [*Path(folder).glob("wrong_*.npz"), *Path(folder).glob("unexplained_*.npz")]
        for path in sorted(paths):
            z = np.load(path)
            call = json.loads(str(z["call"]))
            rec = next(r for r in log if r.get("call") == call)
            call.pop("cancel", None)  # the hardware test draws random inputs for every call
            wrong = np.array([w["at"][-2:] for w in rec["first_wrong"]])
            D = z["D"]
            M, N = D.shape[-2:]
            rows = np.unique(np.r_[wrong[:, 0], np.linspace(0, M - 1, 4).round()]).astype(int)
            wide = 16 if call["op"] == "scaled_mm" else 6
            cols = np.r_[wrong[:, 1], np.linspace(0, N - 1, wide - len(wrong)).round()]
            cols = cols.astype(int)
            arrays = _restrict(call, [z[f"arg{i}"] if f"arg{i}" in z.files else None
                                      for i in range(4)], D, rows, cols)
            if call.get("held_out") and rec.get("explained_by"):
                # The table's rule missed this shape: keep the plan the GPU's kernels gave.
                call = dict(call, plan=rec["explained_by"][0])
            out.append((call, arrays))
    return out


def order_records(folder, plans_path, samples: int = 8):
    """Explained order-probe calls, ``samples`` rows and columns each (see the module doc)."""
    meta, parts = load(Path(folder))
    plans = {json.dumps(e["call"], sort_keys=True): e for e in
             json.load(open(plans_path))["entries"]}
    out = []
    for rec in meta["records"]:
        entry = plans.get(json.dumps(rec["call"], sort_keys=True))
        if "error" in rec or entry is None or "plan" not in entry or rec["call"]["K"] > 2200:
            continue
        arrays = parts[rec["part"]]
        key = f"r{rec['index']}_"
        got = {k[len(key):]: arrays[k] for k in arrays.files if k.startswith(key)}
        r = slice(0, samples)
        got = dict(A=got["A"][..., r, :], B=got["B"][..., :, r], D=got["D"][..., r, r])
        gemm = next(k for k in rec["kernels"] if "at::native::" not in k["name"])
        call = dict(rec["call"], plan=entry["plan"], kernels=[k["name"] for k in rec["kernels"]],
                    grids=[k["grid"] for k in rec["kernels"]], block=gemm["block"])
        out.append((call, got))
    return out


def picked_records(spec: str, rows: int = 8, cols: int = 16):
    """``DIR:INDEX,...``: those records of a sweep, their first ``rows`` rows of A and
    ``cols`` columns of B (and of D, C and a bias row)."""
    folder, indices = spec.rsplit(":", 1)
    meta, parts = load(Path(folder))
    out = []
    for i in (int(x) for x in indices.split(",")):
        rec = next(r for r in meta["records"] if r["index"] == i)
        arrays = parts[rec["part"]]
        key = f"r{i}_"
        got = {k[len(key):]: arrays[k] for k in arrays.files if k.startswith(key)}
        r, c = slice(0, rows), slice(0, cols)
        kept = dict(A=got["A"][..., r, :], B=got["B"][..., :, c], D=got["D"][..., r, c])
        if "C" in got:
            kept["C"] = got["C"][..., r, c] if got["C"].ndim >= 2 else got["C"][c]
        if "bias" in got:
            kept["bias"] = got["bias"][c]
        out.append((rec["call"], kept))
    return out


def probe_records(folder, plans_path, skip=()):
    """Whole outputs of a --set open sweep with their plans (see the module doc)."""
    meta, parts = load(Path(folder))
    plans = {json.dumps(e["call"], sort_keys=True): e for e in
             json.load(open(plans_path))["entries"]}
    out = []
    for rec in meta["records"]:
        names = [k["name"] for k in rec.get("kernels", [])]
        if "error" in rec or any(word in names[0] for word in skip):
            continue
        entry = plans[json.dumps(rec["call"], sort_keys=True)]
        arrays = parts[rec["part"]]
        key = f"r{rec['index']}_"
        D = arrays[key + "Dfull"] if key + "Dfull" in arrays.files else arrays[key + "D"]
        gemm = next(k for k in rec["kernels"] if "at::native::" not in k["name"])
        call = dict(rec["call"], kernels=names, grids=[k["grid"] for k in rec["kernels"]],
                    block=gemm["block"])
        if "plan" in entry:
            call["plan"] = entry["plan"]
        else:
            call["unexplained"] = entry["unexplained"]
        out.append((call, {"D": D}))
    return out


def _restrict(call, args, D, rows, cols):
    """The sweep's array names for a dumped call restricted to ``rows`` and ``cols``."""
    r, c = rows, cols
    op = call["op"]
    if op == "scaled_mm":
        A, B, sa, sb = args
        return dict(A=A[r], B=B[:, c], D=D[r[:, None], c],
                    scale_a=sa[r] if sa.ndim == 2 else sa,
                    scale_b=sb[:, c] if sb.ndim == 2 else sb)
    if op in ("addmm", "addmm_bias"):
        C, A, B = args[:3]
        return dict(A=A[r], B=B[:, c], D=D[r[:, None], c],
                    C=C[r[:, None], c] if C.ndim == 2 else C[c])
    if op == "linear":
        x, w, bias = args[:3]
        out = dict(A=x[r], B=w[c].T, D=D[r[:, None], c])
        if bias is not None:
            out["bias"] = bias[c]
        return out
    A, B = args[:2]
    return dict(A=A[..., r, :], B=B[..., :, c], D=D[..., r[:, None], c])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--sweep", nargs="*", default=[])
    p.add_argument("--dump", nargs="*", default=[])
    p.add_argument("--per-kind", type=int, default=3)
    p.add_argument("--orders")
    p.add_argument("--plans")
    p.add_argument("--append")
    p.add_argument("--pick", nargs="*", default=[])
    p.add_argument("--probes")
    p.add_argument("--skip", default="")
    args = p.parse_args()
    rng = np.random.default_rng(20261125)
    records = []
    if args.probes:
        records = probe_records(args.probes, args.plans, [w for w in args.skip.split(",") if w])
    elif args.append:
        old = np.load(args.append)
        for i, call in enumerate(json.loads(str(old["calls"]))):
            key = f"r{i}_"
            records.append((call, {k[len(key):]: old[k] for k in old.files
                                   if k.startswith(key)}))
    records += sweep_records(args.sweep, args.per_kind, rng) + dump_records(args.dump)
    if args.orders and not args.probes:
        records += order_records(args.orders, args.plans)
    for spec in args.pick:
        records += picked_records(spec)
    arrays, calls = {}, []
    for i, (call, recs) in enumerate(records):
        calls.append(call)
        for name, value in recs.items():
            arrays[f"r{i}_{name}"] = value
    np.savez_compressed(args.out, calls=json.dumps(calls), **arrays)
    print(len(records), "records")


if __name__ == "__main__":
    main()
