// qk_norm_rope_store: each head row of q and k normalised (where the norm weights are given), then rotated, in place,
// with rms_norm's and rope's row code in one pass over the rows, then kv_store: the values of those ops one after the
// other.
#include <utility>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/norm.h"
#include "backend/cpu/rope.h"

namespace ft::cpu {

Status qk_norm_rope_store(const Tensor& q,          // [n, n_head, hd] f32, in place
                          const Tensor& k,          // [n, n_kv, hd] f32, in place
                          const Tensor& v,          // [n, n_kv, hd_v] f32
                          const Tensor& q_w,        // [hd] f32/bf16, or undefined: no norm
                          const Tensor& k_w,        // [hd] f32/bf16, defined with q_w
                          const Tensor& positions,  // [n] i32
                          const Tensor& inv_freq,   // [rot_dim / 2] f32
                          const Tensor& slots,      // [n] i32: page * page_size + row
                          const Tensor& k_cache,    // [n_pages, page_size, n_kv, hd] f32/bf16
                          const Tensor& v_cache,    // [n_pages, page_size, n_kv, hd_v] f32/bf16
                          const RmsNormParams& norm, const RopeParams& rp, Stream& s) {
  if (q.dtype != DType::kF32 || k.dtype != DType::kF32) return dtype_error("qk_norm_rope_store", "q/k", q);
  const bool normed = q_w.defined();
  if (k_w.defined() != normed)
    return shape_error("qk_norm_rope_store", "q_w and k_w must be both given or both undefined");
  if (normed && (!is_f32_or_bf16(q_w.dtype) || !is_f32_or_bf16(k_w.dtype)))
    return dtype_error("qk_norm_rope_store", "q_w/k_w", q_w);
  if (positions.dtype != DType::kI32) return dtype_error("qk_norm_rope_store", "positions", positions);
  if (inv_freq.dtype != DType::kF32) return dtype_error("qk_norm_rope_store", "inv_freq", inv_freq);
  const int64_t n = q.dim(0), hd = q.dim(-1), half = rp.rot_dim / 2;
  if (q.ndim != 3 || k.ndim != 3 || k.dim(0) != n || k.dim(2) != hd ||
      (normed && (q_w.ndim != 1 || q_w.dim(0) != hd || k_w.ndim != 1 || k_w.dim(0) != hd)))
    return shape_error("qk_norm_rope_store", "q [n, n_head, hd], k [n, n_kv, hd], q_w and k_w [hd] expected");
  if (rp.rot_dim < 0 || rp.rot_dim % 2 != 0 || rp.rot_dim > hd || half > kRopeMaxHalf)
    return shape_error("qk_norm_rope_store", "rot_dim must be even and at most head_dim (and 1024)");
  if (positions.numel() != n || inv_freq.numel() != half)
    return shape_error("qk_norm_rope_store", "positions/inv_freq size");
  const CpuKernels& kn = kernels();
  const int32_t* pos = positions.ptr<const int32_t>();
  parallel_for(s, n, 1, [&](int, int64_t t0, int64_t t1) {
    float cs[kRopeMaxHalf], sn[kRopeMaxHalf];
    for (int64_t t = t0; t < t1; ++t) {
      rope_angles(pos[t], inv_freq.ptr<const float>(), half, rp.attention_factor, cs, sn);
      for (const auto& [x, w] : {std::pair{&q, &q_w}, std::pair{&k, &k_w}})
        for (int64_t h = 0; h < x->dim(1); ++h) {
          float* row = x->ptr<float>() + t * x->stride[0] + h * x->stride[1];  // [hd]
          if (normed) rms_norm_row(kn, row, *w, norm, row, hd);
          rope_row(row, row, cs, sn, half, hd, rp.interleaved);
        }
    }
  });
  return kv_store(k, v, slots, k_cache, v_cache, s);
}

}  // namespace ft::cpu
