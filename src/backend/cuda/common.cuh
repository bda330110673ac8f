// Device helpers shared by the CUDA ops: element types, fp32 loads/stores, warp and block reductions,
// strided row addressing, dtype dispatch and argument checks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_stream.h"

namespace ft::cuda {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(bf16 v) { return __bfloat162float(v); }
template <class T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ bf16 from_f32<bf16>(float v) { return __float2bfloat16_rn(v); }

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum / max over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `red` is 32 floats of shared memory; the block must not be inside a divergent branch.
__device__ __forceinline__ float block_sum(float v, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warp = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < n_warp ? red[lane] : 0.0f;
  return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warp = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < n_warp ? red[lane] : -INFINITY;
  return warp_max(v);
}

// A tensor [..., d] viewed as rows: up to three outer dims of any stride (innermost stride 1).
struct RowMap {
  int n_outer = 0;
  int64_t shape[3] = {1, 1, 1};
  int64_t stride[3] = {0, 0, 0};
  __host__ __device__ int64_t offset(int64_t row) const {
    int64_t off = 0;
    const auto dim = [&](int i) {  // called with constants: the arrays stay in registers, not on the stack
      if (i >= n_outer) return;
      off += (row % shape[i]) * stride[i];
      row /= shape[i];
    };
    dim(2), dim(1), dim(0);
    return off;
  }
};
inline RowMap row_map(const Tensor& t) {
  RowMap m;
  m.n_outer = t.ndim - 1;
  for (int i = 0; i < m.n_outer; ++i) {
    m.shape[i] = t.shape[i];
    m.stride[i] = t.stride[i];
  }
  return m;
}

inline bool is_fb(DType t) { return t == DType::kF32 || t == DType::kBF16; }

// Calls f(T{}) with T the element type of dtype t (float or bf16); t must be f32 or bf16.
template <class F>
void with_type(DType t, F&& f) {
  if (t == DType::kBF16) f(bf16{});
  else f(float{});
}

// Calls f(T1{}, ..., Tn{}) with Ti the element type of ts[i], as with_type does for one dtype.
template <size_t I = 0, size_t N, class F, class... Done>
void with_types(const DType (&ts)[N], F&& f, Done... done) {
  if constexpr (I == N) f(done...);
  else with_type(ts[I], [&](auto t) { with_types<I + 1>(ts, f, done..., t); });
}

inline Status dtype_error(const char* op, const char* what, const Tensor& t) {
  return unsupported(std::string("cuda ") + op + ": " + what + " " + t.shape_string() + " is not supported");
}
inline Status shape_error(const char* op, const std::string& what) {
  return invalid_argument(std::string("cuda ") + op + ": " + what);
}
inline Status device_check(const char* op, std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->defined() && t->device().is_cpu()) return shape_error(op, "tensor " + t->shape_string() + " is in host memory");
  for (const Tensor* t : ts)
    if (t->defined() && !t->rows_contiguous()) return shape_error(op, "innermost dim of " + t->shape_string() + " is strided");
  return ok_status();
}

inline unsigned grid_for(int64_t n, int block) { return static_cast<unsigned>((n + block - 1) / block); }

}  // namespace ft::cuda
