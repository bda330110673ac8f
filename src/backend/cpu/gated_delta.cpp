// The gated delta rule on the CPU: chunked prefill (chunks of 64, UT transform by forward substitution) and the
// token-by-token step, one task per (sequence, value head), state and chunk arithmetic in fp32.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/recurrent_meta.h"

namespace ft::cpu {
namespace {

constexpr int64_t kChunk = 64;
constexpr int64_t kMaxHeadDim = 256;  // dk and dv limit of the per-task arrays on the stack

inline float param_at(const Tensor& t, int64_t i) {
  return t.dtype == DType::kBF16 ? bf16_to_f32(t.ptr<const uint16_t>()[i]) : t.ptr<const float>()[i];
}

struct Shapes {
  int64_t n_k, dk, n_v, dv;
};

Status check(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
             const RecurrentMeta& meta, const Tensor& state, const Tensor& out, const GatedDeltaParams& p,
             Shapes& sh) {
  for (const Tensor* t : {&q, &k, &v, &a, &b, &out})
    if (t->dtype != DType::kF32) return dtype_error(op, "activation", *t);
  if (state.dtype != DType::kF32 || !state.is_contiguous()) return dtype_error(op, "state", state);
  if (!is_f32_or_bf16(p.a_log.dtype) || !is_f32_or_bf16(p.dt_bias.dtype)) return dtype_error(op, "a_log", p.a_log);
  sh = {q.dim(1), q.dim(2), v.dim(1), v.dim(2)};
  if (q.ndim != 3 || !same_shape(q, k) || v.ndim != 3 || !same_shape(v, out) || v.dim(0) != q.dim(0) ||
      sh.n_k <= 0 || sh.n_v % sh.n_k != 0 || a.dim(0) != q.dim(0) || a.dim(1) != sh.n_v || !same_shape(a, b) ||
      p.a_log.numel() != sh.n_v || p.dt_bias.numel() != sh.n_v || state.ndim != 4 || state.dim(1) != sh.n_v ||
      state.dim(2) != sh.dk || state.dim(3) != sh.dv || sh.dk > kMaxHeadDim || sh.dv > kMaxHeadDim)
    return shape_error(op, "shapes do not match");
  return check_recurrent_meta(op, meta, q.dim(0), state.dim(0));
}

// One token's log-decay g and beta, formed in fp32 as transformers forms them.
struct TokenGates {
  float g, beta;
};

inline TokenGates gates(const Tensor& a, const Tensor& b, const GatedDeltaParams& p, int64_t t, int64_t h) {
  const float x = a.ptr<const float>()[t * a.stride[0] + h] + param_at(p.dt_bias, h);
  const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
  const float bt = b.ptr<const float>()[t * b.stride[0] + h];
  return {-std::exp(param_at(p.a_log, h)) * softplus, 1.0f / (1.0f + std::exp(-bt))};
}

// dst = src / sqrt(sum(src^2) + eps) * scale.
inline void l2_normalise(const float* src, int64_t n, float eps, float scale, float* dst) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += src[i] * src[i];
  const float inv = scale / std::sqrt(ss + eps);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * inv;
}

inline const float* head_row(const Tensor& t, int64_t row, int64_t head) {
  return t.ptr<const float>() + row * t.stride[0] + head * t.stride[1];
}

// The task of (sequence, value head): its state matrix [dk, dv], zeroed for a fresh sequence.
template <class F>
void for_each_task(Stream& s, const RecurrentMeta& meta, const Tensor& state, const Shapes& sh, F&& body) {
  parallel_items(s, meta.n_seq * sh.n_v, [&](int64_t item) {
    const SeqRange sq = seq_range(meta, item / sh.n_v);
    const int64_t h = item % sh.n_v;
    float* S = state.ptr<float>() + (sq.slot * sh.n_v + h) * sh.dk * sh.dv;
    if (sq.fresh) std::memset(S, 0, static_cast<size_t>(sh.dk * sh.dv) * sizeof(float));
    body(sq, h, h / (sh.n_v / sh.n_k), S);
  });
}

}  // namespace

Status gated_delta_step(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
                        const RecurrentMeta& meta, const Tensor& state, const Tensor& out,
                        const GatedDeltaParams& p, Stream& s) {
  Shapes sh{};
  FT_RETURN_IF_ERROR(check("gated_delta_step", q, k, v, a, b, meta, state, out, p, sh));
  const float scale = 1.0f / std::sqrt(static_cast<float>(sh.dk));
  for_each_task(s, meta, state, sh, [&](const SeqRange& sq, int64_t h, int64_t hk, float* S) {
    const int64_t dk = sh.dk, dv = sh.dv;
    float qn[kMaxHeadDim], kn[kMaxHeadDim], delta[kMaxHeadDim];
    for (int64_t t = sq.begin; t < sq.end; ++t) {
      l2_normalise(head_row(q, t, hk), dk, p.l2_eps, scale, qn);
      l2_normalise(head_row(k, t, hk), dk, p.l2_eps, 1.0f, kn);
      const TokenGates gt = gates(a, b, p, t, h);
      const float decay = std::exp(gt.g);
      const float* vt = head_row(v, t, h);
      for (int64_t j = 0; j < dv; ++j) delta[j] = 0.0f;
      for (int64_t i = 0; i < dk; ++i) {  // delta = S^T k after the decay
        float* Si = S + i * dv;
        for (int64_t j = 0; j < dv; ++j) {
          Si[j] *= decay;
          delta[j] += Si[j] * kn[i];
        }
      }
      for (int64_t j = 0; j < dv; ++j) delta[j] = (vt[j] - delta[j]) * gt.beta;
      float* o = out.ptr<float>() + t * out.stride[0] + h * out.stride[1];
      for (int64_t j = 0; j < dv; ++j) o[j] = 0.0f;
      for (int64_t i = 0; i < dk; ++i) {
        float* Si = S + i * dv;
        for (int64_t j = 0; j < dv; ++j) {
          Si[j] += kn[i] * delta[j];
          o[j] += Si[j] * qn[i];
        }
      }
    }
  });
  return ok_status();
}

Status gated_delta_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
                           const RecurrentMeta& meta, const Tensor& state, const Tensor& out,
                           const GatedDeltaParams& p, Stream& s) {
  Shapes sh{};
  FT_RETURN_IF_ERROR(check("gated_delta_chunked", q, k, v, a, b, meta, state, out, p, sh));
  const float scale = 1.0f / std::sqrt(static_cast<float>(sh.dk));
  for_each_task(s, meta, state, sh, [&](const SeqRange& sq, int64_t h, int64_t hk, float* S) {
    const int64_t dk = sh.dk, dv = sh.dv;
    float qn[kChunk][kMaxHeadDim], kn[kChunk][kMaxHeadDim], vnew[kChunk][kMaxHeadDim];
    float cum[kChunk], beta[kChunk], to_end[kChunk];
    for (int64_t t0 = sq.begin; t0 < sq.end; t0 += kChunk) {
      const int64_t n = std::min(kChunk, sq.end - t0);
      float run = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        l2_normalise(head_row(q, t0 + i, hk), dk, p.l2_eps, scale, qn[i]);
        l2_normalise(head_row(k, t0 + i, hk), dk, p.l2_eps, 1.0f, kn[i]);
        const TokenGates gt = gates(a, b, p, t0 + i, h);
        cum[i] = (run += gt.g);  // log of the decay from the chunk's start through token i
        beta[i] = gt.beta;
      }
      // vnew_i = beta_i (v_i - exp(cum_i) S^T k_i) - sum_{m<i} beta_i (k_i . k_m) exp(cum_i - cum_m) vnew_m:
      // the UT system (I + L) vnew = diag(beta) (V - diag(exp(cum)) K S), solved by forward substitution.
      for (int64_t i = 0; i < n; ++i) {
        float* vi = vnew[i];
        for (int64_t j = 0; j < dv; ++j) vi[j] = 0.0f;
        for (int64_t d = 0; d < dk; ++d) {
          const float kd = kn[i][d];
          const float* Sd = S + d * dv;
          for (int64_t j = 0; j < dv; ++j) vi[j] += kd * Sd[j];
        }
        const float e = std::exp(cum[i]);
        const float* vt = head_row(v, t0 + i, h);
        for (int64_t j = 0; j < dv; ++j) vi[j] = beta[i] * (vt[j] - e * vi[j]);
        for (int64_t m = 0; m < i; ++m) {
          float dot = 0.0f;
          for (int64_t d = 0; d < dk; ++d) dot += kn[i][d] * kn[m][d];
          const float c = beta[i] * dot * std::exp(cum[i] - cum[m]);
          for (int64_t j = 0; j < dv; ++j) vi[j] -= c * vnew[m][j];
        }
      }
      // out_i = exp(cum_i) S^T q_i + sum_{m<=i} (q_i . k_m) exp(cum_i - cum_m) vnew_m, with the chunk-start S.
      for (int64_t i = 0; i < n; ++i) {
        float* o = out.ptr<float>() + (t0 + i) * out.stride[0] + h * out.stride[1];
        for (int64_t j = 0; j < dv; ++j) o[j] = 0.0f;
        for (int64_t d = 0; d < dk; ++d) {
          const float qd = qn[i][d];
          const float* Sd = S + d * dv;
          for (int64_t j = 0; j < dv; ++j) o[j] += qd * Sd[j];
        }
        const float e = std::exp(cum[i]);
        for (int64_t j = 0; j < dv; ++j) o[j] *= e;
        for (int64_t m = 0; m <= i; ++m) {
          float dot = 0.0f;
          for (int64_t d = 0; d < dk; ++d) dot += qn[i][d] * kn[m][d];
          const float c = dot * std::exp(cum[i] - cum[m]);
          for (int64_t j = 0; j < dv; ++j) o[j] += c * vnew[m][j];
        }
      }
      // S = exp(cum_last) S + sum_m exp(cum_last - cum_m) k_m vnew_m^T.
      const float total = std::exp(cum[n - 1]);
      for (int64_t m = 0; m < n; ++m) to_end[m] = std::exp(cum[n - 1] - cum[m]);
      for (int64_t d = 0; d < dk; ++d) {
        float* Sd = S + d * dv;
        for (int64_t j = 0; j < dv; ++j) Sd[j] *= total;
        for (int64_t m = 0; m < n; ++m) {
          const float c = kn[m][d] * to_end[m];
          for (int64_t j = 0; j < dv; ++j) Sd[j] += c * vnew[m][j];
        }
      }
    }
  });
  return ok_status();
}

}  // namespace ft::cpu
