// rope: rotates the first rot_dim dims of every head (rotate-half or interleaved pairs); the rest pass through.
// angle = f32(position) * inv_freq[i] as a float multiply (as transformers forms it); cos and sin of it are
// taken in double and rounded to float, which matches a float64 reference best. mla_latent_store: the ops it fuses
// in turn (composed_ops.h).
#include "backend/cpu/rope.h"

#include "backend/composed_ops.h"
#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"

namespace ft::cpu {

Status rope(const Tensor& x,          // [n, n_head, head_dim] f32
            const Tensor& positions,  // [n] i32
            const Tensor& inv_freq,   // [rot_dim / 2] f32
            const Tensor& out,        // like x, f32 (may alias x)
            const RopeParams& p, Stream& s) {
  if (x.dtype != DType::kF32) return dtype_error("rope", "x", x);
  if (out.dtype != DType::kF32) return dtype_error("rope", "out", out);
  if (positions.dtype != DType::kI32) return dtype_error("rope", "positions", positions);
  if (inv_freq.dtype != DType::kF32) return dtype_error("rope", "inv_freq", inv_freq);
  if (x.ndim != 3 || !same_shape(x, out)) return shape_error("rope", "x and out must be [n, n_head, head_dim]");
  const int64_t n = x.dim(0), n_head = x.dim(1), hd = x.dim(2), half = p.rot_dim / 2;
  if (p.rot_dim < 0 || p.rot_dim % 2 != 0 || p.rot_dim > hd || half > kRopeMaxHalf)
    return shape_error("rope", "rot_dim must be even and at most head_dim (and 1024)");
  if (positions.numel() != n || inv_freq.numel() != half) return shape_error("rope", "positions/inv_freq size");
  const int32_t* pos = positions.ptr<const int32_t>();
  parallel_for(s, n, 1, [&](int, int64_t t0, int64_t t1) {
    float cs[kRopeMaxHalf], sn[kRopeMaxHalf];
    for (int64_t t = t0; t < t1; ++t) {
      rope_angles(pos[t], inv_freq.ptr<const float>(), half, p.attention_factor, cs, sn);
      for (int64_t h = 0; h < n_head; ++h)
        rope_row(x.ptr<const float>() + t * x.stride[0] + h * x.stride[1],
                 out.ptr<float>() + t * out.stride[0] + h * out.stride[1], cs, sn, half, hd, p.interleaved);
    }
  });
  return ok_status();
}

Status mla_latent_store(const Tensor& keys, const Tensor& norm_w, const Tensor& q_rope, const Tensor& q_out,
                        const Tensor& positions, const Tensor& inv_freq, const Tensor& slots, const Tensor& k_cache,
                        const RmsNormParams& norm, const RopeParams& rope_p, Stream& s) {
  return mla_latent_store_in_turn(cpu_op_table(), keys, norm_w, q_rope, q_out, positions, inv_freq, slots, k_cache,
                                  norm, rope_p, s);
}

}  // namespace ft::cpu
