// rms_norm: out = x / sqrt(mean(x^2) + eps) * w (or * (1 + w), formed in fp32), one row per task.
#include <cmath>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"

namespace ft::cpu {

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
  const int64_t n = x.n_rows();
  parallel_for(s, n, 16, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = row_ptr<const float>(x, r);
      float* o = row_ptr<float>(out, r);
      const float mean = kn.sum_squares(xr, d) / static_cast<float>(d);
      const float inv = 1.0f / std::sqrt(mean + p.eps);
      if (w.dtype == DType::kBF16)
        kn.scale_mul_bf16(xr, inv, w.ptr<const uint16_t>(), p.zero_centered, o, d);
      else
        kn.scale_mul_f32(xr, inv, w.ptr<const float>(), p.zero_centered, o, d);
    }
  });
  return ok_status();
}

}  // namespace ft::cpu
