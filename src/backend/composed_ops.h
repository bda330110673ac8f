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

}  // namespace ft
