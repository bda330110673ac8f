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

// Whether p's biases are undefined or [>= n_expert, 2 inter] and [>= n_expert, d] in the weights' dtype, contiguous
// along their rows.
inline bool expert_biases_fit(const MoeExpertParams& p, DType weights, int64_t n_expert, int64_t inter, int64_t d) {
  const auto fits = [&](const Tensor& b, int64_t len) {
    return !b.defined() ||
           (b.dtype == weights && b.ndim == 2 && b.dim(0) >= n_expert && b.dim(1) == len && b.stride[1] == 1);
  };
  return fits(p.gate_up_bias, 2 * inter) && fits(p.down_bias, d);
}

}  // namespace ft
