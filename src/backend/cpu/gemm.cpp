// The blocked GEMM loop over dot-product tiles (kernels.h), with bias, for matmul and moe_experts.
#include "backend/cpu/gemm.h"

#include <algorithm>

namespace ft::cpu {

void gemm_block(const CpuKernels& kn, const XRows& x, int64_t n, const WRows& w, int64_t j0, int64_t j1,
                int64_t k, float* out, int64_t out_stride) {
  float tile[kTileX * kTileW];
  for (int64_t i0 = 0; i0 < n; i0 += kTileX) {
    const int nx = static_cast<int>(std::min<int64_t>(kTileX, n - i0));
    const float* xs[kTileX];
    for (int i = 0; i < nx; ++i) xs[i] = x.row(i0 + i);
    for (int64_t j = j0; j < j1; j += kTileW) {
      const int nw = static_cast<int>(std::min<int64_t>(kTileW, j1 - j));
      if (w.dtype == DType::kBF16)
        kn.dot_tile_bf16(xs, nx, static_cast<const uint16_t*>(w.data) + j * w.stride, w.stride, nw, k, tile);
      else if (w.dtype == DType::kF4E2M1)
        kn.dot_tile_mxfp4(xs, nx, static_cast<const uint8_t*>(w.data) + j * w.stride / 2, w.stride / 2,
                          w.scales + j * w.scale_stride, w.scale_stride, nw, k, tile);
      else
        kn.dot_tile_f32(xs, nx, static_cast<const float*>(w.data) + j * w.stride, w.stride, nw, k, tile);
      for (int jj = 0; jj < nw; ++jj) {
        float b = 0.0f;
        if (w.bias != nullptr)
          b = w.bias_dtype == DType::kBF16 ? bf16_to_f32(static_cast<const uint16_t*>(w.bias)[j + jj])
                                           : static_cast<const float*>(w.bias)[j + jj];
        for (int i = 0; i < nx; ++i) out[(i0 + i) * out_stride + (j + jj - j0)] = tile[i * kTileW + jj] + b;
      }
    }
  }
}

int64_t gemm_block_rows(int64_t k, DType wdtype) {
  constexpr int64_t kL2Share = 512 * 1024;  // bytes of weights per block
  const auto row_bytes = std::max<int64_t>(1, static_cast<int64_t>(dtype_bytes(wdtype, static_cast<size_t>(k))));
  const int64_t rows = std::clamp<int64_t>(kL2Share / row_bytes, kTileW, 256);
  return rows / kTileW * kTileW;
}

}  // namespace ft::cpu
