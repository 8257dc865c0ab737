"""The present GPU and the one compile path: CUDA text compiled through CuPy (NVRTC).

This module owns finding a usable GPU, finding a CUDA source by name (hand-written in the
package or generated) and compiling source text for the device's architecture; `tcsim.hw.launch`
runs what it compiles. CuPy is imported inside the functions that need it, never when this
module is imported, so ``import tcsim.hw`` works (and says why the GPU is unusable) on a machine
without CuPy or a GPU.
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
    return _package_file(name).read_text()


def source_path(name: str) -> Path:
    """A file on disk holding the CUDA source ``name`` (a generated one is written first)."""
    from . import generate

    if name in generate.generators():
        return generate.path(name)
    return _package_file(name)


@cache
def _package_file(name: str) -> Path:
    found = sorted(Path(str(files("tcsim.hw"))).rglob(name))
    if not found:
        raise FileNotFoundError(f"no CUDA source {name!r} in tcsim.hw, hand-written or generated")
    return found[0]


def include_dirs() -> tuple[Path, ...]:
    """Where a source's quoted includes are found: the folders of the package's headers, then
    the generated headers'."""
    from . import generate

    here = Path(str(files("tcsim.hw")))
    return (*sorted({p.parent for p in here.rglob("*.cuh")}), generate.header_directory())


def compile(source: str, defines: dict[str, int] | None = None, arch: str | None = None,
            include: tuple[str, ...] = ()):
    """The CUDA text ``source`` (or the name of one, see `source_text`) compiled for the present
    GPU, with ``-D`` defines; ``arch`` overrides the target (``"sm_90a"``: Hopper-only code,
    with TCSIM_SM90A defined, which guards it); ``include``: more ``-I`` folders. Compiled
    once per process; CuPy's disk cache keys on the text, the options and the headers."""
    if arch:
        require_arch(arch)
        if arch == "sm_90a":
            defines = {**(defines or {}), "TCSIM_SM90A": 1}
    text = source if "\n" in source else source_text(source)
    return _compile(text, tuple(sorted((defines or {}).items())), arch or None, tuple(include))


@cache
def _compile(source: str, defines: tuple[tuple[str, int], ...], target: str | None,
             include: tuple[str, ...]):
    require()
    import cupy

    folders = (*include_dirs(), *map(Path, include))
    # CuPy's on-disk kernel cache keys on the source text and options, not on the headers it
    # includes: without their digest in the text, an edited or upgraded header would run the
    # binary compiled from the old one (it did, in an exploration on the H100).
    text = f"// tcsim headers {_headers_digest(folders)}\n" + source
    arch = f"--gpu-architecture={target or 'sm_' + compute_capability()}"
    options = ("--std=c++17", arch, *(f"-I{d}" for d in folders),
               *(f"-D{k}={v}" for k, v in defines))
    return cupy.RawModule(code=text, options=options)


@cache
def _headers_digest(folders: tuple[Path, ...]) -> str:
    """SHA-256 of every header in ``folders`` (names and contents)."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.iterdir(), key=lambda p: p.name):
            if path.name.endswith((".cuh", ".h")):
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def function(source: str, name: str, defines: dict[str, int] | None = None,
             shared_bytes: int = 0, arch: str = "", include: tuple[str, ...] = ()):
    """The kernel ``name`` of `compile`'s module, allowed ``shared_bytes`` of dynamic shared
    memory."""
    fn = compile(source, defines, arch, include).get_function(name)
    if shared_bytes > 48 * 1024:  # above the default limit a kernel must opt in
        fn.max_dynamic_shared_size_bytes = shared_bytes
    return fn
