// mla_rope_store: multi-head latent attention's rope and cache store in one kernel. The rotation is rope.cuh's, so
// every rotated value is the one the rope op gives; the keys and values reach the cache rounded as kv_store rounds
// them, so the op equals the ops it replaces bit for bit.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/rope.cuh"

namespace ft::cuda {
namespace {

struct MlaArgs {
  int64_t q_tok, q_head, kr_tok, kn_tok, kn_head, v_tok, v_head;  // element strides
  int64_t n_head, nope, half, hd_v, n_slots;
  bool interleaved;
  float factor;
};

// The pair of rotated dim j of a rot_dim-wide rope row: its two dims and its frequency index.
__device__ __forceinline__ void rope_pair_of(int64_t j, int64_t half, bool interleaved, int64_t& a, int64_t& b,
                                             int64_t& i) {
  i = interleaved ? j / 2 : j % half;
  a = interleaved ? 2 * i : i;
  b = interleaved ? a + 1 : i + half;
}

// One block per token: each pair's cos and sin once (rope_cos_sin, as the rope op takes them), the query heads' rope
// dims rotated in place, then every head's key and value into the slot.
template <class T, class TC>
__global__ void mla_rope_store_kernel(T* q, const T* k_rope, const T* k_nope, const T* v, const int32_t* positions,
                                      const float* inv_freq, const int32_t* slots, TC* k_cache, TC* v_cache,
                                      MlaArgs a) {
  __shared__ float cos_s[kRopeMaxHalf], sin_s[kRopeMaxHalf];
  const int64_t t = blockIdx.x, rot = 2 * a.half, hd_k = a.nope + rot;
  const float pos = static_cast<float>(positions[t]);
  for (int64_t i = threadIdx.x; i < a.half; i += blockDim.x)
    rope_cos_sin(pos, inv_freq[i], a.factor, cos_s[i], sin_s[i]);
  __syncthreads();
  for (int64_t w = threadIdx.x; w < a.n_head * a.half; w += blockDim.x) {
    const int64_t h = w / a.half, j = w % a.half;
    int64_t x0, x1, i;
    rope_pair_of(a.interleaved ? 2 * j : j, a.half, a.interleaved, x0, x1, i);
    T* row = q + t * a.q_tok + h * a.q_head + a.nope;
    float y0, y1;
    rope_rotate(cos_s[i], sin_s[i], to_f32(row[x0]), to_f32(row[x1]), y0, y1);
    row[x0] = from_f32<T>(y0);
    row[x1] = from_f32<T>(y1);
  }
  const int64_t slot = slots[t];
  if (slot < 0 || slot >= a.n_slots) return;
  TC* kc = k_cache + slot * a.n_head * hd_k;
  TC* vc = v_cache + slot * a.n_head * a.hd_v;
  const T* kr = k_rope + t * a.kr_tok;
  for (int64_t e = threadIdx.x; e < a.n_head * hd_k; e += blockDim.x) {
    const int64_t h = e / hd_k, c = e % hd_k;
    if (c < a.nope) {
      kc[e] = from_f32<TC>(to_f32(k_nope[t * a.kn_tok + h * a.kn_head + c]));
      continue;
    }
    int64_t x0, x1, i;
    rope_pair_of(c - a.nope, a.half, a.interleaved, x0, x1, i);
    float y0, y1;
    rope_rotate(cos_s[i], sin_s[i], to_f32(kr[x0]), to_f32(kr[x1]), y0, y1);
    // The rope op rounds the rotated key to k_rope's dtype before kv_store converts it to the cache's.
    kc[e] = from_f32<TC>(to_f32(from_f32<T>(c - a.nope == x0 ? y0 : y1)));
  }
  for (int64_t e = threadIdx.x; e < a.n_head * a.hd_v; e += blockDim.x)
    vc[e] = from_f32<TC>(to_f32(v[t * a.v_tok + e / a.hd_v * a.v_head + e % a.hd_v]));
}

}  // namespace

Status mla_rope_store(const Tensor& q,          // [n, H, nope + rot_dim] f32/bf16, rotated in place
                      const Tensor& k_rope,     // [n, 1, rot_dim] q's dtype
                      const Tensor& k_nope,     // [n, H, nope] q's dtype
                      const Tensor& v,          // [n, H, hd_v] q's dtype
                      const Tensor& positions,  // [n] i32
                      const Tensor& inv_freq,   // [rot_dim / 2] f32
                      const Tensor& slots,      // [n] i32
                      const Tensor& k_cache,    // [n_pages, page_size, H, nope + rot_dim] contiguous
                      const Tensor& v_cache,    // [n_pages, page_size, H, hd_v] contiguous, k_cache's dtype
                      const RopeParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(
      device_check("mla_rope_store", {&q, &k_rope, &k_nope, &v, &positions, &inv_freq, &slots, &k_cache, &v_cache}));
  if (!is_fb(q.dtype) || k_rope.dtype != q.dtype || k_nope.dtype != q.dtype || v.dtype != q.dtype)
    return dtype_error("mla_rope_store", "q/k_rope/k_nope/v", q);
  if (!is_fb(k_cache.dtype) || v_cache.dtype != k_cache.dtype) return dtype_error("mla_rope_store", "cache", k_cache);
  if (positions.dtype != DType::kI32 || slots.dtype != DType::kI32 || inv_freq.dtype != DType::kF32)
    return dtype_error("mla_rope_store", "positions/slots/inv_freq", positions);
  const int64_t n = q.dim(0), rot = p.rot_dim, half = rot / 2;
  if (q.ndim != 3 || k_rope.ndim != 3 || k_nope.ndim != 3 || v.ndim != 3 || k_cache.ndim != 4 || v_cache.ndim != 4)
    return shape_error("mla_rope_store", "q, k_rope, k_nope, v [n, heads, dims] and 4-d caches expected");
  const int64_t heads = q.dim(1), nope = k_nope.dim(2), hd_v = v.dim(2);
  if (rot <= 0 || rot % 2 != 0 || half > kRopeMaxHalf || q.dim(2) != nope + rot || k_rope.dim(1) != 1 ||
      k_rope.dim(2) != rot || k_nope.dim(1) != heads || v.dim(1) != heads || k_rope.dim(0) != n || k_nope.dim(0) != n ||
      v.dim(0) != n || positions.numel() != n || slots.numel() != n || inv_freq.numel() != half ||
      !k_cache.is_contiguous() || !v_cache.is_contiguous() || k_cache.dim(2) != heads || k_cache.dim(3) != nope + rot ||
      v_cache.dim(2) != heads || v_cache.dim(3) != hd_v || v_cache.dim(0) != k_cache.dim(0) ||
      v_cache.dim(1) != k_cache.dim(1))
    return shape_error("mla_rope_store", "q, k_rope, k_nope, v, rot_dim and caches do not match");
  if (n == 0) return ok_status();
  const MlaArgs a{q.stride[0],
                  q.stride[1],
                  k_rope.stride[0],
                  k_nope.stride[0],
                  k_nope.stride[1],
                  v.stride[0],
                  v.stride[1],
                  heads,
                  nope,
                  half,
                  hd_v,
                  k_cache.dim(0) * k_cache.dim(1),
                  p.interleaved,
                  p.attention_factor};
  with_types({q.dtype, k_cache.dtype}, [&](auto tq, auto tc) {
    using T = decltype(tq);
    using TC = decltype(tc);
    mla_rope_store_kernel<T, TC><<<static_cast<unsigned>(n), 256, 0, cuda_stream(s).get()>>>(
        q.ptr<T>(), k_rope.ptr<const T>(), k_nope.ptr<const T>(), v.ptr<const T>(), positions.ptr<const int32_t>(),
        inv_freq.ptr<const float>(), slots.ptr<const int32_t>(), k_cache.ptr<TC>(), v_cache.ptr<TC>(), a);
  });
  return launch_status("mla_rope_store");
}

}  // namespace ft::cuda
