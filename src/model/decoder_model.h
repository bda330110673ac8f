// DecoderModel: the pre-norm decoder Qwen3, Qwen3-MoE, DeepSeek-V3 and gpt-oss share. Each layer: input norm, attention
// (Attention: GqaAttention or MlaAttention), post-attention norm, then a SwiGLU MLP or routed experts (per layer:
// ModelConfig::is_moe_layer). An architecture file registers it with its attention and the checkpoint tensors it
// leaves unread on purpose.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "model/causal_lm.h"

namespace ft {

// What an Attention gives DecoderModel beside load() and forward(), from the config: the rotated dims of a head
// (rot_dim), the KV cache's shape of a layer (kv_shape), the scratch columns its projections use (scratch_width) and
// its output's width, o_proj's input (output_width).
template <class Attention>
class DecoderModel final : public CausalLm {
 public:
  // Names of checkpoint tensors the model leaves unread on purpose (no warning), or null.
  using Unread = bool (*)(const std::string& name, const ModelConfig& c);

  static Result<std::unique_ptr<Model>> create(const ModelConfig& c, const SafetensorsArchive& ckpt, Backend& be,
                                               const ModelOptions& options, Unread unread = nullptr) {
    std::unique_ptr<DecoderModel> m(new DecoderModel(c, options, be));
    WeightLoader w(ckpt, be, options.act_dtype, options.show_progress);
    FT_RETURN_IF_ERROR(m->load(w));
    m->weight_bytes_ = w.loaded_bytes();
    for (const auto& name : w.unused()) {
      if (unread && unread(name, c)) continue;
      FT_LOG(kWarn) << "unused checkpoint tensor " << name;
    }
    return std::unique_ptr<Model>(std::move(m));
  }

  std::vector<KvLayerShape> kv_layers() const override {
    return std::vector<KvLayerShape>(static_cast<size_t>(config_.n_layer), Attention::kv_shape(config_));
  }

 private:
  struct Layer {
    Tensor input_norm, post_norm;  // [d]
    Attention attn;
    bool moe = false;
    DenseMlp mlp;
    MoeBlock experts;
  };

  DecoderModel(const ModelConfig& c, const ModelOptions& o, Backend& be) : CausalLm(c, o, be) {}

  Status load(WeightLoader& w) {
    const auto& c = config_;
    FT_RETURN_IF_ERROR(load_common(w));
    FT_ASSIGN_OR_RETURN(RopeTable rope, rope_table(c.rope, Attention::rot_dim(c), c.max_position_embeddings));
    FT_ASSIGN_OR_RETURN(inv_freq_, upload_f32(rope.inv_freq));
    for (int64_t l = 0; l < c.n_layer; ++l) {
      const std::string p = "model.layers." + std::to_string(l);
      Layer layer;
      FT_ASSIGN_OR_RETURN(layer.input_norm, w.get(p + ".input_layernorm.weight", {c.hidden_size}));
      FT_ASSIGN_OR_RETURN(layer.post_norm, w.get(p + ".post_attention_layernorm.weight", {c.hidden_size}));
      FT_ASSIGN_OR_RETURN(layer.attn, Attention::load(w, p + ".self_attn", c, l, inv_freq_, rope.attention_factor));
      layer.moe = c.is_moe_layer(l);
      if (layer.moe) {
        FT_ASSIGN_OR_RETURN(layer.experts, load_moe(w, p + ".mlp"));
      } else {
        FT_ASSIGN_OR_RETURN(layer.mlp, DenseMlp::load(w, p + ".mlp", c.hidden_size, c.intermediate_size));
      }
      layers_.push_back(std::move(layer));
    }
    return ok_status();
  }

  int64_t max_intermediate() const override {  // dense layers' MLP, and a shared expert where the MoE has one
    int64_t inter = config_.shared_expert_intermediate_size;
    for (int64_t l = 0; l < config_.n_layer; ++l)
      if (!config_.is_moe_layer(l)) inter = std::max(inter, config_.intermediate_size);
    return inter;
  }
  int64_t qkv_width() const override { return Attention::scratch_width(config_); }
  int64_t attention_width() const override { return Attention::output_width(config_); }

  Status forward_layer(int64_t l, const LayerContext& c, Residual& r, const Tensor& h, const Tensor& h2) override {
    const Layer& layer = layers_[static_cast<size_t>(l)];
    FT_RETURN_IF_ERROR(layer.attn.forward(c, scratch_, input_norm(l, r, h2, layer.input_norm, h), h2));
    const LayerInput post = post_norm(r, h2, layer.post_norm, h);
    if (layer.moe) return layer.experts.forward(c, scratch_, post, h2);  // h2: added by the next layer's input norm
    return layer.mlp.forward(c, scratch_, post, h2);
  }

  Tensor inv_freq_;  // [rot_dim / 2] f32
  std::vector<Layer> layers_;
};

}  // namespace ft
