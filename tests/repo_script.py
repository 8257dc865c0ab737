"""A script of the source tree (benchmarks/, examples/) loaded as a module, for the tests that
check it."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(relative: str, name: str | None = None):
    """``relative`` (to the repository) as a module named ``name`` (its stem by default); its
    folder is on the path while it loads, for its own imports (bench_gpu, bench_cuda)."""
    path = ROOT / relative
    name = name or path.stem
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module
