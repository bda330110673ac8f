// ModelConfig: the typed form of a Hugging Face config.json (text part), for every supported architecture.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "freetoken/status.h"

namespace ft {

struct RopeConfig {
  std::string type = "default";  // default | linear | yarn | llama3 | ...
  double theta = 10000.0;
  double partial_rotary_factor = 1.0;
  double factor = 1.0;                        // linear / yarn / llama3 scaling
  double original_max_position_embeddings = 0;
  double beta_fast = 32.0, beta_slow = 1.0;   // yarn
  double mscale = 0.0, mscale_all_dim = 0.0;  // yarn (DeepSeek)
  double attention_factor = 0.0;              // yarn: cos and sin scale; 0 = derived from factor and mscale
  bool truncate = true;                       // yarn
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  std::vector<int64_t> mrope_section;
  bool mrope_interleaved = false;
};

struct ModelConfig {
  std::string architecture;  // architectures[0], e.g. "Qwen3MoeForCausalLM"
  std::string model_type;

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_kv_head = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  RopeConfig rope;

  // Attention layout per layer: "full_attention", "sliding_attention", "linear_attention".
  std::vector<std::string> layer_types;
  int64_t sliding_window = 0;

  // Mixture of experts.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t moe_intermediate_size = 0;
  bool norm_topk_prob = false;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  int64_t shared_expert_intermediate_size = 0;  // the shared expert's intermediate (DeepSeek: moe_intermediate_size
                                                // x n_shared_experts, the shared experts as one MLP)
  int64_t n_shared_expert = 0;
  int64_t first_k_dense_replace = 0;
  int64_t n_group = 1;
  int64_t topk_group = 1;
  double routed_scaling_factor = 1.0;
  std::string scoring_func = "softmax";
  // The experts' activation: "silu" (silu(gate) * up) or, set by the gpt-oss architecture, "clamped_swiglu"
  // (ExpertActivation::kClampedSwiglu, clamped at swiglu_limit).
  std::string expert_activation = "silu";
  double swiglu_limit = 7.0;

  // Multi-head latent attention (DeepSeek).
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  bool rope_interleave = true;  // the rope dims of q and k rotate as pairs (2i, 2i + 1)

  // Gated DeltaNet linear attention (Qwen3.5 / 3.6).
  int64_t linear_conv_kernel_dim = 0;
  int64_t linear_key_head_dim = 0;
  int64_t linear_value_head_dim = 0;
  int64_t linear_num_key_heads = 0;
  int64_t linear_num_value_heads = 0;

  std::vector<int32_t> eos_token_ids;  // from config.json and generation_config.json
  int32_t bos_token_id = -1;

  bool is_moe_layer(int64_t layer) const;
};

// Reads DIR/config.json (and DIR/generation_config.json for eos ids when present). A nested
// `text_config` (multimodal checkpoints) supplies the text model's fields.
Result<ModelConfig> load_model_config(const std::string& dir);
// Parses config.json text; `origin` names the file in error messages.
Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& origin);

}  // namespace ft
