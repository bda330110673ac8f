// gated_delta_chunked: the gated delta rule over chunks of 64 tokens (prefill), the CPU kernel's UT form.
// Block = (sequence, value head, 16 state columns); the columns of the state evolve independently, so each
// block keeps its [dk, 16] slice of the f32 state in shared memory across the sequence's chunks. Per chunk, with
// cum_i the log-decay from the chunk's start through token i:
//   vnew_i = beta_i (v_i - exp(cum_i) S^T k_i) - sum_{m<i} beta_i (k_i . k_m) exp(cum_i - cum_m) vnew_m
//   out_i  = exp(cum_i) S^T q_i + sum_{m<=i} (q_i . k_m) exp(cum_i - cum_m) vnew_m
//   S      = exp(cum_last) S + sum_m exp(cum_last - cum_m) k_m vnew_m^T
// the forward substitution by 16 threads per column (a half warp). All arithmetic in fp32.
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gated_delta.cuh"

namespace ft::cuda {
namespace {

constexpr int kChunk = 64;
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kCols = 16;                       // state columns per block
constexpr int kRowGroups = kThreads / kCols;    // (row, column) work: thread = column tid % kCols, rows tid / kCols + 16 r
constexpr int kSubst = 16;                      // threads per column in the forward substitution (a half warp)
constexpr int kLdA = kChunk + 1;
static_assert(kThreads / kSubst == kCols, "one half warp per column in the forward substitution");

// Shared memory in floats: qn, kn [kChunk, dk + 1] (rows padded against bank conflicts), A [kChunk, kLdA],
// S [dk, kCols], vnew [kChunk, kCols], cum, beta, to_end [kChunk].
int64_t smem_floats(int64_t dk) { return 2 * kChunk * (dk + 1) + kChunk * kLdA + dk * kCols + kChunk * kCols + 3 * kChunk; }

__device__ __forceinline__ float dot(const float* x, const float* y, int64_t n) {
  float acc = 0.0f;
  for (int64_t e = 0; e < n; ++e) acc += x[e] * y[e];
  return acc;
}

template <class T>
__global__ void __launch_bounds__(kThreads) gated_delta_chunked_kernel(DeltaArgs<T> d) {
  extern __shared__ float smem[];
  const int64_t dk = d.dk, ldk = dk + 1;
  float* qn = smem;                    // [kChunk, ldk] l2-normalised q, times dk^-1/2
  float* kn = qn + kChunk * ldk;       // [kChunk, ldk] l2-normalised k
  float* A = kn + kChunk * ldk;        // [kChunk, kLdA] the chunk's k.k, then q.k, coefficients
  float* S = A + kChunk * kLdA;        // [dk, kCols] this block's state columns
  float* vnew = S + dk * kCols;        // [kChunk, kCols]
  float* cum = vnew + kChunk * kCols;  // [kChunk]
  float* beta = cum + kChunk;          // [kChunk]
  float* to_end = beta + kChunk;       // [kChunk] exp(cum_last - cum_m)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t h = blockIdx.x % d.n_v, hk = h / (d.n_v / d.n_k);
  const SeqRange sq = seq_range(d.meta, blockIdx.x / d.n_v);
  if (!sq.valid) return;  // the whole block
  const int jc = tid % kCols, rg = tid / kCols;
  const int64_t j = blockIdx.y * int64_t{kCols} + jc;  // this thread's state column in the (row, column) phases
  const bool col = j < d.dv;
  float* Sg = d.state + (sq.slot * d.n_v + h) * dk * d.dv;  // [dk, dv] in the slot
  for (int64_t e = rg; e < dk; e += kRowGroups) S[e * kCols + jc] = col && !sq.fresh ? Sg[e * d.dv + j] : 0.0f;
  for (int64_t t0 = sq.begin; t0 < sq.end; t0 += kChunk) {
    const int n = static_cast<int>(min(int64_t{kChunk}, sq.end - t0));
    // Tokens: q and k normalised (a warp per token), gates.
    for (int i = warp; i < n; i += kWarps) {
      const int64_t t = t0 + i;
      l2_normalise_warp(d.q + t * d.q_tok + hk * d.q_head, dk, d.l2_eps, d.scale, qn + i * ldk, lane);
      l2_normalise_warp(d.k + t * d.k_tok + hk * d.k_head, dk, d.l2_eps, 1.0f, kn + i * ldk, lane);
    }
    if (tid < n) {
      const TokenGates gt = token_gates(d, t0 + tid, h);
      cum[tid] = gt.g;
      beta[tid] = gt.beta;
    }
    __syncthreads();
    if (tid == 0) {
      float run = 0.0f;
      for (int i = 0; i < n; ++i) cum[i] = (run += cum[i]);
    }
    __syncthreads();
    // A[i, m] = beta_i (k_i . k_m) exp(cum_i - cum_m) for m < i; vnew_i = beta_i (v_i - exp(cum_i) S^T k_i).
    for (int idx = tid; idx < n * n; idx += kThreads) {
      const int i = idx / n, m = idx % n;
      if (m < i) A[i * kLdA + m] = beta[i] * dot(kn + i * ldk, kn + m * ldk, dk) * expf(cum[i] - cum[m]);
    }
    for (int i = rg; i < n; i += kRowGroups) {
      float u = 0.0f;
      for (int64_t e = 0; e < dk; ++e) u += kn[i * ldk + e] * S[e * kCols + jc];
      vnew[i * kCols + jc] =
          col ? beta[i] * (to_f32(d.v[(t0 + i) * d.v_tok + h * d.v_head + j]) - expf(cum[i]) * u) : 0.0f;
    }
    __syncthreads();
    // Forward substitution: vnew_i -= sum_{m<i} A[i, m] vnew_m, column sc by the half warp of threads sc * 16 ...
    {
      const int sc = tid / kSubst, part = tid % kSubst;
      for (int i = 1; i < n; ++i) {
        float acc = 0.0f;
        for (int m = part; m < i; m += kSubst) acc += A[i * kLdA + m] * vnew[m * kCols + sc];
#pragma unroll
        for (int o = kSubst / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (part == 0) vnew[i * kCols + sc] -= acc;
        __syncwarp();  // vnew_i is read by the whole half warp at step i + 1
      }
    }
    __syncthreads();
    // A[i, m] = (q_i . k_m) exp(cum_i - cum_m) for m <= i; to_end.
    for (int idx = tid; idx < n * n; idx += kThreads) {
      const int i = idx / n, m = idx % n;
      if (m <= i) A[i * kLdA + m] = dot(qn + i * ldk, kn + m * ldk, dk) * expf(cum[i] - cum[m]);
    }
    if (tid < n) to_end[tid] = expf(cum[n - 1] - cum[tid]);
    __syncthreads();
    // out_i = exp(cum_i) S^T q_i + sum_{m<=i} A[i, m] vnew_m, with the chunk-start S.
    for (int i = rg; i < n; i += kRowGroups) {
      float o = 0.0f;
      for (int64_t e = 0; e < dk; ++e) o += qn[i * ldk + e] * S[e * kCols + jc];
      o *= expf(cum[i]);
      for (int m = 0; m <= i; ++m) o += A[i * kLdA + m] * vnew[m * kCols + jc];
      if (col) d.out[(t0 + i) * d.o_tok + h * d.o_head + j] = from_f32<T>(o);
    }
    __syncthreads();
    // S = exp(cum_last) S + sum_m exp(cum_last - cum_m) k_m vnew_m^T; each thread its own elements.
    const float total = expf(cum[n - 1]);
    for (int64_t e = rg; e < dk; e += kRowGroups) {
      float sv = S[e * kCols + jc] * total;
      for (int m = 0; m < n; ++m) sv += kn[m * ldk + e] * to_end[m] * vnew[m * kCols + jc];
      S[e * kCols + jc] = sv;
    }
    __syncthreads();
  }
  // The same (row, column) elements this thread loaded and last updated.
  for (int64_t e = rg; e < dk; e += kRowGroups)
    if (col) Sg[e * d.dv + j] = S[e * kCols + jc];
}

template <class T>
Status launch(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a, const Tensor& b,
              const RecurrentMeta& meta, const Tensor& state, const Tensor& out, const GatedDeltaParams& p,
              Stream& s) {
  DeltaArgs<T> d{};
  FT_RETURN_IF_ERROR(delta_args("gated_delta_chunked", q, k, v, a, b, meta, state, out, p, d));
  if (meta.n_seq == 0) return ok_status();
  CudaStream& cs = cuda_stream(s);
  const size_t smem = static_cast<size_t>(smem_floats(d.dk)) * sizeof(float);
  int max_smem = 0;
  FT_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                                        cs.device().index),
                                 "gated_delta_chunked: shared memory limit"));
  if (smem > static_cast<size_t>(max_smem))
    return unsupported("cuda gated_delta_chunked: dk " + std::to_string(d.dk) + " needs " + std::to_string(smem) +
                       " bytes of shared memory, the device has " + std::to_string(max_smem));
  FT_RETURN_IF_ERROR(cuda_status(cudaFuncSetAttribute(gated_delta_chunked_kernel<T>,
                                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      static_cast<int>(smem)),
                                 "gated_delta_chunked: shared memory attribute"));
  const dim3 grid(static_cast<unsigned>(meta.n_seq * d.n_v), grid_for(d.dv, kCols));
  gated_delta_chunked_kernel<T><<<grid, kThreads, smem, cs.get()>>>(d);
  return launch_status("gated_delta_chunked");
}

}  // namespace

Status gated_delta_chunked(const Tensor& q,  // [n, n_k, dk] f32/bf16
                           const Tensor& k,  // [n, n_k, dk]
                           const Tensor& v,  // [n, n_v, dv]
                           const Tensor& a,  // [n, n_v]
                           const Tensor& b,  // [n, n_v]
                           const RecurrentMeta& meta,
                           const Tensor& state,  // [n_slots, n_v, dk, dv] f32
                           const Tensor& out,    // [n, n_v, dv]
                           const GatedDeltaParams& p, Stream& s) {
  if (!is_fb(q.dtype)) return dtype_error("gated_delta_chunked", "q", q);
  return q.dtype == DType::kBF16 ? launch<bf16>(q, k, v, a, b, meta, state, out, p, s)
                                 : launch<float>(q, k, v, a, b, meta, state, out, p, s);
}

}  // namespace ft::cuda
