// Shared layers: every architecture file composes these. No device code here: only ops from the table.
#pragma once

#include <string>
#include <utility>

#include "backend/backend.h"
#include "io/model_config.h"
#include "kv/kv_cache.h"
#include "moe/expert_cache.h"
#include "model/weight_loader.h"

namespace ft {

// This step's metadata as device tensors, sliced to its sizes.
struct StepView {
  int64_t n_tokens = 0;
  int64_t max_seq_tokens = 0;  // the most tokens any one sequence has in this step (1: a decode-only step)
  Tensor tokens;     // [n] i32
  Tensor positions;  // [n] i32
  Tensor slots;      // [n] i32
  Tensor logit_rows; // [n_logits] i32
  PagedAttentionMeta meta;
  RecurrentMeta recurrent;  // state slots, for models with linear-attention layers
};

struct LayerContext {
  const OpTable& ops;
  Stream& stream;
  const StepView& step;
  KvCache& kv;
  ExpertCache* experts = nullptr;  // computes the routed experts kept in host memory (else they are resident)
};

// [n, heads * head_dim] with contiguous rows -> [n, heads, head_dim] view.
Tensor split_heads(const Tensor& t, int64_t heads, int64_t head_dim);
// First n rows.
inline Tensor rows(const Tensor& t, int64_t n) { return t.slice(0, 0, n); }

// A block's input rows h [n, d]: normalised already, or (norm_w defined) still to be formed from the residual
// stream by the block's first projection (add_rms_norm_matmul), which writes them to h and x + delta to x_out.
struct LayerInput {
  Tensor h;
  Tensor x, delta, x_out;  // [n, d]; delta and x_out undefined: h = rms_norm(x) * norm_w
  Tensor norm_w;           // [d], or undefined
  RmsNormParams norm;
};

// The residual stream in two buffers [n, d]: an update x + delta goes to the other one, which then holds the
// stream (the blocks of a fused op all read x while one of them writes the sum).
class Residual {
 public:
  Residual(const Tensor& x, const Tensor& spare) : x_(x), spare_(spare) {}
  const Tensor& x() const { return x_; }
  // The next block's input: x + delta (delta undefined: x) normalised with w into h by its first projection.
  LayerInput add_and_norm(const Tensor& delta, const Tensor& w, const Tensor& h, const RmsNormParams& p) {
    LayerInput in{h, x_, delta, delta.defined() ? spare_ : Tensor{}, w, p};
    if (delta.defined()) std::swap(x_, spare_);
    return in;
  }

 private:
  Tensor x_, spare_;
};

// out = in.h @ w^T (+ b), forming in.h first when its norm is still to run. w [m, d]; b [m] or undefined.
inline Status project(const LayerContext& c, const LayerInput& in, const Tensor& w, const Tensor& b,
                      const Tensor& out) {
  if (!in.norm_w.defined()) return c.ops.matmul(in.h, w, b, out, c.stream);
  return c.ops.add_rms_norm_matmul(in.x, in.delta, in.norm_w, in.x_out, in.h, w, b, out, in.norm, c.stream);
}

struct Linear {
  Tensor w;  // [out, in]
  Tensor b;  // [out] or undefined
  Status forward(const LayerContext& c, const Tensor& x, const Tensor& out) const {
    return c.ops.matmul(x, w, b, out, c.stream);
  }
  Status forward(const LayerContext& c, const LayerInput& in, const Tensor& out) const {
    return project(c, in, w, b, out);
  }
};

// Scratch activations shared by the layers of one step, sized for the largest step.
struct LayerScratch {
  Tensor qkv;       // [T, (n_head + 2 n_kv) head_dim]
  Tensor attn;      // [T, n_head * head_dim]
  Tensor gate_up;   // [T, 2 * max intermediate]
  Tensor act;       // [T, max intermediate]
  Tensor router;    // [T, n_expert] f32
  Tensor topk_ids;  // [T, k] i32
  Tensor topk_w;    // [T, k] f32
  Tensor moe_ws;    // moe_workspace_bytes
  Tensor shared;       // [T, d]: the shared expert's output (MoE with a shared expert)
  Tensor shared_gate;  // [T, 1]
  Tensor linear_proj;  // [T, 2 key_dim + 2 value_dim + 2 n_v_head]: Gated DeltaNet qkv, z, b, a projections
  Tensor linear_conv;  // [T, 2 key_dim + value_dim]: after conv1d + SiLU
  Tensor linear_out;   // [T, value_dim]: the delta rule's output
};

// Grouped-query attention with a fused qkv projection, optional per-head q/k RMSNorm, rope and the paged cache.
struct GqaAttention {
  int64_t layer = 0, n_head = 0, n_kv = 0, head_dim = 0;
  Linear qkv, o;
  Tensor q_norm, k_norm;  // [head_dim] or undefined
  RmsNormParams norm;
  RopeParams rope;
  Tensor inv_freq;  // [rot_dim / 2] f32
  AttentionParams attn;

  // What DecoderModel asks of its attention: rotated dims, cache shape, scratch columns (q, k, v), output width.
  static int64_t rot_dim(const ModelConfig& c) { return c.head_dim; }
  static KvLayerShape kv_shape(const ModelConfig& c) { return {c.n_kv_head, c.head_dim, c.head_dim}; }
  static int64_t scratch_width(const ModelConfig& c) { return (c.n_head + 2 * c.n_kv_head) * c.head_dim; }
  static int64_t output_width(const ModelConfig& c) { return c.n_head * c.head_dim; }
  static Result<GqaAttention> load(WeightLoader& w, const std::string& prefix, const ModelConfig& c, int64_t layer,
                                   const Tensor& inv_freq, float attention_factor);
  // out [n, d].
  Status forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in, const Tensor& out) const;
};

// SwiGLU MLP: down(silu(gate x) * up x), gate and up fused.
struct DenseMlp {
  Tensor gate_up;  // [2 * inter, d]
  Tensor down;     // [d, inter]
  int64_t inter = 0;

  static Result<DenseMlp> load(WeightLoader& w, const std::string& prefix, int64_t d, int64_t inter);
  Status forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in, const Tensor& out) const;
};

// Routed experts: router (`gate`, or gpt-oss's `router` with a bias) -> top-k (softmax or sigmoid scores, grouped as
// DeepSeek groups them) -> expert SwiGLU FFNs (gpt-oss: clamped, with biases), weighted sum; plus, when the
// checkpoint has one, a shared expert (Qwen: `shared_expert`, scaled by sigmoid(shared_expert_gate(x)); DeepSeek:
// `shared_experts`, no gate).
struct MoeBlock {
  Linear router;   // [n_expert, d], bias [n_expert] or undefined
  Tensor gate_up;  // [n_expert, 2 * inter, d]; undefined when the experts live in a host expert store
  Tensor down;     // [n_expert, d, inter]; both f4_e2m1 for MXFP4 experts the backend takes as such
  MoeExpertParams expert;  // the activation, and the biases (and MXFP4 scales) of resident experts
  int64_t moe_layer = -1;  // the store's layer index when they do
  MoeRouteParams route;    // from the config: scoring_func, norm_topk_prob, n_group, topk_group, routed_scaling_factor
  Tensor selection_bias;   // [n_expert] f32 or undefined: added to the scores for the top-k choice only
                           // (the router's e_score_correction_bias)
  bool has_shared = false;
  DenseMlp shared;     // inter = shared_expert_intermediate_size
  Linear shared_gate;  // [1, d], or undefined: the shared expert's output is added as it is
  // Ungated shared experts of the experts' own width (DeepSeek's) ride with the routed ones instead: experts
  // n_expert .. n_expert + n_folded - 1 of gate_up and down, chosen by every token with weight 1 (the last n_folded
  // columns of the step's ids and weights, which CausalLm fills once).
  int64_t n_folded = 0;

  // How many shared experts a layer of config c folds into its routed experts (0: none, or they stay a dense MLP).
  // Not with the experts in a host expert store, which holds the routed experts only.
  static int64_t folded_shared_experts(const ModelConfig& c, bool experts_on_host);
  // The experts' activation the config names (ModelConfig::expert_activation).
  static ExpertActivation activation(const ModelConfig& c);

  // store: null to load the experts onto the backend, else into its records of layer moe_layer.
  static Result<MoeBlock> load(WeightLoader& w, const std::string& prefix, const ModelConfig& c,
                               ExpertStore* store = nullptr, int64_t moe_layer = -1);
  Status forward(const LayerContext& c, const LayerScratch& s, const LayerInput& in, const Tensor& out) const;
};

}  // namespace ft
