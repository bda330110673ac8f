// Fused ops as the ops they fuse, run in turn from one backend's table: what a backend without the fused kernel runs
// (ref, cpu), and the CUDA op's fallback for the shapes its kernel does not take.
#pragma once

#include "backend/ops.h"

namespace ft {

// add_rms_norm_matmul (ops.h) as add, rms_norm and matmul.
inline Status add_rms_norm_matmul_in_turn(const OpTable& ops, const Tensor& x, const Tensor& delta, const Tensor& w,
                                          const Tensor& x_out, const Tensor& h, const Tensor& proj, const Tensor& bias,
                                          const Tensor& out, const RmsNormParams& p, Stream& s) {
  if (delta.defined() != x_out.defined()) return invalid_argument("add_rms_norm_matmul: delta without x_out");
  if (delta.defined()) FT_RETURN_IF_ERROR(ops.add(x, delta, x_out, s));
  FT_RETURN_IF_ERROR(ops.rms_norm(delta.defined() ? x_out : x, w, h, p, s));
  return ops.matmul(h, proj, bias, out, s);
}

// mla_latent_store (ops.h) as rms_norm, rope, kv_store and rope.
inline Status mla_latent_store_in_turn(const OpTable& ops, const Tensor& keys, const Tensor& norm_w,
                                       const Tensor& q_rope, const Tensor& q_out, const Tensor& positions,
                                       const Tensor& inv_freq, const Tensor& slots, const Tensor& k_cache,
                                       const RmsNormParams& norm, const RopeParams& rope, Stream& s) {
  if (keys.ndim != 3 || norm_w.ndim != 1 || keys.dim(2) != norm_w.dim(0) + rope.rot_dim)
    return invalid_argument("mla_latent_store: keys " + keys.shape_string() + " are not [n, 1, kv_lora + rot_dim]");
  const int64_t kv_lora = norm_w.dim(0);
  const Tensor latent = keys.select(1, 0).slice(1, 0, kv_lora);  // [n, kv_lora]
  const Tensor k_rope = keys.slice(2, kv_lora, rope.rot_dim);    // [n, 1, rot_dim]
  FT_RETURN_IF_ERROR(ops.rms_norm(latent, norm_w, latent, norm, s));
  FT_RETURN_IF_ERROR(ops.rope(k_rope, positions, inv_freq, k_rope, rope, s));
  FT_RETURN_IF_ERROR(ops.kv_store(keys, Tensor{}, slots, k_cache, Tensor{}, s));
  return ops.rope(q_rope, positions, inv_freq, q_out, rope, s);
}

}  // namespace ft
