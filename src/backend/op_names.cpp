// Printable op names.
#include "backend/ops.h"

namespace ft {

const char* op_name(Op op) {
  switch (op) {
    case Op::kEmbedding: return "embedding";
    case Op::kMatmul: return "matmul";
    case Op::kRmsNorm: return "rms_norm";
    case Op::kRope: return "rope";
    case Op::kAddRmsNormMatmul: return "add_rms_norm_matmul";
    case Op::kQkNormRopeStore: return "qk_norm_rope_store";
    case Op::kSwiglu: return "swiglu";
    case Op::kSoftmax: return "softmax";
    case Op::kAdd: return "add";
    case Op::kConvert: return "convert";
    case Op::kKvStore: return "kv_store";
    case Op::kAttention: return "attention";
    case Op::kMoeRoute: return "moe_route";
    case Op::kMoeExperts: return "moe_experts";
    case Op::kConv1dSilu: return "conv1d_silu";
    case Op::kGatedDeltaChunked: return "gated_delta_chunked";
    case Op::kGatedDeltaStep: return "gated_delta_step";
    case Op::kRmsNormGated: return "rms_norm_gated";
    case Op::kSigmoidMul: return "sigmoid_mul";
    case Op::kSample: return "sample";
    case Op::kMoeCacheLookup: return "moe_cache_lookup";
    case Op::kMoeCacheFill: return "moe_cache_fill";
    case Op::kMoeChunkIds: return "moe_chunk_ids";
    case Op::kMatmulHeads: return "matmul_heads";
    case Op::kMlaLatentStore: return "mla_latent_store";
  }
  return "?";
}

}  // namespace ft
