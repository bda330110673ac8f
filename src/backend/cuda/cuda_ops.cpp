// The CUDA op table and what it supports: f32 or bf16 activations with f32 or bf16 weights.
#include "backend/cuda/cuda_ops.h"

namespace ft {
namespace cuda {

bool supports(Op, DType act, DType weight) {
  auto fb = [](DType t) { return t == DType::kF32 || t == DType::kBF16; };
  return fb(act) && fb(weight);
}

}  // namespace cuda

const OpTable& cuda_op_table() {
  static const OpTable table{
      "cuda",
      &cuda::supports,
      &cuda::embedding,
      &cuda::matmul,
      &cuda::rms_norm,
      &cuda::rope,
      &cuda::swiglu,
      &cuda::softmax,
      &cuda::add,
      &cuda::convert,
      &cuda::kv_store,
      &cuda::attention,
      &cuda::moe_route,
      &cuda::moe_experts,
      &cuda::moe_workspace_bytes,
  };
  return table;
}

}  // namespace ft
