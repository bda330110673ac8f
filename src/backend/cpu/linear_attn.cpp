// Linear-attention helpers: causal depthwise conv1d + SiLU with a rolling state, gated RMSNorm, sigmoid gating.
#include <algorithm>
#include <cmath>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/recurrent_meta.h"

namespace ft::cpu {
namespace {

constexpr int64_t kMaxKernel = 16;   // conv taps held in registers / on the stack
constexpr int64_t kChannelBlock = 64;

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

inline float weight_at(const Tensor& w, int64_t i) {
  return w.dtype == DType::kBF16 ? bf16_to_f32(w.ptr<const uint16_t>()[i]) : w.ptr<const float>()[i];
}

}  // namespace

Status conv1d_silu(const Tensor& x,      // [n, c] f32
                   const Tensor& w,      // [c, kernel] f32/bf16
                   const RecurrentMeta& meta,
                   const Tensor& state,  // [n_slots, kernel - 1, c] f32
                   const Tensor& out,    // [n, c] f32
                   Stream& s) {
  if (x.dtype != DType::kF32 || out.dtype != DType::kF32) return dtype_error("conv1d_silu", "x/out", x);
  if (state.dtype != DType::kF32 || !state.is_contiguous()) return dtype_error("conv1d_silu", "state", state);
  if (!is_f32_or_bf16(w.dtype) || !w.is_contiguous()) return dtype_error("conv1d_silu", "w", w);
  const int64_t c = x.dim(1), kernel = w.dim(1), hist = kernel - 1;
  if (x.ndim != 2 || !same_shape(x, out) || w.dim(0) != c || kernel < 1 || kernel > kMaxKernel ||
      state.ndim != 3 || state.dim(1) != hist || state.dim(2) != c)
    return shape_error("conv1d_silu", "shapes do not match");
  FT_RETURN_IF_ERROR(check_recurrent_meta("conv1d_silu", meta, x.dim(0), state.dim(0)));
  const int64_t n_blocks = (c + kChannelBlock - 1) / kChannelBlock;
  parallel_items(s, meta.n_seq * n_blocks, [&](int64_t item) {
    const SeqRange sq = seq_range(meta, item / n_blocks);
    const int64_t c0 = (item % n_blocks) * kChannelBlock, c1 = std::min(c, c0 + kChannelBlock);
    const int64_t len = sq.end - sq.begin;
    float* st = state.ptr<float>() + sq.slot * hist * c;  // [hist, c]
    for (int64_t ch = c0; ch < c1; ++ch) {
      float taps[kMaxKernel], window[kMaxKernel];  // window[j]: the input j steps before the newest
      for (int64_t j = 0; j < kernel; ++j) taps[j] = weight_at(w, ch * kernel + j);
      for (int64_t j = 0; j < hist; ++j) window[j] = sq.fresh ? 0.0f : st[j * c + ch];
      for (int64_t t = 0; t < len; ++t) {
        window[hist] = x.ptr<const float>()[(sq.begin + t) * x.stride[0] + ch];
        float acc = 0.0f;
        for (int64_t j = 0; j < kernel; ++j) acc += taps[j] * window[j];
        out.ptr<float>()[(sq.begin + t) * out.stride[0] + ch] = silu(acc);
        for (int64_t j = 0; j < hist; ++j) window[j] = window[j + 1];
      }
      for (int64_t j = 0; j < hist; ++j) st[j * c + ch] = window[j];
    }
  });
  return ok_status();
}

Status rms_norm_gated(const Tensor& x,    // [..., d] f32
                      const Tensor& w,    // [d] f32/bf16
                      const Tensor& z,    // like x, f32
                      const Tensor& out,  // like x, f32 (may alias x)
                      float eps, Stream& s) {
  if (x.dtype != DType::kF32 || z.dtype != DType::kF32 || out.dtype != DType::kF32)
    return dtype_error("rms_norm_gated", "x/z/out", x);
  if (!is_f32_or_bf16(w.dtype)) return dtype_error("rms_norm_gated", "w", w);
  const int64_t d = x.dim(-1);
  if (w.ndim != 1 || w.dim(0) != d || !same_shape(x, z) || !same_shape(x, out))
    return shape_error("rms_norm_gated", "shapes do not match");
  const CpuKernels& kn = kernels();
  parallel_for(s, x.n_rows(), 16, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = row_ptr<const float>(x, r);
      const float* zr = row_ptr<const float>(z, r);
      float* o = row_ptr<float>(out, r);
      const float inv = 1.0f / std::sqrt(kn.sum_squares(xr, d) / static_cast<float>(d) + eps);
      for (int64_t j = 0; j < d; ++j) o[j] = xr[j] * inv * weight_at(w, j) * silu(zr[j]);
    }
  });
  return ok_status();
}

Status sigmoid_mul(const Tensor& x,     // [..., d] f32
                   const Tensor& gate,  // [..., d] or [..., 1] f32
                   const Tensor& out,   // like x, f32 (may alias x)
                   Stream& s) {
  if (x.dtype != DType::kF32 || gate.dtype != DType::kF32 || out.dtype != DType::kF32)
    return dtype_error("sigmoid_mul", "x/gate/out", x);
  const int64_t d = x.dim(-1);
  const bool per_row = gate.dim(-1) == 1;
  if (!same_shape(x, out) || gate.n_rows() != x.n_rows() || (!per_row && gate.dim(-1) != d))
    return shape_error("sigmoid_mul", "shapes do not match");
  parallel_for(s, x.n_rows(), 16, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = row_ptr<const float>(x, r);
      const float* g = row_ptr<const float>(gate, r);
      float* o = row_ptr<float>(out, r);
      for (int64_t j = 0; j < d; ++j) o[j] = xr[j] / (1.0f + std::exp(-g[per_row ? 0 : j]));
    }
  });
  return ok_status();
}

}  // namespace ft::cpu
