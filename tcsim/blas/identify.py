"""Which plan explains a GPU's output: the search behind the measured plan table.

A kernel's name fixes most of its plan (`tcsim.blas.kernels`); the split count, and for some
kernels the k-tile, the order of the partial k-tile and the epilogue's order, are found by
running every candidate on the inputs and keeping those whose bits equal the GPU's.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from .evaluate import Operands, bit_patterns, evaluate
from .kernels import KernelFacts, read, split_hint
from .plan import Plan
from .sweep import DTYPES
from .table import UnsupportedCallError

MAX_SPLITS = 16
EPILOGUE_CHOICES = {
    "round": ("round",),
    # A bias on CUTLASS 2.x split-K kernels with bf16 partials: the reduced sum is rounded
    # first, then the bias added (measured: bf16 linear 120 x 312 x 471, S = 7, a whole
    # output of 37,440 elements).
    "add": ("add", "round_add"),
    # The likeliest first: samples seldom tell the orders apart (whole outputs did, on the H100:
    # alpha_fma for nvjet's general alpha/beta, scale_b_first for row-wise fp8 scales; CUTLASS's
    # order is set in `candidates`).
    "alpha_beta": ("alpha_fma", "round_add", "alpha_beta", "c_first"),
    "scale": ("scale", "scale_b_first", "scale_each"),
}


def candidates(kernel_names: list[str], input_type: str, epilogue: str, K: int,
               split_hint: int | None = None,
               block: tuple[int, ...] | None = None) -> list[Plan]:
    """Every plan the kernels' names allow, the likeliest first: the split count the launch
    suggests (or none, when nothing suggests a split), then every other count up to
    `MAX_SPLITS` (a grid does not always show the split). ``block``: the GEMM kernel's
    launch block, when known (it fixes the lanes of gemv kernels)."""
    facts = read(kernel_names, input_type, block)
    if facts is None:
        return []
    split_counts = sorted(set(range(1, MAX_SPLITS + 1)) | {split_hint or 1})
    if facts.lanes != KernelFacts.lanes and not (facts.split_k or split_hint):
        split_counts = [1]  # gemv kernels: a split shows as a reduction kernel or grid z
    epilogues = EPILOGUE_CHOICES[epilogue]
    if epilogue == "scale" and "ovscale" in kernel_names[0]:
        epilogues = ("scale_b_first",)  # row-wise ("outer vector") scales
    if epilogue == "alpha_beta" and "cutlass" in kernel_names[0]:
        # CUTLASS 2.x's epilogue: alpha * acc + beta * C as two products and a sum (measured:
        # a whole output on the H100 that fma(alpha, ...) got wrong in 16 elements).
        epilogues = ("alpha_beta",) + tuple(e for e in epilogues if e != "alpha_beta")
    if facts.interleaved and split_hint:
        # The split is k-tiles dealt out to split_hint slices: lanes of one range.
        split_counts = [1]
        facts = replace(facts, lanes=((split_hint, facts.k_tiles[0], "in_order"),))
    plans = []
    for k_tile, order, splits, reduction, align, ep, (lanes, width, joined) in itertools.product(
            facts.k_tiles, facts.orders, split_counts, facts.reductions, facts.split_aligns,
            epilogues, facts.lanes):
        if splits == 1 and (reduction != facts.reductions[0] or align != facts.split_aligns[0]):
            continue  # no split: the reduction and the rounding of ranges do not matter
        plan = facts.base.with_(k_tile=k_tile, order=order, splits=splits, epilogue=ep,
                                reduction=reduction if splits > 1 else "parallel",
                                split_align=align, lanes=lanes, lane_width=width,
                                lane_reduction=joined)
        if splits == 1 or len(plan.ranges(K)) > 1:  # a split count K allows
            plans.append(plan)
    # The likeliest first: the hinted split, then the others; no split last when the launch
    # says it splits (it may not, at this K).
    splits_said = bool(facts.split_k or split_hint)
    return sorted(plans, key=lambda p: (p.splits == 1 and splits_said,
                                        split_hint is not None and p.splits != split_hint))


def search(plans: list[Plan], ops: Operands, D: np.ndarray, first: bool = False) -> list[Plan]:
    """The plans whose output has exactly the bits of ``D`` (NaN equal to NaN by bits), in
    D's or the engine's shape."""
    want = bit_patterns(D).ravel()
    found = []
    for plan in plans:
        got = bit_patterns(evaluate(plan, ops)).ravel()
        if got.size == want.size and np.array_equal(got, want):
            found.append(plan)
            if first:
                break
    return found


def mismatches(plan: Plan, ops: Operands, D: np.ndarray) -> int:
    """How many elements of ``D`` the plan gets wrong."""
    got = bit_patterns(evaluate(plan, ops)).ravel()
    return int(np.count_nonzero(got != bit_patterns(D).ravel()))



def identify_call(call, D: np.ndarray, kernels, grid, gpu: str) -> list[Plan]:
    """`tcsim.blas.identify` for a checked call (`tcsim.blas.calls.Call`)."""
    if D.shape != call.shape:
        raise ValueError(f"identify: D has shape {D.shape}, the call gives {call.shape}")
    want = np.dtype(DTYPES[call.ops.out_dtype])
    if D.dtype != want:
        raise TypeError(f"identify: D has dtype {D.dtype}, the call gives {want}")
    if grid is not None and (len(grid) != 3 or not all(
            isinstance(g, (int, np.integer)) and not isinstance(g, bool) and g >= 1
            for g in grid)):
        raise ValueError(f"identify: grid must be three positive ints (x, y, z), got {grid!r}")
    if kernels is None:
        kernels = [call.plan(gpu)[0].kernel]
    if isinstance(kernels, str) or not kernels or not all(isinstance(k, str) for k in kernels):
        raise ValueError(f"identify: kernels must be a non-empty list of kernel names, got "
                         f"{kernels!r}")
    op, types, _, _, _, extras = call.key.cls
    if op in ("addmm", "linear") and extras[0] == "bias":
        epilogue = "add"
    else:
        epilogue = {"addmm": "alpha_beta", "scaled_mm": "scale"}.get(op, "round")
    launch = [dict(name=k) for k in kernels if "at::native::" not in k] or [dict(name=kernels[0])]
    launch[0]["grid"] = None if grid is None else list(grid)
    hint = None if grid is None else split_hint(launch, call.key.batch)
    input_type = {"float16": "f16", "bfloat16": "bf16", "float32": "f32",
                  "int8": "s8"}.get(types, types)
    plans = candidates(list(kernels), input_type, epilogue, call.key.K, hint)
    if not plans:
        raise UnsupportedCallError(f"identify: tcsim has no model of {kernels[0][:80]}")
    return search(plans, call.ops, D)
