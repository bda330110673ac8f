// Rotary inverse frequencies per rope type, formed in float32 exactly as transformers forms them.
#pragma once

#include <vector>

#include "io/model_config.h"

namespace ft {

struct RopeTable {
  std::vector<float> inv_freq;   // [rot_dim / 2]
  float attention_factor = 1.0f; // multiplies cos and sin
  int64_t rot_dim = 0;
};

// YaRN's magnitude scale of a context grown by `scale`: 0.1 mscale ln(scale) + 1 (1 when scale <= 1).
double yarn_mscale(double scale, double mscale);

// rot_dim: the rotated leading dims of a head (head_dim * partial_rotary_factor, or qk_rope_head_dim).
Result<RopeTable> rope_table(const RopeConfig& rope, int64_t rot_dim, int64_t max_position_embeddings);

}  // namespace ft
