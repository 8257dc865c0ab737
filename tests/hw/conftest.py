"""Fixtures of the hardware tests."""

import pytest

from tcsim.hw import runtime


@pytest.fixture
def sm90a():
    """Skip, with the reason, unless the GPU runs sm_90a code (wgmma, TMA: an H100 or H200)."""
    try:
        runtime.require_arch("sm_90a")
    except runtime.HardwareUnavailable as exc:
        pytest.skip(str(exc))
