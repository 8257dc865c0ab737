// kernel11's twin (tcsim/kernels/kernel11.py, tcsim/kernels/scaled.py): the scaled fp8 GEMM
// of torch._scaled_mm(A, B, scale_a, scale_b, out_dtype, use_fast_accum=False), on kernel8's
// structure (hopper.cuh: warp-specialized roles, TMA on mbarriers, persistent blocks in
// tile_coordinates' order) with three changes:
//
// - fp8 operands, both K-major: A is M rows of K bytes, B N rows of K bytes (cuBLAS's TN). A
//   K tile is BK = 128 elements, one 128-byte swizzle row of each: one TMA box of A (BM rows)
//   and one of B (BN rows) per stage, wgmma m64n(BN)k32 from K-major descriptors stepping 32
//   bytes per k32 step.
// - promoted accumulation: the tensor core sums PROMOTION k32 steps from zero (scale-d 0 on
//   the first) into a partial; the step that closes it ends a wgmma group, and once the group
//   retired (wgmma.wait_group 0) the partial is added to the f32 registers `total` by
//   add.rn.f32, in K order. With PROMOTION = BK / 32 (cuBLAS's 4) that is once per K tile; the
//   other consumer's wgmma keep the tensor cores busy meanwhile. A partial left open at a K
//   tile's end (another interval, such as the plant promotion_off_by_one's 5) runs on into the
//   next K tile.
// - the scaled epilogue: D = out(total * scale + 0) per element, scale = scale_a * scale_b
//   (the host's f32 product; the + 0 turns -0 into +0, as cuBLAS does); with ROW_SCALES, scale_a per row and scale_b per column loaded by each
//   lane, D = out((total * scale_b) * scale_a). out: cvt.rn to f16 or bf16 (OUT_BF16), or f32
//   (OUT_F32); each lane stores 8 bytes of a row (f16/bf16: its pair and its neighbour lane's,
//   swapped by shfl), predicated off past D's edge.
//
// Compile-time constants beyond hopper.cuh's: A_E5M2, B_E5M2 (operand types; e4m3 otherwise),
// OUT_F32, ROW_SCALES, PROMOTION, and the plants' PLANT_PROMOTION_OFF_BY_ONE and
// PLANT_SCALE_A_FIRST (tcsim.kernels.planted). hopper.cuh's exploratory CLUSTER_M (not modeled
// by the schedule: benchmarks only) makes pairs of blocks computing vertically adjacent tiles
// share B: each copies BN / CLUSTER_M of its rows (a tensor map with boxes that tall) and
// multicasts them; M must then be a multiple of BM * CLUSTER_M (FP8_MULTICAST_A: A, below).
#pragma once
#include "hopper.cuh"

#ifndef A_E5M2
#define A_E5M2 0
#endif
#ifndef B_E5M2
#define B_E5M2 0
#endif
#ifndef OUT_F32
#define OUT_F32 0
#endif
#ifndef ROW_SCALES
#define ROW_SCALES 0
#endif
#ifndef PROMOTION
#define PROMOTION 4
#endif
// Exploratory (benchmarks only, not modeled by the schedule: the same instructions and bits,
// other wgmma waits): FP8_PARTIALS 2 keeps two partials, as the schedule's first form did.
// K tile k's wgmma run while the consumer adds the partial K tile k - 1 closed, after
// wgmma.wait_group 1. ptxas pipelines it only as written below (pairs of K tiles in a loop
// without a test inside, the odd one after it, partials zeroed by hand): docs/kernels.md.
#ifndef FP8_PARTIALS
#define FP8_PARTIALS 1
#endif
// Exploratory (benchmarks only, not modeled by the schedule: the same instructions and bits,
// another order): FP8_WAIT_FIRST 1 is cuBLAS's order, per K tile k: wait on its stage's full
// barrier while K tile k - 1's wgmma still run, then wgmma.wait_group 0, release K tile k - 1's
// stage, add its partial, issue K tile k's wgmma. FP8_WAIT_FIRST 2 tries the barrier once
// there (mbarrier.try_wait) and waits for it only after the adds if it was not ready. Both
// ran 2-5% slower than the default on the H100 (docs/kernels.md).
#ifndef FP8_WAIT_FIRST
#define FP8_WAIT_FIRST 0
#endif
// Exploratory (benchmarks only): with CLUSTER_M > 1, FP8_MULTICAST_A 1 makes a cluster's blocks
// compute horizontally adjacent tiles and share A instead of B: each copies BM / CLUSTER_M of
// A's rows (a tensor map with boxes that tall) and multicasts them; N must then be a multiple
// of BN * CLUSTER_M (cuBLAS's fp8 kernel runs in clusters of 2; on the H100 it gained 5-12%
// with the half-sector stores, nothing on top of the whole-sector ones at 4096^3).
#ifndef FP8_MULTICAST_A
#define FP8_MULTICAST_A 0
#endif
#ifndef PLANT_PROMOTION_OFF_BY_ONE  // partials close every PROMOTION + 1 k32 steps
#define PLANT_PROMOTION_OFF_BY_ONE 0
#endif
#ifndef PLANT_SCALE_A_FIRST  // row-wise scales multiply scale_a first
#define PLANT_SCALE_A_FIRST 0
#endif

#if A_E5M2 && B_E5M2
#error "scaled.cuh: e5m2 x e5m2 is refused, as torch._scaled_mm refuses it"
#elif A_E5M2
#define FP8_TYPES e5m2_e4m3
#elif B_E5M2
#define FP8_TYPES e4m3_e5m2
#else
#define FP8_TYPES e4m3_e4m3
#endif

#define FP8_STEPS (BK / 32)  // wgmma k32 steps per K tile
#define FP8_INTERVAL (PROMOTION + PLANT_PROMOTION_OFF_BY_ONE)
#define FP8_A_STAGE_BYTES (BM * BK)
#define FP8_STAGE_BYTES (FP8_A_STAGE_BYTES + BN * BK)
#define FP8_REGS (BN / 2)  // f32 registers of one m64n(BN) accumulator
#if FP8_WAIT_FIRST && (FP8_INTERVAL != FP8_STEPS || FP8_PARTIALS != 1)
#error "scaled.cuh: FP8_WAIT_FIRST promotes once per K tile (PROMOTION = BK / 32), one partial"
#endif
#if FP8_PARTIALS == 2 && (FP8_INTERVAL != FP8_STEPS || BN > 128)
#error "scaled.cuh: two partials need PROMOTION = BK / 32 and BN <= 128 (3 x BN / 2 registers)"
#endif

// The kernel's parameters: A (M x K) and B (N x K) fp8 bytes, D (M x N, out's type), the
// row-wise scales (f32 vectors of M and N; unread per tensor), the per-tensor f32 factor scale_a
// * scale_b (unused row-wise), the sizes, A's and B's tensor maps.
#define SCALED_GEMM_PARAMS                                                                    \
  const unsigned char *__restrict__ A, const unsigned char *__restrict__ B,                   \
      void *__restrict__ D, const float *__restrict__ scale_a,                                \
      const float *__restrict__ scale_b, float scale, int M, int N, int K,                    \
      const __grid_constant__ TensorMap tensor_a, const __grid_constant__ TensorMap tensor_b
#define SCALED_GEMM_ARGS A, B, D, scale_a, scale_b, scale, M, N, K, &tensor_a, &tensor_b

#ifdef TCSIM_HOPPER

#define FP8_WGMMA_NAME(n, types) wgmma_m64n##n##k32_##types
#define FP8_WGMMA(n, types) FP8_WGMMA_NAME(n, types)  // expands BN and FP8_TYPES first

// One mbarrier.try_wait: whether the phase with this parity has completed (the thread may be
// suspended a while first, up to a time limit of the hardware's).
__device__ __forceinline__ bool mbarrier_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{ .reg .pred done;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%1], %2;\n"
      "selp.u32 %0, 1, 0, done;\n"
      "}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  return done;
}

// Keep the compiler from moving a partial's reads or writes across a wgmma fence or wait.
__device__ __forceinline__ void fence_partial(float (&x)[FP8_REGS]) {
#pragma unroll
  for (int i = 0; i < FP8_REGS; i++) asm volatile("" : "+f"(x[i]) : : "memory");
}

// total += part, register by register (tcsim.kernels.scaled.promote: add.rn.f32).
__device__ __forceinline__ void promote(float (&total)[FP8_REGS], const float (&part)[FP8_REGS]) {
#pragma unroll
  for (int i = 0; i < FP8_REGS; i++) total[i] = add_rn(total[i], part[i]);
}

// A consumer's descriptors of one stage (kernel11.descriptors): A's 64 rows of this consumer
// and B's BN rows, from step 0 on, 32 bytes further along K per k32 step. A descriptor's address
// field is the byte address / 16, so the stage's offset and the step's 2 add to it (shared
// addresses stay below 2^18, the field's 14 bits). Built from warp-uniform values (the consumer
// index through __shfl_sync, stage and phase as wrapping counters), they live in uniform
// registers and each step is one UIADD3.64; from threadIdx.x and `it % STAGES`, ptxas spent
// ~38 more integer instructions per K tile (a divide by STAGES, 64-bit adds in ordinary
// registers, R2UR before each wgmma: docs/kernels.md).
struct Fp8Step {
  uint64_t a, b;
  __device__ __forceinline__ Fp8Step(uint64_t a0, uint64_t b0, int stage)
      : a(low_plus(a0, stage * (FP8_STAGE_BYTES / 16))),
        b(low_plus(b0, stage * (FP8_STAGE_BYTES / 16))) {}
  // a 32-bit add to the low word, the high word (stride, swizzle) kept: 2 fewer instructions
  // per K tile than a 64-bit add
  static __device__ __forceinline__ uint64_t low_plus(uint64_t d, uint32_t x) {
    return d >> 32 << 32 | (uint32_t)d + x;
  }
  // the k32 step into `part`, and on to the next one
  __device__ __forceinline__ void issue(float (&part)[FP8_REGS], int scale_d) {
    FP8_WGMMA(BN, FP8_TYPES)(part, a, b, scale_d);
    a += 32 / 16;
    b += 32 / 16;
  }
};

#if FP8_PARTIALS == 2
// One K tile of the two-partial form: its steps into `part` from zero, commit; once K tile
// k - 1's group retired (wait_group 1), add `closed`, the partial it wrote, and release its
// stage (`previous`).
__device__ __forceinline__ void fp8_k_tile_pipelined(float (&part)[FP8_REGS],
                                                     float (&closed)[FP8_REGS],
                                                     float (&total)[FP8_REGS],
                                                     uint64_t a0, uint64_t b0, uint32_t full,
                                                     uint32_t empty, int k, StageRing& at,
                                                     int& previous) {
  mbarrier_wait(full + 8 * at.stage, at.phase);
#pragma unroll
  for (int i = 0; i < FP8_REGS; i++) part[i] = 0.f;  // ptxas: the first step's scale-d 0
  fence_partial(part);
  wgmma_fence();
  Fp8Step step(a0, b0, at.stage);
#pragma unroll
  for (int kk = 0; kk < FP8_STEPS; kk++) step.issue(part, 1);
  wgmma_commit();
  wgmma_wait<1>();
  fence_partial(closed);
  if (k > 0) {
    promote(total, closed);
    if (threadIdx.x % 32 == 0) release_stage(empty + 8 * previous);
  }
  previous = at.stage;
  at.advance();
}
#endif

__device__ __forceinline__ float ld_global_f32(const float* p) {
  float r;
  asm volatile("ld.global.b32 %0, [%1];" : "=f"(r) : "l"(p) : "memory");
  return r;
}
__device__ __forceinline__ void ld_global_v2_f32(float (&r)[2], const float* p) {
  asm volatile("ld.global.v2.f32 {%0, %1}, [%2];" : "=f"(r[0]), "=f"(r[1]) : "l"(p) : "memory");
}
// Stores predicated on `on` (one @p st.global: no branch around each, as ptxas made of an `if`).
__device__ __forceinline__ void st_global_v2_b32_if(uint64_t p, uint32_t x0, uint32_t x1,
                                                    bool on) {
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %3, 0; @p st.global.v2.b32 [%0], {%1, %2}; }"
               : : "l"(p), "r"(x0), "r"(x1), "r"((int)on) : "memory");
}
__device__ __forceinline__ void st_global_v2_f32_if(uint64_t p, float x0, float x1, bool on) {
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %3, 0; @p st.global.v2.f32 [%0], {%1, %2}; }"
               : : "l"(p), "f"(x0), "f"(x1), "r"((int)on) : "memory");
}

// One consumer warp's epilogue (kernel11.scaled_epilogue): warp w holds rows 16w .. 16w + 15 of
// the consumer's 64 as m16n8 accumulators; register 4n + 2h (+ 1) is row lane / 4 + 8h, columns
// 8n + 2 (lane % 4) (+ 1). f16 and bf16 pairs are stored two words a lane after an exchange
// with the next lane (below), f32 pairs as two words; predicated off past D's edge. The lane's
// two row addresses are computed once and each store is predicated: a 64-bit multiply and a
// branch per store had cost ~20 instructions each (docs/kernels.md).
__device__ __forceinline__ void scaled_epilogue_tile(const float (&total)[FP8_REGS],
                                                     void* __restrict__ D,
                                                     const float* __restrict__ scale_a,
                                                     const float* __restrict__ scale_b,
                                                     float scale, int M, int N, int row0,
                                                     int col0) {
  const int lane = threadIdx.x % 32;
  const int r0 = row0 + lane / 4, c0 = col0 + lane % 4 * 2;
#if OUT_F32
  constexpr int bytes = 4;
#else
  constexpr int bytes = 2;
#endif
  uint64_t at[2];  // the address of the lane's first pair in each of its rows
  bool inside[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    at[h] = (uint64_t)D + ((uint64_t)(r0 + 8 * h) * N + c0) * bytes;
    inside[h] = r0 + 8 * h < M;
  }
#if ROW_SCALES  // scale_a of the lane's two rows, scale_b of its column pairs, loaded first
  float sa[2], sb[BN / 8][2];
#pragma unroll
  for (int h = 0; h < 2; h++) sa[h] = inside[h] ? ld_global_f32(scale_a + r0 + 8 * h) : 0.f;
#pragma unroll
  for (int n = 0; n < BN / 8; n++) {
    if (c0 + 8 * n < N) {
      ld_global_v2_f32(sb[n], scale_b + c0 + 8 * n);
    } else {
      sb[n][0] = sb[n][1] = 0.f;
    }
  }
#endif
  // D's pair in columns 8n + 2 (lane % 4) (+ 1) of row half h, scaled
  auto pair = [&](int n, int h, float (&x)[2]) {
#pragma unroll
    for (int e = 0; e < 2; e++) {
#if ROW_SCALES && PLANT_SCALE_A_FIRST
      x[e] = mul_rn(mul_rn(total[4 * n + 2 * h + e], sa[h]), sb[n][e]);
#elif ROW_SCALES
      x[e] = mul_rn(mul_rn(total[4 * n + 2 * h + e], sb[n][e]), sa[h]);
#else  // + 0: cuBLAS's beta 0 makes a zero result +0 (measured on the H100)
      x[e] = add_rn(mul_rn(total[4 * n + 2 * h + e], scale), 0.f);
#endif
    }
  };
#if !OUT_F32
  // Lanes 2i and 2i + 1 swap a word (shfl.xor 1) per two column tiles n, n + 1: the even lane
  // then holds 4 adjacent columns of tile n, the odd lane 4 of tile n + 1, and a row's 4
  // lanes write 32 adjacent bytes (a whole sector) with one st.global.v2.b32 each
  // (kernel11.sector_pairs). One st.global.b32 per pair wrote half sectors, and cost 17% of
  // the speed at 4096^3 (docs/kernels.md).
  const bool odd = lane % 2;
#pragma unroll
  for (int n = 0; n < BN / 8; n += 2) {
    const int mine = n + odd;  // the tile this lane stores
    const bool column_inside = c0 - 2 * odd + 8 * mine < N;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      float x[2], y[2];
      pair(n, h, x);
      pair(n + 1, h, y);
      const uint32_t w0 = F32_TO_OUT(x[0]) | F32_TO_OUT(x[1]) << 16;
      const uint32_t w1 = F32_TO_OUT(y[0]) | F32_TO_OUT(y[1]) << 16;
      const uint32_t got = __shfl_xor_sync(0xffffffff, odd ? w0 : w1, 1);
      st_global_v2_b32_if(at[h] + (8 * mine - 2 * odd) * bytes, odd ? got : w0, odd ? w1 : got,
                          inside[h] && column_inside);
    }
  }
#else  // f32: a lane's pair is 8 bytes, a row's 4 lanes already write a whole sector
#pragma unroll
  for (int n = 0; n < BN / 8; n++) {
    const bool column_inside = c0 + 8 * n < N;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      float x[2];
      pair(n, h, x);
      st_global_v2_f32_if(at[h] + 8 * n * bytes, x[0], x[1], inside[h] && column_inside);
    }
  }
#endif
}

// The block tile of turn t (hopper.cuh's block_tile); with FP8_MULTICAST_A, turn t is a row of
// CLUSTER_M tiles, one per block of the cluster.
__device__ __forceinline__ void fp8_block_tile(int t, int tiles_m, int tiles_n, int& row,
                                               int& col) {
#if CLUSTER_M > 1 && FP8_MULTICAST_A
  tile_coordinates(t, tiles_m, tiles_n / CLUSTER_M, row, col);
  col = col * CLUSTER_M + cluster_rank();
#else
  block_tile(t, tiles_m, tiles_n, row, col);
#endif
}

// kernel11: warpgroup 0 produces (one thread copies each stage's A box and B box into STAGES
// buffers, each stage's copies completing on its `full` barrier), warpgroups 1..CONSUMERS
// consume (each issues FP8_STEPS wgmma k32 per stage on its 64 rows, promotes its partials and
// arrives on the stage's `empty` barrier once the stage's wgmma retired), on
// persistent blocks: block b computes tiles b, b + gridDim.x, ... (the stage and its barrier
// phase run on across tiles).
__device__ __forceinline__ void gemm_fp8(const unsigned char* __restrict__ A,
                                         const unsigned char* __restrict__ B,
                                         void* __restrict__ D, const float* __restrict__ scale_a,
                                         const float* __restrict__ scale_b, float scale, int M,
                                         int N, int K, const TensorMap* tensor_a,
                                         const TensorMap* tensor_b) {
  const uint32_t base = shared_address(hopper_shared);
  const uint32_t full = base + STAGES * FP8_STAGE_BYTES, empty = full + 8 * STAGES;
  // ceil-divided without overflow (M, N, K >= 1): a ragged edge is a partial tile
  const int warpgroup = threadIdx.x / WARPGROUP, k_tiles = (K - 1) / BK + 1;
  const int tiles_m = (M - 1) / BM + 1, tiles_n = (N - 1) / BN + 1, tiles = tiles_m * tiles_n;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbarrier_init(full + 8 * s, 1);  // the producer's arrive.expect_tx; TMA does the rest
      mbarrier_init(empty + 8 * s, CONSUMERS * 4 * (CLUSTER_SHARE_B ? CLUSTER_M : 1));
    }
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
      StageRing at;  // hopper.cuh's stage ring
      bool refill = false;  // from the second round of stages on: wait until consumed
      for (int t = blockIdx.x / CLUSTER_M; t < tiles / CLUSTER_M; t += gridDim.x / CLUSTER_M) {
        int row, col;
        fp8_block_tile(t, tiles_m, tiles_n, row, col);
        for (int k = 0; k < k_tiles; k++, at.advance()) {
          const int s = at.stage;
          refill |= at.phase;
          if (refill) mbarrier_wait(empty + 8 * s, at.phase ^ 1);
          const uint32_t a = base + s * FP8_STAGE_BYTES;
          mbarrier_arrive_expect_tx(full + 8 * s, FP8_STAGE_BYTES);
#if CLUSTER_M > 1 && CLUSTER_SHARE_B && FP8_MULTICAST_A  // this block's share of A's rows
          const int rows = BM / CLUSTER_M, first = cluster_rank() * rows;
          tma_load_2d_multicast(a + first * BK, tensor_a, k * BK, row * BM + first, full + 8 * s,
                                (1 << CLUSTER_M) - 1);
          tma_load_2d(a + FP8_A_STAGE_BYTES, tensor_b, k * BK, col * BN, full + 8 * s);
#elif CLUSTER_M > 1 && CLUSTER_SHARE_B  // this block's share of B's rows, to every block
          const int rows = BN / CLUSTER_M, first = cluster_rank() * rows;
          tma_load_2d(a, tensor_a, k * BK, row * BM, full + 8 * s);
          tma_load_2d_multicast(a + FP8_A_STAGE_BYTES + first * BK, tensor_b, k * BK,
                                col * BN + first, full + 8 * s, (1 << CLUSTER_M) - 1);
#else
          tma_load_2d(a, tensor_a, k * BK, row * BM, full + 8 * s);
          tma_load_2d(a + FP8_A_STAGE_BYTES, tensor_b, k * BK, col * BN, full + 8 * s);
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
  // warpgroup through lane 0: ptxas then knows it is warp-uniform (CUTLASS's trick), and so
  // are the descriptors built from it
  const int consumer = __shfl_sync(0xffffffff, warpgroup, 0) - 1;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4;
  const uint64_t a0 = descriptor(base + consumer * CONSUMER_M * 128, 16, 1024);
  const uint64_t b0 = descriptor(base + FP8_A_STAGE_BYTES, 16, 1024);
  float total[FP8_REGS], part[FP8_REGS];
#pragma unroll
  for (int i = 0; i < FP8_REGS; i++) part[i] = 0.f;
#if FP8_PARTIALS == 2
  float other[FP8_REGS];
#pragma unroll
  for (int i = 0; i < FP8_REGS; i++) other[i] = 0.f;
  int previous = 0;  // the stage of the K tile before
#endif
  StageRing at;  // hopper.cuh's stage ring
  for (int t = blockIdx.x / CLUSTER_M; t < tiles / CLUSTER_M; t += gridDim.x / CLUSTER_M) {
    int row, col;
    fp8_block_tile(t, tiles_m, tiles_n, row, col);
#pragma unroll
    for (int i = 0; i < FP8_REGS; i++) total[i] = 0.f;
#if FP8_PARTIALS == 2
    int k = 0;
    for (; k + 1 < k_tiles; k += 2) {
      fp8_k_tile_pipelined(part, other, total, a0, b0, full, empty, k, at, previous);
      fp8_k_tile_pipelined(other, part, total, a0, b0, full, empty, k + 1, at, previous);
    }
    if (k < k_tiles) {  // an odd K tile count: the last one, then its partial
      fp8_k_tile_pipelined(part, other, total, a0, b0, full, empty, k, at, previous);
      wgmma_wait<0>();
      fence_partial(part);
      promote(total, part);
    } else {
      wgmma_wait<0>();
      fence_partial(other);
      promote(total, other);
    }
    if (lane == 0) release_stage(empty + 8 * previous);  // the tile's last stage
#elif FP8_WAIT_FIRST
    int previous = 0;  // the stage of the K tile before
    for (int k = 0; k < k_tiles; k++, at.advance()) {
#if FP8_WAIT_FIRST == 2  // one try while K tile k - 1's wgmma run; the blocking wait after
      const bool ready = k > 0 && mbarrier_try_wait(full + 8 * at.stage, at.phase);
#else
      mbarrier_wait(full + 8 * at.stage, at.phase);  // while K tile k - 1's wgmma run
#endif
      if (k > 0) {  // K tile k - 1's group retired: release its stage, add its partial
        wgmma_wait<0>();
        fence_partial(part);
        if (lane == 0) release_stage(empty + 8 * previous);
        promote(total, part);
      }
#if FP8_WAIT_FIRST == 2
      if (!ready) mbarrier_wait(full + 8 * at.stage, at.phase);
#endif
      Fp8Step step(a0, b0, at.stage);
      fence_partial(part);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < FP8_STEPS; kk++) step.issue(part, kk != 0);
      wgmma_commit();
      previous = at.stage;
    }
    wgmma_wait<0>();
    fence_partial(part);
    if (lane == 0) release_stage(empty + 8 * previous);
    promote(total, part);
#else
    int pending = 0;  // k32 steps summed in `part`
    for (int k = 0; k < k_tiles; k++, at.advance()) {
      mbarrier_wait(full + 8 * at.stage, at.phase);
      Fp8Step step(a0, b0, at.stage);
      fence_partial(part);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < FP8_STEPS; kk++) {
        step.issue(part, pending != 0);
        if (++pending == FP8_INTERVAL) {  // closed: once its group retired, add it up
          wgmma_commit();
          wgmma_wait<0>();
          fence_partial(part);
          promote(total, part);
          pending = 0;
          if (kk + 1 < FP8_STEPS) wgmma_fence();  // the registers were read
        }
      }
      if (pending) {  // an open partial runs on into the next K tile
        wgmma_commit();
        wgmma_wait<0>();
        fence_partial(part);
      }
      if (lane == 0) release_stage(empty + 8 * at.stage);  // every wgmma of stage s retired
    }
    if (pending) promote(total, part);  // the last, open partial
#endif
    scaled_epilogue_tile(total, D, scale_a, scale_b, scale, M, N,
                         row * BM + consumer * CONSUMER_M + warp * 16, col * BN);
  }
#if CLUSTER_M > 1
  cluster_sync();
#endif
}

#endif  // TCSIM_HOPPER
