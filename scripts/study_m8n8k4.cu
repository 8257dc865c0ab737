// Study kernels for mma.sync.aligned.m8n8k4 on sm_90: compile with nvcc -arch=sm_90 -cubin
// and read cuobjdump -sass to see how ptxas lowers the instruction (issue: m8n8k4).
typedef unsigned int uint32_t;

extern "C" __global__ void study_mma_m8n8k4_row_row_f32_f16_f16_f32(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[8], d[8];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 8; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.row.row.f32.f16.f16.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%12, %13, %14, %15, %16, %17, %18, %19};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(c[5]), "r"(c[6]), "r"(c[7]));
    for (int i = 0; i < 8; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_row_row_f16_f16_f16_f16(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[4], d[4];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 4; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.row.row.f16.f16.f16.f16 {%0, %1, %2, %3}, {%4, %5}, {%6, %7}, {%8, %9, %10, %11};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 4; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_row_row_f32_f16_f16_f16(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[4], d[8];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 4; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.row.row.f32.f16.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%12, %13, %14, %15};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 8; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_row_col_f32_f16_f16_f32(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[8], d[8];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 8; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%12, %13, %14, %15, %16, %17, %18, %19};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(c[5]), "r"(c[6]), "r"(c[7]));
    for (int i = 0; i < 8; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_row_col_f16_f16_f16_f16(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[4], d[4];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 4; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16 {%0, %1, %2, %3}, {%4, %5}, {%6, %7}, {%8, %9, %10, %11};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 4; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_row_col_f32_f16_f16_f16(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[4], d[8];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 4; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%12, %13, %14, %15};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 8; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_col_row_f32_f16_f16_f32(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[8], d[8];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 8; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%12, %13, %14, %15, %16, %17, %18, %19};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(c[5]), "r"(c[6]), "r"(c[7]));
    for (int i = 0; i < 8; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_col_row_f16_f16_f16_f16(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[4], d[4];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 4; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.col.row.f16.f16.f16.f16 {%0, %1, %2, %3}, {%4, %5}, {%6, %7}, {%8, %9, %10, %11};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 4; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_col_row_f32_f16_f16_f16(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[4], d[8];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 4; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%12, %13, %14, %15};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 8; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_col_col_f32_f16_f16_f32(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[8], d[8];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 8; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.col.col.f32.f16.f16.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%12, %13, %14, %15, %16, %17, %18, %19};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(c[5]), "r"(c[6]), "r"(c[7]));
    for (int i = 0; i < 8; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_col_col_f16_f16_f16_f16(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[4], d[4];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 4; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.col.col.f16.f16.f16.f16 {%0, %1, %2, %3}, {%4, %5}, {%6, %7}, {%8, %9, %10, %11};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 4; ++i) o[t * 8 + i] = d[i];
}

extern "C" __global__ void study_mma_m8n8k4_col_col_f32_f16_f16_f16(const uint32_t* g, uint32_t* o) {
    const int t = threadIdx.x; uint32_t a[2], b[2], c[4], d[8];
    for (int i = 0; i < 2; ++i) { a[i] = g[t * 16 + i]; b[i] = g[t * 16 + 2 + i]; }
    for (int i = 0; i < 4; ++i) c[i] = g[t * 16 + 4 + i];
    asm volatile("mma.sync.aligned.m8n8k4.col.col.f32.f16.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9}, {%10, %11}, {%12, %13, %14, %15};" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]), "=r"(d[7]) : "r"(a[0]), "r"(a[1]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 8; ++i) o[t * 8 + i] = d[i];
}

