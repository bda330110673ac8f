// config.json -> ModelConfig, with one-line errors naming the file and the key.
#include "io/model_config.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"

namespace ft {

bool ModelConfig::is_moe_layer(int64_t layer) const {
  if (n_expert == 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end()) return false;
  if (layer < first_k_dense_replace) return false;
  return decoder_sparse_step <= 1 || (layer + 1) % decoder_sparse_step == 0;
}

namespace {

using nlohmann::json;

class Reader {
 public:
  Reader(const json& j, const std::string& origin) : j_(j), origin_(origin) {}

  Status status() const { return status_; }

  template <class T>
  void get(const char* key, T& out, bool required = false) {
    if (!status_.ok()) return;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (required) status_ = corrupt_file(origin_ + ": missing '" + key + "'");
      return;
    }
    try {
      if constexpr (std::is_same_v<T, bool>) {
        if (!it->is_boolean()) throw std::runtime_error("not a boolean");
      } else if constexpr (std::is_integral_v<T>) {
        if (!it->is_number_integer()) throw std::runtime_error("not an integer");
      } else if constexpr (std::is_floating_point_v<T>) {
        if (!it->is_number()) throw std::runtime_error("not a number");
      }
      out = it->get<T>();
    } catch (const std::exception& e) {
      status_ = corrupt_file(origin_ + ": '" + key + "' has the wrong type (" + it->type_name() + ")");
    }
  }
  // Accepts the first key present among several spellings.
  template <class T>
  void get_any(std::initializer_list<const char*> keys, T& out, bool required = false) {
    for (const char* k : keys)
      if (j_.contains(k) && !j_[k].is_null()) return get(k, out);
    if (required) status_ = corrupt_file(origin_ + ": missing '" + std::string(*keys.begin()) + "'");
  }
  void fail(const std::string& message) {
    if (status_.ok()) status_ = corrupt_file(origin_ + ": " + message);
  }

 private:
  const json& j_;
  const std::string& origin_;
  Status status_;
};

void read_rope(const json& top, const std::string& origin, RopeConfig& rope, Reader& errors) {
  // transformers 5 nests rope settings in rope_parameters; older configs use rope_theta + rope_scaling.
  Reader r(top, origin);
  r.get("rope_theta", rope.theta);
  r.get("partial_rotary_factor", rope.partial_rotary_factor);
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = top.find(key);
    if (it == top.end() || it->is_null()) continue;
    if (!it->is_object()) {
      errors.fail(std::string("'") + key + "' is not an object");
      return;
    }
    Reader s(*it, origin);
    if (it->contains("rope_type")) s.get("rope_type", rope.type);
    else if (it->contains("type")) s.get("type", rope.type);
    s.get("rope_theta", rope.theta);
    s.get("partial_rotary_factor", rope.partial_rotary_factor);
    s.get("factor", rope.factor);
    s.get("original_max_position_embeddings", rope.original_max_position_embeddings);
    s.get("beta_fast", rope.beta_fast);
    s.get("beta_slow", rope.beta_slow);
    s.get("mscale", rope.mscale);
    s.get("mscale_all_dim", rope.mscale_all_dim);
    s.get("attention_factor", rope.attention_factor);
    s.get("truncate", rope.truncate);
    s.get("low_freq_factor", rope.low_freq_factor);
    s.get("high_freq_factor", rope.high_freq_factor);
    s.get("mrope_section", rope.mrope_section);
    s.get("mrope_interleaved", rope.mrope_interleaved);
    if (!s.status().ok()) errors.fail(s.status().message());
  }
  if (!r.status().ok()) errors.fail(r.status().message());
}

void read_eos(const json& j, std::vector<int32_t>& ids) {
  auto it = j.find("eos_token_id");
  if (it == j.end()) return;
  auto add = [&](const json& v) {
    if (v.is_number_integer() && std::find(ids.begin(), ids.end(), v.get<int32_t>()) == ids.end())
      ids.push_back(v.get<int32_t>());
  };
  if (it->is_array())
    for (const auto& v : *it) add(v);
  else
    add(*it);
}

}  // namespace

Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& origin) {
  json top = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (top.is_discarded() || !top.is_object()) return corrupt_file(origin + ": not a JSON object");
  ModelConfig c;
  Reader outer(top, origin);
  std::vector<std::string> archs;
  outer.get("architectures", archs);
  outer.get("model_type", c.model_type);
  FT_RETURN_IF_ERROR(outer.status());
  if (archs.empty()) return corrupt_file(origin + ": missing 'architectures'");
  c.architecture = archs.front();

  const json& j = (top.contains("text_config") && top["text_config"].is_object()) ? top["text_config"] : top;
  Reader r(j, origin);
  r.get("vocab_size", c.vocab_size, true);
  r.get("hidden_size", c.hidden_size, true);
  r.get("intermediate_size", c.intermediate_size);
  r.get("num_hidden_layers", c.n_layer, true);
  r.get("num_attention_heads", c.n_head, true);
  c.n_kv_head = c.n_head;
  r.get("num_key_value_heads", c.n_kv_head);
  r.get("head_dim", c.head_dim);
  r.get("max_position_embeddings", c.max_position_embeddings);
  r.get("rms_norm_eps", c.rms_norm_eps);
  r.get("tie_word_embeddings", c.tie_word_embeddings);
  r.get("attention_bias", c.attention_bias);
  r.get("layer_types", c.layer_types);
  r.get("sliding_window", c.sliding_window);
  r.get_any({"num_experts", "num_local_experts", "n_routed_experts"}, c.n_expert);
  r.get("num_experts_per_tok", c.n_expert_used);
  r.get("moe_intermediate_size", c.moe_intermediate_size);
  r.get("norm_topk_prob", c.norm_topk_prob);
  r.get("decoder_sparse_step", c.decoder_sparse_step);
  r.get("mlp_only_layers", c.mlp_only_layers);
  r.get("shared_expert_intermediate_size", c.shared_expert_intermediate_size);
  r.get("n_shared_experts", c.n_shared_expert);
  r.get("first_k_dense_replace", c.first_k_dense_replace);
  r.get("n_group", c.n_group);
  r.get("topk_group", c.topk_group);
  r.get("routed_scaling_factor", c.routed_scaling_factor);
  r.get("scoring_func", c.scoring_func);
  r.get("swiglu_limit", c.swiglu_limit);
  r.get("q_lora_rank", c.q_lora_rank);
  r.get("kv_lora_rank", c.kv_lora_rank);
  r.get("qk_nope_head_dim", c.qk_nope_head_dim);
  r.get("qk_rope_head_dim", c.qk_rope_head_dim);
  r.get("v_head_dim", c.v_head_dim);
  r.get("rope_interleave", c.rope_interleave);
  r.get("linear_conv_kernel_dim", c.linear_conv_kernel_dim);
  r.get("linear_key_head_dim", c.linear_key_head_dim);
  r.get("linear_value_head_dim", c.linear_value_head_dim);
  r.get("linear_num_key_heads", c.linear_num_key_heads);
  r.get("linear_num_value_heads", c.linear_num_value_heads);
  r.get("bos_token_id", c.bos_token_id);
  read_rope(j, origin, c.rope, r);
  FT_RETURN_IF_ERROR(r.status());
  read_eos(top, c.eos_token_ids);
  if (&j != &top) read_eos(j, c.eos_token_ids);

  if (c.head_dim == 0 && c.n_head > 0) c.head_dim = c.hidden_size / c.n_head;
  auto positive = [&](const char* name, int64_t v) -> Status {
    if (v <= 0) return corrupt_file(origin + ": '" + name + "' must be positive, got " + std::to_string(v));
    return ok_status();
  };
  FT_RETURN_IF_ERROR(positive("vocab_size", c.vocab_size));
  FT_RETURN_IF_ERROR(positive("hidden_size", c.hidden_size));
  FT_RETURN_IF_ERROR(positive("num_hidden_layers", c.n_layer));
  FT_RETURN_IF_ERROR(positive("num_attention_heads", c.n_head));
  FT_RETURN_IF_ERROR(positive("num_key_value_heads", c.n_kv_head));
  FT_RETURN_IF_ERROR(positive("head_dim", c.head_dim));
  if (c.kv_lora_rank != 0) {  // multi-head latent attention: its dims size the scratch before any weight is read
    FT_RETURN_IF_ERROR(positive("kv_lora_rank", c.kv_lora_rank));
    FT_RETURN_IF_ERROR(positive("qk_nope_head_dim", c.qk_nope_head_dim));
    FT_RETURN_IF_ERROR(positive("qk_rope_head_dim", c.qk_rope_head_dim));
    FT_RETURN_IF_ERROR(positive("v_head_dim", c.v_head_dim));
    if (c.q_lora_rank < 0) return corrupt_file(origin + ": 'q_lora_rank' must not be negative");
  }
  if (c.n_head % c.n_kv_head)
    return corrupt_file(origin + ": num_attention_heads " + std::to_string(c.n_head) +
                        " is not a multiple of num_key_value_heads " + std::to_string(c.n_kv_head));
  if (!c.layer_types.empty() && static_cast<int64_t>(c.layer_types.size()) != c.n_layer)
    return corrupt_file(origin + ": layer_types has " + std::to_string(c.layer_types.size()) + " entries for " +
                        std::to_string(c.n_layer) + " layers");
  if (c.layer_types.empty()) c.layer_types.assign(static_cast<size_t>(c.n_layer), "full_attention");
  // gpt-oss names its experts' width intermediate_size (it has no dense MLP).
  if (c.architecture == "GptOssForCausalLM" && c.moe_intermediate_size == 0)
    c.moe_intermediate_size = c.intermediate_size;
  if (c.n_expert > 0) {
    FT_RETURN_IF_ERROR(positive("num_experts_per_tok", c.n_expert_used));
    FT_RETURN_IF_ERROR(positive("moe_intermediate_size", c.moe_intermediate_size));
    if (c.n_expert_used > c.n_expert)
      return corrupt_file(origin + ": num_experts_per_tok exceeds the number of experts");
    if (c.n_group < 1 || c.n_expert % c.n_group != 0 || c.topk_group < 1 || c.topk_group > c.n_group)
      return corrupt_file(origin + ": n_group " + std::to_string(c.n_group) + " and topk_group " +
                          std::to_string(c.topk_group) + " do not split " + std::to_string(c.n_expert) + " experts");
    if (c.shared_expert_intermediate_size == 0 && c.n_shared_expert > 0)
      c.shared_expert_intermediate_size = c.moe_intermediate_size * c.n_shared_expert;
  }
  return c;
}

Result<ModelConfig> load_model_config(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  FT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  FT_ASSIGN_OR_RETURN(ModelConfig c, parse_model_config(text, path));
  const std::string gen_path = (std::filesystem::path(dir) / "generation_config.json").string();
  if (std::filesystem::exists(gen_path)) {
    auto gen_text = read_text_file(gen_path);
    if (gen_text.ok()) {
      nlohmann::json g = nlohmann::json::parse(gen_text.value(), nullptr, false);
      if (g.is_object()) read_eos(g, c.eos_token_ids);
    }
  }
  return c;
}

}  // namespace ft
