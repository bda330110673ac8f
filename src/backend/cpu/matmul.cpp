// matmul: out = x @ w^T (+ bias). n <= kTileX: a bandwidth-bound GEMV, threads split the weight rows; larger
// n: items of (L2-sized block of weight rows, chunk of activation rows) handed out dynamically. matmul_heads: the
// same, a head at a time.
#include <algorithm>

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/gemm.h"

namespace ft::cpu {

Status matmul(const Tensor& x,     // [n, k] f32
              const Tensor& w,     // [m, k] f32/bf16
              const Tensor& bias,  // [m] f32/bf16 or undefined
              const Tensor& out,   // [n, m] f32
              Stream& s) {
  if (x.dtype != DType::kF32) return dtype_error("matmul", "x", x);
  if (out.dtype != DType::kF32) return dtype_error("matmul", "out", out);
  if (!is_f32_or_bf16(w.dtype)) return dtype_error("matmul", "w", w);
  if (bias.defined() && !is_f32_or_bf16(bias.dtype)) return dtype_error("matmul", "bias", bias);
  if (w.ndim != 2 || x.ndim < 1 || out.ndim < 1) return shape_error("matmul", "w must be [m, k]");
  const int64_t k = w.dim(1), m = w.dim(0), n = x.n_rows();
  if (x.dim(-1) != k || out.dim(-1) != m || out.n_rows() != n)
    return shape_error("matmul", "x " + x.shape_string() + ", w " + w.shape_string() + ", out " +
                                     out.shape_string() + " do not match");
  if (bias.defined() && (bias.ndim != 1 || bias.dim(0) != m)) return shape_error("matmul", "bias must be [m]");
  if (!x.rows_uniform() || !out.rows_uniform() || !x.rows_contiguous() || !w.rows_contiguous())
    return shape_error("matmul", "x and out need uniform row strides");
  if (n == 0 || m == 0) return ok_status();

  const CpuKernels& kn = kernels();
  const XRows xr{x.ptr<float>(), x.ndim >= 2 ? x.row_stride() : k};
  const WRows wr{w.data(), w.dtype, w.stride[0], bias.defined() ? bias.data() : nullptr, bias.dtype};
  float* o = out.ptr<float>();
  const int64_t os = out.ndim >= 2 ? out.row_stride() : m;
  if (n <= kTileX) {
    // Rows per thread in multiples of 4 tiles so every pass streams whole cache lines of several rows.
    parallel_for(s, m, 4 * kTileW, [&](int, int64_t j0, int64_t j1) {
      gemm_block(kn, xr, n, wr, j0, j1, k, o + j0, os);
    });
    return ok_status();
  }
  constexpr int64_t kChunk = 64;  // activation rows per item
  const int64_t rows = gemm_block_rows(k, w.dtype);
  const int64_t n_blocks = (m + rows - 1) / rows, n_chunks = (n + kChunk - 1) / kChunk;
  parallel_items(s, n_blocks * n_chunks, [&](int64_t item) {
    const int64_t j0 = item / n_chunks * rows, j1 = std::min(m, j0 + rows);
    const int64_t i0 = item % n_chunks * kChunk, i1 = std::min(n, i0 + kChunk);
    const XRows xc{xr.base + i0 * xr.stride, xr.stride};
    gemm_block(kn, xc, i1 - i0, wr, j0, j1, k, o + i0 * os + j0, os);
  });
  return ok_status();
}

Status matmul_heads(const Tensor& x,    // [n, H, k] f32
                    const Tensor& w,    // [H, m, k] f32/bf16
                    const Tensor& out,  // [n, H, m] f32
                    Stream& s) {
  if (x.ndim != 3 || w.ndim != 3 || out.ndim != 3 || w.dim(0) != x.dim(1) || out.dim(1) != x.dim(1) ||
      out.dim(0) != x.dim(0))
    return shape_error("matmul_heads", "x " + x.shape_string() + ", w " + w.shape_string() + ", out " +
                                           out.shape_string() + " do not match");
  for (int64_t h = 0; h < x.dim(1); ++h)
    FT_RETURN_IF_ERROR(matmul(x.select(1, h), w.select(0, h), Tensor{}, out.select(1, h), s));
  return ok_status();
}

}  // namespace ft::cpu
