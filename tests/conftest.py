"""Shared test setup: the `hw` marker skips with a reason when no GPU can be used.

The suite also runs against an installed tcsim from outside the source tree (.ci/run unpacks the
sdist, removes its tcsim/ and runs these tests there). The helpers beside this file (oracle.py,
facts.py, ...) are put on sys.path here. Some tests read the source tree's docs/, scripts/ or
README.md next to tests/; where that tree is absent (tests/ copied on its own), a test that
fails only because such a file is missing is reported as skipped, with the reason.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
SOURCE_TREE = HERE.parent  # a checkout or an unpacked sdist: docs/, scripts/, README.md
sys.path.insert(0, str(HERE))


def source_tree_present() -> bool:
    return (SOURCE_TREE / "docs").is_dir() and (SOURCE_TREE / "README.md").is_file()


def pytest_configure(config):
    # Also in pyproject.toml; registered here too for tests/ run without it beside them.
    config.addinivalue_line("markers", "hw: needs an NVIDIA GPU with CuPy (run with -m hw)")


def pytest_report_header(config):
    import tcsim

    where = Path(tcsim.__file__).resolve().parent
    kind = "source tree" if where.parent == SOURCE_TREE else "installed"
    tree = "present" if source_tree_present() else "absent (tests that read it skip)"
    return [f"tcsim {tcsim.__version__} under test: {where} ({kind}); source tree {tree}"]


def pytest_collection_modifyitems(config, items):
    from tcsim.hw import unavailable_reason

    reason = unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"hardware test skipped: {reason}")
    for item in items:
        if item.get_closest_marker("hw"):  # the marker, not a parameter id that reads "hw"
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or call.excinfo is None or source_tree_present():
        return
    exc = call.excinfo.value
    missing = getattr(exc, "filename", None) if isinstance(exc, FileNotFoundError) else None
    if missing is None:
        return
    missing = Path(os.fspath(missing)).absolute()
    if missing.is_relative_to(SOURCE_TREE) and not missing.is_relative_to(HERE):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           f"Skipped: needs {missing.relative_to(SOURCE_TREE)} from the source "
                           f"tree, which is not beside {HERE} (run from a checkout or an "
                           "unpacked sdist)")


@pytest.fixture
def rng():
    """A fresh generator per test, seeded from the OS and printed so failures can be replayed."""
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"rng seed: {seed}")
    return np.random.default_rng(seed)


@pytest.fixture
def sm90a():
    """Skip, with the reason, unless the GPU runs sm_90a code (wgmma, TMA: an H100 or H200)."""
    from tcsim.hw import runtime

    try:
        runtime.require_arch("sm_90a")
    except runtime.HardwareUnavailable as exc:
        pytest.skip(str(exc))
