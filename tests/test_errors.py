"""Bad inputs get a clear exception of a documented type (docs/errors.md) naming the problem.

One test per reported finding (issue 13), each of which failed before the fix; the property
tests under tests/properties/ try the same rules on every entry point.
"""

import numpy as np
import pytest

import tcsim
from tcsim.kernels import ProblemSizeError
from tcsim.memory import SM90_BLOCK_LIMIT, SharedMemory, SharedMemoryError, access

LANES = np.arange(32)
A = np.ones((256, 64), np.float16)
B = np.ones((64, 128), np.float16)


def test_float_addresses_are_refused_not_truncated():
    with pytest.raises(SharedMemoryError, match=r"lane 0 address 0\.5 is a float"):
        access("ld.shared.b32", LANES * 4 + 0.5)
    # Whole floats too: an address is an integer (docs/errors.md).
    with pytest.raises(SharedMemoryError, match=r"lane 0 address 0\.0 is a float"):
        access("ld.shared.b32", LANES * 4.0)
    with pytest.raises(SharedMemoryError, match=r"lane 2 address 8\.0 is not an integer"):
        access("ld.shared.b32", [0, 4, 8.0] + [12] * 29)


def test_addresses_past_the_shared_window_name_the_lane_and_the_limit():
    with pytest.raises(SharedMemoryError,
                       match=rf"lane 0 address 0x3b9aca00 .* outside .*{SM90_BLOCK_LIMIT}"):
        access("ld.shared.b32", LANES * 4 + 10**9)
    with pytest.raises(SharedMemoryError, match=rf"lane 31 .*{SM90_BLOCK_LIMIT}"):
        access("ld.shared.b32", [0] * 31 + [SM90_BLOCK_LIMIT])
    access("ld.shared.b32", [0] * 31 + [SM90_BLOCK_LIMIT - 4])  # the last word is fine


def test_negative_addresses_are_refused():
    with pytest.raises(SharedMemoryError, match="lane 0 address -8 is negative"):
        access("ld.shared.b32", LANES * 4 - 8)
    with pytest.raises(SharedMemoryError, match="lane 5 address -1 is negative"):
        access("ld.shared.b32", [0] * 5 + [-1] + [None] * 26)


def test_nan_addresses_name_the_lane():
    with pytest.raises(SharedMemoryError, match="lane 0 address nan is a float"):
        access("ld.shared.b32", np.full(32, np.nan))
    with pytest.raises(SharedMemoryError, match="lane 3 address nan is not an integer"):
        access("ld.shared.b32", [0, 4, 8, float("nan")] + [None] * 28)


def test_other_non_integer_addresses():
    with pytest.raises(SharedMemoryError, match="lane 0 address '4' is not an integer"):
        access("ld.shared.b32", ["4"] * 32)
    with pytest.raises(SharedMemoryError, match="lane 1 address True is not an integer"):
        access("ld.shared.b32", [0, True] + [None] * 30)
    with pytest.raises(SharedMemoryError, match="lane 0 .* is at or beyond"):
        access("ld.shared.b32", [2**70] * 32)


def test_sources_follow_the_same_rules():
    shared = LANES * 16
    for bad, message in ((LANES * 16 + 0.5, "lane 0 global source 0.5 is a float"),
                         (LANES * 16 - 1024, "lane 0 global source -1024 is negative"),
                         (np.full(32, np.nan), "lane 0 global source nan is a float")):
        with pytest.raises(SharedMemoryError, match=message):
            access("cp.async.cg.shared.global.16", shared, sources=bad)
        with pytest.raises(SharedMemoryError, match=message):
            SharedMemory(1024).store("cp.async.cg.shared.global.16", shared,
                                     np.zeros((32, 16), np.uint8), sources=bad)


def test_shared_memory_methods_refuse_float_addresses():
    sm = SharedMemory(1024)
    with pytest.raises(SharedMemoryError, match="lane 0 address 0.0 is a float"):
        sm.load("ld.shared.b32", LANES * 4.0)
    with pytest.raises(SharedMemoryError, match="lane 0 address 0.5 is a float"):
        sm.ldmatrix("ldmatrix.sync.aligned.m8n8.x1.shared.b16", LANES * 16 + 0.5)
    assert sm.totals() == {}  # a refused access is not counted


def test_string_alpha_is_refused():
    with pytest.raises(TypeError, match="alpha must be a real number, got '2'"):
        tcsim.run(tcsim.kernel1, A, B, alpha="2")
    with pytest.raises(TypeError, match="beta must be a real number"):
        tcsim.run(tcsim.kernel1, A, B, beta=np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="alpha=1e[+]40 overflows float32"):
        tcsim.run(tcsim.kernel1, A, B, alpha=1e40)


def test_empty_extent_is_refused():
    with pytest.raises(ValueError, match=r"extent\[0\] must be a positive integer, got 0"):
        tcsim.memory.visualize_layout("TensorOpMultiplicand<16,32>", extent=(0, 32),
                                      vectorize=8, output_shape=(64, 4))


def test_huge_problem_is_refused_before_allocating():
    big = np.broadcast_to(np.float16(1), (2**20, 2**20))  # a view: no memory behind it
    with pytest.raises(ProblemSizeError, match="more than this machine's"):
        tcsim.run(tcsim.kernel1, big, big)


def test_version_flag(capsys):
    from tcsim.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"tcsim {tcsim.__version__}\n"
