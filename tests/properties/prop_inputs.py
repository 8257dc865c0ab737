"""Inputs for the property tests: random operands that are never all zeros, and the same values
in every memory layout numpy can give them (the results must not depend on which)."""

from __future__ import annotations

import time
import tracemalloc
from contextlib import contextmanager

import numpy as np
from hypothesis import settings

# Small and quick: the whole property set runs in seconds on a 2-core CI machine.
FEW = settings(max_examples=12, deadline=None)
SOME = settings(max_examples=25, deadline=None)


def random_values(dtype, shape, rng: np.random.Generator) -> np.ndarray:
    """Random values of ``dtype`` (floats of a few binades, or integers), never all zeros."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, shape).astype(dtype)
    else:
        x = (rng.standard_normal(shape) * 4).astype(dtype)
    if x.size and not np.any(x != 0):
        x.reshape(-1)[0] = 1
    return x


LAYOUTS = ("contiguous", "fortran", "transposed", "strided", "reversed", "readonly",
           "broadcast")


def in_layout(x: np.ndarray, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """(reference, variant): the values of ``x`` (reference, contiguous) and the same values
    laid out another way (variant): a Fortran-order copy, a transposed view of a transposed
    copy, a strided or reversed view into a larger array, a read-only array, or a zero-stride
    broadcast of its leading axis (then the reference repeats that axis's first entry)."""
    ref = np.ascontiguousarray(x)
    if layout == "contiguous" or x.ndim < 2:
        return ref, ref.copy()
    if layout == "fortran":
        return ref, np.asfortranarray(x)
    if layout == "transposed":
        return ref, np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)
    if layout == "strided":
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        big[..., ::2] = x
        return ref, big[..., ::2]
    if layout == "reversed":
        return ref, np.ascontiguousarray(x[..., ::-1, ::-1])[..., ::-1, ::-1]
    if layout == "readonly":
        y = x.copy()
        y.setflags(write=False)
        return ref, y
    if layout == "broadcast":
        if x.ndim < 3 or x.shape[0] == 0:
            return in_layout(x, "readonly")
        view = np.broadcast_to(x[:1], x.shape)
        return view.copy(), view
    raise ValueError(layout)


def bits(x: np.ndarray) -> np.ndarray:
    """The bit patterns of ``x`` (NaN-safe equality)."""
    x = np.ascontiguousarray(x)
    return x.view(f"u{x.dtype.itemsize}")


@contextmanager
def refused_quickly(limit_bytes: int = 64 << 20, seconds: float = 5.0):
    """The enclosed call must allocate less than ``limit_bytes`` and finish within
    ``seconds``: a size it refuses is refused before anything proportional to it exists."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        yield
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        took = time.perf_counter() - start
    assert peak < limit_bytes, f"allocated {peak} bytes before refusing"
    assert took < seconds, f"took {took:.1f} s to refuse"
