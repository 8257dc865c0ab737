"""How many blocks of a kernel an SM holds at once, and what limits it.

Registers come from ptxas when the CUDA toolkit is installed (``nvcc -Xptxas -v`` on the
kernel's twin, with its ``-D`` constants: what the GPU will allocate), else from the schedule's
declared budget (the twin's ``__launch_bounds__`` minimum blocks per SM: an upper bound on what
ptxas may use). `Occupancy.registers_source` says which.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache

from ..isa.validate import integer
from .gpus import Gpu


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_block: int
    registers_per_thread: int
    registers_source: str  # "ptxas" or "declared budget"
    shared_bytes_per_block: int
    limiter: str  # "registers", "shared memory", "warps" or "blocks"
    limits: dict[str, int]  # blocks per SM each resource allows

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.warps_per_block


def occupancy(gpu: Gpu, warps: int, registers: int, registers_source: str,
              shared_bytes: int) -> Occupancy:
    """Blocks per SM (CUDA's occupancy rules: registers allocated per warp in units of
    ``register_alloc_unit``, shared memory plus the per-block reservation)."""
    warps = integer(warps, "warps", minimum=1)
    registers = integer(registers, "registers", minimum=1,
                        maximum=int(gpu["max_registers_per_thread"]),
                        why=f" (the most a thread has on {gpu.key})")
    shared_bytes = integer(shared_bytes, "shared_bytes", minimum=0)
    unit = int(gpu["register_alloc_unit"])
    per_warp = -(-registers * 32 // unit) * unit
    reserved = int(gpu["shared_reserved_per_block"])
    limits = {"registers": int(gpu["registers_per_sm"]) // (per_warp * warps),
              "warps": int(gpu["max_warps_per_sm"]) // warps,
              "blocks": int(gpu["max_blocks_per_sm"])}
    if shared_bytes:
        limits["shared memory"] = int(gpu["shared_bytes_per_sm"]) // (shared_bytes + reserved)
    limiter = min(limits, key=lambda k: limits[k])
    if limits[limiter] < 1:
        raise ValueError(f"a block of {warps} warps, {registers} registers a thread and "
                         f"{shared_bytes} bytes of shared memory does not fit on an SM of "
                         f"{gpu.key} ({limiter})")
    return Occupancy(limits[limiter], warps, registers, registers_source, shared_bytes, limiter,
                     limits)


def twin_registers(source: str, entry: str, defines: dict[str, int],
                   arch: str) -> int | None:
    """Registers per thread ptxas gives ``entry`` of the CUDA source ``source`` (a twin's, as
    `tcsim.hw.runtime.source_path` finds it), or None without nvcc or without that source (a
    user's kernel has no twin in tcsim)."""
    return _ptxas_registers(source, entry, tuple(sorted(defines.items())), arch)


@cache
def _ptxas_registers(source: str, entry: str, defines: tuple, arch: str) -> int | None:
    if shutil.which("nvcc") is None:
        return None
    from ..hw import runtime  # the twin's text is the hardware side's: on disk only here

    try:
        path = runtime.source_path(source)
    except FileNotFoundError:
        return None
    return ptxas_registers(str(path), entry, arch, defines, source)


def ptxas_registers(path: str, entry: str, arch: str, defines: tuple = (),
                    source: str = "") -> int | None:
    """ptxas's ``Used N registers`` for kernel ``entry`` of the CUDA file ``path`` compiled by
    nvcc for ``arch`` with tcsim's headers and the ``-D`` ``defines`` ((name, value) pairs),
    or None when ptxas reports none for it; ValueError when it does not compile (``source``
    names the file there)."""
    from ..hw import runtime

    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(["nvcc", f"-arch={arch}", "-cubin", "-o", f"{tmp}/k.cubin",
                              *(f"-I{d}" for d in runtime.include_dirs()), "-Xptxas", "-v",
                              *(f"-D{k}={v}" for k, v in defines),
                              str(path)], capture_output=True, text=True)
    if run.returncode:  # e.g. an instruction the architecture lacks
        first = next((line for line in run.stderr.splitlines() if "error" in line), run.stderr)
        raise ValueError(f"{source or path} does not compile for {arch}: "
                         f"{first.split('error')[-1].strip(' :')}")
    text = run.stderr
    block = text[text.find(f"'{entry}'"):]
    found = re.search(r"Used (\d+) registers", block)
    return int(found.group(1)) if found else None
