// Linear-attention helpers: causal depthwise conv1d + SiLU with a rolling f32 state (a thread per channel walks
// its sequence's rows), the gated RMSNorm (a block per row) and sigmoid gating (elementwise); fp32 math.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/recurrent_meta.cuh"

namespace ft::cuda {
namespace {

constexpr int kMaxKernel = 16;  // conv taps held in registers
constexpr int kConvThreads = 128;
constexpr int kElemThreads = 256;

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

// Block (sequence, channel block); thread = channel. window[j]: the input j steps before the newest.
template <class T, class TW>
__global__ void __launch_bounds__(kConvThreads)
    conv1d_silu_kernel(const T* x, int64_t x_stride,    // [n, c]
                       const TW* w,                     // [c, kernel]
                       DeviceMeta meta, float* state,   // [n_slots, kernel - 1, c]
                       T* out, int64_t out_stride,      // [n, c]
                       int64_t c, int kernel) {
  const int64_t ch = blockIdx.y * int64_t{kConvThreads} + threadIdx.x;
  const SeqRange sq = seq_range(meta, blockIdx.x);
  if (ch >= c || !sq.valid) return;
  const int hist = kernel - 1;
  float* st = state + sq.slot * hist * c;  // [hist, c]
  float taps[kMaxKernel], window[kMaxKernel];
#pragma unroll
  for (int j = 0; j < kMaxKernel; ++j) {
    taps[j] = j < kernel ? to_f32(w[ch * kernel + j]) : 0.0f;
    window[j] = j < hist && !sq.fresh ? st[j * c + ch] : 0.0f;
  }
  for (int64_t t = sq.begin; t < sq.end; ++t) {
    const float xt = to_f32(x[t * x_stride + ch]);
#pragma unroll
    for (int j = 0; j < kMaxKernel; ++j)
      if (j == hist) window[j] = xt;
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxKernel; ++j)
      if (j < kernel) acc += taps[j] * window[j];
    out[t * out_stride + ch] = from_f32<T>(silu(acc));
#pragma unroll
    for (int j = 0; j + 1 < kMaxKernel; ++j)
      if (j < hist) window[j] = window[j + 1];
  }
#pragma unroll
  for (int j = 0; j < kMaxKernel; ++j)
    if (j < hist) st[j * c + ch] = window[j];
}

int norm_block(int64_t d) { return d <= 256 ? 32 : d <= 1024 ? 128 : 256; }

// Block = row. Each thread reads and writes its own elements, so out may alias x.
template <class T, class TW>
__global__ void rms_norm_gated_kernel(const T* x, RowMap xm, const TW* w, const T* z, RowMap zm, T* out, RowMap om,
                                      int64_t d, float eps) {
  __shared__ float red[32];
  const T* xr = x + xm.offset(blockIdx.x);
  const T* zr = z + zm.offset(blockIdx.x);
  T* o = out + om.offset(blockIdx.x);
  float ss = 0.0f;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float v = to_f32(xr[j]);
    ss += v * v;
  }
  ss = block_sum(ss, red);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
    o[j] = from_f32<T>(to_f32(xr[j]) * inv * to_f32(w[j]) * silu(to_f32(zr[j])));
}

// Grid-stride over the elements; the gate is per element or (gate_per_row) one per row.
template <class T>
__global__ void sigmoid_mul_kernel(const T* x, RowMap xm, const T* gate, RowMap gm, T* out, RowMap om, int64_t d,
                                   int64_t n, bool gate_per_row) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / d, col = i % d;
    const float g = to_f32(gate[gm.offset(r) + (gate_per_row ? 0 : col)]);
    out[om.offset(r) + col] = from_f32<T>(to_f32(x[xm.offset(r) + col]) / (1.0f + expf(-g)));
  }
}

}  // namespace

Status conv1d_silu(const Tensor& x,      // [n, c] f32/bf16
                   const Tensor& w,      // [c, kernel] f32/bf16, contiguous
                   const RecurrentMeta& meta,
                   const Tensor& state,  // [n_slots, kernel - 1, c] f32, contiguous
                   const Tensor& out,    // [n, c] like x (must not alias x)
                   Stream& s) {
  FT_RETURN_IF_ERROR(device_check("conv1d_silu", {&x, &w, &state, &out}));
  if (!is_fb(x.dtype) || out.dtype != x.dtype) return dtype_error("conv1d_silu", "x/out", x);
  if (state.dtype != DType::kF32 || !state.is_contiguous()) return dtype_error("conv1d_silu", "state", state);
  if (!is_fb(w.dtype) || !w.is_contiguous()) return dtype_error("conv1d_silu", "w", w);
  if (x.ndim != 2 || w.ndim != 2 || state.ndim != 3 || !same_shape(x, out))
    return shape_error("conv1d_silu", "x, w, state and out must be [n, c], [c, kernel], [slots, kernel - 1, c]");
  const int64_t c = x.dim(1), kernel = w.dim(1);
  if (w.dim(0) != c || kernel < 1 || kernel > kMaxKernel || state.dim(1) != kernel - 1 || state.dim(2) != c)
    return shape_error("conv1d_silu", "x " + x.shape_string() + ", w " + w.shape_string() + ", state " +
                                          state.shape_string() + " do not match");
  DeviceMeta dm{};
  FT_RETURN_IF_ERROR(check_meta("conv1d_silu", meta, x.dim(0), state.dim(0), dm));
  if (meta.n_seq == 0 || c == 0) return ok_status();
  if (meta.n_seq > INT32_MAX || grid_for(c, kConvThreads) > 65535u) return shape_error("conv1d_silu", "too large");
  const dim3 grid(static_cast<unsigned>(meta.n_seq), grid_for(c, kConvThreads));
  with_types({x.dtype, w.dtype}, [&](auto tx, auto tw) {
    using T = decltype(tx);
    using TW = decltype(tw);
    conv1d_silu_kernel<T, TW><<<grid, kConvThreads, 0, cuda_stream(s).get()>>>(
        x.ptr<const T>(), x.stride[0], w.ptr<const TW>(), dm, state.ptr<float>(), out.ptr<T>(), out.stride[0], c,
        static_cast<int>(kernel));
  });
  return launch_status("conv1d_silu");
}

Status rms_norm_gated(const Tensor& x,    // [..., d] f32/bf16
                      const Tensor& w,    // [d] f32/bf16
                      const Tensor& z,    // like x
                      const Tensor& out,  // like x (may alias x)
                      float eps, Stream& s) {
  FT_RETURN_IF_ERROR(device_check("rms_norm_gated", {&x, &w, &z, &out}));
  if (!is_fb(x.dtype) || z.dtype != x.dtype || out.dtype != x.dtype) return dtype_error("rms_norm_gated", "x/z/out", x);
  if (!is_fb(w.dtype)) return dtype_error("rms_norm_gated", "w", w);
  if (x.ndim < 1 || x.ndim > 4 || w.ndim != 1 || w.dim(0) != x.dim(-1) || !same_shape(x, z) || !same_shape(x, out))
    return shape_error("rms_norm_gated", "x " + x.shape_string() + ", w " + w.shape_string() + ", z " +
                                             z.shape_string() + ", out " + out.shape_string() + " do not match");
  const int64_t d = x.dim(-1), rows = x.n_rows();
  if (rows == 0 || d == 0) return ok_status();
  if (rows > INT32_MAX) return shape_error("rms_norm_gated", "too many rows");
  with_types({x.dtype, w.dtype}, [&](auto tx, auto tw) {
    using T = decltype(tx);
    using TW = decltype(tw);
    rms_norm_gated_kernel<T, TW><<<static_cast<unsigned>(rows), norm_block(d), 0, cuda_stream(s).get()>>>(
        x.ptr<const T>(), row_map(x), w.ptr<const TW>(), z.ptr<const T>(), row_map(z), out.ptr<T>(), row_map(out),
        d, eps);
  });
  return launch_status("rms_norm_gated");
}

Status sigmoid_mul(const Tensor& x,     // [..., d] f32/bf16
                   const Tensor& gate,  // [..., d] or [..., 1] like x's dtype
                   const Tensor& out,   // like x (may alias x)
                   Stream& s) {
  FT_RETURN_IF_ERROR(device_check("sigmoid_mul", {&x, &gate, &out}));
  if (!is_fb(x.dtype) || gate.dtype != x.dtype || out.dtype != x.dtype)
    return dtype_error("sigmoid_mul", "x/gate/out", x);
  if (x.ndim < 1 || x.ndim > 4 || gate.ndim < 1 || gate.ndim > 4 || !same_shape(x, out) ||
      gate.n_rows() != x.n_rows() || (gate.dim(-1) != 1 && gate.dim(-1) != x.dim(-1)))
    return shape_error("sigmoid_mul", "x " + x.shape_string() + ", gate " + gate.shape_string() + " do not match");
  const int64_t n = x.numel(), d = x.dim(-1);
  if (n == 0) return ok_status();
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(grid_for(n, kElemThreads), 65536));
  with_type(x.dtype, [&](auto tx) {
    using T = decltype(tx);
    sigmoid_mul_kernel<T><<<grid, kElemThreads, 0, cuda_stream(s).get()>>>(
        x.ptr<const T>(), row_map(x), gate.ptr<const T>(), row_map(gate), out.ptr<T>(), row_map(out), d, n,
        gate.dim(-1) == 1);
  });
  return launch_status("sigmoid_mul");
}

}  // namespace ft::cuda
