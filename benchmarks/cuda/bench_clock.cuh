// Per-block timing records of the microbenchmarks (microbench.cu, wgmma_peak.cu, tma_bench.cu;
// read by benchmarks/bench_gpu_constants.py): RECORD u64 per block, {smid, clock64 at start,
// clock64 at end, globaltimer at start, globaltimer at end}, written by thread 0.
#pragma once

#define RECORD 5

__device__ __forceinline__ unsigned long long clock_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

__device__ __forceinline__ unsigned long long global_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}

__device__ __forceinline__ unsigned int sm_id() {
  unsigned int s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// Thread 0 writes its block's record, the end read now; a null `rec` records nothing.
__device__ __forceinline__ void write_record(unsigned long long* rec, unsigned long long clock0,
                                             unsigned long long global0) {
  if (rec == nullptr || threadIdx.x != 0) return;
  const unsigned long long clock1 = clock_now();
  const unsigned long long global1 = global_now();
  unsigned long long* r = rec + (unsigned long long)blockIdx.x * RECORD;
  r[0] = sm_id();
  r[1] = clock0;
  r[2] = clock1;
  r[3] = global0;
  r[4] = global1;
}
