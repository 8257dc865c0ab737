// Microbenchmarks for the H100's speed-of-light constants (benchmarks/bench_gpu_constants.py).
//
// Every kernel writes one record of five u64 per block, from thread 0: {smid, clock64 at start,
// clock64 at end, globaltimer at start, globaltimer at end}. Start and end sit behind
// __syncthreads, so a block's span covers all its warps; the host groups records by SM and
// divides the work an SM did by (its last end - its first start) in that SM's own clock.
// Every loop's result is folded into a value stored only when it equals an impossible
// constant, so neither NVVM nor ptxas can drop the instructions under test; the instructions
// themselves are inline PTX (asm volatile; shared loads as ld.volatile.shared, which is still a
// plain LDS in SASS), and the loops that revisit addresses are kept rolled (unroll 1), so that
// ptxas cannot merge one iteration's loads with the next's.
typedef unsigned int u32;
typedef unsigned long long u64;

#define IMPOSSIBLE 0x7f812345u
#include "bench_clock.cuh"

// Block-wide start: all warps arrive, then thread 0 reads the clocks (kept in shared memory,
// not in every thread's registers).
__device__ __shared__ u64 block_clock0[2];

__device__ __forceinline__ void block_start() {
  __syncthreads();
  if (threadIdx.x == 0) {
    block_clock0[0] = clock_now();
    block_clock0[1] = global_now();
  }
}

// Block-wide end: all warps have issued their loops; thread 0 writes the record.
__device__ __forceinline__ void block_end(u64* rec) {
  __syncthreads();
  write_record(rec, block_clock0[0], block_clock0[1]);
}

__device__ __forceinline__ void sink_if_impossible(u32* sink, u32 x) {
  if (x == IMPOSSIBLE) sink[0] = x;
}

// ---------------------------------------------------------------------------------------------
// a. SM clock under load: 8 independent FFMA chains per thread.

extern "C" __global__ void __launch_bounds__(256) clock_ffma(u64* rec, u32* sink, int iters,
                                                            float m, float a) {
  float v[8];
#pragma unroll
  for (int c = 0; c < 8; c++) v[c] = (float)(threadIdx.x + c) * 1e-3f;
  block_start();
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int c = 0; c < 8; c++) asm("fma.rn.f32 %0, %0, %1, %2;" : "+f"(v[c]) : "f"(m), "f"(a));
  }
  block_end(rec);
  u32 x = 0;
#pragma unroll
  for (int c = 0; c < 8; c++) x ^= __float_as_uint(v[c]);
  sink_if_impossible(sink, x);
}

// ---------------------------------------------------------------------------------------------
// b. mma.sync throughput: registers only, MMA_CHAINS independent accumulators per warp, one mma
// into each per iteration. Inputs: A near 1.0, B tiny, so the accumulators stay finite.

#define MMA_CHAINS 8

#define MMA_ACC4(PTX)                                                                          \
  asm volatile(PTX " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"          \
               : "+r"(acc[c][0]), "+r"(acc[c][1]), "+r"(acc[c][2]), "+r"(acc[c][3])            \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
#define MMA_ACC2(PTX)                                                                          \
  asm volatile(PTX " {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"                          \
               : "+r"(acc[c][0]), "+r"(acc[c][1])                                              \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
// m16n8k8 f16: A is two registers, B one.
#define MMA8_ACC4(PTX)                                                                         \
  asm volatile(PTX " {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"                      \
               : "+r"(acc[c][0]), "+r"(acc[c][1]), "+r"(acc[c][2]), "+r"(acc[c][3])            \
               : "r"(a[0]), "r"(a[1]), "r"(b[0]))
#define MMA8_ACC2(PTX)                                                                         \
  asm volatile(PTX " {%0, %1}, {%2, %3}, {%4}, {%0, %1};"                                      \
               : "+r"(acc[c][0]), "+r"(acc[c][1])                                              \
               : "r"(a[0]), "r"(a[1]), "r"(b[0]))

// NAME: kernel name; NACC: accumulator registers; A0/B0: input bit patterns; STEP: one mma.
#define MMA_TPUT_KERNEL(NAME, NACC, A0, B0, STEP)                                              \
  extern "C" __global__ void __launch_bounds__(256) NAME(u64* rec, u32* sink, int iters) {     \
    u32 a[4] = {(A0) ^ (threadIdx.x & 1), (A0), (A0), (A0)};                                   \
    u32 b[2] = {(B0), (B0)};                                                                   \
    u32 acc[MMA_CHAINS][NACC] = {};                                                            \
    block_start();                                                                             \
    for (int i = 0; i < iters; i++) {                                                          \
      _Pragma("unroll") for (int c = 0; c < MMA_CHAINS; c++) { STEP; }                         \
    }                                                                                          \
    block_end(rec);                                                                            \
    u32 x = 0;                                                                                 \
    _Pragma("unroll") for (int c = 0; c < MMA_CHAINS; c++)                                     \
        _Pragma("unroll") for (int r = 0; r < NACC; r++) x ^= acc[c][r];                       \
    sink_if_impossible(sink, x);                                                               \
  }

#define F16_ONES 0x3c003c00u
#define F16_TINY 0x00010001u
#define BF16_ONES 0x3f803f80u
#define BF16_TINY 0x00010001u
#define F32_ONE 0x3f800000u
#define F32_TINY 0x00800000u

MMA_TPUT_KERNEL(mma_tput_m16n8k16_f16_f32, 4, F16_ONES, F16_TINY,
                MMA_ACC4("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"))
MMA_TPUT_KERNEL(mma_tput_m16n8k16_f16_f16, 2, F16_ONES, F16_TINY,
                MMA_ACC2("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"))
MMA_TPUT_KERNEL(mma_tput_m16n8k8_f16_f32, 4, F16_ONES, F16_TINY,
                MMA8_ACC4("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"))
MMA_TPUT_KERNEL(mma_tput_m16n8k8_f16_f16, 2, F16_ONES, F16_TINY,
                MMA8_ACC2("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16"))
MMA_TPUT_KERNEL(mma_tput_m16n8k8_tf32_f32, 4, F32_ONE, F32_TINY,
                MMA_ACC4("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"))
MMA_TPUT_KERNEL(mma_tput_m16n8k16_bf16_f32, 4, BF16_ONES, BF16_TINY,
                MMA_ACC4("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"))

// ---------------------------------------------------------------------------------------------
// c. mma.sync latency: one warp, one chain (each mma's D is the next one's C). Launch 1 x 32.

#define MMA_LAT_UNROLL 8

#define MMA_LAT_KERNEL(NAME, A0, B0, STEP)                                                     \
  extern "C" __global__ void NAME(u64* rec, u32* sink, int iters) {                            \
    u32 a[4] = {(A0) ^ (threadIdx.x & 1), (A0), (A0), (A0)};                                   \
    u32 b[2] = {(B0), (B0)};                                                                   \
    u32 acc[1][4] = {};                                                                        \
    const int c = 0;                                                                           \
    block_start();                                                                             \
    for (int i = 0; i < iters; i++) {                                                          \
      _Pragma("unroll") for (int u = 0; u < MMA_LAT_UNROLL; u++) { STEP; }                     \
    }                                                                                          \
    sink_if_impossible(sink, acc[0][0] ^ acc[0][1] ^ acc[0][2] ^ acc[0][3]);                   \
    block_end(rec);                                                                            \
  }

MMA_LAT_KERNEL(mma_lat_m16n8k16_f16_f32, F16_ONES, F16_TINY,
               MMA_ACC4("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"))
MMA_LAT_KERNEL(mma_lat_m16n8k8_f16_f32, F16_ONES, F16_TINY,
               MMA8_ACC4("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"))

// ---------------------------------------------------------------------------------------------
// d. Shared-memory throughput. Launch SMs x 4 blocks of 256 threads (32 warps per SM). Each
// iteration issues SMEM_U independent accesses per thread at immediate offsets from one base
// that alternates between two halves of the buffer (so no access is loop-invariant). Lane
// addresses: lane*4 (b32, 1 wavefront), lane*16 (v4 and ldmatrix x4, 4 wavefronts), lane*32
// (b32, banks 0/8/16/24 each hit by 8 lanes: 8 wavefronts). Rows are ROW bytes apart.

#define SMEM_U 8

__device__ __forceinline__ u32 lds32(u32 addr) {
  u32 v;
  asm volatile("ld.volatile.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}

__device__ __forceinline__ u32 lds128(u32 addr) {
  u32 v0, v1, v2, v3;
  asm volatile("ld.volatile.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(addr));
  return v0 ^ v1 ^ v2 ^ v3;
}

__device__ __forceinline__ u32 ldsm_x4(u32 addr) {
  u32 v0, v1, v2, v3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(addr));
  return v0 ^ v1 ^ v2 ^ v3;
}

__device__ __forceinline__ void sts128(u32 addr, u32 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v), "r"(v), "r"(v),
               "r"(v) : "memory");
}

__device__ __forceinline__ void fill_shared(u32* buf, int words) {
  for (int j = threadIdx.x; j < words; j += blockDim.x) buf[j] = (u32)j * 2654435761u;
}

// LOAD: lds32, lds128 or ldsm_x4; LANE_BYTES: a lane's offset; ROW: bytes between accesses.
#define SMEM_LOAD_KERNEL(NAME, LOAD, LANE_BYTES, ROW)                                          \
  extern "C" __global__ void __launch_bounds__(256, 4) NAME(u64* rec, u32* sink, int iters) {  \
    __shared__ __align__(128) u32 buf[2 * SMEM_U * (ROW) / 4];                                 \
    fill_shared(buf, 2 * SMEM_U * (ROW) / 4);                                                  \
    const u32 base = (u32)__cvta_generic_to_shared(buf) + (threadIdx.x & 31) * (LANE_BYTES);   \
    u32 x = 0;                                                                                 \
    block_start();                                                                             \
    _Pragma("unroll 1") for (int i = 0; i < iters; i++) {                                      \
      const u32 half = base + (u32)(i & 1) * (SMEM_U * (ROW));                                 \
      u32 v[SMEM_U];                                                                           \
      _Pragma("unroll") for (int k = 0; k < SMEM_U; k++) v[k] = LOAD(half + k * (ROW));        \
      _Pragma("unroll") for (int k = 0; k < SMEM_U; k++) x ^= v[k];                            \
    }                                                                                          \
    block_end(rec);                                                                            \
    sink_if_impossible(sink, x);                                                               \
  }

SMEM_LOAD_KERNEL(smem_ld32, lds32, 4, 128)
SMEM_LOAD_KERNEL(smem_ld128, lds128, 16, 512)
SMEM_LOAD_KERNEL(smem_ldsm_x4, ldsm_x4, 16, 512)
SMEM_LOAD_KERNEL(smem_ld32_conflict8, lds32, 32, 1024)

extern "C" __global__ void __launch_bounds__(256, 4) smem_st128(u64* rec, u32* sink, int iters) {
  __shared__ __align__(128) u32 buf[2 * SMEM_U * 512 / 4];
  fill_shared(buf, 2 * SMEM_U * 512 / 4);
  const u32 base = (u32)__cvta_generic_to_shared(buf) + (threadIdx.x & 31) * 16;
  block_start();
#pragma unroll 1
  for (int i = 0; i < iters; i++) {
    const u32 half = base + (u32)(i & 1) * (SMEM_U * 512);
#pragma unroll
    for (int k = 0; k < SMEM_U; k++) sts128(half + k * 512, (u32)i);
  }
  block_end(rec);
  sink_if_impossible(sink, buf[threadIdx.x]);
}

// ---------------------------------------------------------------------------------------------
// e. Shared-memory latency: one thread chases SMEM_CHASE_WORDS words, each holding the shared
// address of the next (stride 33 words, coprime to the count). Launch 1 x 32.

#define SMEM_CHASE_WORDS 1024
#define CHASE_UNROLL 8

extern "C" __global__ void smem_chase(u64* rec, u32* sink, int iters) {
  __shared__ __align__(128) u32 buf[SMEM_CHASE_WORDS];
  const u32 base = (u32)__cvta_generic_to_shared(buf);
  for (int j = threadIdx.x; j < SMEM_CHASE_WORDS; j += blockDim.x)
    buf[j] = base + 4u * (u32)((j + 33) % SMEM_CHASE_WORDS);
  u32 p = base;
  block_start();
  if (threadIdx.x == 0) {
    for (int i = 0; i < iters; i++) {
#pragma unroll
      for (int u = 0; u < CHASE_UNROLL; u++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p));
    }
  }
  sink_if_impossible(sink, p);
  block_end(rec);
}

// ---------------------------------------------------------------------------------------------
// f. Global-memory latency: one thread chases 64-bit pointers that the host laid out (each
// node holds the address of the next). `warm` untimed steps, then `iters * CHASE_UNROLL` timed
// ones. .cg bypasses L1 (L2 or DRAM; SASS LDG.E.64.STRONG.GPU); plain ld.global (LDG.E.64)
// and .ca (LDG.E.64.STRONG.SM on sm_90) are cached in L1. Launch 1 x 32.

#define GLOBAL_CHASE_KERNEL(NAME, PTX)                                                         \
  extern "C" __global__ void NAME(u64* rec, u32* sink, u64 start, int warm, int iters) {       \
    u64 p = start;                                                                             \
    if (threadIdx.x == 0) {                                                                    \
      for (int s = 0; s < warm; s++) asm volatile(PTX " %0, [%0];" : "+l"(p)::"memory");       \
    }                                                                                          \
    block_start();                                                                             \
    if (threadIdx.x == 0) {                                                                    \
      for (int i = 0; i < iters; i++) {                                                        \
        _Pragma("unroll") for (int u = 0; u < CHASE_UNROLL; u++)                               \
            asm volatile(PTX " %0, [%0];" : "+l"(p)::"memory");                                \
      }                                                                                        \
    }                                                                                          \
    sink_if_impossible(sink, (u32)p ^ (u32)(p >> 32));                                         \
    block_end(rec);                                                                            \
  }

GLOBAL_CHASE_KERNEL(global_chase_cg, "ld.global.cg.u64")
GLOBAL_CHASE_KERNEL(global_chase_ca, "ld.global.ca.u64")
GLOBAL_CHASE_KERNEL(global_chase, "ld.global.u64")

// ---------------------------------------------------------------------------------------------
// g. Bandwidth: grid-stride loops of 16-byte accesses, READ_U independent loads per thread
// per step (a main loop without bounds checks, then a tail of single loads). At most 32
// registers (launch bounds 256 x 8), so SMs x 8 blocks of 256 threads are all resident at once.

#define READ_U 4

__device__ __forceinline__ void ldg_cg_v4(const u32* p, u32& v0, u32& v1, u32& v2, u32& v3) {
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "l"(p));
}

__device__ __forceinline__ u32 ldg_cg_xor(const u32* p) {
  u32 v0, v1, v2, v3;
  ldg_cg_v4(p, v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

__device__ __forceinline__ u32 ldg_xor(const u32* p) {
  u32 v0, v1, v2, v3;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "l"(p));
  return v0 ^ v1 ^ v2 ^ v3;
}

__device__ __forceinline__ u32 ldg_ca_xor(const u32* p) {
  u32 v0, v1, v2, v3;
  asm volatile("ld.global.ca.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "l"(p));
  return v0 ^ v1 ^ v2 ^ v3;
}

// Reads nvec 16-byte vectors of buf, `passes` times. L2: a 16 MB buffer, many passes, after
// warm-up launches; DRAM: a 2 GiB buffer, one pass.
extern "C" __global__ void __launch_bounds__(256, 8) global_read_cg(u64* rec, u32* sink,
                                                                   const u32* buf, u64 nvec,
                                                                   int passes) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u32 x = 0;
  block_start();
  for (int p = 0; p < passes; p++) {
    u64 i = first;
    for (; i + (READ_U - 1) * stride < nvec; i += READ_U * stride) {
      u32 v[READ_U];
#pragma unroll
      for (int k = 0; k < READ_U; k++) v[k] = ldg_cg_xor(buf + 4 * (i + k * stride));
#pragma unroll
      for (int k = 0; k < READ_U; k++) x ^= v[k];
    }
    for (; i < nvec; i += stride) x ^= ldg_cg_xor(buf + 4 * i);
  }
  block_end(rec);
  sink_if_impossible(sink, x);
}

// Copies nvec 16-byte vectors from src to dst.
extern "C" __global__ void __launch_bounds__(256, 8) global_copy(u64* rec, const u32* src,
                                                                u32* dst, u64 nvec) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  block_start();
  u64 i = first;
  for (; i + (READ_U - 1) * stride < nvec; i += READ_U * stride) {
    u32 v[READ_U][4];
#pragma unroll
    for (int k = 0; k < READ_U; k++)
      ldg_cg_v4(src + 4 * (i + k * stride), v[k][0], v[k][1], v[k][2], v[k][3]);
#pragma unroll
    for (int k = 0; k < READ_U; k++)
      asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst + 4 * (i + k * stride)),
                   "r"(v[k][0]), "r"(v[k][1]), "r"(v[k][2]), "r"(v[k][3]) : "memory");
  }
  for (; i < nvec; i += stride) {
    u32 v0, v1, v2, v3;
    ldg_cg_v4(src + 4 * i, v0, v1, v2, v3);
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst + 4 * i), "r"(v0),
                 "r"(v1), "r"(v2), "r"(v3) : "memory");
  }
  block_end(rec);
}

// L1 bandwidth: every block reads the same 16 KB (4 rows of 256 threads x 16 bytes), all four
// rows per iteration: two at immediate offsets from a pointer that alternates between the
// buffer's halves with i, two from the other half (no load is loop-invariant). Launch SMs x 4
// blocks of 256 threads; after the first iteration every load hits L1. Two spellings: plain
// ld.global (SASS LDG.E.128, the default caching) and ld.global.ca (on sm_90 ptxas emits
// LDG.E.128.STRONG.SM for it, as for ld.relaxed.cta).
#define L1_ROW_WORDS 1024

#define L1_READ_KERNEL(NAME, LOAD)                                                             \
  extern "C" __global__ void __launch_bounds__(256, 4) NAME(u64* rec, u32* sink,               \
                                                            const u32* buf, int iters) {       \
    const u32* p = buf + 4 * threadIdx.x;                                                      \
    u32 x = 0;                                                                                 \
    block_start();                                                                             \
    _Pragma("unroll 1") for (int i = 0; i < iters; i++) {                                      \
      const u32* q = p + 2 * L1_ROW_WORDS * (i & 1);                                           \
      const u32* r = p + 2 * L1_ROW_WORDS * ((i & 1) ^ 1);                                     \
      const u32 v0 = LOAD(q), v1 = LOAD(q + L1_ROW_WORDS);                                     \
      const u32 v2 = LOAD(r), v3 = LOAD(r + L1_ROW_WORDS);                                     \
      x ^= v0 ^ v1 ^ v2 ^ v3;                                                                  \
    }                                                                                          \
    block_end(rec);                                                                            \
    sink_if_impossible(sink, x);                                                               \
  }

L1_READ_KERNEL(l1_read, ldg_xor)
L1_READ_KERNEL(l1_read_ca, ldg_ca_xor)
