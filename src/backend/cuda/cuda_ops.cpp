// The CUDA op table and what it supports: f32 or bf16 activations with f32 or bf16 weights, for every op.
#include "backend/cuda/cuda_ops.h"

namespace ft {
namespace cuda {

bool supports(Op op, DType act, DType weight) {
  switch (op) {
    case Op::kEmbedding:
    case Op::kMatmul:
    case Op::kRmsNorm:
    case Op::kRope:
    case Op::kAddRmsNormMatmul:
    case Op::kQkNormRopeStore:
    case Op::kSwiglu:
    case Op::kSoftmax:
    case Op::kAdd:
    case Op::kConvert:
    case Op::kKvStore:
    case Op::kAttention:
    case Op::kMoeRoute:
    case Op::kMoeExperts:
    case Op::kConv1dSilu:
    case Op::kGatedDeltaChunked:
    case Op::kGatedDeltaStep:
    case Op::kRmsNormGated:
    case Op::kSigmoidMul:
    case Op::kMatmulHeads:
    case Op::kMlaLatentStore: {
      auto fb = [](DType t) { return t == DType::kF32 || t == DType::kBF16; };
      return fb(act) && fb(weight);
    }
    case Op::kSample:
    case Op::kMoeCacheLookup:
    case Op::kMoeCacheFill:
    case Op::kMoeChunkIds:
      return true;  // f32 logits / integer tables and raw records, whatever the model's dtypes
  }
  return false;
}

}  // namespace cuda

const OpTable& cuda_op_table() {
  static const OpTable table{
      .name = "cuda",
      .supports = &cuda::supports,
      .embedding = &cuda::embedding,
      .matmul = &cuda::matmul,
      .rms_norm = &cuda::rms_norm,
      .add_rms_norm_matmul = &cuda::add_rms_norm_matmul,
      .rope = &cuda::rope,
      .qk_norm_rope_store = &cuda::qk_norm_rope_store,
      .swiglu = &cuda::swiglu,
      .softmax = &cuda::softmax,
      .add = &cuda::add,
      .convert = &cuda::convert,
      .kv_store = &cuda::kv_store,
      .attention = &cuda::attention,
      .moe_route = &cuda::moe_route,
      .moe_experts = &cuda::moe_experts,
      .moe_workspace_bytes = &cuda::moe_workspace_bytes,
      .conv1d_silu = &cuda::conv1d_silu,
      .gated_delta_chunked = &cuda::gated_delta_chunked,
      .gated_delta_step = &cuda::gated_delta_step,
      .rms_norm_gated = &cuda::rms_norm_gated,
      .sigmoid_mul = &cuda::sigmoid_mul,
      .sample = &cuda::sample,
      .moe_cache_lookup = &cuda::moe_cache_lookup,
      .moe_cache_fill = &cuda::moe_cache_fill,
      .moe_chunk_ids = &cuda::moe_chunk_ids,
      .matmul_heads = &cuda::matmul_heads,
      .mla_latent_store = &cuda::mla_latent_store,
  };
  return table;
}

}  // namespace ft
