// Gated full attention (Qwen3.5 / Qwen3-Next): q_proj yields each head's query and output gate, zero-centred
// q/k RMSNorm, partial rotary, GQA over the paged cache, output * sigmoid(gate), o_proj.
#pragma once

#include <string>

#include "model/layers.h"

namespace ft {

struct GatedAttention {
  int64_t layer = 0, n_head = 0, n_kv = 0, head_dim = 0;
  Linear qkv;  // [n_head * 2 head_dim (query, gate per head) + 2 n_kv head_dim, d]
  Linear o;    // [d, n_head head_dim]
  Tensor q_norm, k_norm;  // [head_dim]
  RmsNormParams norm;     // zero-centred
  RopeParams rope;
  Tensor inv_freq;        // [rot_dim / 2] f32
  AttentionParams attn;

  // Columns of the fused projection.
  static int64_t qkv_width(const ModelConfig& c) { return (2 * c.n_head + 2 * c.n_kv_head) * c.head_dim; }
  static Result<GatedAttention> load(WeightLoader& w, const std::string& prefix, const ModelConfig& c, int64_t layer,
                                     const Tensor& inv_freq);
  // out [n, d].
  Status forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in, const Tensor& out) const;
};

}  // namespace ft
