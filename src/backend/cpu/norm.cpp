// rms_norm: out = x / sqrt(mean(x^2) + eps) * w (or * (1 + w), formed in fp32), one row per task;
// add_rms_norm_matmul: add, rms_norm and matmul in turn.
#include "backend/cpu/norm.h"

#include "backend/composed_ops.h"
#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"

namespace ft::cpu {
namespace {
constexpr int64_t kRowGrain = 16;  // rows per thread chunk
}  // namespace

Status rms_norm(const Tensor& x,    // [..., d] f32
                const Tensor& w,    // [d] f32/bf16
                const Tensor& out,  // like x, f32 (may alias x)
                const RmsNormParams& p, Stream& s) {
  if (x.dtype != DType::kF32) return dtype_error("rms_norm", "x", x);
  if (out.dtype != DType::kF32) return dtype_error("rms_norm", "out", out);
  if (!is_f32_or_bf16(w.dtype)) return dtype_error("rms_norm", "w", w);
  const int64_t d = x.dim(-1);
  if (w.ndim != 1 || w.dim(0) != d || !same_shape(x, out)) return shape_error("rms_norm", "shapes do not match");
  const CpuKernels& kn = kernels();
  parallel_for(s, x.n_rows(), kRowGrain, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) rms_norm_row(kn, row_ptr<const float>(x, r), w, p, row_ptr<float>(out, r), d);
  });
  return ok_status();
}

Status add_rms_norm_matmul(const Tensor& x,      // [n, d] f32
                           const Tensor& delta,  // like x, or undefined
                           const Tensor& w,      // [d] f32/bf16
                           const Tensor& x_out,  // like x; defined with delta
                           const Tensor& h,      // like x
                           const Tensor& proj,   // [m, d] f32/bf16
                           const Tensor& bias,   // [m] or undefined
                           const Tensor& out,    // [n, m] f32
                           const RmsNormParams& p, Stream& s) {
  return add_rms_norm_matmul_in_turn(cpu_op_table(), x, delta, w, x_out, h, proj, bias, out, p, s);
}

}  // namespace ft::cpu
