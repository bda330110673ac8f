// DeepSeek-V3: the pre-norm decoder (decoder_model.h) with multi-head latent attention in every layer; the first
// first_k_dense_replace layers run a SwiGLU MLP, the others sigmoid-scored routed experts (e_score_correction_bias for
// the choice only, group-limited top-k, renormalised, times routed_scaling_factor) plus the shared experts.
// The checkpoint's multi-token prediction layers (model.layers.N and on, N = num_hidden_layers) are not run.
#include <cstdlib>

#include "model/decoder_model.h"
#include "model/mla_attention.h"
#include "model/registry.h"

namespace ft {
namespace {

// A tensor of the multi-token prediction layers: model.layers.L.* with L >= num_hidden_layers.
bool is_prediction_layer(const std::string& name, const ModelConfig& c) {
  const std::string head = "model.layers.";
  return name.rfind(head, 0) == 0 && std::atoll(name.c_str() + head.size()) >= c.n_layer;
}

Result<std::unique_ptr<Model>> create(const ModelConfig& c, const SafetensorsArchive& ckpt, Backend& be,
                                      const ModelOptions& options) {
  ModelConfig config = c;
  config.scoring_func = "sigmoid";  // transformers' DeepseekV3TopkRouter, whatever scoring_func says
  return DecoderModel<MlaAttention>::create(config, ckpt, be, options, is_prediction_layer);
}

}  // namespace

void register_deepseek_v3_architectures() { register_architecture("DeepseekV3ForCausalLM", create); }

}  // namespace ft
