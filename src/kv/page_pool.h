// PagePool: fixed-size KV pages handed out by index, reference counted so sequences can share a prefix
// (n > 1 choices); exhaustion is a code, releasing a free page a bug.
#pragma once

#include <cstdint>
#include <vector>

#include "freetoken/status.h"

namespace ft {

inline Status out_of_kv_pages(std::string m) { return {StatusCode::kOutOfKvPages, std::move(m)}; }

class PagePool {
 public:
  explicit PagePool(int32_t n_pages);

  int32_t n_pages() const { return static_cast<int32_t>(refs_.size()); }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t n_used() const { return n_pages() - n_free(); }

  Result<int32_t> allocate();  // reference count 1
  // Allocates n pages or none.
  Status allocate(int32_t n, std::vector<int32_t>& out);
  void retain(int32_t page);   // one more owner; FT_CHECKs that the page is in use
  void release(int32_t page);  // one owner less; the page is free at zero. FT_CHECKs that it was in use
  int32_t ref_count(int32_t page) const { return refs_[static_cast<size_t>(page)]; }

 private:
  std::vector<int32_t> free_;  // a stack: the most recently freed page is reused first
  std::vector<int32_t> refs_;
};

}  // namespace ft
