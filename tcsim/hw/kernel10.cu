// CUDA twin of kernel10: kernel8 with C in and D out by TMA (tcsim/kernels/kernel10.py).
// Written by `python -m tcsim.hw.twins` from the kernel's default parameters;
// tcsim.hw.run overrides them with -D.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 64
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 256
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
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef GROUP_M
#define GROUP_M 16
#endif
#ifndef STAGED_EPILOGUE
#define STAGED_EPILOGUE 0
#endif
#ifndef TMA_STORE_EPILOGUE
#define TMA_STORE_EPILOGUE 1
#endif
#ifndef STORE_BUFFERS
#define STORE_BUFFERS 2
#endif
#ifndef CONSUMER_REGISTERS
#define CONSUMER_REGISTERS 232
#endif
#ifndef PRODUCER_REGISTERS
#define PRODUCER_REGISTERS 40
#endif
#include "hopper.cuh"

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS, MIN_BLOCKS) kernel10(HOPPER_GEMM_PARAMS) {
#ifdef TCSIM_HOPPER
  gemm_warp_specialized(HOPPER_GEMM_ARGS);
#else
  asm volatile("trap;");  // TMA and wgmma need sm_90a
#endif
}
