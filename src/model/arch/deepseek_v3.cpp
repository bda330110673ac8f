// DeepSeek-V3: pre-norm decoder with multi-head latent attention in every layer; the first first_k_dense_replace
// layers run a SwiGLU MLP, the others sigmoid-scored routed experts (e_score_correction_bias for the choice only,
// group-limited top-k, renormalised, times routed_scaling_factor) plus the shared experts as one MLP.
// The checkpoint's multi-token prediction layers (model.layers.N and on, N = num_hidden_layers) are not run.
#include <algorithm>
#include <cstdlib>

#include "core/log.h"
#include "model/causal_lm.h"
#include "model/mla_attention.h"
#include "model/registry.h"

namespace ft {
namespace {

struct DeepseekLayer {
  Tensor input_norm, post_norm;  // [d]
  MlaAttention attn;
  bool moe = false;
  DenseMlp mlp;
  MoeBlock experts;
};

// A name of the checkpoint's multi-token prediction layers: model.layers.L.* with L >= n_layer.
bool is_prediction_layer(const std::string& name, int64_t n_layer) {
  const std::string head = "model.layers.";
  if (name.rfind(head, 0) != 0) return false;
  return std::atoll(name.c_str() + head.size()) >= n_layer;
}

class DeepseekV3Model final : public CausalLm {
 public:
  static Result<std::unique_ptr<Model>> create(const ModelConfig& c, const SafetensorsArchive& ckpt, Backend& be,
                                               const ModelOptions& options) {
    std::unique_ptr<DeepseekV3Model> m(new DeepseekV3Model(c, options, be));
    WeightLoader w(ckpt, be, options.act_dtype, options.show_progress);
    FT_RETURN_IF_ERROR(m->load(w));
    m->weight_bytes_ = w.loaded_bytes();
    for (const auto& name : w.unused()) {
      if (is_prediction_layer(name, c.n_layer)) continue;
      FT_LOG(kWarn) << "unused checkpoint tensor " << name;
    }
    return std::unique_ptr<Model>(std::move(m));
  }

  std::vector<KvLayerShape> kv_layers() const override {
    return std::vector<KvLayerShape>(static_cast<size_t>(config_.n_layer), MlaAttention::kv_shape(config_));
  }

 private:
  DeepseekV3Model(const ModelConfig& c, const ModelOptions& o, Backend& be) : CausalLm(c, o, be) {}

  Status load(WeightLoader& w) {
    const auto& c = config_;
    FT_RETURN_IF_ERROR(load_common(w));
    FT_ASSIGN_OR_RETURN(RopeTable rope, rope_table(c.rope, c.qk_rope_head_dim, c.max_position_embeddings));
    FT_ASSIGN_OR_RETURN(inv_freq_, upload_f32(rope.inv_freq));
    for (int64_t l = 0; l < c.n_layer; ++l) {
      const std::string p = "model.layers." + std::to_string(l);
      DeepseekLayer layer;
      FT_ASSIGN_OR_RETURN(layer.input_norm, w.get(p + ".input_layernorm.weight", {c.hidden_size}));
      FT_ASSIGN_OR_RETURN(layer.post_norm, w.get(p + ".post_attention_layernorm.weight", {c.hidden_size}));
      FT_ASSIGN_OR_RETURN(layer.attn, MlaAttention::load(w, p + ".self_attn", c, l, inv_freq_, rope.attention_factor));
      layer.moe = c.is_moe_layer(l);
      if (layer.moe) {
        FT_ASSIGN_OR_RETURN(layer.experts, load_moe(w, p + ".mlp"));
        layer.experts.route.scoring = RouterScoring::kSigmoid;  // transformers' DeepseekV3TopkRouter, whatever
                                                                // scoring_func says
      } else {
        FT_ASSIGN_OR_RETURN(layer.mlp, DenseMlp::load(w, p + ".mlp", c.hidden_size, c.intermediate_size));
      }
      layers_.push_back(std::move(layer));
    }
    return ok_status();
  }

  int64_t max_intermediate() const override {  // the dense layers' MLP and the shared experts
    int64_t inter = config_.shared_expert_intermediate_size;
    for (int64_t l = 0; l < config_.n_layer; ++l)
      if (!config_.is_moe_layer(l)) inter = std::max(inter, config_.intermediate_size);
    return inter;
  }
  int64_t qkv_width() const override { return MlaAttention::scratch_width(config_); }
  int64_t attention_width() const override { return config_.n_head * config_.v_head_dim; }

  Status forward_layer(int64_t l, const LayerContext& c, Residual& r, const Tensor& h, const Tensor& h2) override {
    const DeepseekLayer& layer = layers_[static_cast<size_t>(l)];
    FT_RETURN_IF_ERROR(layer.attn.forward(c, scratch_, input_norm(l, r, h2, layer.input_norm, h), h2));
    const LayerInput post = post_norm(r, h2, layer.post_norm, h);
    if (layer.moe) return layer.experts.forward(c, scratch_, post, h2);  // h2: added by the next layer's input norm
    return layer.mlp.forward(c, scratch_, post, h2);
  }

  Tensor inv_freq_;  // [qk_rope_head_dim / 2] f32
  std::vector<DeepseekLayer> layers_;
};

}  // namespace

void register_deepseek_v3_architectures() { register_architecture("DeepseekV3ForCausalLM", DeepseekV3Model::create); }

}  // namespace ft
