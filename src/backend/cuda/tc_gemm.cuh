// The tile GEMM on tensor cores (mma.sync bf16 -> fp32) shared by the grouped expert GEMM (moe_experts_gemm.cu) and
// the dense matmul of f32 activations by bf16 weights (matmul.cu): out = a @ w^T over groups of rows, each group
// with its own weight matrix (one group: a dense GEMM). f32 rows are split in three bf16 parts (hi + mid + lo holds
// all 24 mantissa bits), one MMA per part, so they keep fp32 accuracy at three times the MMA work.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/common.cuh"
#include "backend/ops.h"

namespace ft::cuda {

inline constexpr int64_t kTcRows = 128;  // rows of a per block

struct TcGemmArgs {
  const void* a;  // [rows, k] TA, row stride lda; grouped: each group's rows together
  int64_t lda;
  const bf16* w;  // group e's weight rows [*, k] at w + e * w_stride, row stride ldw
  int64_t w_stride, ldw;
  const int32_t* offsets;  // [n_groups + 1] first row of each group; null: one group of `rows` rows
  const int32_t* tiles;    // [n_groups + 1] first 128-row tile of each group (with offsets)
  int64_t rows;            // without offsets
  int64_t n_groups, n, k;  // n: output columns (gated: the intermediate size; the weights hold 2 n rows)
  void* out;               // [rows, n], row stride ldo: TA (gated) or TO
  int64_t ldo;
  const bf16* bias = nullptr;  // group e's [n] (gated: [2 n], gate's then up's) at bias + e * bias_stride, or null
  int64_t bias_stride = 0;
  ExpertActivation act = {};  // the gated form's activation
};

// Launches the GEMM over row_tiles 128-row tiles (at least the tiles the groups hold, at most kTcMaxRowTiles; blocks
// past them exit) on st. kGated: out = act(a @ gate^T + bias, a @ up^T + bias) in TA, gate rows i and up rows n + i
// of each weight matrix; else out = a @ w^T + bias in TO. TA f32 or bf16; rows 16-byte aligned, k % 8 == 0. An infinite
// f32 value of a comes out NaN (its split parts are inf - inf).
inline constexpr int64_t kTcMaxRowTiles = 65535;  // the grid's y dimension
template <bool kGated, class TA, class TO>
cudaError_t launch_tc_gemm(const TcGemmArgs& g, int64_t row_tiles, cudaStream_t st);

}  // namespace ft::cuda
