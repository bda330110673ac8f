// qk_norm_rope_store: one block per (token, head). A head of q or k is normalised as rms_norm does (norm.cuh: the
// same sums, the same rounding; without norm weights, as gpt-oss's attention, copied as it is), staged in shared
// memory rounded to the activation dtype, rotated as rope does (rope.cuh) and written back in place; a head of k is
// also written to its cache slot, a head of v only copied there, as kv_store does. The values of rms_norm, rope and
// kv_store in one launch.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/norm.cuh"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/rope.cuh"

namespace ft::cuda {
namespace {

constexpr int64_t kMaxHeadDim = 8192;  // the staged row in shared memory: at most 32 KB
constexpr int kEarlyPairs = 2;         // rotation pairs per thread whose cos and sin are formed before the wait

// The heads of one of q, k, v: head h of token t at p + t * tok + h * head.
template <class T>
struct Heads {
  T* p;
  int64_t tok, head, n;
  __device__ T* at(int64_t t, int64_t h) const { return p + t * tok + h * head; }
};

// Block (t, h): head h of token t, q's heads first, then k's, then v's. A slot out of range stores nothing. q_w and
// k_w null: no norm.
template <class T, class TW, class TC>
__global__ void __launch_bounds__(kNormMaxBlock)
    qk_norm_rope_store_kernel(Heads<T> q, Heads<T> k, Heads<const T> v, const TW* q_w, const TW* k_w,
                              const int32_t* positions, const float* inv_freq, const int32_t* slots, int64_t n_slots,
                              TC* k_cache, TC* v_cache, int64_t hd, int64_t hd_v, int64_t half, float eps,
                              bool zero_centered, bool interleaved, float factor) {
  __shared__ float red[32];
  extern __shared__ __align__(16) unsigned char staged_raw[];
  T* staged = reinterpret_cast<T*>(staged_raw);  // [hd]: the normalised row, rounded to T
  // The step's positions and slots come from the host, before the step's first kernel: read before the wait, and
  // the first rotations' cos and sin formed while the kernel before runs.
  const int64_t t = blockIdx.x, h = blockIdx.y, slot = slots[t];
  const bool store = slot >= 0 && slot < n_slots, rotates = h < q.n + k.n;
  const float pos = static_cast<float>(positions[t]);
  float early_c[kEarlyPairs] = {}, early_s[kEarlyPairs] = {};
#pragma unroll
  for (int e = 0; e < kEarlyPairs; ++e) {
    const int64_t i = threadIdx.x + int64_t{e} * blockDim.x;
    if (rotates && i < half) rope_cos_sin(pos, inv_freq[i], factor, early_c[e], early_s[e]);
  }
  pdl_wait_then_release();
  if (!rotates) {  // a value head
    if (!store) return;
    const T* src = v.at(t, h - q.n - k.n);
    TC* dst = v_cache + (slot * k.n + h - q.n - k.n) * hd_v;
    for (int64_t i = threadIdx.x; i < hd_v; i += blockDim.x) dst[i] = from_f32<TC>(to_f32(src[i]));
    return;
  }
  const bool is_q = h < q.n;
  T* x = is_q ? q.at(t, h) : k.at(t, h - q.n);
  TC* kc = !is_q && store ? k_cache + (slot * k.n + h - q.n) * hd : nullptr;  // the key's cache row
  if (q_w) {
    rms_norm_row([&](int64_t j) { return to_f32(x[j]); }, x, is_q ? q_w : k_w, staged, hd, eps,
                 zero_centered ? 1.0f : 0.0f, red);
  } else {
    for (int64_t i = threadIdx.x; i < hd; i += blockDim.x) staged[i] = x[i];
  }
  __syncthreads();  // every read of x is done, and the staged row is whole
  const int64_t step = interleaved ? 2 : 1, other = interleaved ? 1 : half;
  for (int64_t i = threadIdx.x, e = 0; i < half; i += blockDim.x, ++e) {
    const int64_t a = i * step, b = a + other;
    float c, sn, y0, y1;
    if (e < kEarlyPairs) {
#pragma unroll
      for (int u = 0; u < kEarlyPairs; ++u)  // constant indices: the early pairs stay in registers
        if (u == e) c = early_c[u], sn = early_s[u];
    } else {
      rope_cos_sin(pos, inv_freq[i], factor, c, sn);
    }
    rope_rotate(c, sn, to_f32(staged[a]), to_f32(staged[b]), y0, y1);
    const T ra = from_f32<T>(y0), rb = from_f32<T>(y1);
    x[a] = ra;
    x[b] = rb;
    if (kc) {
      kc[a] = from_f32<TC>(to_f32(ra));
      kc[b] = from_f32<TC>(to_f32(rb));
    }
  }
  for (int64_t i = 2 * half + threadIdx.x; i < hd; i += blockDim.x) {
    x[i] = staged[i];
    if (kc) kc[i] = from_f32<TC>(to_f32(staged[i]));
  }
}

}  // namespace

Status qk_norm_rope_store(const Tensor& q,          // [n, n_head, hd] f32/bf16, in place
                          const Tensor& k,          // [n, n_kv, hd] q's dtype, in place
                          const Tensor& v,          // [n, n_kv, hd_v] q's dtype
                          const Tensor& q_w,        // [hd] f32/bf16, or undefined: no norm
                          const Tensor& k_w,        // [hd] q_w's dtype, defined with q_w
                          const Tensor& positions,  // [n] i32
                          const Tensor& inv_freq,   // [rot_dim / 2] f32
                          const Tensor& slots,      // [n] i32: page * page_size + row
                          const Tensor& k_cache,    // [n_pages, page_size, n_kv, hd] contiguous f32/bf16
                          const Tensor& v_cache,    // [n_pages, page_size, n_kv, hd_v] contiguous, k_cache's dtype
                          const RmsNormParams& norm, const RopeParams& rp, Stream& s) {
  const char* op = "qk_norm_rope_store";
  FT_RETURN_IF_ERROR(device_check(op, {&q, &k, &v, &q_w, &k_w, &positions, &inv_freq, &slots, &k_cache, &v_cache}));
  if (!is_fb(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) return dtype_error(op, "q/k/v", q);
  const bool normed = q_w.defined();
  if (k_w.defined() != normed) return shape_error(op, "q_w and k_w must be both given or both undefined");
  if (normed && (!is_fb(q_w.dtype) || k_w.dtype != q_w.dtype)) return dtype_error(op, "q_w/k_w", q_w);
  if (!is_fb(k_cache.dtype) || v_cache.dtype != k_cache.dtype) return dtype_error(op, "cache", k_cache);
  if (positions.dtype != DType::kI32) return dtype_error(op, "positions", positions);
  if (slots.dtype != DType::kI32) return dtype_error(op, "slots", slots);
  if (inv_freq.dtype != DType::kF32) return dtype_error(op, "inv_freq", inv_freq);
  if (q.ndim != 3 || k.ndim != 3 || v.ndim != 3 || k_cache.ndim != 4 || v_cache.ndim != 4)
    return shape_error(op, "q, k, v [n, heads, hd] and caches [n_pages, page_size, n_kv, hd] expected");
  const int64_t n = q.dim(0), n_kv = k.dim(1), hd = q.dim(2), hd_v = v.dim(2), half = rp.rot_dim / 2;
  if (k.dim(0) != n || v.dim(0) != n || v.dim(1) != n_kv || k.dim(2) != hd ||
      (normed && (q_w.numel() != hd || k_w.numel() != hd)) || !k_cache.is_contiguous() || !v_cache.is_contiguous() ||
      k_cache.dim(2) != n_kv || k_cache.dim(3) != hd || v_cache.dim(2) != n_kv || v_cache.dim(3) != hd_v ||
      v_cache.dim(0) != k_cache.dim(0) || v_cache.dim(1) != k_cache.dim(1))
    return shape_error(op, "q " + q.shape_string() + ", k " + k.shape_string() + ", v " + v.shape_string() + ", q_w " +
                               q_w.shape_string() + ", k_w " + k_w.shape_string() + ", caches " +
                               k_cache.shape_string() + " / " + v_cache.shape_string() + " do not match");
  if (rp.rot_dim < 0 || rp.rot_dim % 2 != 0 || rp.rot_dim > hd || half > kRopeMaxHalf)
    return shape_error(op, "rot_dim must be even and at most head_dim (and 1024)");
  if (positions.numel() != n || slots.numel() != n || inv_freq.numel() != half)
    return shape_error(op, "positions/slots/inv_freq size");
  const int64_t heads = q.dim(1) + 2 * n_kv;
  if (n == 0 || heads == 0 || hd == 0) return ok_status();
  if (n > INT32_MAX || heads > 65535 || hd > kMaxHeadDim) return shape_error(op, "too large");
  const CudaStream& cs = cuda_stream(s);
  cudaError_t err = cudaSuccess;
  with_types({q.dtype, normed ? q_w.dtype : DType::kBF16, k_cache.dtype}, [&](auto tq, auto tw, auto tc) {
    using T = decltype(tq);
    using TW = decltype(tw);
    using TC = decltype(tc);
    const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(heads));
    const size_t staged_bytes = static_cast<size_t>(hd) * sizeof(T);
    err = launch_pdl(
        cs.pdl(), qk_norm_rope_store_kernel<T, TW, TC>, grid, dim3(norm_row_block(hd)), staged_bytes, cs.get(),
        Heads<T>{q.ptr<T>(), q.stride[0], q.stride[1], q.dim(1)}, Heads<T>{k.ptr<T>(), k.stride[0], k.stride[1], n_kv},
        Heads<const T>{v.ptr<const T>(), v.stride[0], v.stride[1], n_kv}, normed ? q_w.ptr<const TW>() : nullptr,
        normed ? k_w.ptr<const TW>() : nullptr, positions.ptr<const int32_t>(), inv_freq.ptr<const float>(),
        slots.ptr<const int32_t>(), k_cache.dim(0) * k_cache.dim(1), k_cache.ptr<TC>(), v_cache.ptr<TC>(), hd, hd_v,
        half, norm.eps, norm.zero_centered, rp.interleaved, rp.attention_factor);
  });
  return cuda_status(err, op);
}

}  // namespace ft::cuda
