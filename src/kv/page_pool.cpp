// PagePool implementation.
#include "kv/page_pool.h"

#include "core/check.h"

namespace ft {

PagePool::PagePool(int32_t n_pages) : refs_(static_cast<size_t>(n_pages), 0) {
  free_.reserve(static_cast<size_t>(n_pages));
  for (int32_t p = n_pages - 1; p >= 0; --p) free_.push_back(p);
}

Result<int32_t> PagePool::allocate() {
  if (free_.empty()) return out_of_kv_pages("all " + std::to_string(n_pages()) + " KV pages are in use");
  int32_t p = free_.back();
  free_.pop_back();
  refs_[static_cast<size_t>(p)] = 1;
  return p;
}

Status PagePool::allocate(int32_t n, std::vector<int32_t>& out) {
  if (n > n_free())
    return out_of_kv_pages("need " + std::to_string(n) + " KV pages, " + std::to_string(n_free()) + " free");
  for (int32_t i = 0; i < n; ++i) out.push_back(allocate().value());
  return ok_status();
}

void PagePool::retain(int32_t page) {
  FT_CHECK(page >= 0 && page < n_pages());
  FT_CHECK_MSG(refs_[static_cast<size_t>(page)] > 0, "KV page retained while free");
  ++refs_[static_cast<size_t>(page)];
}

void PagePool::release(int32_t page) {
  FT_CHECK(page >= 0 && page < n_pages());
  int32_t& r = refs_[static_cast<size_t>(page)];
  FT_CHECK_MSG(r > 0, "KV page released twice");
  if (--r == 0) free_.push_back(page);
}

}  // namespace ft
