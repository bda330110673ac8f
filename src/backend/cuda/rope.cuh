// The rotation of rope, shared by rope and qk_norm_rope_store so that both rotate alike.
#pragma once

#include "backend/cuda/common.cuh"

namespace ft::cuda {

inline constexpr int64_t kRopeMaxHalf = 512;  // rot_dim / 2 limit (as the CPU op)

// The cos and sin of angle = pos * inv_freq, a float multiply (as transformers forms it), taken in double, times
// factor, rounded to float, as the CPU op does.
__device__ __forceinline__ void rope_cos_sin(float pos, float inv_freq, float factor, float& c, float& sn) {
  const float angle = __fmul_rn(pos, inv_freq);
  double cd, sd;
  sincos(static_cast<double>(angle), &sd, &cd);
  c = static_cast<float>(cd * factor);
  sn = static_cast<float>(sd * factor);
}

// (y0, y1) = the pair (x0, x1) rotated by the angle whose cos and sin rope_cos_sin gives.
__device__ __forceinline__ void rope_rotate(float c, float sn, float x0, float x1, float& y0, float& y1) {
  y0 = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, sn));
  y1 = __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, sn));
}

// (y0, y1) = the pair (x0, x1) rotated by angle = pos * inv_freq (rope_cos_sin, rope_rotate).
__device__ __forceinline__ void rope_pair(float pos, float inv_freq, float factor, float x0, float x1, float& y0,
                                          float& y1) {
  float c, sn;
  rope_cos_sin(pos, inv_freq, factor, c, sn);
  rope_rotate(c, sn, x0, x1, y0, y1);
}

}  // namespace ft::cuda
