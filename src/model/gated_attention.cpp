// Gated full attention through the op table.
#include "model/gated_attention.h"

#include <cmath>

namespace ft {
namespace {
// Query or gate of every head: [n, heads, head_dim] at column `offset` of rows laid out [heads, 2 head_dim].
Tensor interleaved_heads(const Tensor& rows_t, int64_t heads, int64_t head_dim, int64_t offset) {
  Tensor v = split_heads(rows_t.slice(1, offset, 2 * heads * head_dim - offset), heads, head_dim);
  v.stride[1] = 2 * head_dim;
  return v;
}
}  // namespace

Result<GatedAttention> GatedAttention::load(WeightLoader& w, const std::string& prefix, const ModelConfig& c,
                                            int64_t layer, const Tensor& inv_freq) {
  GatedAttention a;
  a.layer = layer;
  a.n_head = c.n_head, a.n_kv = c.n_kv_head, a.head_dim = c.head_dim;
  const int64_t d = c.hidden_size, q_rows = 2 * a.n_head * a.head_dim, kv_rows = a.n_kv * a.head_dim;
  FT_ASSIGN_OR_RETURN(a.qkv.w, w.stack_rows({prefix + ".q_proj.weight", prefix + ".k_proj.weight",
                                             prefix + ".v_proj.weight"},
                                            {q_rows, kv_rows, kv_rows}, d));
  FT_ASSIGN_OR_RETURN(a.o.w, w.get(prefix + ".o_proj.weight", {d, a.n_head * a.head_dim}));
  FT_ASSIGN_OR_RETURN(a.q_norm, w.get(prefix + ".q_norm.weight", {a.head_dim}));
  FT_ASSIGN_OR_RETURN(a.k_norm, w.get(prefix + ".k_norm.weight", {a.head_dim}));
  a.norm = {static_cast<float>(c.rms_norm_eps), true};
  a.rope.rot_dim = inv_freq.numel() * 2;  // rotate-half over the leading rot_dim dims, the rest pass through
  a.inv_freq = inv_freq;
  a.attn.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.head_dim)));
  return a;
}

Status GatedAttention::forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in,
                               const Tensor& out) const {
  const int64_t n = in.h.dim(0), hd = head_dim;
  const Tensor qkv_rows = rows(s.qkv, n).slice(1, 0, qkv.w.dim(0));  // [n, H (query | gate) + K hd + K hd]
  FT_RETURN_IF_ERROR(qkv.forward(c, in, qkv_rows));
  const Tensor q = interleaved_heads(qkv_rows, n_head, hd, 0);
  const Tensor gate = interleaved_heads(qkv_rows, n_head, hd, hd);
  const Tensor k = split_heads(qkv_rows.slice(1, 2 * n_head * hd, n_kv * hd), n_kv, hd);
  const Tensor v = split_heads(qkv_rows.slice(1, (2 * n_head + n_kv) * hd, n_kv * hd), n_kv, hd);
  FT_RETURN_IF_ERROR(c.ops.qk_norm_rope_store(q, k, v, q_norm, k_norm, c.step.positions, inv_freq, c.step.slots,
                                              c.kv.k(layer), c.kv.v(layer), norm, rope, c.stream));
  const Tensor attn_rows = rows(s.attn, n);  // [n, H hd]
  const Tensor attn_heads = split_heads(attn_rows, n_head, hd);
  FT_RETURN_IF_ERROR(c.ops.attention(q, c.kv.k(layer), c.kv.v(layer), c.step.meta, attn_heads, attn, c.stream));
  FT_RETURN_IF_ERROR(c.ops.sigmoid_mul(attn_heads, gate, attn_heads, c.stream));
  return o.forward(c, attn_rows, out);
}

}  // namespace ft
