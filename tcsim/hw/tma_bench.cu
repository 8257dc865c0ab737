// TMA's read rate and latency from L2 into shared memory (sm_90a), for
// benchmarks/bench_gpu_constants.py. One thread per block copies 64 x 64 f16 boxes (8 KiB,
// 128-byte swizzle: the boxes of the Hopper twins) of an L2-resident matrix into a ring of
// `stages` stages of `boxes` boxes, each stage completing on its own mbarrier, and refills a
// stage as soon as its previous copy has landed: `stages` x `boxes` x 8 KiB in flight per
// block. Block b starts at box 15 b and walks the matrix's boxes in order, wrapping around.
// With stages = boxes = 1 on one block, the span over the copies is TMA's latency.
// Launch 32 threads a block with RING_STAGES x RING_BOXES x 8 KiB + 1 KiB of dynamic shared.
#define BM 128  // hopper.cuh's tile constants (unused here: the twins' defaults)
#define BN 256
#define BK 64
#define STAGES 4
#define CONSUMERS 2
#define ACC_F32 0
#define CONSUMER_REGISTERS 232
#define PRODUCER_REGISTERS 40
#include "bench_clock.cuh"
#include "hopper.cuh"

#define RING_STAGES 6
#define RING_BOXES 4
#define BOX_BYTES (64 * 128)

extern "C" __global__ void __launch_bounds__(32) tma_read(const __grid_constant__ TensorMap map,
                                                          int iterations, int stages, int boxes,
                                                          int box_rows, int box_cols,
                                                          unsigned long long* rec) {
#ifdef TCSIM_HOPPER
  const uint32_t ring = shared_address(hopper_shared);
  const uint32_t bars = ring + RING_STAGES * RING_BOXES * BOX_BYTES;  // 8 bytes each
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; s++) mbarrier_init(bars + 8 * s, 1);
    fence_barrier_init();
  }
  __syncthreads();
  const unsigned long long clock0 = clock_now(), global0 = global_now();
  if (threadIdx.x == 0) {
    const int count = box_rows * box_cols;
    int box = (blockIdx.x * 15) % count;
    for (int i = 0; i < iterations + stages; i++) {
      const int s = i % stages;
      const uint32_t bar = bars + 8 * s;
      if (i >= stages) mbarrier_wait(bar, (i / stages - 1) & 1);  // its last fill landed
      if (i >= iterations) continue;
      mbarrier_arrive_expect_tx(bar, boxes * BOX_BYTES);
      for (int b = 0; b < boxes; b++) {
        tma_load_2d(ring + (s * RING_BOXES + b) * BOX_BYTES, &map, (box % box_cols) * 64,
                    (box / box_cols) * 64, bar);
        box = box + 1 == count ? 0 : box + 1;
      }
    }
  }
  __syncthreads();
  write_record(rec, clock0, global0);
#else
  asm volatile("trap;");  // TMA needs sm_90a
#endif
}
