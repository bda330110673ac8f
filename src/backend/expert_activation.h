// The experts' activation in fp32 (ExpertActivation, ops.h), one formula for the cpu and cuda backends.
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

}  // namespace ft
