"""The input checks every room shares (tcsim/isa/validate.py), one kind of check at a time."""

import numpy as np
import pytest

from tcsim.isa.validate import (
    broadcast_batch,
    check_memory,
    integer,
    integer_array,
    memory_limit,
    positive_extent,
    real_scalar,
)


class Custom(ValueError):
    pass


def test_integer():
    assert integer(np.int16(7), "n") == 7 and type(integer(np.uint64(7), "n")) is int
    assert integer(np.array(3), "n") == 3
    for bad in (4.0, True, np.bool_(False), "4", None, np.array([1]), 1j):
        with pytest.raises(TypeError, match="n must be an integer"):
            integer(bad, "n")
    with pytest.raises(ValueError, match="n must be a positive integer, got 0"):
        integer(0, "n", minimum=1)
    with pytest.raises(Custom, match=r"n must be at most 255 \(why\), got 256"):
        integer(256, "n", maximum=255, why=" (why)", error=Custom)


def test_positive_extent():
    assert positive_extent((2, np.int8(3)), "extent") == (2, 3)
    assert positive_extent(5, "extent") == (5,)
    with pytest.raises(ValueError, match=r"extent\[1\] must be a positive integer, got 0"):
        positive_extent([4, 0], "extent")
    with pytest.raises(ValueError, match=r"rank 2 \(given: 3\)"):
        positive_extent([1, 2, 3], "extent", rank=2)
    with pytest.raises(TypeError, match="sequence of positive integers"):
        positive_extent("44", "extent")


def test_real_scalar():
    assert real_scalar(np.float16(0.5), "alpha") == 0.5 and real_scalar(3, "alpha") == 3.0
    assert real_scalar(np.array(2.5), "alpha") == 2.5
    assert np.isnan(real_scalar(float("nan"), "alpha", dtype=np.float32))
    for bad in ("2", True, 1j, None, [1.0], np.array([1.0, 2.0])):
        with pytest.raises(TypeError, match="alpha must be a real number"):
            real_scalar(bad, "alpha")
    with pytest.raises(ValueError, match="overflows float32"):
        real_scalar(-1e39, "alpha", dtype=np.float32)
    with pytest.raises(ValueError, match="too large for a float"):
        real_scalar(10**400, "alpha")


def test_integer_array():
    values, given = integer_array([1, None, np.int8(3)], "xs", optional=True)
    assert values.tolist() == [1, 0, 3] and given.tolist() == [True, False, True]
    source = np.arange(6, dtype=np.uint16).reshape(2, 3)[:, ::2]
    values, _ = integer_array(source, "xs")
    assert values.dtype == np.int64 and values.tolist() == [[0, 2], [3, 5]]
    with pytest.raises(TypeError, match=r"xs must be integers: element 1 2\.5 is a float"):
        integer_array(np.array([1.0, 2.5]), "xs")
    with pytest.raises(TypeError, match=r"element \(1, 0\) nan is a float"):
        integer_array(np.array([[1.0, 2.0], [np.nan, 1.0]]), "xs")
    with pytest.raises(TypeError, match="lane 1 True is not an integer"):
        integer_array([0, True], "xs", name=lambda i: f"lane {i}")
    with pytest.raises(Custom, match="xs: element 0 -1 is negative"):
        integer_array(np.array([-1]), "xs", error=Custom)
    with pytest.raises(ValueError, match=r"element 1 256 is at or beyond 256 \(bytes\)"):
        integer_array([0, 256], "xs", limit=256, limit_text=" (bytes)")
    with pytest.raises(ValueError, match="at or beyond 9223372036854775808"):
        integer_array(np.array([2**64 - 1], np.uint64), "xs")
    with pytest.raises(ValueError, match="at or beyond"):
        integer_array([2**70], "xs")
    assert integer_array(np.zeros(0), "xs")[0].dtype == np.int64  # empty: nothing wrong


def test_broadcast_batch_names_the_operands():
    assert broadcast_batch({"A": (2, 1), "B": (3,), "C": ()}, "q") == (2, 3)
    with pytest.raises(ValueError, match=r"q: the batch shapes of B \(3,\) and C \(4,\)"):
        broadcast_batch({"A": (), "B": (3,), "C": (4,)}, "q")


def test_check_memory():
    assert memory_limit() > 1 << 20
    check_memory(1 << 20, "a little")
    with pytest.raises(Custom, match=r"a lot needs .* more than this machine's"):
        check_memory(memory_limit() + 1, "a lot", error=Custom)
