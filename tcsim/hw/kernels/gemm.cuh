// The building blocks of the kernel ladder's CUDA twins: one device function per function of
// tcsim/kernels/blocks.py, issuing the same instructions at the same addresses. Every memory
// and tensor-core instruction is inline PTX, and the epilogue's arithmetic is explicit
// round-to-nearest PTX, so the compiler can neither change what Nsight Compute counts nor
// contract a multiply and an add into an FMA.
//
// Compile-time constants (the including .cu gives defaults; tcsim.hw.run passes -D values from
// Kernel.defines): BM BN BK (block tile), WM WN WK (warp tile), ACC_F32 (0: f16 accumulators),
// MMA_K (8 or 16), STAGES (shared buffers), A_SWZ_BITS/BASE/SHIFT and B_SWZ_... (CuTe
// Swizzle<bits, base, shift> on element offsets).
#pragma once
#include "gemm_common.cuh"


// Tile sizes, MMA_K and STAGES come from the twin (tcsim/hw/kernels/twin.py writes every default).
#if !defined(MMA_K) || !defined(STAGES)
#error "gemm.cuh: include it from a kernel twin, which defines MMA_K and STAGES"
#endif
// Planted bugs (tcsim/kernels/planted.py): each 1 turns one correct line into a bug.
#ifndef PLANT_MISSING_BARRIER
#define PLANT_MISSING_BARRIER 0
#endif
#ifndef PLANT_READ_UNSWIZZLED
#define PLANT_READ_UNSWIZZLED 0
#endif
#ifndef PLANT_TILE_OFFSET
#define PLANT_TILE_OFFSET 0
#endif
#ifndef PLANT_UNALIGNED_LDMATRIX
#define PLANT_UNALIGNED_LDMATRIX 0
#endif
#ifndef PLANT_UNINITIALIZED_TAIL
#define PLANT_UNINITIALIZED_TAIL 0
#endif
#ifndef PLANT_EARLY_WAIT
#define PLANT_EARLY_WAIT 0
#endif
#ifndef MIN_BLOCKS  // blocks per SM the compiler must leave registers for (launch bounds)
#define MIN_BLOCKS 1
#endif
#define WARPS_M (BM / WM)
#define WARPS_N (BN / WN)
#define THREADS (32 * WARPS_M * WARPS_N)
#define TILES_M (WM / 16)
#define TILES_N (WN / 8)
#define TILES_K (WK / MMA_K)
#define STAGE_BYTES ((BM * BK + BK * BN) * 2)
#define A_PER_THREAD (BM * BK / 8 / THREADS)
#define B_PER_THREAD (BK * BN / 8 / THREADS)
#define ACC_REGS (ACC_F32 ? 4 : 2)

// ---- addresses ------------------------------------------------------------------------------

// Element offset of (row, col) in the A (BM x BK) and B (BK x BN) shared tiles.
__device__ __forceinline__ uint32_t a_offset(uint32_t row, uint32_t col) {
  return swizzle(row * BK + col, A_SWZ_BITS, A_SWZ_BASE, A_SWZ_SHIFT);
}
__device__ __forceinline__ uint32_t b_offset(uint32_t row, uint32_t col) {
  return swizzle(row * BN + col, B_SWZ_BITS, B_SWZ_BASE, B_SWZ_SHIFT);
}

// Where load_*_fragments read: the tiles' layouts, or (planted bug) row-major.
__device__ __forceinline__ uint32_t a_read_offset(uint32_t row, uint32_t col) {
  return PLANT_READ_UNSWIZZLED ? row * BK + col : a_offset(row, col);
}
__device__ __forceinline__ uint32_t b_read_offset(uint32_t row, uint32_t col) {
  return PLANT_READ_UNSWIZZLED ? row * BN + col : b_offset(row, col);
}


// ---- instructions ---------------------------------------------------------------------------

__device__ __forceinline__ void ldmatrix_x1_trans(uint32_t& r0, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
               : "=r"(r0) : "r"(addr) : "memory");
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t& r0, uint32_t& r1, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r0), "=r"(r1) : "r"(addr) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                                  uint32_t& r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory");
}
__device__ __forceinline__ void mma_m16n8k8(uint32_t (&acc)[ACC_REGS], const uint32_t (&a)[2],
                                            uint32_t b) {
#if ACC_F32
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
               : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
               : "r"(a[0]), "r"(a[1]), "r"(b));
#else
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3}, {%4}, {%0, %1};"
               : "+r"(acc[0]), "+r"(acc[1]) : "r"(a[0]), "r"(a[1]), "r"(b));
#endif
}


// ---- blocks (tcsim/kernels/blocks.py) ---------------------------------------------------------

// tile_vectors + load_tile: thread t loads vectors t, t + THREADS, ... of a ROWS x COLS tile.
template <int ROWS, int COLS, int PER>
__device__ __forceinline__ void load_tile(const uint16_t* tile, int ld, uint32_t (&r)[PER][4]) {
#pragma unroll
  for (int i = 0; i < PER; i++) {
    const int v = i * THREADS + threadIdx.x;
    ld_global_v4(r[i], tile + (uint64_t)(v / (COLS / 8)) * ld + v % (COLS / 8) * 8);
  }
}

// store_tile: each vector at its place in the shared tile's layout (OPERAND 0: A, 1: B).
template <int OPERAND, int ROWS, int COLS, int PER>
__device__ __forceinline__ void store_tile(uint32_t base, const uint32_t (&r)[PER][4]) {
#pragma unroll
  for (int i = 0; i < PER - (OPERAND == 1 ? PLANT_UNINITIALIZED_TAIL : 0); i++) {
    const int v = i * THREADS + threadIdx.x;
    const int row = v / (COLS / 8), col = v % (COLS / 8) * 8;
    st_shared_v4(base + 2 * (OPERAND == 0 ? a_offset(row, col) : b_offset(row, col)), r[i]);
  }
}

// load_a_fragments: MATS 2 (ldmatrix.x2 per 16x8 tile) or 4 (ldmatrix.x4 per 16x16).
template <int MATS>
__device__ __forceinline__ void load_a_fragments(uint32_t base, int warp_row, int warp_k,
                                                 uint32_t (&a)[TILES_M][TILES_K][2]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int m = 0; m < TILES_M; m++) {
#pragma unroll
    for (int t = 0; t < TILES_K / (MATS / 2); t++) {
      const int row = warp_row * WM + m * 16 + lane % 16;
      const int col = warp_k * WK + t * 8 * (MATS / 2) + (MATS == 4 ? lane / 16 * 8 : 0);
      const uint32_t addr = base + 2 * a_read_offset(row, col);
      if (MATS == 2) {
        ldmatrix_x2(a[m][t][0], a[m][t][1], addr);
      } else {
        ldmatrix_x4(a[m][2 * t][0], a[m][2 * t][1], a[m][2 * t + 1][0], a[m][2 * t + 1][1],
                    addr);
      }
    }
  }
}

// load_b_fragments: MATS 1 (ldmatrix.x1.trans per 8x8 tile) or 4 (.x4.trans per 8x32).
template <int MATS>
__device__ __forceinline__ void load_b_fragments(uint32_t base, int warp_col, int warp_k,
                                                 uint32_t (&b)[TILES_K][TILES_N]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int t = 0; t < TILES_K; t++) {
#pragma unroll
    for (int g = 0; g < TILES_N / MATS; g++) {
      const int row = warp_k * WK + t * 8 + lane % 8;
      const int col = warp_col * WN + g * 8 * MATS + lane / 8 % MATS * 8;
      const uint32_t addr = base + 2 * b_read_offset(row, col);
      if (MATS == 1) {
        ldmatrix_x1_trans(b[t][g], addr);
      } else {
        ldmatrix_x4_trans(b[t][4 * g], b[t][4 * g + 1], b[t][4 * g + 2], b[t][4 * g + 3], addr);
      }
    }
  }
}

// kernel4's cheap index math: a lane's swizzled offset is computed once (a_lane, b_lane) and
// each step XORs in the step's offset. The same addresses as load_*_fragments<4>: with
// power-of-two tiles the lane's bits and the step's bits are disjoint, so row-major offsets
// add as XOR, and a swizzle is linear under XOR.
__device__ __forceinline__ uint32_t a_lane_offset(int warp_row) {
  const int lane = threadIdx.x % 32;
  return a_offset(warp_row * WM + lane % 16, lane / 16 * 8);
}
__device__ __forceinline__ uint32_t b_lane_offset(int warp_col) {
  const int lane = threadIdx.x % 32;
  return b_offset(lane % 8, warp_col * WN + lane / 8 % 4 * 8);
}
__device__ __forceinline__ void load_a_hoisted(uint32_t base, uint32_t a_lane, int warp_k,
                                               uint32_t (&a)[TILES_M][TILES_K][2]) {
#pragma unroll
  for (int m = 0; m < TILES_M; m++) {
#pragma unroll
    for (int t = 0; t < TILES_K / 2; t++) {
      const uint32_t addr = base + 2 * (a_lane ^ a_offset(m * 16, warp_k * WK + t * 16));
      ldmatrix_x4(a[m][2 * t][0], a[m][2 * t][1], a[m][2 * t + 1][0], a[m][2 * t + 1][1], addr);
    }
  }
}
__device__ __forceinline__ void load_b_hoisted(uint32_t base, uint32_t b_lane, int warp_k,
                                               uint32_t (&b)[TILES_K][TILES_N]) {
#pragma unroll
  for (int t = 0; t < TILES_K; t++) {
#pragma unroll
    for (int g = 0; g < TILES_N / 4; g++) {
      const uint32_t addr = base + 2 * (b_lane ^ b_offset(warp_k * WK + t * 8, g * 32));
      ldmatrix_x4_trans(b[t][4 * g], b[t][4 * g + 1], b[t][4 * g + 2], b[t][4 * g + 3], addr);
    }
  }
}

// mma_warp_tile: for each K step in turn, every (m, n) tile of the warp.
__device__ __forceinline__ void mma_warp_tile(uint32_t (&acc)[TILES_M][TILES_N][ACC_REGS],
                                              const uint32_t (&a)[TILES_M][TILES_K][2],
                                              const uint32_t (&b)[TILES_K][TILES_N]) {
#pragma unroll
  for (int k = 0; k < TILES_K; k++) {
#pragma unroll
    for (int n = 0; n < TILES_N; n++) {
#pragma unroll
      for (int m = 0; m < TILES_M; m++) mma_m16n8k8(acc[m][n], a[m][k], b[k][n]);
    }
  }
}

// compute_block_tile: each warp walks the shared tiles in WK steps: ldmatrix, then mma.
template <int A_MATS, int B_MATS, bool HOISTED>
__device__ __forceinline__ void compute_block_tile(uint32_t (&acc)[TILES_M][TILES_N][ACC_REGS],
                                                   uint32_t a_base, uint32_t b_base,
                                                   int warp_row, int warp_col) {
  for (int warp_k = 0; warp_k < BK / WK; warp_k++) {
    uint32_t a[TILES_M][TILES_K][2], b[TILES_K][TILES_N];
    if (HOISTED) {  // the compiler keeps the lane offsets out of the K loop
      load_a_hoisted(a_base, a_lane_offset(warp_row), warp_k, a);
      load_b_hoisted(b_base, b_lane_offset(warp_col), warp_k, b);
    } else {
      load_a_fragments<A_MATS>(a_base, warp_row, warp_k, a);
      load_b_fragments<B_MATS>(b_base, warp_col, warp_k, b);
    }
    mma_warp_tile(acc, a, b);
  }
}

// epilogue: D = f16(add.rn(mul.rn(alpha, acc), mul.rn(beta, C))), f16 pairs as 32-bit words.
// Lane l holds pairs at rows l / 4 and l / 4 + 8, columns 2 * (l % 4) and + 1 of each tile.
__device__ __forceinline__ void epilogue(const uint32_t (&acc)[TILES_M][TILES_N][ACC_REGS],
                                         const uint16_t* C, uint16_t* D, float alpha, float beta,
                                         int N, int row0, int col0) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int m = 0; m < TILES_M; m++) {
#pragma unroll
    for (int n = 0; n < TILES_N; n++) {
#pragma unroll
      for (int pair = 0; pair < 2; pair++) {
        const uint64_t at = (uint64_t)(row0 + m * 16 + lane / 4 + 8 * pair) * N +
                            col0 + n * 8 + lane % 4 * 2;
        const uint32_t c = ld_global_b32(C + at);
#if ACC_F32
        const float x0 = __uint_as_float(acc[m][n][2 * pair]);
        const float x1 = __uint_as_float(acc[m][n][2 * pair + 1]);
#else
        const float x0 = f16_to_f32(acc[m][n][pair] & 0xffffu);
        const float x1 = f16_to_f32(acc[m][n][pair] >> 16);
#endif
        st_global_b32(D + at, epilogue_pair(x0, x1, c, alpha, beta));
      }
    }
  }
}

// ---- the two schedules -------------------------------------------------------------------------

extern __shared__ __align__(128) unsigned char gemm_shared[];

// kernel1 and kernel2 (tcsim/kernels/kernel1.py): copy, sync, compute, sync.
__device__ __forceinline__ void gemm_tiled(GEMM_PARAMS) {
  const uint32_t a_base = shared_address(gemm_shared), b_base = a_base + BM * BK * 2;
  const int warp = threadIdx.x / 32, warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const uint16_t* A_block = A + (uint64_t)(blockIdx.y + PLANT_TILE_OFFSET) * BM * K;
  const uint16_t* B_block = B + (uint64_t)blockIdx.x * BN;
  uint32_t acc[TILES_M][TILES_N][ACC_REGS] = {};
  for (int k = 0; k < K / BK; k++) {
    uint32_t ra[A_PER_THREAD][4], rb[B_PER_THREAD][4];
    load_tile<BM, BK>(A_block + k * BK, K, ra);
    store_tile<0, BM, BK>(a_base, ra);
    load_tile<BK, BN>(B_block + (uint64_t)k * BK * N, N, rb);
    store_tile<1, BK, BN>(b_base, rb);
    __syncthreads();
    compute_block_tile<2, 1, false>(acc, a_base + 8 * PLANT_UNALIGNED_LDMATRIX, b_base, warp_row,
                                    warp_col);
#if !PLANT_MISSING_BARRIER
    __syncthreads();
#endif
  }
  epilogue(acc, C, D, alpha, beta, N, blockIdx.y * BM + warp_row * WM,
           blockIdx.x * BN + warp_col * WN);
}

// kernel3, kernel4, kernel5 (tcsim/kernels/kernel3.py): the next tile's loads go to registers
// before the compute, and to shared memory after it. MATS: ldmatrix width; HOISTED: kernel4's
// index math.
template <int A_MATS, int B_MATS, bool HOISTED>
__device__ __forceinline__ void gemm_overlapped(GEMM_PARAMS) {
  const uint32_t a_base = shared_address(gemm_shared), b_base = a_base + BM * BK * 2;
  const int warp = threadIdx.x / 32, warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const uint16_t* A_block = A + (uint64_t)blockIdx.y * BM * K;
  const uint16_t* B_block = B + (uint64_t)blockIdx.x * BN;
  uint32_t acc[TILES_M][TILES_N][ACC_REGS] = {};
  uint32_t ra[A_PER_THREAD][4], rb[B_PER_THREAD][4];
  load_tile<BM, BK>(A_block, K, ra);
  store_tile<0, BM, BK>(a_base, ra);
  load_tile<BK, BN>(B_block, N, rb);
  store_tile<1, BK, BN>(b_base, rb);
  // Every K tile but the last: loads of the next, compute, stores; the last only computes.
  for (int k = 0; k < K / BK - 1; k++) {
    __syncthreads();
    load_tile<BM, BK>(A_block + (k + 1) * BK, K, ra);
    load_tile<BK, BN>(B_block + (uint64_t)(k + 1) * BK * N, N, rb);
    compute_block_tile<A_MATS, B_MATS, HOISTED>(acc, a_base, b_base, warp_row, warp_col);
    __syncthreads();
    store_tile<0, BM, BK>(a_base, ra);
    store_tile<1, BK, BN>(b_base, rb);
  }
  __syncthreads();
  compute_block_tile<A_MATS, B_MATS, HOISTED>(acc, a_base, b_base, warp_row, warp_col);
  epilogue(acc, C, D, alpha, beta, N, blockIdx.y * BM + warp_row * WM,
           blockIdx.x * BN + warp_col * WN);
}

// ---- kernel6 (tcsim/kernels/kernel6.py): m16n8k16 and a cp.async pipeline ---------------------

__device__ __forceinline__ void cp_async_16(uint32_t addr, const uint16_t* p) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : : "r"(addr), "l"(p) : "memory");
}
__device__ __forceinline__ void cp_async_commit_group() {
  asm volatile("cp.async.commit_group;" : : : "memory");
}
template <int PENDING>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;" : : "n"(PENDING) : "memory");
}

// copy_tile_async: each of this thread's vectors straight from global to its shared place.
template <int OPERAND, int ROWS, int COLS>
__device__ __forceinline__ void copy_tile_async(const uint16_t* tile, int ld, uint32_t base) {
#pragma unroll
  for (int i = 0; i < ROWS * COLS / 8 / THREADS; i++) {
    const int v = i * THREADS + threadIdx.x;
    const int row = v / (COLS / 8), col = v % (COLS / 8) * 8;
    cp_async_16(base + 2 * (OPERAND == 0 ? a_offset(row, col) : b_offset(row, col)),
                tile + (uint64_t)row * ld + col);
  }
}

// load_a_fragments<4> for m16n8k16: one ldmatrix.x4 is one A fragment (16 x 16).
__device__ __forceinline__ void load_a_k16(uint32_t base, int warp_row, int warp_k,
                                           uint32_t (&a)[TILES_M][TILES_K][4]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int m = 0; m < TILES_M; m++) {
#pragma unroll
    for (int t = 0; t < TILES_K; t++) {
      const int row = warp_row * WM + m * 16 + lane % 16;
      const int col = warp_k * WK + t * 16 + lane / 16 * 8;
      ldmatrix_x4(a[m][t][0], a[m][t][1], a[m][t][2], a[m][t][3], base + 2 * a_offset(row, col));
    }
  }
}

// load_b_fragments<4> for m16n8k16: one ldmatrix.x4.trans gives two N tiles' fragments;
// lanes 0-15 supply the 16 K rows of the first, lanes 16-31 those of the second.
__device__ __forceinline__ void load_b_k16(uint32_t base, int warp_col, int warp_k,
                                           uint32_t (&b)[TILES_K][TILES_N][2]) {
  const int lane = threadIdx.x % 32, within = lane / 8 % 4;
#pragma unroll
  for (int t = 0; t < TILES_K; t++) {
#pragma unroll
    for (int g = 0; g < TILES_N / 2; g++) {
      const int row = warp_k * WK + t * 16 + within % 2 * 8 + lane % 8;
      const int col = warp_col * WN + g * 16 + within / 2 * 8;
      ldmatrix_x4_trans(b[t][2 * g][0], b[t][2 * g][1], b[t][2 * g + 1][0], b[t][2 * g + 1][1],
                        base + 2 * b_offset(row, col));
    }
  }
}

__device__ __forceinline__ void mma_m16n8k16(uint32_t (&acc)[ACC_REGS], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2]) {
#if ACC_F32
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
               "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
               : "+r"(acc[0]), "+r"(acc[1])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// compute_pipelined: register double buffering over the WK steps of one stage.
__device__ __forceinline__ void compute_pipelined(uint32_t (&acc)[TILES_M][TILES_N][ACC_REGS],
                                                  uint32_t a_base, uint32_t b_base,
                                                  int warp_row, int warp_col) {
  uint32_t a[2][TILES_M][TILES_K][4], b[2][TILES_K][TILES_N][2];
  load_a_k16(a_base, warp_row, 0, a[0]);
  load_b_k16(b_base, warp_col, 0, b[0]);
#pragma unroll
  for (int warp_k = 0; warp_k < BK / WK; warp_k++) {
    if (warp_k + 1 < BK / WK) {
      load_a_k16(a_base, warp_row, warp_k + 1, a[(warp_k + 1) % 2]);
      load_b_k16(b_base, warp_col, warp_k + 1, b[(warp_k + 1) % 2]);
    }
#pragma unroll
    for (int k = 0; k < TILES_K; k++) {
#pragma unroll
      for (int n = 0; n < TILES_N; n++) {
#pragma unroll
        for (int m = 0; m < TILES_M; m++)
          mma_m16n8k16(acc[m][n], a[warp_k % 2][m][k], b[warp_k % 2][k][n]);
      }
    }
  }
}

__device__ __forceinline__ void copy_stage_async(const uint16_t* A_block, const uint16_t* B_block,
                                                 int K, int N, int k, uint32_t smem) {
  const uint32_t base = smem + (k % STAGES) * STAGE_BYTES;
  copy_tile_async<0, BM, BK>(A_block + k * BK, K, base);
  copy_tile_async<1, BK, BN>(B_block + (uint64_t)k * BK * N, N, base + BM * BK * 2);
}

__device__ __forceinline__ void gemm_pipelined(GEMM_PARAMS) {
  const uint32_t smem = shared_address(gemm_shared);
  const int warp = threadIdx.x / 32, warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const uint16_t* A_block = A + (uint64_t)blockIdx.y * BM * K;
  const uint16_t* B_block = B + (uint64_t)blockIdx.x * BN;
  const int n = K / BK;  // >= STAGES - 1 (GemmParams.check_problem)
  uint32_t acc[TILES_M][TILES_N][ACC_REGS] = {};
#pragma unroll
  for (int k = 0; k < STAGES - 1; k++) {  // prologue: fill all stages but one
    copy_stage_async(A_block, B_block, K, N, k, smem);
    cp_async_commit_group();
  }
  for (int k = 0; k < n - STAGES + 1; k++) {  // steady state
    cp_async_wait_group<STAGES - 2 + PLANT_EARLY_WAIT>();
    __syncthreads();
    copy_stage_async(A_block, B_block, K, N, k + STAGES - 1, smem);
    cp_async_commit_group();
    const uint32_t base = smem + (k % STAGES) * STAGE_BYTES;
    compute_pipelined(acc, base, base + BM * BK * 2, warp_row, warp_col);
  }
#pragma unroll
  for (int t = 0; t < STAGES - 1; t++) {  // drain
    const int k = n - STAGES + 1 + t;
    cp_async_wait_group<STAGES - 2 + PLANT_EARLY_WAIT>();
    __syncthreads();
    cp_async_commit_group();
    const uint32_t base = smem + (k % STAGES) * STAGE_BYTES;
    compute_pipelined(acc, base, base + BM * BK * 2, warp_row, warp_col);
  }
  epilogue(acc, C, D, alpha, beta, N, blockIdx.y * BM + warp_row * WM,
           blockIdx.x * BN + warp_col * WN);
}
