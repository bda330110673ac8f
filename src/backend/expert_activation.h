// What the cpu and cuda backends share of MoeExpertParams (ops.h): the activation in fp32, one formula for both, and
// the biases' layout check.
#pragma once

#include <cmath>

#include "backend/host_device.h"
#include "backend/ops.h"

namespace ft {

FT_HOST_DEVICE inline float expert_activation(const ExpertActivation& a, float gate, float up) {
  if (a.kind == ExpertActivation::kSwiglu) return gate / (1.0f + expf(-gate)) * up;
  const float g = fminf(gate, a.limit), u = fminf(fmaxf(up, -a.limit), a.limit);
  return (u + 1.0f) * (g / (1.0f + expf(-a.alpha * g)));
}

// Whether p's biases are undefined or [>= n_expert, 2 inter] and [>= n_expert, d] in the weights' dtype (f32 or bf16
// beside MXFP4 weights), contiguous along their rows.
inline bool expert_biases_fit(const MoeExpertParams& p, DType weights, int64_t n_expert, int64_t inter, int64_t d) {
  const auto dtype_fits = [&](DType b) {
    return weights == DType::kF4E2M1 ? b == DType::kF32 || b == DType::kBF16 : b == weights;
  };
  const auto fits = [&](const Tensor& b, int64_t len) {
    return !b.defined() ||
           (dtype_fits(b.dtype) && b.ndim == 2 && b.dim(0) >= n_expert && b.dim(1) == len && b.stride[1] == 1);
  };
  return fits(p.gate_up_bias, 2 * inter) && fits(p.down_bias, d);
}

// Whether MXFP4 weights gate_up [n_expert, 2 inter, d] and down [n_expert, d, inter] (f4_e2m1, rows contiguous and
// whole bytes apart) come with their scales as ops.h's MoeExpertParams describes them; true for other weights, whose
// scales must be undefined.
inline bool expert_scales_fit(const MoeExpertParams& p, const Tensor& gate_up, const Tensor& down) {
  const auto fits = [](const Tensor& w, const Tensor& scales) {
    if (w.dtype != DType::kF4E2M1) return !scales.defined();
    const int64_t cols = w.dim(2);
    return cols % 32 == 0 && w.stride[2] == 1 && w.stride[1] % 2 == 0 && w.stride[0] % 2 == 0 && scales.defined() &&
           scales.dtype == DType::kUE8M0 && scales.ndim == 3 && scales.dim(0) >= w.dim(0) &&
           scales.dim(1) == w.dim(1) && scales.dim(2) == cols / 32 && scales.stride[2] == 1;
  };
  return gate_up.dtype == down.dtype && fits(gate_up, p.gate_up_scales) && fits(down, p.down_scales);
}

}  // namespace ft
