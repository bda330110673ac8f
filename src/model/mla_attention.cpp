// Multi-head latent attention through the op table, in the absorbed form over the cached latents.
#include "model/mla_attention.h"

#include <cmath>

#include "model/rope_freqs.h"

namespace ft {
namespace {
int64_t qk_dim(const ModelConfig& c) { return c.qk_nope_head_dim + c.qk_rope_head_dim; }
int64_t query_columns(const ModelConfig& c) { return c.q_lora_rank > 0 ? c.q_lora_rank : c.n_head * qk_dim(c); }
int64_t key_width(const ModelConfig& c) { return c.kv_lora_rank + c.qk_rope_head_dim; }
}  // namespace

int64_t MlaAttention::scratch_width(const ModelConfig& c) {
  const int64_t latent = query_columns(c) + key_width(c);
  const int64_t queries = c.q_lora_rank > 0 ? c.n_head * qk_dim(c) : 0;
  return latent + queries + c.n_head * (key_width(c) + c.kv_lora_rank);
}

KvLayerShape MlaAttention::kv_shape(const ModelConfig& c) { return {1, key_width(c), c.kv_lora_rank, true}; }

Result<MlaAttention> MlaAttention::load(WeightLoader& w, const std::string& prefix, const ModelConfig& c, int64_t layer,
                                        const Tensor& inv_freq, float attention_factor) {
  MlaAttention a;
  a.layer = layer;
  a.n_head = c.n_head;
  a.nope = c.qk_nope_head_dim, a.rope_dim = c.qk_rope_head_dim, a.v_dim = c.v_head_dim;
  a.q_cols = query_columns(c);
  a.kv_lora = c.kv_lora_rank;
  // parse_model_config has checked the latent dims of a config with kv_lora_rank.
  if (a.kv_lora <= 0) return invalid_argument(prefix + ": multi-head latent attention needs kv_lora_rank");
  if (c.attention_bias) return unsupported(prefix + ": multi-head latent attention with projection biases");
  const int64_t d = c.hidden_size, qk = a.nope + a.rope_dim;
  const std::string q_first = c.q_lora_rank > 0 ? ".q_a_proj.weight" : ".q_proj.weight";
  FT_ASSIGN_OR_RETURN(a.latent.w, w.stack_rows({prefix + q_first, prefix + ".kv_a_proj_with_mqa.weight"},
                                               {a.q_cols, a.kv_lora + a.rope_dim}, d));
  if (c.q_lora_rank > 0) {
    FT_ASSIGN_OR_RETURN(a.q_a_norm, w.get(prefix + ".q_a_layernorm.weight", {c.q_lora_rank}));
    FT_ASSIGN_OR_RETURN(a.q_b.w, w.get(prefix + ".q_b_proj.weight", {a.n_head * qk, c.q_lora_rank}));
  }
  FT_ASSIGN_OR_RETURN(a.kv_a_norm, w.get(prefix + ".kv_a_layernorm.weight", {a.kv_lora}));
  const std::string kv_b = prefix + ".kv_b_proj.weight";  // [n_head (nope + v_dim), kv_lora]
  FT_ASSIGN_OR_RETURN(a.w_uk, w.row_blocks(kv_b, a.n_head, a.nope + a.v_dim, a.kv_lora, 0, a.nope, true));
  FT_ASSIGN_OR_RETURN(a.w_uv, w.row_blocks(kv_b, a.n_head, a.nope + a.v_dim, a.kv_lora, a.nope, a.v_dim, false));
  FT_ASSIGN_OR_RETURN(a.o.w, w.get(prefix + ".o_proj.weight", {d, a.n_head * a.v_dim}));
  a.latent_norm.eps = 1e-6f;  // transformers builds q_a_layernorm and kv_a_layernorm with the default eps
  a.rope.rot_dim = a.rope_dim;
  // Interleaved pairs rotate in place; transformers' interleaved form also moves the even dims before the odd ones,
  // in q and k alike, which leaves every q.k unchanged.
  a.rope.interleaved = c.rope_interleave;
  a.rope.attention_factor = attention_factor;
  a.inv_freq = inv_freq;
  double scale = 1.0 / std::sqrt(static_cast<double>(qk));  // the expanded heads' dims, not the latent's
  if (c.rope.type == "yarn" && c.rope.mscale_all_dim > 0) {
    const double mscale = yarn_mscale(c.rope.factor, c.rope.mscale_all_dim);
    scale *= mscale * mscale;
  }
  a.attn.scale = static_cast<float>(scale);
  return a;
}

Status MlaAttention::forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in,
                             const Tensor& out) const {
  const int64_t n = in.h.dim(0), qk = nope + rope_dim, key = kv_lora + rope_dim;
  const Tensor scratch = rows(s.qkv, n);
  int64_t used = 0;
  const auto take = [&](int64_t width) {
    const Tensor t = scratch.slice(1, used, width);
    used += width;
    return t;
  };
  const Tensor lat = take(latent.w.dim(0));                                             // [n, q_cols + key]
  const Tensor q_rows = q_b.w.defined() ? take(n_head * qk) : lat.slice(1, 0, q_cols);  // [n, H qk]
  const Tensor q_lat = split_heads(take(n_head * key), n_head, key);                    // [n, H, kv_lora + rope]
  const Tensor o_lat = split_heads(take(n_head * kv_lora), n_head, kv_lora);            // [n, H, kv_lora]
  FT_RETURN_IF_ERROR(latent.forward(c, in, lat));
  if (q_b.w.defined()) {
    const Tensor q_latent = lat.slice(1, 0, q_cols);  // [n, q_lora]
    FT_RETURN_IF_ERROR(c.ops.rms_norm(q_latent, q_a_norm, q_latent, latent_norm, c.stream));
    FT_RETURN_IF_ERROR(q_b.forward(c, q_latent, q_rows));
  }
  // The token's cache row (the normed latent, then the rotated rope key) and the queries over the latent (q_nope W_uk
  // per head, then the rotated q_rope).
  const Tensor keys = split_heads(lat.slice(1, q_cols, key), 1, key);  // [n, 1, kv_lora + rope]
  const Tensor q = split_heads(q_rows, n_head, qk);                    // [n, H, qk]
  const Tensor q_rope = q.slice(2, nope, rope_dim), q_lat_rope = q_lat.slice(2, kv_lora, rope_dim);
  FT_RETURN_IF_ERROR(c.ops.mla_latent_store(keys, kv_a_norm, q_rope, q_lat_rope, c.step.positions, inv_freq,
                                            c.step.slots, c.kv.k(layer), latent_norm, rope, c.stream));
  FT_RETURN_IF_ERROR(c.ops.matmul_heads(q.slice(2, 0, nope), w_uk, q_lat.slice(2, 0, kv_lora), c.stream));
  FT_RETURN_IF_ERROR(c.ops.attention(q_lat, c.kv.k(layer), c.kv.v(layer), c.step.meta, o_lat, attn, c.stream));
  const Tensor attn_rows = rows(s.attn, n).slice(1, 0, n_head * v_dim);  // [n, H v]
  FT_RETURN_IF_ERROR(c.ops.matmul_heads(o_lat, w_uv, split_heads(attn_rows, n_head, v_dim), c.stream));
  return o.forward(c, attn_rows, out);
}

}  // namespace ft
