// CUDA twin of tf32_puzzle (tcsim/kernels/tf32_puzzle.py): seed 004's tf32 GEMM as its Mojo
// source asks for it (Mojo GPU Puzzles, puzzle 33): warp 0 alone copies the tiles with
// cp.async.cg, fragments are read with 32-bit shared loads, the 32x32 f32 accumulator tile is
// a per-thread local array indexed by lane, and each mma loads C from it and stores D back.
// Every memory instruction is inline PTX so none is hoisted or merged.
// Launch: grid (N / BN, M / BM), 256 threads, BM*BK*4 + BK*BN*4 bytes of dynamic shared memory.
#ifndef BM
#define BM 128
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
#include "gemm_common.cuh"  // integer types, shared_address

#define WARPS_N (BN / WN)
#define THREADS (32 * (BM / WM) * WARPS_N)
#define MMA_M 16
#define MMA_N 8
#define MMA_K 8

extern __shared__ __align__(128) unsigned char puzzle_shared[];

__device__ __forceinline__ uint64_t local_address(const void *p) {
  uint64_t a;
  asm("cvta.to.local.u64 %0, %1;" : "=l"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ uint32_t lds(uint32_t addr) {
  uint32_t r;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(r) : "r"(addr) : "memory");
  return r;
}
__device__ __forceinline__ void ldl2(uint32_t &x, uint32_t &y, uint64_t addr) {
  asm volatile("ld.local.v2.f32 {%0, %1}, [%2];" : "=r"(x), "=r"(y) : "l"(addr) : "memory");
}
__device__ __forceinline__ void stl2(uint64_t addr, uint32_t x, uint32_t y) {
  asm volatile("st.local.v2.f32 [%0], {%1, %2};" : : "l"(addr), "r"(x), "r"(y) : "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS) tf32_puzzle(
    const float *__restrict__ A, const float *__restrict__ B, const float *__restrict__ C,
    float *__restrict__ D, float alpha, float beta, int M, int N, int K) {
  const uint32_t As = shared_address(puzzle_shared), Bs = As + BM * BK * 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_y = warp / WARPS_N, warp_x = warp % WARPS_N;
  const int g = lane / 4, t = lane % 4;  // the m16n8k8 tf32 fragments' group and thread
  float C_warp_accum[WM * WN];  // per thread, indexed by lane below: local memory
  const uint64_t acc = local_address(C_warp_accum);
  for (int i = 0; i < WM * WN * 4 / 16; i++)  // C_warp_accum[i, j] = 0.0
    asm volatile("st.local.v4.f32 [%0], {%1, %1, %1, %1};" : : "l"(acc + 16 * i), "f"(0.f)
                 : "memory");
  for (int k = 0; k < K / BK; k++) {
    __syncthreads();
    if (threadIdx.x < 32) {  // copy_dram_to_sram_async: threads beyond row_major(4, 8) return
      const int row = threadIdx.x / 8, vec = threadIdx.x % 8;
      for (int i = 0; i < BM / 4; i++)
        for (int j = 0; j < BK / 4 / 8; j++) {
          const int r = row + 4 * i, c = (vec + 8 * j) * 4;
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : :
                       "r"(As + 4 * (r * BK + c)),
                       "l"(A + ((uint64_t)blockIdx.y * BM + r) * K + k * BK + c) : "memory");
        }
      for (int i = 0; i < BK / 4; i++)
        for (int j = 0; j < BN / 4 / 8; j++) {
          const int r = row + 4 * i, c = (vec + 8 * j) * 4;
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" : :
                       "r"(Bs + 4 * (r * BN + c)),
                       "l"(B + ((uint64_t)k * BK + r) * N + blockIdx.x * BN + c) : "memory");
        }
    }
    asm volatile("cp.async.wait_all;" : : : "memory");  // async_copy_wait_all
    __syncthreads();
    for (int mk = 0; mk < BK / MMA_K; mk++)
      for (int mm = 0; mm < WM / MMA_M; mm++)
        for (int nn = 0; nn < WN / MMA_N; nn++) {
          const int ar = warp_y * WM + mm * MMA_M + g, ac = mk * MMA_K + t;
          uint32_t a[4], b[2], c[4];
          a[0] = lds(As + 4 * (ar * BK + ac));  // load_a: (g, t), (g + 8, t), (g, t + 4), ...
          a[1] = lds(As + 4 * ((ar + 8) * BK + ac));
          a[2] = lds(As + 4 * (ar * BK + ac + 4));
          a[3] = lds(As + 4 * ((ar + 8) * BK + ac + 4));
          const int br = mk * MMA_K + t, bc = warp_x * WN + nn * MMA_N + g;
          b[0] = lds(Bs + 4 * (br * BN + bc));  // load_b: (t, g), (t + 4, g)
          b[1] = lds(Bs + 4 * ((br + 4) * BN + bc));
          const uint64_t c_at = acc + 4 * ((mm * MMA_M + g) * WN + nn * MMA_N + 2 * t);
          ldl2(c[0], c[1], c_at);  // load_c
          ldl2(c[2], c[3], c_at + 4 * 8 * WN);
          asm volatile(
              "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
              "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
              : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
              : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
          stl2(c_at, c[0], c[1]);  // store_d
          stl2(c_at + 4 * 8 * WN, c[2], c[3]);
        }
  }
  for (int mm = 0; mm < WM / MMA_M; mm++)
    for (int nn = 0; nn < WN / MMA_N; nn++) {
      uint32_t c[4];
      const uint64_t c_at = acc + 4 * ((mm * MMA_M + g) * WN + nn * MMA_N + 2 * t);
      ldl2(c[0], c[1], c_at);
      ldl2(c[2], c[3], c_at + 4 * 8 * WN);
      float *d = D + ((uint64_t)blockIdx.y * BM + warp_y * WM + mm * MMA_M + g) * N +
                 blockIdx.x * BN + warp_x * WN + nn * MMA_N + 2 * t;
      asm volatile("st.global.v2.f32 [%0], {%1, %2};" : : "l"(d), "r"(c[0]), "r"(c[1])
                   : "memory");
      asm volatile("st.global.v2.f32 [%0], {%1, %2};" : : "l"(d + 8 * (uint64_t)N), "r"(c[2]),
                   "r"(c[3]) : "memory");
    }
}
