// gpt-oss: the pre-norm decoder (decoder_model.h) with GQA attention (q/k/v/o biases, a learned sink logit per head,
// sliding-window layers alternating with full ones as layer_types says, YaRN rope) and routed experts in every layer:
// a router with a bias, softmax over the top-k logits (= softmax scores renormalised over the top k), and experts
// whose fused gate_up and down carry biases and whose SwiGLU is clamped (ExpertActivation::kClampedSwiglu).
#include "model/decoder_model.h"
#include "model/registry.h"

namespace ft {
namespace {

// The tensors gpt-oss has beside those every decoder layer has: the loader takes them where present, so a checkpoint
// without one would load and compute something else. The experts may be bf16 or MXFP4 (the official checkpoints'
// `_blocks` and `_scales`, dequantized as they load: WeightLoader::experts_gate_up).
Status check_layers(const ModelConfig& c, const SafetensorsArchive& ckpt) {
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* name :
         {"self_attn.sinks", "mlp.router.bias", "mlp.experts.gate_up_proj_bias", "mlp.experts.down_proj_bias"})
      if (!ckpt.contains(p + name))
        return not_found(ckpt.dir() + ": tensor '" + p + name + "' not found in the checkpoint");
  }
  return ok_status();
}

Result<std::unique_ptr<Model>> create(const ModelConfig& c, const SafetensorsArchive& ckpt, Backend& be,
                                      const ModelOptions& options) {
  FT_RETURN_IF_ERROR(check_layers(c, ckpt));
  ModelConfig config = c;
  config.scoring_func = "softmax";
  config.norm_topk_prob = true;
  config.expert_activation = "clamped_swiglu";
  return DecoderModel<GqaAttention>::create(config, ckpt, be, options);
}

}  // namespace

void register_gpt_oss_architectures() { register_architecture("GptOssForCausalLM", create); }

}  // namespace ft
