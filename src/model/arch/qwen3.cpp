// Qwen3 (dense) and Qwen3-MoE: pre-norm decoder, GQA with per-head q/k RMSNorm and rope, SwiGLU MLP or
// top-k softmax-routed experts (per layer: mlp_only_layers, decoder_sparse_step).
#include "core/log.h"
#include "model/causal_lm.h"
#include "model/registry.h"

namespace ft {
namespace {

struct Qwen3Layer {
  Tensor input_norm, post_norm;  // [d]
  GqaAttention attn;
  bool moe = false;
  DenseMlp mlp;
  MoeBlock experts;
};

class Qwen3Model final : public CausalLm {
 public:
  static Result<std::unique_ptr<Model>> create(const ModelConfig& c, const SafetensorsArchive& ckpt, Backend& be,
                                               const ModelOptions& options) {
    std::unique_ptr<Qwen3Model> m(new Qwen3Model(c, options, be));
    WeightLoader w(ckpt, be, options.act_dtype, options.show_progress);
    FT_RETURN_IF_ERROR(m->load(w));
    m->weight_bytes_ = w.loaded_bytes();
    for (const auto& name : w.unused()) FT_LOG(kWarn) << "unused checkpoint tensor " << name;
    return std::unique_ptr<Model>(std::move(m));
  }

  std::vector<KvLayerShape> kv_layers() const override {
    return std::vector<KvLayerShape>(static_cast<size_t>(config_.n_layer),
                                     {config_.n_kv_head, config_.head_dim, config_.head_dim});
  }

 private:
  Qwen3Model(const ModelConfig& c, const ModelOptions& o, Backend& be) : CausalLm(c, o, be) {}

  Status load(WeightLoader& w) {
    const auto& c = config_;
    FT_RETURN_IF_ERROR(load_common(w));
    FT_ASSIGN_OR_RETURN(RopeTable rope, rope_table(c.rope, c.head_dim, c.max_position_embeddings));
    FT_ASSIGN_OR_RETURN(inv_freq_, upload_f32(rope.inv_freq));
    for (int64_t l = 0; l < c.n_layer; ++l) {
      const std::string p = "model.layers." + std::to_string(l);
      Qwen3Layer layer;
      FT_ASSIGN_OR_RETURN(layer.input_norm, w.get(p + ".input_layernorm.weight", {c.hidden_size}));
      FT_ASSIGN_OR_RETURN(layer.post_norm, w.get(p + ".post_attention_layernorm.weight", {c.hidden_size}));
      FT_ASSIGN_OR_RETURN(layer.attn, GqaAttention::load(w, p + ".self_attn", c, l, inv_freq_, rope.attention_factor));
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

  Status forward_layer(int64_t l, const LayerContext& c, Residual& r, const Tensor& h, const Tensor& h2) override {
    const Qwen3Layer& layer = layers_[static_cast<size_t>(l)];
    FT_RETURN_IF_ERROR(layer.attn.forward(c, scratch_, input_norm(l, r, h2, layer.input_norm, h), h2));
    const LayerInput post = post_norm(r, h2, layer.post_norm, h);
    if (layer.moe) return layer.experts.forward(c, scratch_, post, h2);  // h2: added by the next layer's input norm
    return layer.mlp.forward(c, scratch_, post, h2);
  }

  Tensor inv_freq_;  // [head_dim / 2] f32
  std::vector<Qwen3Layer> layers_;
};

}  // namespace

void register_qwen3_architectures() {
  register_architecture("Qwen3ForCausalLM", Qwen3Model::create);
  register_architecture("Qwen3MoeForCausalLM", Qwen3Model::create);
}

}  // namespace ft
