// Shared layers: GQA attention, dense SwiGLU MLP, MoE block (with an optional shared expert).
#include "model/layers.h"

#include <cmath>

namespace ft {

Tensor split_heads(const Tensor& t, int64_t heads, int64_t head_dim) {
  Tensor v = t;
  v.ndim = 3;
  v.shape = {t.shape[0], heads, head_dim, 0};
  v.stride = {t.stride[0], head_dim, 1, 0};
  return v;
}

Result<GqaAttention> GqaAttention::load(WeightLoader& w, const std::string& prefix, const ModelConfig& c,
                                        int64_t layer, const Tensor& inv_freq, float attention_factor) {
  GqaAttention a;
  a.layer = layer;
  a.n_head = c.n_head;
  a.n_kv = c.n_kv_head;
  a.head_dim = c.head_dim;
  const int64_t d = c.hidden_size, q_rows = a.n_head * a.head_dim, kv_rows = a.n_kv * a.head_dim;
  FT_ASSIGN_OR_RETURN(a.qkv.w, w.stack_rows({prefix + ".q_proj.weight", prefix + ".k_proj.weight",
                                             prefix + ".v_proj.weight"},
                                            {q_rows, kv_rows, kv_rows}, d));
  if (c.attention_bias) {
    FT_ASSIGN_OR_RETURN(a.qkv.b,
                        w.stack_rows({prefix + ".q_proj.bias", prefix + ".k_proj.bias", prefix + ".v_proj.bias"},
                                     {q_rows, kv_rows, kv_rows}, 0));
  }
  FT_ASSIGN_OR_RETURN(a.o.w, w.get(prefix + ".o_proj.weight", {d, q_rows}));
  if (c.attention_bias && w.has(prefix + ".o_proj.bias")) {
    FT_ASSIGN_OR_RETURN(a.o.b, w.get(prefix + ".o_proj.bias", {d}));
  }
  if (w.has(prefix + ".q_norm.weight")) {
    FT_ASSIGN_OR_RETURN(a.q_norm, w.get(prefix + ".q_norm.weight", {a.head_dim}));
    FT_ASSIGN_OR_RETURN(a.k_norm, w.get(prefix + ".k_norm.weight", {a.head_dim}));
  }
  a.norm.eps = static_cast<float>(c.rms_norm_eps);
  a.rope.rot_dim = inv_freq.numel() * 2;
  a.rope.attention_factor = attention_factor;
  a.inv_freq = inv_freq;
  a.attn.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.head_dim)));
  if (c.layer_types[static_cast<size_t>(layer)] == "sliding_attention") a.attn.window = c.sliding_window;
  if (w.has(prefix + ".sinks")) {
    FT_ASSIGN_OR_RETURN(a.attn.sinks, w.get_f32(prefix + ".sinks", {a.n_head}));
  }
  return a;
}

Status GqaAttention::forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in,
                             const Tensor& out) const {
  const int64_t n = in.h.dim(0);
  const Tensor qkv_rows = rows(s.qkv, n);  // [n, (H + 2K) hd]
  FT_RETURN_IF_ERROR(qkv.forward(c, in, qkv_rows));
  const Tensor q = split_heads(qkv_rows.slice(1, 0, n_head * head_dim), n_head, head_dim);
  const Tensor k = split_heads(qkv_rows.slice(1, n_head * head_dim, n_kv * head_dim), n_kv, head_dim);
  const Tensor v = split_heads(qkv_rows.slice(1, (n_head + n_kv) * head_dim, n_kv * head_dim), n_kv, head_dim);
  // q_norm and k_norm undefined (gpt-oss): rope and the store alone.
  FT_RETURN_IF_ERROR(c.ops.qk_norm_rope_store(q, k, v, q_norm, k_norm, c.step.positions, inv_freq, c.step.slots,
                                              c.kv.k(layer), c.kv.v(layer), norm, rope, c.stream));
  const Tensor attn_rows = rows(s.attn, n);  // [n, H hd]
  FT_RETURN_IF_ERROR(c.ops.attention(q, c.kv.k(layer), c.kv.v(layer), c.step.meta,
                                     split_heads(attn_rows, n_head, head_dim), attn, c.stream));
  return o.forward(c, attn_rows, out);
}

Result<DenseMlp> DenseMlp::load(WeightLoader& w, const std::string& prefix, int64_t d, int64_t inter) {
  DenseMlp m;
  m.inter = inter;
  FT_ASSIGN_OR_RETURN(m.gate_up, w.stack_rows({prefix + ".gate_proj.weight", prefix + ".up_proj.weight"},
                                              {inter, inter}, d));
  FT_ASSIGN_OR_RETURN(m.down, w.get(prefix + ".down_proj.weight", {d, inter}));
  return m;
}

Status DenseMlp::forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in, const Tensor& out) const {
  const int64_t n = in.h.dim(0);
  const Tensor gu = rows(s.gate_up, n).slice(1, 0, 2 * inter);  // [n, 2 inter]
  const Tensor act = rows(s.act, n).slice(1, 0, inter);         // [n, inter]
  FT_RETURN_IF_ERROR(project(c, in, gate_up, Tensor{}, gu));
  FT_RETURN_IF_ERROR(c.ops.swiglu(gu.slice(1, 0, inter), gu.slice(1, inter, inter), act, c.stream));
  return c.ops.matmul(act, down, Tensor{}, out, c.stream);
}

int64_t MoeBlock::folded_shared_experts(const ModelConfig& c, bool experts_on_host) {
  if (experts_on_host || c.n_shared_expert <= 0) return 0;
  return c.shared_expert_intermediate_size == c.n_shared_expert * c.moe_intermediate_size ? c.n_shared_expert : 0;
}

ExpertActivation MoeBlock::activation(const ModelConfig& c) {
  ExpertActivation a;
  if (c.expert_activation == "clamped_swiglu") {
    a.kind = ExpertActivation::kClampedSwiglu;
    a.limit = static_cast<float>(c.swiglu_limit);
  }
  return a;
}

Result<MoeBlock> MoeBlock::load(WeightLoader& w, const std::string& prefix, const ModelConfig& c, ExpertStore* store,
                                int64_t moe_layer) {
  MoeBlock m;
  const int64_t d = c.hidden_size, e = c.n_expert, inter = c.moe_intermediate_size;
  const std::string router = w.has(prefix + ".router.weight") ? prefix + ".router" : prefix + ".gate";
  FT_ASSIGN_OR_RETURN(m.router.w, w.get(router + ".weight", {e, d}));
  if (w.has(router + ".bias")) {
    FT_ASSIGN_OR_RETURN(m.router.b, w.get(router + ".bias", {e}));
  }
  m.expert.act = activation(c);
  if (store) {
    m.moe_layer = moe_layer;
    FT_RETURN_IF_ERROR(w.experts_to_store(prefix + ".experts", *store, moe_layer));
  } else {
    m.n_folded = folded_shared_experts(c, false);
    if (m.n_folded > 0 && w.has(prefix + ".shared_expert_gate.weight"))
      return unsupported(prefix + ": gated shared experts cannot ride with the routed ones");
    const std::string shared = prefix + ".shared_experts";
    FT_ASSIGN_OR_RETURN(m.gate_up, w.experts_gate_up(prefix + ".experts", e, inter, d, shared, m.n_folded));
    FT_ASSIGN_OR_RETURN(m.down, w.experts_down(prefix + ".experts", e, d, inter, shared, m.n_folded));
    if (m.gate_up.dtype == DType::kF4E2M1) {
      FT_ASSIGN_OR_RETURN(m.expert.gate_up_scales, w.experts_gate_up_scales(prefix + ".experts", e, inter, d));
      FT_ASSIGN_OR_RETURN(m.expert.down_scales, w.experts_down_scales(prefix + ".experts", e, d, inter));
      m.expert.gate_up_interleaved = true;  // as stored
    }
    if (w.experts_have_biases(prefix + ".experts")) {
      FT_ASSIGN_OR_RETURN(m.expert.gate_up_bias, w.experts_gate_up_bias(prefix + ".experts", e, inter));
      FT_ASSIGN_OR_RETURN(m.expert.down_bias, w.experts_down_bias(prefix + ".experts", e, d));
    }
  }
  m.route.scoring = c.scoring_func == "sigmoid" ? RouterScoring::kSigmoid : RouterScoring::kSoftmax;
  m.route.n_expert_used = c.n_expert_used;
  m.route.norm_topk = c.norm_topk_prob;
  m.route.n_group = c.n_group;
  m.route.topk_group = c.topk_group;
  m.route.scale = static_cast<float>(c.routed_scaling_factor);
  if (w.has(prefix + ".gate.e_score_correction_bias")) {
    FT_ASSIGN_OR_RETURN(m.selection_bias, w.get_f32(prefix + ".gate.e_score_correction_bias", {e}));
  }
  if (m.n_folded > 0) return m;
  // Qwen's `shared_expert` always has its sigmoid gate (a missing one is an error); DeepSeek's `shared_experts` none.
  if (w.has(prefix + ".shared_expert.gate_proj.weight")) {
    m.has_shared = true;
    FT_ASSIGN_OR_RETURN(m.shared, DenseMlp::load(w, prefix + ".shared_expert", d, c.shared_expert_intermediate_size));
    FT_ASSIGN_OR_RETURN(m.shared_gate.w, w.get(prefix + ".shared_expert_gate.weight", {1, d}));
  } else if (w.has(prefix + ".shared_experts.gate_proj.weight")) {
    m.has_shared = true;
    FT_ASSIGN_OR_RETURN(m.shared, DenseMlp::load(w, prefix + ".shared_experts", d, c.shared_expert_intermediate_size));
  }
  return m;
}

Status MoeBlock::forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in, const Tensor& out) const {
  const Tensor& x = in.h;  // [n, d], normalised by the router's projection
  const int64_t n = x.dim(0), k = route.n_expert_used;
  const Tensor logits = rows(s.router, n).slice(1, 0, router.w.dim(0));  // [n, n_expert] f32
  const Tensor ids = rows(s.topk_ids, n).slice(1, 0, k + n_folded);      // [n, k + n_folded] i32
  const Tensor weights = rows(s.topk_w, n).slice(1, 0, k + n_folded);    // [n, k + n_folded] f32
  FT_RETURN_IF_ERROR(router.forward(c, in, logits));
  FT_RETURN_IF_ERROR(
      c.ops.moe_route(logits, selection_bias, ids.slice(1, 0, k), weights.slice(1, 0, k), route, c.stream));
  if (moe_layer < 0) {
    FT_RETURN_IF_ERROR(c.ops.moe_experts(x, ids, weights, gate_up, down, out, s.moe_ws, expert, c.stream));
  } else if (c.experts) {
    FT_RETURN_IF_ERROR(c.experts->forward(c.stream, moe_layer, x, ids, weights, out, s.moe_ws));
  } else {
    return invalid_argument("the experts are in host memory but no expert cache is attached");
  }
  if (!has_shared) return ok_status();
  const Tensor sh = rows(s.shared, n);  // [n, d]
  FT_RETURN_IF_ERROR(shared.forward(c, s, LayerInput{x}, sh));
  if (shared_gate.w.defined()) {
    const Tensor gate = rows(s.shared_gate, n);  // [n, 1]
    FT_RETURN_IF_ERROR(shared_gate.forward(c, x, gate));
    FT_RETURN_IF_ERROR(c.ops.sigmoid_mul(sh, gate, sh, c.stream));
  }
  return c.ops.add(out, sh, out, c.stream);
}

}  // namespace ft
