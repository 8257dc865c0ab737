"""Checks of what callers hand to tcsim: one helper per kind of check, shared by every room.

The instruction set, shared memory and the kernels all take the same kinds of input: counts and
sizes, real scalars, arrays of integers (addresses, register numbers, bytes) and sizes that
decide how much memory a call allocates. Each kind is checked here, once, where it enters. A
helper takes the name of what it checks and the error types its caller documents (memory raises
`SharedMemoryError`, the kernels `ProblemSizeError`, ...; docs/errors.md lists them all), always
a TypeError subclass for a value of the wrong kind and a ValueError (or IndexError) subclass
for a value out of range. Every message names the argument, the offending position and the
limit it broke.

The rules, the same everywhere:

- An integer is a Python or numpy integer, or a 0-d integer array: not a bool, and not a
  float, even a whole one (``4.0``), nor a string.
- An integer array has an integer dtype, or holds such integers (a list); floats, NaN, bools
  and strings are refused, naming the first one.
- A real scalar is an int, a float or a numpy real scalar (or 0-d array); not a bool, a
  string, a complex number or an array of several values.
- A size is refused before anything proportional to it is allocated: when the arrays a call
  would allocate exceed this machine's physical memory (`memory_limit`).
"""

from __future__ import annotations

import difflib
import operator
import os
from collections.abc import Callable, Sequence
from functools import cache

import numpy as np

INT64_LIMIT = 1 << 63  # one past the largest value an int64 holds


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """' (did you mean 'X'?)' for the known name ``name`` most likely mistypes (wrong case, a
    prefix such as 'h100' of 'H100-SXM', or a close spelling), or '' for none."""
    by_lower = {k.lower(): k for k in known}
    key = name.strip().lower()
    starts = [k for k in known if key and k.lower().startswith(key)]
    close = difflib.get_close_matches(key, list(by_lower), n=1)
    guess = by_lower.get(key) or (starts[0] if starts else None) or (
        by_lower[close[0]] if close else None)
    return f" (did you mean {guess!r}?)" if guess else ""


def _is_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_)) or (
        isinstance(value, np.ndarray) and value.dtype == np.bool_)


def _as_int(value) -> int | None:
    """``value`` as a Python int when it is an integer by the rules above, else None."""
    if _is_bool(value) or isinstance(value, (str, bytes)):
        return None
    if isinstance(value, np.ndarray):
        if value.ndim != 0 or value.dtype.kind not in "iu":
            return None
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        return None


def integer(value, what: str, *, minimum: int | None = None, maximum: int | None = None,
            why: str = "", error: type[Exception] = ValueError,
            type_error: type[Exception] = TypeError) -> int:
    """``value`` as an int, checked to be an integer in ``[minimum, maximum]``.

    ``why`` explains the maximum in the message (" (the most registers a thread has)")."""
    n = _as_int(value)
    if n is None:
        raise type_error(f"{what} must be an integer, got {value!r}")
    if minimum is not None and n < minimum:
        rule = {0: "a non-negative integer", 1: "a positive integer"}.get(
            minimum, f"an integer of at least {minimum}")
        raise error(f"{what} must be {rule}, got {n}")
    if maximum is not None and n > maximum:
        raise error(f"{what} must be at most {maximum}{why}, got {n}")
    return n


def positive_extent(values, what: str, *, rank: int | None = None,
                    error: type[Exception] = ValueError,
                    type_error: type[Exception] = TypeError) -> tuple[int, ...]:
    """A shape or extent: a sequence of positive integers (an int alone is rank 1)."""
    if _as_int(values) is not None:
        values = (values,)
    elif isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise type_error(f"{what} must be a sequence of positive integers, got {values!r}")
    items = list(values)
    if rank is not None and len(items) != rank:
        raise error(f"{what} must have rank {rank} (given: {len(items)})")
    return tuple(integer(v, f"{what}[{i}]", minimum=1, error=error, type_error=type_error)
                 for i, v in enumerate(items))


def real_scalar(value, what: str, *, dtype=None, error: type[Exception] = ValueError,
                type_error: type[Exception] = TypeError) -> float:
    """``value`` as a float, checked to be one real number.

    With ``dtype`` (np.float32, say), a finite value must stay finite when rounded to it;
    infinities and NaN are taken as given (the hardware receives them as they are)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    real = isinstance(value, (int, float, np.integer, np.floating)) and not _is_bool(value)
    if not real:
        raise type_error(f"{what} must be a real number, got {value!r}"
                         + (f" (a {type(value).__name__})" if not isinstance(value, str)
                            else " (a string)"))
    x = float(value) if not isinstance(value, int) or abs(value) < 1 << 1024 else None
    if x is None:
        raise error(f"{what}={value} is too large for a float")
    if dtype is not None and np.isfinite(x):
        with np.errstate(over="ignore"):
            if not np.isfinite(np.dtype(dtype).type(x)):
                raise error(f"{what}={x!r} overflows {np.dtype(dtype).name} "
                            f"(largest {float(np.finfo(dtype).max)!r})")
    return x


def _position(shape: tuple[int, ...]) -> Callable[[int], str]:
    """How to name the flat position ``i`` of an array of ``shape`` in a message."""
    if len(shape) == 0:
        return lambda i: "value"
    if len(shape) == 1:
        return lambda i: f"element {i}"
    return lambda i: f"element {tuple(int(x) for x in np.unravel_index(i, shape))}"


def integer_array(values, what: str, *, minimum: int = 0, limit: int | None = None,
                  limit_text: str = "", optional: bool = False,
                  name: Callable[[int], str] | None = None,
                  error: type[Exception] = ValueError,
                  type_error: type[Exception] = TypeError) -> tuple[np.ndarray, np.ndarray]:
    """``values`` as an int64 array of integers in ``[minimum, limit)``, and the mask of the
    positions given (with ``optional``, a None marks a position left out; it reads as 0).

    ``name(i)`` names flat position ``i`` in messages ("lane 3 address"); ``limit_text``
    names the limit (" (the shared-memory window)"). The input is never modified."""
    top = INT64_LIMIT if limit is None else min(limit, INT64_LIMIT)
    arr = values if isinstance(values, np.ndarray) else np.array(values, dtype=object)
    name = name or _position(arr.shape)
    flat = arr.ravel()
    if arr.dtype == object:  # a list (or object array): each element on its own
        given = np.ones(flat.size, bool)
        ints = []
        for i, v in enumerate(flat):
            n = _as_int(v)
            if n is None and v is None and optional:
                given[i] = False
                n = 0
            elif n is None:
                raise type_error(f"{what} must be integers: {name(i)} {v!r} is not an integer")
            ints.append(n)
        _check_range(ints, minimum, top, what, name, limit_text, error)
        return np.array(ints, np.int64).reshape(arr.shape), given.reshape(arr.shape)
    if arr.dtype.kind not in "iu" and flat.size == 0:  # nothing in it can be wrong
        return np.zeros(arr.shape, np.int64), np.ones(arr.shape, bool)
    if arr.dtype.kind not in "iu":
        bad = 0
        if arr.dtype.kind in "fc" and flat.size:  # name the first value that is not whole
            with np.errstate(invalid="ignore"):
                whole = np.isfinite(flat) & (flat == np.round(flat.real))
            bad = int(np.argmin(whole))
        kind = {"b": "a bool", "f": "a float", "c": "a complex number", "U": "a string",
                "S": "bytes"}.get(arr.dtype.kind, f"of dtype {arr.dtype.name}")
        raise type_error(f"{what} must be integers: {name(bad)} {flat[bad].item()!r} is {kind}")
    low, high = flat < minimum, flat >= top
    if low.any() or high.any():
        i = int(np.argmax(low | high))
        _check_range([int(flat[i])], minimum, top, what, lambda _: name(i), limit_text, error)
    return arr.astype(np.int64), np.ones(arr.shape, bool)  # a copy: callers may not alias it


def _check_range(ints, minimum, top, what, name, limit_text, error) -> None:
    for i, n in enumerate(ints):
        if n < minimum:
            raise error(f"{what}: {name(i)} {n} is {_below(minimum)}")
        if n >= top:
            raise error(f"{what}: {name(i)} {n} is at or beyond {top}{limit_text}")


def _below(minimum: int) -> str:
    return "negative" if minimum == 0 else f"below {minimum}"


@cache
def memory_limit() -> int:
    """Bytes of physical memory on this machine (2**63 when the system does not say)."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return INT64_LIMIT
    return pages * size if pages > 0 and size > 0 else INT64_LIMIT


def check_memory(nbytes: int, what: str, *, error: type[Exception] = ValueError) -> None:
    """Refuse, before allocating, a call whose arrays would take ``nbytes``: more than this
    machine's physical memory. ``what`` says which sizes asked for it."""
    limit = memory_limit()
    if nbytes > limit:
        raise error(f"{what} needs {_bytes(nbytes)} of arrays, more than this machine's "
                    f"{_bytes(limit)} of memory")


def _bytes(n: int) -> str:
    for unit, scale in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` broadcasts to exactly ``target`` (not to a larger shape)."""
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


def broadcast_batch(shapes: dict[str, tuple[int, ...]], what: str, *,
                    error: type[Exception] = ValueError) -> tuple[int, ...]:
    """The broadcast of the operands' batch shapes (their leading axes), or an error naming
    the two that do not broadcast."""
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        names = list(shapes)
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                try:
                    np.broadcast_shapes(shapes[first], shapes[second])
                except ValueError:
                    raise error(f"{what}: the batch shapes of {first} {shapes[first]} and "
                                f"{second} {shapes[second]} do not broadcast") from None
        raise
