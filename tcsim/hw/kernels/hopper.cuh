// The building blocks of the Hopper twins (kernel7): TMA tile copies that complete on mbarriers,
// wgmma from shared memory through matrix descriptors, warp-specialized roles. One device
// function per instruction of tcsim/kernels/machine.py's Hopper part; every one is inline PTX.
//
// Compile-time constants (the twin gives defaults; tcsim.hw passes -D values from
// Kernel.defines): BM BN BK (block tile; BK * 2 bytes = one 128-byte swizzle row), STAGES,
// CONSUMERS (warpgroups issuing wgmma, each owning BM / CONSUMERS rows), ACC_F32,
// CONSUMER_REGISTERS and PRODUCER_REGISTERS (setmaxnreg), IN_BF16 (A and B bf16: wgmma
// .f32.bf16.bf16) and OUT_BF16 (C and D bf16; gemm_common.cuh).
//
// Any M, N, K (K and N multiples of 8): the tensor maps describe the true matrices, so TMA
// fills a box's part past the edge with zeros; the tile counts are ceil-divided and the
// epilogues store nothing past the edge (predicated, or clipped by the TMA store).
//
// The code exists only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL, or TCSIM_SM90A which tcsim.hw
// defines when NVRTC compiles for sm_90a); elsewhere the kernel is a trap, as CI compiles every
// twin for sm_80 and sm_90 too.
#pragma once
#include "gemm_common.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(TCSIM_SM90A)
#define TCSIM_HOPPER 1
#include "wgmma_issue.cuh"
#endif

#define WARPGROUP 128
#define THREADS (WARPGROUP * (CONSUMERS + 1))  // warpgroup 0 produces, the others consume
#define CONSUMER_M (BM / CONSUMERS)            // rows of D per consumer warpgroup (64)
#define A_STAGE_BYTES (BM * BK * 2)
#define B_STAGE_BYTES (BK * BN * 2)
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
// B's tile arrives in boxes of COL_BOX columns: 64 (rows of 128 bytes, the 128-byte swizzle)
// when BN is a multiple of 64, else 32 (rows of 64 bytes, the 64-byte swizzle: BN 96, 160,
// 224). The epilogues' chunks are as wide (tcsim.kernels.params.GemmParams.column_box).
#define COL_BOX (BN % 64 ? 32 : 64)
#define COL_BOX_BYTES (COL_BOX * 2)
#define COL_SWIZZLE_MODE (COL_BOX == 64 ? 1 : 2)  // the descriptor's: 128-byte or 64-byte
#define COL_SWIZZLE_BITS (COL_BOX == 64 ? 3 : 2)  // Swizzle<bits, 4, 3> on byte addresses
#define B_BOXES (BN / COL_BOX)
#define B_BOX_BYTES (BK * COL_BOX_BYTES)  // one box: BK rows of COL_BOX_BYTES
#define ACC_REGS (ACC_F32 ? BN / 2 : BN / 4)
#ifndef IN_BF16
#define IN_BF16 0
#endif
#if IN_BF16 && !ACC_F32
#error "hopper.cuh: bf16 inputs accumulate in f32 (ACC_F32 1)"
#endif
#if ACC_F32
typedef float acc_t;  // the accumulator registers keep their type end to end: a cast would add
#define ACC_CONSTRAINT "+f"  // moves between the wgmma, and ptxas then serializes them
#else
typedef uint32_t acc_t;  // f16x2
#define ACC_CONSTRAINT "+r"
#endif

// Planted bugs (tcsim.kernels.planted, docs/checks.md): each macro makes the change that
// kernel7's schedule makes for its `plant`.
#ifndef PLANT_SKIP_FIRST_WAITS  // consumers wait for a stage only from its second use on
#define PLANT_SKIP_FIRST_WAITS 0
#endif
#ifndef PLANT_EARLY_RELEASE  // consumers release a stage before its wgmma retired
#define PLANT_EARLY_RELEASE 0
#endif
#ifndef PLANT_SHORT_EXPECT_TX  // the full barrier expects one B box too few bytes
#define PLANT_SHORT_EXPECT_TX 0
#endif
#ifndef PLANT_DESCRIPTOR_SWIZZLE  // descriptors say 64-byte swizzle, A's tiles have 128
#define PLANT_DESCRIPTOR_SWIZZLE 0
#endif
// PLANT_NO_EDGE_FILL changes no device code: the host's tensor maps (tcsim.kernels.planted)
// describe A and B padded to whole tiles, so edge boxes read past the matrices, unfilled.
#ifndef PLANT_NO_STORE_WAIT  // kernel10 refills a buffer before its TMA store has read it
#define PLANT_NO_STORE_WAIT 0
#endif
#ifndef PLANT_SKIP_C_WAIT  // kernel10 reads C without waiting on its buffer's mbarrier
#define PLANT_SKIP_C_WAIT 0
#endif
#ifndef PLANT_NO_FENCE  // kernel10 issues the TMA store of D with no fence.proxy.async first
#define PLANT_NO_FENCE 0
#endif

// Thread-block clusters (GemmParams.cluster_m; kernel7.program mirrors them): CLUSTER_M
// persistent blocks computing vertically adjacent tiles of one block column share B's tile.
// Block rank r copies B's boxes r, r + CLUSTER_M, ... (round robin: 192 columns' three boxes
// go two to rank 0, one to rank 1) and multicasts them to every block of the cluster; a stage
// is refilled only once the consumers of every block released it. The host refuses what this
// code would get wrong (tcsim.kernels.params): tiles along M not a multiple of CLUSTER_M
// (tiles dropped), a grid that is not whole clusters, split-K.
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef CLUSTER_SHARE_B  // exploratory, not modeled: 0 copies all of B in each block
#define CLUSTER_SHARE_B 1
#endif
#if CLUSTER_M > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER_M, 1, 1)
#else
#define CLUSTER_DIMS
#endif

// A CUtensorMap (cuda.h): 128 opaque bytes, 64-byte aligned, built on the host by
// cuTensorMapEncodeTiled (tcsim/hw/memory/tma.py) and passed as a __grid_constant__ parameter.
struct __align__(64) TensorMap {
  unsigned long long opaque[16];
};

// kernel10: C arrives and D leaves by TMA, through STORE_BUFFERS shared buffers of 16 x COL_BOX
// per consumer warp. A warp's lane 0 asks for its tile's first buffers of C C_EARLY K tiles before
// the tile ends, and never waits for a D store until it needs the buffer again.
#ifndef TMA_STORE_EPILOGUE
#define TMA_STORE_EPILOGUE 0
#endif
#ifndef C_EARLY
#define C_EARLY 1
#endif
#ifndef STORE_BUFFERS
#define STORE_BUFFERS 2
#endif

// kernel10 with split-K (tcsim/kernels/split_k.py): SPLITS > 1 splits each tile's K tiles into
// SPLITS ranges, one block per (tile, range); the blocks of splits 0 .. SPLITS - 2 store their
// f32 partials to `workspace`, the block of split SPLITS - 1 adds them to its own in split order.
// `counters` holds one per tile (partials written), zero between launches (the reducing block
// resets it). The host allocates both (tcsim.hw.kernels.twin).
#ifndef SPLITS
#define SPLITS 1
#endif
#if SPLITS > 1
#if !TMA_STORE_EPILOGUE || !ACC_F32 || CLUSTER_M > 1
#error "hopper.cuh: split-K (SPLITS > 1) is kernel10's: TMA epilogue, f32 accumulators, no clusters"
#endif
#define SPLIT_PARAMS , float *__restrict__ workspace, unsigned *__restrict__ counters
#define SPLIT_ARGS , workspace, counters
#else
#define SPLIT_PARAMS
#define SPLIT_ARGS
#endif

// The kernel's parameters: the ladder's (and split-K's workspace), then A's and B's tensor maps
// (and C's and D's, for TMA stores); HOPPER_GEMM_ARGS passes them on to gemm_warp_specialized.
#if TMA_STORE_EPILOGUE
#define HOPPER_D_MAP \
  , const __grid_constant__ TensorMap tensor_c, const __grid_constant__ TensorMap tensor_d
#define HOPPER_D_POINTER , const TensorMap *tensor_c, const TensorMap *tensor_d
#define HOPPER_D_ARG , &tensor_c, &tensor_d
#else
#define HOPPER_D_MAP
#define HOPPER_D_POINTER
#define HOPPER_D_ARG
#endif
#define HOPPER_GEMM_PARAMS                                               \
  GEMM_PARAMS SPLIT_PARAMS, const __grid_constant__ TensorMap tensor_a, \
      const __grid_constant__ TensorMap tensor_b HOPPER_D_MAP
#define HOPPER_GEMM_ARGS \
  A, B, C, D, alpha, beta, M, N, K SPLIT_ARGS, &tensor_a, &tensor_b HOPPER_D_ARG

#ifdef TCSIM_HOPPER

// ---- mbarriers ---------------------------------------------------------------------------------

__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" : : "r"(bar), "r"(count) : "memory");
}
// The barriers' initialization becomes visible to the async proxy (TMA's complete_tx).
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" : : "r"(bar) : "memory");
}
// One arrival that also expects `bytes` of transactions (the TMA copies of this phase).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               : : "r"(bar), "r"(bytes) : "memory");
}
// Wait until the phase with this parity has completed.
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{ .reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}" : : "r"(bar), "r"(parity) : "memory");
}

// ---- TMA -------------------------------------------------------------------------------------

// Copy the box at (column c0, row c1) of the tensor map's matrix to shared memory at `dst`;
// the bytes count as transactions on the mbarrier `bar`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const TensorMap* map, int c0, int c1,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];"
      : : "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}

// Copy `src` in shared memory to the box at (column c0, row c1) of the tensor map's matrix; the
// copy joins the thread's next bulk group (bulk_commit), and the thread learns it has finished
// reading shared memory from bulk_wait_read.
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, int c0, int c1, uint32_t src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
               : : "l"(map), "r"(c0), "r"(c1), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" : : : "memory");
}
// Until at most PENDING of the thread's bulk groups still read shared memory.
template <int PENDING>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" : : "n"(PENDING) : "memory");
}
// Until at most PENDING of the thread's bulk groups have not completed (their writes done).
template <int PENDING>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" : : "n"(PENDING) : "memory");
}
// The thread's shared-memory writes become visible to the async proxy (a TMA store's reads).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" : : : "memory");
}

#if CLUSTER_M > 1
// The same copy, landing at `dst` in every block of `mask` and counting on each one's `bar`.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const TensorMap* map, int c0,
                                                      int c1, uint32_t bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
      : : "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask) : "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}
// Every thread of every block of the cluster (bar.sync for a cluster).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" : : : "memory");
}
// An arrival on the barrier at the same shared address in block `rank` of the cluster. Its
// ordering is the default release at CTA scope: with .release.cluster the kernel ran at about
// half speed on the H100 (the figures: docs/kernels.md).
__device__ __forceinline__ void mbarrier_arrive_cluster(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{ .reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}" : : "r"(bar), "r"(rank) : "memory");
}
#endif

// ---- wgmma -----------------------------------------------------------------------------------

// The 64-bit matrix descriptor (PTX "Matrix Descriptor Format"; tcsim.memory.MatrixDescriptor):
// swizzle `mode` (1 128-byte, A's and B's in 64-column boxes; 2 64-byte, B's in 32-column
// boxes), base offset 0 (every stage starts on a 1024-byte boundary).
__device__ __forceinline__ uint64_t descriptor(uint32_t address, uint32_t leading,
                                               uint32_t stride, uint64_t mode = 1) {
  const uint64_t swizzle = PLANT_DESCRIPTOR_SWIZZLE ? 2 : mode;
  return (uint64_t)((address & 0x3FFFF) >> 4) | (uint64_t)((leading & 0x3FFFF) >> 4) << 16 |
         (uint64_t)((stride & 0x3FFFF) >> 4) << 32 | swizzle << 62;
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" : : : "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" : : : "memory");
}
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" : : "n"(PENDING) : "memory");
}
// Keep the compiler from moving accumulator reads or writes across a wgmma fence or wait.
__device__ __forceinline__ void fence_registers(acc_t (&acc)[ACC_REGS]) {
#pragma unroll
  for (int i = 0; i < ACC_REGS; i++) asm volatile("" : ACC_CONSTRAINT(acc[i]) : : "memory");
}

template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" : : "n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" : : "n"(REGS));
}

// One wgmma m64n(BN)k16 of a consumer: A's 64 rows from `a`, B's BN columns from `b`.
__device__ __forceinline__ void wgmma_tile(acc_t (&acc)[ACC_REGS], uint64_t a, uint64_t b) {
#if IN_BF16
#define TCSIM_WGMMA_CALL(n) wgmma_m64n##n##k16_bf16(acc, a, b, 1);
#elif ACC_F32
#define TCSIM_WGMMA_CALL(n) wgmma_m64n##n##k16_f32(acc, a, b, 1);
#else
#define TCSIM_WGMMA_CALL(n) wgmma_m64n##n##k16_f16(acc, a, b, 1);
#endif
#if BN == 256
  TCSIM_WGMMA_CALL(256)
#elif BN == 224
  TCSIM_WGMMA_CALL(224)
#elif BN == 192
  TCSIM_WGMMA_CALL(192)
#elif BN == 160
  TCSIM_WGMMA_CALL(160)
#elif BN == 128
  TCSIM_WGMMA_CALL(128)
#elif BN == 96
  TCSIM_WGMMA_CALL(96)
#elif BN == 64
  TCSIM_WGMMA_CALL(64)
#else
#error "hopper.cuh: BN must be a multiple of 32 from 64 to 256"
#endif
#undef TCSIM_WGMMA_CALL
}

// ---- the schedule (tcsim/kernels/kernel7.py, kernel8.py) ---------------------------------------

extern __shared__ __align__(1024) unsigned char hopper_shared[];

#ifndef GROUP_M
#define GROUP_M 0
#endif
#ifndef EPILOGUE_BATCH
#define EPILOGUE_BATCH 8
#endif
// A hook for benchmarks, not a kernel switch: benchmarks/cuda/explore.cuh defines it to take a
// part (C_LOADS, D_STORES, EPILOGUE, MMA) out and time the rest; by default every part stays.
#ifndef TIMING_KEEP
#define TIMING_KEEP(part, alpha) true
#endif
// kernel9: C and D pass through shared memory in whole 128-byte lines. Each consumer warp has
// a staging buffer of 16 rows x 128 bytes (64 columns), 16-byte chunk c of row r at c ^ (r % 8),
// after the barriers (tcsim.kernels.params.GemmParams.staging_offset). With COL_BOX 32, rows of
// 64 bytes (32 columns), chunk c of row r at c ^ (r / 2 % 4): the 64-byte swizzle.
#ifndef STAGED_EPILOGUE
#define STAGED_EPILOGUE 0
#endif
#define STAGING_ROW_BYTES COL_BOX_BYTES
#define LINE_LANES (STAGING_ROW_BYTES / 16)  // lanes that move one row of the staging
#define LINE_ROWS (32 / LINE_LANES)          // rows one warp-wide row-wise move covers
#define CHUNK_WORDS (COL_BOX / 4)            // a thread's accumulator words in one chunk
#define STAGING_WARP_BYTES (16 * STAGING_ROW_BYTES)
#if TMA_STORE_EPILOGUE  // a TMA box's 128-byte swizzle follows address bits: 1024-byte aligned
#define STAGING_ALIGN 1024
#define C_BARRIERS (CONSUMERS * 4 * STORE_BUFFERS)  // one per buffer: its C has arrived
#else
#define STAGING_ALIGN 128
#define C_BARRIERS 0
#endif
#define STAGING_OFFSET                                                      \
  ((STAGES * STAGE_BYTES + 16 * STAGES + 8 * C_BARRIERS + STAGING_ALIGN - 1) / STAGING_ALIGN * \
   STAGING_ALIGN)


// Which block tile (row, column of tiles) is the t-th handed out: GROUP_M 0 walks N fastest;
// otherwise groups of GROUP_M block rows are walked column by column (M fastest inside a
// group), so the tiles in flight at once share fewer rows of A and columns of B
// (tcsim.kernels.scheduler.tile_order).
__device__ __forceinline__ void tile_coordinates(int t, int tiles_m, int tiles_n, int& row,
                                                 int& col) {
#if GROUP_M
  const int group = t / (GROUP_M * tiles_n), first = group * GROUP_M;
  const int rows = min(GROUP_M, tiles_m - first), r = t % (GROUP_M * tiles_n);
  row = first + r % rows;
  col = r / rows;
#else
  row = t / tiles_n;
  col = t % tiles_n;
#endif
}

// One consumer warpgroup's epilogue of its 64 x BN rows of tile (row, col): warp w holds rows
// 16w .. 16w + 15 as mma.sync's m16n8 accumulator per 8 columns (tcsim.isa.wgmma.fragments).
// C's words are loaded EPILOGUE_BATCH x 8 columns at a time before any is used, so their
// latencies overlap instead of adding up (one word at a time, 32 latencies in a row cost kernel7
// much of its speed on the H100: docs/kernels.md has the figures). Loading all of C before the
// main loop instead was no faster.
#define C_WORDS (BN / 8 * 2)
struct EpilogueAt {
  int row0, col0, rows, cols;
  __device__ __forceinline__ EpilogueAt(int row, int col, int consumer, int M, int N) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4;
    row0 = row * BM + consumer * CONSUMER_M + warp * 16 + lane / 4;
    col0 = col * BN + lane % 4 * 2;
    rows = M;
    cols = N;
  }
  // Word j of the thread's C or D: columns 8 (j / 2) + 2 (lane % 4), row + 8 (j % 2).
  __device__ __forceinline__ uint64_t at(int j, int N) const {
    return (uint64_t)(row0 + 8 * (j % 2)) * N + col0 + j / 2 * 8;
  }
  // Whether word j lies inside D (an edge tile's others are neither loaded nor stored).
  __device__ __forceinline__ bool inside(int j) const {
    return row0 + 8 * (j % 2) < rows && col0 + j / 2 * 8 < cols;
  }
};

__device__ __forceinline__ uint32_t load_c(const uint16_t* __restrict__ C, const EpilogueAt& e,
                                           int j, int N) {
  return TIMING_KEEP(C_LOADS, 0.0f) ? ld_global_b32(C + e.at(j, N)) : 0u;
}

// D's word j of the thread's accumulators (columns 8 (j / 2) + 2 (lane % 4), row half j % 2)
// from C's word at the same place.
__device__ __forceinline__ uint32_t epilogue_at(const acc_t (&acc)[ACC_REGS], int j, uint32_t c,
                                                float alpha, float beta) {
  const int n = j / 2, half = j % 2;
#if ACC_F32
  const float x0 = acc[4 * n + 2 * half], x1 = acc[4 * n + 2 * half + 1];
#else
  const float x0 = f16_to_f32(acc[2 * n + half] & 0xffffu);
  const float x1 = f16_to_f32(acc[2 * n + half] >> 16);
#endif
  return epilogue_pair(x0, x1, c, alpha, beta);
}

__device__ __forceinline__ void epilogue_word(const acc_t (&acc)[ACC_REGS], int j, uint32_t c,
                                              const EpilogueAt& e, uint16_t* __restrict__ D,
                                              float alpha, float beta, int N) {
  if (TIMING_KEEP(D_STORES, alpha))
    st_global_b32(D + e.at(j, N), epilogue_at(acc, j, c, alpha, beta));
}

__device__ __forceinline__ void epilogue_tile(const acc_t (&acc)[ACC_REGS], const EpilogueAt& e,
                                              const uint16_t* __restrict__ C,
                                              uint16_t* __restrict__ D, float alpha, float beta,
                                              int N) {
// A last batch may be partial (BN 96: 24 words, batches of 16): words past C_WORDS belong to
// the next tile and are neither loaded nor stored.
#pragma unroll
  for (int j0 = 0; j0 < C_WORDS; j0 += 2 * EPILOGUE_BATCH) {
    uint32_t c[2 * EPILOGUE_BATCH];
#pragma unroll
    for (int j = 0; j < 2 * EPILOGUE_BATCH; j++)
      c[j] = j0 + j < C_WORDS && e.inside(j0 + j) ? load_c(C, e, j0 + j, N) : 0u;
#pragma unroll
    for (int j = 0; j < 2 * EPILOGUE_BATCH; j++)
      if (j0 + j < C_WORDS && e.inside(j0 + j))
        epilogue_word(acc, j0 + j, c[j], e, D, alpha, beta, N);
  }
}

#if STAGED_EPILOGUE || TMA_STORE_EPILOGUE
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2,
                                            uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
               : : "r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}
__device__ __forceinline__ void ld_shared_v4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void st_global_v4(uint16_t* p, const uint32_t (&r)[4]) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};"
               : : "l"(p), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}
// Byte offset of 16-byte chunk `chunk` of row `row` in a warp's staging: the 128-byte
// swizzle, Swizzle<3, 4, 3> (chunk c of row r at c ^ (r % 8)), or with 64-byte rows the
// 64-byte one, Swizzle<2, 4, 3>.
__device__ __forceinline__ uint32_t staging_offset(int row, int chunk) {
  return swizzle(row * STAGING_ROW_BYTES + chunk * 16, COL_SWIZZLE_BITS, 4, 3);
}

// kernel9's epilogue (tcsim/kernels/kernel9.py), 64 columns of the warp's 16 rows at a time:
// lane l moves 16 bytes of row 4q + l / 8 (q = 0..3), chunk l % 8, so 8 lanes move one whole
// 128-byte line. The staging holds C, then D:
//   C: ld.global.cg.v4 (issued one chunk ahead) -> st.shared.v4 -> ldmatrix.x4: the words in
//      the accumulators' fragment order (matrix i of an x4: columns 8(g + i / 2) .. + 7 of
//      rows 8(i % 2) .. + 7, its rows' addresses from lanes 8i .. 8i + 7);
//   D: the ladder's arithmetic -> stmatrix.x4 to the same places -> ld.shared.v4 ->
//      st.global.v4.
__device__ __forceinline__ uint32_t matrix_row_offset(int g) {
  const int lane = threadIdx.x % 32, i = lane / 8;
  return staging_offset(lane % 8 + 8 * (i % 2), g + i / 2);
}
// C's 16 x COL_BOX of `chunk` in a warp's buffer -> ldmatrix.x4 (the words in the
// accumulators' fragment order: word 2g + h is columns 8g.., rows h * 8 + lane / 4) -> D's
// words by the ladder's arithmetic -> stmatrix.x4 to the same places (kernel9, kernel10).
// Without READ_C (beta 0) the buffer holds no C: D's words go in with no ldmatrix. (A template,
// not a run-time test: ptxas predicated some of the ldmatrix off, and Nsight Compute counts a
// predicated-off instruction as executed.)
template <bool READ_C = true>
__device__ __forceinline__ void d_in_place(const acc_t (&acc)[ACC_REGS], int chunk,
                                           uint32_t buffer, float alpha, float beta) {
  uint32_t w[CHUNK_WORDS] = {};
#pragma unroll
  for (int g = 0; g < COL_BOX / 8; g += 2)
    if (READ_C)
      ldmatrix_x4(w[2 * g], w[2 * g + 1], w[2 * g + 2], w[2 * g + 3],
                  buffer + matrix_row_offset(g));
#pragma unroll
  for (int j = 0; j < CHUNK_WORDS; j++)
    w[j] = epilogue_at(acc, chunk * CHUNK_WORDS + j, w[j], alpha, beta);
  __syncwarp();
#pragma unroll
  for (int g = 0; g < COL_BOX / 8; g += 2)
    stmatrix_x4(buffer + matrix_row_offset(g), w[2 * g], w[2 * g + 1], w[2 * g + 2], w[2 * g + 3]);
}

#if TMA_STORE_EPILOGUE
// kernel10's C box of the warp's store number `x` (chunk `chunk` of its tile) into its buffer.
__device__ __forceinline__ void load_c_box(const TensorMap* tensor_c, uint32_t staging,
                                           uint32_t c_full, int x, int tile_row, int col) {
  const uint32_t bar = c_full + 8 * (x % STORE_BUFFERS);
  mbarrier_arrive_expect_tx(bar, STAGING_WARP_BYTES);
  tma_load_2d(staging + x % STORE_BUFFERS * STAGING_WARP_BYTES, tensor_c, col, tile_row, bar);
}
// kernel10's epilogue, COL_BOX columns of the warp's 16 rows at a time (store number x = stores):
// wait for C's box in buffer x % STORE_BUFFERS -> ldmatrix.x4 (C in fragment order) -> D's
// words -> stmatrix.x4 in place -> one TMA store of the box by lane 0; then, if the tile has
// more chunks than buffers, lane 0 waits until that store has read the buffer and asks for
// the C of chunk + STORE_BUFFERS in it. With beta 0 no C is read (BLAS): lane 0 waits only
// until the store that last used the buffer has read it.
template <bool READ_C>
__device__ __forceinline__ void epilogue_tile_tma(const acc_t (&acc)[ACC_REGS], float alpha,
                                                  float beta, uint32_t staging, uint32_t c_full,
                                                  const TensorMap* tensor_c,
                                                  const TensorMap* tensor_d, int tile_row,
                                                  int tile_col, int& stores) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int chunk = 0; chunk < BN / COL_BOX; chunk++, stores++) {
    const uint32_t buffer = staging + stores % STORE_BUFFERS * STAGING_WARP_BYTES;
    if (!READ_C) {
      if (lane == 0 && !PLANT_NO_STORE_WAIT) bulk_wait_read<STORE_BUFFERS - 1>();
      __syncwarp();
    } else if (!PLANT_SKIP_C_WAIT) {
      mbarrier_wait(c_full + 8 * (stores % STORE_BUFFERS), stores / STORE_BUFFERS & 1);
    }
    d_in_place<READ_C>(acc, chunk, buffer, alpha, beta);
    if (!PLANT_NO_FENCE) fence_proxy_async_shared();
    __syncwarp();
    if (lane == 0) {
      tma_store_2d(tensor_d, tile_col + chunk * COL_BOX, tile_row, buffer);
      bulk_commit();
      if (READ_C && chunk + STORE_BUFFERS < BN / COL_BOX) {
        if (!PLANT_NO_STORE_WAIT) bulk_wait_read<0>();
        load_c_box(tensor_c, staging, c_full, stores + STORE_BUFFERS, tile_row,
                   tile_col + (chunk + STORE_BUFFERS) * COL_BOX);
      }
    }
  }
}
#endif

// An edge tile's lanes whose 16 bytes lie past D load no C (zeros go to the staging), and
// neither read D's line from the staging nor store it. (With the ld.shared outside the `if`,
// ptxas sank it into the branch of the first 64 columns only: Nsight Compute counted the
// other chunks' reads past the edge, docs/kernels.md "Any shape".)
__device__ __forceinline__ void ld_c_line(uint32_t (&r)[4], const uint16_t* __restrict__ C,
                                          int row, int col, int M, int N) {
  if (row < M && col < N) {
    ld_global_v4(r, C + (uint64_t)row * N + col);
  } else {
#pragma unroll
    for (int i = 0; i < 4; i++) r[i] = 0;
  }
}

__device__ __forceinline__ void epilogue_tile_staged(const acc_t (&acc)[ACC_REGS],
                                                     const uint16_t* __restrict__ C,
                                                     uint16_t* __restrict__ D, float alpha,
                                                     float beta, int M, int N, uint32_t staging,
                                                     int tile_row, int tile_col) {
  const int lane = threadIdx.x % 32;
  // row-wise moves: lane l of step q moves 16 bytes of row LINE_ROWS q + l / LINE_LANES
  uint32_t c_lines[2][16 / LINE_ROWS][4];  // this chunk's C and the next one's
  const int line_row = lane / LINE_LANES, line_chunk = lane % LINE_LANES;
#pragma unroll
  for (int q = 0; q < 16 / LINE_ROWS; q++)
    ld_c_line(c_lines[0][q], C, tile_row + LINE_ROWS * q + line_row, tile_col + line_chunk * 8,
              M, N);
#pragma unroll
  for (int chunk = 0; chunk < BN / COL_BOX; chunk++) {
    const int col = tile_col + chunk * COL_BOX + line_chunk * 8;
    if (chunk + 1 < BN / COL_BOX) {
#pragma unroll
      for (int q = 0; q < 16 / LINE_ROWS; q++)
        ld_c_line(c_lines[(chunk + 1) % 2][q], C, tile_row + LINE_ROWS * q + line_row,
                  col + COL_BOX, M, N);
    }
#pragma unroll
    for (int q = 0; q < 16 / LINE_ROWS; q++)
      st_shared_v4(staging + staging_offset(LINE_ROWS * q + line_row, line_chunk),
                   c_lines[chunk % 2][q]);
    __syncwarp();
    d_in_place(acc, chunk, staging, alpha, beta);
    __syncwarp();
#pragma unroll
    for (int q = 0; q < 16 / LINE_ROWS; q++) {
      const int row = tile_row + LINE_ROWS * q + line_row;
      if (row < M && col < N) {  // a line past the edge is neither read nor stored
        uint32_t v[4];
        ld_shared_v4(v, staging + staging_offset(LINE_ROWS * q + line_row, line_chunk));
        st_global_v4(D + (uint64_t)row * N + col, v);
      }
    }
    __syncwarp();
  }
}
#endif

#if SPLITS > 1
// ---- split-K (tcsim/kernels/split_k.py) -------------------------------------------------------

// Every consumer thread (bar.sync 1 of the consumer warpgroups; the producer has left).
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;" : : "n"(CONSUMERS * WARPGROUP) : "memory");
}
// The same, and whether `mine` was true in any of them.
__device__ __forceinline__ bool consumers_any(bool mine) {
  uint32_t any;
  asm volatile(
      "{ .reg .pred p, q;\n"
      "setp.ne.u32 p, %1, 0;\n"
      "bar.red.or.pred q, 1, %2, p;\n"
      "selp.u32 %0, 1, 0, q;\n"
      "}" : "=r"(any) : "r"((uint32_t)mine), "n"(CONSUMERS * WARPGROUP) : "memory");
  return any != 0;
}
__device__ __forceinline__ void st_global_v4_f32(float* p, float a, float b, float c, float d) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};"
               : : "l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
__device__ __forceinline__ void ld_global_cg_v4_f32(float (&r)[4], const float* p) {
  uint32_t u[4];
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3]) : "l"(p) : "memory");
#pragma unroll
  for (int e = 0; e < 4; e++) r[e] = __uint_as_float(u[e]);
}
#ifndef PLANT_SPLIT_ORDER  // the reducing block adds the others from p[S-2] down to p0
#define PLANT_SPLIT_ORDER 0
#endif

// The end of split `split`'s K range on tile `tile` (numbered row * tiles_n + col): whether this
// block reduces the tile (split SPLITS - 1); if so, `acc` becomes its own partial plus the
// others in split order, (((p[S-1] + p0) + p1) + ...) + p[S-2], and lane 0 of each consumer warp
// has asked for C's first boxes (`ask_c`) meanwhile. Workspace: float4 j of consumer thread i of
// consumer c in partial s of the tile at
// (((tile * SPLITS + s) * CONSUMERS + c) * ACC_REGS / 4 + j) * 128 + i (split_k.workspace_shape).
template <typename AskC>
__device__ __forceinline__ bool split_k_last(acc_t (&acc)[ACC_REGS], float* __restrict__ workspace,
                                             unsigned* __restrict__ counters, int tile, int split,
                                             int consumer, AskC ask_c) {
  const int thread = threadIdx.x % WARPGROUP;
  unsigned* written = counters + tile;
  const float* tile_ws = workspace + (size_t)tile * SPLITS * CONSUMERS * ACC_REGS * 128;
  const bool first_thread = threadIdx.x == WARPGROUP;
  if (split < SPLITS - 1) {
    float* mine = workspace + (size_t)tile * SPLITS * CONSUMERS * ACC_REGS * 128 +
                  ((size_t)(split * CONSUMERS + consumer) * ACC_REGS / 4 * 128 + thread) * 4;
#pragma unroll
    for (int j = 0; j < ACC_REGS / 4; j++)
      st_global_v4_f32(mine + j * 128 * 4, acc[4 * j], acc[4 * j + 1], acc[4 * j + 2],
                       acc[4 * j + 3]);
    __threadfence();
    consumers_sync();
    if (first_thread) atomicAdd(written, 1);
    return false;
  }
  if (first_thread) {  // atomics, not loads: no global load's count depends on timing
    while (atomicAdd(written, 0) < SPLITS - 1) {
    }
    atomicExch(written, 0);
    __threadfence();
  }
  ask_c();
  consumers_sync();
#pragma unroll 1  // one partial at a time: its loads all in flight, within the registers
  for (int i = 0; i < SPLITS - 1; i++) {
    const int s = PLANT_SPLIT_ORDER ? SPLITS - 2 - i : i;
    const float* part = tile_ws + ((size_t)(s * CONSUMERS + consumer) * ACC_REGS / 4 * 128 +
                                   thread) * 4;
#pragma unroll
    for (int j = 0; j < ACC_REGS / 4; j++) {
      float p[4];
      ld_global_cg_v4_f32(p, part + j * 128 * 4);
#pragma unroll
      for (int e = 0; e < 4; e++) acc[4 * j + e] = __fadd_rn(acc[4 * j + e], p[e]);
    }
  }
  return true;
}
#endif

// kernel7 and kernel8: warpgroup 0 produces (one thread issues TMA copies of A's and B's tiles
// into STAGES shared buffers; each stage's copies complete on its `full` barrier), warpgroups
// 1..CONSUMERS consume (each issues BK / 16 wgmma per stage on its 64 rows, then arrives on the
// stage's `empty` barrier once the wgmma of the stage before have finished reading it).
// Block b computes tiles b, b + gridDim.x, ... in tile_coordinates' order: kernel7 launches one
// block per tile, kernel8 one block per SM (persistent), whose producer fills the stages of its
// next tile while the consumers store the last one. The stage and its barrier phase run on
// across tiles (`StageRing`).
// The block tile of turn t: with clusters, turn t is a column of CLUSTER_M tiles, one per block.
__device__ __forceinline__ void block_tile(int t, int tiles_m, int tiles_n, int& row, int& col) {
#if CLUSTER_M > 1
  tile_coordinates(t, tiles_m / CLUSTER_M, tiles_n, row, col);
  row = row * CLUSTER_M + cluster_rank();
#else
  tile_coordinates(t, tiles_m, tiles_n, row, col);
#endif
}

// The stage a K tile uses and the parity of that stage's barrier phase, over the block's whole
// life: it % STAGES and it / STAGES % 2 of the K tiles so far, kept as counters that wrap (with
// `it % STAGES` ptxas spent a divide's worth of integer instructions on it every K tile).
struct StageRing {
  uint32_t stage = 0, phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// `descriptor(address + bytes, ...)` from `descriptor(address, ...)` (bytes a multiple of 16):
// the start address is the low field, address / 16, and every shared address is below 2^18
// (228 KiB), so adding to the descriptor is adding to the address. The loops add to descriptors built
// once, in uniform registers, instead of building each one from its address.
__device__ __forceinline__ uint64_t descriptor_plus(uint64_t desc, uint32_t bytes) {
  return desc + (bytes >> 4);
}

// A consumer warp is done with a stage: with clusters, in every block (each block's copies
// land in all of them).
__device__ __forceinline__ void release_stage(uint32_t bar) {
#if CLUSTER_M > 1 && CLUSTER_SHARE_B
#pragma unroll
  for (int rank = 0; rank < CLUSTER_M; rank++) mbarrier_arrive_cluster(bar, rank);
#else
  mbarrier_arrive(bar);
#endif
}

__device__ __forceinline__ void gemm_warp_specialized(GEMM_PARAMS SPLIT_PARAMS,
                                                      const TensorMap* tensor_a,
                                                      const TensorMap* tensor_b HOPPER_D_POINTER) {
  // Shared memory: STAGES x (A tile, B tile), each 1024-byte aligned, then the barriers.
  const uint32_t base = shared_address(hopper_shared);
  const uint32_t full = base + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
#if TMA_STORE_EPILOGUE
  const uint32_t c_full = empty + 8 * STAGES;
#endif
  // ceil-divided without overflow (M, N, K >= 1): a ragged edge is a partial tile
  // the warpgroup from lane 0 (CUTLASS's canonical_warp_group_idx): ptxas then knows it is the
  // same in every lane, and keeps what depends on it (A's descriptors) in uniform registers
  const int warpgroup = __shfl_sync(0xffffffffu, threadIdx.x / WARPGROUP, 0);
  const int k_tiles = (K - 1) / BK + 1;
  const int tiles_m = (M - 1) / BM + 1, tiles_n = (N - 1) / BN + 1, tiles = tiles_m * tiles_n;
#if SPLITS > 1
  // one block per (tile, split), split-major: this block's split and its K tiles
  // (split_k.k_range); `t` below is its tile
  const int split = blockIdx.x / tiles, k_first = (int)((long long)split * k_tiles / SPLITS);
  const int k_count = (int)((long long)(split + 1) * k_tiles / SPLITS) - k_first;
#define TILE_LOOP for (int t = blockIdx.x % tiles, once = 1; once; once = 0)
#else
  const int k_first = 0, k_count = k_tiles;
#define TILE_LOOP \
  for (int t = blockIdx.x / CLUSTER_M; t < tiles / CLUSTER_M; t += gridDim.x / CLUSTER_M)
#endif
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbarrier_init(full + 8 * s, 1);  // the producer's arrive.expect_tx; TMA does the rest
      mbarrier_init(empty + 8 * s, CONSUMERS * 4 * (CLUSTER_SHARE_B ? CLUSTER_M : 1));
    }
#if TMA_STORE_EPILOGUE
    for (int b = 0; b < C_BARRIERS; b++) mbarrier_init(c_full + 8 * b, 1);
#endif
    fence_barrier_init();
  }
#if CLUSTER_M > 1
  cluster_sync();  // every block's barriers exist before another block arrives on them
#else
  __syncthreads();
#endif
  if (warpgroup == 0) {
    setmaxnreg_dec<PRODUCER_REGISTERS>();
    if (threadIdx.x == 0) {
      StageRing ring;
      bool refill = false;  // every stage has been filled once: wait until it is released
      TILE_LOOP {
        int row, col;
        block_tile(t, tiles_m, tiles_n, row, col);
        for (int k = 0; k < k_count; k++, ring.advance(), refill |= ring.stage == 0) {
          const uint32_t s = ring.stage;
          if (refill) mbarrier_wait(empty + 8 * s, ring.phase ^ 1);
          const uint32_t a = base + s * STAGE_BYTES, b = a + A_STAGE_BYTES;
          mbarrier_arrive_expect_tx(full + 8 * s,
                                    STAGE_BYTES - PLANT_SHORT_EXPECT_TX * B_BOX_BYTES);
          tma_load_2d(a, tensor_a, (k_first + k) * BK, row * BM, full + 8 * s);
#if CLUSTER_M > 1 && CLUSTER_SHARE_B
          const int rank = cluster_rank();  // this block's boxes, to every block
#pragma unroll
          for (int box = 0; box < B_BOXES; box++)
            if (box % CLUSTER_M == rank)
              tma_load_2d_multicast(b + box * B_BOX_BYTES, tensor_b, col * BN + box * COL_BOX,
                                    (k_first + k) * BK, full + 8 * s, (1 << CLUSTER_M) - 1);
#else
#pragma unroll
          for (int box = 0; box < B_BOXES; box++)
            tma_load_2d(b + box * B_BOX_BYTES, tensor_b, col * BN + box * COL_BOX,
                        (k_first + k) * BK, full + 8 * s);
#endif
        }
      }
    }
#if CLUSTER_M > 1
    cluster_sync();  // no block leaves while another may still copy into it or arrive on it
#endif
    return;
  }
  setmaxnreg_inc<CONSUMER_REGISTERS>();
  const int consumer = warpgroup - 1, lane = threadIdx.x % 32;
  StageRing ring;
  uint32_t released = 0;  // the stage of the K tile before (the one a wait<1> frees)
  int it = 0;  // K tiles so far (only PLANT_SKIP_FIRST_WAITS reads it)
  // stage 0's descriptors: A's 64 rows of this consumer (K-major), B's tile (MN-major: LBO
  // steps from box to box, SBO 8 rows of a box; kernel7.descriptors)
  const uint64_t a_desc = descriptor(base + consumer * CONSUMER_M * 128, 16, 1024),
                 b_desc = descriptor(base + A_STAGE_BYTES, B_BOX_BYTES, 8 * COL_BOX_BYTES,
                                     COL_SWIZZLE_MODE);
#if TMA_STORE_EPILOGUE
  const int warp = threadIdx.x / 32 % 4;
  const uint32_t staging =
      base + STAGING_OFFSET + (consumer * 4 + warp) * STORE_BUFFERS * STAGING_WARP_BYTES;
  const uint32_t c_full_warp = c_full + 8 * STORE_BUFFERS * (consumer * 4 + warp);
  int stores = 0;
  // the K tile after whose wgmma C is asked for (split-K: once the block knows it is the last)
  const int c_at = SPLITS > 1 ? k_count : max(k_tiles - 1 - C_EARLY, 0);
  const bool read_c = beta != 0.0f;  // BLAS: with beta 0 (either sign) C is not read
#endif
  TILE_LOOP {
    int row, col;
    block_tile(t, tiles_m, tiles_n, row, col);
    const EpilogueAt at(row, col, consumer, M, N);
    acc_t acc[ACC_REGS];
#pragma unroll
    for (int i = 0; i < ACC_REGS; i++) acc[i] = 0;
#if TMA_STORE_EPILOGUE
    const int warp_row = row * BM + consumer * CONSUMER_M + warp * 16;
#endif
    for (int k = 0; k < k_count; k++, it++, ring.advance()) {
      const uint32_t s = ring.stage;
      if (!PLANT_SKIP_FIRST_WAITS || it >= STAGES) mbarrier_wait(full + 8 * s, ring.phase);
      const uint64_t a = descriptor_plus(a_desc, s * STAGE_BYTES),
                     b = descriptor_plus(b_desc, s * STAGE_BYTES);
      fence_registers(acc);
      wgmma_fence();
      if (TIMING_KEEP(MMA, alpha)) {
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++)  // A: 32 bytes along its 128-byte rows; B: 16 rows
          wgmma_tile(acc, descriptor_plus(a, kk * 32),
                     descriptor_plus(b, kk * 16 * COL_BOX_BYTES));
      }
      wgmma_commit();
#if TMA_STORE_EPILOGUE
      // C's first boxes (none with beta 0), once the last tile's stores have read them
      if (k == c_at && lane == 0 && read_c) {
        if (!PLANT_NO_STORE_WAIT) bulk_wait_read<0>();
#pragma unroll
        for (int chunk = 0; chunk < min(STORE_BUFFERS, BN / COL_BOX); chunk++)
          load_c_box(tensor_c, staging, c_full_warp, stores + chunk, warp_row,
                     col * BN + chunk * COL_BOX);
      }
#endif
      wgmma_wait<1>();  // the wgmma of stage it - 1 are done reading it
      fence_registers(acc);
#if PLANT_EARLY_RELEASE
      if (lane == 0) mbarrier_arrive(empty + 8 * s);  // (the bug) its wgmma may still read it
#else
      if (k > 0 && lane == 0) release_stage(empty + 8 * released);
#endif
      released = s;
    }
    wgmma_wait<0>();
    fence_registers(acc);
    if (!PLANT_EARLY_RELEASE && lane == 0)
      release_stage(empty + 8 * released);  // the tile's last stage
#if SPLITS > 1
    if (!split_k_last(acc, workspace, counters, row * tiles_n + col, split, consumer, [&] {
          if (lane == 0 && read_c) {  // C's first boxes, as kernel10 asks for them at c_at
            if (!PLANT_NO_STORE_WAIT) bulk_wait_read<0>();
#pragma unroll
            for (int chunk = 0; chunk < min(STORE_BUFFERS, BN / COL_BOX); chunk++)
              load_c_box(tensor_c, staging, c_full_warp, stores + chunk, warp_row,
                         col * BN + chunk * COL_BOX);
          }
        }))
      continue;
#endif
#if TMA_STORE_EPILOGUE
    if (read_c)
      epilogue_tile_tma<true>(acc, alpha, beta, staging, c_full_warp, tensor_c, tensor_d,
                              warp_row, col * BN, stores);
    else  // beta 0: no C (BLAS)
      epilogue_tile_tma<false>(acc, alpha, beta, staging, c_full_warp, tensor_c, tensor_d,
                               warp_row, col * BN, stores);
#elif STAGED_EPILOGUE
    const int warp = threadIdx.x / 32 % 4;
    epilogue_tile_staged(acc, C, D, alpha, beta, M, N,
                         base + STAGING_OFFSET + (consumer * 4 + warp) * STAGING_WARP_BYTES,
                         row * BM + consumer * CONSUMER_M + warp * 16, col * BN);
#else
    if (TIMING_KEEP(EPILOGUE, alpha)) epilogue_tile(acc, at, C, D, alpha, beta, N);
#endif
  }
#if TMA_STORE_EPILOGUE
  if (lane == 0) bulk_wait<0>();  // shared memory stays until the last stores have read it
#endif
#if CLUSTER_M > 1
  cluster_sync();
#endif
}

#undef TILE_LOOP
#endif  // TCSIM_HOPPER
