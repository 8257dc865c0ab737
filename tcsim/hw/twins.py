"""The kernel ladder's CUDA twins, ``tcsim/hw/kernelN.cu``, written from the kernels.

Each twin is the kernel's default compile-time constants (`Kernel.defines`, so a twin compiled
without ``-D`` options runs the default tiles, as CI compiles it) and a one-line kernel that
calls its schedule in ``gemm.cuh``. ``python -m tcsim.hw.twins`` rewrites them; a test fails
when a committed file differs from what this writes.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

# kernel name -> (the schedule in gemm.cuh, what the kernel does)
SCHEDULES = {
    "kernel1": ("gemm_tiled", "hierarchical tiling on row-major shared tiles"),
    "kernel2": ("gemm_tiled", "kernel1 on swizzled shared tiles"),
    "kernel3": ("gemm_overlapped<2, 1, false>", "next tile's global loads overlapped with compute"),
    "kernel4": ("gemm_overlapped<4, 4, true>", "ldmatrix.x4 and hoisted swizzled offsets"),
    "kernel5": ("gemm_overlapped<4, 4, true>", "kernel4 with tiles tuned for the H100"),
    "kernel6": ("gemm_pipelined", "m16n8k16, cp.async pipeline, register double buffering"),
    "kernel7": ("gemm_warp_specialized", "warp-specialized TMA + mbarrier pipeline, wgmma"),
    "kernel8": ("gemm_warp_specialized", "kernel7 on persistent blocks, L2-friendly tile order"),
    "kernel9": ("gemm_warp_specialized", "kernel8 with C and D through shared memory in lines"),
    "kernel10": ("gemm_warp_specialized", "kernel8 with C in and D out by TMA"),
}
# Twins of kernels with tensor maps include hopper.cuh and exist only for sm_90a.
HOPPER = {"kernel7", "kernel8", "kernel9", "kernel10"}


def twin_source(name: str) -> str:
    """The text of ``tcsim/hw/<name>.cu``."""
    from ..kernels import kernel_named

    kernel = kernel_named(name)
    schedule, summary = SCHEDULES[name]
    lines = [f"// CUDA twin of {name}: {summary} (tcsim/kernels/{name}.py).",
             "// Written by `python -m tcsim.hw.twins` from the kernel's default parameters;",
             "// tcsim.hw.run overrides them with -D.",
             *(f"#ifndef {key}\n#define {key} {value}\n#endif"
               for key, value in kernel.defines(kernel.defaults).items()),
             *_body(name, schedule), ""]
    return "\n".join(lines)


def _body(name: str, schedule: str) -> list[str]:
    if name not in HOPPER:
        return ['#include "gemm.cuh"', "",
                f'extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) {name}'
                f"(GEMM_PARAMS) {{",
                f"  {schedule}(A, B, C, D, alpha, beta, M, N, K);", "}"]
    return ['#include "hopper.cuh"', "",
            f'extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, MIN_BLOCKS) '
            f"{name}(HOPPER_GEMM_PARAMS) {{",
            "#ifdef TCSIM_HOPPER",
            f"  {schedule}(HOPPER_GEMM_ARGS);",
            "#else",
            '  asm volatile("trap;");  // TMA and wgmma need sm_90a',
            "#endif", "}"]


def write(directory: str | Path | None = None) -> list[Path]:
    directory = Path(directory) if directory else Path(str(files("tcsim.hw")))
    paths = []
    for name in SCHEDULES:
        path = directory / f"{name}.cu"
        path.write_text(twin_source(name))
        paths.append(path)
    return paths


if __name__ == "__main__":
    for path in write():
        print(path)
