// KvCache: the paged key/value tensors of every attention layer, over one PagePool, and the recurrent-state slots
// of every linear-attention layer (StatePool).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "kv/page_pool.h"
#include "kv/state_pool.h"

namespace ft {

// What one layer stores per token (0 heads: the layer keeps no KV, e.g. linear attention).
struct KvLayerShape {
  int64_t n_kv_head = 0;
  int64_t head_dim_k = 0;
  int64_t head_dim_v = 0;
  // The values are the keys' first head_dim_v dims (multi-head latent attention's cached latent): only keys are
  // stored, and the value tensor is a view of them.
  bool values_in_keys = false;
};

class KvCache {
 public:
  // state_layers: what each layer keeps per sequence (empty: no recurrent state), in n_state_slots slots.
  static Result<KvCache> create(Backend& backend, const std::vector<KvLayerShape>& layers, DType dtype,
                                int32_t n_pages, int32_t page_size,
                                const std::vector<StateLayerShape>& state_layers = {}, int32_t n_state_slots = 0);
  // Bytes one page takes over all layers.
  static size_t page_bytes(const std::vector<KvLayerShape>& layers, DType dtype, int32_t page_size);

  int32_t page_size() const { return page_size_; }
  PagePool& pool() { return pool_; }
  const PagePool& pool() const { return pool_; }
  StatePool& states() { return states_; }
  const StatePool& states() const { return states_; }
  const Tensor& k(int64_t layer) const { return k_[static_cast<size_t>(layer)]; }  // [n_pages, page_size, n_kv, hd_k]
  // [n_pages, page_size, n_kv, hd_v]: its own tensor, or a view of k's leading dims (values_in_keys).
  const Tensor& v(int64_t layer) const { return v_[static_cast<size_t>(layer)]; }
  // Copies page `src` to page `dst` in every layer (copy-on-fork of a partly filled page).
  Status copy_page(Backend& backend, int32_t src, int32_t dst) const;

 private:
  KvCache(int32_t n_pages, int32_t page_size) : page_size_(page_size), pool_(n_pages) {}
  int32_t page_size_;
  PagePool pool_;
  StatePool states_;
  std::vector<Tensor> k_, v_;
};

// The pages of one sequence, how many tokens they hold, and its recurrent-state slot (models with state).
class SequenceKv {
 public:
  int32_t n_tokens() const { return n_tokens_; }
  const std::vector<int32_t>& pages() const { return pages_; }
  // Makes room for `extra` more tokens, allocating pages from the pool (all or none).
  Status reserve(PagePool& pool, int32_t page_size, int32_t extra);
  // Takes a recurrent-state slot when the cache has state and the sequence holds none (kOutOfKvPages when none is
  // free). A sequence that starts again from token 0 (preemption by recompute) starts from a zero state.
  Status acquire_state(StatePool& states);
  int32_t state_slot() const { return state_slot_; }  // -1: none
  // Commits tokens whose keys were stored.
  void advance(int32_t n) { n_tokens_ += n; }
  // A sequence sharing this one's tokens: full pages are shared (retained), a partly filled last page is
  // copied into a new page with `copy_page`, the recurrent state into a new slot.
  Result<SequenceKv> fork(KvCache& cache, Backend& backend) const;
  // Slot (page * page_size + row) of token position p.
  int32_t slot(int32_t position, int32_t page_size) const {
    return pages_[static_cast<size_t>(position / page_size)] * page_size + position % page_size;
  }
  // Frees the pages and the state slot.
  void release(KvCache& cache);

 private:
  std::vector<int32_t> pages_;
  int32_t n_tokens_ = 0;
  int32_t state_slot_ = -1;
};

}  // namespace ft
