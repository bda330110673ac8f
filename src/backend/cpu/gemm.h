// The blocked dot-product GEMM shared by matmul and moe_experts: rows of f32 activations times weight rows.
#pragma once

#include <cstdint>

#include "backend/cpu/kernels.h"
#include "core/dtype.h"

namespace ft::cpu {

// Activation rows: row i is base + (index ? index[i] : i) * stride.
struct XRows {
  const float* base;
  int64_t stride;
  const int32_t* index = nullptr;
  const float* row(int64_t i) const { return base + (index ? index[i] : i) * stride; }
};

// Weight rows [m, k] (f32, bf16, or MXFP4: f4_e2m1 codes with ue8m0 scales [m, k / 32], rows scale_stride apart),
// row stride `stride` elements; bias [m] (f32 or bf16) or null.
struct WRows {
  const void* data;
  DType dtype;
  int64_t stride;
  const void* bias = nullptr;
  DType bias_dtype = DType::kF32;
  const uint8_t* scales = nullptr;
  int64_t scale_stride = 0;
};

// out[i * out_stride + (j - j0)] = x.row(i) . w.row(j) (+ bias[j]) for i < n, j in [j0, j1); fp32 accumulation.
// Loops over tiles of kTileX rows of x and kTileW rows of w; call it on blocks of w rows that fit in L2.
void gemm_block(const CpuKernels& kn, const XRows& x, int64_t n, const WRows& w, int64_t j0, int64_t j1,
                int64_t k, float* out, int64_t out_stride);

// Rows of w per block so that one block of weights stays in L2 (a multiple of kTileW).
int64_t gemm_block_rows(int64_t k, DType wdtype);

}  // namespace ft::cpu
