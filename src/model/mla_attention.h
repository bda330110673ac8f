// Multi-head latent attention (DeepSeek-V2 / V3): the queries through a low-rank projection (q_a_proj, its norm,
// q_b_proj; or q_proj), the keys and values from a shared latent (kv_a_proj_with_mqa: the latent and one rope key
// shared by every head; the latent's norm; kv_b_proj). A head's key is [k_nope | k_rope] (qk_nope_head_dim +
// qk_rope_head_dim), its value v_head_dim wide. In the absorbed form run here the cache holds, a token, the normed
// latent and the rotated rope key (kv_lora_rank + qk_rope_head_dim values, one kv head whose values are the latent):
// kv_b_proj's key rows fold into each head's query (q_nope W_uk: a query over the latent) and its value rows into the
// attention's output (the latent output times W_uv), so q.k and p.v are transformers' q_nope.k_nope + q_rope.k_rope
// and p.v up to the order of the sums.
#pragma once

#include <string>

#include "model/layers.h"

namespace ft {

struct MlaAttention {
  int64_t layer = 0, n_head = 0, nope = 0, rope_dim = 0, v_dim = 0;
  int64_t q_cols = 0;  // the latent's leading columns that feed the queries: q_lora_rank, or n_head * qk_head_dim
  int64_t kv_lora = 0;
  Linear latent;     // [q_cols + kv_lora + rope_dim, d]: q_a_proj (or q_proj) and kv_a_proj_with_mqa stacked
  Tensor q_a_norm;   // [q_lora_rank], or undefined without a query low-rank projection
  Linear q_b;        // [n_head (nope + rope_dim), q_lora_rank], or undefined
  Tensor kv_a_norm;  // [kv_lora]
  Tensor w_uk;       // [n_head, kv_lora, nope]: each head's key rows of kv_b_proj, transposed
  Tensor w_uv;       // [n_head, v_dim, kv_lora]: each head's value rows of kv_b_proj
  Linear o;          // [d, n_head v_dim]
  RmsNormParams latent_norm;
  RopeParams rope;
  Tensor inv_freq;  // [rope_dim / 2] f32
  AttentionParams attn;

  // Columns of LayerScratch::qkv a step uses: the latent, the queries (with q_lora_rank), the queries over the latent
  // and the attention's output over it.
  static int64_t scratch_width(const ModelConfig& c);
  // What the paged cache holds a token of this layer: one key of kv_lora_rank + qk_rope_head_dim, whose first
  // kv_lora_rank dims are the value.
  static KvLayerShape kv_shape(const ModelConfig& c);
  // The rotated dims of q and k (qk_rope_head_dim).
  static int64_t rot_dim(const ModelConfig& c) { return c.qk_rope_head_dim; }
  // o_proj's input: n_head * v_head_dim.
  static int64_t output_width(const ModelConfig& c) { return c.n_head * c.v_head_dim; }
  static Result<MlaAttention> load(WeightLoader& w, const std::string& prefix, const ModelConfig& c, int64_t layer,
                                   const Tensor& inv_freq, float attention_factor);
  // out [n, d].
  Status forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in, const Tensor& out) const;
};

}  // namespace ft
