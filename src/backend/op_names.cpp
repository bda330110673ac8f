// Printable op names.
#include "backend/ops.h"

namespace ft {

const char* op_name(Op op) {
  switch (op) {
    case Op::kEmbedding: return "embedding";
    case Op::kMatmul: return "matmul";
    case Op::kRmsNorm: return "rms_norm";
    case Op::kRope: return "rope";
    case Op::kSwiglu: return "swiglu";
    case Op::kSoftmax: return "softmax";
    case Op::kAdd: return "add";
    case Op::kConvert: return "convert";
    case Op::kKvStore: return "kv_store";
    case Op::kAttention: return "attention";
    case Op::kMoeRoute: return "moe_route";
    case Op::kMoeExperts: return "moe_experts";
  }
  return "?";
}

}  // namespace ft
