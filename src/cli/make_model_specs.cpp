// Tensor lists of the architectures make-model writes (names and shapes as src/model reads them), and the
// value distribution of each kind of tensor.
#include "cli/make_model_specs.h"

#include <cmath>

namespace ft::cli {
namespace {

using Specs = std::vector<TensorSpec>;

void add_dense_mlp(Specs& t, const std::string& p, int64_t d, int64_t inter) {
  t.push_back({p + "gate_proj.weight", {inter, d}});
  t.push_back({p + "up_proj.weight", {inter, d}});
  t.push_back({p + "down_proj.weight", {d, inter}});
}

// mlp.gate (router) and mlp.experts.E.{gate,up,down}_proj.
void add_routed_experts(Specs& t, const std::string& p, const ModelConfig& c) {
  t.push_back({p + "gate.weight", {c.n_expert, c.hidden_size}});
  for (int64_t e = 0; e < c.n_expert; ++e)
    add_dense_mlp(t, p + "experts." + std::to_string(e) + ".", c.hidden_size, c.moe_intermediate_size);
}

void add_embedding(Specs& t, const ModelConfig& c, const std::string& model) {
  t.push_back({model + ".embed_tokens.weight", {c.vocab_size, c.hidden_size}});
}

// Final norm and, unless tied to the embedding, lm_head (always at the top level).
void add_head(Specs& t, const ModelConfig& c, const std::string& model, Init final_norm) {
  t.push_back({model + ".norm.weight", {c.hidden_size}, final_norm});
  if (!c.tie_word_embeddings) t.push_back({"lm_head.weight", {c.vocab_size, c.hidden_size}});
}

// Qwen3 / Qwen3-MoE: GQA attention with q/k norm, dense or routed MLP per layer.
Specs qwen3_tensors(const ModelConfig& c) {
  const int64_t d = c.hidden_size, hd = c.head_dim;
  Specs t;
  add_embedding(t, c, "model");
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {d}, Init::kNorm});
    t.push_back({p + "post_attention_layernorm.weight", {d}, Init::kNorm});
    t.push_back({p + "self_attn.q_proj.weight", {c.n_head * hd, d}});
    t.push_back({p + "self_attn.k_proj.weight", {c.n_kv_head * hd, d}});
    t.push_back({p + "self_attn.v_proj.weight", {c.n_kv_head * hd, d}});
    t.push_back({p + "self_attn.o_proj.weight", {d, c.n_head * hd}});
    if (c.attention_bias)
      for (const char* b : {"q", "k", "v"})
        t.push_back({p + "self_attn." + b + "_proj.bias", {(*b == 'q' ? c.n_head : c.n_kv_head) * hd}});
    t.push_back({p + "self_attn.q_norm.weight", {hd}, Init::kNorm});
    t.push_back({p + "self_attn.k_norm.weight", {hd}, Init::kNorm});
    if (c.is_moe_layer(l)) add_routed_experts(t, p + "mlp.", c);
    else add_dense_mlp(t, p + "mlp.", d, c.intermediate_size);
  }
  add_head(t, c, "model", Init::kNorm);
  return t;
}

// Qwen3.5 / 3.6 MoE: Gated DeltaNet or gated full attention per layer_types, routed experts plus a sigmoid-gated
// shared expert on every layer; every norm but the gated one of linear attention is zero-centred.
Result<Specs> qwen3_5_moe_tensors(const ModelConfig& c, const std::string& model) {
  const int64_t d = c.hidden_size, hd = c.head_dim;
  const int64_t n_k = c.linear_num_key_heads, n_v = c.linear_num_value_heads;
  const int64_t key_dim = n_k * c.linear_key_head_dim, value_dim = n_v * c.linear_value_head_dim;
  if (c.n_expert <= 0 || c.shared_expert_intermediate_size <= 0)
    return invalid_argument("a Qwen3.5-MoE config needs num_experts and shared_expert_intermediate_size");
  Specs t;
  add_embedding(t, c, model);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = model + ".layers." + std::to_string(l) + ".";
    const std::string& type = c.layer_types[static_cast<size_t>(l)];
    t.push_back({p + "input_layernorm.weight", {d}, Init::kZeroNorm});
    t.push_back({p + "post_attention_layernorm.weight", {d}, Init::kZeroNorm});
    if (type == "linear_attention") {
      if (n_k <= 0 || n_v <= 0 || c.linear_key_head_dim <= 0 || c.linear_value_head_dim <= 0 ||
          c.linear_conv_kernel_dim <= 0)
        return invalid_argument("a linear_attention layer needs the linear_* head counts, dims and conv kernel");
      const std::string a = p + "linear_attn.";
      t.push_back({a + "in_proj_qkv.weight", {2 * key_dim + value_dim, d}});
      t.push_back({a + "in_proj_z.weight", {value_dim, d}});
      t.push_back({a + "in_proj_b.weight", {n_v, d}});
      t.push_back({a + "in_proj_a.weight", {n_v, d}});
      t.push_back({a + "conv1d.weight", {2 * key_dim + value_dim, 1, c.linear_conv_kernel_dim}});
      t.push_back({a + "A_log", {n_v}, Init::kALog});
      t.push_back({a + "dt_bias", {n_v}, Init::kDtBias});
      t.push_back({a + "norm.weight", {c.linear_value_head_dim}, Init::kNorm});
      t.push_back({a + "out_proj.weight", {d, value_dim}});
    } else if (type == "full_attention") {
      const std::string a = p + "self_attn.";
      t.push_back({a + "q_proj.weight", {2 * c.n_head * hd, d}});  // query and output gate, interleaved per head
      t.push_back({a + "k_proj.weight", {c.n_kv_head * hd, d}});
      t.push_back({a + "v_proj.weight", {c.n_kv_head * hd, d}});
      t.push_back({a + "o_proj.weight", {d, c.n_head * hd}});
      t.push_back({a + "q_norm.weight", {hd}, Init::kZeroNorm});
      t.push_back({a + "k_norm.weight", {hd}, Init::kZeroNorm});
    } else {
      return unsupported("layer " + std::to_string(l) + " has type '" + type + "'; make-model writes " +
                         "linear_attention and full_attention layers");
    }
    add_routed_experts(t, p + "mlp.", c);
    add_dense_mlp(t, p + "mlp.shared_expert.", d, c.shared_expert_intermediate_size);
    t.push_back({p + "mlp.shared_expert_gate.weight", {1, d}});
  }
  add_head(t, c, model, Init::kZeroNorm);
  return t;
}

// DeepSeek-V3: multi-head latent attention (q_a/q_b or q_proj; kv_a_proj_with_mqa, kv_b), a dense MLP in the first
// first_k_dense_replace layers, routed experts with the router's correction bias plus the shared experts after them.
Result<Specs> deepseek_v3_tensors(const ModelConfig& c) {
  const int64_t d = c.hidden_size, qk = c.qk_nope_head_dim + c.qk_rope_head_dim, h = c.n_head;
  // parse_model_config has checked the latent dims of a config with kv_lora_rank.
  if (c.kv_lora_rank <= 0) return invalid_argument("a DeepSeek-V3 config needs kv_lora_rank");
  Specs t;
  add_embedding(t, c, "model");
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".", a = p + "self_attn.";
    t.push_back({p + "input_layernorm.weight", {d}, Init::kNorm});
    t.push_back({p + "post_attention_layernorm.weight", {d}, Init::kNorm});
    if (c.q_lora_rank > 0) {
      t.push_back({a + "q_a_proj.weight", {c.q_lora_rank, d}});
      t.push_back({a + "q_a_layernorm.weight", {c.q_lora_rank}, Init::kNorm});
      t.push_back({a + "q_b_proj.weight", {h * qk, c.q_lora_rank}});
    } else {
      t.push_back({a + "q_proj.weight", {h * qk, d}});
    }
    t.push_back({a + "kv_a_proj_with_mqa.weight", {c.kv_lora_rank + c.qk_rope_head_dim, d}});
    t.push_back({a + "kv_a_layernorm.weight", {c.kv_lora_rank}, Init::kNorm});
    t.push_back({a + "kv_b_proj.weight", {h * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank}});
    t.push_back({a + "o_proj.weight", {d, h * c.v_head_dim}});
    if (!c.is_moe_layer(l)) {
      add_dense_mlp(t, p + "mlp.", d, c.intermediate_size);
      continue;
    }
    add_routed_experts(t, p + "mlp.", c);
    t.push_back({p + "mlp.gate.e_score_correction_bias", {c.n_expert}});
    if (c.shared_expert_intermediate_size > 0)
      add_dense_mlp(t, p + "mlp.shared_experts.", d, c.shared_expert_intermediate_size);
  }
  add_head(t, c, "model", Init::kNorm);
  return t;
}

// gpt-oss: GQA attention with q/k/v/o biases and a sink logit per head, routed experts in every layer: a router
// with a bias, and fused expert tensors (gate_up [E, d, 2 inter] with gate and up columns interleaved, down
// [E, inter, d]) with biases; or those two in MXFP4 (`_blocks` and `_scales` of the transposes, gate and up rows
// interleaved).
Specs gpt_oss_tensors(const ModelConfig& c, bool mxfp4_experts) {
  const int64_t d = c.hidden_size, hd = c.head_dim, e = c.n_expert, inter = c.moe_intermediate_size;
  Specs t;
  add_embedding(t, c, "model");
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".", a = p + "self_attn.", m = p + "mlp.";
    t.push_back({p + "input_layernorm.weight", {d}, Init::kNorm});
    t.push_back({p + "post_attention_layernorm.weight", {d}, Init::kNorm});
    for (const char* proj : {"q", "k", "v"}) {
      const int64_t rows = (*proj == 'q' ? c.n_head : c.n_kv_head) * hd;
      t.push_back({a + proj + "_proj.weight", {rows, d}});
      t.push_back({a + proj + "_proj.bias", {rows}});
    }
    t.push_back({a + "o_proj.weight", {d, c.n_head * hd}});
    t.push_back({a + "o_proj.bias", {d}});
    t.push_back({a + "sinks", {c.n_head}});
    t.push_back({m + "router.weight", {e, d}});
    t.push_back({m + "router.bias", {e}});
    if (mxfp4_experts) {  // each matrix transposed, a row per output, in groups of 32 inputs
      t.push_back({m + "experts.gate_up_proj_blocks", {e, 2 * inter, d / 32, 16}, Init::kMxfp4Codes});
      t.push_back({m + "experts.gate_up_proj_scales", {e, 2 * inter, d / 32}, Init::kMxfp4Scales});
    } else {
      t.push_back({m + "experts.gate_up_proj", {e, d, 2 * inter}});
    }
    t.push_back({m + "experts.gate_up_proj_bias", {e, 2 * inter}});
    if (mxfp4_experts) {
      t.push_back({m + "experts.down_proj_blocks", {e, d, inter / 32, 16}, Init::kMxfp4Codes});
      t.push_back({m + "experts.down_proj_scales", {e, d, inter / 32}, Init::kMxfp4Scales});
    } else {
      t.push_back({m + "experts.down_proj", {e, inter, d}});
    }
    t.push_back({m + "experts.down_proj_bias", {e, d}});
  }
  add_head(t, c, "model", Init::kNorm);
  return t;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Result<std::vector<TensorSpec>> checkpoint_tensors(const ModelConfig& c, bool mxfp4_experts) {
  if (mxfp4_experts) {
    if (c.architecture != "GptOssForCausalLM")
      return unsupported("make-model writes MXFP4 experts for GptOssForCausalLM only, not " + c.architecture);
    if (c.hidden_size % 32 != 0 || c.moe_intermediate_size % 32 != 0)
      return invalid_argument("MXFP4 experts need hidden_size and intermediate_size multiples of 32");
  }
  if (c.architecture == "Qwen3ForCausalLM" || c.architecture == "Qwen3MoeForCausalLM") return qwen3_tensors(c);
  if (c.architecture == "Qwen3_5MoeForCausalLM") return qwen3_5_moe_tensors(c, "model");
  // The multimodal layout keeps the text model under model.language_model (no vision tower is written).
  if (c.architecture == "Qwen3_5MoeForConditionalGeneration") return qwen3_5_moe_tensors(c, "model.language_model");
  if (c.architecture == "DeepseekV3ForCausalLM") return deepseek_v3_tensors(c);
  if (c.architecture == "GptOssForCausalLM") return gpt_oss_tensors(c, mxfp4_experts);
  return unsupported(
      "make-model writes Qwen3ForCausalLM, Qwen3MoeForCausalLM, Qwen3_5MoeForCausalLM, "
      "Qwen3_5MoeForConditionalGeneration, DeepseekV3ForCausalLM and GptOssForCausalLM checkpoints, not " +
      c.architecture);
}

float random_value(uint64_t seed, uint64_t id, uint64_t i, Init init) {
  const uint64_t r = splitmix64(seed * 0x100000001b3ull ^ (id << 40) ^ i);
  const float u = static_cast<float>(r >> 40) * (2.0f / 16777216.0f) - 1.0f;  // U(-1, 1)
  switch (init) {
    case Init::kNorm: return 1.0f + 0.1f * u;
    case Init::kZeroNorm:
    case Init::kDtBias: return 0.1f * u;
    case Init::kALog: return std::log(8.5f + 7.5f * u);  // log U(1, 16)
    case Init::kWeight:
    case Init::kMxfp4Codes:  // u8 parts: random_byte
    case Init::kMxfp4Scales:
      break;
  }
  return 0.02f * 1.7320508f * u;  // std 0.02
}

uint8_t random_byte(uint64_t seed, uint64_t id, uint64_t i, Init init) {
  const uint64_t r = splitmix64(seed * 0x100000001b3ull ^ (id << 40) ^ i);
  // Codes uniform over all 16 (|value| 2.2 on average) times about 2^-7: std near 0.02.
  if (init == Init::kMxfp4Scales) return static_cast<uint8_t>(119 + (r >> 40) % 3);
  return static_cast<uint8_t>(r >> 40);
}

}  // namespace ft::cli
