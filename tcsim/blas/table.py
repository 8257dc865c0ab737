"""The measured plan table, and the rule for shapes it does not hold.

`plans_h100.json.gz` (beside this module) holds, for each call of a sweep on an H100
(scripts/blas_sweep.py), the kernels cuBLAS ran and the plan identified from their output bits
(scripts/blas_identify.py), with the versions of torch, CUDA and cuBLAS measured. A call is
classed by what makes cuBLAS choose differently (the operation and its epilogue, the dtypes,
the layouts of A and B, whether every leading dimension is a multiple of 16 bytes, torch's
flags) and located by its shape and batch.

The rule: a call whose class and shape the table holds takes that plan ("measured"); any
other takes the plan of the measured call of its class nearest in shape, by the sum of
|log2| ratios of M, N, K and the batch ("nearest"; one-row and one-column calls: see
`nearest`). cuBLAS's own heuristics are not public,
so the nearest plan can be wrong, most often in its split count; docs/blas.md gives the rate
at which it is right on shapes kept out of the table.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .plan import Plan, PlanError

GPUS = {"H100": "plans_h100.json.gz"}


class UnsupportedCallError(ValueError):
    """A call tcsim.blas cannot answer for: no measured plan of its class on this GPU, or a
    kernel family tcsim has no model of."""


@dataclass(frozen=True)
class CallKey:
    """A call as cuBLAS's choice sees it."""

    cls: tuple  # (op, input types, output type, layout, aligned, extras)
    M: int
    N: int
    K: int
    batch: int = 1

    def distance(self, other: CallKey) -> float:
        return sum(abs(math.log2(max(a, 1) / max(b, 1))) for a, b in
                   ((self.M, other.M), (self.N, other.N), (self.K, other.K),
                    (self.batch, other.batch)))


@dataclass(frozen=True)
class Entry:
    key: CallKey
    plan: Plan | None  # None: the kernel has no model in tcsim
    kernels: tuple[str, ...]
    why: str = ""


@dataclass(frozen=True)
class Table:
    gpu: str
    versions: dict
    entries: tuple[Entry, ...]

    def choose(self, key: CallKey) -> tuple[Plan, str]:
        """The plan for a call and how it was chosen ("measured" or "nearest ...").

        When the table holds no call of the class, an fp8 call takes its nearest among those
        that differ only in output type (the output type changes the epilogue's last
        rounding, not the accumulation)."""
        same = [e for e in self.entries if e.key.cls == key.cls]
        if not same and key.cls[0] == "scaled_mm":
            relaxed = key.cls[:2] + key.cls[3:]
            same = [e for e in self.entries if e.key.cls[:2] + e.key.cls[3:] == relaxed]
        if not same:
            raise UnsupportedCallError(
                f"the {self.gpu} plan table has no measured call like this one "
                f"({describe_class(key.cls)}); tcsim.blas answers only for kinds of call it "
                f"has measured")
        best = nearest(same, key)
        if best.plan is None:
            raise UnsupportedCallError(
                f"cuBLAS runs {best.kernels[0][:80]} for the nearest measured call "
                f"({best.key.M}x{best.key.N}x{best.key.K}), a kernel family tcsim has no model "
                f"of ({best.why})")
        if best.key == key:
            return best.plan, "measured"
        if best.key.cls != key.cls:
            return best.plan, (f"nearest measured call {best.key.M}x{best.key.N}x{best.key.K} "
                               f"with output {best.key.cls[2]}")
        return best.plan, (f"nearest measured call {best.key.M}x{best.key.N}x{best.key.K}"
                           + (f" batch {best.key.batch}" if best.key.batch > 1 else ""))

    def describe_versions(self) -> str:
        v = self.versions
        return (f"{v.get('gpu', self.gpu)}, torch {v.get('torch')}, CUDA {v.get('cuda')}, "
                f"cuBLAS {v.get('cublas')}")


# How much farther a neighbour with a modelled kernel may lie than the nearest, whose kernel
# tcsim has no model of, and still be taken for a one-row or one-column call; and how much
# farther a neighbour counts whose matrix operand is aligned otherwise (left-out-one over the
# table and the H100's run 3: docs/blas.md, "How plans are chosen").
MODELLED_SLACK = 2.0
ALIGNMENT_STEP = 1.0


def nearest(entries: list[Entry], key: CallKey) -> Entry:
    """The rule's neighbour of ``key`` among measured calls of its class: the nearest by
    `CallKey.distance` (ties to the smallest M, N, K).

    A one-row or one-column call (a gemv, for cuBLAS) looks first among calls with the same
    dimensions of 1 (a matrix times one column and a matrix times eight columns run
    different kernels); a neighbour whose matrix operand's rows are 16-byte aligned where
    this call's are not (or the reverse) counts `ALIGNMENT_STEP` farther (nvjet runs such
    calls only on aligned rows); and where the nearest ran a kernel tcsim has no model of
    (dot_kernel, gemv2T) but one that tcsim models lies within `MODELLED_SLACK` of it, that
    one is taken: cuBLAS switches among its gemv kernels with the shape in ways the table
    cannot place closely, and a modelled guess is right more often than a refusal. (Not for
    the measured call itself: its kernel is known, and refused.)"""
    if 1 not in (key.M, key.N):
        return min(entries, key=lambda e: (key.distance(e.key), e.key.M, e.key.N, e.key.K))
    entries = gemv_pool(entries, key)

    def order(e: Entry):
        return rule_distance(key, e.key), e.key.M, e.key.N, e.key.K

    best = min(entries, key=order)
    if best.plan is None and best.key != key:  # a measured call of no model is refused
        reach = order(best)[0] + MODELLED_SLACK
        modelled = [e for e in entries if e.plan is not None and order(e)[0] <= reach]
        best = min(modelled, key=order, default=best)
    return best


def gemv_pool(entries: list[Entry], key: CallKey) -> list[Entry]:
    """The measured calls a one-row or one-column call looks among first: those with the same
    dimensions of 1 (all of ``entries`` for other calls, or when there are none)."""
    if 1 not in (key.M, key.N):
        return entries
    ones = (key.M == 1, key.N == 1, key.K == 1)
    return [e for e in entries if (e.key.M == 1, e.key.N == 1, e.key.K == 1) == ones
            ] or entries


def rule_distance(key: CallKey, other: CallKey) -> float:
    """How far the rule sees a measured call from ``key``: `CallKey.distance`, and for a
    one-row or one-column call `ALIGNMENT_STEP` more when their matrix operands' alignment
    differs."""
    d = key.distance(other)
    if 1 in (key.M, key.N) and matrix_aligned(other) != matrix_aligned(key):
        d += ALIGNMENT_STEP
    return d


def matrix_aligned(key: CallKey) -> bool:
    """For a one-row or one-column call: whether the rows of its matrix operand (B for one
    row, A for one column) start 16 bytes apart or a multiple of it. Measured: float16 and
    bfloat16 such calls ran nvjet kernels only where they did (12 of 12 nvjet calls of the
    table; a matrix times one column with K = 88 ran nvjet on the H100, with K = 89 or 90
    gemvx)."""
    layout, itemsize = key.cls[3], 4 if key.cls[1] in ("float32", "tf32") else 2
    if key.N == 1 and key.M > 1:
        ld = key.M if layout[0] == "T" else key.K
    elif key.M == 1 and key.N > 1:
        ld = key.K if layout[1] == "T" else key.N
    else:
        return True
    return ld * itemsize % 16 == 0


def describe_class(cls: tuple) -> str:
    op, types, out, layout, aligned, extras = cls
    words = [op, types, f"-> {out}", f"layout {layout}",
             "aligned" if aligned else "leading dimensions not multiples of 16 bytes"]
    return ", ".join(words + [e for e in extras if e])


def key_of_sweep_call(call: dict) -> CallKey:
    """The class and shape of a call recorded by scripts/blas_sweep.py."""
    op = call["op"]
    M, N, K = call["M"], call["N"], call["K"]
    if op == "scaled_mm":
        out = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}.get(call["out"], call["out"])
        extras = ("fast" if call["fast"] else "promoted", f"scales {call['scales']}",
                  "bias" if call.get("bias") else "")
        return CallKey(("scaled_mm", f"{call['a']}.{call['b']}", out, "TN", True, extras),
                       M, N, K)
    if op == "int_mm":
        return CallKey(("int_mm", "int8", "int32", "NN", True, ()), M, N, K)
    dtype = call["dtype"]
    if dtype == "float32":
        types = "tf32" if call.get("tf32") else "float32"
    else:
        types = dtype
    layout = torch_layout("NT" if op == "linear" else call.get("layout", "NN"), M, N, K)
    itemsize = 4 if dtype == "float32" else 2
    aligned = is_aligned(layout, M, N, K, itemsize)
    reduced = "" if call.get("reduced", True) else "no reduced-precision reduction"
    if op in ("matmul", "bmm"):
        extras = ("", reduced)
        return CallKey(("matmul", types, dtype, layout, aligned, extras), M, N, K,
                       call.get("batch", 1))
    if op == "addmm":
        kind = "beta 1" if call["beta"] == 1 and call["alpha"] == 1 else "alpha beta"
        return CallKey(("addmm", types, dtype, layout, aligned, (kind, reduced)), M, N, K)
    if op == "addmm_bias":
        return CallKey(("addmm", types, dtype, layout, aligned, ("bias", reduced)), M, N, K)
    if op == "linear":
        kind = "bias" if call.get("bias") else "no bias"
        return CallKey(("linear", types, dtype, layout, aligned, (kind, reduced)), M, N, K)
    raise ValueError(f"unknown op {op!r}")


def torch_layout(layout: str, M: int, N: int, K: int) -> str:
    """The layout cuBLAS is handed: torch passes a dense matrix that has a dimension of 1 as
    row-major ("N") whatever its strides (such a tensor is contiguous, and torch's
    prepare_matrix_for_cublas asks only that), so A (M x K) reads "N" when M or K is 1 and
    B (K x N) when K or N is 1. Measured: B of one column given transposed ("NT") ran the
    gemvx kernels of plain "NN" calls (6 of 6 sweep calls), and a table miss on the H100
    (matmul float16 748 x 1 x 90, run 3 of the hw test) came from keying it "NT"."""
    a = "N" if 1 in (M, K) else layout[0]
    b = "N" if 1 in (K, N) else layout[1]
    return a + b


def is_aligned(layout: str, M: int, N: int, K: int, itemsize: int) -> bool:
    """Whether every leading dimension (A's, B's, D's) is a multiple of 16 bytes."""
    lda = M if layout[0] == "T" else K
    ldb = K if layout[1] == "T" else N
    return all(ld * itemsize % 16 == 0 for ld in (lda, ldb, N))


def table(gpu: str = "H100") -> Table:
    """The plan table measured on ``gpu``."""
    if not isinstance(gpu, str) or gpu not in GPUS:
        raise UnsupportedCallError(
            f"tcsim.blas has plans measured on {', '.join(GPUS)}, not {gpu!r}")
    return _load(gpu)


@cache
def _load(gpu: str) -> Table:
    data = json.loads(gzip.decompress(resources.files("tcsim.blas").joinpath(GPUS[gpu])
                                      .read_bytes()))
    entries = []
    # Calls measured on cancelling inputs (scripts/blas_sweep.py --set orders) tell orders
    # apart that random samples cannot: where both measured a shape, theirs comes first.
    for e in sorted(data["entries"], key=lambda e: not e["call"].get("cancel")):
        try:
            plan = Plan(**e["plan"]) if "plan" in e else None
        except (TypeError, PlanError) as err:  # a table written by another version
            raise UnsupportedCallError(f"plan table entry {e['call']}: {err}") from None
        entries.append(Entry(key_of_sweep_call(e["call"]), plan, tuple(e["kernels"]),
                             e.get("unexplained", "")))
    return Table(gpu, data["versions"], tuple(entries))
