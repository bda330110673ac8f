// mla_latent_store: multi-head latent attention's cache row and query rope in one kernel a token. The norm is
// norm.cuh's row (at rms_norm's block size for the row) and the rotation rope.cuh's, so every value is the one the
// ops it replaces give, rounded where they round: the op equals them bit for bit.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/norm.cuh"
#include "backend/cuda/rope.cuh"

namespace ft::cuda {
namespace {

struct LatentArgs {
  int64_t key_tok, q_tok, q_head, o_tok, o_head;  // element strides
  int64_t n_head, kv_lora, half, n_slots;
  bool interleaved;
  float factor, eps, offset;
};

// One block per token: each pair's cos and sin once, the latent normalised in place, the rope key rotated in place,
// the query heads' rope dims rotated into q_out, then the key row into its slot.
template <class T, class TW, class TC>
__global__ void __launch_bounds__(kNormMaxBlock)
    mla_latent_store_kernel(T* keys, const TW* norm_w, const T* q_rope, T* q_out, const int32_t* positions,
                            const float* inv_freq, const int32_t* slots, TC* k_cache, LatentArgs a) {
  __shared__ float cos_s[kRopeMaxHalf], sin_s[kRopeMaxHalf], red[32];
  const int64_t t = blockIdx.x, step = a.interleaved ? 2 : 1, other = a.interleaved ? 1 : a.half;
  const float pos = static_cast<float>(positions[t]);
  for (int64_t i = threadIdx.x; i < a.half; i += blockDim.x)
    rope_cos_sin(pos, inv_freq[i], a.factor, cos_s[i], sin_s[i]);
  T* key = keys + t * a.key_tok;
  rms_norm_row([&](int64_t j) { return to_f32(key[j]); }, key, norm_w, key, a.kv_lora, a.eps, a.offset, red);
  __syncthreads();  // cos_s and sin_s; the normed latent before the store reads it
  T* k_rope = key + a.kv_lora;
  for (int64_t w = threadIdx.x; w < (a.n_head + 1) * a.half; w += blockDim.x) {
    const int64_t h = w / a.half, i = w % a.half, x0 = i * step, x1 = x0 + other;
    const T* in = h < a.n_head ? q_rope + t * a.q_tok + h * a.q_head : k_rope;
    T* out = h < a.n_head ? q_out + t * a.o_tok + h * a.o_head : k_rope;
    float y0, y1;
    rope_rotate(cos_s[i], sin_s[i], to_f32(in[x0]), to_f32(in[x1]), y0, y1);
    out[x0] = from_f32<T>(y0);
    out[x1] = from_f32<T>(y1);
  }
  __syncthreads();
  const int64_t slot = slots[t], width = a.kv_lora + 2 * a.half;
  if (slot < 0 || slot >= a.n_slots) return;
  TC* kc = k_cache + slot * width;
  for (int64_t e = threadIdx.x; e < width; e += blockDim.x) kc[e] = from_f32<TC>(to_f32(key[e]));
}

}  // namespace

Status mla_latent_store(const Tensor& keys,       // [n, 1, kv_lora + rot_dim] f32/bf16, normed and rotated in place
                        const Tensor& norm_w,     // [kv_lora] f32/bf16
                        const Tensor& q_rope,     // [n, H, rot_dim] keys' dtype
                        const Tensor& q_out,      // [n, H, rot_dim] keys' dtype
                        const Tensor& positions,  // [n] i32
                        const Tensor& inv_freq,   // [rot_dim / 2] f32
                        const Tensor& slots,      // [n] i32
                        const Tensor& k_cache,    // [n_pages, page_size, 1, kv_lora + rot_dim] contiguous
                        const RmsNormParams& norm, const RopeParams& rope, Stream& s) {
  FT_RETURN_IF_ERROR(
      device_check("mla_latent_store", {&keys, &norm_w, &q_rope, &q_out, &positions, &inv_freq, &slots, &k_cache}));
  if (!is_fb(keys.dtype) || q_rope.dtype != keys.dtype || q_out.dtype != keys.dtype || !is_fb(norm_w.dtype))
    return dtype_error("mla_latent_store", "keys/q_rope/q_out/norm_w", keys);
  if (!is_fb(k_cache.dtype)) return dtype_error("mla_latent_store", "cache", k_cache);
  if (positions.dtype != DType::kI32 || slots.dtype != DType::kI32 || inv_freq.dtype != DType::kF32)
    return dtype_error("mla_latent_store", "positions/slots/inv_freq", positions);
  const int64_t n = keys.dim(0), rot = rope.rot_dim, half = rot / 2, kv_lora = norm_w.numel();
  if (keys.ndim != 3 || q_rope.ndim != 3 || q_out.ndim != 3 || k_cache.ndim != 4 || keys.dim(1) != 1 || rot <= 0 ||
      rot % 2 != 0 || half > kRopeMaxHalf || kv_lora <= 0 || keys.dim(2) != kv_lora + rot || q_rope.dim(0) != n ||
      q_rope.dim(2) != rot || q_out.dim(0) != n || q_out.dim(1) != q_rope.dim(1) || q_out.dim(2) != rot ||
      positions.numel() != n || slots.numel() != n || inv_freq.numel() != half || !k_cache.is_contiguous() ||
      k_cache.dim(2) != 1 || k_cache.dim(3) != kv_lora + rot)
    return shape_error("mla_latent_store", "keys, norm_w, q_rope, q_out, rot_dim and the cache do not match");
  if (n == 0) return ok_status();
  const LatentArgs a{keys.stride[0],
                     q_rope.stride[0],
                     q_rope.stride[1],
                     q_out.stride[0],
                     q_out.stride[1],
                     q_rope.dim(1),
                     kv_lora,
                     half,
                     k_cache.dim(0) * k_cache.dim(1),
                     rope.interleaved,
                     rope.attention_factor,
                     norm.eps,
                     norm.zero_centered ? 1.0f : 0.0f};
  with_types({keys.dtype, norm_w.dtype, k_cache.dtype}, [&](auto tk, auto tw, auto tc) {
    using T = decltype(tk);
    using TW = decltype(tw);
    using TC = decltype(tc);
    mla_latent_store_kernel<T, TW, TC><<<static_cast<unsigned>(n), norm_row_block(kv_lora), 0, cuda_stream(s).get()>>>(
        keys.ptr<T>(), norm_w.ptr<const TW>(), q_rope.ptr<const T>(), q_out.ptr<T>(), positions.ptr<const int32_t>(),
        inv_freq.ptr<const float>(), slots.ptr<const int32_t>(), k_cache.ptr<TC>(), a);
  });
  return launch_status("mla_latent_store");
}

}  // namespace ft::cuda
