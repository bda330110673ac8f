// The reference op table.
#include "backend/ref/ref_ops.h"

namespace ft {
namespace {
// Any float dtypes; f4_e2m1 weights are MXFP4 codes, which mean something only beside their scales (moe_experts').
bool ref_supports(Op op, DType act, DType weight) {
  if (weight == DType::kF4E2M1) return op == Op::kMoeExperts && dtype_is_float(act);
  return dtype_is_float(act) && dtype_is_float(weight);
}
}  // namespace

const OpTable& ref_op_table() {
  static const OpTable table{
      .name = "ref",
      .supports = ref_supports,
      .embedding = ref::embedding,
      .matmul = ref::matmul,
      .rms_norm = ref::rms_norm,
      .add_rms_norm_matmul = ref::add_rms_norm_matmul,
      .rope = ref::rope,
      .qk_norm_rope_store = ref::qk_norm_rope_store,
      .swiglu = ref::swiglu,
      .softmax = ref::softmax,
      .add = ref::add,
      .convert = ref::convert,
      .kv_store = ref::kv_store,
      .attention = ref::attention,
      .moe_route = ref::moe_route,
      .moe_experts = ref::moe_experts,
      .moe_workspace_bytes = ref::moe_workspace_bytes,
      .conv1d_silu = ref::conv1d_silu,
      .gated_delta_chunked = ref::gated_delta_chunked,
      .gated_delta_step = ref::gated_delta_step,
      .rms_norm_gated = ref::rms_norm_gated,
      .sigmoid_mul = ref::sigmoid_mul,
      .sample = ref::sample,
      .matmul_heads = ref::matmul_heads,
      .mla_latent_store = ref::mla_latent_store,
  };
  return table;
}

}  // namespace ft
