// Elementwise ops over strided rows: swiglu (silu(gate) * up), add, convert; all math in fp32.
#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_ops.h"

namespace ft::cuda {
namespace {

constexpr int kBlock = 256;

unsigned grid_elems(int64_t n) { return static_cast<unsigned>(std::min<int64_t>((n + kBlock - 1) / kBlock, 65536)); }

template <class TA, class TB, class TO, class F>
__global__ void binary_kernel(const TA* a, RowMap am, const TB* b, RowMap bm, TO* out, RowMap om, int64_t d,
                              int64_t n, F f) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / d, c = i % d;
    out[om.offset(r) + c] = from_f32<TO>(f(to_f32(a[am.offset(r) + c]), to_f32(b[bm.offset(r) + c])));
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
  with_type(a.dtype, [&](auto ta) {
    with_type(b.dtype, [&](auto tb) {
      with_type(out.dtype, [&](auto to) {
        using TA = decltype(ta);
        using TB = decltype(tb);
        using TO = decltype(to);
        binary_kernel<<<grid_elems(n), kBlock, 0, cuda_stream(s).get()>>>(a.ptr<const TA>(), row_map(a),
                                                                         b.ptr<const TB>(), row_map(b), out.ptr<TO>(),
                                                                         row_map(out), d, n, f);
      });
    });
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
