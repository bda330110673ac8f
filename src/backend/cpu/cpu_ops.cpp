// The CPU op table and what it supports: f32 activations with f32 or bf16 weights (and MXFP4 experts).
#include "backend/cpu/cpu_ops.h"

#include "backend/cpu/common.h"

namespace ft {
namespace cpu {

bool supports(Op op, DType act, DType weight) {
  if (op == Op::kConvert) return is_f32_or_bf16(act) && is_f32_or_bf16(weight);
  if (op == Op::kMoeCacheLookup || op == Op::kMoeCacheFill || op == Op::kMoeChunkIds) return true;
  if (op == Op::kMoeExperts && weight == DType::kF4E2M1) return act == DType::kF32;  // MXFP4 experts
  return act == DType::kF32 && is_f32_or_bf16(weight);
}

}  // namespace cpu

const OpTable& cpu_op_table() {
  static const OpTable table{
      "cpu",
      &cpu::supports,
      &cpu::embedding,
      &cpu::matmul,
      &cpu::rms_norm,
      &cpu::add_rms_norm_matmul,
      &cpu::rope,
      &cpu::qk_norm_rope_store,
      &cpu::swiglu,
      &cpu::softmax,
      &cpu::add,
      &cpu::convert,
      &cpu::kv_store,
      &cpu::attention,
      &cpu::moe_route,
      &cpu::moe_experts,
      &cpu::moe_workspace_bytes,
      &cpu::conv1d_silu,
      &cpu::gated_delta_chunked,
      &cpu::gated_delta_step,
      &cpu::rms_norm_gated,
      &cpu::sigmoid_mul,
      &cpu::sample,
      &cpu::moe_cache_lookup,
      &cpu::moe_cache_fill,
      &cpu::moe_chunk_ids,
      &cpu::matmul_heads,
      &cpu::mla_latent_store,
  };
  return table;
}

}  // namespace ft
