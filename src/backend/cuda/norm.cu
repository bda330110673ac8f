// Row reductions: rms_norm (x * w or zero-centred x * (1 + w), 1 + w formed in fp32) and softmax; one block
// per row, fp32 sums.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"

namespace ft::cuda {
namespace {

int block_for(int64_t d) { return d <= 256 ? 32 : d <= 1024 ? 128 : d <= 2048 ? 256 : 1024; }

constexpr int kRegsPerThread = 8;  // rows up to blockDim * 8 are held in registers: one read, loads in flight

template <class TX, class TW, class TO>
__global__ void rms_norm_kernel(const TX* x, RowMap xm, const TW* w, TO* out, RowMap om, int64_t d, float eps,
                                bool zero_centered) {
  __shared__ float red[32];
  const TX* xr = x + xm.offset(blockIdx.x);
  TO* o = out + om.offset(blockIdx.x);
  const float offset = zero_centered ? 1.0f : 0.0f;
  if (d <= int64_t{blockDim.x} * kRegsPerThread) {
    float v[kRegsPerThread], wv[kRegsPerThread];
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < kRegsPerThread; ++i) {
      const int64_t j = threadIdx.x + int64_t{i} * blockDim.x;
      v[i] = j < d ? to_f32(xr[j]) : 0.0f;
      wv[i] = j < d ? to_f32(w[j]) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kRegsPerThread; ++i) ss += v[i] * v[i];
    ss = block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
#pragma unroll
    for (int i = 0; i < kRegsPerThread; ++i) {
      const int64_t j = threadIdx.x + int64_t{i} * blockDim.x;
      if (j < d) o[j] = from_f32<TO>(v[i] * inv * (wv[i] + offset));
    }
    return;
  }
  float ss = 0.0f;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float v = to_f32(xr[j]);
    ss += v * v;
  }
  ss = block_sum(ss, red);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + eps);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) o[j] = from_f32<TO>(to_f32(xr[j]) * inv * (to_f32(w[j]) + offset));
}

template <class TX, class TO>
__global__ void softmax_kernel(const TX* x, int64_t x_stride, TO* out, int64_t out_stride, int64_t m) {
  __shared__ float red[32];
  const TX* xr = x + blockIdx.x * x_stride;
  TO* o = out + blockIdx.x * out_stride;
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) mx = fmaxf(mx, to_f32(xr[j]));
  mx = block_max(mx, red);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) sum += expf(to_f32(xr[j]) - mx);
  sum = block_sum(sum, red);
  const float inv = 1.0f / sum;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) o[j] = from_f32<TO>(expf(to_f32(xr[j]) - mx) * inv);
}

}  // namespace

Status rms_norm(const Tensor& x,    // [..., d] f32/bf16
                const Tensor& w,    // [d] f32/bf16
                const Tensor& out,  // like x (may alias x)
                const RmsNormParams& p, Stream& s) {
  FT_RETURN_IF_ERROR(device_check("rms_norm", {&x, &w, &out}));
  if (!is_fb(x.dtype) || !is_fb(w.dtype) || !is_fb(out.dtype)) return dtype_error("rms_norm", "x/w/out", x);
  if (x.ndim < 1 || x.ndim > 4 || !same_shape(x, out) || w.numel() != x.dim(-1))
    return shape_error("rms_norm", "x " + x.shape_string() + ", w " + w.shape_string() + ", out " + out.shape_string());
  const int64_t rows = x.numel() / std::max<int64_t>(1, x.dim(-1)), d = x.dim(-1);
  if (rows == 0 || d == 0) return ok_status();
  if (rows > INT32_MAX) return shape_error("rms_norm", "too many rows");
  with_type(x.dtype, [&](auto tx) {
    with_type(w.dtype, [&](auto tw) {
      with_type(out.dtype, [&](auto to) {
        using TX = decltype(tx);
        using TW = decltype(tw);
        using TO = decltype(to);
        rms_norm_kernel<<<static_cast<unsigned>(rows), block_for(d), 0, cuda_stream(s).get()>>>(
            x.ptr<const TX>(), row_map(x), w.ptr<const TW>(), out.ptr<TO>(), row_map(out), d, p.eps, p.zero_centered);
      });
    });
  });
  return launch_status("rms_norm");
}

Status softmax(const Tensor& x,    // [n, m] f32/bf16
               const Tensor& out,  // [n, m] (may alias x)
               Stream& s) {
  FT_RETURN_IF_ERROR(device_check("softmax", {&x, &out}));
  if (!is_fb(x.dtype) || !is_fb(out.dtype)) return dtype_error("softmax", "x/out", x);
  if (x.ndim != 2 || !same_shape(x, out)) return shape_error("softmax", "x and out must be [n, m]");
  const int64_t n = x.dim(0), m = x.dim(1);
  if (n == 0 || m == 0) return ok_status();
  with_type(x.dtype, [&](auto tx) {
    with_type(out.dtype, [&](auto to) {
      using TX = decltype(tx);
      using TO = decltype(to);
      softmax_kernel<<<static_cast<unsigned>(n), block_for(m), 0, cuda_stream(s).get()>>>(
          x.ptr<const TX>(), x.stride[0], out.ptr<TO>(), out.stride[0], m);
    });
  });
  return launch_status("softmax");
}

}  // namespace ft::cuda
