"""compute-sanitizer on the kernel ladder's twins: `sanitize(kernel, tool)` -> its verdict.

Each run is a child process under ``compute-sanitizer --tool TOOL`` that launches the twin once
on random inputs with CuPy's memory pool off (every array its own cudaMalloc, so memcheck sees
an access past an array's end). The verdict counts the errors the tool reports and keeps the
first one. A child that outlives ``timeout`` (a kernel that hangs) is killed with its whole
process group, and its verdict says so.

`planted_effect(kernel)` runs a planted bug's twin once, without a sanitizer, in a child of
its own (a bug may fault the GPU context), and gives the fraction of D's elements that differ
from the correct kernel's `tcsim.run`.

    python -m tcsim.hw.sanitize KERNEL M N K [--effect]      # the child side
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")


@dataclass
class Verdict:
    tool: str
    errors: int
    first: str  # the first error line, or "" when none
    exit_code: int
    seconds: float = 0.0
    report: str = ""  # the tool's own lines (prefixed "========"), up to 4000 characters

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
    start = time.perf_counter()
    code, text = _child_run(cmd, timeout)
    seconds = round(time.perf_counter() - start, 1)
    if code is None:
        return Verdict(tool, 0, f"timed out after {timeout:g} s (the kernel hangs)", -1, seconds)
    report = "\n".join(line for line in text.splitlines() if line.startswith("========"))
    return Verdict(tool, _errors(text), _first_error(text), code, seconds, report[:4000])


def planted_effect(kernel: str, shape: tuple[int, int, int] = (256, 256, 256),
                   timeout: float = 120) -> str:
    """'wrong F' (F: the fraction of D's elements whose bits differ from the correct kernel's
    on the same inputs), or what stopped the twin ('timed out', the CUDA error)."""
    code, text = _child_run([sys.executable, "-m", "tcsim.hw.sanitize", kernel,
                             *map(str, shape), "--effect"], timeout)
    if code is None:
        return f"timed out after {timeout:g} s"
    found = re.search(r"^wrong [0-9.e-]+$", text, re.M)
    return found.group(0) if found and code == 0 else \
        (text.strip().splitlines() or [f"exit {code}"])[-1]


def _child_run(cmd: list[str], timeout: float) -> tuple[int | None, str]:
    """(exit code, stdout + stderr) of ``cmd``; (None, output so far) if it ran past
    ``timeout``, after killing its process group (the sanitizer's child too)."""
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    try:
        out, _ = child.communicate(timeout=timeout)
        return child.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, _ = child.communicate()
        return None, out


def _errors(text: str) -> int:
    m = re.search(r"ERROR SUMMARY: (\d+) error", text)
    hazards = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?", text)
    count = int(m.group(1)) if m else 0
    return max(count, int(hazards.group(1)) if hazards else 0)


def _first_error(text: str) -> str:
    for line in text.splitlines():
        lower = line.lower()
        if line.startswith("========") and "summary" not in lower and any(
                word in lower for word in ("error", "invalid", "hazard", "uninitialized", "race",
                                         "out-of-range", "misaligned")):
            return line.strip("= ").strip()
    return ""


def _child(name: str, M: int, N: int, K: int, effect: bool = False) -> None:
    import cupy
    import numpy as np

    from ..kernels import kernel_named
    from ..kernels.executor import run as simulate
    from .kernels import run

    cupy.cuda.set_allocator(None)  # no pool: each array is its own allocation
    rng = np.random.default_rng(0)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    C = rng.uniform(-1, 1, (M, N)).astype(np.float16)
    kernel = kernel_named(name)
    D = run(kernel, A, B, C, 1.0, 0.5)
    cupy.cuda.runtime.deviceSynchronize()
    if effect:
        reference = simulate(kernel.entry, A, B, C, 1.0, 0.5)
        print(f"wrong {(D.view(np.uint16) != reference.view(np.uint16)).mean():.6g}")


if __name__ == "__main__":
    _child(sys.argv[1], *(int(x) for x in sys.argv[2:5]), effect="--effect" in sys.argv[5:])
