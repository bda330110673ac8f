// Reference rotary position embedding (rotate-half and interleaved, partial rotary), and attention's inputs: the q/k
// norm, rope and the KV store one after the other; multi-head latent attention's cache row and query rope
// (composed_ops.h).
#include <cmath>

#include "backend/composed_ops.h"
#include "backend/ref/ref_access.h"
#include "backend/ref/ref_ops.h"

namespace ft::ref {

Status rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq, const Tensor& out,
            const RopeParams& p, Stream&) {
  const int64_t n = x.dim(0), heads = x.dim(1), hd = x.dim(2), half = p.rot_dim / 2;
  if (p.rot_dim % 2 || p.rot_dim > hd || inv_freq.numel() < half || !same_shape(x, out))
    return invalid_argument("rope: rot_dim " + std::to_string(p.rot_dim) + " for " + x.shape_string());
  for (int64_t t = 0; t < n; ++t) {
    const float pos = static_cast<float>(get_int(positions, t));
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < half; ++i) {
        // The angle is a float32 product, as transformers forms it.
        const float angle = pos * static_cast<float>(get(inv_freq, i));
        const double c = std::cos(static_cast<double>(angle)) * p.attention_factor;
        const double s = std::sin(static_cast<double>(angle)) * p.attention_factor;
        const int64_t i1 = p.interleaved ? 2 * i : i;
        const int64_t i2 = p.interleaved ? 2 * i + 1 : i + half;
        const double x1 = get(x, t, h, i1), x2 = get(x, t, h, i2);
        set(out, x1 * c - x2 * s, t, h, i1);
        set(out, x2 * c + x1 * s, t, h, i2);
      }
      if (x.data() != out.data() || x.stride != out.stride)
        for (int64_t i = p.rot_dim; i < hd; ++i) set(out, get(x, t, h, i), t, h, i);
    }
  }
  return ok_status();
}

Status qk_norm_rope_store(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_w, const Tensor& k_w,
                          const Tensor& positions, const Tensor& inv_freq, const Tensor& slots, const Tensor& k_cache,
                          const Tensor& v_cache, const RmsNormParams& norm, const RopeParams& rope_p, Stream& s) {
  // Each norm's output is rounded to the tensor's dtype before the rotation reads it.
  if (q_w.defined() != k_w.defined())
    return invalid_argument("qk_norm_rope_store: q_w and k_w must be both given or both undefined");
  if (q_w.defined()) {
    FT_RETURN_IF_ERROR(rms_norm(q, q_w, q, norm, s));
    FT_RETURN_IF_ERROR(rms_norm(k, k_w, k, norm, s));
  }
  FT_RETURN_IF_ERROR(rope(q, positions, inv_freq, q, rope_p, s));
  FT_RETURN_IF_ERROR(rope(k, positions, inv_freq, k, rope_p, s));
  return kv_store(k, v, slots, k_cache, v_cache, s);
}

Status mla_latent_store(const Tensor& keys, const Tensor& norm_w, const Tensor& q_rope, const Tensor& q_out,
                        const Tensor& positions, const Tensor& inv_freq, const Tensor& slots, const Tensor& k_cache,
                        const RmsNormParams& norm, const RopeParams& rope_p, Stream& s) {
  return mla_latent_store_in_turn(ref_op_table(), keys, norm_w, q_rope, q_out, positions, inv_freq, slots, k_cache,
                                  norm, rope_p, s);
}

}  // namespace ft::ref
