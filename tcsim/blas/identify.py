"""Which plan explains a GPU's output: the search behind the measured plan table.

A kernel's name fixes most of its plan (`tcsim.blas.kernels`); the split count, and for some
kernels the k-tile, the order of the partial k-tile and the epilogue's order, are found by
running every candidate on the inputs and keeping those whose bits equal the GPU's.
"""

from __future__ import annotations

import itertools

import numpy as np

from .evaluate import Operands, evaluate
from .kernels import read
from .plan import Plan

MAX_SPLITS = 16
EPILOGUE_CHOICES = {
    "round": ("round",),
    "add": ("add",),
    "alpha_beta": ("alpha_beta", "round_add", "alpha_fma", "c_first"),
    "scale": ("scale", "scale_each"),
}


def candidates(kernel_names: list[str], input_type: str, epilogue: str, K: int,
               split_hint: int | None = None) -> list[Plan]:
    """Every plan the kernels' names allow, the likeliest first: the split count the launch
    suggests (or none, when nothing suggests a split), then every other count up to
    `MAX_SPLITS` (a grid does not always show the split)."""
    facts = read(kernel_names, input_type)
    if facts is None:
        return []
    first = [split_hint] if split_hint else [] if facts.split_k else [1]
    split_counts = first + [s for s in range(1, MAX_SPLITS + 1) if s not in first]
    plans = []
    for k_tile, order, splits, ep in itertools.product(
            facts.k_tiles, facts.orders, split_counts, EPILOGUE_CHOICES[epilogue]):
        plan = facts.base.with_(k_tile=k_tile, order=order, splits=splits, epilogue=ep)
        if splits > 1 and len(plan.ranges(K)) < 2 or (
                splits == 1 and (facts.split_k or split_hint)):
            continue
        plans.append(plan)
    return plans


def search(plans: list[Plan], ops: Operands, D: np.ndarray, first: bool = False) -> list[Plan]:
    """The plans whose output has exactly the bits of ``D`` (NaN equal to NaN by bits)."""
    want = _bits(D)
    found = []
    for plan in plans:
        got = _bits(evaluate(plan, ops))
        if got.shape == want.shape and np.array_equal(got, want):
            found.append(plan)
            if first:
                break
    return found


def mismatches(plan: Plan, ops: Operands, D: np.ndarray) -> int:
    """How many elements of ``D`` the plan gets wrong."""
    return int(np.count_nonzero(_bits(evaluate(plan, ops)) != _bits(D)))


def _bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind != "i" else x
