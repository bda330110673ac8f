// gpt-oss: the pre-norm decoder (decoder_model.h) with GQA attention (q/k/v/o biases, a learned sink logit per head,
// sliding-window layers alternating with full ones as layer_types says, YaRN rope) and routed experts in every layer:
// a router with a bias, softmax over the top-k logits (= softmax scores renormalised over the top k), and experts
// whose fused gate_up and down carry biases and whose SwiGLU is clamped (ExpertActivation::kClampedSwiglu).
#include "model/decoder_model.h"
#include "model/registry.h"

namespace ft {
namespace {

Result<std::unique_ptr<Model>> create(const ModelConfig& c, const SafetensorsArchive& ckpt, Backend& be,
                                      const ModelOptions& options) {
  ModelConfig config = c;
  config.scoring_func = "softmax";
  config.norm_topk_prob = true;
  config.expert_activation = "clamped_swiglu";
  return DecoderModel<GqaAttention>::create(config, ckpt, be, options);
}

}  // namespace

void register_gpt_oss_architectures() { register_architecture("GptOssForCausalLM", create); }

}  // namespace ft
