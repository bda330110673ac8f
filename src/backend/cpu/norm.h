// The row of rms_norm, shared by the ops that end in one (rms_norm, qk_norm_rope_store), so that both round alike.
#pragma once

#include <cmath>

#include "backend/cpu/kernels.h"
#include "backend/ops.h"

namespace ft::cpu {

// o[j] = x[j] / sqrt(mean(x^2) + eps) * w[j] (or * (1 + w[j]), formed in fp32), j < d; o may alias x.
// w [d] f32/bf16.
inline void rms_norm_row(const CpuKernels& kn, const float* x, const Tensor& w, const RmsNormParams& p, float* o,
                         int64_t d) {
  const float mean = kn.sum_squares(x, d) / static_cast<float>(d);
  const float inv = 1.0f / std::sqrt(mean + p.eps);
  if (w.dtype == DType::kBF16)
    kn.scale_mul_bf16(x, inv, w.ptr<const uint16_t>(), p.zero_centered, o, d);
  else
    kn.scale_mul_f32(x, inv, w.ptr<const float>(), p.zero_centered, o, d);
}

}  // namespace ft::cpu
