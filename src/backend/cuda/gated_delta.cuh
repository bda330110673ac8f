// What the gated delta rule kernels share: their arguments, the per-token gates formed in fp32 as transformers
// forms them, and the host checks that fill the arguments.
#pragma once

#include "backend/cuda/common.cuh"
#include "backend/cuda/recurrent_meta.cuh"

namespace ft::cuda {

inline constexpr int64_t kMaxDeltaHeadDim = 256;  // dk and dv limit

template <class T>
struct DeltaArgs {
  const T* q;  // [n, n_k, dk], row stride q_tok, head stride q_head (k alike)
  const T* k;
  const T* v;  // [n, n_v, dv]
  const T* a;  // [n, n_v], row stride ab_tok (b alike)
  const T* b;
  T* out;      // [n, n_v, dv]
  int64_t q_tok, q_head, k_tok, k_head, v_tok, v_head, a_tok, b_tok, o_tok, o_head;
  const void* a_log;    // [n_v] f32/bf16
  const void* dt_bias;  // [n_v] f32/bf16
  bool a_log_bf16, dt_bias_bf16;
  DeviceMeta meta;
  float* state;  // [n_slots, n_v, dk, dv]
  int64_t n_k, n_v, dk, dv;
  float l2_eps, scale;  // scale = dk^-1/2, applied to q
};

__device__ __forceinline__ float param_at(const void* p, bool bf16_values, int64_t i) {
  return bf16_values ? __bfloat162float(static_cast<const bf16*>(p)[i]) : static_cast<const float*>(p)[i];
}

struct TokenGates {
  float g, beta;  // log-decay g = -exp(a_log) softplus(a + dt_bias) and beta = sigmoid(b)
};

template <class T>
__device__ __forceinline__ TokenGates token_gates(const DeltaArgs<T>& d, int64_t t, int64_t h) {
  const float x = to_f32(d.a[t * d.a_tok + h]) + param_at(d.dt_bias, d.dt_bias_bf16, h);
  const float softplus = x > 20.0f ? x : log1pf(expf(x));  // torch's threshold 20
  const float bt = to_f32(d.b[t * d.b_tok + h]);
  return {-expf(param_at(d.a_log, d.a_log_bf16, h)) * softplus, 1.0f / (1.0f + expf(-bt))};
}

// dst[0, n) = src / sqrt(sum(src^2) + eps) * scale, by one warp (lane = this thread's lane).
template <class T>
__device__ __forceinline__ void l2_normalise_warp(const T* src, int64_t n, float eps, float scale, float* dst,
                                                  int lane) {
  float ss = 0.0f;
  for (int64_t e = lane; e < n; e += 32) {
    const float x = to_f32(src[e]);
    ss += x * x;
  }
  const float inv = scale / sqrtf(warp_sum(ss) + eps);
  for (int64_t e = lane; e < n; e += 32) dst[e] = to_f32(src[e]) * inv;
}

// Checks dtypes, shapes and meta (q, k, v, a, b and out share one activation dtype) and fills the arguments.
template <class T>
Status delta_args(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a,
                  const Tensor& b, const RecurrentMeta& meta, const Tensor& state, const Tensor& out,
                  const GatedDeltaParams& p, DeltaArgs<T>& d) {
  FT_RETURN_IF_ERROR(device_check(op, {&q, &k, &v, &a, &b, &state, &out, &p.a_log, &p.dt_bias}));
  for (const Tensor* t : {&q, &k, &v, &a, &b, &out})
    if (t->dtype != q.dtype) return dtype_error(op, "activation", *t);
  if (state.dtype != DType::kF32 || !state.is_contiguous()) return dtype_error(op, "state", state);
  if (!is_fb(p.a_log.dtype) || !is_fb(p.dt_bias.dtype) || !p.a_log.is_contiguous() || !p.dt_bias.is_contiguous())
    return dtype_error(op, "a_log/dt_bias", p.a_log);
  if (q.ndim != 3 || !same_shape(q, k) || v.ndim != 3 || !same_shape(v, out) || a.ndim != 2 || !same_shape(a, b) ||
      state.ndim != 4)
    return shape_error(op, "q, k, v, a, b, state and out must be [n, n_k, dk] x2, [n, n_v, dv], [n, n_v] x2, "
                           "[slots, n_v, dk, dv], [n, n_v, dv]");
  const int64_t n = q.dim(0), n_k = q.dim(1), dk = q.dim(2), n_v = v.dim(1), dv = v.dim(2);
  if (v.dim(0) != n || a.dim(0) != n || a.dim(1) != n_v || n_k <= 0 || n_v % n_k != 0 || p.a_log.numel() != n_v ||
      p.dt_bias.numel() != n_v || state.dim(1) != n_v || state.dim(2) != dk || state.dim(3) != dv || dk < 1 ||
      dv < 1 || dk > kMaxDeltaHeadDim || dv > kMaxDeltaHeadDim)
    return shape_error(op, "q " + q.shape_string() + ", v " + v.shape_string() + ", a " + a.shape_string() +
                               ", state " + state.shape_string() + " do not match");
  d = DeltaArgs<T>{q.ptr<const T>(), k.ptr<const T>(), v.ptr<const T>(), a.ptr<const T>(), b.ptr<const T>(),
                   out.ptr<T>(), q.stride[0], q.stride[1], k.stride[0], k.stride[1], v.stride[0], v.stride[1],
                   a.stride[0], b.stride[0], out.stride[0], out.stride[1], p.a_log.data(), p.dt_bias.data(),
                   p.a_log.dtype == DType::kBF16, p.dt_bias.dtype == DType::kBF16, DeviceMeta{}, state.ptr<float>(),
                   n_k, n_v, dk, dv, p.l2_eps, 1.0f / sqrtf(static_cast<float>(dk))};
  FT_RETURN_IF_ERROR(check_meta(op, meta, n, state.dim(0), d.meta));
  if (meta.n_seq * n_v > INT32_MAX) return shape_error(op, "too many (sequence, head) pairs");
  return ok_status();
}

}  // namespace ft::cuda
