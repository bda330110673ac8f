// Decode attention on tensor cores (see attention_decode.cu): the attention op hands it steps of one query row per
// sequence with bf16 q and cache, head dims 64 or 128 and at most 16 query heads per KV head.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/attention_prefill.cuh"

namespace ft::cuda {

// The fewest keys a range of a row's keys takes: a 16-key tile per warp.
inline constexpr int kMinSplitKeys = 64;
// The most ranges a row's cluster merges in distributed shared memory (a non-portable cluster size on sm_90).
inline constexpr int kMaxClusterSplits = 16;

bool decode_attention_supported(int64_t head_dim, int64_t group);
// n rows; up to n_split key ranges per row, sized from the row's own keys: ranges of ceil(keys / n_split) keys,
// at least kMinSplitKeys, so that a short row under a launch sized for the longest possible one (a captured graph,
// a server's context length) uses only the ranges it fills. A row of one range gets its output; a row of more
// gets partials [n * n_head, n_split, d + 2] (O unnormalised, then the max and the sum, natural log units) for its
// ranges and its count in used[row], for attention.cu's combine kernel (used: [n], needed when n_split > 1); with
// cluster_merge (sm_90 code, n_split <= kMaxClusterSplits and the device's cluster size) a row's ranges run as one
// thread-block cluster that merges them into the output itself (partial and used unused). pdl: launch as a
// programmatic dependent (pdl.cuh).
cudaError_t launch_decode_attention(const TileAttnArgs& a, int64_t n, int n_split, float* partial, int32_t* used,
                                    bool cluster_merge, bool out_f32, bool pdl, cudaStream_t stream);

}  // namespace ft::cuda
