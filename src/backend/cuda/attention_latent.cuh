// Decode attention over a latent cache (multi-head latent attention, see attention_latent.cu): one kv head whose
// values are its keys' leading dims, every query head reading it. The attention op hands it steps of one query row
// per sequence over a bf16 cache of such rows that the tensor-core decode kernel does not take (f32 queries, widths
// other than DeepSeek-V3's 576 and 512: attention_decode.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ft::cuda {

inline constexpr int64_t kLatentMaxKeyDim = 576;  // DeepSeek-V3's kv_lora_rank 512 + qk_rope_head_dim 64
inline constexpr int64_t kLatentMaxValueDim = 512;
inline constexpr int64_t kLatentHeadsPerBlock = 16;
// The fewest keys a range of a row's keys takes: one 32-key tile.
inline constexpr int kLatentMinSplitKeys = 32;

struct LatentAttnArgs {
  const void* q;  // [n, n_head, hd_k] f32/bf16, strides q_tok / q_head
  int64_t q_tok, q_head;
  const void* cache;  // bf16 [n_pages, page_size, 1, hd_k], a row's values its first hd_v dims
  void* out;          // [n, n_head, hd_v] f32/bf16, strides o_tok / o_head
  int64_t o_tok, o_head;
  const int32_t* kv_len;  // [n]: a row per sequence
  const int32_t* page_table;
  int64_t pt_stride, page_size, n_head, hd_k, hd_v, window;
  float scale;
};

bool latent_decode_supported(int64_t hd_k, int64_t hd_v);
// n rows, a block per kLatentHeadsPerBlock query heads and key range: up to n_split key ranges per row sized from the
// row's own keys (at least kLatentMinSplitKeys each; the rest stay empty). A row of one range gets its output; a row of
// more gets partials [n * n_head, n_split, hd_v + 2] (O unnormalised, then the max and the sum) and its count in
// used[row], for attention.cu's combine kernel.
cudaError_t launch_latent_decode_attention(const LatentAttnArgs& a, int64_t n, int n_split, float* partial,
                                           int32_t* used, bool q_f32, bool out_f32, cudaStream_t stream);

}  // namespace ft::cuda
