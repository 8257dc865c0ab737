// The mma.sync throughput ceiling: registers only, no memory traffic in the loop.
// Each warp keeps CHAINS independent accumulators and issues one mma into each per step, so
// the tensor pipe, not the dependency latency, limits the rate. Launch 132 x 8 blocks of 256
// threads (benchmarks/bench_gpu.py). The result is stored only when it equals an impossible
// value, so the compiler must keep every mma.
typedef unsigned int uint32_t;
#define CHAINS 8

extern "C" __global__ void mma_peak_m16n8k8_f32(uint32_t* out, int iterations) {
  uint32_t a[2] = {0x3c003c00u ^ (threadIdx.x & 1), 0x3c003c00u};  // f16 pairs near 1.0
  uint32_t b = 0x00010001u;  // tiny f16 values: the accumulators stay finite
  uint32_t acc[CHAINS][4] = {};
  for (int i = 0; i < iterations; i++) {
#pragma unroll
    for (int c = 0; c < CHAINS; c++) {
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
                   "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
                   : "+r"(acc[c][0]), "+r"(acc[c][1]), "+r"(acc[c][2]), "+r"(acc[c][3])
                   : "r"(a[0]), "r"(a[1]), "r"(b));
    }
  }
  uint32_t x = 0;
  for (int c = 0; c < CHAINS; c++) x ^= acc[c][0] ^ acc[c][1] ^ acc[c][2] ^ acc[c][3];
  if (x == 0x7f812345u) out[0] = x;
}

extern "C" __global__ void mma_peak_m16n8k8_f16(uint32_t* out, int iterations) {
  uint32_t a[2] = {0x3c003c00u ^ (threadIdx.x & 1), 0x3c003c00u};
  uint32_t b = 0x00010001u;
  uint32_t acc[CHAINS][2] = {};
  for (int i = 0; i < iterations; i++) {
#pragma unroll
    for (int c = 0; c < CHAINS; c++) {
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 "
                   "{%0, %1}, {%2, %3}, {%4}, {%0, %1};"
                   : "+r"(acc[c][0]), "+r"(acc[c][1]) : "r"(a[0]), "r"(a[1]), "r"(b));
    }
  }
  uint32_t x = 0;
  for (int c = 0; c < CHAINS; c++) x ^= acc[c][0] ^ acc[c][1];
  if (x == 0x7f812345u) out[0] = x;
}

extern "C" __global__ void mma_peak_m16n8k16_f32(uint32_t* out, int iterations) {
  uint32_t a[4] = {0x3c003c00u ^ (threadIdx.x & 1), 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
  uint32_t b[2] = {0x00010001u, 0x00010001u};
  uint32_t acc[CHAINS][4] = {};
  for (int i = 0; i < iterations; i++) {
#pragma unroll
    for (int c = 0; c < CHAINS; c++) {
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                   "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                   : "+r"(acc[c][0]), "+r"(acc[c][1]), "+r"(acc[c][2]), "+r"(acc[c][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  }
  uint32_t x = 0;
  for (int c = 0; c < CHAINS; c++) x ^= acc[c][0] ^ acc[c][1] ^ acc[c][2] ^ acc[c][3];
  if (x == 0x7f812345u) out[0] = x;
}

extern "C" __global__ void mma_peak_m16n8k16_f16(uint32_t* out, int iterations) {
  uint32_t a[4] = {0x3c003c00u ^ (threadIdx.x & 1), 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
  uint32_t b[2] = {0x00010001u, 0x00010001u};
  uint32_t acc[CHAINS][2] = {};
  for (int i = 0; i < iterations; i++) {
#pragma unroll
    for (int c = 0; c < CHAINS; c++) {
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
                   "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
                   : "+r"(acc[c][0]), "+r"(acc[c][1])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
  }
  uint32_t x = 0;
  for (int c = 0; c < CHAINS; c++) x ^= acc[c][0] ^ acc[c][1];
  if (x == 0x7f812345u) out[0] = x;
}
