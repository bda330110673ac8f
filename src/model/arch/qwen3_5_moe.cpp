// Qwen3.5 / Qwen3.6 MoE (text): pre-norm decoder whose layers are Gated DeltaNet linear attention or gated full
// attention (layer_types), each followed by softmax top-k routed experts plus a sigmoid-gated shared expert.
// Every RMSNorm but the gated one is zero-centred, x * (1 + w) with 1 + w formed in fp32 inside the op.
// Text positions are equal in every mrope section, so the interleaved mrope is plain rotate-half rope over the
// rotary dims (head_dim * partial_rotary_factor).
#include <algorithm>

#include "core/log.h"
#include "model/causal_lm.h"
#include "model/gated_attention.h"
#include "model/gated_delta_net.h"
#include "model/registry.h"

namespace ft {
namespace {

struct Qwen35Layer {
  Tensor input_norm, post_norm;  // [d]
  bool linear = false;
  GatedDeltaNet delta_net;
  GatedAttention attn;
  MoeBlock moe;
};

class Qwen35MoeModel final : public CausalLm {
 public:
  static Result<std::unique_ptr<Model>> create(const ModelConfig& c, const SafetensorsArchive& ckpt, Backend& be,
                                               const ModelOptions& options) {
    if (!GatedDeltaNet::supported(be.ops()))
      return unsupported(std::string("device ") + be.name() + " does not run gated delta net yet");
    // Multimodal checkpoints (Qwen3_5MoeForConditionalGeneration) keep the text model under language_model.
    const std::string prefix = ckpt.contains("model.language_model.embed_tokens.weight") ? "model.language_model"
                                                                                          : "model";
    std::unique_ptr<Qwen35MoeModel> m(new Qwen35MoeModel(c, options, be));
    WeightLoader w(ckpt, be, options.act_dtype, options.show_progress);
    FT_RETURN_IF_ERROR(m->load(w, prefix));
    m->weight_bytes_ = w.loaded_bytes();
    for (const auto& name : w.unused()) {
      if (name.rfind("model.visual.", 0) == 0 || name.rfind("mtp.", 0) == 0) continue;  // vision, multi-token head
      FT_LOG(kWarn) << "unused checkpoint tensor " << name;
    }
    return std::unique_ptr<Model>(std::move(m));
  }

  std::vector<KvLayerShape> kv_layers() const override {
    std::vector<KvLayerShape> out;
    for (const auto& l : layers_)
      out.push_back(l.linear ? KvLayerShape{} : KvLayerShape{config_.n_kv_head, config_.head_dim, config_.head_dim});
    return out;
  }

  std::vector<StateLayerShape> state_layers() const override {
    std::vector<StateLayerShape> out;
    for (const auto& l : layers_) out.push_back(l.linear ? l.delta_net.state_shape() : StateLayerShape{});
    return out;
  }

 private:
  Qwen35MoeModel(const ModelConfig& c, const ModelOptions& o, Backend& be) : CausalLm(c, o, be) {}

  Status load(WeightLoader& w, const std::string& prefix) {
    const auto& c = config_;
    FT_RETURN_IF_ERROR(load_common(w, prefix));
    final_norm_params_.zero_centered = true;
    const int64_t rot_dim = static_cast<int64_t>(static_cast<double>(c.head_dim) * c.rope.partial_rotary_factor);
    FT_ASSIGN_OR_RETURN(RopeTable rope, rope_table(c.rope, rot_dim, c.max_position_embeddings));
    FT_ASSIGN_OR_RETURN(inv_freq_, upload_f32(rope.inv_freq));
    for (int64_t l = 0; l < c.n_layer; ++l) {
      const std::string p = prefix + ".layers." + std::to_string(l);
      const std::string& type = c.layer_types[static_cast<size_t>(l)];
      Qwen35Layer layer;
      FT_ASSIGN_OR_RETURN(layer.input_norm, w.get(p + ".input_layernorm.weight", {c.hidden_size}));
      FT_ASSIGN_OR_RETURN(layer.post_norm, w.get(p + ".post_attention_layernorm.weight", {c.hidden_size}));
      layer.linear = type == "linear_attention";
      if (layer.linear) {
        FT_ASSIGN_OR_RETURN(layer.delta_net, GatedDeltaNet::load(w, p + ".linear_attn", c, l));
      } else if (type == "full_attention") {
        FT_ASSIGN_OR_RETURN(layer.attn, GatedAttention::load(w, p + ".self_attn", c, l, inv_freq_));
      } else {
        return unsupported(p + ": layer type '" + type + "' is not supported");
      }
      FT_ASSIGN_OR_RETURN(layer.moe, load_moe(w, p + ".mlp"));
      layer.moe.route.norm_topk = true;  // the router always renormalises its top-k probabilities
      layers_.push_back(std::move(layer));
    }
    return ok_status();
  }

  int64_t max_intermediate() const override { return config_.shared_expert_intermediate_size; }
  int64_t qkv_width() const override { return GatedAttention::qkv_width(config_); }
  // bf16 activations keep everything but attention (q/k/v, its output, the KV cache) in fp32: rounding the residual
  // stream and the Gated DeltaNet inputs to bf16 costs a tenth of the argmaxes (the fixture: 54/60 and 286/357
  // positions agree with the float64 reference in bf16 throughout, 59/60 and 356/357 this way, against transformers'
  // own bf16 run's 56/60 and 273/357). At decode the activations are a few KB against gigabytes of weights.
  DType hidden_dtype() const override { return DType::kF32; }

  // The layer norms are zero-centred (final_norm_params_).
  Status forward_layer(int64_t l, const LayerContext& c, Residual& r, const Tensor& h, const Tensor& h2) override {
    const Qwen35Layer& layer = layers_[static_cast<size_t>(l)];
    const LayerInput in = input_norm(l, r, h2, layer.input_norm, h);
    if (layer.linear) FT_RETURN_IF_ERROR(layer.delta_net.forward(c, scratch_, in, h2));
    else FT_RETURN_IF_ERROR(layer.attn.forward(c, scratch_, in, h2));
    return layer.moe.forward(c, scratch_, post_norm(r, h2, layer.post_norm, h), h2);  // h2: added by the next layer
  }

  Tensor inv_freq_;  // [rot_dim / 2] f32
  std::vector<Qwen35Layer> layers_;
};

}  // namespace

void register_qwen3_5_moe_architectures() {
  register_architecture("Qwen3_5MoeForCausalLM", Qwen35MoeModel::create);
  register_architecture("Qwen3_5MoeForConditionalGeneration", Qwen35MoeModel::create);
}

}  // namespace ft
