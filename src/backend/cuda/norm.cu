// Row reductions: rms_norm (x * w or zero-centred x * (1 + w), 1 + w formed in fp32) and softmax; one block per
// row, fp32 sums. rms_norm launches as a programmatic dependent (pdl.cuh).
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/norm.cuh"
#include "backend/cuda/pdl.cuh"

namespace ft::cuda {
namespace {

template <class TX, class TW, class TO>
__global__ void __launch_bounds__(kNormMaxBlock)
    rms_norm_kernel(const TX* x, RowMap xm, const TW* w, TO* out, RowMap om, int64_t d, float eps, bool zero_centered) {
  __shared__ float red[32];
  pdl_wait_then_release();
  const TX* xr = x + xm.offset(blockIdx.x);
  rms_norm_row([&](int64_t j) { return to_f32(xr[j]); }, xr, w, out + om.offset(blockIdx.x), d, eps,
               zero_centered ? 1.0f : 0.0f, red);
}

template <class TX, class TO>
__global__ void __launch_bounds__(kNormMaxBlock)
    softmax_kernel(const TX* x, int64_t x_stride, TO* out, int64_t out_stride, int64_t m) {
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
  const CudaStream& cs = cuda_stream(s);
  cudaError_t err = cudaSuccess;
  with_types({x.dtype, w.dtype, out.dtype}, [&](auto tx, auto tw, auto to) {
    using TX = decltype(tx);
    using TW = decltype(tw);
    using TO = decltype(to);
    err = launch_pdl(cs.pdl(), rms_norm_kernel<TX, TW, TO>, dim3(static_cast<unsigned>(rows)),
                     dim3(norm_row_block(d)), 0, cs.get(), x.ptr<const TX>(), row_map(x), w.ptr<const TW>(),
                     out.ptr<TO>(), row_map(out), d, p.eps, p.zero_centered);
  });
  return cuda_status(err, "rms_norm");
}

Status softmax(const Tensor& x,    // [n, m] f32/bf16
               const Tensor& out,  // [n, m] (may alias x)
               Stream& s) {
  FT_RETURN_IF_ERROR(device_check("softmax", {&x, &out}));
  if (!is_fb(x.dtype) || !is_fb(out.dtype)) return dtype_error("softmax", "x/out", x);
  if (x.ndim != 2 || !same_shape(x, out)) return shape_error("softmax", "x and out must be [n, m]");
  const int64_t n = x.dim(0), m = x.dim(1);
  if (n == 0 || m == 0) return ok_status();
  with_types({x.dtype, out.dtype}, [&](auto tx, auto to) {
    using TX = decltype(tx);
    using TO = decltype(to);
    softmax_kernel<<<static_cast<unsigned>(n), norm_row_block(m), 0, cuda_stream(s).get()>>>(
        x.ptr<const TX>(), x.stride[0], out.ptr<TO>(), out.stride[0], m);
  });
  return launch_status("softmax");
}

}  // namespace ft::cuda
