// What every GEMM twin shares (gemm.cuh for the mma.sync ladder, kernel7.cu for wgmma): the
// integer types (NVRTC cannot open <cstdint>), shared-memory addresses, the epilogue's global
// accesses and its arithmetic, each step an explicit round-to-nearest PTX instruction so that
// the compiler can neither contract a multiply and an add into an FMA nor change the counts.
#pragma once

typedef unsigned int uint32_t;
typedef unsigned short uint16_t;
typedef unsigned long long uint64_t;

// Every GEMM twin's parameters: D = alpha * A @ B + beta * C, all row-major.
#define GEMM_PARAMS                                                                          \
  const uint16_t *__restrict__ A, const uint16_t *__restrict__ B,                            \
      const uint16_t *__restrict__ C, uint16_t *__restrict__ D, float alpha, float beta, int M, \
      int N, int K

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  uint32_t a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// CuTe's Swizzle<bits, base, shift> (tcsim.memory.Swizzle) on an offset.
__device__ __forceinline__ uint32_t swizzle(uint32_t x, int bits, int base, int shift) {
  const uint32_t yyy = ((1u << bits) - 1u) << (base + shift);
  return x ^ ((x & yyy) >> shift);
}

__device__ __forceinline__ uint32_t ld_global_b32(const uint16_t* p) {
  uint32_t r;
  asm volatile("ld.global.b32 %0, [%1];" : "=r"(r) : "l"(p) : "memory");
  return r;
}
__device__ __forceinline__ void st_global_b32(uint16_t* p, uint32_t v) {
  asm volatile("st.global.b32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}

// 16-byte moves between global memory, shared memory and registers.
#ifndef TILE_LOAD
#define TILE_LOAD "ld.global.cg.v4.u32"  // L2 only: see LD_GLOBAL in tcsim/kernels/machine.py
#endif
__device__ __forceinline__ void ld_global_v4(uint32_t (&r)[4], const uint16_t* p) {
  asm volatile(TILE_LOAD " {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"(p) : "memory");
}
__device__ __forceinline__ void st_shared_v4(uint32_t addr, const uint32_t (&r)[4]) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};"
               : : "r"(addr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                            uint32_t& r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory");
}

// f32 arithmetic with the rounding spelled out: no contraction, no fast-math.
__device__ __forceinline__ float f16_to_f32(uint32_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((uint16_t)h));
  return f;
}
__device__ __forceinline__ uint32_t f32_to_f16(float f) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float mul_rn(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float add_rn(float a, float b) {
  float r;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// bf16 (the Hopper rungs' output="bf16", OUT_BF16 1): C's and D's elements convert the same way.
__device__ __forceinline__ float bf16_to_f32(uint32_t h) {  // exact: the f32's top half
  float f;
  asm("mov.b32 %0, {%1, %2};" : "=f"(f) : "h"((uint16_t)0), "h"((uint16_t)h));
  return f;
}
__device__ __forceinline__ uint32_t f32_to_bf16(float f) {
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#ifndef OUT_BF16
#define OUT_BF16 0
#endif
#if OUT_BF16
#define OUT_TO_F32 bf16_to_f32
#define F32_TO_OUT f32_to_bf16
#else
#define OUT_TO_F32 f16_to_f32
#define F32_TO_OUT f32_to_f16
#endif

// One element of D before its rounding to f16: add.rn(mul.rn(alpha, x), mul.rn(beta, c)), or
// with beta 0 mul.rn(alpha, x) (BLAS: C is not read, so its NaN, infinities and zero signs
// never reach D; tcsim.kernels.blocks.epilogue_words). Adding -0 leaves every value as it is,
// -0 included, so beta 0 selects -0 as the addend.
__device__ __forceinline__ float scaled(float x, float c, float alpha, float beta) {
  return add_rn(mul_rn(alpha, x), beta == 0.0f ? -0.0f : mul_rn(beta, c));
}
// One f16 (OUT_BF16: bf16) pair of D for the two elements of a 32-bit word of C.
__device__ __forceinline__ uint32_t epilogue_pair(float x0, float x1, uint32_t c, float alpha,
                                                  float beta) {
  const uint32_t d0 = F32_TO_OUT(scaled(x0, OUT_TO_F32(c & 0xffffu), alpha, beta));
  const uint32_t d1 = F32_TO_OUT(scaled(x1, OUT_TO_F32(c >> 16), alpha, beta));
  return d0 | d1 << 16;
}
