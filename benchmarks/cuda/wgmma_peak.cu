// The wgmma throughput ceiling (sm_90a): wgmma.mma_async m64n(PEAK_N)k16 from one shared tile
// (PEAK_N 64 to 256 in steps of 32, the N a Hopper twin's consumer may own; 256 by default), no
// copies, no barriers. Each block is WARPGROUPS warpgroups, each issuing kernel7's pattern
// (4 wgmma into one accumulator per group, commit, wait until one group is pending) with
// shared memory that never changes: zeros, or with `random` set f16 values of magnitude in
// [1/16, 1/8) with random signs and mantissas (a hash of the index), which toggle the tensor
// cores' inputs as a GEMM's data does and so draw a GEMM's power. Launch 132 blocks of 256
// threads (128 a warpgroup, up to PEAK_THREADS) with 40 KiB of dynamic shared memory
// (benchmarks/bench_gpu.py; with a record array, benchmarks/bench_gpu_constants.py). The result
// is stored only when it equals an impossible value, so the compiler must keep every wgmma.
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#include "bench_clock.cuh"
#ifndef PEAK_THREADS
#define PEAK_THREADS 256  // the block's most threads: 128 a warpgroup
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(TCSIM_SM90A)
#include "wgmma_issue.cuh"

extern __shared__ __align__(1024) unsigned char peak_shared[];

// The descriptors of kernel7's stage layout: A 64 x 64 K-major, B 64 x PEAK_N MN-major (boxes
// of 64 columns, 8 KiB apart), both 128-byte swizzled; K step kk moves 32 bytes along A's rows and
// 16 rows down B. For the widths that are not multiples of 64 the rate alone counts: the last box
// is read half (the data are random either way).
__device__ __forceinline__ uint64_t peak_descriptor(uint32_t address, uint32_t leading,
                                                    uint32_t stride, uint64_t swizzle) {
  return (uint64_t)((address & 0x3FFFF) >> 4) | (uint64_t)((leading & 0x3FFFF) >> 4) << 16 |
         (uint64_t)((stride & 0x3FFFF) >> 4) << 32 | swizzle << 62;
}

// B's boxes: 64 columns (rows of 128 bytes, the 128-byte swizzle) or, with PEAK_B_BOX 32, the
// layout of the Hopper twins' tiles 96 wide (rows of 64 bytes, the 64-byte swizzle, hopper.cuh's
// COL_BOX).
#ifndef PEAK_B_BOX
#define PEAK_B_BOX 64
#endif
#if PEAK_B_BOX != 64 && PEAK_B_BOX != 32
#error "wgmma_peak.cu: PEAK_B_BOX must be 64 or 32"
#endif
#define PEAK_B_ROW_BYTES (PEAK_B_BOX * 2)
#define PEAK_B_SWIZZLE (PEAK_B_BOX == 64 ? 1ull : 2ull)  // the descriptor's mode: 128B or 64B

#ifndef PEAK_N
#define PEAK_N 256
#endif
#if PEAK_N < 64 || PEAK_N > 256 || PEAK_N % 32 != 0
#error "wgmma_peak.cu: PEAK_N must be 64, 96, 128, 160, 192, 224 or 256"
#endif
#define PEAK_CALL(n, kind) wgmma_m64n##n##k16_##kind
#define PEAK_WGMMA(n, kind) PEAK_CALL(n, kind)  // expands PEAK_N first

// Two f16 of magnitude [1/16, 1/8), signs and mantissas from a hash of i.
__device__ __forceinline__ uint32_t random_f16x2(uint32_t i) {
  uint32_t h = i * 0x9E3779B1u;
  h ^= h >> 15;
  h *= 0x85EBCA77u;
  h ^= h >> 13;
  return (h & 0x83FF83FFu) | 0x2C002C00u;  // exponent 11: 2^-4 x (1 + mantissa / 1024)
}

// KIND: 0 f16 in, f32 accumulators; 1 f16 in, f16 accumulators; 2 bf16 in (the same bits read
// as bf16: magnitudes near 2^-39, normal), f32 accumulators.
template <int KIND, typename Acc, int REGS>
__device__ __forceinline__ void peak_loop(Acc (&acc)[REGS], int iterations, int random,
                                          uint64_t* rec) {
  uint32_t base;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }"
      : "=r"(base) : "l"(peak_shared));
  for (int i = threadIdx.x; i < 40 * 1024 / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(peak_shared)[i] = random ? random_f16x2(i) : 0;
  asm volatile("fence.proxy.async.shared::cta;" : : : "memory");  // wgmma reads them async
  __syncthreads();
  const uint64_t clock0 = clock_now(), global0 = global_now();
  for (int i = 0; i < iterations; i++) {
    asm volatile("wgmma.fence.sync.aligned;" : : : "memory");
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const uint64_t a = peak_descriptor(base + kk * 32, 16, 1024, 1);
      const uint64_t b = peak_descriptor(base + 8192 + kk * 16 * PEAK_B_ROW_BYTES,
                                         64 * PEAK_B_ROW_BYTES, 8 * PEAK_B_ROW_BYTES,
                                         PEAK_B_SWIZZLE);
      if constexpr (KIND == 0) PEAK_WGMMA(PEAK_N, f32)(acc, a, b, 1);
      else if constexpr (KIND == 1) PEAK_WGMMA(PEAK_N, f16)(acc, a, b, 1);
      else PEAK_WGMMA(PEAK_N, bf16)(acc, a, b, 1);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" : : : "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" : : : "memory");
  __syncthreads();
  write_record(rec, clock0, global0);
}
#endif

// Three kernels, each reducing its accumulators in their own type: reading the f32 accumulators
// as bits (__float_as_uint) in a shared template made ptxas inject warpgroup.arrive (C7519)
// and a wait after every wgmma (seen in the SASS with nvcc 13), which serializes them.
extern "C" __global__ void __launch_bounds__(PEAK_THREADS, 1)
    wgmma_peak_f32(uint32_t* out, int iterations, int random, uint64_t* rec) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(TCSIM_SM90A)
  float acc[PEAK_N / 2] = {};
  peak_loop<0>(acc, iterations, random, rec);
  float x = 0;
  for (int r = 0; r < PEAK_N / 2; r++) x += acc[r];
  if (x == 12345.0f) out[0] = 1;
#else
  asm volatile("trap;");  // wgmma needs sm_90a
#endif
}

extern "C" __global__ void __launch_bounds__(PEAK_THREADS, 1)
    wgmma_peak_f16(uint32_t* out, int iterations, int random, uint64_t* rec) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(TCSIM_SM90A)
  uint32_t acc[PEAK_N / 4] = {};
  peak_loop<1>(acc, iterations, random, rec);
  uint32_t x = 0;
  for (int r = 0; r < PEAK_N / 4; r++) x ^= acc[r];
  if (x == 0x7f812345u) out[0] = x;
#else
  asm volatile("trap;");  // wgmma needs sm_90a
#endif
}

extern "C" __global__ void __launch_bounds__(PEAK_THREADS, 1)
    wgmma_peak_bf16(uint32_t* out, int iterations, int random, uint64_t* rec) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(TCSIM_SM90A)
  float acc[PEAK_N / 2] = {};
  peak_loop<2>(acc, iterations, random, rec);
  float x = 0;
  for (int r = 0; r < PEAK_N / 2; r++) x += acc[r];
  if (x == 12345.0f) out[0] = 1;
#else
  asm volatile("trap;");  // wgmma needs sm_90a
#endif
}
