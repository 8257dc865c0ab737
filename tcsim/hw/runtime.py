"""The present GPU and the one compile path: CUDA text compiled through CuPy (NVRTC).

This module owns finding a usable GPU, finding a CUDA source by name (hand-written in the
package or generated) and compiling source text for the device's architecture; `tcsim.hw.launch`
runs what it compiles. CuPy is imported inside the functions that need it, never when this
module is imported, so ``import tcsim.hw`` works (and says why the GPU is unusable) on a machine
without CuPy or a GPU. `nvcc` compiles the same text with the same options to a cubin, with no
GPU (checking a user's file on a machine without one).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from functools import cache, lru_cache
from importlib.resources import files
from pathlib import Path


class HardwareUnavailable(RuntimeError):
    """No CUDA GPU can be used here (no CuPy, no driver or no device); the message says which."""


class CompileError(ValueError):
    """CUDA source that does not compile (the compiler's messages, with the file and line), or
    that has no kernel of the name asked for (the kernels it has)."""


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
    once per process; CuPy's disk cache keys on the text, the options and the headers.
    `CompileError` when the text does not compile."""
    if arch:
        require_arch(arch)
    text = source if "\n" in source else source_text(source)
    return _compile(text, tuple(sorted(_target_defines(defines, arch).items())), arch or None,
                    tuple(include))


def _target_defines(defines: dict[str, int] | None, arch: str | None) -> dict[str, int]:
    """``defines``, and TCSIM_SM90A for sm_90a (NVRTC defines no feature macro of its own)."""
    return {**(defines or {}), "TCSIM_SM90A": 1} if arch == "sm_90a" else dict(defines or {})


def options(defines: dict[str, int], target: str, include: tuple[str, ...] = ()) -> tuple:
    """The compiler options of the one compile path (NVRTC and nvcc take the same): C++17, the
    target, the headers' folders (``include`` first, as a source's own folder comes first for
    its quoted includes; then the package's and the generated ones') and the ``-D`` defines."""
    folders = (*map(Path, include), *include_dirs())
    return ("--std=c++17", f"--gpu-architecture={target}", *(f"-I{d}" for d in folders),
            *(f"-D{k}={v}" for k, v in sorted(defines.items())))


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
    target = target or "sm_" + compute_capability()
    module = cupy.RawModule(code=text, options=options(dict(defines), target, include))
    with _compile_errors(target):  # now, not at the first get_function
        getattr(module, "compile", lambda: None)()
    return module


@contextmanager
def _compile_errors(target: str):
    """NVRTC's errors (CuPy's CompileException) as `CompileError`, with its messages."""
    from cupy.cuda.compiler import CompileException

    try:
        yield
    except CompileException as exc:
        raise CompileError(f"the CUDA source does not compile (NVRTC, {target}):\n"
                           f"{str(exc).strip()}") from None


def nvcc(source: str, defines: dict[str, int] | None = None, arch: str = "sm_90",
         include: tuple[str, ...] = (), name: str = "source.cu") -> bytes:
    """The CUDA text ``source`` compiled by nvcc to a cubin for ``arch``, with `compile`'s
    options: the compile path without a GPU (nvcc only). `CompileError` with nvcc's messages
    (the text's file called ``name`` there) when it does not compile; `FileNotFoundError`
    without nvcc."""
    found = shutil.which("nvcc") or next(
        (p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), None)
    if found is None:
        raise FileNotFoundError("nvcc (the CUDA compiler) not found on PATH or in /usr/local/cuda")
    with tempfile.TemporaryDirectory() as tmp:
        path, cubin = Path(tmp) / "source.cu", Path(tmp) / "source.cubin"
        path.write_text(source)
        run = subprocess.run([found, "-cubin", *options(_target_defines(defines, arch), arch,
                                                          include), "-o", str(cubin), str(path)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            messages = (run.stderr or run.stdout).strip().replace(str(path), name)
            raise CompileError(f"the CUDA source does not compile (nvcc, {arch}):\n{messages}")
        return cubin.read_bytes()


def cubin_kernels(cubin: bytes) -> list[str]:
    """The kernels a cubin holds (each has its ``.nv.info.<name>`` section), in order."""
    return list(dict.fromkeys(m.decode() for m in re.findall(rb"\.nv\.info\.([\w$]+)\x00",
                                                              cubin)))


def source_kernels(text: str) -> list[str]:
    """The ``__global__`` functions CUDA text declares, by a reading of the text (comments
    and attribute macros such as ``__launch_bounds__(...)`` skipped): what a missing kernel's
    message lists."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    group = r"\((?:[^()]|\([^()]*\))*\)"
    found = re.findall(rf"__global__\s+(?:\w+\s*(?:{group})?\s*)*?(?!__)(\w+)\s*\(", text)
    return list(dict.fromkeys(found))


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
    module = compile(source, defines, arch, include)
    try:
        with _compile_errors(arch or "sm_" + compute_capability()):
            fn = module.get_function(name)
    except CompileError:
        raise
    except Exception as exc:  # CuPy's CUDADriverError: CUDA_ERROR_NOT_FOUND
        if "NOT_FOUND" not in str(exc):
            raise
        text = source if "\n" in source else source_text(source)
        raise CompileError(missing_kernel(name, source_kernels(text))) from None
    if shared_bytes > 48 * 1024:  # above the default limit a kernel must opt in
        fn.max_dynamic_shared_size_bytes = shared_bytes
    return fn


def missing_kernel(name: str, kernels: list[str]) -> str:
    """The message for a source without the kernel ``name``."""
    have = ", ".join(kernels) if kernels else "none"
    return (f"the CUDA source has no kernel named {name!r} (its kernels: {have}); a kernel is "
            f"found by its name when it is declared extern \"C\" __global__")
