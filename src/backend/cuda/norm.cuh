// The row of rms_norm, shared by rms_norm and qk_norm_rope_store so that both sum and round alike.
#pragma once

#include "backend/cuda/common.cuh"

namespace ft::cuda {

// Threads of the block that reduces one row of d elements (a norm's, softmax's); kernels launched with it declare
// __launch_bounds__(kNormMaxBlock), so that the widest block has the registers it needs.
inline constexpr int kNormMaxBlock = 1024;
inline int norm_row_block(int64_t d) { return d <= 256 ? 32 : d <= 1024 ? 128 : d <= 2048 ? 256 : kNormMaxBlock; }

inline constexpr int kNormRegs = 8;  // rows up to blockDim * 8 are held in registers: one read, loads in flight

// The whole block normalises one row: o[j] = x[j] / sqrt(mean(x^2) + eps) * (w[j] + offset), fp32 math (offset 1:
// zero-centred). load(j) is x[j] as float, read by the thread that owns j; rows longer than blockDim * kNormRegs
// read xr again for the output. o may alias xr. red: 32 floats of shared memory.
template <class TX, class TW, class TO, class Load>
__device__ __forceinline__ void rms_norm_row(const Load& load, const TX* xr, const TW* w, TO* o, int64_t d, float eps,
                                             float offset, float* red) {
  if (d <= int64_t{blockDim.x} * kNormRegs) {
    float v[kNormRegs], wv[kNormRegs];
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < kNormRegs; ++i) {
      const int64_t j = threadIdx.x + int64_t{i} * blockDim.x;
      v[i] = j < d ? load(j) : 0.0f;
      wv[i] = j < d ? to_f32(w[j]) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kNormRegs; ++i) ss += v[i] * v[i];
    ss = block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
#pragma unroll
    for (int i = 0; i < kNormRegs; ++i) {
      const int64_t j = threadIdx.x + int64_t{i} * blockDim.x;
      if (j < d) o[j] = from_f32<TO>(v[i] * inv * (wv[i] + offset));
    }
    return;
  }
  float ss = 0.0f;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float v = load(j);
    ss += v * v;
  }
  ss = block_sum(ss, red);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
    o[j] = from_f32<TO>(to_f32(xr[j]) * inv * (to_f32(w[j]) + offset));
}

}  // namespace ft::cuda
