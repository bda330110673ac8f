// Qwen3 (dense) and Qwen3-MoE: the pre-norm decoder (decoder_model.h) with GQA attention, per-head q/k RMSNorm and
// rope, and a SwiGLU MLP or top-k softmax-routed experts per layer (mlp_only_layers, decoder_sparse_step).
#include "model/decoder_model.h"
#include "model/registry.h"

namespace ft {
namespace {

Result<std::unique_ptr<Model>> create(const ModelConfig& c, const SafetensorsArchive& ckpt, Backend& be,
                                      const ModelOptions& options) {
  return DecoderModel<GqaAttention>::create(c, ckpt, be, options);
}

}  // namespace

void register_qwen3_architectures() {
  register_architecture("Qwen3ForCausalLM", create);
  register_architecture("Qwen3MoeForCausalLM", create);
}

}  // namespace ft
