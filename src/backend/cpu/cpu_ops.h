// Optimised CPU ops: multithreaded on the stream's pool, vectorised for the run-time ISA level (isa.h).
// Activations f32; weights, embedding tables, norm weights, biases and KV caches f32 or bf16.
#pragma once

#include "backend/cpu/isa.h"
#include "backend/ops.h"

namespace ft {

const OpTable& cpu_op_table();

namespace cpu {
bool supports(Op op, DType act, DType weight);
Status embedding(const Tensor& table, const Tensor& ids, const Tensor& out, Stream& s);
Status matmul(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out, Stream& s);
Status rms_norm(const Tensor& x, const Tensor& w, const Tensor& out, const RmsNormParams& p, Stream& s);
Status rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq, const Tensor& out,
            const RopeParams& p, Stream& s);
Status swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, Stream& s);
Status softmax(const Tensor& x, const Tensor& out, Stream& s);
Status add(const Tensor& a, const Tensor& b, const Tensor& out, Stream& s);
Status convert(const Tensor& x, const Tensor& out, Stream& s);
Status kv_store(const Tensor& k, const Tensor& v, const Tensor& slots, const Tensor& k_cache,
                const Tensor& v_cache, Stream& s);
Status attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const PagedAttentionMeta& meta,
                 const Tensor& out, const AttentionParams& p, Stream& s);
Status moe_route(const Tensor& logits, const Tensor& bias, const Tensor& ids, const Tensor& weights,
                 const MoeRouteParams& p, Stream& s);
Status moe_experts(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                   const Tensor& down, const Tensor& out, const Tensor& workspace, Stream& s);
size_t moe_workspace_bytes(int64_t n_tokens, int64_t n_expert_used, int64_t d, int64_t inter);
Status conv1d_silu(const Tensor& x, const Tensor& w, const RecurrentMeta& meta, const Tensor& state,
                   const Tensor& out, Stream& s);
Status gated_delta_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
                           const RecurrentMeta& meta, const Tensor& state, const Tensor& out,
                           const GatedDeltaParams& p, Stream& s);
Status gated_delta_step(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
                        const RecurrentMeta& meta, const Tensor& state, const Tensor& out,
                        const GatedDeltaParams& p, Stream& s);
Status rms_norm_gated(const Tensor& x, const Tensor& w, const Tensor& z, const Tensor& out, float eps, Stream& s);
Status sigmoid_mul(const Tensor& x, const Tensor& gate, const Tensor& out, Stream& s);
Status sample(const Tensor& logits, const Tensor& params, const Tensor& ids, const Tensor& logprobs,
              const Tensor& top_ids, Stream& s);
}  // namespace cpu

}  // namespace ft
