"""TMA's read rate from L2 under other access patterns than bench_gpu_constants.py's.

    python benchmarks/tma_patterns.py      # on the GPU (sm_90a)

benchmarks/cuda/tma_bench.cu with taller boxes, 2 or 3 blocks per SM, larger matrices (one
larger than L2) and rows of 16 KiB, as a K = 8192 GEMM's operands have. Each line: whole-GPU
bytes per second (median of 5 launches of ~5 ms), the clock, and bytes per SM per cycle.
"""

import bench_gpu_constants as g  # this folder's
import cupy

sms = cupy.cuda.Device().attributes["MultiProcessorCount"]


def run(rows, cols, height, stages, boxes, per_sm=1, share=1, ms=5):
    blocks = sms * per_sm
    rec = g.records(blocks)
    make = g.tma_reader(rows, cols, height)(blocks, stages, boxes, share, rec)
    iters = g.calibrate(make, 64, ms / 1e3)
    sec = g.median_seconds(make(iters), 5, 2)
    total = blocks * iters * boxes * height * 128
    st = g.per_sm(rec, 1.0)
    print(f"{rows}x{cols} ({rows * cols * 2 >> 20} MiB) box {height}x64 stages {stages} boxes "
          f"{boxes} blocks/SM {per_sm} share {share}: {total / sec / 1e12:.2f} TB/s, "
          f"clock {st.clock_ghz:.3f} GHz, {total / sec / st.clock_ghz / 1e9 / sms:.1f} "
          "B/SM/cycle", flush=True)


run(4096, 2048, 64, 6, 4)
run(4096, 2048, 128, 6, 2)
run(4096, 2048, 256, 6, 1)
run(4096, 2048, 64, 3, 4, per_sm=2)
run(4096, 2048, 64, 2, 4, per_sm=3)
run(8192, 2048, 64, 6, 4)
run(2048, 2048, 64, 6, 4)
run(8192, 8192, 128, 6, 2)   # 128 MiB: from DRAM
run(4096, 8192, 64, 6, 4)    # 64 MiB, rows of 16 KiB like a K=8192 GEMM
run(1024, 8192, 64, 6, 4)    # 16 MiB with 16 KiB rows
run(1024, 8192, 128, 6, 2)
