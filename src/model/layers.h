// Shared layers: every architecture file composes these. No device code here: only ops from the table.
#pragma once

#include <string>

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

struct Linear {
  Tensor w;  // [out, in]
  Tensor b;  // [out] or undefined
  Status forward(const LayerContext& c, const Tensor& x, const Tensor& out) const {
    return c.ops.matmul(x, w, b, out, c.stream);
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

  static Result<GqaAttention> load(WeightLoader& w, const std::string& prefix, const ModelConfig& c, int64_t layer,
                                   const Tensor& inv_freq, float attention_factor);
  // x [n, d] normalised input; out [n, d].
  Status forward(const LayerContext& c, const LayerScratch& s, const Tensor& x, const Tensor& out) const;
};

// SwiGLU MLP: down(silu(gate x) * up x), gate and up fused.
struct DenseMlp {
  Tensor gate_up;  // [2 * inter, d]
  Tensor down;     // [d, inter]
  int64_t inter = 0;

  static Result<DenseMlp> load(WeightLoader& w, const std::string& prefix, int64_t d, int64_t inter);
  Status forward(const LayerContext& c, const LayerScratch& s, const Tensor& x, const Tensor& out) const;
};

// Routed experts: router -> top-k -> expert SwiGLU FFNs, weighted sum; plus, when the checkpoint has one, a
// shared expert scaled by sigmoid(shared_expert_gate(x)).
struct MoeBlock {
  Linear router;   // [n_expert, d]
  Tensor gate_up;  // [n_expert, 2 * inter, d]; undefined when the experts live in a host expert store
  Tensor down;     // [n_expert, d, inter]
  int64_t moe_layer = -1;  // the store's layer index when they do
  MoeRouteParams route;
  Tensor selection_bias;  // [n_expert] f32 or undefined: added to the scores for the top-k choice only
  bool has_shared = false;
  DenseMlp shared;     // inter = shared_expert_intermediate_size
  Linear shared_gate;  // [1, d]

  // store: null to load the experts onto the backend, else into its records of layer moe_layer.
  static Result<MoeBlock> load(WeightLoader& w, const std::string& prefix, const ModelConfig& c,
                               ExpertStore* store = nullptr, int64_t moe_layer = -1);
  Status forward(const LayerContext& c, const LayerScratch& s, const Tensor& x, const Tensor& out) const;
};

}  // namespace ft
