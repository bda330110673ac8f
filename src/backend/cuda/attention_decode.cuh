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

// The latent cache of multi-head latent attention (DeepSeek-V3's kv_lora 512 + rope 64): one cached kv head of
// kLatentTileKeyDim dims whose first kLatentTileValueDim are the values, read by n_head query heads in blocks of
// kLatentTileHeads. As launch_decode_attention with a.n_kv the head groups (n_head / kLatentTileHeads), a.group
// kLatentTileHeads, a.d the values' dim, a.k_cache [n_pages, page_size, 1, kLatentTileKeyDim] (a.v_cache unread),
// no sinks; a block takes 168 KB of shared memory (one an SM), so a cluster is at most the portable 8, and only
// devices whose blocks may opt in to that much (sm_90: 227 KB; not sm_80's 163 KB or the consumer parts' 99 KB)
// run it: max_block_smem is the device's opt-in limit in bytes.
inline constexpr int kLatentTileKeyDim = 576, kLatentTileValueDim = 512, kLatentTileHeads = 16;
inline constexpr int kLatentTileMaxCluster = 8;
bool latent_tile_decode_supported(int64_t hd_k, int64_t hd_v, int64_t n_head, int64_t max_block_smem);
cudaError_t launch_latent_tile_decode_attention(const TileAttnArgs& a, int64_t n, int n_split, float* partial,
                                                int32_t* used, bool cluster_merge, bool out_f32, bool pdl,
                                                cudaStream_t stream);

}  // namespace ft::cuda
