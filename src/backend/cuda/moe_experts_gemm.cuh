// moe_experts on tensor cores for prompt-sized bf16 steps (see moe_experts_gemm.cu).
#pragma once

#include "backend/ops.h"

namespace ft::cuda {

inline constexpr int64_t kGemmMinTokens = 32, kGemmMaxExperts = 1024;

// Whether the GEMM path takes this call: more than 32 tokens, bf16 expert weights (activations f32 or bf16: rows
// are gathered in bf16), at most 1024 experts, 16-byte aligned rows.
bool moe_experts_gemm_applies(const Tensor& x, const Tensor& gate_up, const Tensor& down, int64_t n, int64_t d);
size_t moe_experts_gemm_workspace_bytes(int64_t n_tokens, int64_t k, int64_t d, int64_t inter);
// Arguments as moe_experts', already checked; the workspace holds moe_experts_gemm_workspace_bytes.
Status moe_experts_gemm(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                        const Tensor& down, const Tensor& out, const Tensor& workspace, const MoeExpertParams& p,
                        Stream& s);

}  // namespace ft::cuda
