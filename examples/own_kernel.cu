// The CUDA of `mine` (examples/own_kernel.py, docs/own-kernel.md): the same instructions at
// the same addresses as its schedule, so that tcsim.hw.verify finds the same bits and the same
// Nsight Compute counters.
//
//   tcsim.hw.verify(mine, "examples/own_kernel.cu", 1024, 1024, 1024)
//
// One file for the three layouts of the guide. tcsim.hw.verify compiles it with the kernel's
// constants as -D (Kernel.defines: BM, BN, BK, WM, WN, A_SWZ_BITS, ...), so `mine_swizzled`'s
// swizzles come in by themselves; the padding is this file's own constant PAD (elements after
// every row), given as verify(..., defines={"PAD": 8}). The defaults below are `mine`'s, so
// that nvcc compiles the file as it is.
#include "gemm_common.cuh"  // tcsim's PTX helpers: ld_global_v4, st_shared_v4, ldmatrix_x4, ...

#ifndef BM
#define BM 128
#define BN 128
#define BK 32
#define WM 64
#define WN 64
#define A_SWZ_BITS 0
#define A_SWZ_BASE 0
#define A_SWZ_SHIFT 0
#define B_SWZ_BITS 0
#define B_SWZ_BASE 0
#define B_SWZ_SHIFT 0
#endif
#ifndef PAD
#define PAD 0
#endif
#if defined(ACC_F32) && ACC_F32
#error "own_kernel.cu keeps f16 accumulators, as mine does (accumulate='f16')"
#endif
#if defined(MMA_K) && MMA_K != 8
#error "own_kernel.cu issues m16n8k8, as mine does (mma_k=8)"
#endif
#define THREADS (BM / WM * BN / WN * 32)
#define A_BYTES (BM * (BK + PAD) * 2)  // B's tile starts where A's ends

// The tiles' layouts (SharedTile.address): a byte in the block's shared memory.
__device__ __forceinline__ uint32_t a_address(uint32_t base, int row, int col) {
  return base + 2 * swizzle(row * (BK + PAD) + col, A_SWZ_BITS, A_SWZ_BASE, A_SWZ_SHIFT);
}
__device__ __forceinline__ uint32_t b_address(uint32_t base, int row, int col) {
  return base + A_BYTES +
         2 * swizzle(row * (BN + PAD) + col, B_SWZ_BITS, B_SWZ_BASE, B_SWZ_SHIFT);
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void mma_f16(uint32_t (&d)[2], uint32_t a0, uint32_t a1, uint32_t b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3}, {%4}, {%0, %1};"
               : "+r"(d[0]), "+r"(d[1]) : "r"(a0), "r"(a1), "r"(b));
}

// copy_tile: thread t copies 16-byte vectors t, t + THREADS, ... of the K tile, all loads
// first, then all stores.
template <int ROWS, int COLS, bool IS_A>
__device__ __forceinline__ void copy_tile(const uint16_t* tile, int ld, uint32_t smem) {
  constexpr int COPIES = ROWS * COLS / 8 / THREADS;
  uint32_t r[COPIES][4];
#pragma unroll
  for (int i = 0; i < COPIES; i++) {
    const int v = i * THREADS + threadIdx.x;
    ld_global_v4(r[i], tile + (uint64_t)(v / (COLS / 8)) * ld + v % (COLS / 8) * 8);
  }
#pragma unroll
  for (int i = 0; i < COPIES; i++) {
    const int v = i * THREADS + threadIdx.x, row = v / (COLS / 8), col = v % (COLS / 8) * 8;
    st_shared_v4(IS_A ? a_address(smem, row, col) : b_address(smem, row, col), r[i]);
  }
}

// The launcher passes every kernel the same parameters (GEMM_PARAMS: A, B, C, D, alpha, beta,
// M, N, K); `mine` stores A @ B and reads no C, alpha or beta. Grid (N / BN, M / BM), THREADS
// threads, the tiles' bytes of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(THREADS) mine(GEMM_PARAMS) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t base = shared_address(smem);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row = warp / (BN / WN) * WM, warp_col = warp % (BN / WN) * WN;
  const int block_row = blockIdx.y * BM, block_col = blockIdx.x * BN;
  uint32_t acc[WM / 16][WN / 8][2] = {};  // m16n8 f16 accumulators

  for (int k = 0; k < K; k += BK) {
    copy_tile<BM, BK, true>(A + (uint64_t)block_row * K + k, K, base);
    copy_tile<BK, BN, false>(B + (uint64_t)k * N + block_col, N, base);
    __syncthreads();  // the tiles are in shared memory
    // a_fragments: one ldmatrix.x4 per 16 x 16 piece; a[i][step] is m16n8k8's A of K step
    uint32_t a[WM / 16][BK / 8][2];
#pragma unroll
    for (int i = 0; i < WM / 16; i++)
#pragma unroll
      for (int k16 = 0; k16 < BK / 16; k16++)
        ldmatrix_x4(a[i][2 * k16][0], a[i][2 * k16][1], a[i][2 * k16 + 1][0],
                    a[i][2 * k16 + 1][1],
                    a_address(base, warp_row + i * 16 + lane % 16, k16 * 16 + lane / 16 * 8));
    // b_fragments: one ldmatrix.x4.trans per 8 K rows x 32 columns; b[step][j] for N tile j
    uint32_t b[BK / 8][WN / 8];
#pragma unroll
    for (int step = 0; step < BK / 8; step++)
#pragma unroll
      for (int n32 = 0; n32 < WN / 32; n32++) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, b_address(base, step * 8 + lane % 8,
                                       warp_col + n32 * 32 + lane / 8 * 8));
#pragma unroll
        for (int j = 0; j < 4; j++) b[step][n32 * 4 + j] = r[j];
      }
#pragma unroll
    for (int step = 0; step < BK / 8; step++)
#pragma unroll
      for (int i = 0; i < WM / 16; i++)
#pragma unroll
        for (int j = 0; j < WN / 8; j++) mma_f16(acc[i][j], a[i][step][0], a[i][step][1], b[step][j]);
    __syncthreads();  // every warp is done reading before the next copy overwrites the tiles
  }
  // store_d: register r of m16n8 tile (i, j) holds D's pair at row lane / 4 + 8 r, column
  // 2 (lane % 4) of the tile
#pragma unroll
  for (int i = 0; i < WM / 16; i++)
#pragma unroll
    for (int j = 0; j < WN / 8; j++)
#pragma unroll
      for (int r = 0; r < 2; r++) {
        const int row = block_row + warp_row + i * 16 + lane / 4 + 8 * r;
        const int col = block_col + warp_col + j * 8 + lane % 4 * 2;
        st_global_b32(D + (uint64_t)row * N + col, acc[i][j][r]);
      }
}
