// KvCache allocation and per-sequence page bookkeeping.
#include "kv/kv_cache.h"

namespace ft {

size_t KvCache::page_bytes(const std::vector<KvLayerShape>& layers, DType dtype, int32_t page_size) {
  size_t total = 0;
  for (const auto& l : layers)
    total += dtype_bytes(dtype, static_cast<size_t>(page_size * l.n_kv_head * (l.head_dim_k + l.head_dim_v)));
  return total;
}

Result<KvCache> KvCache::create(Backend& backend, const std::vector<KvLayerShape>& layers, DType dtype,
                                int32_t n_pages, int32_t page_size) {
  if (n_pages <= 0 || page_size <= 0) return invalid_argument("KV cache needs positive page count and size");
  KvCache kv(n_pages, page_size);
  for (const auto& l : layers) {
    if (l.n_kv_head == 0) {
      kv.k_.emplace_back();
      kv.v_.emplace_back();
      continue;
    }
    FT_ASSIGN_OR_RETURN(Tensor k, backend.empty(dtype, {n_pages, page_size, l.n_kv_head, l.head_dim_k}));
    FT_ASSIGN_OR_RETURN(Tensor v, backend.empty(dtype, {n_pages, page_size, l.n_kv_head, l.head_dim_v}));
    kv.k_.push_back(std::move(k));
    kv.v_.push_back(std::move(v));
  }
  return kv;
}

Status SequenceKv::reserve(PagePool& pool, int32_t page_size, int32_t extra) {
  const int32_t need_pages = (n_tokens_ + extra + page_size - 1) / page_size;
  const int32_t have = static_cast<int32_t>(pages_.size());
  if (need_pages <= have) return ok_status();
  return pool.allocate(need_pages - have, pages_);
}

void SequenceKv::release(PagePool& pool) {
  for (int32_t p : pages_) pool.release(p);
  pages_.clear();
  n_tokens_ = 0;
}

}  // namespace ft
