// Elementwise ops over strided rows: swiglu (silu(gate) * up), add, convert; all math in fp32.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"

namespace ft::cuda {
namespace {

constexpr int kBlock = 256, kPerThread = 4, kCols = kBlock * kPerThread;

// Block (x, y) takes columns [kCols y, kCols (y + 1)) of rows x, x + gridDim.x, ...: the rows' offsets are worked
// out once per row, and each thread's loads are issued before its stores.
template <class TA, class TB, class TO, class F>
__global__ void binary_kernel(const TA* a, RowMap am, const TB* b, RowMap bm, TO* out, RowMap om, int64_t d,
                              int64_t rows, F f) {
  const int64_t c0 = blockIdx.y * int64_t{kCols} + threadIdx.x;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const TA* ar = a + am.offset(r);
    const TB* br = b + bm.offset(r);
    float v[kPerThread];
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int64_t c = c0 + u * kBlock;
      v[u] = c < d ? f(to_f32(ar[c]), to_f32(br[c])) : 0.0f;
    }
    TO* orow = out + om.offset(r);
#pragma unroll
    for (int u = 0; u < kPerThread; ++u)
      if (c0 + u * kBlock < d) orow[c0 + u * kBlock] = from_f32<TO>(v[u]);
  }
}

struct SiluMul {
  __device__ float operator()(float g, float u) const { return g / (1.0f + expf(-g)) * u; }
};
struct Plus {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct First {
  __device__ float operator()(float a, float) const { return a; }
};

// out = f(a, b) over rows; a, b, out of any f32/bf16 mix.
template <class F>
Status binary(const char* op, const Tensor& a, const Tensor& b, const Tensor& out, F f, Stream& s) {
  FT_RETURN_IF_ERROR(device_check(op, {&a, &b, &out}));
  if (!is_fb(a.dtype) || !is_fb(b.dtype) || !is_fb(out.dtype)) return dtype_error(op, "inputs/out", a);
  if (!same_shape(a, b) || !same_shape(a, out) || a.ndim < 1) return shape_error(op, "shapes differ");
  const int64_t n = a.numel(), d = a.dim(-1);
  if (n == 0) return ok_status();
  const int64_t rows = n / d, col_blocks = (d + kCols - 1) / kCols;
  if (col_blocks > 65535) return shape_error(op, "rows too long");
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(rows, 4096)), static_cast<unsigned>(col_blocks));
  with_types({a.dtype, b.dtype, out.dtype}, [&](auto ta, auto tb, auto to) {
    using TA = decltype(ta);
    using TB = decltype(tb);
    using TO = decltype(to);
    binary_kernel<<<grid, kBlock, 0, cuda_stream(s).get()>>>(a.ptr<const TA>(), row_map(a), b.ptr<const TB>(),
                                                             row_map(b), out.ptr<TO>(), row_map(out), d, rows, f);
  });
  return launch_status(op);
}

}  // namespace

Status swiglu(const Tensor& gate,  // [n, i] f32/bf16 (may be a column slice)
              const Tensor& up,    // [n, i]
              const Tensor& out,   // [n, i]
              Stream& s) {
  return binary("swiglu", gate, up, out, SiluMul{}, s);
}

Status add(const Tensor& a, const Tensor& b, const Tensor& out, Stream& s) {  // same shapes, may alias
  return binary("add", a, b, out, Plus{}, s);
}

Status convert(const Tensor& x, const Tensor& out, Stream& s) {  // same shapes, f32 <-> bf16
  return binary("convert", x, x, out, First{}, s);
}

}  // namespace ft::cuda
