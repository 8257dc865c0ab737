"""The package as installed holds every file it needs at run time.

These tests look at the tcsim that is imported. From a checkout (or an editable install) that is
the source tree itself; .ci/run and scripts/gpu_check.sh also run them against a wheel installed
without -e, from outside the source tree, where a file missing from the package data fails here
instead of when a CUDA twin is compiled on a GPU. ``TCSIM_REPO`` names the git checkout to
compare with when the tests do not sit in one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

import tcsim

PACKAGE = Path(tcsim.__file__).resolve().parent
TESTS = Path(__file__).resolve().parent
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
CUDA_SUFFIXES = (".cu", ".cuh", ".h")


def _cuda_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in CUDA_SUFFIXES)


def _repo() -> Path | None:
    """The git checkout to compare with: $TCSIM_REPO, else the one these tests sit in."""
    candidates = [os.environ.get("TCSIM_REPO"), TESTS.parent]
    for candidate in filter(None, candidates):
        path = Path(candidate).resolve()
        if (path / ".git").exists() and (path / "pyproject.toml").is_file():
            return path
    return None


def test_every_quoted_include_is_installed_beside_its_source():
    sources = _cuda_files()
    assert any(p.name == "gemm.cuh" for p in sources), f"gemm.cuh is not installed in {PACKAGE}"
    included = 0
    missing = []
    for source in sources:
        for name in INCLUDE.findall(source.read_text()):
            included += 1
            # NVRTC resolves a quoted include beside the source or on -I tcsim/hw (runtime.py).
            if not ((source.parent / name).is_file() or (PACKAGE / "hw" / name).is_file()):
                missing.append(f"{source.relative_to(PACKAGE.parent)} includes {name!r}")
    assert not missing, f"not installed in {PACKAGE}: " + "; ".join(missing)
    assert included >= 6  # kernel1..kernel6 include gemm.cuh


def test_every_cuda_source_the_package_compiles_is_installed():
    from tcsim.hw.mma import PROBES
    from tcsim.kernels import KERNELS, kernel_named

    hw = PACKAGE / "hw"
    wanted = {PROBES, "smem_probes.cu", *(kernel_named(k).source for k in KERNELS)}
    assert {name for name in wanted if not (hw / name).is_file()} == set()


def test_every_file_git_tracks_under_tcsim_is_installed():
    repo = _repo()
    if repo is None:
        pytest.skip("no git checkout to compare with: set TCSIM_REPO to the tcsim checkout")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    tracked = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--", "tcsim"],
                             capture_output=True, text=True, check=True).stdout.split("\0")
    tracked = [name for name in tracked if name]
    data = [name for name in tracked if not name.endswith(".py")]
    assert "tcsim/hw/gemm.cuh" in data
    missing = [name for name in tracked
               if (repo / name).is_file() and not (PACKAGE.parent / name).is_file()]
    assert not missing, f"tracked in {repo} but not installed in {PACKAGE}: {missing}"
    stale = [name for name in data
             if (repo / name).is_file()
             and (repo / name).read_bytes() != (PACKAGE.parent / name).read_bytes()]
    assert not stale, f"installed {PACKAGE} differs from {repo} (reinstall): {stale}"


def test_the_installed_metadata_has_this_version():
    try:
        installed = metadata.version("tcsim")
    except metadata.PackageNotFoundError:
        pytest.skip("tcsim is imported from the source tree without being installed")
    assert installed == tcsim.__version__, "stale install: pip install again"


def test_the_changelog_has_a_section_for_this_version():
    changelog = TESTS.parent / "CHANGELOG.md"
    if not changelog.is_file():
        pytest.skip(f"no CHANGELOG.md beside {TESTS} (source tree absent)")
    assert re.search(rf"^## \[{re.escape(tcsim.__version__)}\]", changelog.read_text(), re.M)


def test_a_checkout_or_sdist_holds_what_the_tests_read():
    """Tests in a git checkout or an unpacked sdist (.ci/run runs them there) find what
    test_docs.py and tests/memory read beside them, so none of those skip."""
    root = TESTS.parent
    if not ((root / ".git").exists() or (root / "PKG-INFO").is_file()):
        pytest.skip(f"{TESTS} is neither in a git checkout nor in an unpacked sdist")
    needed = ["README.md", "CHANGELOG.md", "pyproject.toml", "docs/index.md",
              "docs/evidence/cp_async_study_2026-11-22.jsonl.gz", "scripts", "benchmarks",
              "examples/own_kernel.py"]
    assert [name for name in needed if not (root / name).exists()] == []
