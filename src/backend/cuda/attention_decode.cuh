// Decode attention on tensor cores (see attention_decode.cu): the attention op hands it steps of one query row per
// sequence with bf16 q and cache, head dims 64 or 128 and at most 16 query heads per KV head.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/attention_prefill.cuh"

namespace ft::cuda {

bool decode_attention_supported(int64_t head_dim, int64_t group);
// n rows; n_split key ranges per row; with n_split > 1 the kernel writes partials [n * n_head, n_split, d + 2]
// (O unnormalised, then the max and the sum, natural log units) for attention.cu's combine kernel. pdl: launch as a
// programmatic dependent (pdl.cuh).
cudaError_t launch_decode_attention(const TileAttnArgs& a, int64_t n, int n_split, float* partial, bool out_f32,
                                    bool pdl, cudaStream_t stream);

}  // namespace ft::cuda
