// The decode path of moe_experts (moe_experts_decode.cu) and the arguments every moe_experts kernel takes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/common.cuh"
#include "backend/cuda/cuda_stream.h"
#include "backend/ops.h"

namespace ft::cuda {

inline constexpr int64_t kMoeDecodeMaxTokens = 8;  // steps up to this many tokens take the fused GEMVs

struct ExpertArgs {  // pairs P = n k; ids [n, k] (ld ids_ld), weights [n, k] (ld weights_ld), x [n, d]
  const void* x;
  int64_t ldx;
  const int32_t* ids;
  int64_t ids_ld;
  const float* weights;
  int64_t weights_ld;
  const void* gate_up;  // [n_expert, 2 inter, d], expert stride gu_stride elements
  const void* down;     // [n_expert, d, inter], expert stride down_stride elements
  int64_t gu_stride, down_stride;
  void* out;
  int64_t ldo;
  float* h;  // [P, inter] the activation of gate and up
  float* y;  // [P, d] down outputs (prefill)
  int64_t n, k, d, inter, n_expert;
  bool vec;  // d and inter multiples of 8, tensors 16-byte aligned
  ExpertActivation act;
  const void* gu_bias;    // [n_expert, 2 inter] in the weights' dtype, expert stride gu_bias_stride, or null
  const void* down_bias;  // [n_expert, d], expert stride down_bias_stride, or null
  int64_t gu_bias_stride, down_bias_stride;
};

// v plus expert e's bias i (v itself without biases).
template <class TW>
__device__ __forceinline__ float plus_bias(float v, const void* bias, int64_t stride, int64_t e, int64_t i) {
  return bias ? v + to_f32(static_cast<const TW*>(bias)[e * stride + i]) : v;
}

// gate_up then down as fused GEMVs, launched as programmatic dependents (pdl.cuh); a.h holds [P, inter].
cudaError_t launch_moe_experts_decode(const ExpertArgs& a, DType x, DType w, DType out, const CudaStream& cs);

}  // namespace ft::cuda
