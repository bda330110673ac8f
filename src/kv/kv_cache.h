// KvCache: the paged key/value tensors of every attention layer, over one PagePool.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "kv/page_pool.h"

namespace ft {

// What one layer stores per token (0 heads: the layer keeps no KV, e.g. linear attention).
struct KvLayerShape {
  int64_t n_kv_head = 0;
  int64_t head_dim_k = 0;
  int64_t head_dim_v = 0;
};

class KvCache {
 public:
  static Result<KvCache> create(Backend& backend, const std::vector<KvLayerShape>& layers, DType dtype,
                                int32_t n_pages, int32_t page_size);
  // Bytes one page takes over all layers.
  static size_t page_bytes(const std::vector<KvLayerShape>& layers, DType dtype, int32_t page_size);

  int32_t page_size() const { return page_size_; }
  PagePool& pool() { return pool_; }
  const PagePool& pool() const { return pool_; }
  const Tensor& k(int64_t layer) const { return k_[static_cast<size_t>(layer)]; }  // [n_pages, page_size, n_kv, hd_k]
  const Tensor& v(int64_t layer) const { return v_[static_cast<size_t>(layer)]; }  // [n_pages, page_size, n_kv, hd_v]
  // Copies page `src` to page `dst` in every layer (copy-on-fork of a partly filled page).
  Status copy_page(Backend& backend, int32_t src, int32_t dst) const;

 private:
  KvCache(int32_t n_pages, int32_t page_size) : page_size_(page_size), pool_(n_pages) {}
  int32_t page_size_;
  PagePool pool_;
  std::vector<Tensor> k_, v_;
};

// The pages of one sequence and how many tokens they hold.
class SequenceKv {
 public:
  int32_t n_tokens() const { return n_tokens_; }
  const std::vector<int32_t>& pages() const { return pages_; }
  // Makes room for `extra` more tokens, allocating pages from the pool (all or none).
  Status reserve(PagePool& pool, int32_t page_size, int32_t extra);
  // Commits tokens whose keys were stored.
  void advance(int32_t n) { n_tokens_ += n; }
  // A sequence sharing this one's tokens: full pages are shared (retained), a partly filled last page is
  // copied into a new page with `copy_page`.
  Result<SequenceKv> fork(PagePool& pool, int32_t page_size, const KvCache& cache, Backend& backend) const;
  // Slot (page * page_size + row) of token position p.
  int32_t slot(int32_t position, int32_t page_size) const {
    return pages_[static_cast<size_t>(position / page_size)] * page_size + position % page_size;
  }
  void release(PagePool& pool);

 private:
  std::vector<int32_t> pages_;
  int32_t n_tokens_ = 0;
};

}  // namespace ft
