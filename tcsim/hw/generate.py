"""The CUDA sources tcsim writes from its own tables: generated here, never committed.

Each generated source is a function of the model (the qualifiers tcsim supports, the fragment
maps, the kernels' parameters), so it is written when needed rather than kept in git: the
runtime compiles the text straight from the generator, and writes the generated headers that
hand-written sources ``#include`` (``wgmma_issue.cuh``) into `directory()` before it compiles.

    python -m tcsim.hw.generate [DIR]    # write every generated source (CI, before nvcc)

`directory()` is ``$TCSIM_CUDA_DIR`` when set, else ``tcsim/cuda`` under the user's cache
directory (``$XDG_CACHE_HOME`` or ``~/.cache``): an installed wheel's package directory may not
be writable. Files are rewritten only when their text changed, atomically.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from importlib import import_module
from pathlib import Path

# file name -> (module, function of no arguments that returns the file's text)
GENERATED: dict[str, tuple[str, str]] = {
    "mma_probes.cu": ("tcsim.hw.isa.mma_probes", "probe_source"),
    "wmma_probes.cu": ("tcsim.hw.isa.wmma_probes", "probe_source"),
    "wmma_counters.cu": ("tcsim.hw.isa.wmma_probes", "counter_source"),
    "wgmma_probes.cu": ("tcsim.hw.isa.wgmma_probes", "probe_source"),
    "wgmma_issue.cuh": ("tcsim.hw.isa.wgmma_probes", "issue_header"),
    "smem_probes.cu": ("tcsim.hw.memory.smem_probes", "probe_source"),
}
# Headers that hand-written sources include: on disk before anything compiles.
HEADERS = tuple(name for name in GENERATED if name.endswith(".cuh"))


def generators() -> dict[str, Callable[[], str]]:
    """Every generated file: name -> the function that writes its text (the kernel twins'
    included, one per kernel written from its `Kernel`)."""
    out = {name: getattr(import_module(module), function)
           for name, (module, function) in GENERATED.items()}
    from .kernels.sources import twin_sources

    out.update(twin_sources())
    return out


@cache
def text(name: str) -> str:
    """The text of the generated source ``name`` (cached)."""
    found = generators().get(name)
    if found is None:
        raise KeyError(f"no generated CUDA source named {name!r}; known: "
                       f"{', '.join(generators())}")
    return found()


def directory() -> Path:
    """Where generated sources are written by default."""
    if os.environ.get("TCSIM_CUDA_DIR"):
        return Path(os.environ["TCSIM_CUDA_DIR"])
    cache_home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache_home) / "tcsim" / "cuda"


def write(where: str | Path | None = None, names=None) -> list[Path]:
    """Write the generated sources ``names`` (default: all) into ``where`` (default:
    `directory()`); a file already holding the text is left alone, others are replaced
    atomically (two processes may write at once)."""
    folder = Path(where) if where else directory()
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names if names is not None else generators():
        path = folder / name
        body = text(name)
        if not path.is_file() or path.read_text() != body:
            with tempfile.NamedTemporaryFile("w", dir=folder, delete=False,
                                             suffix=".tmp") as f:
                f.write(body)
            os.replace(f.name, path)
        paths.append(path)
    return paths


@cache
def header_directory() -> Path:
    """`directory()` with the generated headers written: the ``-I`` the compilers take (a
    folder under the temporary directory where the cache directory cannot be written)."""
    try:
        write(names=HEADERS)
        return directory()
    except OSError:
        fallback = Path(tempfile.gettempdir()) / f"tcsim-cuda-{os.getuid()}"
        write(fallback, HEADERS)
        return fallback


def path(name: str) -> Path:
    """A file on disk holding the generated source ``name`` (written when missing or stale)."""
    return write(names=[name])[0]


if __name__ == "__main__":
    for written in write(sys.argv[1] if sys.argv[1:] else None):
        print(written)
