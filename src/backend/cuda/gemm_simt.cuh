// A 64x64 output tile of x @ w^T on CUDA cores in fp32 (256 threads, 4x4 outputs each): the exact path for
// f32 activations or weights and for shapes the tensor-core paths do not take. x rows may be gathered.
#pragma once

#include "backend/cuda/common.cuh"

namespace ft::cuda {

constexpr int kSimtTile = 64;   // rows of x and rows of w per tile
constexpr int kSimtDepth = 16;  // k per shared-memory stage
constexpr int kSimtThreads = 256;

struct SimtSmem {
  float x[kSimtDepth][kSimtTile + 1];
  float w[kSimtDepth][kSimtTile + 1];
};

// acc[i][j] = sum_c x[row ty + 16 i, c] * w[row tx + 16 j, c] for the tile's rows: x row r is
// x + (x_rows ? x_rows[r] : r) * ldx for r < n_x, w row r is w + r * ldw for r < n_w (others read as 0).
template <class TX, class TW>
__device__ __forceinline__ void simt_tile(const TX* x, int64_t ldx, const int32_t* x_rows, int64_t n_x,
                                          const TW* w, int64_t ldw, int64_t n_w, int64_t k, SimtSmem& sm,
                                          float (&acc)[4][4]) {
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int64_t c0 = 0; c0 < k; c0 += kSimtDepth) {
#pragma unroll
    for (int q = 0; q < kSimtTile * kSimtDepth / kSimtThreads; ++q) {
      const int e = tid + q * kSimtThreads, r = e / kSimtDepth, cc = e % kSimtDepth;
      const int64_t c = c0 + cc;
      float xv = 0.0f, wv = 0.0f;
      if (r < n_x && c < k) xv = to_f32(x[(x_rows ? x_rows[r] : r) * ldx + c]);
      if (r < n_w && c < k) wv = to_f32(w[r * ldw + c]);
      sm.x[cc][r] = xv;
      sm.w[cc][r] = wv;
    }
    __syncthreads();
#pragma unroll
    for (int cc = 0; cc < kSimtDepth; ++cc) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = sm.x[cc][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = sm.w[cc][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
}

}  // namespace ft::cuda
