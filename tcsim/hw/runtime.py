"""Running tcsim's CUDA sources on the present GPU through CuPy (NVRTC).

This module owns the GPU side of the harness: finding a usable GPU, compiling the ``.cu`` files
beside it for the device's architecture, and launching kernels on raw arrays. CuPy is imported
inside the functions that need it, never when this module is imported, so ``import tcsim.hw``
works (and says why the GPU is unusable) on a machine without CuPy or a GPU.
"""

from __future__ import annotations

import hashlib
from functools import cache, lru_cache
from importlib.resources import files
from pathlib import Path


class HardwareUnavailable(RuntimeError):
    """No CUDA GPU can be used here (no CuPy, no driver or no device); the message says which."""


@lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """None when a GPU is usable; otherwise a sentence saying why not."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'tcsim[hw]' or 'tcsim[cuda13]')"
    except Exception as exc:  # a broken CuPy install raises other errors on import
        return f"CuPy failed to import: {exc}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"no usable CUDA driver or GPU: {exc}"
    if count == 0:
        return "no CUDA GPU is visible"
    return None


def available() -> bool:
    return unavailable_reason() is None


def require() -> None:
    """Raise `HardwareUnavailable`, saying why, unless a GPU is usable."""
    reason = unavailable_reason()
    if reason is not None:
        raise HardwareUnavailable(f"tcsim.hw needs an NVIDIA GPU with CuPy: {reason}")


def device_name() -> str:
    require()
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def compute_capability() -> str:
    require()
    import cupy

    return str(cupy.cuda.Device().compute_capability)


def require_arch(arch: str) -> None:
    """Raise `HardwareUnavailable` unless this GPU runs code compiled for ``arch`` ("sm_90a":
    the H100 and H200 only, as an arch-specific target runs on its own compute capability)."""
    require()
    have = compute_capability()
    if arch.removeprefix("sm_").rstrip("a") != have:
        raise HardwareUnavailable(f"this kernel needs an {arch} GPU; this one is sm_{have}")


def source_text(name: str) -> str:
    """The text of the CUDA source ``name``: generated (`tcsim.hw.generate`) or a hand-written
    file of the package."""
    from . import generate

    if name in generate.generators():
        return generate.text(name)
    return (Path(str(files("tcsim.hw"))) / name).read_text()


def source_path(name: str) -> Path:
    """A file on disk holding the CUDA source ``name`` (a generated one is written first)."""
    from . import generate

    if name in generate.generators():
        return generate.path(name)
    return Path(str(files("tcsim.hw"))) / name


def include_dirs() -> tuple[Path, ...]:
    """Where a source's quoted includes are found: the package's headers, the generated ones."""
    from . import generate

    return Path(str(files("tcsim.hw"))), generate.header_directory()


def module(filename: str, defines: dict[str, int] | None = None, arch: str | None = None):
    """The CUDA source ``filename`` (see `source_text`) compiled for the present GPU, with
    ``-D`` defines; ``arch`` overrides the target (``"sm_90a"`` for wgmma)."""
    return _module(filename, tuple(sorted((defines or {}).items())), arch)


@cache
def _module(filename: str, defines: tuple[tuple[str, int], ...], target: str | None = None):
    require()
    import cupy

    # CuPy's on-disk kernel cache keys on the source text and options, not on the headers it
    # includes: without their digest in the text, an edited or upgraded header would run the
    # binary compiled from the old one (it did, in an exploration on the H100).
    source = f"// tcsim headers {_headers_digest()}\n" + source_text(filename)
    arch = f"--gpu-architecture={target or 'sm_' + compute_capability()}"
    options = ("--std=c++17", arch, *(f"-I{d}" for d in include_dirs()),
               *(f"-D{k}={v}" for k, v in defines))
    return cupy.RawModule(code=source, options=options)


@cache
def _headers_digest() -> str:
    """SHA-256 of every header on the include path (names and contents)."""
    digest = hashlib.sha256()
    for folder in include_dirs():
        for path in sorted(folder.iterdir(), key=lambda p: p.name):
            if path.name.endswith((".cuh", ".h")):
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def kernel_function(filename: str, name: str, defines: dict[str, int] | None = None,
                    shared_bytes: int = 0, arch: str = ""):
    """A compiled kernel, allowed ``shared_bytes`` of dynamic shared memory; ``arch`` "sm_90a"
    compiles the Hopper-only code (and defines TCSIM_SM90A, which guards it)."""
    if arch:
        require_arch(arch)
        defines = {**(defines or {}), "TCSIM_SM90A": 1} if arch == "sm_90a" else defines
    fn = module(filename, defines, arch or None).get_function(name)
    if shared_bytes > 48 * 1024:  # above the default limit a kernel must opt in
        fn.max_dynamic_shared_size_bytes = shared_bytes
    return fn


def launch_per_warp(filename: str, kernel: str, count: int, *args, warps_per_block: int = 8):
    """Launch ``kernel`` with one warp per item for ``count`` items."""
    fn = module(filename).get_function(kernel)
    blocks = max(1, -(-count // warps_per_block))
    fn((blocks,), (32 * warps_per_block,), args)
