// add_rms_norm_matmul: the residual update, the norm and the projection that reads it. Decode batches of 1..4 rows
// with bf16 weights run as one GEMV (gemv.cuh) whose every block forms the normed rows itself in shared memory
// once the kernel before has ended (block 0 also stores the updated residual and the normed rows), so that no
// norm kernel sits between the layer's last GEMV and its next one; the weights' first chunks are on their way
// before that. Everything else runs add, rms_norm and matmul in turn.
#include <string>

#include "backend/composed_ops.h"
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/gemv.cuh"

namespace ft::cuda {
namespace {

constexpr size_t kMaxNormedBytes = 32 << 10;  // shared memory for the normed rows (48 KB without an opt-in)
// Every block forms the normed rows again: past this many bytes of projection weights (the blocks of a long,
// bandwidth-bound GEMV such as an lm_head), the norm kernel it saves costs less than those re-reads, except for one
// row (H200, Qwen3-30B-A3B's lm_head: one row 9.6 us faster fused, four rows 120 us slower; docs/perf.md).
constexpr int64_t kMaxFusedProjBytes = int64_t{64} << 20;

struct NormArgs {
  const void* x;  // [N, d] TX
  int64_t ldx;
  const void* delta;  // [N, d] TX, or null: no residual update
  int64_t ldd;
  void* x_out;  // [N, d] TX: x + delta (with delta)
  int64_t ldxo;
  void* h;  // [N, d] TX: the normed rows
  int64_t ldh;
  const void* w;  // [d] bf16 (w_bf16) or f32
  bool w_bf16;
  float eps, offset;
};

// Elements 8 c .. 8 c + 7 of the norm weight.
__device__ __forceinline__ void norm_weight_chunk(const NormArgs& na, int c, float (&wv)[8]) {
  if (na.w_bf16) load8(static_cast<const bf16*>(na.w) + c * 8, wv);
  else load8(static_cast<const float*>(na.w) + c * 8, wv);
}

// The N normed rows of d = a.k elements into hs [N, d] (shared memory), as add then rms_norm form them: v = x +
// delta rounded to TX, then h = v / sqrt(mean(v^2) + eps) * (w + offset) rounded to TX; fp32 sums, one pass over
// the 8-element chunks of each row (a thread keeps its chunks' v in hs until the sums are in). Every block forms
// the same values; block 0 stores x_out and h. w_first: w's chunk threadIdx.x (norm_weight_chunk), when there is one.
template <class TX, int N>
__device__ __forceinline__ void norm_rows_to_shared(const NormArgs& na, int64_t d, TX* hs, const float (&w_first)[8]) {
  __shared__ float red[N * kGemvWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int n_chunks = static_cast<int>(d / 8);
  const bool writer = blockIdx.x == 0;
  float ss[N] = {};
#pragma unroll
  for (int r = 0; r < N; ++r)
    for (int c = threadIdx.x; c < n_chunks; c += blockDim.x) {
      float v[8];
      load8(static_cast<const TX*>(na.x) + r * na.ldx + c * 8, v);
      if (na.delta) {
        float dv[8];
        load8(static_cast<const TX*>(na.delta) + r * na.ldd + c * 8, dv);
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = to_f32(from_f32<TX>(v[i] + dv[i]));
        if (writer) store8(static_cast<TX*>(na.x_out) + r * na.ldxo + c * 8, v);
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) ss[r] += v[i] * v[i];
      store8(hs + r * d + c * 8, v);
    }
#pragma unroll
  for (int r = 0; r < N; ++r) {
    const float s = warp_sum(ss[r]);
    if (lane == 0) red[r * kGemvWarps + warp] = s;
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < N; ++r) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kGemvWarps; ++i) s += red[r * kGemvWarps + i];
    const float inv = 1.0f / sqrtf(s / static_cast<float>(d) + na.eps);
    for (int c = threadIdx.x; c < n_chunks; c += blockDim.x) {
      float v[8], wv[8];
      load8(hs + r * d + c * 8, v);
      if (c == static_cast<int>(threadIdx.x)) {
#pragma unroll
        for (int i = 0; i < 8; ++i) wv[i] = w_first[i];
      } else {
        norm_weight_chunk(na, c, wv);
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = v[i] * inv * (wv[i] + na.offset);
      store8(hs + r * d + c * 8, v);
      if (writer) store8(static_cast<TX*>(na.h) + r * na.ldh + c * 8, v);
    }
  }
  __syncthreads();
}

// gemv_kernel over the normed rows: the weight rows' first chunks and a chunk of the norm weight are loaded, then the
// kernel before is waited for, then the block forms the normed rows (norm_rows_to_shared) and its warps run their
// rows over them.
template <class TX, class TO, int N, int B, int MinBlocks>
__global__ void __launch_bounds__(kGemvWarps * 32, MinBlocks) norm_gemv_kernel(GemvArgs a, NormArgs na) {
  extern __shared__ uint4 normed_raw[];  // [N, d] TX, 16-byte aligned
  TX* hs = reinterpret_cast<TX*>(normed_raw);
  const int lane = threadIdx.x & 31;
  const int64_t j = blockIdx.x * int64_t{kGemvWarps} + (threadIdx.x >> 5);
  GemvRow<bf16, B, N == 1> row(a, j);
  if (j < a.m) row.load_batch(lane);
  float w_first[8] = {};
  if (threadIdx.x < a.k / 8) norm_weight_chunk(na, static_cast<int>(threadIdx.x), w_first);
  pdl_wait_then_release();
  norm_rows_to_shared<TX, N>(na, a.k, hs, w_first);
  if (j >= a.m) return;
  gemv_finish_row<TX, bf16, TO, N>(a, j, lane, hs, a.k, row);
}

template <class TX, class TO, int N>
struct NormGemv {
  static constexpr int kOneWaveBlocks = 4;  // 64 registers: the norm runs while the first chunks are in flight
  template <int B, int MinBlocks>
  static constexpr auto kernel = norm_gemv_kernel<TX, TO, N, B, MinBlocks>;
};

// True when the bytes of two 2-d row views (either may be undefined) overlap.
bool overlap(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.numel() == 0 || b.numel() == 0) return false;
  const auto span = [](const Tensor& t) {
    const auto* p = static_cast<const char*>(t.data());
    const int64_t elems = (t.dim(0) - 1) * t.stride[0] + t.dim(1);
    return std::pair{p, p + elems * static_cast<int64_t>(dtype_bytes(t.dtype, 1))};
  };
  const auto [a0, a1] = span(a);
  const auto [b0, b1] = span(b);
  return a0 < b1 && b0 < a1;
}

bool rows_aligned16(const Tensor& t) {
  return !t.defined() ||
         (aligned16(t.data()) && (t.stride[0] * static_cast<int64_t>(dtype_bytes(t.dtype, 1))) % 16 == 0);
}

}  // namespace

Status add_rms_norm_matmul(const Tensor& x,      // [n, d] f32/bf16
                           const Tensor& delta,  // like x, or undefined
                           const Tensor& w,      // [d] f32/bf16
                           const Tensor& x_out,  // like x; defined with delta
                           const Tensor& h,      // like x
                           const Tensor& proj,   // [m, d] f32/bf16
                           const Tensor& bias,   // [m] f32/bf16 or undefined
                           const Tensor& out,    // [n, m] f32/bf16
                           const RmsNormParams& p, Stream& s) {
  const char* op = "add_rms_norm_matmul";
  FT_RETURN_IF_ERROR(device_check(op, {&x, &delta, &w, &x_out, &h, &proj, &bias, &out}));
  if (!is_fb(x.dtype) || h.dtype != x.dtype || (delta.defined() && (delta.dtype != x.dtype || x_out.dtype != x.dtype)))
    return dtype_error(op, "x/delta/x_out/h", x);
  if (!is_fb(w.dtype) || !is_fb(proj.dtype) || !is_fb(out.dtype)) return dtype_error(op, "w/proj/out", proj);
  if (x.ndim != 2 || !same_shape(x, h) || delta.defined() != x_out.defined() ||
      (delta.defined() && (!same_shape(x, delta) || !same_shape(x, x_out))) || w.ndim != 1 || w.dim(0) != x.dim(1))
    return shape_error(op, "x " + x.shape_string() + ", delta, x_out and h alike, w " + w.shape_string());
  const int64_t n = x.dim(0), d = x.dim(1);
  if (proj.ndim != 2 || proj.dim(1) != d || out.ndim != 2 || out.dim(0) != n || out.dim(1) != proj.dim(0) ||
      (bias.defined() && bias.numel() != proj.dim(0)))
    return shape_error(op,
                       "proj " + proj.shape_string() + ", out " + out.shape_string() + " for x " + x.shape_string());
  // Every block reads x and delta while block 0 writes x_out and h and every block writes out.
  // By role, not address: the caller may pass one tensor in two roles.
  const Tensor* roles[] = {&x_out, &h, &out, &x, &delta};
  for (int written = 0; written < 3; ++written)
    for (int other = 0; other < 5; ++other)
      if (other != written && overlap(*roles[written], *roles[other]))
        return shape_error(op, "x_out, h and out must overlap neither each other nor x or delta");
  const size_t normed_bytes = static_cast<size_t>(n * d) * dtype_bytes(x.dtype, 1);
  const bool fused = n >= 1 && n <= kGemvMaxRows && (n == 1 || proj.dim(0) * d * 2 <= kMaxFusedProjBytes) &&
                     proj.dim(0) > 0 && proj.dtype == DType::kBF16 && d % 8 == 0 && normed_bytes <= kMaxNormedBytes &&
                     aligned16(w.data()) && rows_aligned16(x) && rows_aligned16(delta) && rows_aligned16(x_out) &&
                     rows_aligned16(h) && rows_aligned16(proj);
  if (!fused) return add_rms_norm_matmul_in_turn(cuda_op_table(), x, delta, w, x_out, h, proj, bias, out, p, s);
  const CudaStream& cs = cuda_stream(s);
  GemvArgs a{nullptr, 0, proj.data(), proj.stride[0], out.data(), out.stride[0], proj.dim(0), d};
  a.set_bias(bias);
  const NormArgs na{x.data(),
                    x.stride[0],
                    delta.defined() ? delta.data() : nullptr,
                    delta.defined() ? delta.stride[0] : 0,
                    x_out.defined() ? x_out.data() : nullptr,
                    x_out.defined() ? x_out.stride[0] : 0,
                    h.data(),
                    h.stride[0],
                    w.data(),
                    w.dtype == DType::kBF16,
                    p.eps,
                    p.zero_centered ? 1.0f : 0.0f};
  cudaError_t err = cudaSuccess;
  with_types({x.dtype, out.dtype}, [&](auto tx, auto to) {
    using TX = decltype(tx);
    using TO = decltype(to);
    switch (n) {
      case 1:
        err = launch_gemv_family<NormGemv<TX, TO, 1>, bf16, 1>(a, normed_bytes, cs, na);
        break;
      case 2:
        err = launch_gemv_family<NormGemv<TX, TO, 2>, bf16, 2>(a, normed_bytes, cs, na);
        break;
      case 3:
        err = launch_gemv_family<NormGemv<TX, TO, 3>, bf16, 3>(a, normed_bytes, cs, na);
        break;
      default:
        err = launch_gemv_family<NormGemv<TX, TO, 4>, bf16, 4>(a, normed_bytes, cs, na);
        break;
    }
  });
  return cuda_status(err, op);
}

}  // namespace ft::cuda
