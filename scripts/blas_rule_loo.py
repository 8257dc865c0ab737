"""How often the plan table's rule for unmeasured shapes is right: leave each measured call
out of the table in turn, predict its plan from the rest, and compare with its own.

    PYTHONPATH=. python scripts/blas_rule_loo.py [--twins] [--misses N] [--refuse-within D]

A prediction is right when the plan computes as the call's own does (every field but the
kernel's name and the source), or
when the call's kernel has no model in tcsim and the rule refuses it too. Calls that share a
key (an order probe and a sweep call of one shape) are left out together. Prints the rate
over all calls and for the gemv class (M or N of 1), and how the misses differ from the
call's own plan: another kernel of the same family, another family, the same kernel with
another split count, or other fields.

--refuse-within D tries a stricter rule: refuse (count as "refused") a call whose nearest
neighbour has a measured call of another kernel family within D of the nearest's distance
(docs/blas.md, "Left out one", gives what it buys).
"""

from __future__ import annotations

import argparse
import collections
import json
import re

from tcsim.blas.plan import Plan
from tcsim.blas.table import (
    Table,
    UnsupportedCallError,
    gemv_pool,
    key_of_sweep_call,
    nearest,
    rule_distance,
    table,
)

FAMILIES = ("cutlass_75_wmma", "cutlass_75_tensorop", "cutlass_80_tensorop", "cutlass_80_simt",
            "sm80_xmma", "sm90_xmma", "nvjet", "gemvx", "gemvNSP", "gemv2N", "gemv2T",
            "dot_kernel", "gemmSN")


def family(kernel: str) -> str:
    return next((f for f in FAMILIES if f in kernel), re.sub(r"\W.*", "", kernel)[:24])



def near_a_family_boundary(t: Table, key, within: float) -> bool:
    """Whether a measured call of another kernel family than the rule's neighbour lies within
    ``within`` of the neighbour's distance from ``key``."""
    pool = gemv_pool([e for e in t.entries if e.key.cls == key.cls], key)
    if not pool:
        return False
    best = nearest(pool, key)
    reach = rule_distance(key, best.key) + within
    return any(family(e.kernels[-1] if "at::native::" in e.kernels[0] else e.kernels[0])
               != family(best.kernels[-1] if "at::native::" in best.kernels[0]
                         else best.kernels[0])
               and rule_distance(key, e.key) <= reach for e in pool)


def shape(key) -> tuple:
    """A call's op, layout and shape, whatever its dtypes."""
    return key.cls[0], key.cls[3], key.M, key.N, key.K, key.batch


def same_arithmetic(a: Plan, b: Plan) -> bool:
    """Whether two plans compute the same bits: every field but the kernel's name (nvjet's
    tile shapes differ in name, not in arithmetic) and the source."""
    return a.with_(source="", kernel="") == b.with_(source="", kernel="")


def replay(t: Table, log: str) -> None:
    """For each held-out call of a hardware log: whether the rule's plan (now) names a
    kernel of the family the GPU ran."""
    counts = collections.Counter()
    for line in open(log):
        rec = json.loads(line)
        if rec.get("test") != "blas" or not rec.get("kernels") or not rec["call"].get(
                "held_out"):
            continue
        call = {k: v for k, v in rec["call"].items() if k != "held_out"}
        try:
            got = family(t.choose(key_of_sweep_call(call))[0].kernel)
        except UnsupportedCallError:
            got = "refused"
        gpu = family(next(k for k in rec["kernels"] if "at::native::" not in k)
                     if any("at::native::" not in k for k in rec["kernels"]) else rec["kernels"][0])
        group = "gemv" if 1 in (call["M"], call["N"]) else "other"
        counts[group, got == gpu] += 1
        if got != gpu and group == "gemv":
            print("HW", call, "gpu", gpu, "rule", got)
    for group in ("gemv", "other"):
        print(f"{log}: {group} held-out calls whose rule plan has the GPU's kernel family: "
              f"{counts[group, True]} of {counts[group, True] + counts[group, False]}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--twins", action="store_true",
                   help="leave out with each call the calls of its shape in other dtypes")
    p.add_argument("--hw", nargs="*", default=[],
                   help="hardware-test logs (tests/hw/test_blas_hw.py): also count their "
                        "held-out calls whose rule plan has the GPU's kernel family")
    p.add_argument("--misses", type=int, default=0, help="print this many misses")
    p.add_argument("--refuse-within", type=float, default=None,
                   help="refuse calls whose neighbour has another kernel family this near")
    args = p.parse_args()
    t = table()
    first = {}
    for e in t.entries:
        first.setdefault(e.key, e)
    by_class = collections.defaultdict(list)
    for e in t.entries:
        by_class[e.key.cls].append(e)
    counts = collections.Counter()
    shown = 0
    for key, own in first.items():
        gemv = 1 in (key.M, key.N)
        rest = Table(t.gpu, t.versions, tuple(
            e for e in t.entries
            if not (shape(e.key) == shape(key) if args.twins else e.key == key)))
        if len(by_class[key.cls]) == sum(e.key == key for e in by_class[key.cls]):
            continue  # the only call of its class: nothing to predict from
        try:
            got = rest.choose(key)[0]
        except UnsupportedCallError:
            got = None
        if args.refuse_within is not None and near_a_family_boundary(rest, key,
                                                                     args.refuse_within):
            got = None
        if own.plan is None:
            cause = "right" if got is None else "answered a call tcsim has no model of"
        elif got is None:
            cause = "refused"
        elif same_arithmetic(got, own.plan):
            cause = "right"
        elif family(got.kernel) != family(own.plan.kernel):
            cause = "other kernel family"
        elif got.kernel != own.plan.kernel and (got.k_tile, got.order, got.instruction) != (
                own.plan.k_tile, own.plan.order, own.plan.instruction):
            cause = "other kernel of the family (k-tile, order or instruction)"
        elif got.splits != own.plan.splits or got.lanes != own.plan.lanes:
            cause = "same arithmetic, other split count or lanes"
        else:
            cause = "same arithmetic, other fields"
        counts["all", cause] += 1
        if gemv:
            counts["gemv", cause] += 1
        if cause != "right" and shown < args.misses:
            shown += 1
            print("MISS", cause, key.cls[:4], key.M, key.N, key.K, key.batch,
                  own.kernels[0][:60], "->", got.kernel[:60] if got else None)
    for log in args.hw:
        replay(t, log)
    for group in ("all", "gemv"):
        total = sum(v for (g, _), v in counts.items() if g == group)
        right = counts[group, "right"]
        print(f"{group}: {right} of {total} right ({right / total:.1%})")
        for (g, cause), v in counts.most_common():
            if g == group and cause != "right":
                print(f"  {v:5d} {cause}")


if __name__ == "__main__":
    main()
