// gated_delta_step: the gated delta rule token by token (decode). Block = (sequence, value head, 32 state
// columns); lane = column, warp w holds state rows w, w + 8, ... of its column in registers for the whole
// sequence, read from and written back to the f32 state slot. Per token: S *= exp(g); delta = beta (v - S^T k);
// S += k delta^T; out = S^T q, the two column sums reduced across the warps in shared memory.
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gated_delta.cuh"

namespace ft::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kCols = 32;                                        // state columns per block: one per lane
constexpr int kRowsPerThread = kMaxDeltaHeadDim / kWarps;        // state rows held per thread

template <class T>
__global__ void __launch_bounds__(kThreads) gated_delta_step_kernel(DeltaArgs<T> d) {
  __shared__ float qn[kMaxDeltaHeadDim], kn[kMaxDeltaHeadDim];
  __shared__ float red_delta[kWarps][kCols], red_out[kWarps][kCols];  // per-warp column partial sums
  __shared__ float decay_sh, beta_sh;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t h = blockIdx.x % d.n_v, hk = h / (d.n_v / d.n_k);
  const SeqRange sq = seq_range(d.meta, blockIdx.x / d.n_v);
  if (!sq.valid) return;  // the whole block
  const int64_t j = blockIdx.y * int64_t{kCols} + lane;  // this thread's state column
  const bool col = j < d.dv;
  float* S = d.state + (sq.slot * d.n_v + h) * d.dk * d.dv;  // [dk, dv]
  float s_reg[kRowsPerThread];  // s_reg[r] = S[warp + kWarps r, j]
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const int64_t i = warp + kWarps * r;
    s_reg[r] = col && i < d.dk && !sq.fresh ? S[i * d.dv + j] : 0.0f;
  }
  for (int64_t t = sq.begin; t < sq.end; ++t) {
    // Every reader of qn, kn and the gates of token t - 1 has passed the last __syncthreads of its loop body.
    if (warp == 0) l2_normalise_warp(d.q + t * d.q_tok + hk * d.q_head, d.dk, d.l2_eps, d.scale, qn, lane);
    if (warp == 1) l2_normalise_warp(d.k + t * d.k_tok + hk * d.k_head, d.dk, d.l2_eps, 1.0f, kn, lane);
    if (warp == 2 && lane == 0) {
      const TokenGates gt = token_gates(d, t, h);
      decay_sh = expf(gt.g);
      beta_sh = gt.beta;
    }
    __syncthreads();
    const float decay = decay_sh, beta = beta_sh;
    float part = 0.0f;  // this warp's rows of (exp(g) S)^T k
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int64_t i = warp + kWarps * r;
      if (i < d.dk) {
        s_reg[r] *= decay;
        part += s_reg[r] * kn[i];
      }
    }
    red_delta[warp][lane] = part;
    __syncthreads();
    float mem = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mem += red_delta[w][lane];
    const float delta = col ? (to_f32(d.v[t * d.v_tok + h * d.v_head + j]) - mem) * beta : 0.0f;
    part = 0.0f;  // this warp's rows of S^T q after the update
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int64_t i = warp + kWarps * r;
      if (i < d.dk) {
        s_reg[r] += kn[i] * delta;
        part += s_reg[r] * qn[i];
      }
    }
    red_out[warp][lane] = part;
    __syncthreads();
    if (warp == 0 && col) {
      float o = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) o += red_out[w][lane];
      d.out[t * d.o_tok + h * d.o_head + j] = from_f32<T>(o);
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const int64_t i = warp + kWarps * r;
    if (col && i < d.dk) S[i * d.dv + j] = s_reg[r];
  }
}

template <class T>
Status launch(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
              const RecurrentMeta& meta, const Tensor& state, const Tensor& out, const GatedDeltaParams& p,
              Stream& s) {
  DeltaArgs<T> d{};
  FT_RETURN_IF_ERROR(delta_args("gated_delta_step", q, k, v, a, b, meta, state, out, p, d));
  if (meta.n_seq == 0) return ok_status();
  const dim3 grid(static_cast<unsigned>(meta.n_seq * d.n_v), grid_for(d.dv, kCols));
  gated_delta_step_kernel<T><<<grid, kThreads, 0, cuda_stream(s).get()>>>(d);
  return launch_status("gated_delta_step");
}

}  // namespace

Status gated_delta_step(const Tensor& q,  // [n, n_k, dk] f32/bf16
                        const Tensor& k,  // [n, n_k, dk]
                        const Tensor& v,  // [n, n_v, dv]
                        const Tensor& a,  // [n, n_v]
                        const Tensor& b,  // [n, n_v]
                        const RecurrentMeta& meta,
                        const Tensor& state,  // [n_slots, n_v, dk, dv] f32
                        const Tensor& out,    // [n, n_v, dv]
                        const GatedDeltaParams& p, Stream& s) {
  if (!is_fb(q.dtype)) return dtype_error("gated_delta_step", "q", q);
  return q.dtype == DType::kBF16 ? launch<bf16>(q, k, v, a, b, meta, state, out, p, s)
                                 : launch<float>(q, k, v, a, b, meta, state, out, p, s);
}

}  // namespace ft::cuda
