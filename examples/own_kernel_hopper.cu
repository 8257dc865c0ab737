// The CUDA of `mine_hopper` (examples/own_kernel.py, docs/own-kernel.md), written by hand
// from its schedule: one producer thread copies A's and B's K tiles by TMA into two stages
// that complete on mbarriers; one consumer warpgroup waits for a stage, issues wgmma
// m64n256k16 on it (128-byte swizzle, through matrix descriptors), waits for them and
// releases the stage. Same instructions at the same addresses as the schedule, so
// tcsim.hw.verify finds the same bits and the same Nsight Compute counters:
//
//   tcsim.hw.verify(mine_hopper, "examples/own_kernel_hopper.cu", 1024, 1024, 1024)
//
// hopper.cuh (tcsim's, found on tcsim's include path) has the PTX: mbarriers, TMA copies,
// descriptors, wgmma. It is Hopper-only code (sm_90a): on other targets the kernel traps.

// mine_hopper's tiles (Kernel.defines; verify passes the same values as -D), before
// hopper.cuh, which sizes its accumulators and stages from them.
#ifndef BM
#define BM 64
#define BN 256
#define BK 64
#define STAGES 2
#define CONSUMERS 1
#define ACC_F32 0
#endif
#if ACC_F32 || CONSUMERS != 1 || BM != 64
#error "own_kernel_hopper.cu: one consumer warpgroup (BM 64) with f16 accumulators, as mine_hopper"
#endif
// hopper.cuh's own kernel (not used here) shares its registers out with setmaxnreg.
#define PRODUCER_REGISTERS 40
#define CONSUMER_REGISTERS 232
#include "hopper.cuh"

// The launcher's parameters for a kernel with tensor maps: GEMM_PARAMS (A, B, C, D, alpha,
// beta, M, N, K), then A's and B's CUtensorMap as __grid_constant__ values (Kernel.tensor_maps).
// Grid (N / BN, M / BM), 256 threads (a producer warpgroup, then the consumer), the stages'
// and barriers' bytes of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(THREADS) mine_hopper(HOPPER_GEMM_PARAMS) {
#ifdef TCSIM_HOPPER
  // Shared memory: STAGES x (A's 64 x 64 tile, B's four 64 x 64 boxes), then the barriers.
  const uint32_t base = shared_address(hopper_shared);
  const uint32_t full = base + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
  const int k_tiles = K / BK;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbarrier_init(full + 8 * s, 1);   // the producer's arrive.expect_tx; TMA does the rest
      mbarrier_init(empty + 8 * s, 4);  // one arrival per consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();  // the barriers are initialized before anyone uses them

  if (threadIdx.x < WARPGROUP) {  // the producer: one thread
    if (threadIdx.x == 0) {
      for (int k = 0; k < k_tiles; k++) {
        const int s = k % STAGES;
        if (k >= STAGES) mbarrier_wait(empty + 8 * s, (k / STAGES - 1) & 1);
        const uint32_t a = base + s * STAGE_BYTES;
        mbarrier_arrive_expect_tx(full + 8 * s, STAGE_BYTES);
        tma_load_2d(a, &tensor_a, k * BK, blockIdx.y * BM, full + 8 * s);
        for (int box = 0; box < BN / 64; box++)
          tma_load_2d(a + A_STAGE_BYTES + box * BK * 128, &tensor_b, blockIdx.x * BN + box * 64,
                      k * BK, full + 8 * s);
      }
    }
    return;
  }

  // The consumer warpgroup.
  const int t = threadIdx.x - WARPGROUP, lane = t % 32;
  acc_t acc[ACC_REGS];
#pragma unroll
  for (int i = 0; i < ACC_REGS; i++) acc[i] = 0;
  for (int k = 0; k < k_tiles; k++) {
    const int s = k % STAGES;
    mbarrier_wait(full + 8 * s, (k / STAGES) & 1);
    const uint32_t a = base + s * STAGE_BYTES, b = a + A_STAGE_BYTES;
    fence_registers(acc);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++)  // A: 32 bytes along its 128-byte rows; B: 16 rows
      wgmma_tile(acc, descriptor(a + kk * 32, 16, 8 * 128),
                 descriptor(b + kk * 16 * 128, BK * 128, 8 * 128));
    wgmma_commit();
    wgmma_wait<0>();  // this stage's wgmma are done reading it
    fence_registers(acc);
    if (lane == 0) mbarrier_arrive(empty + 8 * s);
  }
  // D: register j of thread t holds the f16 pair at row 16 (t / 32) + (t % 32) / 4 + 8 (j % 2),
  // column 8 (j / 2) + 2 (t % 4) of the block's 64 x 256 tile (wgmma's accumulator fragment).
  const int row = blockIdx.y * BM + 16 * (t / 32) + lane / 4, col = blockIdx.x * BN + 2 * (t % 4);
#pragma unroll
  for (int j = 0; j < ACC_REGS; j++)
    st_global_b32(D + (uint64_t)(row + 8 * (j % 2)) * N + col + 8 * (j / 2), acc[j]);
#else
  asm volatile("trap;");  // TMA and wgmma need sm_90a
#endif
}
