// CUDA twin of wmma_shared (tcsim/kernels/wmma_shared.py): seed 003's
// tensorCoreMatMulOptimized. 2 x 2 warps, a 64x64 block tile, the unpadded shared tiles
// As[64][32] and Bs[32][64] (here at the start of dynamic shared memory, As first), 2 x 2
// 16x16 fragments per warp. The copy the seed leaves out is gemm.cuh's load_tile/store_tile
// (16-byte vectors); the wmma calls are the PTX <mma.h> emits, written inline.
#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 32
#endif
#ifndef WN
#define WN 32
#endif
#ifndef WK
#define WK 16
#endif
#ifndef ACC_F32
#define ACC_F32 1
#endif
#ifndef MMA_K
#define MMA_K 16
#endif
#ifndef STAGES
#define STAGES 1
#endif
#define A_SWZ_BITS 0
#define A_SWZ_BASE 0
#define A_SWZ_SHIFT 0
#define B_SWZ_BITS 0
#define B_SWZ_BASE 0
#define B_SWZ_SHIFT 0
#include "gemm.cuh"

#define FRAGS_M (WM / 16)
#define FRAGS_N (WN / 16)

// wmma_load_a / wmma_load_b: one row-major 16x16 fragment from shared memory.
#define WMMA_LOAD(OP)                                                                      \
  __device__ __forceinline__ void wmma_load_##OP(uint32_t(&r)[8], uint32_t addr, int stride) { \
    asm volatile("wmma.load." #OP ".sync.aligned.row.m16n16k16.shared.f16 "                \
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;"                              \
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), \
                   "=r"(r[6]), "=r"(r[7])                                                   \
                 : "r"(addr), "r"(stride) : "memory");                                      \
  }
WMMA_LOAD(a)
WMMA_LOAD(b)
__device__ __forceinline__ void wmma_mma(float (&c)[8], const uint32_t (&a)[8],
                                         const uint32_t (&b)[8]) {
  asm volatile(
      "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]), "+f"(c[4]), "+f"(c[5]), "+f"(c[6]),
        "+f"(c[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
        "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
}

extern "C" __global__ void __launch_bounds__(THREADS) wmma_shared(
    const uint16_t *__restrict__ A, const uint16_t *__restrict__ B, const float *__restrict__ C,
    float *__restrict__ D, float alpha, float beta, int M, int N, int K) {
  const uint32_t As = shared_address(gemm_shared), Bs = As + BM * BK * 2;
  const int warpId = threadIdx.x / 32;
  const int warpRow = warpId / WARPS_N, warpCol = warpId % WARPS_N;
  const int tileRow = blockIdx.y * BM, tileCol = blockIdx.x * BN;
  const uint16_t *A_block = A + (uint64_t)tileRow * K;
  const uint16_t *B_block = B + tileCol;
  float c[FRAGS_M][FRAGS_N][8] = {};  // fill_fragment(c_frag[i][j], 0.0f)
  for (int k = 0; k < K; k += BK) {
    uint32_t ra[A_PER_THREAD][4], rb[B_PER_THREAD][4];
    load_tile<BM, BK>(A_block + k, K, ra);
    store_tile<0, BM, BK>(As, ra);
    load_tile<BK, BN>(B_block + (uint64_t)k * N, N, rb);
    store_tile<1, BK, BN>(Bs, rb);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[FRAGS_M][8], b[FRAGS_N][8];
#pragma unroll
      for (int i = 0; i < FRAGS_M; i++)
        wmma_load_a(a[i], As + 2 * ((warpRow * WM + i * 16) * BK + kk), BK);
#pragma unroll
      for (int j = 0; j < FRAGS_N; j++)
        wmma_load_b(b[j], Bs + 2 * (kk * BN + warpCol * WN + j * 16), BN);
#pragma unroll
      for (int i = 0; i < FRAGS_M; i++)
#pragma unroll
        for (int j = 0; j < FRAGS_N; j++) wmma_mma(c[i][j], a[i], b[j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < FRAGS_M; i++)
#pragma unroll
    for (int j = 0; j < FRAGS_N; j++) {
      float *c_ptr = D + (uint64_t)(tileRow + warpRow * WM + i * 16) * N +
                     (tileCol + warpCol * WN + j * 16);
      asm volatile(
          "wmma.store.d.sync.aligned.row.m16n16k16.global.f32 "
          "[%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;"
          :
          : "l"(c_ptr), "f"(c[i][j][0]), "f"(c[i][j][1]), "f"(c[i][j][2]), "f"(c[i][j][3]),
            "f"(c[i][j][4]), "f"(c[i][j][5]), "f"(c[i][j][6]), "f"(c[i][j][7]), "r"(N)
          : "memory");
    }
}
