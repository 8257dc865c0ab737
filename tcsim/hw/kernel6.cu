// CUDA twin of kernel6: m16n8k16, cp.async pipeline, register double buffering (tcsim/kernels/kernel6.py).
// Written by `python -m tcsim.hw.twins` from the kernel's default parameters;
// tcsim.hw.run overrides them with -D.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef WK
#define WK 16
#endif
#ifndef ACC_F32
#define ACC_F32 0
#endif
#ifndef MMA_K
#define MMA_K 16
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef A_SWZ_BITS
#define A_SWZ_BITS 2
#endif
#ifndef A_SWZ_BASE
#define A_SWZ_BASE 3
#endif
#ifndef A_SWZ_SHIFT
#define A_SWZ_SHIFT 3
#endif
#ifndef B_SWZ_BITS
#define B_SWZ_BITS 3
#endif
#ifndef B_SWZ_BASE
#define B_SWZ_BASE 3
#endif
#ifndef B_SWZ_SHIFT
#define B_SWZ_SHIFT 4
#endif
#include "gemm.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) kernel6(GEMM_PARAMS) {
  gemm_pipelined(A, B, C, D, alpha, beta, M, N, K);
}
