"""compute-sanitizer on the kernel ladder's twins: `sanitize(kernel, tool)` -> its verdict.

Each run is a child process under ``compute-sanitizer --tool TOOL`` that launches the twin once
on random inputs with CuPy's memory pool off (every array its own cudaMalloc, so memcheck sees
an access past an array's end). The verdict counts the errors the tool reports and keeps the
first one.

    python -m tcsim.hw.sanitize KERNEL M N K      # the child side
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")


@dataclass
class Verdict:
    tool: str
    errors: int
    first: str  # the first error line, or "" when none
    exit_code: int

    @property
    def caught(self) -> bool:
        return self.errors > 0


def find_sanitizer() -> str:
    """compute-sanitizer: $TCSIM_SANITIZER, on PATH, or under /usr/local/cuda*."""
    for candidate in (os.environ.get("TCSIM_SANITIZER"), shutil.which("compute-sanitizer"),
                      *sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer"), reverse=True),
                      *sorted(glob.glob("/opt/nvidia/*/compute-sanitizer/compute-sanitizer"))):
        if candidate and os.path.exists(candidate):
            return candidate
    raise FileNotFoundError("compute-sanitizer not found; set TCSIM_SANITIZER to its path")


def sanitize(kernel: str, tool: str, shape: tuple[int, int, int] = (256, 256, 256),
             timeout: float = 300) -> Verdict:
    """Run ``kernel``'s twin once under ``compute-sanitizer --tool tool``."""
    if tool not in TOOLS:
        raise ValueError(f"tool must be one of {TOOLS}, got {tool!r}")
    cmd = [find_sanitizer(), "--tool", tool, "--print-limit", "5",
           sys.executable, "-m", "tcsim.hw.sanitize", kernel, *map(str, shape)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    text = run.stdout + run.stderr
    return Verdict(tool, _errors(text), _first_error(text), run.returncode)


def _errors(text: str) -> int:
    m = re.search(r"ERROR SUMMARY: (\d+) error", text)
    hazards = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?", text)
    count = int(m.group(1)) if m else 0
    return max(count, int(hazards.group(1)) if hazards else 0)


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("========") and ("Error" in line or "Invalid" in line
                                           or "hazard" in line or "Uninitialized" in line):
            return line.strip("= ").strip()
    return ""


def _child(name: str, M: int, N: int, K: int) -> None:
    import cupy
    import numpy as np

    from ..kernels import kernel_named
    from .gemm import run

    cupy.cuda.set_allocator(None)  # no pool: each array is its own allocation
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    C = rng.uniform(-1, 1, (M, N)).astype(np.float16)
    run(kernel_named(name), A, B, C, 1.0, 0.5)
    cupy.cuda.runtime.deviceSynchronize()


if __name__ == "__main__":
    _child(sys.argv[1], *(int(x) for x in sys.argv[2:5]))
