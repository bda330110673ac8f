// KvCache allocation and per-sequence page bookkeeping.
#include "kv/kv_cache.h"

namespace ft {

size_t KvCache::page_bytes(const std::vector<KvLayerShape>& layers, DType dtype, int32_t page_size) {
  size_t total = 0;
  for (const auto& l : layers) {
    const int64_t dims = l.head_dim_k + (l.values_in_keys ? 0 : l.head_dim_v);
    total += dtype_bytes(dtype, static_cast<size_t>(page_size * l.n_kv_head * dims));
  }
  return total;
}

Result<KvCache> KvCache::create(Backend& backend, const std::vector<KvLayerShape>& layers, DType dtype,
                                int32_t n_pages, int32_t page_size, const std::vector<StateLayerShape>& state_layers,
                                int32_t n_state_slots) {
  if (n_pages <= 0 || page_size <= 0) return invalid_argument("KV cache needs positive page count and size");
  KvCache kv(n_pages, page_size);
  FT_ASSIGN_OR_RETURN(kv.states_, StatePool::create(backend, state_layers, n_state_slots));
  for (const auto& l : layers) {
    if (l.n_kv_head == 0) {
      kv.k_.emplace_back();
      kv.v_.emplace_back();
      continue;
    }
    if (l.values_in_keys && l.head_dim_v > l.head_dim_k)
      return invalid_argument("KV cache: values in the keys need head_dim_v <= head_dim_k");
    FT_ASSIGN_OR_RETURN(Tensor k, backend.empty(dtype, {n_pages, page_size, l.n_kv_head, l.head_dim_k}));
    Tensor v;
    if (l.values_in_keys) {
      v = k.slice(3, 0, l.head_dim_v);
    } else {
      FT_ASSIGN_OR_RETURN(v, backend.empty(dtype, {n_pages, page_size, l.n_kv_head, l.head_dim_v}));
    }
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

Status KvCache::copy_page(Backend& backend, int32_t src, int32_t dst) const {
  for (size_t l = 0; l < k_.size(); ++l) {
    if (!k_[l].defined()) continue;
    FT_RETURN_IF_ERROR(backend.copy(k_[l].select(0, src), k_[l].select(0, dst)));
    if (v_[l].buffer == k_[l].buffer) continue;  // values in the keys: copied with them
    FT_RETURN_IF_ERROR(backend.copy(v_[l].select(0, src), v_[l].select(0, dst)));
  }
  return ok_status();
}

Status SequenceKv::acquire_state(StatePool& states) {
  if (!states.has_state() || state_slot_ >= 0) return ok_status();
  FT_ASSIGN_OR_RETURN(state_slot_, states.allocate());
  return ok_status();
}

Result<SequenceKv> SequenceKv::fork(KvCache& cache, Backend& backend) const {
  PagePool& pool = cache.pool();
  const int32_t page_size = cache.page_size();
  SequenceKv child;
  if (state_slot_ >= 0) {
    FT_RETURN_IF_ERROR(child.acquire_state(cache.states()));
    Status st = cache.states().copy_slot(backend, state_slot_, child.state_slot_);
    if (!st.ok()) {
      child.release(cache);
      return st;
    }
  }
  const bool partial_last = n_tokens_ % page_size != 0;
  const size_t shared = partial_last ? pages_.size() - 1 : pages_.size();
  if (partial_last) {
    Result<int32_t> copy = pool.allocate();
    Status st = copy.ok() ? cache.copy_page(backend, pages_.back(), *copy) : copy.status();
    if (!st.ok()) {
      if (copy.ok()) pool.release(*copy);
      child.release(cache);
      return st;
    }
    for (size_t i = 0; i < shared; ++i) pool.retain(pages_[i]);
    child.pages_.assign(pages_.begin(), pages_.begin() + static_cast<long>(shared));
    child.pages_.push_back(*copy);
  } else {
    for (int32_t p : pages_) pool.retain(p);
    child.pages_ = pages_;
  }
  child.n_tokens_ = n_tokens_;
  return child;
}

void SequenceKv::release(KvCache& cache) {
  for (int32_t p : pages_) cache.pool().release(p);
  pages_.clear();
  n_tokens_ = 0;
  if (state_slot_ >= 0) cache.states().release(state_slot_);
  state_slot_ = -1;
}

}  // namespace ft
