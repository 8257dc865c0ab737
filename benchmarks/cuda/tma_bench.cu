// TMA's read rate and latency from L2 into shared memory (sm_90a), for
// benchmarks/bench_gpu_constants.py. One thread per block copies boxes of `box_height` rows x
// `box_width` f16 columns (64: 128 bytes a row, the 128-byte swizzle: 64 rows are the Hopper
// twins' B boxes, 128 their A boxes; 32: 64 bytes a row, the 64-byte swizzle of the twins' B
// boxes in tiles 96 wide; the map says which) of an L2-resident matrix into a ring of `stages`
// stages of `boxes` boxes, each stage completing on its own mbarrier, and refills a stage as soon
// as its previous copy has landed: `stages` x `boxes` boxes in flight per block (at most 192 KiB).
// The matrix has `box_rows` x `box_cols` boxes. Blocks come in groups of `share` consecutive
// blocks; those of group g start at box 15 g and walk the boxes in order, wrapping around, so with
// share > 1 several SMs ask for the same boxes at about the same time, as the blocks of a GEMM's
// wave do.
// With stages = boxes = 1 on one block, the span over the copies is TMA's latency.
// Launch 32 threads a block with stages x boxes x box bytes + 1 KiB of dynamic shared.
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

extern "C" __global__ void __launch_bounds__(32) tma_read(const __grid_constant__ TensorMap map,
                                                          int iterations, int stages, int boxes,
                                                          int box_height, int box_rows,
                                                          int box_cols, int share,
                                                          int box_width,
                                                          unsigned long long* rec) {
#ifdef TCSIM_HOPPER
  const uint32_t ring = shared_address(hopper_shared);
  const int box_bytes = box_height * box_width * 2;
  const uint32_t bars = ring + stages * boxes * box_bytes;  // 8 bytes each
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; s++) mbarrier_init(bars + 8 * s, 1);
    fence_barrier_init();
  }
  __syncthreads();
  const unsigned long long clock0 = clock_now(), global0 = global_now();
  if (threadIdx.x == 0) {
    const int count = box_rows * box_cols;
    int box = (blockIdx.x / share * 15) % count;
    // The box's coordinates are stepped, not divided out of `box`: with two divisions per box
    // the one thread held the copies to 29 bytes per SM per cycle on all SMs (23 on one SM
    // with a third division); stepped, 41 on one SM (docs/performance.md).
    int col = box % box_cols * box_width, row = box / box_cols * box_height;
    for (int i = 0; i < iterations + stages; i++) {
      const int s = i % stages;
      const uint32_t bar = bars + 8 * s;
      if (i >= stages) mbarrier_wait(bar, (i / stages - 1) & 1);  // its last fill landed
      if (i >= iterations) continue;
      mbarrier_arrive_expect_tx(bar, boxes * box_bytes);
      for (int b = 0; b < boxes; b++) {
        tma_load_2d(ring + (s * boxes + b) * box_bytes, &map, col, row, bar);
        col += box_width;
        if (col == box_cols * box_width) {
          col = 0;
          row = row + box_height == box_rows * box_height ? 0 : row + box_height;
        }
      }
    }
  }
  __syncthreads();
  write_record(rec, clock0, global0);
#else
  asm volatile("trap;");  // TMA needs sm_90a
#endif
}
