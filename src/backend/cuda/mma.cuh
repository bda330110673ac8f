// Tensor-core building blocks for sm_80+ kernels (every arch this backend builds for): asynchronous 16-byte
// global -> shared copies (cp.async), shared -> register fragment loads (ldmatrix) and the bf16 MMA
// m16n8k16 with fp32 accumulators. Fragment layouts are PTX's (ISA, "Matrix Fragments for mma.m16n8k16"):
//  A (16x16, row major) 4 regs: a0 rows g, cols 2t..2t+1; a1 rows g+8; a2 rows g, cols 2t+8..; a3 rows g+8, cols 2t+8..
//  B (16x8, k x n)      2 regs: b0 k 2t..2t+1, col g; b1 k 2t+8..2t+9, col g
//  C (16x8)             4 fp32: c0,c1 row g cols 2t, 2t+1; c2,c3 row g+8
// where g = lane / 4 and t = lane % 4.
#pragma once

#include <cstdint>

#include "backend/cuda/common.cuh"

namespace ft::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1; src_bytes < 16 zero-fills the rest (0: all zeros, src not read).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 bf16 matrices; lane l gives the row address of matrix l / 8, row l % 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
// The same, each matrix transposed (for B operands stored k-major, as V is).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// c += a b: bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two fp32 values as a bf16 pair (lo in the low half), round to nearest even.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// 2^x on the special function unit, subnormal results flushed to zero (softmax in the log2 domain).
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// One step of the online softmax on MMA accumulators, for half i of a 16-row tile (i = 0: row g, elements c0 c1;
// i = 1: row g + 8, c2 c3) over the N n8 key tiles of S (in the log2 domain, masked keys -inf): the row's max over
// its quad of lanes, l and the row's O accumulators rescaled to it, S -> exp2(S - max), and l += this lane's new
// probabilities. A row with no key seen yet (max -inf) keeps p = 0.
template <int N, int DN>
__device__ __forceinline__ void online_softmax_step(int i, float (&s)[N][4], float& m, float& l, float (&o)[DN][4]) {
  float mx = m;
#pragma unroll
  for (int jn = 0; jn < N; ++jn) mx = fmaxf(mx, fmaxf(s[jn][2 * i], s[jn][2 * i + 1]));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float base = mx == -INFINITY ? 0.0f : mx;
  const float alpha = exp2_ftz(m - base);
  m = mx;
  l *= alpha;
#pragma unroll
  for (int dn = 0; dn < DN; ++dn) o[dn][2 * i] *= alpha, o[dn][2 * i + 1] *= alpha;
#pragma unroll
  for (int jn = 0; jn < N; ++jn)
#pragma unroll
    for (int e = 2 * i; e < 2 * i + 2; ++e) {
      s[jn][e] = exp2_ftz(s[jn][e] - base);
      l += s[jn][e];
    }
}

}  // namespace ft::cuda
