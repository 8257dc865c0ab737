"""Shared test setup: the `hw` marker skips with a reason when no GPU can be used."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_collection_modifyitems(config, items):
    from tcsim.hw import unavailable_reason

    reason = unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"hardware test skipped: {reason}")
    for item in items:
        if "hw" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    """A fresh generator per test, seeded from the OS and printed so failures can be replayed."""
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"rng seed: {seed}")
    return np.random.default_rng(seed)
