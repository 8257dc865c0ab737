// Timing bounds, not kernels: kernel8's twin (hopper.cuh) with a part taken out, to time the
// rest (scripts/explore_epilogue.py; bench_gpu_constants.py's tma_gemm_feed; ncu_tma.py).
// benchmarks/explore.py puts this header ahead of the twin's source and sets the switches:
//   EXPLORE_NO_C         the epilogue loads no C (D then ignores C: the contract only when beta
//                        is 0 and C finite)
//   EXPLORE_NO_D         kernel8 stores no D (nor does the arithmetic only D needs)
//   EXPLORE_NO_EPILOGUE  no epilogue at all
//   EXPLORE_NO_MMA       the consumers issue no wgmma (the tiles still arrive and are
//                        released): the kernel is its TMA copies alone
// D and the epilogue stay behind a test of alpha that never holds, so that the compiler keeps
// the accumulators (and the work that feeds them) that it would otherwise drop as unused.
//
// And one switch of an experiment on kernel9's and kernel10's staged epilogues, whose hooks
// (the second part of this file) scripts/study_epilogue_contention.py patches into a copy of
// hopper.cuh (the twins have no such hook). EXPLORE_QUIET_EPILOGUE is a sum of
//   1  drained: before each tile's epilogue the consumers meet (named barrier 1) once the
//      producer's copies of the stages it may fill ahead have landed, and meet again after it:
//      no TMA load of A or B and no wgmma runs during an epilogue;
//   2  turns: the consumer warps take turns at the epilogue, one at a time;
//   4  own copies done: each warp's own copies of C and D (TMA, or ld/st.global) finish
//      before its next shared-memory access.
// 7 (quiet): nothing else touches the SM's shared memory or its L1 while a warp's epilogue
// does. The bits of D stay those of the kernel (the study checks them).
#ifndef EXPLORE_SWITCHES
#define EXPLORE_SWITCHES

#ifndef EXPLORE_NO_C
#define EXPLORE_NO_C 0
#endif
#ifndef EXPLORE_NO_D
#define EXPLORE_NO_D 0
#endif
#ifndef EXPLORE_NO_EPILOGUE
#define EXPLORE_NO_EPILOGUE 0
#endif
#ifndef EXPLORE_NO_MMA
#define EXPLORE_NO_MMA 0
#endif
#ifndef EXPLORE_QUIET_EPILOGUE
#define EXPLORE_QUIET_EPILOGUE 0
#endif

#define EXPLORE_NEVER(alpha) ((alpha) == 12345.0f)
#define EXPLORE_KEEP_C_LOADS(alpha) (!EXPLORE_NO_C)
#define EXPLORE_KEEP_D_STORES(alpha) (!EXPLORE_NO_D || EXPLORE_NEVER(alpha))
#define EXPLORE_KEEP_EPILOGUE(alpha) (!EXPLORE_NO_EPILOGUE || EXPLORE_NEVER(alpha))
#define EXPLORE_KEEP_MMA(alpha) (!EXPLORE_NO_MMA)
// hopper.cuh's hook: whether the kernel keeps `part`
#define TIMING_KEEP(part, alpha) EXPLORE_KEEP_##part(alpha)
// The warps that take turns at the epilogue (1: all at once), and a warp's own copies finished
// before its next shared access.
#define EXPLORE_DRAINED (EXPLORE_QUIET_EPILOGUE & 1)
#define EXPLORE_TURNS (EXPLORE_QUIET_EPILOGUE & 2 ? CONSUMERS * 4 : 1)
#define EXPLORE_OWN_COPIES_DONE (EXPLORE_QUIET_EPILOGUE & 4)
#endif  // EXPLORE_SWITCHES

// ---- EXPLORE_QUIET_EPILOGUE's hooks: included a second time, by the patched hopper.cuh, after
// its mbarrier and TMA helpers (EXPLORE_HOOKS_HERE) --------------------------------------------
#if defined(EXPLORE_HOOKS_HERE) && !defined(EXPLORE_HOOKS)
#define EXPLORE_HOOKS
#if EXPLORE_QUIET_EPILOGUE && CLUSTER_M > 1
#error "explore.cuh: EXPLORE_QUIET_EPILOGUE counts the producer's copies of one block"
#endif

// The consumer warpgroups' threads meet (the producer's warpgroup is not in barrier 1).
__device__ __forceinline__ void explore_consumers_meet() {
  asm volatile("bar.sync 1, %0;" : : "n"(CONSUMERS * WARPGROUP) : "memory");
}

// Before tile t's epilogue, the consumer having used `it` stages so far: every consumer's wgmma
// is done (the meeting), and so are the producer's copies of the stages it may fill ahead (the
// next min(STAGES, stages left) of the block's tiles; it fills no more before a consumer
// releases one, which it does only in its next main loop).
__device__ __forceinline__ void explore_before_epilogue(uint32_t full, int it, int t, int tiles,
                                                        int k_tiles) {
  if (!EXPLORE_DRAINED) return;
  const int later = (tiles - 1 - t) / (int)gridDim.x * k_tiles;  // stages of the later tiles
  for (int i = it; i < it + min(STAGES, later); i++)
    mbarrier_wait(full + 8 * (i % STAGES), (i / STAGES) & 1);
  explore_consumers_meet();
}

// Turn `turn` of the epilogue: whether it is this warp's (every warp's without turns).
__device__ __forceinline__ bool explore_my_turn(int turn) {
  if (EXPLORE_TURNS == 1) return true;
  explore_consumers_meet();  // the warp before has finished, its copies included
  return turn == (int)threadIdx.x / 32 - WARPGROUP / 32;
}

// After the epilogue: no consumer starts its next tile's wgmma while another stages its D.
__device__ __forceinline__ void explore_after_epilogue() {
  if (EXPLORE_DRAINED || EXPLORE_TURNS > 1) explore_consumers_meet();
}

#if TMA_STORE_EPILOGUE
// kernel10: the warp's first boxes of C (asked for in the main loop) have landed before the
// turns begin, so that none lands during another warp's turn.
__device__ __forceinline__ void explore_c_boxes_landed(uint32_t c_full, int stores, bool read_c) {
  if (!EXPLORE_OWN_COPIES_DONE || !read_c) return;
  for (int x = stores; x < stores + min(STORE_BUFFERS, BN / 64); x++)
    mbarrier_wait(c_full + 8 * (x % STORE_BUFFERS), x / STORE_BUFFERS & 1);
}
// kernel10, lane 0: the store just committed has finished, and the box of C just asked for has
// landed, before the warp's next ldmatrix or stmatrix.
__device__ __forceinline__ void explore_store_done() {
  if (EXPLORE_OWN_COPIES_DONE) bulk_wait<0>();
}
__device__ __forceinline__ void explore_c_box_landed(uint32_t c_full, int x) {
  if (EXPLORE_OWN_COPIES_DONE)
    mbarrier_wait(c_full + 8 * (x % STORE_BUFFERS), x / STORE_BUFFERS & 1);
}
#endif
// kernel9: 0, computed from every word of the chunk's C lines, added to its first st.shared's
// address: that store waits for all four loads, not only its own (alpha is never 12345).
__device__ __forceinline__ uint32_t explore_lines_landed(const uint32_t (&lines)[4][4],
                                                        float alpha) {
  if (!EXPLORE_OWN_COPIES_DONE) return 0;
  uint32_t x = 0;
#pragma unroll
  for (int q = 0; q < 4; q++)
#pragma unroll
    for (int i = 0; i < 4; i++) x ^= lines[q][i];
  return EXPLORE_NEVER(alpha) ? x & 0x70u : 0u;
}
// kernel9: the warp's stores of D have reached the GPU's point of coherence before its next
// shared access (its loads of C are not issued ahead: the patched loop loads each chunk's C
// where it stores it to shared memory, which waits for it).
__device__ __forceinline__ void explore_global_stores_done() {
  if (EXPLORE_OWN_COPIES_DONE) asm volatile("fence.acq_rel.gpu;" : : : "memory");
}
#endif  // EXPLORE_HOOKS_HERE
