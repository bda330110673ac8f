// Row-wise elementwise ops: swiglu, softmax, add and dtype conversion.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"

namespace ft::cpu {
namespace {
constexpr int64_t kRowGrain = 8;  // rows per thread chunk
}  // namespace

Status swiglu(const Tensor& gate,  // [n, i] f32
              const Tensor& up,    // [n, i] f32
              const Tensor& out,   // [n, i] f32
              Stream& s) {
  if (gate.dtype != DType::kF32 || up.dtype != DType::kF32 || out.dtype != DType::kF32)
    return dtype_error("swiglu", "gate/up/out", out);
  if (!same_shape(gate, up) || !same_shape(gate, out)) return shape_error("swiglu", "shapes do not match");
  const CpuKernels& kn = kernels();
  const int64_t d = gate.dim(-1);
  parallel_for(s, gate.n_rows(), kRowGrain, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* g = row_ptr<const float>(gate, r);
      const float* u = row_ptr<const float>(up, r);
      float* o = row_ptr<float>(out, r);
      kn.silu_mul(g, u, o, d);
    }
  });
  return ok_status();
}

Status softmax(const Tensor& x,    // [n, m] f32
               const Tensor& out,  // [n, m] f32 (may alias x)
               Stream& s) {
  if (x.dtype != DType::kF32 || out.dtype != DType::kF32) return dtype_error("softmax", "x/out", x);
  if (!same_shape(x, out)) return shape_error("softmax", "shapes do not match");
  const int64_t m = x.dim(-1);
  parallel_for(s, x.n_rows(), kRowGrain, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xi = row_ptr<const float>(x, r);
      float* o = row_ptr<float>(out, r);
      float mx = -INFINITY;
      for (int64_t i = 0; i < m; ++i) mx = std::max(mx, xi[i]);
      double sum = 0.0;  // a long row summed in fp32 would lose ~sqrt(m) ulps
      for (int64_t i = 0; i < m; ++i) {
        o[i] = std::exp(xi[i] - mx);
        sum += o[i];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t i = 0; i < m; ++i) o[i] *= inv;
    }
  });
  return ok_status();
}

Status add(const Tensor& a,    // [..., d] f32
           const Tensor& b,    // like a, f32
           const Tensor& out,  // like a, f32 (may alias a or b)
           Stream& s) {
  if (a.dtype != DType::kF32 || b.dtype != DType::kF32 || out.dtype != DType::kF32)
    return dtype_error("add", "a/b/out", out);
  if (!same_shape(a, b) || !same_shape(a, out)) return shape_error("add", "shapes do not match");
  const CpuKernels& kn = kernels();
  const int64_t d = a.dim(-1);
  parallel_for(s, a.n_rows(), kRowGrain, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) kn.add(row_ptr<const float>(a, r), row_ptr<const float>(b, r), row_ptr<float>(out, r), d);
  });
  return ok_status();
}

Status convert(const Tensor& x,    // [..., d] f32/bf16
               const Tensor& out,  // like x, f32/bf16
               Stream& s) {
  if (!is_f32_or_bf16(x.dtype)) return dtype_error("convert", "x", x);
  if (!is_f32_or_bf16(out.dtype)) return dtype_error("convert", "out", out);
  if (!same_shape(x, out)) return shape_error("convert", "shapes do not match");
  const CpuKernels& kn = kernels();
  const int64_t d = x.dim(-1);
  const size_t row_bytes = dtype_bytes(x.dtype, static_cast<size_t>(d));
  parallel_for(s, x.n_rows(), kRowGrain, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const char* src = static_cast<const char*>(x.data()) + dtype_bytes(x.dtype, row_offset(x, r));
      char* dst = static_cast<char*>(out.data()) + dtype_bytes(out.dtype, row_offset(out, r));
      if (x.dtype == out.dtype)
        std::memmove(dst, src, row_bytes);
      else if (x.dtype == DType::kBF16)
        kn.bf16_to_f32(reinterpret_cast<const uint16_t*>(src), reinterpret_cast<float*>(dst), d);
      else
        kn.f32_to_bf16(reinterpret_cast<const float*>(src), reinterpret_cast<uint16_t*>(dst), d);
    }
  });
  return ok_status();
}

}  // namespace ft::cpu
