// Rope inverse frequencies: default and linear scaling (others are reported unsupported by name).
#include "model/rope_freqs.h"

#include <cmath>

namespace ft {

Result<RopeTable> rope_table(const RopeConfig& rope, int64_t rot_dim, int64_t /*max_position_embeddings*/) {
  if (rot_dim <= 0 || rot_dim % 2) return invalid_argument("rope: rotary dimension " + std::to_string(rot_dim));
  RopeTable t;
  t.rot_dim = rot_dim;
  const float base = static_cast<float>(rope.theta);
  for (int64_t i = 0; i < rot_dim; i += 2) {
    // transformers: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), every step in float32.
    const float exponent = static_cast<float>(i) / static_cast<float>(rot_dim);
    t.inv_freq.push_back(1.0f / std::pow(base, exponent));
  }
  if (rope.type == "default") return t;
  if (rope.type == "linear") {
    for (float& f : t.inv_freq) f /= static_cast<float>(rope.factor);
    return t;
  }
  return unsupported("rope type '" + rope.type + "' is not supported yet");
}

}  // namespace ft
