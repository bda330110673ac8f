// Prefill attention on tensor cores (see attention_prefill.cu): the attention op hands it steps whose sequences
// have several query rows, bf16 q and cache, head dims 64, 128 or 256.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ft::cuda {

struct TileAttnArgs {
  const void* q;  // bf16 [n, n_head, d], strides q_tok / q_head
  int64_t q_tok, q_head;
  const void* k_cache;  // bf16 [n_pages, page_size, n_kv, d]
  const void* v_cache;
  void* out;  // [n, n_head, d], strides o_tok / o_head
  int64_t o_tok, o_head;
  const int32_t* q_start;
  const int32_t* kv_len;
  const int32_t* page_table;
  int64_t pt_stride, n_seq, page_size, n_kv, n_head, group, d, window;
  const void* sinks;  // [n_head] or null
  bool sinks_bf16;
  float scale;
};

bool prefill_attention_supported(int64_t head_dim);
// out_f32: the output dtype is f32 (else bf16). n: query rows of the step.
cudaError_t launch_prefill_attention(const TileAttnArgs& a, int64_t n, bool out_f32, cudaStream_t stream);

}  // namespace ft::cuda
