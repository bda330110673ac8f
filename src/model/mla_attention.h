// Multi-head latent attention (DeepSeek-V2 / V3): the queries through a low-rank projection (q_a_proj, its norm,
// q_b_proj; or q_proj), the keys and values from a shared latent (kv_a_proj_with_mqa: the latent and one rope key
// shared by every head; the latent's norm; kv_b_proj). A head's key is [k_nope | k_rope] (qk_nope_head_dim +
// qk_rope_head_dim), its value v_head_dim wide. The paged cache holds the keys and values expanded per head (n_head KV
// heads), so the op table's attention runs it as it is.
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
  Linear kv_b;       // [n_head (nope + v_dim), kv_lora]
  Linear o;          // [d, n_head v_dim]
  RmsNormParams latent_norm;
  RopeParams rope;
  Tensor inv_freq;  // [rope_dim / 2] f32
  AttentionParams attn;

  // Columns of LayerScratch::qkv a step uses: the latent, the queries (with q_lora_rank), the keys (assembled there
  // where the backend has no mla_rope_store).
  static int64_t scratch_width(const ModelConfig& c);
  // What the paged cache holds a token of this layer: n_head keys of nope + rope dims, values of v_head_dim.
  static KvLayerShape kv_shape(const ModelConfig& c);
  // The rotated dims of q and k (qk_rope_head_dim).
  static int64_t rot_dim(const ModelConfig& c) { return c.qk_rope_head_dim; }
  // The attention's output buffer: kv_b's output (k_nope and v per head) until the keys are stored, then the
  // attention's output (n_head * v_head_dim).
  static int64_t output_width(const ModelConfig& c);
  static Result<MlaAttention> load(WeightLoader& w, const std::string& prefix, const ModelConfig& c, int64_t layer,
                                   const Tensor& inv_freq, float attention_factor);
  // out [n, d].
  Status forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in, const Tensor& out) const;

 private:
  // mla_rope_store as the ops it fuses, for backends without it: the keys assembled in k_rows [n, H qk].
  Status rope_store_in_turn(const LayerContext& c, const Tensor& q, const Tensor& k_rope, const Tensor& k_nope,
                            const Tensor& v, const Tensor& k_rows) const;
};

}  // namespace ft
