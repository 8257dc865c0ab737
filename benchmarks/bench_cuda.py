"""The benchmarks' own CUDA (benchmarks/cuda/: peak-rate and microbenchmark kernels that no part
of tcsim runs), compiled through tcsim.hw's one compile path with this folder on the include
path (their headers, beside tcsim's own: tma_bench.cu includes hopper.cuh)."""

from __future__ import annotations

from pathlib import Path

CUDA = Path(__file__).resolve().parent / "cuda"


def source(name: str) -> str:
    """The text of ``benchmarks/cuda/<name>``."""
    return (CUDA / name).read_text()


def function(name: str, kernel: str, defines: dict[str, int] | None = None,
             shared_bytes: int = 0, arch: str = ""):
    """The kernel ``kernel`` of ``benchmarks/cuda/<name>``, compiled for the present GPU."""
    from tcsim.hw import runtime

    return runtime.function(source(name), kernel, defines, shared_bytes, arch, (str(CUDA),))
